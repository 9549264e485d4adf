#include "logstore/format/log_number.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "logstore/format/log_reading.h"

namespace rankwire::logstore {
namespace {

// Number slots: one varint u = N << 6 | sign << 5 | code.
//   code 0..30: the value is (sign ? -1 : 1) * N * 10^(code - kScaleBias),
//               N in 1..999999 with no trailing zero digit;
//   code 31:    N == 0: zero (sign: -0); N == 1: eight raw bytes follow
//               (IEEE-754 double, little-endian) for what the decimal form
//               cannot say exactly (inf, nan, out-of-range scale, a value
//               within 1e-7 of a rounding tie).
constexpr int kScaleBias = 24;
constexpr uint64_t kSpecialCode = 31;

// 10^k for k in [0, 22]: exact doubles.
constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                             1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// 10^-k for k in [0, 22], rounded: multiplying by these is faster than
// dividing by kPow10 and off by at most an ulp more.
constexpr double kInvPow10[] = {1e-0,  1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,
                                1e-8,  1e-9,  1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15,
                                1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21, 1e-22};

// a * 10^k to within ~3 ulps, for the encoder (the tie margin below is
// ~10^6 times wider). k in [-22, 23].
double ScaleBy10Fast(double a, int k) {
  if (k >= 0) return k <= 22 ? a * kPow10[k] : a * kPow10[22] * kPow10[k - 22];
  return a * kInvPow10[-k];
}

// a * 10^k, within a few ulps (one or two roundings).
double ScaleBy10(double a, int k) {
  if (k >= 0) return k <= 22 ? a * kPow10[k] : a * kPow10[22] * kPow10[k - 22];
  return -k <= 22 ? a / kPow10[-k] : a / kPow10[22] / kPow10[-k - 22];
}

char* EncodeRawDouble(bool negative, double value, char* dst) {
  dst = coding::EncodeVarint64(dst, uint64_t{1} << 6 | uint64_t{negative} << 5 | kSpecialCode);
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  coding::EncodeFixed64(dst, bits);
  return dst + 8;
}

// One varint of at most 4 bytes (u < 2^28), written as one 4-byte store.
inline char* PutSlotCode(uint32_t u, char* dst) {
  const int length = 1 + (u >= (1u << 7)) + (u >= (1u << 14)) + (u >= (1u << 21));
  const uint32_t groups =
      (u & 0x7f) | (u << 1 & 0x7f00) | (u << 2 & 0x7f0000) | (u << 3 & 0x7f000000);
  const uint32_t more = 0x808080u & ((1u << (8 * (length - 1))) - 1);  // Continuation bits.
  coding::EncodeFixed32(dst, groups | more);
  return dst + length;
}

// n * 10^scale, n in 1..999999 with its trailing zero digits not yet
// removed, as a number slot (or the raw form when the scale is out of the
// code's range).
char* EncodeDecimal(bool negative, double value, uint32_t n, int scale, char* dst) {
  while (n % 10 == 0) {
    n /= 10;
    ++scale;
  }
  const int code = scale + kScaleBias;
  if (code < 0 || code >= static_cast<int>(kSpecialCode)) {
    return EncodeRawDouble(negative, value, dst);
  }
  // u < 2^26 (n < 2^20): a varint of 1 to 4 bytes, written as one 4-byte
  // store and a length, with no branch on the length (it varies from
  // number to number, and a loop over it was mispredicted that often).
  return PutSlotCode(n << 6 | uint32_t{negative} << 5 | static_cast<uint32_t>(code), dst);
}

// 10^k for k in [-18, 12] (the encoder's decimal range): exact for k >= 0,
// the nearest double (above or below 10^k) for k < 0. Only compared with,
// to pick the decimal exponent; a value misjudged by the rounding (the
// table entry itself) is caught by the scaled value's range checks below.
// A 32nd entry (never looked up) fills the vector path's four registers.
constexpr double kPow10From18[32] = {1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11,
                                     1e-10, 1e-9,  1e-8,  1e-7,  1e-6,  1e-5,  1e-4,  1e-3,
                                     1e-2,  1e-1,  1e0,   1e1,   1e2,   1e3,   1e4,   1e5,
                                     1e6,   1e7,   1e8,   1e9,   1e10,  1e11,  1e12,  1e12};

}  // namespace

char* EncodeLogNumber(double value, char* dst) {
  const bool negative = std::signbit(value);
  const double a = std::fabs(value);
  if (a == 0) {
    return coding::EncodeVarint64(dst, uint64_t{negative} << 5 | kSpecialCode);
  }
  // Beyond these the decimal exponent range or the exact powers of ten run
  // out; the raw form renders the same through SixDigits.
  if (!std::isfinite(a) || a < 1e-18 || a >= 1e12) {
    return EncodeRawDouble(negative, value, dst);
  }
  // Whole numbers below 10^6 (counts, days, flags: many of a line's
  // features) are their own six digits: no scaling, no rounding.
  if (a < 1e6) {
    const uint32_t whole = static_cast<uint32_t>(a);
    if (static_cast<double>(whole) == a) return EncodeDecimal(negative, value, whole, 0, dst);
  }
  // floor(log10(a)): estimated from the binary exponent (a is normal here:
  // a >= 1e-18), which is right or one short, and corrected by one compare
  // with the next power of ten (no branch: the estimate is short for ~30 %
  // of values, a branch there was mispredicted that often).
  uint64_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  const int e2 = static_cast<int>((bits >> 52) & 0x7ff) - 1023;  // a in [2^e2, 2^(e2+1))
  int e = (e2 * 78913) >> 18;  // floor(e2 * log10(2)); >> floors negatives (GCC, Clang).
  e += a >= kPow10From18[e + 1 + 18] ? 1 : 0;  // e in [-19, 11]: e + 1 in [-18, 12].
  double r = ScaleBy10Fast(a, 5 - e);
  // At 999999.5 rounding decides the exponent too (999999 or 1e+06).
  if (std::fabs(r - 999999.5) < 1e-6) {
    return EncodeRawDouble(negative, value, dst);
  }
  // Safety nets for a value misjudged above (the table's negative powers
  // are rounded) and for rounding up to 10^6.
  if (r >= 999999.5) r = ScaleBy10Fast(a, 5 - ++e);
  if (r < 99999.5) r = ScaleBy10Fast(a, 5 - --e);
  // r is |value| * 10^(5-e) to within ~1e-10 (a few ulps of a number below
  // 1e6). SixDigits rounds the exact value to nearest; near a tie the two
  // could disagree, so give the reader the double itself.
  const int64_t whole = static_cast<int64_t>(r);  // r is in [99999.5, 999999.5).
  const double frac = r - static_cast<double>(whole);
  if (std::fabs(frac - 0.5) < 1e-7) {
    return EncodeRawDouble(negative, value, dst);
  }
  // n < 2^32: the divisions by constants are 32-bit multiplies.
  uint32_t n = static_cast<uint32_t>(whole) + (frac > 0.5 ? 1 : 0);
  int scale = e - 5;
  if (n == 1000000) {
    n = 100000;
    ++scale;
  }
  return EncodeDecimal(negative, value, n, scale, dst);
}

void AppendLogNumber(double value, std::string* out) {
  char buf[kMaxLogNumberBytes];
  out->append(buf, static_cast<size_t>(EncodeLogNumber(value, buf) - buf));
}

absl::StatusOr<double> ReadLogNumber(coding::Reader& in) {
  const uint64_t u = LogVarint(in, "number");
  if (!in.ok()) return absl::DataLossError(in.status().message());
  const uint64_t code = u & 31;
  const bool negative = (u >> 5) & 1;
  const uint64_t n = u >> 6;
  double v = 0;
  if (code != kSpecialCode) {
    // The writer strips trailing zero digits (78.7 is 787e-1, never
    // 7870e-2): one number, one coding.
    if (n == 0 || n > 999999) {
      return absl::DataLossError("log record: number digits out of range");
    }
    if (n % 10 == 0) {
      return absl::DataLossError(
          absl::StrCat("log record: number digits ", n, " end in a zero (the writer strips them)"));
    }
    v = ScaleBy10(static_cast<double>(n), static_cast<int>(code) - kScaleBias);
  } else if (n == 1) {
    // A raw binary64 carries its sign; the flag repeats its sign bit.
    v = in.Double("raw number");
    if (!in.ok()) return absl::DataLossError(in.status().message());
    if (std::signbit(v) != negative) {
      return absl::DataLossError("log record: a raw number whose sign flag is not its sign bit");
    }
    return v;
  } else if (n != 0) {
    return absl::DataLossError("log record: unknown special number");
  }
  return negative ? -v : v;
}

}  // namespace rankwire::logstore
