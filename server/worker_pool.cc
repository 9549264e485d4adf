#include "server/worker_pool.h"

#include <algorithm>
#include <utility>

#include "base/thread_sched.h"
#include "spdlog/spdlog.h"

namespace rankwire::server {

WorkerPool::WorkerPool(int threads, Placement placement) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    threads_.emplace_back([this, placement] { Loop(placement); });
  }
}

WorkerPool::~WorkerPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::Submit(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

bool WorkerPool::HasWorkOrStopping() const { return stopping_ || !tasks_.empty(); }

void WorkerPool::Loop(const Placement& placement) {
  // A ranking worker runs for its whole (default) slice; gRPC's threads,
  // which inherit the server's short one, preempt it when they wake.
  if (!placement.throughput) {
    SetThreadName(placement.name);
  } else if (absl::Status s = PlaceThroughputThread(
                 {placement.name, placement.nice, placement.cpus});
             !s.ok()) {
    spdlog::warn("{}: {}", placement.name, s.ToString());
  }
  while (true) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &WorkerPool::HasWorkOrStopping));
      if (tasks_.empty()) return;  // Stopping, and nothing left to run.
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace rankwire::server
