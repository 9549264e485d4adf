#include "logstore/log_record.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "codec/coding.h"

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
constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                             1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

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

void AppendVarint(uint64_t v, std::string* out) {
  char buf[coding::kMaxVarint64Length];
  char* end = coding::EncodeVarint64(buf, v);
  out->append(buf, static_cast<size_t>(end - buf));
}

char* EncodeRawDouble(bool negative, double value, char* dst) {
  dst = coding::EncodeVarint64(dst, uint64_t{1} << 6 | uint64_t{negative} << 5 | kSpecialCode);
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  coding::EncodeFixed64(dst, bits);
  return dst + 8;
}

void AppendLength(absl::string_view s, std::string* out) {
  AppendVarint(s.size(), out);
  out->append(s.data(), s.size());
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
  const uint32_t u = n << 6 | uint32_t{negative} << 5 | static_cast<uint32_t>(code);
  const int length = (38 - __builtin_clz(u | 1)) / 7;  // ceil(bits / 7)
  const uint32_t groups = (u & 0x7f) | (u << 1 & 0x7f00) | (u << 2 & 0x7f0000) | (u << 3 & 0x7f000000);
  const uint32_t more = 0x808080u >> (8 * (4 - length));  // Continuation bits.
  coding::EncodeFixed32(dst, groups | more);
  return dst + length;
}

// 10^k for k in [-18, 12] (the encoder's decimal range): exact for k >= 0,
// the nearest double (above or below 10^k) for k < 0. Only compared with,
// to pick the decimal exponent; a value misjudged by the rounding (the
// table entry itself) is caught by the scaled value's range checks below.
constexpr double kPow10From18[] = {
    1e-18, 1e-17, 1e-16, 1e-15, 1e-14, 1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8,
    1e-7,  1e-6,  1e-5,  1e-4,  1e-3,  1e-2,  1e-1,  1e0,   1e1,   1e2,  1e3,
    1e4,   1e5,   1e6,   1e7,   1e8,   1e9,   1e10,  1e11,  1e12};

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

void LogRecordBuilder::Grow(size_t bytes) {
  capacity_ = std::max(2 * capacity_, size_ + bytes + 256);
  auto grown = std::make_unique<char[]>(capacity_);
  if (size_ > 0) std::memcpy(grown.get(), buffer_.get(), size_);
  buffer_ = std::move(grown);
}

void LogRecordBuilder::PutVarint(uint64_t v) {
  char* end = coding::EncodeVarint64(Reserve(coding::kMaxVarint64Length), v);
  size_ = static_cast<size_t>(end - buffer_.get());
}

void LogRecordBuilder::CaptureSlot(SlotKind kind) {
  kinds_.push_back(kind);
  pieces_.emplace_back();
}

void LogRecordBuilder::Int(int64_t value) {
  Slot(SlotKind::kInt);
  PutVarint(coding::ZigZagEncode64(value));
}

void LogRecordBuilder::String(absl::string_view text) {
  Slot(SlotKind::kString);
  // Looked up by view: no allocation for a string seen before.
  auto it = string_index_.find(text);
  if (it == string_index_.end()) {
    it = string_index_.emplace(std::string(text), static_cast<uint32_t>(strings_.size())).first;
    strings_.emplace_back(text);
  }
  PutVarint(it->second);
}

std::string LogRecordBuilder::FinishRecord() {
  if (!capturing_ && slot_ != kinds_.size()) consistent_ = false;
  capturing_ = false;
  slot_ = 0;
  std::string value(size_ + 1, kRecordTag);
  if (size_ > 0) std::memcpy(value.data() + 1, buffer_.get(), size_);
  size_ = 0;
  return value;
}

std::string LogRecordBuilder::Layout() const {
  std::string out;
  out.push_back(kLayoutTag);
  out.push_back(static_cast<char>(kLayoutVersion));
  AppendVarint(kinds_.size(), &out);
  for (size_t i = 0; i < kinds_.size(); ++i) {
    AppendLength(pieces_[i], &out);
    out.push_back(static_cast<char>(kinds_[i]));
  }
  AppendLength(pieces_.back(), &out);
  AppendVarint(strings_.size(), &out);
  for (const std::string& s : strings_) AppendLength(s, &out);
  return out;
}

absl::StatusOr<LogLayout> LogLayout::Parse(absl::string_view value) {
  coding::Reader in(value, "log layout");
  if (in.Byte("tag") != static_cast<uint8_t>(kLayoutTag)) {
    return absl::DataLossError("log layout: value does not start with 'L'");
  }
  const uint8_t version = in.Byte("version");
  if (in.ok() && version != kLayoutVersion) {
    return absl::DataLossError(
        absl::StrCat("log layout: version ", version, " (this reader knows ", kLayoutVersion, ")"));
  }
  LogLayout layout;
  // Each slot takes at least two bytes (an empty piece's length, a kind).
  const uint64_t slots = in.Count(2, "slot count");
  if (slots > kMaxLayoutSlots) return absl::DataLossError("log layout: too many slots");
  layout.kinds_.reserve(slots);
  layout.pieces_.reserve(slots + 1);
  for (uint64_t i = 0; i < slots && in.ok(); ++i) {
    layout.pieces_.emplace_back(in.LengthPrefixed("literal"));
    const uint8_t kind = in.Byte("slot kind");
    if (in.ok() && (kind < static_cast<uint8_t>(SlotKind::kItemId) ||
                    kind > static_cast<uint8_t>(SlotKind::kNumber))) {
      return absl::DataLossError(absl::StrCat("log layout: unknown slot kind ", kind));
    }
    layout.kinds_.push_back(static_cast<SlotKind>(kind));
  }
  layout.pieces_.emplace_back(in.LengthPrefixed("last literal"));
  const uint64_t strings = in.Count(1, "string count");
  if (strings > kMaxLayoutStrings) return absl::DataLossError("log layout: too many strings");
  for (uint64_t i = 0; i < strings && in.ok(); ++i) {
    layout.strings_.emplace_back(in.LengthPrefixed("string"));
  }
  if (!in.ok()) return absl::DataLossError(in.status().message());
  if (!in.empty()) return absl::DataLossError("log layout: trailing bytes");
  return layout;
}

absl::StatusOr<std::string> LogLayout::Render(absl::string_view item_id,
                                              absl::string_view value) const {
  coding::Reader in(value, "log record");
  if (in.Byte("tag") != static_cast<uint8_t>(kRecordTag)) {
    return absl::DataLossError("log record: value does not start with 'R'");
  }
  std::string out;
  out.reserve(1536);
  char buf[32];
  for (size_t i = 0; i < kinds_.size() && in.ok(); ++i) {
    out.append(pieces_[i]);
    switch (kinds_[i]) {
      case SlotKind::kItemId:
        out.append(item_id.data(), item_id.size());
        break;
      case SlotKind::kInt: {
        const int64_t v = in.SignedVarint64("int");
        out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
        break;
      }
      case SlotKind::kString: {
        const uint64_t index = in.Varint64("string index");
        if (in.ok() && index >= strings_.size()) {
          return absl::DataLossError(absl::StrCat("log record: string index ", index,
                                                  " beyond the layout's ", strings_.size()));
        }
        if (in.ok()) out.append(strings_[index]);
        break;
      }
      case SlotKind::kNumber: {
        const uint64_t u = in.Varint64("number");
        const uint64_t code = u & 31;
        const bool negative = (u >> 5) & 1;
        const uint64_t n = u >> 6;
        double v = 0;
        if (code != kSpecialCode) {
          const int scale = static_cast<int>(code) - kScaleBias;
          if (n == 0 || n > 999999) {
            return absl::DataLossError("log record: number digits out of range");
          }
          v = ScaleBy10(static_cast<double>(n), scale);
        } else if (n == 1) {
          v = std::fabs(in.Double("raw number"));
        } else if (n != 0) {
          return absl::DataLossError("log record: unknown special number");
        }
        const absl::AlphaNum text(absl::SixDigits(negative ? -v : v));
        out.append(text.data(), text.size());
        break;
      }
    }
    if (out.size() > kMaxRenderedBytes) {
      return absl::ResourceExhaustedError("log record: rendered text exceeds the limit");
    }
  }
  if (!in.ok()) return absl::DataLossError(in.status().message());
  if (!in.empty()) return absl::DataLossError("log record: trailing bytes");
  out.append(pieces_.back());
  return out;
}

absl::StatusOr<std::string> RenderLogRecord(absl::string_view layout, absl::string_view item_id,
                                            absl::string_view value) {
  absl::StatusOr<LogLayout> parsed = LogLayout::Parse(layout);
  if (!parsed.ok()) return parsed.status();
  return parsed->Render(item_id, value);
}

}  // namespace rankwire::logstore
