#include "bench/seed_payload.h"

#include "model/linear/linear_model.h"
#include "ranking/ranker.h"
#include "workload/workload.h"

namespace rankwire::bench {

const char* PlacementName(LogPlacement placement) {
  return placement == LogPlacement::kInline ? "logs_inline" : "logs_store";
}

absl::StatusOr<RankResult> SeedResult(const std::string& model_path, LogPlacement placement,
                                      uint64_t sequence) {
  absl::StatusOr<rankwire::LinearSpec> model = rankwire::LinearSpec::LoadFile(model_path);
  if (!model.ok()) return model.status();
  const workload::WorkloadGenerator workload{workload::WorkloadOptions{}};
  const rankwire::Ranker ranker(std::make_shared<rankwire::LinearModel>(*model));
  // Without logs the ranker's result is the same but for them
  // (rank_handler_test's InlineLogsTravelStoredLogsDoNot).
  return ranker
      .Rank(workload.Make(sequence), placement == LogPlacement::kInline
                                         ? rankwire::LogDetail::kInline
                                         : rankwire::LogDetail::kNone)
      .result;
}

}  // namespace rankwire::bench
