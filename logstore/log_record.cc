#include "logstore/log_record.h"

#include <charconv>
#include <cmath>
#include <cstring>

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

// 10^k for k in [0, 27] as long double: exact (5^27 < 2^64).
long double Pow10L(int k) {
  static const auto* table = [] {
    auto* t = new long double[28];
    t[0] = 1;
    for (int i = 1; i < 28; ++i) t[i] = t[i - 1] * 10;
    return t;
  }();
  return table[k];
}

void AppendVarint(uint64_t v, std::string* out) {
  char buf[coding::kMaxVarint64Length];
  char* end = coding::EncodeVarint64(buf, v);
  out->append(buf, static_cast<size_t>(end - buf));
}

void AppendRawDouble(bool negative, double value, std::string* out) {
  AppendVarint(uint64_t{1} << 6 | uint64_t{negative} << 5 | kSpecialCode, out);
  char buf[8];
  uint64_t bits;
  std::memcpy(&bits, &value, 8);
  coding::EncodeFixed64(buf, bits);
  out->append(buf, 8);
}

// |value| scaled by 10^(5 - e): about [1e5, 1e6) when e is the decimal
// exponent of value.
long double Scaled(long double a, int e) {
  const int k = 5 - e;
  if (k >= 0) return a * Pow10L(k);
  return a / Pow10L(-k);
}

void AppendLength(absl::string_view s, std::string* out) {
  AppendVarint(s.size(), out);
  out->append(s.data(), s.size());
}

}  // namespace

void AppendLogNumber(double value, std::string* out) {
  const bool negative = std::signbit(value);
  const double a = std::fabs(value);
  if (a == 0) {
    AppendVarint(uint64_t{negative} << 5 | kSpecialCode, out);
    return;
  }
  // Beyond these the decimal exponent range or the long double powers run
  // out; the raw form renders the same through SixDigits.
  if (!std::isfinite(a) || a < 1e-18 || a >= 1e12) {
    AppendRawDouble(negative, value, out);
    return;
  }
  int e2 = 0;
  std::frexp(a, &e2);
  // floor(log10(a)), estimated from the binary exponent and corrected.
  int e = static_cast<int>(std::floor((e2 - 1) * 0.30102999566398120));
  long double r = Scaled(a, e);
  while (r >= 999999.5L) r = Scaled(a, ++e);
  while (r < 99999.5L) r = Scaled(a, --e);
  const long double whole = std::floor(r);
  const long double frac = r - whole;
  // SixDigits rounds to nearest; this scaling is exact to ~1e-19 relative,
  // absl's to ~1e-15 with an exact recheck near the tie. Near a tie, give
  // the reader the double itself.
  if (std::fabs(frac - 0.5L) < 1e-7L) {
    AppendRawDouble(negative, value, out);
    return;
  }
  uint64_t n = static_cast<uint64_t>(whole) + (frac > 0.5L ? 1 : 0);
  int scale = e - 5;
  if (n == 1000000) {
    n = 100000;
    ++scale;
  }
  while (n % 10 == 0) {
    n /= 10;
    ++scale;
  }
  const int code = scale + kScaleBias;
  if (code < 0 || code >= static_cast<int>(kSpecialCode)) {
    AppendRawDouble(negative, value, out);
    return;
  }
  AppendVarint(n << 6 | uint64_t{negative} << 5 | static_cast<uint64_t>(code), out);
}

void LogRecordBuilder::Slot(SlotKind kind) {
  if (capturing_) {
    kinds_.push_back(kind);
    pieces_.emplace_back();
  } else if (slot_ >= kinds_.size() || kinds_[slot_] != kind) {
    consistent_ = false;
  }
  ++slot_;
}

void LogRecordBuilder::Literal(absl::string_view text) {
  if (capturing_) pieces_.back().append(text.data(), text.size());
}

void LogRecordBuilder::ItemId() { Slot(SlotKind::kItemId); }

void LogRecordBuilder::Int(int64_t value) {
  Slot(SlotKind::kInt);
  AppendVarint(coding::ZigZagEncode64(value), &record_);
}

void LogRecordBuilder::String(absl::string_view text) {
  Slot(SlotKind::kString);
  auto [it, inserted] =
      string_index_.try_emplace(std::string(text), static_cast<uint32_t>(strings_.size()));
  if (inserted) strings_.emplace_back(text);
  AppendVarint(it->second, &record_);
}

void LogRecordBuilder::Number(double value) {
  Slot(SlotKind::kNumber);
  AppendLogNumber(value, &record_);
}

std::string LogRecordBuilder::FinishRecord() {
  if (!capturing_ && slot_ != kinds_.size()) consistent_ = false;
  capturing_ = false;
  slot_ = 0;
  std::string value;
  value.reserve(record_.size() + 1);
  value.push_back(kRecordTag);
  value.append(record_);
  record_.clear();
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
          v = scale >= 0 ? static_cast<double>(n) * static_cast<double>(Pow10L(scale))
                         : static_cast<double>(n) / static_cast<double>(Pow10L(-scale));
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
