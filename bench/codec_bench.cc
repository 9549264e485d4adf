// Codec micro-benchmarks on the seed-shaped payload (bench/seed_payload.h):
// every registered codec (encode, full decode, top-10 lazy read, bytes), the
// protobuf baseline's serialize-only and parse-only and memcpy floors.
// (Rows for a tuned protobuf, FlatBuffers and Cap'n Proto were a 2026-11-29
// study, out of the tree since issue 46: docs/bench-notes/2026-12-07-bench-tidy.md.)
//
// Then the payload-shape sweep (bench/shape_payloads.h, its own generators):
// the codecs and the protobuf baseline on shape_strings, shape_longstrings, shape_fewkeys,
// shape_manykeys and items_<N> for N in 10..5000 (bench/shape_report.py
// makes the sweep table and the scaling plot). The binary links the
// server's allocator (server/malloc.cmake), so every row runs under it.
//
// Names are BM_<Op>/<format>/<variant>, so results sort into
// a table; every row has a "bytes" counter (the payload it works on) and
// bytes/items processed. scripts/bench.sh runs this binary in interleaved
// rounds and bench/bench_report.py turns the JSON into BENCHMARKS tables.
//
// Extra flag (before Google Benchmark's own): --rotate=N registers the
// benchmarks starting at the N-th (mod count), so rounds can run in
// different orders.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "bench/seed_payload.h"
#include "bench/shape_payloads.h"
#include "codec/builtin_codecs.h"
#include "codec/protobuf/protobuf_codec.h"
#include "rank/v1/rank.pb.h"

#ifndef RANKWIRE_MODEL_PATH
#error "RANKWIRE_MODEL_PATH must name model/models/ecom_search_lr.model"
#endif

namespace rankwire::bench {
namespace {

constexpr size_t kTopN = 10;

// What a reader touched, so the compiler cannot drop the reads.
struct Touched {
  uint64_t bits = 0;
  size_t chars = 0;

  void Number(double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof(b));
    bits = (bits ^ b) + 1;
  }
  void Integer(int64_t v) { bits = (bits ^ static_cast<uint64_t>(v)) + 1; }
  void Text(absl::string_view s) {
    chars += s.size();
    bits += 1;
  }
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "codec_bench: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T Check(absl::StatusOr<T> v, const std::string& what) {
  if (!v.ok()) Die(absl::StrCat(what, ": ", v.status().ToString()));
  return *std::move(v);
}

void Check(const absl::Status& s, const std::string& what) {
  if (!s.ok()) Die(absl::StrCat(what, ": ", s.ToString()));
}

void CheckSame(const RankResult& want, const RankResult& got, const std::string& what) {
  std::string diff = DiffResults(want, got);
  if (!diff.empty()) Die(absl::StrCat(what, " does not round-trip: ", diff));
}

// Everything one log placement needs, built once before any timing.
struct Payload {
  LogPlacement placement;
  std::string variant;  // The last part of every row's name.
  RankResult result;
  std::vector<std::pair<const Codec*, OwnedBuffer>> encoded;  // Per codec.
  rank::v1::RankResult proto;
  std::string proto_bytes;
};

void Report(benchmark::State& state, size_t bytes, size_t items) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * items));
  state.counters["bytes"] = static_cast<double>(bytes);
}

// Reads every field of the value without branching on its type, so the
// caller's own type dispatch (mispredicted on mixed-type metrics) does not
// dominate a ten-item read (a reader that knows each column's type
// statically would not branch either).
void TouchMetric(Touched* t, const MetricRef& v) {
  t->Number(v.double_value());
  t->Integer(v.int_value());
  t->Text(v.string_value());
}

// Open + TopN + every metric + log of each: what a caller showing ten does.
absl::Status ReadTop(const Codec& codec, absl::string_view bytes, Touched* t) {
  absl::StatusOr<std::unique_ptr<ResultView>> view = codec.Open(SharedBytes::Unowned(bytes));
  if (!view.ok()) return view.status();
  absl::StatusOr<std::vector<ItemRef>> top = (*view)->TopN(kTopN);
  if (!top.ok()) return top.status();
  for (const ItemRef& item : *top) {
    t->Text(item.id());
    t->Number(item.score());
    t->Integer(item.position());
    absl::Status s = item.ForEachMetric([t](uint32_t, const MetricRef& v) { TouchMetric(t, v); });
    if (!s.ok()) return s;
    absl::StatusOr<absl::string_view> log = item.Log();
    if (!log.ok()) return log.status();
    t->Text(*log);
  }
  return absl::OkStatus();
}

using BenchFn = std::function<void(benchmark::State&)>;
struct Entry {
  std::string name;
  BenchFn fn;
};

void AddCodecRows(const Payload& p, std::vector<Entry>* out) {
  const std::string& variant = p.variant;
  const size_t n = p.result.size();
  for (const auto& [codec, buffer] : p.encoded) {
    const std::string name(codec->name());
    const absl::string_view bytes = buffer.view();
    out->push_back({absl::StrCat("BM_Encode/", name, "/", variant),
                    [&p, codec = codec, size = bytes.size(), n](benchmark::State& state) {
                      for (auto _ : state) {
                        absl::StatusOr<OwnedBuffer> b = codec->Encode(p.result);
                        if (!b.ok()) {
                          state.SkipWithError(b.status().ToString().c_str());
                          break;
                        }
                        benchmark::DoNotOptimize(b->data());
                        benchmark::ClobberMemory();
                      }
                      Report(state, size, n);
                    }});
    out->push_back({absl::StrCat("BM_Decode/", name, "/", variant),
                    [codec = codec, bytes, n](benchmark::State& state) {
                      for (auto _ : state) {
                        absl::StatusOr<RankResult> r = codec->Decode(SharedBytes::Unowned(bytes));
                        if (!r.ok()) {
                          state.SkipWithError(r.status().ToString().c_str());
                          break;
                        }
                        benchmark::DoNotOptimize(r);
                      }
                      Report(state, bytes.size(), n);
                    }});
    // Open alone: the fixed cost of a lazy read before any item is touched.
    out->push_back({absl::StrCat("BM_Open/", name, "/", variant),
                    [codec = codec, bytes](benchmark::State& state) {
                      for (auto _ : state) {
                        auto view = codec->Open(SharedBytes::Unowned(bytes));
                        if (!view.ok()) {
                          state.SkipWithError(view.status().ToString().c_str());
                          break;
                        }
                        benchmark::DoNotOptimize(view->get());
                      }
                      Report(state, bytes.size(), 0);
                    }});
    out->push_back({absl::StrCat("BM_Top10/", name, "/", variant),
                    [codec = codec, bytes](benchmark::State& state) {
                      for (auto _ : state) {
                        Touched t;
                        absl::Status s = ReadTop(*codec, bytes, &t);
                        if (!s.ok()) {
                          state.SkipWithError(s.ToString().c_str());
                          break;
                        }
                        benchmark::DoNotOptimize(t);
                      }
                      Report(state, bytes.size(), kTopN);
                    }});
    // Floors: the cheapest way to produce these bytes is to copy them.
    out->push_back(
        {absl::StrCat("BM_Memcpy/", name, "/", variant), [bytes](benchmark::State& state) {
           std::unique_ptr<char[]> dst(new char[bytes.size()]);
           std::memset(dst.get(), 0, bytes.size());  // Fault the pages in once.
           for (auto _ : state) {
             std::memcpy(dst.get(), bytes.data(), bytes.size());
             benchmark::DoNotOptimize(dst.get());
             benchmark::ClobberMemory();
           }
           Report(state, bytes.size(), 0);
         }});
    out->push_back(
        {absl::StrCat("BM_MemcpyAlloc/", name, "/", variant), [bytes](benchmark::State& state) {
           for (auto _ : state) {
             OwnedBuffer b = OwnedBuffer::CopyOf(bytes);
             benchmark::DoNotOptimize(b.data());
             benchmark::ClobberMemory();
           }
           Report(state, bytes.size(), 0);
         }});
  }
}

// The protobuf baseline: serialize-only and parse-only (the targets'
// denominators).
void AddProtobufRows(const Payload& p, std::vector<Entry>* out) {
  const std::string& variant = p.variant;
  const size_t n = p.result.size();
  // The baseline message, already built: serialize only.
  out->push_back(
      {absl::StrCat("BM_Serialize/protobuf/", variant), [&p, n](benchmark::State& state) {
         const size_t size = p.proto_bytes.size();
         std::unique_ptr<char[]> dst(new char[size]);
         std::memset(dst.get(), 0, size);
         for (auto _ : state) {
           if (!p.proto.SerializeToArray(dst.get(), static_cast<int>(size))) {
             state.SkipWithError("SerializeToArray failed");
             break;
           }
           benchmark::DoNotOptimize(dst.get());
           benchmark::ClobberMemory();
         }
         Report(state, size, n);
       }});
  out->push_back({absl::StrCat("BM_Parse/protobuf/", variant), [&p, n](benchmark::State& state) {
                    const std::string& bytes = p.proto_bytes;
                    for (auto _ : state) {
                      rank::v1::RankResult m;
                      if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
                        state.SkipWithError("ParseFromArray failed");
                        break;
                      }
                      benchmark::DoNotOptimize(m);
                    }
                    Report(state, bytes.size(), n);
                  }});
}

// Where a gather floor reads one item's metric values from: each key's
// column array, its slot width (a string's is its 4-byte code), and the
// column, for its presence bits.
struct GatherColumn {
  const char* data;
  size_t width;
  const Column* column;
};

std::vector<GatherColumn> GatherColumns(const RankResult& r) {
  std::vector<GatherColumn> out;
  for (uint32_t k = 0; k < r.key_count(); ++k) {
    const Column& c = r.column(k);
    switch (c.type()) {
      case MetricType::kDouble:
        out.push_back({reinterpret_cast<const char*>(c.doubles()), 8, &c});
        break;
      case MetricType::kFloat:
        out.push_back({reinterpret_cast<const char*>(c.floats()), 4, &c});
        break;
      case MetricType::kInt:
        out.push_back({reinterpret_cast<const char*>(c.ints()), 8, &c});
        break;
      case MetricType::kString:
        out.push_back({reinterpret_cast<const char*>(c.codes()), 4, &c});
        break;
    }
  }
  return out;
}

// Floors of any decoder and encoder of this model.
void AddModelFloorRows(const Payload& p, std::vector<Entry>* out) {
  const std::string& variant = p.variant;
  const size_t n = p.result.size();
  // Floor of any full decode into the model: copying it (the same columns,
  // ids, entries and logs allocated and filled: O(keys) blocks) with no
  // decoding at all.
  out->push_back({absl::StrCat("BM_ModelCopy/model/", variant), [&p, n](benchmark::State& state) {
                    for (auto _ : state) {
                      RankResult copy = p.result;
                      benchmark::DoNotOptimize(copy);
                    }
                    Report(state, 0, n);
                  }});
  // Floor of any encoder of this model that writes item by item (as every
  // codec here does): read what it must read (each item's id, score, every
  // value it has from its key's column, a string as its code, and its log)
  // and write it out contiguously, with no format at all. Unlike BM_Memcpy,
  // the sources are the model's separate columns, visited item-major, as an
  // encoder's are.
  out->push_back({absl::StrCat("BM_GatherFloor/model/", variant), [&p](benchmark::State& state) {
                    const RankResult& r = p.result;
                    const std::vector<GatherColumn> columns = GatherColumns(r);
                    size_t total = r.id_bytes().size() + 8 * r.size() + r.log_bytes();
                    for (const GatherColumn& c : columns)
                      total += c.width * c.column->present_count();
                    std::unique_ptr<char[]> dst(new char[total]);
                    std::memset(dst.get(), 0, total);
                    for (auto _ : state) {
                      char* o = dst.get();
                      for (size_t i = 0; i < r.size(); ++i) {
                        const absl::string_view id = r.id(i);
                        std::memcpy(o, id.data(), id.size());
                        o += id.size();
                        const double score = r.score(i);
                        std::memcpy(o, &score, 8);
                        o += 8;
                        for (const GatherColumn& c : columns) {
                          if (!c.column->present(i)) continue;
                          // Fixed sizes, so each copy is one load and store.
                          if (c.width == 8) {
                            std::memcpy(o, c.data + i * 8, 8);
                          } else {
                            std::memcpy(o, c.data + i * 4, 4);
                          }
                          o += c.width;
                        }
                        const absl::string_view log = r.log(i);
                        std::memcpy(o, log.data(), log.size());
                        o += log.size();
                      }
                      benchmark::DoNotOptimize(dst.get());
                      benchmark::ClobberMemory();
                    }
                    Report(state, total, r.size());
                  }});
}

// Encodes p->result with every codec and as the protobuf baseline, and
// checks that each gives back the model.
void PrepareCodecs(const CodecRegistry& codecs, Payload* p) {
  const std::string& variant = p->variant;
  for (const std::string& codec_name : codecs.Names()) {
    const Codec* codec = codecs.Find(codec_name);
    const std::string what = absl::StrCat(codec->name(), "/", variant);
    OwnedBuffer b = Check(codec->Encode(p->result), what);
    CheckSame(p->result, Check(codec->Decode(SharedBytes::Unowned(b.view())), what), what);
    p->encoded.emplace_back(codec, std::move(b));
  }
  Check(ToProto(p->result, &p->proto), "ToProto");
  p->proto_bytes = p->proto.SerializeAsString();
}

// The sweep's shapes, each from its own generator and seed.
std::vector<Payload> MakeShapePayloads(bool probe) {
  constexpr uint64_t kSeed = 1130;
  std::vector<Payload> out;
  auto add = [&out](std::string variant, RankResult result) {
    Payload& p = out.emplace_back();
    p.placement = LogPlacement::kInline;
    p.variant = std::move(variant);
    p.result = std::move(result);
  };
  add("shape_strings", StringHeavyResult(500, kSeed));
  add("shape_fewkeys", FewKeysResult(500, kSeed + 1));
  add("shape_longstrings", LongStringsResult(500, kSeed + 10));
  add("shape_manykeys", ManyKeysResult(500, kSeed + 2));
  for (size_t n : {10, 100, 500, 2000, 5000}) {
    add(absl::StrCat("items_", n), MixedResult(n, kSeed + 3));
  }
  if (probe) {
    add("probe_distinctshort", DistinctShortResult(500, kSeed + 4));
    add("probe_mediumrepeat", MediumRepeatResult(500, kSeed + 5));
    add("probe_ragged", RaggedResult(500, kSeed + 6));
    add("probe_widesparse", WideSparseResult(500, kSeed + 7));
    add("probe_longid", LongIdResult(500, kSeed + 8));
    add("probe_bare", BareResult(500, kSeed + 9));
    add("probe_explained", ExplainedResult(500, kSeed + 11));
  }
  return out;
}

}  // namespace
}  // namespace rankwire::bench

int main(int argc, char** argv) {
  using namespace rankwire::bench;
  long rotate = 0;
  bool probe = false;  // Also the probe shapes (bench/shape_payloads.h).
  // Strip our own flag before Google Benchmark sees the command line.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--rotate=", 9) == 0) {
      rotate = std::strtol(argv[i] + 9, nullptr, 10);
    } else if (std::strcmp(argv[i], "--probe") == 0) {
      probe = true;
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;

  auto codecs = Check(rankwire::MakeBuiltinCodecs(rankwire::BuiltinCodecOptions{}), "codecs");
  // The shipped payload (both log placements), then the shape sweep (bench/shape_payloads.h) with
  // the codecs, the protobuf baseline and the model's floors (what any codec of this model must at
  // least do on that shape).
  static Payload payloads[2];
  payloads[0].placement = LogPlacement::kInline;
  payloads[1].placement = LogPlacement::kStore;
  std::vector<Entry> entries;
  for (Payload& p : payloads) {
    p.variant = PlacementName(p.placement);
    p.result = Check(SeedResult(RANKWIRE_MODEL_PATH, p.placement), "seed result");
    PrepareCodecs(codecs, &p);
    AddCodecRows(p, &entries);
    AddProtobufRows(p, &entries);
    AddModelFloorRows(p, &entries);
  }
  static std::vector<Payload> shapes = MakeShapePayloads(probe);
  std::vector<Entry> scaling;
  for (Payload& p : shapes) {
    PrepareCodecs(codecs, &p);
    const bool sized = absl::StartsWith(p.variant, "items_");
    AddCodecRows(p, sized ? &scaling : &entries);
    AddProtobufRows(p, sized ? &scaling : &entries);
    AddModelFloorRows(p, sized ? &scaling : &entries);
  }
  // The scaling rows one operation at a time, sizes in order (Encode at
  // 10, 100, ... 5000 items, then Decode, ...): a per-item ratio between
  // two sizes then compares rows measured back to back, not minutes apart
  // on a machine whose speed drifts. Rotation keeps them adjacent.
  std::stable_sort(scaling.begin(), scaling.end(), [](const Entry& a, const Entry& b) {
    return a.name.substr(0, a.name.rfind('/')) < b.name.substr(0, b.name.rfind('/'));
  });
  for (Entry& e : scaling) entries.push_back(std::move(e));
  if (!entries.empty()) {
    const long count = static_cast<long>(entries.size());
    std::rotate(entries.begin(), entries.begin() + ((rotate % count) + count) % count,
                entries.end());
  }
  for (Entry& e : entries) {
    benchmark::RegisterBenchmark(e.name.c_str(), e.fn)->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
