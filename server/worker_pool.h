// WorkerPool: a fixed number of threads running submitted tasks in order.
// The Rank service parses, ranks and encodes on it, so gRPC's own threads
// only admit or refuse calls and a refusal never waits behind ranking work.
// The queue has no bound of its own: AdmissionControl admits at most
// --max_concurrent_rank calls, so it never holds more than that minus the
// threads. By default there is one thread per usable CPU and twice as many
// admitted calls, so each CPU ranks one call and has the next one queued.
//
// The threads are named "rankwire-rank". They run with the kernel's default
// time slice even when the server gives its other threads a short one
// (--latency_slice_us, base/thread_sched.h), and optionally at a nice value
// (`nice`): gRPC's own threads, which admit, refuse and send, then preempt
// ranking work when they wake, so a refusal is answered at once even when
// every core is ranking.
//
// Thread safety: Submit() is safe from many threads. The destructor runs the
// tasks already queued, then joins.
#ifndef RANKWIRE_SERVER_WORKER_POOL_H_
#define RANKWIRE_SERVER_WORKER_POOL_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace rankwire::server {

class WorkerPool {
 public:
  // How the threads place themselves: the ranking pool's are throughput
  // threads (base/thread_sched.h: the kernel's default slice, `nice`); others
  // (`throughput` false: the log fetch pool, which mostly waits on the
  // store) keep the process's short slice and nice value, like gRPC's.
  struct Placement {
    std::string name = "rankwire-rank";  // At most 15 bytes.
    int nice = 0;
    bool throughput = true;
    std::vector<int> cpus;  // Throughput threads only; empty: wherever the process runs.
  };
  explicit WorkerPool(int threads, int nice = 0)
      : WorkerPool(threads, Placement{"rankwire-rank", nice, true, {}}) {}
  WorkerPool(int threads, Placement placement);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Submit(std::function<void()> task);

 private:
  void Loop(const Placement& placement);
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace rankwire::server

#endif  // RANKWIRE_SERVER_WORKER_POOL_H_
