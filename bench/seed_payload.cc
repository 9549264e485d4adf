#include "bench/seed_payload.h"

#include "client/workload.h"
#include "server/linear_model.h"
#include "server/ranker.h"

namespace rankwire::bench {

const char* PlacementName(LogPlacement placement) {
  return placement == LogPlacement::kInline ? "logs_inline" : "logs_store";
}

absl::StatusOr<RankResult> SeedResult(const std::string& model_path, LogPlacement placement,
                                      uint64_t sequence) {
  absl::StatusOr<server::LinearModel> model = server::LinearModel::LoadFile(model_path);
  if (!model.ok()) return model.status();
  const client::WorkloadGenerator workload{client::WorkloadOptions{}};
  const rank::v1::RankRequest request = workload.Make(sequence);
  const server::Ranker ranker(&*model);
  RankResult result = ranker.Rank(request, /*with_logs=*/true);
  if (placement == LogPlacement::kStore) {
    for (RankedItem& item : result.items) item.log.clear();
  }
  return result;
}

}  // namespace rankwire::bench
