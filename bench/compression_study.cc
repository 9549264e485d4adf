// Compression study for rankbin-zstd (issue 3, item 4): which columns to
// compress, at which granularity (per item, per block of items, per column)
// and zstd level, measured on the seed-shaped payload with logs inline.
//
// For the VALUES and LOGS columns separately, and each block size and level,
// it writes the payload with rankbin::WriteRankbin (only that column
// compressed; WriterOptions::min_saving at the codec's default, so blocks
// that do not pay stay raw) and measures the column's stored bytes, the
// encode time, a full decode (Open + Materialize) and a top-10 read (Open +
// TopN(10) + every metric + log). Then, with zstd directly, per-item
// compression with a dictionary trained (ZDICT_trainFromBuffer) on other
// requests' items — something the format cannot carry today.
//
// Timing: CPU time of the calling thread. Every configuration is measured
// once per round, rounds run the configurations in rotated orders, and the
// tables show the median over rounds (the machine's speed drifts). Output is
// Markdown for a note in docs/bench-notes/ (the last study:
// docs/bench-notes/2026-11-29-compression-study.md).
//
// Usage: compression_study [--rounds=N] [--min-ms=MS]
#include <benchmark/benchmark.h>
#include <time.h>
#include <zdict.h>
#include <zstd.h>
#ifdef RANKWIRE_HAVE_LZ4
#include <lz4.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/reference_formats.h"
#include "bench/seed_payload.h"
#include "codec/codec.h"
#include "codec/rankbin/format.h"
#include "codec/rankbin/reader.h"
#include "codec/rankbin/writer.h"

#ifndef RANKWIRE_MODEL_PATH
#error "RANKWIRE_MODEL_PATH must name model/models/ecom_search_lr.model"
#endif

namespace rankwire::bench {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "compression_study: %s\n", what.c_str());
  std::exit(1);
}

template <typename T>
T Check(absl::StatusOr<T> v, const std::string& what) {
  if (!v.ok()) Die(absl::StrCat(what, ": ", v.status().ToString()));
  return *std::move(v);
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One VALUES or LOGS section of a payload, read from its framing
// (docs/FORMAT.md, "VALUES (4) and LOGS (5): blocks").
struct ColumnStats {
  size_t section_bytes = 0;  // Section body, framing included.
  size_t raw_bytes = 0;      // Sum of raw block sizes.
  size_t blocks = 0;
  size_t zstd_blocks = 0;
  std::vector<absl::string_view> raw_blocks;  // Only for raw blocks.
};

uint64_t ReadVarint(const unsigned char*& p) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const uint8_t b = *p++;
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) break;
  }
  return v;
}

ColumnStats Column(absl::string_view payload, rankbin::SectionId id) {
  ColumnStats s;
  size_t at = rankbin::kHeaderSize;
  while (at + rankbin::kSectionHeaderSize <= payload.size()) {
    const uint8_t sid = static_cast<uint8_t>(payload[at]);
    uint32_t length;
    std::memcpy(&length, payload.data() + at + 1, 4);
    const char* body = payload.data() + at + rankbin::kSectionHeaderSize;
    if (sid == static_cast<uint8_t>(id)) {
      s.section_bytes = length;
      const auto* p = reinterpret_cast<const unsigned char*>(body);
      s.blocks = ReadVarint(p);
      const char* data = reinterpret_cast<const char*>(p) + s.blocks * rankbin::kBlockEntryBytes;
      for (size_t b = 0; b < s.blocks; ++b) {
        const unsigned char* e = p + b * rankbin::kBlockEntryBytes;
        uint32_t stored, raw;
        std::memcpy(&stored, e + 1, 4);
        std::memcpy(&raw, e + 5, 4);
        s.raw_bytes += raw;
        if (e[0] == static_cast<uint8_t>(rankbin::BlockCodec::kZstd)) {
          ++s.zstd_blocks;
        } else {
          s.raw_blocks.emplace_back(data, raw);
        }
        data += stored;
      }
      return s;
    }
    at += rankbin::kSectionHeaderSize + length;
  }
  return s;
}

void ReadTop10(absl::string_view bytes) {
  auto view = Check(rankbin::OpenRankbin(SharedBytes::Unowned(bytes), {}), "open");
  Touched t;
  for (const ItemRef& item : Check((*view).TopN(10), "top-n")) {
    t.Text(item.id());
    t.Number(item.score());
    t.Integer(item.position());
    absl::Status s = item.ForEachMetric([&t](uint32_t, const MetricRef& v) {
      t.Number(v.double_value());
      t.Integer(v.int_value());
      t.Text(v.string_value());
    });
    if (!s.ok()) Die(s.ToString());
    t.Text(Check(item.Log(), "log"));
  }
  benchmark::DoNotOptimize(t);
}

enum class Col { kValues, kLogs };
const char* ColName(Col c) { return c == Col::kValues ? "VALUES" : "LOGS"; }

// A measured configuration and its samples (one per round).
struct Config {
  Col col;
  uint32_t block_items;
  int level;               // INT32_MIN: uncompressed.
  std::string dict_label;  // Non-empty: the zstd-dictionary experiment.
  std::function<double()> encode, decode, top10;
  size_t column_bytes = 0, raw_bytes = 0, payload_bytes = 0, blocks = 0, zstd_blocks = 0;
  std::vector<double> enc, dec, top;
};

constexpr int kRaw = INT32_MIN;

std::string LevelName(int level) { return level == kRaw ? "raw" : absl::StrCat(level); }
std::string BlockName(uint32_t b, size_t items) {
  if (b >= items) return absl::StrCat("column (", b, ")");
  return b == 1 ? "item (1)" : absl::StrCat(b);
}

// Raw blocks of one column at `block_items` items per block, as the
// uncompressed writer lays them out.
std::vector<std::string> RawBlocks(const RankResult& r, Col col, uint32_t block_items) {
  rankbin::WriterOptions o;
  o.block_items = block_items;
  OwnedBuffer b = Check(rankbin::WriteRankbin(r, o), "write");
  ColumnStats s = Column(
      b.view(), col == Col::kValues ? rankbin::SectionId::kValues : rankbin::SectionId::kLogs);
  return std::vector<std::string>(s.raw_blocks.begin(), s.raw_blocks.end());
}

using CompressFn = std::function<size_t(const std::string& src, char* dst, size_t cap)>;
using DecompressFn = std::function<size_t(const std::string& frame, char* dst, size_t raw)>;

// A block codec measured outside the format (the format has no slot for it
// today): bytes count the stored blocks (raw when compression saves less
// than 10%, as the writer does) plus rankbin's 9-byte block entries; times
// are the codec's alone, comparable with the Δ columns.
void AddDirectConfig(Col col, uint32_t block_items, int level, std::string label,
                     std::vector<std::string> blocks, size_t bound, CompressFn compress,
                     DecompressFn decompress, std::vector<Config>* out) {
  Config c;
  c.col = col;
  c.block_items = block_items;
  c.level = level;
  c.dict_label = std::move(label);
  auto input = std::make_shared<std::vector<std::string>>(std::move(blocks));
  auto frames = std::make_shared<std::vector<std::string>>();
  auto scratch = std::make_shared<std::string>(bound, '\0');
  auto raw_sizes = std::make_shared<std::vector<size_t>>();
  size_t stored = 0;
  for (const std::string& b : *input) {
    const size_t z = compress(b, scratch->data(), bound);
    frames->emplace_back(scratch->data(), z);
    raw_sizes->push_back(b.size());
    c.raw_bytes += b.size();
    if (z <= 0.9 * static_cast<double>(b.size())) {
      stored += z;
      ++c.zstd_blocks;
    } else {
      stored += b.size();
    }
  }
  c.blocks = input->size();
  c.column_bytes = stored + input->size() * rankbin::kBlockEntryBytes + 2;
  c.encode = [=] {
    const double t0 = ThreadCpuSeconds();
    size_t total = 0;
    for (const std::string& b : *input) total += compress(b, scratch->data(), bound);
    benchmark::DoNotOptimize(total);
    return ThreadCpuSeconds() - t0;
  };
  auto expand = [=](size_t count) {
    const double t0 = ThreadCpuSeconds();
    size_t total = 0;
    for (size_t i = 0; i < count; ++i) {
      total += decompress((*frames)[i], scratch->data(), (*raw_sizes)[i]);
    }
    benchmark::DoNotOptimize(total);
    return ThreadCpuSeconds() - t0;
  };
  const size_t top_blocks = std::min<size_t>(frames->size(), (10 + block_items - 1) / block_items);
  c.decode = [=] { return expand(frames->size()); };
  c.top10 = [=] { return expand(top_blocks); };
  out->push_back(std::move(c));
}

// Per-item zstd with a dictionary trained on other requests' items.
void AddDictConfigs(const RankResult& seed, const std::vector<RankResult>& training, Col col,
                    size_t dict_capacity, const std::vector<int>& levels,
                    std::vector<Config>* out) {
  std::string samples;
  std::vector<size_t> sizes;
  for (const RankResult& r : training) {
    for (const std::string& s : RawBlocks(r, col, 1)) {
      samples += s;
      sizes.push_back(s.size());
    }
  }
  auto dict = std::make_shared<std::string>(dict_capacity, '\0');
  const size_t n = ZDICT_trainFromBuffer(dict->data(), dict->size(), samples.data(), sizes.data(),
                                         static_cast<unsigned>(sizes.size()));
  if (ZDICT_isError(n)) Die(absl::StrCat("ZDICT_trainFromBuffer: ", ZDICT_getErrorName(n)));
  dict->resize(n);
  std::vector<std::string> items = RawBlocks(seed, col, 1);
  size_t bound = 0;
  for (const std::string& s : items) bound = std::max(bound, ZSTD_compressBound(s.size()));
  auto dctx = std::shared_ptr<ZSTD_DCtx>(ZSTD_createDCtx(), ZSTD_freeDCtx);
  auto ddict =
      std::shared_ptr<ZSTD_DDict>(ZSTD_createDDict(dict->data(), dict->size()), ZSTD_freeDDict);
  for (int level : levels) {
    auto cdict = std::shared_ptr<ZSTD_CDict>(ZSTD_createCDict(dict->data(), dict->size(), level),
                                             ZSTD_freeCDict);
    auto cctx = std::shared_ptr<ZSTD_CCtx>(ZSTD_createCCtx(), ZSTD_freeCCtx);
    AddDirectConfig(
        col, 1, level, absl::StrCat("zstd + ", dict->size() / 1024, " KiB trained dictionary"),
        items, bound,
        [cctx, cdict](const std::string& src, char* dst, size_t cap) {
          size_t z =
              ZSTD_compress_usingCDict(cctx.get(), dst, cap, src.data(), src.size(), cdict.get());
          if (ZSTD_isError(z)) Die("ZSTD_compress_usingCDict");
          return z;
        },
        [dctx, ddict](const std::string& frame, char* dst, size_t raw) {
          size_t n = ZSTD_decompress_usingDDict(dctx.get(), dst, raw, frame.data(), frame.size(),
                                                ddict.get());
          if (ZSTD_isError(n)) Die("ZSTD_decompress_usingDDict");
          return n;
        },
        out);
  }
}

// zstd with tables sized for small blocks: ZSTD_compressCCtx sizes its
// tables for the input's size class, and clearing them is paid per frame.
void AddSmallTableConfigs(const RankResult& seed, Col col, uint32_t block_items, int level,
                          std::vector<Config>* out) {
  std::vector<std::string> blocks = RawBlocks(seed, col, block_items);
  size_t bound = 0;
  for (const std::string& b : blocks) bound = std::max(bound, ZSTD_compressBound(b.size()));
  auto dctx = std::shared_ptr<ZSTD_DCtx>(ZSTD_createDCtx(), ZSTD_freeDCtx);
  for (int hash_log : {12, 14}) {
    auto cctx = std::shared_ptr<ZSTD_CCtx>(ZSTD_createCCtx(), ZSTD_freeCCtx);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_hashLog, hash_log);
    ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_windowLog, 16);
    AddDirectConfig(
        col, block_items, level, absl::StrCat("zstd, hashLog ", hash_log, " windowLog 16"), blocks,
        bound,
        [cctx](const std::string& src, char* dst, size_t cap) {
          size_t z = ZSTD_compress2(cctx.get(), dst, cap, src.data(), src.size());
          if (ZSTD_isError(z)) Die("ZSTD_compress2");
          return z;
        },
        [dctx](const std::string& frame, char* dst, size_t raw) {
          size_t n = ZSTD_decompressDCtx(dctx.get(), dst, raw, frame.data(), frame.size());
          if (ZSTD_isError(n)) Die("ZSTD_decompressDCtx");
          return n;
        },
        out);
  }
}

#ifdef RANKWIRE_HAVE_LZ4
// LZ4 blocks (not in the format): the speed end of the trade-off.
void AddLz4Configs(const RankResult& seed, Col col, uint32_t block_items,
                   std::vector<Config>* out) {
  std::vector<std::string> blocks = RawBlocks(seed, col, block_items);
  size_t bound = 0;
  for (const std::string& b : blocks) {
    bound = std::max<size_t>(bound, LZ4_compressBound(static_cast<int>(b.size())));
  }
  for (int acceleration : {1, 4}) {
    AddDirectConfig(
        col, block_items, acceleration, "lz4 (acceleration)", blocks, bound,
        [acceleration](const std::string& src, char* dst, size_t cap) {
          int z = LZ4_compress_fast(src.data(), dst, static_cast<int>(src.size()),
                                    static_cast<int>(cap), acceleration);
          if (z <= 0) Die("LZ4_compress_fast");
          return static_cast<size_t>(z);
        },
        [](const std::string& frame, char* dst, size_t raw) {
          int n = LZ4_decompress_safe(frame.data(), dst, static_cast<int>(frame.size()),
                                      static_cast<int>(raw));
          if (n < 0 || static_cast<size_t>(n) != raw) Die("LZ4_decompress_safe");
          return static_cast<size_t>(n);
        },
        out);
  }
}
#endif

// Mean CPU µs of `fn`'s timed part (it returns its own seconds, setup
// excluded), over at least `min_ms` and 3 calls, after one warm-up call.
double Us(const std::function<double()>& fn, double min_ms) {
  fn();
  double total = 0;
  int64_t n = 0;
  const double start = ThreadCpuSeconds();
  do {
    total += fn();
    ++n;
  } while ((ThreadCpuSeconds() - start) * 1e3 < min_ms || n < 3);
  return total * 1e6 / static_cast<double>(n);
}

void AddRankbinConfig(const RankResult& seed, Col col, uint32_t block_items, int level,
                      std::vector<Config>* out) {
  rankbin::WriterOptions o;  // min_saving and dictionary limits: the defaults.
  o.block_items = block_items;
  if (level != kRaw) {
    o.zstd_level = level;
    o.compress_values = col == Col::kValues;
    o.compress_logs = col == Col::kLogs;
  }
  auto bytes = std::make_shared<OwnedBuffer>(Check(rankbin::WriteRankbin(seed, o), "write"));
  Config c;
  c.col = col;
  c.block_items = block_items;
  c.level = level;
  const ColumnStats s = Column(
      bytes->view(), col == Col::kValues ? rankbin::SectionId::kValues : rankbin::SectionId::kLogs);
  c.column_bytes = s.section_bytes;
  c.raw_bytes = s.raw_bytes;
  c.blocks = s.blocks;
  c.zstd_blocks = s.zstd_blocks;
  c.payload_bytes = bytes->size();
  auto timed = [](auto fn) {
    return [fn] {
      const double t0 = ThreadCpuSeconds();
      fn();
      return ThreadCpuSeconds() - t0;
    };
  };
  const RankResult* r = &seed;
  c.encode = timed([r, o] {
    OwnedBuffer b = Check(rankbin::WriteRankbin(*r, o), "write");
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
  });
  c.decode = timed([bytes] {
    auto view = Check(rankbin::OpenRankbin(SharedBytes::Unowned(bytes->view()), {}), "open");
    RankResult m = Check(view->Materialize(), "materialize");
    benchmark::DoNotOptimize(m);
  });
  c.top10 = timed([bytes] { ReadTop10(bytes->view()); });
  out->push_back(std::move(c));
}

std::string Fmt(double us) {
  if (us >= 1000) return absl::StrFormat("%.2f ms", us / 1000);
  if (us >= 100) return absl::StrFormat("%.0f µs", us);
  return absl::StrFormat("%.1f µs", us);
}
std::string Delta(double us) {
  return absl::StrFormat("%s%s", us >= 0 ? "+" : "−", Fmt(us >= 0 ? us : -us));
}

}  // namespace
}  // namespace rankwire::bench

int main(int argc, char** argv) {
  using namespace rankwire;
  using namespace rankwire::bench;
  int rounds = 5;
  double min_ms = 15;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--rounds=", 9) == 0) {
      rounds = std::max(1, std::atoi(argv[i] + 9));
    } else if (std::strncmp(argv[i], "--min-ms=", 9) == 0) {
      min_ms = std::max(1.0, std::atof(argv[i] + 9));
    } else {
      Die(absl::StrCat("unknown argument ", argv[i],
                       "; usage: compression_study "
                       "[--rounds=N] [--min-ms=MS]"));
    }
  }
  const RankResult seed = Check(SeedResult(RANKWIRE_MODEL_PATH, LogPlacement::kInline), "seed");
  const size_t items = seed.size();
  // Dictionaries are trained on other requests of the same workload, as a
  // deployment would train on yesterday's traffic.
  std::vector<RankResult> training;
  for (uint64_t seq = 1; seq <= 8; ++seq) {
    training.push_back(Check(SeedResult(RANKWIRE_MODEL_PATH, LogPlacement::kInline, seq), "train"));
  }

  const std::vector<uint32_t> blocks = {1, 8, 16, 32, 64, 128, static_cast<uint32_t>(items)};
  // The levels; logs also get zstd's faster "--fast" levels, since
  // their encode cost is what the time budget is about.
  const std::vector<int> value_levels = {-5, -3, -1, 1, 3};
  const std::vector<int> log_levels = {-50, -20, -10, -5, -3, -1, 1, 3};
  std::vector<Config> configs;
  for (Col col : {Col::kValues, Col::kLogs}) {
    const std::vector<int>& levels = col == Col::kValues ? value_levels : log_levels;
    for (uint32_t b : blocks) {
      AddRankbinConfig(seed, col, b, kRaw, &configs);
      for (int level : levels) AddRankbinConfig(seed, col, b, level, &configs);
    }
    for (size_t capacity : {size_t{16} << 10, size_t{64} << 10}) {
      AddDictConfigs(seed, training, col, capacity, {-5, -1, 1, 3}, &configs);
    }
    if (col == Col::kLogs) {
      for (uint32_t b : {uint32_t{16}, uint32_t{32}})
        AddSmallTableConfigs(seed, col, b, 1, &configs);
    }
#ifdef RANKWIRE_HAVE_LZ4
    for (uint32_t b : {uint32_t{16}, uint32_t{32}, static_cast<uint32_t>(items)}) {
      AddLz4Configs(seed, col, b, &configs);
    }
#endif
  }

  const size_t count = configs.size();
  for (int round = 0; round < rounds; ++round) {
    std::fprintf(stderr, "compression_study: round %d/%d\n", round + 1, rounds);
    const size_t offset = static_cast<size_t>(round) * count / static_cast<size_t>(rounds);
    for (size_t k = 0; k < count; ++k) {
      Config& c = configs[(k + offset) % count];
      c.enc.push_back(Us(c.encode, min_ms));
      c.dec.push_back(Us(c.decode, min_ms));
      c.top.push_back(Us(c.top10, min_ms));
    }
  }

  // Raw reference per (column, block size): the deltas are the column's
  // compression cost.
  std::map<std::pair<int, uint32_t>, const Config*> raw;
  for (const Config& c : configs) {
    if (c.level == kRaw) raw[{static_cast<int>(c.col), c.block_items}] = &c;
  }
  // What the logs are made of: how much of each line is the same for every
  // item of the request (a prefix any structural encoding would send once).
  size_t log_bytes = 0, prefix = seed.empty() ? 0 : seed.log(0).size();
  for (size_t i = 0; i < seed.size(); ++i) {
    const absl::string_view log = seed.log(i);
    log_bytes += log.size();
    size_t k = 0;
    while (k < prefix && k < log.size() && log[k] == seed.log(0)[k]) ++k;
    prefix = k;
  }
  size_t values_raw = 0;
  for (const std::string& b : RawBlocks(seed, Col::kValues, static_cast<uint32_t>(items))) {
    values_raw += b.size();
  }
  std::printf("### Compression study: rankbin-zstd granularity and level\n\n");
  std::printf(
      "Payload: %zu items, %zu metric keys; VALUES %zu raw bytes; LOGS %zu bytes of log "
      "text (%.0f bytes per item, of which the first %zu are the same for every item of "
      "the request).\n\n",
      items, seed.key_count(), values_raw, log_bytes,
      items ? static_cast<double>(log_bytes) / items : 0.0, prefix);
  std::printf(
      "Seed-shaped payload, logs inline; one column compressed at a time through "
      "`rankbin::WriterOptions` (min_saving 0.10: a block that saves less stays raw). "
      "CPU time, median of %d interleaved rounds. *Column* is the section's stored bytes "
      "(framing included) and its share of the raw column; Δ columns are against the same "
      "block size uncompressed; *payload* is the whole rankbin payload with only this column "
      "compressed. *Top-10* is Open + TopN(10) + every metric + log. Rows with a "
      "trained dictionary, custom zstd tables or LZ4 are measured outside the format (it has no "
      "slot for them): "
      "bytes are the blocks plus rankbin's block entries, times are the block codec's alone, "
      "comparable with the Δ columns.\n\n",
      rounds);
  for (Col col : {Col::kValues, Col::kLogs}) {
    std::printf("#### %s column\n\n", ColName(col));
    std::printf(
        "| block (items) | zstd level | column bytes | of raw | zstd blocks | payload | "
        "encode | encode Δ | full decode | decode Δ | top-10 read |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (const Config& c : configs) {
      if (c.col != col) continue;
      const double enc = Median(c.enc), dec = Median(c.dec), top = Median(c.top);
      if (!c.dict_label.empty()) {
        // Outside the format: the codec's own time only (cf. the Δ columns).
        std::printf(
            "| %s, %s | %d | %zu | %.1f%% | %zu/%zu | — | — | +%s | — | +%s | +%s (blocks "
            "of items 0-9 only) |\n",
            BlockName(c.block_items, items).c_str(), c.dict_label.c_str(), c.level, c.column_bytes,
            100.0 * c.column_bytes / c.raw_bytes, c.zstd_blocks, c.blocks, Fmt(enc).c_str(),
            Fmt(dec).c_str(), Fmt(top).c_str());
        continue;
      }
      const Config* base = raw[{static_cast<int>(c.col), c.block_items}];
      const double benc = Median(base->enc), bdec = Median(base->dec);
      std::printf("| %s | %s | %zu | %.1f%% | %zu/%zu | %zu | %s | %s | %s | %s | %s |\n",
                  BlockName(c.block_items, items).c_str(), LevelName(c.level).c_str(),
                  c.column_bytes, 100.0 * c.column_bytes / std::max<size_t>(1, c.raw_bytes),
                  c.zstd_blocks, c.blocks, c.payload_bytes, Fmt(enc).c_str(),
                  c.level == kRaw ? "" : Delta(enc - benc).c_str(), Fmt(dec).c_str(),
                  c.level == kRaw ? "" : Delta(dec - bdec).c_str(), Fmt(top).c_str());
    }
    std::printf("\n");
  }
  return 0;
}
