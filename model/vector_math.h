// Elementwise exp and log1p over arrays of doubles, without a libm call per
// element: the ranker applies them to every candidate (a transform per
// feature, a sigmoid and a log per head), and through libm that was 5-9 %
// of a request's CPU (log1p, pow and exp in perf). These are plain loops
// the compiler vectorizes (this file's .cc is built with -O3, with an AVX2
// clone picked at load time where the CPU has it).
//
// Accuracy: within 2 ulp of the correctly rounded result for every finite
// input (checked against libm in vector_math_test.cc over wide ranges);
// the special values follow libm: Exp(-inf) = 0, Exp(+inf) = +inf,
// Exp(x > 709.78) = +inf, Log1p(+inf) = +inf, NaN stays NaN.
//
// Thread safety: pure functions.
#ifndef RANKWIRE_MODEL_VECTOR_MATH_H_
#define RANKWIRE_MODEL_VECTOR_MATH_H_

#include <cstddef>

namespace rankwire {

// out[i] = exp(x[i]). `out` may be `x`.
void ExpArray(const double* x, double* out, size_t n);

// out[i] = log1p(x[i]). REQUIRES: x[i] >= 0 or NaN (what the ranker
// passes: clamped features, exp() of a logit). `out` may be `x`.
void Log1pNonNegativeArray(const double* x, double* out, size_t n);

// One value, by the same code (for tests and scalar paths).
double FastExp(double x);
double FastLog1pNonNegative(double x);

}  // namespace rankwire

#endif  // RANKWIRE_MODEL_VECTOR_MATH_H_
