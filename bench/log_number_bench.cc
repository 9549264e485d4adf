// log_number_bench: the log writers' number coder (logstore/log_number.h)
// on each path this CPU has, over a request's worth of numbers (24,000, what
// 500 log lines hold) of the kinds a line is made of: model outputs across
// orders of magnitude, whole-number counts, short decimals (prices, rates)
// and float features widened to double. One row per path; a ratio against
// the scalar row is only meaningful within one run (run with
// --benchmark_enable_random_interleaving=true and repetitions, as
// docs/bench-notes/2026-12-03-log-number-avx2.md does).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "logstore/log_number.h"

namespace rankwire::logstore {
namespace {

constexpr size_t kNumbersPerRequest = 24000;

uint64_t Next(uint64_t& state) {
  state += 0x9e3779b97f4a7c15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<double> RequestNumbers() {
  std::vector<double> values(kNumbersPerRequest);
  uint64_t state = 20261203;
  for (double& v : values) {
    const uint64_t r = Next(state);
    const double unit = double(r >> 11) * 0x1.0p-53;
    const double sign = (r & 1) ? -1 : 1;
    switch (r % 4) {
      case 0:  // model outputs and contributions, 1e-6 .. 1e2
        v = std::pow(10.0, unit * 8 - 6) * sign;
        break;
      case 1:  // counts
        v = std::floor(unit * 50000);
        break;
      case 2:  // prices, rates
        v = std::round(unit * 100000) / 100;
        break;
      default:  // float features
        v = static_cast<double>(static_cast<float>(unit * 10));
        break;
    }
  }
  return values;
}

void BM_EncodeLogNumbers(benchmark::State& state) {
  const auto path = static_cast<LogNumberPath>(state.range(0));
  LimitLogNumberPath(path);
  if (ActiveLogNumberPath() != path) {
    state.SkipWithError("this CPU does not have this path");
    return;
  }
  const std::vector<double> values = RequestNumbers();
  std::unique_ptr<char[]> out(new char[values.size() * kMaxLogNumberBytes]);
  size_t bytes = 0;
  for (auto _ : state) {
    const char* end = EncodeLogNumbers(values.data(), values.size(), out.get());
    bytes = static_cast<size_t>(end - out.get());
    benchmark::DoNotOptimize(out.get());
  }
  LimitLogNumberPath(LogNumberPath::kAvx512);
  state.SetLabel(LogNumberPathName(path));
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["ns_per_number"] = benchmark::Counter(
      static_cast<double>(values.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void EveryPathHere(benchmark::internal::Benchmark* b) {
  LimitLogNumberPath(LogNumberPath::kAvx512);
  for (int p = 0; p <= static_cast<int>(ActiveLogNumberPath()); ++p) b->Arg(p);
}
BENCHMARK(BM_EncodeLogNumbers)->Apply(EveryPathHere)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rankwire::logstore

BENCHMARK_MAIN();
