#include "server/worker_pool.h"

#include <algorithm>
#include <utility>

namespace rankwire::server {

WorkerPool::WorkerPool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Loop(); });
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

void WorkerPool::Loop() {
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
