// Per-thread CPU scheduling: who gets the core first when the server is busy.
//
// The server's latency-critical threads (gRPC's: they admit, refuse and send)
// must not wait behind its throughput threads (ranking workers, log writers).
// Linux offers two per-thread levers, both usable without privileges:
//  - the nice value (a share of the CPU when threads compete), and
//  - since Linux 6.12 (the EEVDF scheduler), a custom time slice
//    (sched_setattr's sched_runtime, 0.1–100 ms). A thread that wakes with a
//    shorter slice than the one running preempts it at once; with equal
//    slices the running thread may keep the core for its whole slice (the
//    kernel's default is 0.75 ms times 1 + log2(CPUs), e.g. 1.4 ms here).
// A new thread inherits both from the thread that creates it.
#ifndef RANKWIRE_BASE_THREAD_SCHED_H_
#define RANKWIRE_BASE_THREAD_SCHED_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "base/cpu_budget.h"  // UsableCpus(), which lived here before.

namespace rankwire {

// Sets the calling thread's nice value (absolute, as setpriority(2)).
absl::Status SetThreadNice(int nice);

// Sets the calling thread's time slice; a zero duration restores the kernel's
// default. The kernel clamps the value into 0.1–100 ms; kernels before 6.12
// accept the call and keep their fixed slices. FailedPrecondition if the
// kernel refuses it; the thread is then unchanged.
absl::Status SetThreadSlice(absl::Duration slice);

// A CPU list as taskset and cpuset write it: "0", "0,2", "1-3,6". Empty
// text is an empty list (no pinning). InvalidArgument for anything else, a
// descending range, or a CPU at or above `cpu_count` (the CPUs the kernel
// knows of).
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text, int cpu_count);

// Pins the calling thread to `cpus` (non-empty). FailedPrecondition if the
// kernel refuses (a CPU outside the container's cpuset); the thread is then
// unchanged.
absl::Status SetThreadAffinity(const std::vector<int>& cpus);

// The calling thread's affinity mask, as a CPU list (ascending).
// FailedPrecondition if the kernel will not say.
absl::StatusOr<std::vector<int>> ThreadAffinity();

// The CPUs of `allowed` that are not in `reserved`: where the rest of a
// process runs when `reserved` is set aside for some of its threads.
// InvalidArgument if `reserved` names a CPU outside `allowed`, or leaves
// none of it.
absl::StatusOr<std::vector<int>> CpusLeftAfter(const std::vector<int>& allowed,
                                               const std::vector<int>& reserved);

// How a throughput thread (a ranking worker, a log writer) places itself
// when it starts: its name, the kernel's default slice (even when the
// process gave its threads a short one), a nice value (0: unchanged) and
// CPUs (empty: unchanged). Every step is tried; the status reports the ones
// the kernel refused (the thread then runs with those unchanged).
struct ThroughputThread {
  std::string name;
  int nice = 0;
  std::vector<int> cpus;
};
absl::Status PlaceThroughputThread(const ThroughputThread& placement);

// The calling thread's name (at most 15 bytes are kept), for top -H and perf.
void SetThreadName(const std::string& name);

}  // namespace rankwire

#endif  // RANKWIRE_BASE_THREAD_SCHED_H_
