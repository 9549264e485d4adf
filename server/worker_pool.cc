#include "server/worker_pool.h"

#include <algorithm>
#include <utility>

#include "base/thread_sched.h"
#include "spdlog/spdlog.h"

namespace rankwire {

WorkerPool::WorkerPool(int threads, const Placement& placement)
    : slots_(std::max(1, threads)), max_inline_(std::max(0, placement.max_inline)) {
  for (int i = 0; i < slots_; ++i) {
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
  queued_runs_.fetch_add(1, std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

void WorkerPool::RunOrSubmit(std::function<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    if (running_ >= slots_ || running_inline_ >= max_inline_) {
      // A pool thread takes it when a slot frees, or the caller's thread
      // holding that slot does, before it returns.
      tasks_.push_back(std::move(task));
      queued_runs_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    ++running_;
    ++running_inline_;
  }
  inline_runs_.fetch_add(1, std::memory_order_relaxed);
  task();
  DrainInline();
}

void WorkerPool::DrainInline() {
  while (true) {
    std::function<void()> next;
    {
      absl::MutexLock lock(&mu_);
      if (tasks_.empty()) {
        --running_;
        --running_inline_;
        return;
      }
      next = std::move(tasks_.front());
      tasks_.pop_front();
    }
    next();
  }
}

bool WorkerPool::RunnableOrStopping() const {
  return stopping_ || (!tasks_.empty() && running_ < slots_);
}

void WorkerPool::Loop(const Placement& placement) {
  // A ranking worker runs for its whole (default) slice; gRPC's threads,
  // which inherit the server's short one, preempt it when they wake.
  if (!placement.throughput) {
    SetThreadName(placement.name);
  } else if (absl::Status s =
                 PlaceThroughputThread({placement.name, placement.nice, placement.cpus});
             !s.ok()) {
    spdlog::warn("{}: {}", placement.name, s.ToString());
  }
  mu_.Lock();
  while (true) {
    mu_.Await(absl::Condition(this, &WorkerPool::RunnableOrStopping));
    if (tasks_.empty()) break;  // Stopping, and nothing left to run.
    // Stopping with tasks left: they run (the destructor's promise), even
    // past the slots.
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    ++running_;
    mu_.Unlock();
    task();
    task = nullptr;  // Its captures are freed outside the lock too.
    mu_.Lock();
    --running_;
  }
  mu_.Unlock();
}

}  // namespace rankwire
