// The worker pool under concurrent callers: every task runs exactly once,
// inline or queued, and the destructor runs what is still queued. Mostly
// here for scripts/tsan.sh, which runs it under ThreadSanitizer.
#include "server/worker_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "gtest/gtest.h"

namespace rankwire {
namespace {

TEST(WorkerPoolTest, EveryTaskFromManyCallersRunsOnce) {
  constexpr int kCallers = 4;
  constexpr int kTasksEach = 500;
  std::vector<int> ran(kCallers * kTasksEach, 0);  // Each slot written by its task only.
  std::atomic<int> total{0};
  {
    WorkerPool pool(2, WorkerPool::Placement{"test-pool", 0, false, {}, /*max_inline=*/1});
    absl::BlockingCounter done(kCallers * kTasksEach);
    std::vector<std::thread> callers;
    for (int c = 0; c < kCallers; ++c) {
      callers.emplace_back([&, c] {
        for (int i = 0; i < kTasksEach; ++i) {
          int* slot = &ran[c * kTasksEach + i];
          auto task = [slot, &total, &done] {
            ++*slot;
            total.fetch_add(1, std::memory_order_relaxed);
            done.DecrementCount();
          };
          if (i % 2) {
            pool.RunOrSubmit(task);
          } else {
            pool.Submit(task);
          }
        }
      });
    }
    for (std::thread& t : callers) t.join();
    done.Wait();
    EXPECT_EQ(pool.inline_runs() + pool.queued_runs(), uint64_t{kCallers * kTasksEach});
  }
  EXPECT_EQ(total.load(), kCallers * kTasksEach);
  for (int r : ran) ASSERT_EQ(r, 1);
}

TEST(WorkerPoolTest, TheDestructorRunsWhatIsQueued) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(1, WorkerPool::Placement{"test-pool", 0, false, {}, 0});
    for (int i = 0; i < 100; ++i) pool.Submit([&ran] { ran.fetch_add(1); });
  }
  EXPECT_EQ(ran.load(), 100);
}

}  // namespace
}  // namespace rankwire
