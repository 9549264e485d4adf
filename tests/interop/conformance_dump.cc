// rankwire_conformance_dump writes the payloads the Python package (python/)
// is checked against, each with what the C++ reader makes of it, so that
// tests/interop/test_python_conformance.py can require the two readers to
// agree value for value. `--request` writes the benchmarks' request instead
// (request 0 of the default workload), for python/bench/bench_top10.py.
// `--corpus DIR` adds a case for each input of the codec fuzzer's corpus
// (tests/fuzz/corpus/codec: the first byte picks the codec, as in
// codec_fuzzer.cc) that a built-in codec reads, for the Java client's
// conformance test (java/).
//
//   rankwire_conformance_dump OUT_DIR [RANDOM_RESULTS] [--corpus DIR]
//   rankwire_conformance_dump --request FILE    # the benchmarks' request only
//
// Cases: seeded random results (tests/support/random_result.h, as the
// conformance suite makes them) encoded by every built-in codec and by the
// option variants the suite adds (one item per block, eager zstd, a tiny
// dictionary limit, frames without checksums); and, for a few small rankbin
// payloads, every truncation and two single-byte corruptions of every byte.
// OUT_DIR/cases.json is
//   {"cases": [{"name", "codec", "payload": FILE,
//               optional "truncate": N or "flip": [OFFSET, XOR],
//               "outcome": "ok" | an absl status code name ("DATA_LOSS", ...),
//               with "ok": "result": {"keys": [[NAME, TYPE], ...],
//                 "items": [[ID, SCORE, POSITION, [[KEY, VALUE], ...], LOG], ...]}}]}
// where names, ids, logs and strings are hex of their bytes, SCORE the hex
// of the double's bits, TYPE rank.v1.MetricType's number, KEY an index into
// "keys", and VALUE "i:<decimal>", "f:<float bits>", "d:<double bits>" or
// "s:<hex>". The outcome is the C++ codec's Decode (Open + Materialize).
#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "codec/builtin_codecs.h"
#include "codec/rankbin/rankbin_codec.h"
#include "tests/codecs/codecs_under_test.h"
#include "tests/support/random_result.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

std::string Hex(absl::string_view bytes) {
  return absl::StrCat("\"", absl::BytesToHexString(bytes), "\"");
}

template <typename T>
std::string Bits(T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t> bits;
  std::memcpy(&bits, &v, sizeof(v));
  return absl::StrCat(absl::Hex(bits, sizeof(T) == 4 ? absl::kZeroPad8 : absl::kZeroPad16));
}

std::string ValueJson(const MetricRef& v) {
  switch (v.type()) {
    case MetricType::kInt:
      return absl::StrCat("\"i:", v.int_value(), "\"");
    case MetricType::kFloat:
      return absl::StrCat("\"f:", Bits(v.float_value()), "\"");
    case MetricType::kDouble:
      return absl::StrCat("\"d:", Bits(v.double_value()), "\"");
    case MetricType::kString:
      return absl::StrCat("\"s:", absl::BytesToHexString(v.string_value()), "\"");
  }
  return "null";
}

std::string ResultJson(const RankResult& r) {
  std::string out = "{\"keys\": [";
  for (uint32_t k = 0; k < r.key_count(); ++k) {
    absl::StrAppend(&out, k ? ", " : "", "[", Hex(r.key(k).name), ", ",
                    static_cast<int>(r.key(k).type), "]");
  }
  out += "], \"items\": [";
  for (size_t i = 0; i < r.size(); ++i) {
    absl::StrAppend(&out, i ? ", " : "", "[", Hex(r.id(i)), ", \"", Bits(r.score(i)), "\", ",
                    r.position(i), ", [");
    // An item's metrics in key-table order (the model keeps no other).
    bool first = true;
    for (uint32_t k = 0; k < r.key_count(); ++k) {
      const Column& c = r.column(k);
      if (!c.present(i)) continue;
      absl::StrAppend(&out, first ? "" : ", ", "[", k, ", ", ValueJson(c.at(i)), "]");
      first = false;
    }
    absl::StrAppend(&out, "], ", Hex(r.log(i)), "]");
  }
  return out + "]}";
}

// The C++ full decode of `bytes` as a case's "outcome" (and "result").
std::string OutcomeJson(const Codec& codec, absl::string_view bytes) {
  absl::StatusOr<RankResult> decoded =
      codec.Decode(SharedBytes::FromBuffer(OwnedBuffer::CopyOf(bytes)));
  if (!decoded.ok()) {
    return absl::StrCat("\"outcome\": \"", absl::StatusCodeToString(decoded.status().code()), "\"");
  }
  return absl::StrCat("\"outcome\": \"ok\", \"result\": ", ResultJson(*decoded));
}

struct Writer {
  std::string dir;
  std::string json;
  int files = 0;

  std::string WritePayload(absl::string_view bytes) {
    std::string name = absl::StrCat("payload-", files++, ".bin");
    std::ofstream(dir + "/" + name, std::ios::binary).write(bytes.data(), bytes.size());
    return name;
  }
  void Case(const std::string& name, const Codec& codec, const std::string& file,
            const std::string& damage, absl::string_view bytes) {
    absl::StrAppend(&json, json.empty() ? "" : ",\n", "{\"name\": \"", name, "\", \"codec\": \"",
                    codec.name(), "\", \"payload\": \"", file, "\"", damage, ", ",
                    OutcomeJson(codec, bytes), "}");
  }
};

// Every truncation and two corruptions (xor 0x01, xor 0x80) of every byte.
void DamagedCases(Writer& w, const std::string& name, const Codec& codec, const std::string& bytes,
                  const std::string& file) {
  for (size_t n = 0; n < bytes.size(); ++n) {
    w.Case(absl::StrCat(name, "/truncate=", n), codec, file, absl::StrCat(", \"truncate\": ", n),
           absl::string_view(bytes).substr(0, n));
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int x : {0x01, 0x80}) {
      std::string damaged = bytes;
      damaged[i] = static_cast<char>(damaged[i] ^ x);
      w.Case(absl::StrCat(name, "/flip=", i, "^", x), codec, file,
             absl::StrCat(", \"flip\": [", i, ", ", x, "]"), damaged);
    }
  }
}

// The codec fuzzer's corpus: each input whose first byte picks a built-in
// codec (by its index in test::MakeCodecsUnderTest(), as codec_fuzzer.cc
// does), as a case of that codec with the rest of the input as its body.
void CorpusCases(Writer& w, const std::string& corpus,
                 const std::vector<std::pair<std::string, const Codec*>>& builtin) {
  absl::StatusOr<CodecRegistry> fuzzed = test::MakeCodecsUnderTest({});
  if (!fuzzed.ok()) std::abort();
  const std::vector<std::string> names = fuzzed->Names();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(corpus)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const std::filesystem::path& file : files) {
    std::ifstream in(file, std::ios::binary);
    const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (data.empty()) continue;
    const std::string& name = names[static_cast<unsigned char>(data[0]) % names.size()];
    for (const auto& [label, codec] : builtin) {
      if (label != name) continue;
      const std::string body = data.substr(1);
      w.Case(absl::StrCat("corpus/", file.filename().string()), *codec, w.WritePayload(body), "",
             body);
    }
  }
}

int Run(const std::string& dir, int random_results, const std::string& corpus) {
  // The directory is made if missing (docs/CLIENTS.md runs it on a fresh
  // path); one that cannot be written is an error, not a silent no-op.
  std::error_code made;
  std::filesystem::create_directories(dir, made);
  if (made || !std::ofstream(dir + "/cases.json")) {
    std::fprintf(stderr, "cannot write to %s: %s\n", dir.c_str(),
                 made ? made.message().c_str() : std::strerror(errno));
    return 1;
  }
  std::vector<std::unique_ptr<CodecRegistry>> registries;
  std::vector<std::pair<std::string, const Codec*>> codecs;
  // The built-in codecs `names` of a registry made with `options`.
  auto add = [&](const BuiltinCodecOptions& options, const std::string& suffix,
                 const std::vector<std::string>& names) {
    absl::StatusOr<CodecRegistry> r = MakeBuiltinCodecs(options);
    if (!r.ok()) std::abort();
    registries.push_back(std::make_unique<CodecRegistry>(*std::move(r)));
    for (const std::string& name : names)
      codecs.push_back({name + suffix, registries.back()->Find(name)});
  };
  add({}, "", {"protobuf", "rankbin", "rankbin-zstd"});
  BuiltinCodecOptions one_per_block;
  one_per_block.writer.block_items = 1;
  add(one_per_block, "/block_items=1", {"rankbin", "rankbin-zstd"});
  BuiltinCodecOptions eager;
  eager.writer.block_items = 4;
  eager.writer.compress_values = eager.writer.compress_logs = true;
  eager.writer.min_saving = 0;
  add(eager, "/eager_zstd", {"rankbin-zstd"});
  BuiltinCodecOptions no_checksum = eager;
  no_checksum.writer.zstd_checksum = false;  // Minor 1 requires it: readers reject these.
  add(no_checksum, "/no_checksum", {"rankbin-zstd"});
  rankbin::WriterOptions tiny;
  tiny.block_items = 3;
  tiny.max_dict_entries = 2;
  tiny.compress_values = true;
  tiny.zstd_level = -3;
  tiny.min_saving = 0;
  RankbinCodec tiny_dict("rankbin-zstd", tiny, rankbin::ReaderOptions{});
  codecs.push_back({"rankbin-zstd/max_dict_entries=2", &tiny_dict});

  Writer w{dir, "", 0};
  for (int seed = 0; seed < random_results; ++seed) {
    std::mt19937_64 rng(seed);
    test::ResultGenerator gen(rng);
    const RankResult result = gen.Result({});
    for (const auto& [label, codec] : codecs) {
      absl::StatusOr<OwnedBuffer> bytes = codec->Encode(result);
      if (!bytes.ok()) std::abort();
      const absl::string_view view(bytes->data(), bytes->size());
      w.Case(absl::StrCat(label, "/seed=", seed), *codec, w.WritePayload(view), "", view);
    }
  }
  // Damaged payloads: a few small results, every rankbin variant.
  for (int seed = 1000, done = 0; done < 2; ++seed) {
    std::mt19937_64 rng(seed);
    test::ResultGenerator gen(rng);
    const RankResult result = gen.Result({/*max_items=*/6, /*max_keys=*/4, /*logs=*/0.7});
    if (result.size() < 3) continue;
    ++done;
    for (const auto& [label, codec] : codecs) {
      if (label == "protobuf") continue;
      absl::StatusOr<OwnedBuffer> bytes = codec->Encode(result);
      if (!bytes.ok()) std::abort();
      std::string payload(bytes->data(), bytes->size());
      DamagedCases(w, absl::StrCat(label, "/seed=", seed), *codec, payload,
                   w.WritePayload(payload));
    }
  }
  if (!corpus.empty()) {
    CorpusCases(w, corpus, {codecs[0], codecs[1], codecs[2]});
  }
  std::ofstream cases(dir + "/cases.json");
  cases << "{\"cases\": [\n" << w.json << "\n]}\n";
  cases.close();
  if (!cases) {
    std::fprintf(stderr, "cannot write %s/cases.json\n", dir.c_str());
    return 1;
  }

  std::printf("wrote %d payloads and their decodes to %s\n", w.files, dir.c_str());
  return 0;
}

// The payload every benchmark measures is request 0 of the default workload
// (500 candidates, seed 20261129) ranked by the shipped model.
int WriteRequest(const std::string& file) {
  workload::WorkloadGenerator generator(workload::WorkloadOptions{});
  std::ofstream(file, std::ios::binary) << generator.Make(0).SerializeAsString();
  return 0;
}

}  // namespace
}  // namespace rankwire

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--request") return rankwire::WriteRequest(argv[2]);
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string corpus;
  if (args.size() >= 2 && args[args.size() - 2] == "--corpus") {
    corpus = args.back();
    args.resize(args.size() - 2);
  }
  if (args.empty() || args.size() > 2) {
    std::fprintf(stderr,
                 "usage: %s OUT_DIR [RANDOM_RESULTS (default 200)] [--corpus DIR]\n"
                 "       %s --request FILE\n",
                 argv[0], argv[0]);
    return 2;
  }
  return rankwire::Run(args[0], args.size() == 2 ? std::atoi(args[1].c_str()) : 200, corpus);
}
