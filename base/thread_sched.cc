#include "base/thread_sched.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace rankwire {
namespace {

// The kernel's struct sched_attr (include/uapi/linux/sched/types.h); glibc
// 2.36 has no wrapper for sched_setattr.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
  uint32_t sched_util_min;
  uint32_t sched_util_max;
};

// sched_flags: keep the thread's policy as it is.
constexpr uint64_t kKeepPolicy = 0x08;  // SCHED_FLAG_KEEP_POLICY

}  // namespace

absl::Status SetThreadNice(int nice) {
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot set nice ", nice, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status SetThreadSlice(absl::Duration slice) {
  SchedAttr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.sched_policy = SCHED_OTHER;
  // The slice is read from sched_runtime for fair-class threads. Keeping the
  // policy makes this a no-op for a real-time thread instead of demoting it;
  // the nice value is passed on unchanged.
  attr.sched_flags = kKeepPolicy;
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
  if (errno != 0) return absl::FailedPreconditionError("cannot read this thread's nice value");
  attr.sched_nice = nice;
  attr.sched_runtime = static_cast<uint64_t>(absl::ToInt64Nanoseconds(slice));
  if (syscall(SYS_sched_setattr, 0, &attr, 0) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot set a ", absl::FormatDuration(slice),
                                                      " time slice: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text, int cpu_count) {
  std::vector<int> cpus;
  if (text.empty()) return cpus;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> range = absl::StrSplit(part, absl::MaxSplits('-', 1));
    int first = 0, last = 0;
    if (!absl::SimpleAtoi(range[0], &first) ||
        !absl::SimpleAtoi(range.size() == 2 ? range[1] : range[0], &last) || first < 0 ||
        last < first) {
      return absl::InvalidArgumentError(absl::StrCat("CPU list \"", text, "\": \"", part,
                                                     "\" is not a CPU or an ascending range a-b"));
    }
    if (last >= cpu_count || last >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("CPU list \"", text, "\": CPU ", last,
                                                     " does not exist (this machine has ",
                                                     cpu_count, ")"));
    }
    for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  }
  return cpus;
}

absl::Status SetThreadAffinity(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
  }
  if (const int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set); err != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot pin to CPUs ", absl::StrJoin(cpus, ","), ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> ThreadAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (const int err = pthread_getaffinity_np(pthread_self(), sizeof(set), &set); err != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read the thread's CPU affinity: ", std::strerror(err)));
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

absl::StatusOr<std::vector<int>> CpusLeftAfter(const std::vector<int>& allowed,
                                               const std::vector<int>& reserved) {
  for (int cpu : reserved) {
    if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CPU ", cpu, " is not one this process may use (", absl::StrJoin(allowed, ","), ")"));
    }
  }
  std::vector<int> left;
  for (int cpu : allowed) {
    if (std::find(reserved.begin(), reserved.end(), cpu) == reserved.end()) left.push_back(cpu);
  }
  if (left.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("setting aside CPUs ",
                                                   absl::StrJoin(reserved, ","),
                                                   " leaves none for the process's other threads"));
  }
  return left;
}

absl::Status PlaceThroughputThread(const ThroughputThread& placement) {
  SetThreadName(placement.name);
  // Kernels before 6.12 have no custom slices and accept this as a no-op.
  absl::Status status = SetThreadSlice(absl::ZeroDuration());
  if (placement.nice != 0) status.Update(SetThreadNice(placement.nice));
  if (!placement.cpus.empty()) status.Update(SetThreadAffinity(placement.cpus));
  return status;
}

void SetThreadName(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace rankwire
