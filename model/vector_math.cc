#include "model/vector_math.h"

#include "base/target_clones.h"

#include <cstdint>
#include <cstring>

namespace rankwire {
namespace {

inline uint64_t Bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
inline double FromBits(uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// exp(x) = 2^n * exp(r), n = round(x / ln 2), r = x - n ln 2 (Cody-Waite:
// ln 2 in two parts, so r is exact to the last bits), |r| <= ln2 / 2, and
// exp(r) by its Taylor polynomial to degree 13 (truncation below 1e-17
// relative). 2^n is applied as two powers of two, each a normal number, so
// results down to the subnormals (x > -745.13) come out right and larger
// or smaller x overflow to inf or underflow to 0 as libm's do.
inline double ExpKernel(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShifter = 6755399441055744.0;  // 1.5 * 2^52: rounds to an integer.
  x = x < -746.0 ? -746.0 : x;                     // NaN compares false and stays NaN.
  x = x > 710.0 ? 710.0 : x;
  const double n = (x * kLog2e + kShifter) - kShifter;
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  double p = 1.0 / 6227020800.0;  // 1/13!
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // n1 = floor(n / 2), n2 = n - n1, each a biased exponent in 1..2046,
  // put in place from the low bits of a shifted double (no integer
  // conversion: the loop stays in vector registers without AVX-512).
  const double n1 = ((n * 0.5 - 0.25) + kShifter) - kShifter;
  const double n2 = n - n1;
  const double scale1 = FromBits(Bits(n1 + (1023.0 + kShifter)) << 52);
  const double scale2 = FromBits(Bits(n2 + (1023.0 + kShifter)) << 52);
  return p * scale1 * scale2;
}

// log1p(x) for x >= 0: u = 1 + x rounded, log u = e ln 2 + log m with m in
// [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <=
// 0.1716, by its series to s^23 (truncation below 1e-18), plus (x - (u -
// 1)) / u for the rounding of 1 + x.
inline double Log1pKernel(double x) {
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kSqrt2 = 1.4142135623730951;
  const double u = 1.0 + x;
  const double correction = (x - (u - 1.0)) / u;
  const uint64_t bits = Bits(u);
  // The exponent as a double, from its bits (no integer conversion).
  double e = FromBits(0x4330000000000000ULL | ((bits >> 52) & 0x7ff)) - (4503599627370496.0 + 1023);
  double m = FromBits((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);
  const bool high = m > kSqrt2;
  m = high ? m * 0.5 : m;
  e += high ? 1.0 : 0.0;
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double q = 1.0 / 23;
  q = q * s2 + 1.0 / 21;
  q = q * s2 + 1.0 / 19;
  q = q * s2 + 1.0 / 17;
  q = q * s2 + 1.0 / 15;
  q = q * s2 + 1.0 / 13;
  q = q * s2 + 1.0 / 11;
  q = q * s2 + 1.0 / 9;
  q = q * s2 + 1.0 / 7;
  q = q * s2 + 1.0 / 5;
  q = q * s2 + 1.0 / 3;
  const double log_m = 2.0 * s + 2.0 * s * s2 * q;
  const double result = e * kLn2Hi + ((e * kLn2Lo + correction) + log_m);
  // +inf: the decomposition above sees inf's bits as a finite number.
  return x == __builtin_inf() ? x : result;
}

}  // namespace

RANKWIRE_TARGET_CLONES("avx2", "default") void ExpArray(const double* x, double* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = ExpKernel(x[i]);
}

RANKWIRE_TARGET_CLONES("avx2", "default")
void Log1pNonNegativeArray(const double* x, double* out, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = Log1pKernel(x[i]);
}

}  // namespace rankwire
