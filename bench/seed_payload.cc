#include "bench/seed_payload.h"

#include <memory>

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
  RankResult result =
      ranker.Rank(std::make_shared<const rank::v1::RankRequest>(workload.Make(sequence)),
                  server::LogDetail::kInline)
          .result;
  if (placement == LogPlacement::kStore) {
    for (RankedItem& item : result.items) item.log.clear();
  }
  return result;
}

}  // namespace rankwire::bench
