// codec_count: runs one rankbin operation on one sweep shape a fixed number
// of times and nothing else, so that `valgrind --tool=callgrind` counts the
// instructions of that operation alone (repeatable where wall time on this
// machine is not; the notes in docs/bench-notes/ quote both).
//
//   valgrind --tool=callgrind --toggle-collect='rankwire::bench::*Measured*'
//       build/bench/codec_count --shape=fewkeys --op=encode --iterations=20
// (one command line).
//
// Shapes: mixed, fewkeys, manykeys, stringheavy, longstrings
// (bench/shape_payloads.h);
// ops: encode, decode (Open + Materialize), top10 (Open + TopN + every
// metric and the log of those items).
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "base/flags.h"
#include "bench/shape_payloads.h"
#include "codec/rankbin/reader.h"
#include "codec/rankbin/writer.h"

ABSL_FLAG(std::string, shape, "mixed", "mixed, fewkeys, manykeys, stringheavy or longstrings");
ABSL_FLAG(std::string, op, "encode", "encode, decode or top10");
ABSL_FLAG(int, items, 500, "items in the result");
ABSL_FLAG(int, iterations, 20, "times the operation runs");
ABSL_FLAG(bool, compress, false, "rankbin-zstd (compress log and string blocks)");

namespace rankwire::bench {
namespace {

absl::StatusOr<RankResult> Shape(const std::string& name, size_t items) {
  constexpr uint64_t kSeed = 20261202;
  if (name == "mixed") return MixedResult(items, kSeed);
  if (name == "fewkeys") return FewKeysResult(items, kSeed);
  if (name == "manykeys") return ManyKeysResult(items, kSeed);
  if (name == "stringheavy") return StringHeavyResult(items, kSeed);
  if (name == "longstrings") return LongStringsResult(items, kSeed);
  return absl::InvalidArgumentError("unknown --shape " + name);
}

// The measured functions: callgrind's --toggle-collect names them.
__attribute__((noinline)) size_t MeasuredEncode(const RankResult& r,
                                                const rankbin::WriterOptions& o) {
  absl::StatusOr<OwnedBuffer> b = rankbin::WriteRankbin(r, o);
  return b.ok() ? b->size() : 0;
}

__attribute__((noinline)) size_t MeasuredDecode(absl::string_view bytes) {
  auto view = rankbin::OpenRankbin(SharedBytes::Unowned(bytes), {});
  if (!view.ok()) return 0;
  absl::StatusOr<RankResult> r = (*view)->Materialize();
  return r.ok() ? r->size() : 0;
}

__attribute__((noinline)) size_t MeasuredTop10(absl::string_view bytes) {
  auto view = rankbin::OpenRankbin(SharedBytes::Unowned(bytes), {});
  if (!view.ok()) return 0;
  absl::StatusOr<std::vector<ItemRef>> top = (*view)->TopN(10);
  if (!top.ok()) return 0;
  size_t touched = 0;
  for (const ItemRef& item : *top) {
    touched += item.id().size();
    absl::Status s = item.ForEachMetric([&touched](uint32_t, const MetricRef&) { ++touched; });
    absl::StatusOr<absl::string_view> log = item.Log();
    if (!s.ok() || !log.ok()) return 0;
    touched += log->size();
  }
  return touched;
}

int Main() {
  absl::StatusOr<RankResult> r = Shape(absl::GetFlag(FLAGS_shape), absl::GetFlag(FLAGS_items));
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    return 2;
  }
  rankbin::WriterOptions o;
  o.compress_logs = absl::GetFlag(FLAGS_compress);
  o.compress_string_values = absl::GetFlag(FLAGS_compress);
  absl::StatusOr<OwnedBuffer> bytes = rankbin::WriteRankbin(*r, o);
  if (!bytes.ok()) {
    std::fprintf(stderr, "%s\n", bytes.status().ToString().c_str());
    return 1;
  }
  const std::string op = absl::GetFlag(FLAGS_op);
  const absl::string_view view = bytes->view();
  size_t sink = 0;
  for (int i = 0; i < absl::GetFlag(FLAGS_iterations); ++i) {
    if (op == "encode") {
      sink += MeasuredEncode(*r, o);
    } else if (op == "decode") {
      sink += MeasuredDecode(view);
    } else if (op == "top10") {
      sink += MeasuredTop10(view);
    } else {
      std::fprintf(stderr, "unknown --op %s\n", op.c_str());
      return 2;
    }
  }
  if (sink == 0) {
    std::fprintf(stderr, "the operation failed\n");
    return 1;
  }
  std::printf("%s %s %d items: %zu bytes\n", absl::GetFlag(FLAGS_shape).c_str(), op.c_str(),
              absl::GetFlag(FLAGS_items), bytes->size());
  return 0;
}

}  // namespace
}  // namespace rankwire::bench

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv,
                       "One rankbin operation on one shape, for callgrind's instruction counts.");
  return rankwire::bench::Main();
}
