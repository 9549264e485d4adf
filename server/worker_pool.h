// WorkerPool: a fixed number of threads running submitted tasks in order.
// The queue has no bound of its own: AdmissionControl admits at most
// --max_concurrent_rank calls, so it never holds more than that minus the
// running tasks. By default there is one thread per usable CPU and twice as
// many admitted calls, so each CPU ranks one call and has the next one
// queued.
//
// Every hand-off from one thread to another is a wake-up and a context
// switch, which on a virtualised host costs more than a codec does. So the
// Rank service calls RunOrSubmit(): while fewer than `threads` tasks run
// and fewer than `max_inline` of them on callers' threads, the task runs on
// the caller's thread (gRPC's, which read the request), and that thread
// then runs whatever was queued meanwhile before it returns. Only the calls
// that find every slot taken are queued, and they are picked up by the
// thread that finishes first, without a wake-up when that is a caller's
// thread. `max_inline` stays below gRPC's own thread count, so one gRPC
// thread is always free to read, admit and refuse calls.
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

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace rankwire {

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
    // Tasks RunOrSubmit() may run on callers' threads at once (0: none).
    int max_inline = 0;
  };
  explicit WorkerPool(int threads, int nice = 0)
      : WorkerPool(threads, Placement{"rankwire-rank", nice, true, {}}) {}
  WorkerPool(int threads, const Placement& placement);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task` for a pool thread.
  void Submit(std::function<void()> task);
  // Runs `task` on the calling thread if a slot is free (fewer than
  // `threads` tasks running, fewer than `max_inline` of them inline), then
  // the tasks queued meanwhile; else queues it as Submit() does.
  void RunOrSubmit(std::function<void()> task);

  // Tasks run on callers' threads so far, and tasks queued (for tests and
  // metrics).
  uint64_t inline_runs() const { return inline_runs_.load(std::memory_order_relaxed); }
  uint64_t queued_runs() const { return queued_runs_.load(std::memory_order_relaxed); }

 private:
  void Loop(const Placement& placement);
  // A pool thread may start a task: one is queued and a slot is free.
  bool RunnableOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // On a caller's thread after its own task: runs queued tasks until none
  // is left, then frees its slot.
  void DrainInline();

  const int slots_;
  const int max_inline_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int running_inline_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> inline_runs_{0};
  std::atomic<uint64_t> queued_runs_{0};
  std::vector<std::thread> threads_;
};

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_WORKER_POOL_H_
