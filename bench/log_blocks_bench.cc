// log_blocks_bench: what a log writer does per request before it talks to
// Redis, in the blocks format: LogRenderer::RenderBlocks, the layout and
// every block of a request's lines written into the HSET arguments
// (PackedFields), on the ranker's real output (the workload generator's
// 500-candidate requests ranked by the shipped model, handed over deferred
// exactly as the server does).
//
// Prints µs of thread CPU per request, median [min-max] over --rounds, and
// the request's value bytes. For an instruction count (repeatable where
// this host's speed drifts), run it under callgrind with
// --toggle-collect='*RenderMeasured*' and divide by --iterations.
//
//   taskset -c 1 build/bench/log_blocks_bench --rounds=7 --iterations=2000
//   valgrind --tool=callgrind --toggle-collect='*RenderMeasured*'
//     build/bench/log_blocks_bench --rounds=1 --iterations=20
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "absl/flags/flag.h"
#include "base/flags.h"
#include "logstore/log_store.h"
#include "logstore/packed_fields.h"
#include "model/linear/linear_model.h"
#include "ranking/ranker.h"
#include "workload/workload.h"

ABSL_FLAG(int, rounds, 7, "Timed rounds (the median and range are printed)");
ABSL_FLAG(int, iterations, 2000, "Requests rendered per round");
ABSL_FLAG(int, requests, 16, "Distinct requests of the workload, cycled");
ABSL_FLAG(uint32_t, candidates, 500, "Candidates per request");
ABSL_FLAG(uint32_t, block_items, 16, "Items per block after the first (--log_block_items)");

namespace rankwire::bench {
namespace {

double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) * 1e-3;
}

// What a writer does with one request; not inlined, so callgrind can
// collect it alone. Returns the value bytes.
__attribute__((noinline)) size_t RenderMeasured(logstore::LogRenderer* renderer,
                                                uint32_t block_items,
                                                logstore::PackedFields* fields) {
  *fields = logstore::PackedFields();
  if (!renderer->RenderBlocks(block_items, fields)) std::abort();
  return fields->value_bytes();
}

int Run() {
  absl::StatusOr<rankwire::LinearSpec> model = rankwire::LinearSpec::LoadFile(RANKWIRE_MODEL_PATH);
  if (!model.ok()) {
    std::fprintf(stderr, "log_blocks_bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  const rankwire::Ranker ranker(std::make_shared<rankwire::LinearModel>(*model));
  workload::WorkloadOptions options;
  options.candidates = absl::GetFlag(FLAGS_candidates);
  const workload::WorkloadGenerator generator(options);
  std::vector<std::shared_ptr<logstore::LogRenderer>> renderers;
  for (int i = 0; i < std::max(1, absl::GetFlag(FLAGS_requests)); ++i) {
    rankwire::RankOutput out = ranker.Rank(generator.Make(i), rankwire::LogDetail::kDeferred);
    renderers.push_back(std::move(out.logs));
  }
  const uint32_t block_items = absl::GetFlag(FLAGS_block_items);
  const int iterations = std::max(1, absl::GetFlag(FLAGS_iterations));
  logstore::PackedFields fields;
  size_t bytes = 0;
  std::vector<double> per_request;
  for (int round = 0; round < std::max(1, absl::GetFlag(FLAGS_rounds)); ++round) {
    const double start = ThreadCpuMicros();
    for (int i = 0; i < iterations; ++i) {
      bytes += RenderMeasured(renderers[i % renderers.size()].get(), block_items, &fields);
    }
    per_request.push_back((ThreadCpuMicros() - start) / iterations);
  }
  std::vector<double> sorted = per_request;
  std::sort(sorted.begin(), sorted.end());
  std::printf(
      "RenderBlocks, %u candidates, blocks of %u: %.2f us / request [%.2f-%.2f] over %zu "
      "rounds of %d; %.0f value bytes / request\n",
      absl::GetFlag(FLAGS_candidates), block_items, sorted[sorted.size() / 2], sorted.front(),
      sorted.back(), sorted.size(), iterations, double(bytes) / double(iterations * sorted.size()));
  return 0;
}

}  // namespace
}  // namespace rankwire::bench

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv,
                       "What a log writer does per request before Redis (RenderBlocks): "
                       "log_blocks_bench --rounds=7 --iterations=2000 [--block_items=16]");
  return rankwire::bench::Run();
}
