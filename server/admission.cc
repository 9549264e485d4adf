#include "server/admission.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace rankwire {

int DefaultMaxConcurrentRank(int ranking_cpus) { return std::max(2, 2 * ranking_cpus); }

int DefaultRankWorkers(int max_concurrent, int ranking_cpus) {
  return std::max(1, std::min(ranking_cpus, max_concurrent));
}

int DefaultMaxInlineRank(int rank_workers, int configured_cpus) {
  const int grpc_threads = std::clamp(configured_cpus / 2, 2, 16);
  return std::max(0, std::min(rank_workers, grpc_threads - 1));
}

absl::Status AdmissionControl::CheckUnsent(absl::string_view peer) const {
  if (unsent_.load(std::memory_order_relaxed) >= options_.max_unsent_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server holds ", options_.max_unsent_bytes >> 20,
                     " MiB of responses its clients have not read yet (--max_unsent_response_mb); "
                     "retry after a backoff"));
  }
  absl::MutexLock lock(&mu_);
  auto it = unsent_by_peer_.find(peer);
  if (it != unsent_by_peer_.end() && it->second >= options_.max_unsent_bytes_per_peer) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this connection has not read ", it->second, " bytes of earlier responses (the limit is ",
        options_.max_unsent_bytes_per_peer,
        ", --max_unsent_response_mb_per_peer); read them before sending more calls"));
  }
  return absl::OkStatus();
}

absl::Status AdmissionControl::Admit(absl::string_view peer, std::optional<Slot>* slot,
                                     Refusal* refusal) {
  if (absl::Status unsent = CheckUnsent(peer); !unsent.ok()) {
    *refusal = Refusal::kUnsentBytes;
    return unsent;
  }
  if (in_use_.fetch_add(1, std::memory_order_acq_rel) >= options_.max_concurrent_rank) {
    in_use_.fetch_sub(1, std::memory_order_acq_rel);
    *refusal = Refusal::kOverload;
    return absl::ResourceExhaustedError(absl::StrCat(
        "the server is ranking its maximum of ", options_.max_concurrent_rank,
        " calls (--max_concurrent_rank); retry after a backoff or on another replica"));
  }
  slot->emplace(&in_use_);
  return absl::OkStatus();
}

void AdmissionControl::AddUnsent(absl::string_view peer, size_t bytes) {
  unsent_.fetch_add(bytes, std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  unsent_by_peer_[peer] += bytes;
}

void AdmissionControl::RemoveUnsent(absl::string_view peer, size_t bytes) {
  unsent_.fetch_sub(bytes, std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  auto it = unsent_by_peer_.find(peer);
  if (it == unsent_by_peer_.end()) return;
  it->second -= std::min(it->second, bytes);
  if (it->second == 0) unsent_by_peer_.erase(it);
}

}  // namespace rankwire
