// AdmissionControl decides, before any work, whether the server takes a
// Rank call. Two bounds:
//
//  - Ranking slots (--max_concurrent_rank): calls being parsed, ranked or
//    encoded. Ranking is CPU-bound, so past a small multiple of the cores
//    more concurrent calls only wait; a call that finds no free slot is
//    refused at once (RESOURCE_EXHAUSTED) instead of queueing inside gRPC
//    until its deadline.
//  - Unsent response bytes: responses handed to gRPC that the client has
//    not yet taken (a client that does not read keeps them in the server's
//    memory; HTTP/2 flow control stops the sending, not the holding). A
//    global bound (--max_unsent_response_mb) and one per peer connection
//    (--max_unsent_response_mb_per_peer): a peer over its bound gets
//    RESOURCE_EXHAUSTED until it reads, and does not use up everyone's.
//    The bounds are checked at admission, so calls admitted before a bound
//    was crossed can pass it by one response each (at most one per slot).
//
// Example:
//   std::optional<AdmissionControl::Slot> slot;
//   absl::Status s = admission.Admit(peer, &slot);   // ResourceExhausted if not
//   ... rank, encode ...
//   admission.AddUnsent(peer, bytes);                 // when handed to gRPC
//   admission.RemoveUnsent(peer, bytes);              // when the call is done
//
// Thread safety: all methods are safe from many threads.
#ifndef RANKWIRE_SERVER_ADMISSION_H_
#define RANKWIRE_SERVER_ADMISSION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace rankwire {

struct AdmissionOptions {
  int max_concurrent_rank = 4;
  size_t max_unsent_bytes = size_t{512} << 20;
  size_t max_unsent_bytes_per_peer = size_t{128} << 20;
};

// The default --max_concurrent_rank: twice the CPUs ranking runs on,
// `ranking_cpus` (the CPUs the process can use, UsableCpus(): its affinity
// mask capped by its cgroup CPU quota; or those of --rank_worker_cpus); at
// least 2. With one ranking worker per CPU (DefaultRankWorkers), each CPU
// has one call in work and one admitted call waiting, so it never idles
// between calls while a client's next request is on its way.
int DefaultMaxConcurrentRank(int ranking_cpus);

// The default --rank_workers: one per ranking CPU, at most
// `max_concurrent`. Ranking is CPU work: a second worker on a CPU would only
// time-slice two calls, finishing both late (and each phase's time would
// include the other call's); queued, the first finishes in its own time.
int DefaultRankWorkers(int max_concurrent, int ranking_cpus);

// How many admitted calls may be ranked on the gRPC threads that received
// them (WorkerPool::RunOrSubmit) instead of being handed to a ranking
// worker: one fewer than the threads gRPC's callback API polls with
// (clamp(configured CPUs / 2, 2, 16) in gRPC 1.51), so one of them is always
// free to read, admit and refuse calls; at most `rank_workers`.
// `configured_cpus` is sysconf(_SC_NPROCESSORS_CONF), as gRPC counts.
int DefaultMaxInlineRank(int rank_workers, int configured_cpus);

class AdmissionControl {
 public:
  enum class Refusal { kOverload, kUnsentBytes };

  // A held ranking slot; released when destroyed.
  class Slot {
   public:
    explicit Slot(std::atomic<int>* in_use) : in_use_(in_use) {}
    Slot(Slot&& other) noexcept : in_use_(other.in_use_) { other.in_use_ = nullptr; }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    Slot& operator=(Slot&&) = delete;
    ~Slot() { Release(); }
    // Frees the slot now (at most once): a call releases it before it
    // finishes, so a client whose next call follows the response at once
    // finds it free, not held while the worker frees this call's memory.
    void Release() {
      if (in_use_ != nullptr) in_use_->fetch_sub(1, std::memory_order_acq_rel);
      in_use_ = nullptr;
    }

   private:
    std::atomic<int>* in_use_;
  };

  explicit AdmissionControl(AdmissionOptions options) : options_(options) {}

  // OK and `*slot` set, or ResourceExhausted (and `*refusal` set) saying
  // which bound was hit and what the caller should do.
  absl::Status Admit(absl::string_view peer, std::optional<Slot>* slot, Refusal* refusal);
  // Only the unsent-bytes bounds (Admit's first check): for calls that take
  // no ranking slot (FetchLogs) but whose responses count as unsent.
  absl::Status CheckUnsent(absl::string_view peer) const;

  void AddUnsent(absl::string_view peer, size_t bytes);
  void RemoveUnsent(absl::string_view peer, size_t bytes);

  int in_use() const { return in_use_.load(std::memory_order_relaxed); }
  size_t unsent_bytes() const { return unsent_.load(std::memory_order_relaxed); }
  const AdmissionOptions& options() const { return options_; }

 private:
  const AdmissionOptions options_;
  std::atomic<int> in_use_{0};
  std::atomic<size_t> unsent_{0};
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, size_t> unsent_by_peer_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_ADMISSION_H_
