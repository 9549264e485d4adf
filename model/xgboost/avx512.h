// The XGBoost kernels' AVX-512 versions, for TreeEvaluator and TreeShap
// alike: RANKWIRE_HAVE_AVX512_KERNEL (1 where GCC or Clang build for
// x86-64), RANKWIRE_TARGET_AVX512 (marks those kernels' functions), and
// CpuHasAvx512F(), whether this CPU runs them (each class picks its kernel
// at load with it).
//
// Thread safety: CpuHasAvx512F is safe from any thread.
#ifndef RANKWIRE_MODEL_XGBOOST_AVX512_H_
#define RANKWIRE_MODEL_XGBOOST_AVX512_H_

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define RANKWIRE_HAVE_AVX512_KERNEL 1
#define RANKWIRE_TARGET_AVX512 __attribute__((target("avx512f")))
#else
#define RANKWIRE_HAVE_AVX512_KERNEL 0
#endif

namespace rankwire::xgboost {

inline bool CpuHasAvx512F() {
#if RANKWIRE_HAVE_AVX512_KERNEL
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

}  // namespace rankwire::xgboost

#endif  // RANKWIRE_MODEL_XGBOOST_AVX512_H_
