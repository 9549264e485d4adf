// CpuBudget: how many CPUs this process can use, and where that number came
// from. Thread-count defaults (ranking slots and workers, log writers) start
// from it, not from the machine's core count: a pod limited to 2 CPUs on a
// 64-core node that sized itself for 64 would time-slice 64 workers through
// a 2-CPU quota and be throttled (CFS) on every burst.
//
// The number is the CPUs in the affinity mask (taskset, a container's
// cpuset), capped by the CPU quota of the process's cgroup, rounded up, as
// container-aware runtimes (the JVM, Go, .NET) read it:
//  - cgroup v2: `cpu.max` ("<quota> <period>" or "max <period>") of the
//    process's own cgroup (from /proc/self/cgroup) and of each ancestor up to
//    the mount; the smallest quota wins (a Kubernetes pod's limit sits on the
//    pod's cgroup, a container's on its own);
//  - cgroup v1: `cpu.cfs_quota_us` (-1: none) and `cpu.cfs_period_us` of
//    the cpu controller's hierarchy, the same way.
// Inside a container with its own cgroup namespace the process's cgroup is
// the mount's root; on a host, or a v1 container that sees the host's path,
// a path that does not exist under the mount falls back to the mount's root.
//
// Cgroup files are read under /sys/fs/cgroup, or under the directory named
// by the environment variable RANKWIRE_CGROUP_ROOT (tests point it at a fake
// tree; a host that mounts cgroups elsewhere can too).
//
// Example:
//   const CpuBudget budget = ReadCpuBudget();
//   spdlog::info("usable CPUs: {}", budget.Describe());
//   workers = budget.cpus;
//
// Thread safety: functions of the file system only.
#ifndef RANKWIRE_BASE_CPU_BUDGET_H_
#define RANKWIRE_BASE_CPU_BUDGET_H_

#include <string>

#include "absl/strings/string_view.h"

namespace rankwire {

inline constexpr char kCgroupRootEnv[] = "RANKWIRE_CGROUP_ROOT";
inline constexpr char kDefaultCgroupRoot[] = "/sys/fs/cgroup";

struct CpuBudget {
  // What defaults start from: at least 1.
  int cpus = 1;
  // CPUs in the affinity mask.
  int affinity_cpus = 1;
  // The quota found, in CPUs (quota / period, e.g. 1.5); 0: none.
  double quota_cpus = 0;
  // The file the quota came from (empty: none).
  std::string quota_file;

  // Which limit set `cpus`: "cgroup v2 cpu.max", "cgroup v1 cpu.cfs_quota_us"
  // (a quota at or below the mask) or "affinity mask" (no quota, or a quota
  // above the mask).
  std::string source() const;
  // One line for the start-up log, e.g. "2 (cgroup v2 cpu.max: quota 2.00
  // CPUs in /sys/fs/cgroup/cpu.max; affinity mask 8 CPUs)".
  std::string Describe() const;
};

// This process's budget: sched_getaffinity, /proc/self/cgroup, and the
// cgroup files under RANKWIRE_CGROUP_ROOT (default /sys/fs/cgroup).
CpuBudget ReadCpuBudget();

// The same from its parts, for tests: `affinity` CPUs in the mask, the cgroup
// mount root, and the text of /proc/self/cgroup.
CpuBudget ReadCpuBudget(int affinity, const std::string& cgroup_root,
                        absl::string_view proc_self_cgroup);

// ReadCpuBudget().cpus.
int UsableCpus();

// `affinity` capped by the text of a cpu.max file (empty: no such file;
// "max ...", or a v1 "-1 ...": no quota), rounded up, at least 1.
int UsableCpus(int affinity, absl::string_view cpu_max);

}  // namespace rankwire

#endif  // RANKWIRE_BASE_CPU_BUDGET_H_
