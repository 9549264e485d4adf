#include "base/cpu_budget.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rankwire {
namespace {

// The first `limit` bytes of a small file (a cgroup setting, /proc/self/cgroup);
// empty if unreadable.
std::string ReadSmallFile(const std::string& path, size_t limit = 256) {
  std::string text;
  if (std::FILE* f = std::fopen(path.c_str(), "r")) {
    text.resize(limit);
    text.resize(std::fread(text.data(), 1, limit, f));
    std::fclose(f);
  }
  return text;
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// A quota in cpu.max's form ("<quota> <period>"), in CPUs; nullopt for "max",
// v1's -1, or anything unreadable.
std::optional<double> QuotaCpus(absl::string_view text) {
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(text), absl::ByAnyChar(" \n"), absl::SkipEmpty());
  int64_t quota = 0, period = 0;
  if (fields.size() == 2 && absl::SimpleAtoi(fields[0], &quota) &&
      absl::SimpleAtoi(fields[1], &period) && quota > 0 && period > 0) {
    return static_cast<double>(quota) / static_cast<double>(period);
  }
  return std::nullopt;
}

// The directories of a cgroup: `mount` + `path`, then each ancestor up to
// `mount`. A path that does not exist under the mount (the host's path seen
// from a container, or a test's fake tree) gives the mount alone.
std::vector<std::string> CgroupDirs(const std::string& mount, absl::string_view path) {
  std::string relative(absl::StripSuffix(absl::StripPrefix(path, "/"), "/"));
  std::vector<std::string> dirs;
  if (!relative.empty() && IsDirectory(absl::StrCat(mount, "/", relative))) {
    while (!relative.empty()) {
      dirs.push_back(absl::StrCat(mount, "/", relative));
      const size_t slash = relative.rfind('/');
      relative.resize(slash == std::string::npos ? 0 : slash);
    }
  }
  dirs.push_back(mount);
  return dirs;
}

// From /proc/self/cgroup ("<id>:<controllers>:<path>" per line): the v2
// path (the "0::" line) and the v1 cpu controller's list and path.
struct SelfCgroup {
  std::string v2_path = "/";
  std::string v1_controllers = "cpu";
  std::string v1_path = "/";
};

SelfCgroup ParseSelfCgroup(absl::string_view text) {
  SelfCgroup self;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3) continue;
    if (f[0] == "0" && f[1].empty()) {
      self.v2_path = std::string(f[2]);
      continue;
    }
    for (absl::string_view controller : absl::StrSplit(f[1], ',')) {
      if (controller == "cpu") {
        self.v1_controllers = std::string(f[1]);
        self.v1_path = std::string(f[2]);
      }
    }
  }
  return self;
}

// Keeps the smallest quota met, with its file.
void ConsiderQuota(const std::string& file, std::optional<double> quota, CpuBudget* budget) {
  if (quota.has_value() && (budget->quota_cpus == 0 || *quota < budget->quota_cpus)) {
    budget->quota_cpus = *quota;
    budget->quota_file = file;
  }
}

}  // namespace

std::string CpuBudget::source() const {
  if (quota_cpus > 0 && static_cast<int>(std::ceil(quota_cpus)) <= affinity_cpus) {
    return absl::EndsWith(quota_file, "cpu.max") ? "cgroup v2 cpu.max"
                                                 : "cgroup v1 cpu.cfs_quota_us";
  }
  return "affinity mask";
}

std::string CpuBudget::Describe() const {
  const std::string quota = quota_cpus > 0
                                ? absl::StrFormat("quota %.2f CPUs in %s", quota_cpus, quota_file)
                                : std::string("no CPU quota");
  return absl::StrCat(cpus, " (", source(), ": ", quota, "; affinity mask ", affinity_cpus,
                      " CPUs)");
}

CpuBudget ReadCpuBudget(int affinity, const std::string& cgroup_root,
                        absl::string_view proc_self_cgroup) {
  CpuBudget budget;
  budget.affinity_cpus = std::max(1, affinity);
  const SelfCgroup self = ParseSelfCgroup(proc_self_cgroup);
  for (const std::string& dir : CgroupDirs(cgroup_root, self.v2_path)) {
    const std::string file = dir + "/cpu.max";
    ConsiderQuota(file, QuotaCpus(ReadSmallFile(file)), &budget);
  }
  // v1: the cpu controller's hierarchy is mounted as its controller list
  // ("cpu,cpuacct", with a "cpu" link beside it on most systems) or "cpu".
  for (const std::string& name : {self.v1_controllers, std::string("cpu")}) {
    const std::string mount = absl::StrCat(cgroup_root, "/", name);
    if (!IsDirectory(mount)) continue;
    for (const std::string& dir : CgroupDirs(mount, self.v1_path)) {
      const std::string quota_file = dir + "/cpu.cfs_quota_us";
      ConsiderQuota(quota_file,
                    QuotaCpus(absl::StrCat(absl::StripAsciiWhitespace(ReadSmallFile(quota_file)),
                                           " ", ReadSmallFile(dir + "/cpu.cfs_period_us"))),
                    &budget);
    }
    break;
  }
  budget.cpus = budget.affinity_cpus;
  if (budget.quota_cpus > 0) {
    budget.cpus = std::min(budget.cpus, static_cast<int>(std::ceil(budget.quota_cpus)));
  }
  budget.cpus = std::max(1, budget.cpus);
  return budget;
}

CpuBudget ReadCpuBudget() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int affinity = sched_getaffinity(0, sizeof(set), &set) == 0
                           ? CPU_COUNT(&set)
                           : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  const char* root = std::getenv(kCgroupRootEnv);
  return ReadCpuBudget(affinity, root != nullptr && *root != '\0' ? root : kDefaultCgroupRoot,
                       ReadSmallFile("/proc/self/cgroup", 16384));
}

int UsableCpus() { return ReadCpuBudget().cpus; }

int UsableCpus(int affinity, absl::string_view cpu_max) {
  int cpus = std::max(1, affinity);
  if (std::optional<double> quota = QuotaCpus(cpu_max)) {
    cpus = std::min(cpus, static_cast<int>(std::ceil(*quota)));
  }
  return std::max(1, cpus);
}

}  // namespace rankwire
