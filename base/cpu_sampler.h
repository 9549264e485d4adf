// CpuSampler: the calling thread's CPU time around a phase of work, for one
// call in `every`. Reading a thread's CPU clock (CLOCK_THREAD_CPUTIME_ID)
// is a system call, and on the virtualised hosts this service runs on one
// costs microseconds, so a server that wants its phases' CPU per request
// measures a sample of the calls: the mean over the sampled calls is the
// per-call cost.
//
// Example:
//   CpuSampler cpu(32);              // 1 call in 32 on this thread
//   if (cpu.Start()) {               // this call is sampled
//     ... phase A ...
//     a_ns += cpu.Lap();              // CPU ns since Start() / the last Lap()
//     ... phase B ...
//     b_ns += cpu.Lap();
//   }
//
// Thread safety: a CpuSampler belongs to one thread (the sample counter is
// per thread, kept in thread-local storage across samplers).
#ifndef RANKWIRE_BASE_CPU_SAMPLER_H_
#define RANKWIRE_BASE_CPU_SAMPLER_H_

#include <cstdint>

namespace rankwire {

// The calling thread's CPU time, in nanoseconds.
int64_t ThreadCpuNanos();

class CpuSampler {
 public:
  // Samples one call in `every` on this thread (0: none).
  explicit CpuSampler(uint32_t every) : every_(every) {}

  // Whether this call is sampled; if so, starts the clock.
  bool Start();
  bool sampling() const { return sampling_; }
  // CPU nanoseconds since Start() or the previous Lap(); 0 when not
  // sampling.
  int64_t Lap();

 private:
  uint32_t every_;
  bool sampling_ = false;
  int64_t mark_ = 0;
};

}  // namespace rankwire

#endif  // RANKWIRE_BASE_CPU_SAMPLER_H_
