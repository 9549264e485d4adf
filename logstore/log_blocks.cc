#include "logstore/log_blocks.h"

#include <emmintrin.h>  // SSE2: every x86-64 CPU has it.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codec/coding.h"

namespace rankwire::logstore {
namespace {

constexpr char kContext[] = "log block";

// The two-top-bytes form is tried in blocks of at most this many items
// times 8 (a block's bits live on the stack).
constexpr size_t kMaxTopBitsBytes = 256;

void AppendVarint(uint64_t v, std::string* out) {
  char buf[coding::kMaxVarint64Length];
  char* end = coding::EncodeVarint64(buf, v);
  out->append(buf, static_cast<size_t>(end - buf));
}

void AppendLength(absl::string_view s, std::string* out) {
  AppendVarint(s.size(), out);
  out->append(s.data(), s.size());
}

uint32_t FloatBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits;
}

float BitsFloat(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("log block: ", what));
}

}  // namespace

std::string LogBlockField(size_t b) { return absl::StrCat("#", b); }

size_t BlockLayout::BlockCount() const {
  if (items == 0) return 0;
  const uint32_t rest = items - std::min(items, top_items);
  return 1 + (rest + block_items - 1) / block_items;
}

uint32_t BlockLayout::BlockBegin(size_t b) const {
  if (b == 0) return 0;
  return top_items + static_cast<uint32_t>(b - 1) * block_items;
}

uint32_t BlockLayout::BlockSize(size_t b) const {
  if (b >= BlockCount()) return 0;
  const uint32_t begin = BlockBegin(b);
  const uint32_t end = b == 0 ? top_items : begin + block_items;
  return std::min(end, items) - begin;
}

size_t BlockLayout::BlockOf(uint32_t position) const {
  if (position < top_items) return 0;
  return 1 + (position - top_items) / block_items;
}

std::string BlockLayout::Serialize() const {
  std::string out;
  out.push_back(kBlocksLayoutTag);
  out.push_back(static_cast<char>(kBlocksLayoutVersion));
  AppendVarint(items, &out);
  AppendVarint(top_items, &out);
  AppendVarint(block_items, &out);
  AppendVarint(kinds.size(), &out);
  for (size_t i = 0; i < kinds.size(); ++i) {
    AppendLength(pieces[i], &out);
    out.push_back(static_cast<char>(kinds[i]));
  }
  AppendLength(pieces.back(), &out);
  AppendVarint(strings.size(), &out);
  for (const std::string& s : strings) AppendLength(s, &out);
  return out;
}

bool BlockLayout::IsBlocks(absl::string_view value) {
  return value.size() >= 2 && value[0] == kBlocksLayoutTag &&
         static_cast<uint8_t>(value[1]) == kBlocksLayoutVersion;
}

absl::StatusOr<BlockLayout> BlockLayout::Parse(absl::string_view value) {
  if (!IsBlocks(value)) return Corrupt("not a version-2 layout");
  coding::Reader r(value.substr(2), kContext, 2);
  BlockLayout layout;
  layout.items = r.Varint32("items");
  layout.top_items = r.Varint32("top items");
  layout.block_items = r.Varint32("block items");
  const uint64_t slots = r.Count(2, "slots");
  if (!r.ok()) return r.status();
  if (layout.items > kMaxLogItems) return Corrupt("more items than a request may have");
  if (layout.items > 0 && (layout.top_items == 0 || layout.block_items == 0)) {
    return Corrupt("a block of no items");
  }
  if (slots > kMaxLogSlots) return Corrupt("too many slots");
  for (uint64_t i = 0; i < slots; ++i) {
    layout.pieces.emplace_back(r.LengthPrefixed("piece"));
    const uint8_t kind = r.Byte("slot kind");
    if (r.ok() && (kind < 1 || kind > 5)) return Corrupt(absl::StrCat("slot kind ", kind));
    layout.kinds.push_back(static_cast<LogSlot>(kind));
  }
  layout.pieces.emplace_back(r.LengthPrefixed("last piece"));
  const uint64_t strings = r.Count(1, "strings");
  if (r.ok() && strings > kMaxLogStrings) return Corrupt("too many strings");
  for (uint64_t i = 0; i < strings && r.ok(); ++i) {
    layout.strings.emplace_back(r.LengthPrefixed("string"));
  }
  if (!r.ok()) return r.status();
  if (!r.empty()) return Corrupt("bytes after the layout");
  // The id column is how a reader finds items: exactly one.
  const size_t id_slots =
      static_cast<size_t>(std::count(layout.kinds.begin(), layout.kinds.end(), LogSlot::kItemId));
  if (id_slots != 1) {
    return Corrupt(
        absl::StrCat("a version-2 layout with ", id_slots, " item id slots (it has exactly one)"));
  }
  return layout;
}

BlocksWriter::BlocksWriter(const BlockLayout& layout, const absl::string_view* ids) {
  const size_t blocks = layout.BlockCount();
  begin_.resize(blocks + 1);
  for (size_t b = 0; b < blocks; ++b) begin_[b] = layout.BlockBegin(b);
  begin_.back() = layout.items;
  // Room per block: the tag and count, per slot a form and its header bytes
  // (a number column's spare byte and two-top bits counted there), each
  // value at its largest (a 10-byte varint), and the ids (a 5-byte length
  // each, the block's prefix once more).
  start_.resize(blocks + 1);
  end_.resize(blocks);
  const size_t slots = layout.kinds.size();
  size_t total = 0;
  for (size_t b = 0; b < blocks; ++b) {
    start_[b] = total;
    const size_t count = begin_[b + 1] - begin_[b];
    size_t block_ids = 0;
    for (uint32_t j = begin_[b]; j < begin_[b + 1]; ++j) block_ids += ids[j].size();
    total += 16 + slots * (16 + 10 * count + count / 8) + 5 * count + 2 * block_ids;
  }
  start_.back() = total;
  buffer_.reset(new char[total]);  // Not zero-filled: every byte used is written.
  for (size_t b = 0; b < blocks; ++b) {
    char* p = buffer_.get() + start_[b];
    *p++ = kBlockTag;
    p = coding::EncodeVarint64(p, begin_[b + 1] - begin_[b]);
    end_[b] = static_cast<size_t>(p - buffer_.get());
  }
}

void BlocksWriter::ItemIds(const absl::string_view* ids) {
  for (size_t b = 0; b < end_.size(); ++b) {
    const absl::string_view* block_ids = ids + begin_[b];
    const uint32_t count = begin_[b + 1] - begin_[b];
    // The prefix every id of the block shares ("sku-", a tenant), once.
    size_t prefix = block_ids[0].size();
    for (uint32_t j = 1; j < count && prefix > 0; ++j) {
      const absl::string_view id = block_ids[j];
      size_t k = 0;
      const size_t limit = std::min(prefix, id.size());
      while (k < limit && id[k] == block_ids[0][k]) ++k;
      prefix = k;
    }
    char* p = buffer_.get() + end_[b];
    p = coding::EncodeVarint64(p, prefix);
    std::memcpy(p, block_ids[0].data(), prefix);
    p += prefix;
    for (uint32_t j = 0; j < count; ++j) {
      const absl::string_view suffix = block_ids[j].substr(prefix);
      p = coding::EncodeVarint64(p, suffix.size());
      std::memcpy(p, suffix.data(), suffix.size());
      p += suffix.size();
    }
    end_[b] = static_cast<size_t>(p - buffer_.get());
  }
}

void BlocksWriter::Ints(const int64_t* values) {
  for (size_t b = 0; b < end_.size(); ++b) {
    char* p = buffer_.get() + end_[b];
    for (uint32_t j = begin_[b]; j < begin_[b + 1]; ++j) {
      p = coding::EncodeVarint64(p, coding::ZigZagEncode64(values[j]));
    }
    end_[b] = static_cast<size_t>(p - buffer_.get());
  }
}

void BlocksWriter::Strings(const uint32_t* indexes) {
  for (size_t b = 0; b < end_.size(); ++b) {
    char* p = buffer_.get() + end_[b];
    for (uint32_t j = begin_[b]; j < begin_[b + 1]; ++j) p = coding::EncodeVarint64(p, indexes[j]);
    end_[b] = static_cast<size_t>(p - buffer_.get());
  }
}

namespace {

constexpr double kPowersOfTen[kMaxDecimalScale + 1] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};

// Whether `v` is a whole number below 2^24 in magnitude, and not -0.
inline bool IsWhole(float v) {
  if (!(v > -16777216.0f && v < 16777216.0f)) return false;
  const int32_t i = static_cast<int32_t>(v);
  return static_cast<float>(i) == v && (i != 0 || (FloatBits(v) >> 31) == 0);
}

// 10^-k, each the binary64 nearest to it (as C and Python read "1e-2").
constexpr double kTenths[kMaxDecimalScale + 1] = {1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6};

// The value of a kDecimal number: the binary32 of the binary64 product
// d * 10^-k (a multiplication, not a division: the writer checks every
// value it stores this way, four times faster than dividing).
inline float DecimalValue(int64_t d, int k) {
  return static_cast<float>(static_cast<double>(d) * kTenths[k]);
}

// Whether `v` is DecimalValue(d, k) for an integer |d| < 2^31 (bit for bit:
// never -0, NaN or an infinity); sets *d. d is v * 10^k rounded to the
// nearest integer, ties to even (cvtsd2si in the default rounding mode).
inline bool DecimalOf(float v, int k, int64_t* d) {
  const double scaled = static_cast<double>(v) * kPowersOfTen[k];
  if (!(scaled > -2147483647.0 && scaled < 2147483647.0)) return false;
  const int64_t i = _mm_cvtsd_si64(_mm_set_sd(scaled));
  *d = i;
  return FloatBits(DecimalValue(i, k)) == FloatBits(v);
}

// The smallest scale at which `v` is a short decimal; 0 if none is.
inline int DecimalScaleOf(float v) {
  int64_t d = 0;
  for (int k = 1; k <= kMaxDecimalScale; ++k) {
    if (DecimalOf(v, k, &d)) return k;
  }
  return 0;
}

// The scale a slot's numbers are tried with: the largest that its first
// few values need, or 0 when one of them is no short decimal (measured
// columns of the model, which never are, pay for a handful of tries once
// per request).
int GuessDecimalScale(const float* values, uint32_t n) {
  int scale = 0;
  for (uint32_t j = 0; j < std::min<uint32_t>(n, 4); ++j) {
    if (IsWhole(values[j])) continue;
    const int k = DecimalScaleOf(values[j]);
    if (k == 0) return 0;
    scale = std::max(scale, k);
  }
  return scale;
}

// Four values' bits.
inline __m128i Load4(const float* values) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(values));
}

// OR over the block of each value's bits XOR the first's: zero for a
// constant, below 2^24 for a shared top byte.
uint32_t DifferingBits(const float* values, uint32_t n, uint32_t first, uint32_t* low_top,
                       uint32_t* high_top) {
  const __m128i f = _mm_set1_epi32(static_cast<int>(first));
  __m128i acc = _mm_setzero_si128();
  // The smallest and largest top byte: each lane's top byte is below 256,
  // so the signed 16-bit min and max of its low half are its own.
  __m128i low = _mm_set1_epi32(static_cast<int>(first >> 24)), high = low;
  uint32_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const __m128i bits = Load4(values + j);
    acc = _mm_or_si128(acc, _mm_xor_si128(bits, f));
    const __m128i top = _mm_srli_epi32(bits, 24);
    low = _mm_min_epi16(low, top);
    high = _mm_max_epi16(high, top);
  }
  acc = _mm_or_si128(acc, _mm_shuffle_epi32(acc, _MM_SHUFFLE(1, 0, 3, 2)));
  acc = _mm_or_si128(acc, _mm_shuffle_epi32(acc, _MM_SHUFFLE(2, 3, 0, 1)));
  low = _mm_min_epi16(low, _mm_shuffle_epi32(low, _MM_SHUFFLE(1, 0, 3, 2)));
  low = _mm_min_epi16(low, _mm_shuffle_epi32(low, _MM_SHUFFLE(2, 3, 0, 1)));
  high = _mm_max_epi16(high, _mm_shuffle_epi32(high, _MM_SHUFFLE(1, 0, 3, 2)));
  high = _mm_max_epi16(high, _mm_shuffle_epi32(high, _MM_SHUFFLE(2, 3, 0, 1)));
  uint32_t differ = static_cast<uint32_t>(_mm_cvtsi128_si32(acc));
  *low_top = static_cast<uint32_t>(_mm_cvtsi128_si32(low));
  *high_top = static_cast<uint32_t>(_mm_cvtsi128_si32(high));
  for (; j < n; ++j) {
    const uint32_t bits = FloatBits(values[j]);
    differ |= bits ^ first;
    *low_top = std::min(*low_top, bits >> 24);
    *high_top = std::max(*high_top, bits >> 24);
  }
  return differ;
}

// Whether every value's top byte is `low` or `high`, and if so, per item a
// bit (1: `high`) into `bits` ((n + 7) / 8 bytes, rounded up to a multiple
// of 8 bytes of room).
bool TwoTopBits(const float* values, uint32_t n, uint32_t low, uint32_t high, uint8_t* bits) {
  const __m128i lo = _mm_set1_epi32(static_cast<int>(low));
  const __m128i hi = _mm_set1_epi32(static_cast<int>(high));
  __m128i ok = _mm_set1_epi32(-1);
  uint64_t word = 0;  // The bits of up to 64 items, stored when full.
  uint32_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const __m128i top = _mm_srli_epi32(Load4(values + j), 24);
    const __m128i is_high = _mm_cmpeq_epi32(top, hi);
    ok = _mm_and_si128(ok, _mm_or_si128(is_high, _mm_cmpeq_epi32(top, lo)));
    word |= static_cast<uint64_t>(_mm_movemask_ps(_mm_castsi128_ps(is_high))) << (j % 64);
    if (j % 64 == 60) {
      std::memcpy(bits + size_t{j / 64} * 8, &word, 8);
      word = 0;
    }
  }
  bool all = _mm_movemask_ps(_mm_castsi128_ps(ok)) == 0xF;
  for (; j < n; ++j) {
    const uint32_t top = FloatBits(values[j]) >> 24;
    all &= top == low || top == high;
    word |= static_cast<uint64_t>(top == high) << (j % 64);
  }
  // The last, partial word (`bits` has room for a whole one).
  if (n % 64 != 0) std::memcpy(bits + size_t{n / 64} * 8, &word, 8);
  return all;
}

// Whether every value is a whole number below 2^24 in magnitude and not -0
// (IsWhole), four at a time.
bool AllWhole(const float* values, uint32_t n) {
  const __m128 limit = _mm_set1_ps(16777216.0f);
  const __m128 magnitude_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  const __m128i minus_zero = _mm_set1_epi32(static_cast<int>(0x80000000u));
  __m128 ok = _mm_castsi128_ps(_mm_set1_epi32(-1));
  uint32_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const __m128 v = _mm_loadu_ps(values + j);
    // cvttps2dq gives 0x80000000 for what does not fit, which converts
    // back to -2^31, never equal to a value below 2^24; NaN fails both.
    const __m128 whole = _mm_and_ps(_mm_cmpeq_ps(_mm_cvtepi32_ps(_mm_cvttps_epi32(v)), v),
                                    _mm_cmplt_ps(_mm_and_ps(v, magnitude_mask), limit));
    const __m128 minus = _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_castps_si128(v), minus_zero));
    ok = _mm_and_ps(ok, _mm_andnot_ps(minus, whole));
  }
  bool all = _mm_movemask_ps(ok) == 0xF;
  for (; j < n; ++j) all &= IsWhole(values[j]);
  return all;
}

// Writes whole numbers (AllWhole) as zigzag varints at `p` while they take
// fewer than `limit` bytes; returns the end, or nullptr at the limit.
// A zigzag varint of a value below 2^32 in magnitude, written as one
// 8-byte store (the block's room allows it): its 7-bit groups spread
// over the bytes, the continuation bits of all but the last set, no branch
// on its length (the lengths of a column's varints vary unpredictably).
inline char* PutSmallVarint(int64_t value, char* p) {
  const uint64_t v = coding::ZigZagEncode64(value);
  const uint64_t spread = (v & 0x7f) | (v & 0x3f80) << 1 | (v & 0x1fc000) << 2 |
                          (v & 0xfe00000) << 3 | (v & 0x7f0000000) << 4;
  const size_t length = coding::VarintLength(v);
  const uint64_t continuation = 0x0000008080808080ull & ((uint64_t{1} << (8 * length - 8)) - 1);
  const uint64_t bytes = spread | continuation;
  std::memcpy(p, &bytes, 8);
  return p + length;
}

// Writes whole numbers (AllWhole) as zigzag varints at `p` while they take
// fewer than `limit` bytes; returns the end, or nullptr at the limit.
char* PutWhole(const float* values, uint32_t n, size_t limit, char* p) {
  const char* stop = p + limit;
  for (uint32_t j = 0; j < n; ++j) p = PutSmallVarint(static_cast<int32_t>(values[j]), p);
  return p < stop ? p : nullptr;
}

// The same for decimals at `scale` (DecimalOf); nullptr also when a value
// is not one.
char* PutDecimal(const float* values, uint32_t n, int scale, size_t limit, char* p) {
  const char* stop = p + limit;
  bool all = true;
  for (uint32_t j = 0; j < n; ++j) {
    int64_t d = 0;
    all &= DecimalOf(values[j], scale, &d);
    p = PutSmallVarint(d, p);
  }
  return all && p < stop ? p : nullptr;
}

// Writes count x the low 3 bytes of each value at `p`, four bytes at a time,
// each store's top byte overwritten by the next (the block's room allows
// the one spare byte). Returns the end.
inline char* PutLowBytes(const float* values, uint32_t n, char* p) {
  for (uint32_t j = 0; j < n; ++j, p += 3) {
    const uint32_t bits = FloatBits(values[j]);
    std::memcpy(p, &bits, 4);
  }
  return p;
}

// One block's number column in its cheapest form, written at `p`; returns
// the end. `scale` is the column's decimal scale (GuessDecimalScale).
// A pass over the bits finds a constant or a shared top byte; only when
// the top bytes differ, a second one tests for exactly two. Whole numbers
// are tried only when the first value is one, decimals only in a slot
// whose first values were; they win only when smaller than the other
// forms, which tie to the earlier of: top byte, two top bytes, raw.
char* PutNumbers(const float* values, uint32_t n, int scale, char* p) {
  if (n == 0) {
    *p++ = static_cast<char>(NumberForm::kRaw);
    return p;
  }
  const uint32_t first = FloatBits(values[0]);
  uint32_t low_top = 0, high_top = 0;
  const uint32_t differ = DifferingBits(values, n, first, &low_top, &high_top);
  if (differ == 0 && n > 1) {
    *p++ = static_cast<char>(NumberForm::kConstant);
    std::memcpy(p, &first, 4);
    return p + 4;
  }
  const size_t raw_bytes = 4 * size_t{n};
  NumberForm form = NumberForm::kRaw;
  size_t best = raw_bytes;
  // Per item, which of two top bytes (form kTwoTops).
  uint8_t top_bits[kMaxTopBitsBytes + 8];
  if ((differ >> 24) == 0) {
    if (1 + 3 * size_t{n} < best) form = NumberForm::kTopByte, best = 1 + 3 * size_t{n};
  } else if (n <= 8 * kMaxTopBitsBytes) {
    const size_t two_bytes = 2 + (size_t{n} + 7) / 8 + 3 * size_t{n};
    if (two_bytes < best && TwoTopBits(values, n, low_top, high_top, top_bits)) {
      form = NumberForm::kTwoTops, best = two_bytes;
    }
  }
  // Whole numbers and decimals are written where the form's bytes go (the
  // block's room holds them at their largest), given up as soon as they
  // are not smaller than the best form so far.
  char* const body = p + 1;
  if (IsWhole(values[0])) {
    if (char* end = AllWhole(values, n) ? PutWhole(values, n, best, body) : nullptr) {
      *p = static_cast<char>(NumberForm::kWhole);
      return end;
    }
  } else if (scale > 0 && best > 1) {
    body[0] = static_cast<char>(scale);
    if (char* end = PutDecimal(values, n, scale, best - 1, body + 1)) {
      *p = static_cast<char>(NumberForm::kDecimal);
      return end;
    }
  }
  *p++ = static_cast<char>(form);
  switch (form) {
    case NumberForm::kTopByte:
      *p++ = static_cast<char>(low_top);
      return PutLowBytes(values, n, p);
    case NumberForm::kTwoTops:
      *p++ = static_cast<char>(low_top);
      *p++ = static_cast<char>(high_top);
      std::memcpy(p, top_bits, (size_t{n} + 7) / 8);
      return PutLowBytes(values, n, p + (size_t{n} + 7) / 8);
    default:
      std::memcpy(p, values, raw_bytes);
      return p + raw_bytes;
  }
}

}  // namespace

void BlocksWriter::Numbers(const float* values) {
  if (end_.empty()) return;
  // The decimal scale is guessed once per column, from its first values.
  const int scale = GuessDecimalScale(values, begin_[1]);
  for (size_t b = 0; b < end_.size(); ++b) {
    char* p =
        PutNumbers(values + begin_[b], begin_[b + 1] - begin_[b], scale, buffer_.get() + end_[b]);
    end_[b] = static_cast<size_t>(p - buffer_.get());
  }
}

namespace {

// A kTwoTops column of `n` numbers: the two top bytes (the smaller first),
// a bit per item (1: the second), then the low 3 bytes of each. Refuses
// what the writer never writes: equal or unordered top bytes, a column
// that uses only one of them, bits set past the last item.
absl::Status ReadTwoTops(coding::Reader& r, uint32_t n, float* out) {
  const uint32_t top0 = r.Byte("top byte");
  const uint32_t top1 = r.Byte("second top byte");
  absl::string_view bits = r.Bytes((uint64_t{n} + 7) / 8, "top byte bits");
  absl::string_view low = r.Bytes(3 * uint64_t{n}, "numbers");
  if (!r.ok()) return r.status();
  if (top0 >= top1) return Corrupt("two top bytes not in increasing order");
  uint32_t ones = 0;
  for (uint32_t j = 0; j < n; ++j) {
    const uint32_t one = (static_cast<uint8_t>(bits[j / 8]) >> (j % 8)) & 1;
    ones += one;
    uint32_t value = 0;
    std::memcpy(&value, low.data() + 3 * size_t{j}, 3);
    out[j] = BitsFloat(value | (one != 0 ? top1 : top0) << 24);
  }
  if (n % 8 != 0 && (static_cast<uint8_t>(bits.back()) >> (n % 8)) != 0) {
    return Corrupt("top byte bits set past the last item");
  }
  if (ones == 0 || ones == n) return Corrupt("a two-top-byte column that uses one of them");
  return absl::OkStatus();
}

// A kDecimal column: the scale k, then each item's zigzag varint d; the
// value is the binary32 of the binary64 d / 10^k.
absl::Status ReadDecimals(coding::Reader& r, uint32_t n, float* out) {
  const uint8_t scale = r.Byte("decimal scale");
  if (r.ok() && (scale < 1 || scale > kMaxDecimalScale)) {
    return Corrupt(absl::StrCat("decimal scale ", scale, " (1..", kMaxDecimalScale, ")"));
  }
  for (uint32_t j = 0; j < n && r.ok(); ++j) {
    const int64_t d = r.SignedVarint64("decimal digits");
    if (r.ok() && (d <= -kDecimalDigitsLimit || d >= kDecimalDigitsLimit)) {
      return Corrupt("decimal digits out of range");
    }
    out[j] = DecimalValue(d, scale);
  }
  return r.status();
}

}  // namespace

absl::StatusOr<BlockReader> BlockReader::Parse(const BlockLayout& layout, size_t b,
                                               absl::string_view value) {
  if (b >= layout.BlockCount()) {
    return Corrupt(absl::StrCat("block ", b, " of a layout of ", layout.BlockCount(), " blocks"));
  }
  if (value.empty() || value[0] != kBlockTag) return Corrupt("not a block");
  coding::Reader r(value.substr(1), kContext, 1);
  BlockReader block;
  block.layout_ = &layout;
  block.begin_ = layout.BlockBegin(b);
  block.count_ = r.Varint32("count");
  if (!r.ok()) return r.status();
  if (block.count_ != layout.BlockSize(b)) {
    return Corrupt(absl::StrCat("block ", b, " holds ", block.count_, " items, its layout says ",
                                layout.BlockSize(b)));
  }
  const uint32_t n = block.count_;
  for (LogSlot kind : layout.kinds) {
    Column& column = block.columns_.emplace_back();
    column.kind = kind;
    switch (kind) {
      case LogSlot::kPosition:
        break;
      case LogSlot::kItemId:
        block.id_prefix_ = std::string(r.LengthPrefixed("id prefix"));
        block.id_suffixes_.clear();
        for (uint32_t j = 0; j < n && r.ok(); ++j) {
          block.id_suffixes_.emplace_back(r.LengthPrefixed("id"));
        }
        break;
      case LogSlot::kInt:
      case LogSlot::kString:
        for (uint32_t j = 0; j < n && r.ok(); ++j) {
          column.ints.push_back(kind == LogSlot::kInt
                                    ? r.SignedVarint64("int")
                                    : static_cast<int64_t>(r.Varint32("string index")));
          if (kind == LogSlot::kString && r.ok() &&
              static_cast<uint64_t>(column.ints.back()) >= layout.strings.size()) {
            return Corrupt("string index past the layout's table");
          }
        }
        break;
      case LogSlot::kNumber: {
        const uint8_t form = r.Byte("number form");
        column.numbers.resize(n);
        if (form == static_cast<uint8_t>(NumberForm::kRaw)) {
          absl::string_view raw = r.Bytes(4 * uint64_t{n}, "numbers");
          if (r.ok()) std::memcpy(column.numbers.data(), raw.data(), raw.size());
        } else if (form == static_cast<uint8_t>(NumberForm::kTopByte)) {
          const uint32_t top = r.Byte("top byte");
          absl::string_view low = r.Bytes(3 * uint64_t{n}, "numbers");
          for (uint32_t j = 0; j < n && r.ok(); ++j) {
            uint32_t bits = 0;
            std::memcpy(&bits, low.data() + size_t{3} * j, 3);
            column.numbers[j] = BitsFloat(bits | top << 24);
          }
        } else if (form == static_cast<uint8_t>(NumberForm::kWhole)) {
          for (uint32_t j = 0; j < n && r.ok(); ++j) {
            const int64_t v = r.SignedVarint64("whole number");
            if (r.ok() && (v <= -16777216 || v >= 16777216))
              return Corrupt("whole number too large");
            column.numbers[j] = static_cast<float>(v);
          }
        } else if (form == static_cast<uint8_t>(NumberForm::kConstant)) {
          const float v = r.Float("constant");
          std::fill(column.numbers.begin(), column.numbers.end(), v);
        } else if (form == static_cast<uint8_t>(NumberForm::kTwoTops)) {
          RETURN_IF_ERROR(ReadTwoTops(r, n, column.numbers.data()));
        } else if (form == static_cast<uint8_t>(NumberForm::kDecimal)) {
          RETURN_IF_ERROR(ReadDecimals(r, n, column.numbers.data()));
        } else if (r.ok()) {
          return Corrupt(absl::StrCat("number form ", form));
        }
        break;
      }
    }
    if (!r.ok()) return r.status();
  }
  if (!r.empty()) return Corrupt("bytes after the last column");
  return block;
}

std::string BlockReader::id(size_t j) const {
  return absl::StrCat(id_prefix_, j < id_suffixes_.size() ? id_suffixes_[j] : "");
}

absl::StatusOr<std::string> BlockReader::Render(size_t j) const {
  const BlockLayout& layout = *layout_;
  std::string out;
  for (size_t s = 0; s < layout.kinds.size(); ++s) {
    out.append(layout.pieces[s]);
    const Column& column = columns_[s];
    switch (column.kind) {
      case LogSlot::kItemId:
        absl::StrAppend(&out, id_prefix_, id_suffixes_[j]);
        break;
      case LogSlot::kPosition:
        absl::StrAppend(&out, begin_ + j + 1);
        break;
      case LogSlot::kInt:
        absl::StrAppend(&out, column.ints[j]);
        break;
      case LogSlot::kString:
        out.append(layout.strings[static_cast<size_t>(column.ints[j])]);
        break;
      case LogSlot::kNumber:
        AppendLogNumberText(column.numbers[j], &out);
        break;
    }
    if (out.size() > kMaxLogLineBytes) {
      return absl::ResourceExhaustedError("log block: a rendered line exceeds 1 MiB");
    }
  }
  out.append(layout.pieces.back());
  return out;
}

void AppendLogNumberText(float value, std::string* out) {
  absl::StrAppend(out, absl::SixDigits(static_cast<double>(value)));
}

}  // namespace rankwire::logstore
