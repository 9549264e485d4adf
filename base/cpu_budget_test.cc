#include "base/cpu_budget.h"

#include <sched.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

// A fake cgroup mount: files written under a fresh temporary directory.
class FakeCgroup {
 public:
  FakeCgroup() {
    char tmpl[] = "/tmp/rankwire-cgroup-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  ~FakeCgroup() {
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  void Write(const std::string& relative, const std::string& text) {
    const std::filesystem::path path = std::filesystem::path(root_) / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

TEST(CpuBudgetTest, CpuMaxTextCapsTheMask) {
  EXPECT_EQ(UsableCpus(8, ""), 8);
  EXPECT_EQ(UsableCpus(8, "max 100000\n"), 8) << "no quota";
  EXPECT_EQ(UsableCpus(8, "200000 100000\n"), 2);
  EXPECT_EQ(UsableCpus(8, "150000 100000"), 2) << "rounded up";
  EXPECT_EQ(UsableCpus(8, "50000 100000"), 1);
  EXPECT_EQ(UsableCpus(2, "400000 100000"), 2) << "the mask is the smaller";
  EXPECT_EQ(UsableCpus(4, "-1 100000"), 4) << "cgroup v1: -1 is no quota";
  EXPECT_EQ(UsableCpus(4, "garbage"), 4);
  EXPECT_EQ(UsableCpus(0, ""), 1);
}

TEST(CpuBudgetTest, NoCgroupFilesLeaveTheMask) {
  FakeCgroup cgroup;
  const CpuBudget budget = ReadCpuBudget(16, cgroup.root(), "0::/\n");
  EXPECT_EQ(budget.cpus, 16);
  EXPECT_EQ(budget.quota_cpus, 0);
  EXPECT_EQ(budget.source(), "affinity mask");
  EXPECT_EQ(budget.Describe(), "16 (affinity mask: no CPU quota; affinity mask 16 CPUs)");
}

TEST(CpuBudgetTest, V2QuotaAtTheMountRootAsAContainerSeesIt) {
  FakeCgroup cgroup;
  cgroup.Write("cpu.max", "200000 100000\n");
  // A container with its own cgroup namespace: its cgroup is "/".
  CpuBudget budget = ReadCpuBudget(64, cgroup.root(), "0::/\n");
  EXPECT_EQ(budget.cpus, 2);
  EXPECT_DOUBLE_EQ(budget.quota_cpus, 2.0);
  EXPECT_EQ(budget.quota_file, cgroup.root() + "/cpu.max");
  EXPECT_EQ(budget.source(), "cgroup v2 cpu.max");
  EXPECT_THAT(budget.Describe(), HasSubstr("2 (cgroup v2 cpu.max: quota 2.00 CPUs in "));
  // A path the mount does not have (the host's, seen from a container
  // without a cgroup namespace): the mount's root still counts.
  budget = ReadCpuBudget(64, cgroup.root(), "0::/kubepods/pod1/abc\n");
  EXPECT_EQ(budget.cpus, 2);
}

TEST(CpuBudgetTest, V2SmallestQuotaOnThePathUpToTheRootWins) {
  FakeCgroup cgroup;
  // A pod-level limit of 1.5 CPUs above a container without one.
  cgroup.Write("kubepods/pod1/cpu.max", "150000 100000\n");
  cgroup.Write("kubepods/pod1/ctr/cpu.max", "max 100000\n");
  cgroup.Write("kubepods/cpu.max", "800000 100000\n");
  const CpuBudget budget = ReadCpuBudget(8, cgroup.root(), "0::/kubepods/pod1/ctr\n");
  EXPECT_EQ(budget.cpus, 2) << "1.5 CPUs rounded up";
  EXPECT_DOUBLE_EQ(budget.quota_cpus, 1.5);
  EXPECT_EQ(budget.quota_file, cgroup.root() + "/kubepods/pod1/cpu.max");
}

TEST(CpuBudgetTest, QuotaAboveTheMaskLeavesTheMask) {
  FakeCgroup cgroup;
  cgroup.Write("cpu.max", "800000 100000\n");
  const CpuBudget budget = ReadCpuBudget(2, cgroup.root(), "0::/\n");
  EXPECT_EQ(budget.cpus, 2);
  EXPECT_EQ(budget.source(), "affinity mask");
  EXPECT_THAT(budget.Describe(), HasSubstr("quota 8.00 CPUs"));
}

TEST(CpuBudgetTest, V1QuotaOfTheCpuController) {
  FakeCgroup cgroup;
  // "cpu,cpuacct" mounted together, the process in /docker/abc.
  cgroup.Write("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n");
  cgroup.Write("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  cgroup.Write("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  cgroup.Write("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  CpuBudget budget =
      ReadCpuBudget(32, cgroup.root(), "12:pids:/docker/abc\n4:cpu,cpuacct:/docker/abc\n0::/\n");
  EXPECT_EQ(budget.cpus, 3);
  EXPECT_EQ(budget.source(), "cgroup v1 cpu.cfs_quota_us");
  EXPECT_EQ(budget.quota_file, cgroup.root() + "/cpu,cpuacct/docker/abc/cpu.cfs_quota_us");
  // -1: no quota.
  budget = ReadCpuBudget(32, cgroup.root(), "4:cpu,cpuacct:/\n");
  EXPECT_EQ(budget.cpus, 32);
  EXPECT_EQ(budget.quota_cpus, 0);
}

TEST(CpuBudgetTest, V1QuotaUnderPlainCpuWhenTheListIsNotMounted) {
  FakeCgroup cgroup;
  cgroup.Write("cpu/cpu.cfs_quota_us", "100000\n");
  cgroup.Write("cpu/cpu.cfs_period_us", "100000\n");
  const CpuBudget budget = ReadCpuBudget(4, cgroup.root(), "3:cpu,cpuacct:/elsewhere\n");
  EXPECT_EQ(budget.cpus, 1);
}

TEST(CpuBudgetTest, ThisProcessHasAtLeastOneAndAtMostItsMask) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  const CpuBudget budget = ReadCpuBudget();
  EXPECT_GE(budget.cpus, 1);
  EXPECT_LE(budget.cpus, CPU_COUNT(&set));
  EXPECT_EQ(budget.affinity_cpus, CPU_COUNT(&set));
  EXPECT_EQ(UsableCpus(), budget.cpus);
}

}  // namespace
}  // namespace rankwire
