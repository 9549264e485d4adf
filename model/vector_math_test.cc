// vector_math against the exact result, over the whole domain: every
// binary32 value of one binade (the one the ranker's sigmoid and log
// transforms live in), a dense stride over every other binary32 bit
// pattern, and a stride over the binary64 bit patterns (values no float
// holds, where the reduction's rounding differs): ~15 M inputs per
// function. Where a result equals libm's double exp / log1p (most do) its
// error is libm's (glibc's: under 1 ulp); elsewhere it is measured against
// libm's long double expl / log1pl (64-bit significand), in ulp of the
// double result, to within 2^-11 ulp.
#include "model/vector_math.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace rankwire {
namespace {

double FromBits64(uint64_t b) {
  double x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
double FromBits32(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

// |got - exact| in units of the last place of the double nearest `exact`
// (2^-1074 below the normals).
double UlpError(double got, long double exact) {
  const double rounded = static_cast<double>(exact);
  const int exponent =
      std::fabs(rounded) < std::numeric_limits<double>::min() ? -1022 : std::ilogb(rounded);
  const long double ulp = std::ldexp(1.0L, exponent - 52);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - exact) / ulp);
}

struct Sweep {
  double max_ulp = 0;
  double worst_x = 0;
  size_t checked = 0;
  size_t same_as_libm = 0;
  size_t mismatched_specials = 0;
};

// Runs `array` over `xs` in blocks (the serving path, with its AVX2 clone
// where the CPU has it) and compares each result with `exact` and `libm`.
template <typename Array, typename Exact, typename Libm>
void Check(const std::vector<double>& xs, Array array, Exact exact, Libm libm, Sweep* sweep) {
  std::vector<double> out(xs.size());
  array(xs.data(), out.data(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = libm(xs[i]);
    if (!std::isfinite(want) || !std::isfinite(out[i])) {
      // inf, NaN: as libm's, bit for bit (NaN: any NaN).
      const bool same = (std::isnan(want) && std::isnan(out[i])) || want == out[i];
      if (!same) {
        ++sweep->mismatched_specials;
        ADD_FAILURE() << "x=" << xs[i] << " got " << out[i] << " libm " << want;
      }
      continue;
    }
    ++sweep->checked;
    if (out[i] == want) {
      ++sweep->same_as_libm;
      continue;
    }
    const double err = UlpError(out[i], exact(static_cast<long double>(xs[i])));
    if (err > sweep->max_ulp) {
      sweep->max_ulp = err;
      sweep->worst_x = xs[i];
    }
  }
}

// The inputs, in blocks of at most 1<<20, handed to `run`.
template <typename Run>
void ForEachBlock(const std::vector<double>& all, Run run) {
  constexpr size_t kBlock = size_t{1} << 20;
  for (size_t at = 0; at < all.size(); at += kBlock) {
    const size_t end = std::min(all.size(), at + kBlock);
    run(std::vector<double>(all.begin() + static_cast<ptrdiff_t>(at),
                            all.begin() + static_cast<ptrdiff_t>(end)));
  }
}

// Every binary32 in [lo_bits, hi_bits) (2^23 for a binade), a stride of
// 1021 over all 2^32 binary32 patterns (4.2 M), and a stride over all 2^64
// binary64 patterns (2.1 M).
std::vector<double> Inputs(uint32_t lo_bits, uint32_t hi_bits) {
  std::vector<double> xs;
  xs.reserve(15u << 20);
  for (uint32_t b = lo_bits; b < hi_bits; ++b) xs.push_back(FromBits32(b));
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 1021) {
    xs.push_back(FromBits32(static_cast<uint32_t>(b)));
  }
  constexpr uint64_t kStride64 = (uint64_t{1} << 43) + 12345;
  for (uint64_t b = 7; b <= UINT64_MAX - kStride64; b += kStride64) xs.push_back(FromBits64(b));
  return xs;
}

TEST(VectorMathTest, ExpIsWithinItsStatedUlpOfTheExactResultEverywhere) {
  // Every float in [0.5, 1).
  const std::vector<double> xs = Inputs(0x3f000000u, 0x3f800000u);
  Sweep sweep;
  ForEachBlock(xs, [&](const std::vector<double>& block) {
    Check(
        block, ExpArray, [](long double x) { return std::exp(x); },
        [](double x) { return std::exp(x); }, &sweep);
  });
  EXPECT_EQ(sweep.mismatched_specials, 0u);
  EXPECT_GT(sweep.checked, size_t{12} << 20);
  EXPECT_LE(sweep.max_ulp, kExpMaxUlp) << "at x=" << sweep.worst_x;
  std::printf("exp: %zu finite inputs, %zu as libm's, max error %.3f ulp at x=%.17g\n",
              sweep.checked, sweep.same_as_libm, sweep.max_ulp, sweep.worst_x);
}

TEST(VectorMathTest, Log1pIsWithinItsStatedUlpOfTheExactResultEverywhere) {
  // Every float in [1, 2): one whole binade of the mantissa's range.
  std::vector<double> all = Inputs(0x3f800000u, 0x40000000u);
  std::vector<double> xs;  // The domain: x >= 0 or NaN.
  xs.reserve(all.size());
  for (double x : all) {
    if (!(x < 0)) xs.push_back(x);
  }
  Sweep sweep;
  ForEachBlock(xs, [&](const std::vector<double>& block) {
    Check(
        block, Log1pNonNegativeArray, [](long double x) { return std::log1p(x); },
        [](double x) { return std::log1p(x); }, &sweep);
  });
  EXPECT_EQ(sweep.mismatched_specials, 0u);
  EXPECT_GT(sweep.checked, size_t{10} << 20);
  EXPECT_LE(sweep.max_ulp, kLog1pMaxUlp) << "at x=" << sweep.worst_x;
  std::printf("log1p: %zu finite inputs, %zu as libm's, max error %.3f ulp at x=%.17g\n",
              sweep.checked, sweep.same_as_libm, sweep.max_ulp, sweep.worst_x);
}

TEST(VectorMathTest, SpecialValuesFollowLibm) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> x = {-inf, inf, nan, -0.0, 0.0, 709.78, 709.79, -745.2, -745.1, 1e308};
  std::vector<double> out(x.size());
  ExpArray(x.data(), out.data(), x.size());
  EXPECT_EQ(out[0], 0.0);
  EXPECT_EQ(out[1], inf);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], 1.0);
  EXPECT_EQ(out[4], 1.0);
  EXPECT_TRUE(std::isfinite(out[5]));
  EXPECT_EQ(out[6], inf);
  EXPECT_EQ(out[7], 0.0);
  EXPECT_GT(out[8], 0.0);  // The smallest subnormal, as libm's.
  EXPECT_EQ(out[9], inf);
  const std::vector<double> y = {inf, nan, 0.0, -0.0, 1e-320, 1e308};
  std::vector<double> out1(y.size());
  Log1pNonNegativeArray(y.data(), out1.data(), y.size());
  EXPECT_EQ(out1[0], inf);
  EXPECT_TRUE(std::isnan(out1[1]));
  EXPECT_EQ(out1[2], 0.0);
  EXPECT_EQ(out1[3], 0.0);
  EXPECT_EQ(out1[4], 1e-320);
  EXPECT_EQ(out1[5], std::log1p(1e308));
}

TEST(VectorMathTest, OutMayBeIn) {
  std::vector<double> x = {0.0, 1.0, -2.5, 3.75};
  ExpArray(x.data(), x.data(), x.size());
  EXPECT_EQ(x[0], 1.0);
  EXPECT_NEAR(x[1], std::exp(1.0), 1e-15);
  Log1pNonNegativeArray(x.data(), x.data(), x.size());
  EXPECT_NEAR(x[1], std::log1p(std::exp(1.0)), 1e-15);
  EXPECT_NEAR(x[2], std::log1p(std::exp(-2.5)), 1e-15);
}

}  // namespace
}  // namespace rankwire
