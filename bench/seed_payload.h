// The benchmarks' payload: the seed-shaped RankResult, i.e. request 0 of
// WorkloadGenerator(WorkloadOptions{}) (500 candidates) ranked by the real
// rankwire::Ranker with the shipped model. Every codec row measures these
// exact bytes, so their numbers can be compared with each other and with
// the end-to-end benchmarks.
//
// Thread safety: plain functions over values.
#ifndef RANKWIRE_BENCH_SEED_PAYLOAD_H_
#define RANKWIRE_BENCH_SEED_PAYLOAD_H_

#include <string>

#include "absl/status/statusor.h"
#include "codec/rank_result.h"

namespace rankwire::bench {

// Where the logs travel: in the response (the targets' setting, and the
// source system's baseline), or in the log store (every item's log empty).
enum class LogPlacement { kInline, kStore };

// "logs_inline" / "logs_store": the last part of a benchmark's name.
const char* PlacementName(LogPlacement placement);

// Request `sequence` of the default workload, ranked with the model at
// `model_path`, with its log lines inline, or none for kStore.
absl::StatusOr<RankResult> SeedResult(const std::string& model_path, LogPlacement placement,
                                      uint64_t sequence = 0);

}  // namespace rankwire::bench

#endif  // RANKWIRE_BENCH_SEED_PAYLOAD_H_
