#include "base/thread_sched.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rankwire {
namespace {

// The calling thread's time slice in ns from /proc (the kernel's se.slice),
// or nothing where the kernel does not show it.
std::optional<long long> SliceNs() {
  std::ifstream in(absl::StrCat("/proc/self/task/", syscall(SYS_gettid), "/sched"));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("se.slice", 0) != 0) continue;
    long long ns = 0;
    if (absl::SimpleAtoi(line.substr(line.find(':') + 1), &ns)) return ns;
  }
  return std::nullopt;
}

int Nice() { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }

std::string Name() {
  std::ifstream in(absl::StrCat("/proc/self/task/", syscall(SYS_gettid), "/comm"));
  std::string name;
  std::getline(in, name);
  return name;
}

TEST(ThreadSchedTest, ShortSliceIsSetInheritedAndRestored) {
  // Each check runs on its own thread so the test runner's thread is left as it was.
  std::thread([] {
    const std::optional<long long> before = SliceNs();
    absl::Status set = SetThreadSlice(absl::Microseconds(200));
    if (!set.ok() || !before.has_value()) {
      GTEST_SKIP() << "no custom time slices on this kernel: " << set;
    }
    EXPECT_EQ(SliceNs(), 200000);
    std::optional<long long> child;
    std::thread([&child] { child = SliceNs(); }).join();
    EXPECT_EQ(child, 200000) << "a new thread inherits its creator's slice";
    ASSERT_TRUE(SetThreadSlice(absl::ZeroDuration()).ok());
    EXPECT_EQ(SliceNs(), before) << "zero restores the kernel's default";
  }).join();
}

TEST(ThreadSchedTest, SliceKeepsTheNiceValue) {
  std::thread([] {
    ASSERT_TRUE(SetThreadNice(7).ok());
    (void)SetThreadSlice(absl::Microseconds(300));
    EXPECT_EQ(Nice(), 7);
  }).join();
}

TEST(ThreadSchedTest, SliceIsClampedToTheKernelsRange) {
  std::thread([] {
    // Linux takes 0.1 ms to 100 ms and clamps anything else into that range.
    if (!SetThreadSlice(absl::Seconds(5)).ok() || !SliceNs().has_value()) {
      GTEST_SKIP() << "no custom time slices on this kernel";
    }
    EXPECT_EQ(SliceNs(), 100000000);
    ASSERT_TRUE(SetThreadSlice(absl::Microseconds(1)).ok());
    EXPECT_EQ(SliceNs(), 100000);
  }).join();
}

TEST(ThreadSchedTest, NiceAndName) {
  std::thread([] {
    ASSERT_TRUE(SetThreadNice(3).ok());
    EXPECT_EQ(Nice(), 3);
    EXPECT_EQ(SetThreadNice(-20).code(),
              geteuid() == 0 ? absl::StatusCode::kOk : absl::StatusCode::kFailedPrecondition);
    SetThreadName("a-name-longer-than-fifteen");
    EXPECT_EQ(Name(), "a-name-longer-t");
  }).join();
}

TEST(ThreadSchedTest, CpuListsAsTasksetWritesThem) {
  EXPECT_EQ(ParseCpuList("", 4).value(), std::vector<int>{});
  EXPECT_EQ(ParseCpuList("2", 4).value(), std::vector<int>{2});
  EXPECT_EQ(ParseCpuList("0,2-3", 4).value(), (std::vector<int>{0, 2, 3}));
  for (const char* bad : {"x", "1-", "-1", "3-1", "1,,2", "1.5"}) {
    EXPECT_EQ(ParseCpuList(bad, 4).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  absl::Status missing = ParseCpuList("1-4", 4).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.message(), "CPU list \"1-4\": CPU 4 does not exist (this machine has 4)");
}

TEST(ThreadSchedTest, AffinityPinsOnlyTheCallingThread) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  std::thread([] {
    ASSERT_TRUE(SetThreadAffinity({0}).ok());
    cpu_set_t now;
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(now), &now), 0);
    EXPECT_EQ(CPU_COUNT(&now), 1);
    EXPECT_TRUE(CPU_ISSET(0, &now));
  }).join();
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

TEST(ThreadSchedTest, CpusSetAsideLeaveTheRest) {
  EXPECT_EQ(CpusLeftAfter({0, 1, 2, 3}, {1}).value(), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(CpusLeftAfter({0, 1, 2, 3}, {2, 3}).value(), (std::vector<int>{0, 1}));
  EXPECT_EQ(CpusLeftAfter({4, 6}, {}).value(), (std::vector<int>{4, 6}));
  absl::Status outside = CpusLeftAfter({0, 1}, {1, 2}).status();
  EXPECT_EQ(outside.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(outside.message(), "CPU 2 is not one this process may use (0,1)");
  absl::Status all = CpusLeftAfter({0, 1}, {0, 1}).status();
  EXPECT_EQ(all.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(all.message(), "setting aside CPUs 0,1 leaves none for the process's other threads");
  // This thread's mask, as the server reads it before setting CPUs aside.
  absl::StatusOr<std::vector<int>> mine = ThreadAffinity();
  ASSERT_TRUE(mine.ok()) << mine.status();
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_EQ(static_cast<int>(mine->size()), CPU_COUNT(&set));
}

TEST(ThreadSchedTest, AThroughputThreadIsNamedNicedPinnedAndOnTheDefaultSlice) {
  std::thread([] {
    const std::optional<long long> before = SliceNs();
    (void)SetThreadSlice(absl::Microseconds(200));
    ASSERT_TRUE(PlaceThroughputThread({"rankwire-test", 6, {0}}).ok());
    EXPECT_EQ(Name(), "rankwire-test");
    EXPECT_EQ(Nice(), 6);
    EXPECT_EQ(SliceNs(), before);
    cpu_set_t now;
    ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(now), &now), 0);
    EXPECT_EQ(CPU_COUNT(&now), 1);
    EXPECT_TRUE(CPU_ISSET(0, &now));
  }).join();
}

}  // namespace
}  // namespace rankwire
