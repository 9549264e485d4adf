// Elementwise exp and log1p over arrays of doubles, without a libm call per
// element: the ranker applies them to every candidate (a transform per
// feature, a sigmoid and a log per head), and through libm that was 5-9 %
// of a request's CPU (log1p, pow and exp in perf). These are plain loops
// the compiler vectorizes (this file's .cc is built with -O3, with an AVX2
// clone picked at load time where the CPU has it).
//
// Accuracy: within kExpMaxUlp / kLog1pMaxUlp ulp of the exact result for
// every finite input (libm's exp and log1p are within 1). Checked by
// vector_math_test.cc against libm's long double expl / log1pl over every
// float of one binade and strides over every other float and double bit
// pattern (~15 M inputs each); the largest errors found, in that and in a
// denser sweep (42 M and 25 M inputs): 1.133 ulp for exp (x = -42.614)
// and 2.425 ulp for log1p (x = 4.85e-4). The special values follow libm:
// Exp(-inf) = 0, Exp(+inf) = +inf, Exp(x > 709.78) = +inf, Log1p(+inf) =
// +inf, NaN stays NaN.
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

// The error bounds the functions meet, in units of the last place of the
// result (0.5 would be correctly rounded).
inline constexpr double kExpMaxUlp = 1.25;
inline constexpr double kLog1pMaxUlp = 2.5;

}  // namespace rankwire

#endif  // RANKWIRE_MODEL_VECTOR_MATH_H_
