#include "logstore/log_number.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

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

namespace {

// The widest path EncodeLogNumbers may take (LimitLogNumberPath).
std::atomic<LogNumberPath> widest_allowed{LogNumberPath::kAvx512};

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics and AVX2 gathers start some results from a
// deliberately uninitialized register (_mm512_undefined_*,
// _mm256_undefined_pd), which -Wuninitialized reports at every inlined use
// (GCC bug 105593); nothing here reads one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// Writes a chunk's `count` slots in order: a vector path's word and length
// for each lane it coded, and the scalar coder's bytes for each lane its
// masks (one per kWidth lanes) gave up on. Shared by both vector paths;
// inlined into each.
template <size_t kWidth, typename Mask>
inline char* WriteSlots(const double* values, size_t count, const uint32_t* words,
                        const uint8_t* lengths, const Mask* other, char* dst) {
  for (size_t i = 0; i < count; i += kWidth) {
    const size_t lanes = count - i < kWidth ? count - i : kWidth;
    const unsigned scalar = other[i / kWidth];
    for (size_t l = i; l < i + lanes; ++l) {
      if (scalar != 0 && ((scalar >> (l - i)) & 1) != 0) {
        dst = EncodeLogNumber(values[l], dst);
      } else {
        coding::EncodeFixed32(dst, words[l]);
        dst += lengths[l];
      }
    }
  }
  return dst;
}

// 10^k for k in [-7, 24], as ScaleBy10Fast multiplies by it for k <= 22
// (kInvPow10 below 0, kPow10 from 0); what the entries past 22 give is
// never used (those lanes take the scalar path, which multiplies twice).
constexpr double kScaleTable[32] = {
    1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,
    1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e22, 1e22};

// floor(n / 10^j) = (n * kDivMagic[j]) >> 40 for every n < 2^20: the
// magic is floor(2^40 / 10^j) + 1, whose error n / 2^40 < 2^-20 never
// reaches the next integer (the fraction of n / 10^j is at most
// 1 - 10^-j, and 10^-j > 2^-20 for j <= 5).
constexpr uint64_t kDivMagic[6] = {0, 109951162778, 10995116278, 1099511628, 109951163, 10995117};
constexpr uint64_t kPow10Int[6] = {1, 10, 100, 1000, 10000, 100000};

// table[index] for eight indexes in [0, 32), from a 32-entry table held
// in four registers (two permutes and a blend: a gather's loads took a
// quarter of the coding).
struct Table32 {
  __m512d t0, t1, t2, t3;
};
__attribute__((target("avx512f,avx512dq"), always_inline)) inline Table32 LoadTable32(
    const double* table) {
  return Table32{_mm512_loadu_pd(table), _mm512_loadu_pd(table + 8), _mm512_loadu_pd(table + 16),
                 _mm512_loadu_pd(table + 24)};
}
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __m512d Lookup32(const Table32& t,
                                                                                   __m512i index) {
  const __m512d low = _mm512_permutex2var_pd(t.t0, index, t.t1);
  const __m512d high = _mm512_permutex2var_pd(t.t2, index, t.t3);
  return _mm512_mask_blend_pd(_mm512_test_epi64_mask(index, _mm512_set1_epi64(16)), low, high);
}

// The varints of eight slot codes u (< 2^26) as PutSlotCode writes them:
// 4-byte words and lengths of 1 to 4.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline void StoreSlotWords(
    __m512i u, uint32_t* words, uint8_t* lengths) {
  const __m512i one = _mm512_set1_epi64(1);
  __m512i length = one;
  length = _mm512_mask_add_epi64(length, _mm512_cmpge_epu64_mask(u, _mm512_set1_epi64(1 << 7)),
                                 length, one);
  length = _mm512_mask_add_epi64(length, _mm512_cmpge_epu64_mask(u, _mm512_set1_epi64(1 << 14)),
                                 length, one);
  length = _mm512_mask_add_epi64(length, _mm512_cmpge_epu64_mask(u, _mm512_set1_epi64(1 << 21)),
                                 length, one);
  const __m512i groups = _mm512_or_si512(
      _mm512_or_si512(_mm512_and_si512(u, _mm512_set1_epi64(0x7f)),
                      _mm512_and_si512(_mm512_slli_epi64(u, 1), _mm512_set1_epi64(0x7f00))),
      _mm512_or_si512(_mm512_and_si512(_mm512_slli_epi64(u, 2), _mm512_set1_epi64(0x7f0000)),
                      _mm512_and_si512(_mm512_slli_epi64(u, 3), _mm512_set1_epi64(0x7f000000))));
  const __m512i more = _mm512_and_si512(
      _mm512_set1_epi64(0x808080),
      _mm512_sub_epi64(_mm512_sllv_epi64(one, _mm512_slli_epi64(_mm512_sub_epi64(length, one), 3)),
                       one));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(words),
                      _mm512_cvtepi64_epi32(_mm512_or_si512(groups, more)));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(lengths), _mm512_cvtepi64_epi8(length));
}

// The slots of eight values (lanes past `count` are zero) as 4-byte words
// and lengths, and the mask of lanes the vector path does not code: those
// the scalar path takes (raw doubles, the exponent fixups, values near a
// rounding tie). The steps are EncodeLogNumber's, lane by lane, with the
// same operations in the same order, so a lane it codes gets the same
// bytes.
__attribute__((target("avx512f,avx512dq"), always_inline)) inline __mmask8 CodeEight(
    const double* values, size_t count, const Table32& next_powers, const Table32& scales,
    uint32_t* words, uint8_t* lengths) {
  const __mmask8 live = static_cast<__mmask8>((1u << count) - 1);
  const __m512d x = _mm512_maskz_loadu_pd(live, values);
  const __m512i bits = _mm512_castpd_si512(x);
  const __m512d abs_mask = _mm512_castsi512_pd(_mm512_set1_epi64(0x7fffffffffffffffLL));
  const __m512d a = _mm512_and_pd(x, abs_mask);
  const __m512i negative = _mm512_srli_epi64(bits, 63);
  const __mmask8 zero = _mm512_cmp_pd_mask(a, _mm512_setzero_pd(), _CMP_EQ_OQ);
  // Outside [1e-18, 1e12) (and inf, nan): raw, the scalar path's.
  __mmask8 other =
      static_cast<__mmask8>(~(_mm512_cmp_pd_mask(a, _mm512_set1_pd(1e-18), _CMP_GE_OQ) &
                              _mm512_cmp_pd_mask(a, _mm512_set1_pd(1e12), _CMP_LT_OQ)));
  // floor(log10(a)): the binary exponent times log10(2), then one compare.
  const __m512i e2 =
      _mm512_sub_epi64(_mm512_and_si512(_mm512_srli_epi64(bits, 52), _mm512_set1_epi64(0x7ff)),
                       _mm512_set1_epi64(1023));
  __m512i e = _mm512_srai_epi64(_mm512_mullo_epi64(e2, _mm512_set1_epi64(78913)), 18);
  // Keeps the table indexes in range on lanes that are not in range anyway.
  e = _mm512_min_epi64(_mm512_max_epi64(e, _mm512_set1_epi64(-19)), _mm512_set1_epi64(11));
  const __m512d next_power = Lookup32(next_powers, _mm512_add_epi64(e, _mm512_set1_epi64(19)));
  e = _mm512_mask_add_epi64(e, _mm512_cmp_pd_mask(a, next_power, _CMP_GE_OQ), e,
                            _mm512_set1_epi64(1));
  // r = a * 10^(5 - e); 5 - e in [-7, 24], past 22 the scalar path's.
  const __m512i k = _mm512_sub_epi64(_mm512_set1_epi64(5), e);
  other |= _mm512_cmpgt_epi64_mask(k, _mm512_set1_epi64(22));
  const __m512d r = _mm512_mul_pd(a, Lookup32(scales, _mm512_add_epi64(k, _mm512_set1_epi64(7))));
  other |= _mm512_cmp_pd_mask(_mm512_and_pd(_mm512_sub_pd(r, _mm512_set1_pd(999999.5)), abs_mask),
                              _mm512_set1_pd(1e-6), _CMP_LT_OQ);
  other |= _mm512_cmp_pd_mask(r, _mm512_set1_pd(999999.5), _CMP_GE_OQ);
  other |= _mm512_cmp_pd_mask(r, _mm512_set1_pd(99999.5), _CMP_LT_OQ);
  const __m512i whole = _mm512_cvttpd_epi64(r);
  const __m512d frac = _mm512_sub_pd(r, _mm512_cvtepi64_pd(whole));
  other |= _mm512_cmp_pd_mask(_mm512_and_pd(_mm512_sub_pd(frac, _mm512_set1_pd(0.5)), abs_mask),
                              _mm512_set1_pd(1e-7), _CMP_LT_OQ);
  // r < 999999.5 here, so n stays below 10^6 (the scalar path rounds up to
  // 10^6 for the lanes from 999999.5 on).
  const __m512i n =
      _mm512_mask_add_epi64(whole, _mm512_cmp_pd_mask(frac, _mm512_set1_pd(0.5), _CMP_GT_OQ), whole,
                            _mm512_set1_epi64(1));
  // Trailing zero digits off: n / 10^j wherever 10^j divides n (those
  // lanes nest, so the last j that divides wins).
  __m512i digits = n;
  __m512i zeros = _mm512_setzero_si512();
  for (int j = 1; j <= 5; ++j) {
    const __m512i q = _mm512_srli_epi64(
        _mm512_mullo_epi64(n, _mm512_set1_epi64(static_cast<int64_t>(kDivMagic[j]))), 40);
    const __mmask8 divides = _mm512_cmpeq_epi64_mask(
        _mm512_mullo_epi64(q, _mm512_set1_epi64(static_cast<int64_t>(kPow10Int[j]))), n);
    digits = _mm512_mask_mov_epi64(digits, divides, q);
    zeros = _mm512_mask_add_epi64(zeros, divides, zeros, _mm512_set1_epi64(1));
  }
  // code = scale + kScaleBias with scale = e - 5 + zeros; past 30: raw.
  const __m512i code =
      _mm512_add_epi64(_mm512_add_epi64(e, zeros), _mm512_set1_epi64(kScaleBias - 5));
  other |= _mm512_cmpgt_epu64_mask(code, _mm512_set1_epi64(30));
  __m512i u = _mm512_or_si512(
      _mm512_or_si512(_mm512_slli_epi64(digits, 6), _mm512_slli_epi64(negative, 5)), code);
  // Zero (-0 keeps its sign): the one-byte special code.
  u = _mm512_mask_mov_epi64(u, zero,
                            _mm512_or_si512(_mm512_slli_epi64(negative, 5),
                                            _mm512_set1_epi64(static_cast<int64_t>(kSpecialCode))));
  other &= static_cast<__mmask8>(~zero);
  StoreSlotWords(u, words, lengths);
  return other & live;
}

// Up to 64 values a call (the builder holds no more): all of them coded
// first, so the eight-lane steps of one group overlap the next group's,
// then the bytes written in order.
__attribute__((target("avx512f,avx512dq"))) char* EncodeLogNumbersAvx512(const double* values,
                                                                         size_t count, char* dst) {
  constexpr size_t kChunk = 64;
  uint32_t words[kChunk];
  uint8_t lengths[kChunk];
  __mmask8 other[kChunk / 8];
  const Table32 next_powers = LoadTable32(kPow10From18);
  const Table32 scales = LoadTable32(kScaleTable);
  while (count > 0) {
    const size_t chunk = count < kChunk ? count : kChunk;
    for (size_t i = 0; i < chunk; i += 8) {
      other[i / 8] = CodeEight(values + i, chunk - i < 8 ? chunk - i : 8, next_powers, scales,
                               words + i, lengths + i);
    }
    dst = WriteSlots<8>(values, chunk, words, lengths, other, dst);
    values += chunk;
    count -= chunk;
  }
  return dst;
}

// AVX2 (4 lanes): the same steps as CodeEight, for CPUs without AVX-512
// (AMD before Zen 4, many cloud hosts). AVX2 has no 64-bit multiply, no
// 64-bit arithmetic shift and no double <-> int64 conversion, so the
// integer steps run on 32-bit lanes (every integer here fits: exponents,
// n < 10^6, u < 2^26), the tables are gathered, and the trailing zero
// digits come off in doubles: round(n * 10^-j) * 10^j == n exactly when
// 10^j divides n (n * 10^-j, with 10^-j rounded, is then within 1e-9 of
// the whole quotient, so rounding to nearest gives it; q * 10^j is an
// exact double below 2^53, and when 10^j does not divide n no whole q
// gives n). The target is "avx2" alone, not "fma": a fused multiply-add
// would round differently from the scalar path.

// The low 32 bits of each 64-bit lane: a pd compare's all-ones lanes stay
// all ones, small integers keep their value.
__attribute__((target("avx2"), always_inline)) inline __m128i Narrow(__m256i v) {
  return _mm256_castsi256_si128(
      _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)));
}
__attribute__((target("avx2"), always_inline)) inline __m128i NarrowMask(__m256d mask) {
  return Narrow(_mm256_castpd_si256(mask));
}

// 10^-j and 10^j for j in [0, 5], as doubles (10^-j rounded).
constexpr double kInvPow10Small[6] = {1e0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5};
constexpr double kPow10Small[6] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5};

// n (in 1..999999) without its trailing zero digits, and their count in
// `zeros`, in doubles as above (the lanes nest: the last j that divides
// wins).
__attribute__((target("avx2"), always_inline)) inline __m128i StripZerosAvx2(__m128i n,
                                                                             __m128i* zeros) {
  const __m256d nd = _mm256_cvtepi32_pd(n);
  __m256d digits = nd;
  __m128i count = _mm_setzero_si128();
  for (int j = 1; j <= 5; ++j) {
    const __m256d q = _mm256_round_pd(_mm256_mul_pd(nd, _mm256_set1_pd(kInvPow10Small[j])),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256d divides =
        _mm256_cmp_pd(_mm256_mul_pd(q, _mm256_set1_pd(kPow10Small[j])), nd, _CMP_EQ_OQ);
    digits = _mm256_blendv_pd(digits, q, divides);
    count = _mm_sub_epi32(count, NarrowMask(divides));
  }
  *zeros = count;
  return _mm256_cvttpd_epi32(digits);
}

// The varints of four slot codes u (< 2^26) as PutSlotCode writes them:
// 4-byte words and lengths of 1 to 4 (signed compares: u < 2^31).
__attribute__((target("avx2"), always_inline)) inline void StoreSlotWordsAvx2(__m128i u,
                                                                              uint32_t* words,
                                                                              uint8_t* lengths) {
  const __m128i length = _mm_sub_epi32(
      _mm_sub_epi32(_mm_sub_epi32(_mm_set1_epi32(1), _mm_cmpgt_epi32(u, _mm_set1_epi32(127))),
                    _mm_cmpgt_epi32(u, _mm_set1_epi32((1 << 14) - 1))),
      _mm_cmpgt_epi32(u, _mm_set1_epi32((1 << 21) - 1)));
  const __m128i groups =
      _mm_or_si128(_mm_or_si128(_mm_and_si128(u, _mm_set1_epi32(0x7f)),
                                _mm_and_si128(_mm_slli_epi32(u, 1), _mm_set1_epi32(0x7f00))),
                   _mm_or_si128(_mm_and_si128(_mm_slli_epi32(u, 2), _mm_set1_epi32(0x7f0000)),
                                _mm_and_si128(_mm_slli_epi32(u, 3), _mm_set1_epi32(0x7f000000))));
  const __m128i more = _mm_and_si128(
      _mm_set1_epi32(0x808080),
      _mm_sub_epi32(_mm_sllv_epi32(_mm_set1_epi32(1),
                                   _mm_slli_epi32(_mm_sub_epi32(length, _mm_set1_epi32(1)), 3)),
                    _mm_set1_epi32(1)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(words), _mm_or_si128(groups, more));
  const uint32_t packed = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_shuffle_epi8(
      length, _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1))));
  std::memcpy(lengths, &packed, 4);
}

// The slots of four values (lanes past `count` are zero) as 4-byte words
// and lengths, and the mask (4 bits) of lanes the scalar path takes.
__attribute__((target("avx2"), always_inline)) inline unsigned CodeFour(const double* values,
                                                                        size_t count,
                                                                        uint32_t* words,
                                                                        uint8_t* lengths) {
  alignas(32) double padded[4] = {0, 0, 0, 0};
  __m256d x;
  if (count >= 4) {
    x = _mm256_loadu_pd(values);
  } else {
    std::memcpy(padded, values, count * sizeof(double));
    x = _mm256_load_pd(padded);
  }
  const unsigned live = (1u << (count < 4 ? count : 4)) - 1;
  const __m256i bits = _mm256_castpd_si256(x);
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
  const __m256d a = _mm256_and_pd(x, abs_mask);
  const __m128i negative = Narrow(_mm256_srli_epi64(bits, 63));
  const __m256d zero_lanes = _mm256_cmp_pd(a, _mm256_setzero_pd(), _CMP_EQ_OQ);
  const unsigned zero = static_cast<unsigned>(_mm256_movemask_pd(zero_lanes));
  // Outside [1e-18, 1e12) (and inf, nan): raw, the scalar path's.
  unsigned other = ~static_cast<unsigned>(_mm256_movemask_pd(
                       _mm256_and_pd(_mm256_cmp_pd(a, _mm256_set1_pd(1e-18), _CMP_GE_OQ),
                                     _mm256_cmp_pd(a, _mm256_set1_pd(1e12), _CMP_LT_OQ)))) &
                   0xfu;
  // floor(log10(a)): the binary exponent times log10(2), then one compare.
  const __m128i e2 =
      _mm_sub_epi32(_mm_and_si128(Narrow(_mm256_srli_epi64(bits, 52)), _mm_set1_epi32(0x7ff)),
                    _mm_set1_epi32(1023));
  __m128i e = _mm_srai_epi32(_mm_mullo_epi32(e2, _mm_set1_epi32(78913)), 18);
  // The clamp keeps both gathers inside their tables (indexes 0..30 and
  // 0..31) for zero, subnormal, inf and nan lanes, whose estimate is far
  // out; those lanes are not coded here anyway. Without it a gather reads
  // out of bounds, which no sanitizer reports.
  e = _mm_min_epi32(_mm_max_epi32(e, _mm_set1_epi32(-19)), _mm_set1_epi32(11));
  const __m256d next_power =
      _mm256_i32gather_pd(kPow10From18, _mm_add_epi32(e, _mm_set1_epi32(19)), 8);
  e = _mm_sub_epi32(e, NarrowMask(_mm256_cmp_pd(a, next_power, _CMP_GE_OQ)));
  // r = a * 10^(5 - e); 5 - e in [-7, 24], past 22 the scalar path's.
  const __m128i k = _mm_sub_epi32(_mm_set1_epi32(5), e);
  other |= static_cast<unsigned>(
      _mm_movemask_ps(_mm_castsi128_ps(_mm_cmpgt_epi32(k, _mm_set1_epi32(22)))));
  const __m256d r =
      _mm256_mul_pd(a, _mm256_i32gather_pd(kScaleTable, _mm_add_epi32(k, _mm_set1_epi32(7)), 8));
  __m256d out = _mm256_cmp_pd(_mm256_and_pd(_mm256_sub_pd(r, _mm256_set1_pd(999999.5)), abs_mask),
                              _mm256_set1_pd(1e-6), _CMP_LT_OQ);
  out = _mm256_or_pd(out, _mm256_cmp_pd(r, _mm256_set1_pd(999999.5), _CMP_GE_OQ));
  out = _mm256_or_pd(out, _mm256_cmp_pd(r, _mm256_set1_pd(99999.5), _CMP_LT_OQ));
  // Lanes out of range convert to INT_MIN; they are the scalar path's.
  const __m128i whole = _mm256_cvttpd_epi32(r);
  const __m256d frac = _mm256_sub_pd(r, _mm256_cvtepi32_pd(whole));
  out = _mm256_or_pd(
      out, _mm256_cmp_pd(_mm256_and_pd(_mm256_sub_pd(frac, _mm256_set1_pd(0.5)), abs_mask),
                         _mm256_set1_pd(1e-7), _CMP_LT_OQ));
  other |= static_cast<unsigned>(_mm256_movemask_pd(out));
  // r < 999999.5 here, so n stays below 10^6.
  const __m128i n =
      _mm_sub_epi32(whole, NarrowMask(_mm256_cmp_pd(frac, _mm256_set1_pd(0.5), _CMP_GT_OQ)));
  __m128i zeros;
  const __m128i digits = StripZerosAvx2(n, &zeros);
  // code = scale + kScaleBias with scale = e - 5 + zeros; outside 0..30: raw.
  const __m128i code = _mm_add_epi32(_mm_add_epi32(e, zeros), _mm_set1_epi32(kScaleBias - 5));
  other |= static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_or_si128(
      _mm_cmpgt_epi32(code, _mm_set1_epi32(30)), _mm_cmplt_epi32(code, _mm_setzero_si128())))));
  __m128i u =
      _mm_or_si128(_mm_or_si128(_mm_slli_epi32(digits, 6), _mm_slli_epi32(negative, 5)), code);
  // Zero (-0 keeps its sign): the one-byte special code.
  u = _mm_blendv_epi8(
      u, _mm_or_si128(_mm_slli_epi32(negative, 5), _mm_set1_epi32(static_cast<int>(kSpecialCode))),
      NarrowMask(zero_lanes));
  other &= ~zero;
  StoreSlotWordsAvx2(u, words, lengths);
  return other & live;
}

// As EncodeLogNumbersAvx512, four lanes at a time.
__attribute__((target("avx2"))) char* EncodeLogNumbersAvx2(const double* values, size_t count,
                                                           char* dst) {
  constexpr size_t kChunk = 64;
  uint32_t words[kChunk];
  uint8_t lengths[kChunk];
  unsigned other[kChunk / 4];
  while (count > 0) {
    const size_t chunk = count < kChunk ? count : kChunk;
    for (size_t i = 0; i < chunk; i += 4) {
      other[i / 4] = CodeFour(values + i, chunk - i < 4 ? chunk - i : 4, words + i, lengths + i);
    }
    dst = WriteSlots<4>(values, chunk, words, lengths, other, dst);
    values += chunk;
    count -= chunk;
  }
  return dst;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif  // defined(__x86_64__)

}  // namespace

void LimitLogNumberPath(LogNumberPath widest) {
  widest_allowed.store(widest, std::memory_order_relaxed);
}

LogNumberPath ActiveLogNumberPath() {
#if defined(__x86_64__)
  static const LogNumberPath supported =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
          ? LogNumberPath::kAvx512
      : __builtin_cpu_supports("avx2") ? LogNumberPath::kAvx2
                                       : LogNumberPath::kScalar;
  const LogNumberPath widest = widest_allowed.load(std::memory_order_relaxed);
  return static_cast<int>(supported) < static_cast<int>(widest) ? supported : widest;
#else
  return LogNumberPath::kScalar;
#endif
}

absl::StatusOr<LogNumberPath> ParseLogNumberPath(absl::string_view text) {
  if (text == "auto" || text == "avx512") return LogNumberPath::kAvx512;
  if (text == "avx2") return LogNumberPath::kAvx2;
  if (text == "scalar") return LogNumberPath::kScalar;
  return absl::InvalidArgumentError(
      absl::StrCat("log number path \"", text, "\": expected auto, avx512, avx2 or scalar"));
}

const char* LogNumberPathName(LogNumberPath path) {
  switch (path) {
    case LogNumberPath::kAvx512:
      return "avx512";
    case LogNumberPath::kAvx2:
      return "avx2";
    case LogNumberPath::kScalar:
      break;
  }
  return "scalar";
}

char* EncodeLogNumbers(const double* values, size_t count, char* dst) {
#if defined(__x86_64__)
  switch (ActiveLogNumberPath()) {
    case LogNumberPath::kAvx512:
      return EncodeLogNumbersAvx512(values, count, dst);
    case LogNumberPath::kAvx2:
      return EncodeLogNumbersAvx2(values, count, dst);
    case LogNumberPath::kScalar:
      break;
  }
#endif
  for (size_t i = 0; i < count; ++i) dst = EncodeLogNumber(values[i], dst);
  return dst;
}

absl::StatusOr<double> ReadLogNumber(coding::Reader& in) {
  const uint64_t u = in.Varint64("number");
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
