// The workload generator: seeded, deterministic RankRequests shaped like
// e-commerce search traffic (500 candidates from five recall channels, 18
// item features with realistic distributions, user and context features).
// Tests, the CLI, the load generator and the benchmarks all build their
// payloads here, so every number in the project is about the same payload.
//
// Make(sequence) is a pure function of (options, sequence): the same inputs
// give the same request on every machine (own PRNG and distributions, no
// <random> engines whose output differs between standard libraries).
//
// Thread safety: const methods are safe from many threads.
#ifndef RANKWIRE_WORKLOAD_WORKLOAD_H_
#define RANKWIRE_WORKLOAD_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rank/v1/rank.pb.h"

namespace rankwire::workload {

struct WorkloadOptions {
  uint64_t seed = 20261129;
  uint32_t candidates = 500;
  uint32_t top_n = 10;
  rank::v1::Scene scene = rank::v1::SCENE_SEARCH;
  std::vector<std::string> accept_codecs;
  rank::v1::LogMode log_mode = rank::v1::LOG_MODE_DEFAULT;
};

// The item feature names every generated request carries, in order.
const std::vector<std::string>& ItemFeatureNames();

class WorkloadGenerator {
 public:
  explicit WorkloadGenerator(WorkloadOptions options) : options_(std::move(options)) {}

  rank::v1::RankRequest Make(uint64_t sequence) const;
  const WorkloadOptions& options() const { return options_; }

 private:
  WorkloadOptions options_;
};

}  // namespace rankwire::workload

#endif  // RANKWIRE_WORKLOAD_WORKLOAD_H_
