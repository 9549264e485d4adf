#include "bench/seed_payload.h"

#include "server/linear_model.h"
#include "server/ranker.h"
#include "workload/workload.h"

namespace rankwire::bench {

const char* PlacementName(LogPlacement placement) {
  return placement == LogPlacement::kInline ? "logs_inline" : "logs_store";
}

absl::StatusOr<RankResult> SeedResult(const std::string& model_path, LogPlacement placement,
                                      uint64_t sequence) {
  absl::StatusOr<server::LinearModel> model = server::LinearModel::LoadFile(model_path);
  if (!model.ok()) return model.status();
  const workload::WorkloadGenerator workload{workload::WorkloadOptions{}};
  const server::Ranker ranker(&*model);
  // Without logs the ranker's result is the same but for them
  // (rank_handler_test's InlineLogsTravelStoredLogsDoNot).
  return ranker
      .Rank(workload.Make(sequence), placement == LogPlacement::kInline ? server::LogDetail::kInline
                                                                        : server::LogDetail::kNone)
      .result;
}

}  // namespace rankwire::bench
