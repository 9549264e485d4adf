#include "base/cpu_sampler.h"

#include <time.h>

namespace rankwire {

int64_t ThreadCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool CpuSampler::Start() {
  thread_local uint32_t calls = 0;
  sampling_ = every_ != 0 && calls++ % every_ == 0;
  if (sampling_) mark_ = ThreadCpuNanos();
  return sampling_;
}

int64_t CpuSampler::Lap() {
  if (!sampling_) return 0;
  const int64_t now = ThreadCpuNanos();
  const int64_t lap = now - mark_;
  mark_ = now;
  return lap;
}

}  // namespace rankwire
