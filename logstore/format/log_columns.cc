#include "logstore/format/log_columns.h"

#include <emmintrin.h>  // SSE2: every x86-64 CPU has it.

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codec/coding.h"
#include "logstore/format/log_reading.h"
#include "logstore/format/log_writing.h"

namespace rankwire::logstore {
namespace {

constexpr char kContext[] = "log columns";

absl::Status Corrupt(absl::string_view what) { return LogDataLoss(kContext, what); }

// The width of an integer array whose largest value is `max`.
inline uint8_t WidthOf(uint32_t max) { return max < 256 ? 1 : max < 65536 ? 2 : 4; }

// How one number column is stored (ColumnForm), from one pass over it.
struct NumberPlan {
  ColumnForm form = ColumnForm::kRaw;
  uint32_t first = 0;  // The first value's bits (kConstant's, kTopByte's top).
  uint8_t width = 0;   // kWhole's.
};

// The j-th binary32 of `v` (little-endian, at any alignment: "#1"'s
// converted columns sit right after their form byte).
inline uint32_t BitsAt(const char* v, size_t j) {
  uint32_t bits;
  std::memcpy(&bits, v + 4 * j, 4);
  return bits;
}

// Whether every value is a whole number in [0, 65535] (not -0); the
// largest in *max.
bool SmallWhole(const char* v, size_t n, uint32_t* max) {
  const __m128 limit = _mm_set1_ps(65535.0f);
  const __m128i minus_zero = _mm_set1_epi32(static_cast<int>(0x80000000u));
  __m128 ok = _mm_castsi128_ps(_mm_set1_epi32(-1));
  __m128 high = _mm_setzero_ps();
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    // A column that is not whole numbers mostly shows it early.
    if (j % 32 == 0 && _mm_movemask_ps(ok) != 0xF) return false;
    const __m128 x = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 4 * j)));
    // cvttps2dq of NaN or a large value is 0x80000000, never equal back.
    const __m128 whole = _mm_cmpeq_ps(_mm_cvtepi32_ps(_mm_cvttps_epi32(x)), x);
    const __m128 in_range = _mm_and_ps(_mm_cmpge_ps(x, _mm_setzero_ps()), _mm_cmple_ps(x, limit));
    const __m128 minus = _mm_castsi128_ps(_mm_cmpeq_epi32(_mm_castps_si128(x), minus_zero));
    ok = _mm_and_ps(ok, _mm_andnot_ps(minus, _mm_and_ps(whole, in_range)));
    high = _mm_max_ps(high, x);
  }
  bool all = _mm_movemask_ps(ok) == 0xF;
  float lanes[4];
  _mm_storeu_ps(lanes, high);
  float top = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
  for (; j < n; ++j) {
    const uint32_t bits = BitsAt(v, j);
    const float x = LogFloat(bits);
    all &= x >= 0 && x <= 65535.0f && x == static_cast<float>(static_cast<int32_t>(x)) &&
           bits != 0x80000000u;
    top = std::max(top, x);
  }
  *max = all ? static_cast<uint32_t>(top) : 0;
  return all;
}

// OR over the column of each value's bits XOR the first's: zero for a
// constant, below 2^24 for a shared top byte.
uint32_t DifferingBits(const char* v, size_t n, uint32_t first) {
  const __m128i f = _mm_set1_epi32(static_cast<int>(first));
  __m128i acc = _mm_setzero_si128(), acc2 = _mm_setzero_si128();
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 4 * j));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 4 * j + 16));
    acc = _mm_or_si128(acc, _mm_xor_si128(x, f));
    acc2 = _mm_or_si128(acc2, _mm_xor_si128(y, f));
  }
  acc = _mm_or_si128(acc, acc2);
  for (; j + 4 <= n; j += 4) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + 4 * j));
    acc = _mm_or_si128(acc, _mm_xor_si128(x, f));
  }
  acc = _mm_or_si128(acc, _mm_shuffle_epi32(acc, _MM_SHUFFLE(1, 0, 3, 2)));
  acc = _mm_or_si128(acc, _mm_shuffle_epi32(acc, _MM_SHUFFLE(2, 3, 0, 1)));
  uint32_t differ = static_cast<uint32_t>(_mm_cvtsi128_si32(acc));
  for (; j < n; ++j) differ |= BitsAt(v, j) ^ first;
  return differ;
}

// The form of a column (n binary32 at `v`): a constant, else small whole
// numbers, else a shared top byte, else raw (each smaller than the next).
NumberPlan PlanNumbers(const char* v, size_t n) {
  NumberPlan plan;
  if (n == 0) return plan;
  plan.first = BitsAt(v, 0);
  const uint32_t differ = DifferingBits(v, n, plan.first);
  const float first = LogFloat(plan.first);
  uint32_t max = 0;
  // Whole numbers are looked for only in a column whose first value is one
  // (a feature such as a count); the pass over the others stops there.
  const bool first_whole = first >= 0 && first <= 65535.0f &&
                           first == static_cast<float>(static_cast<int32_t>(first)) &&
                           plan.first != 0x80000000u;
  if (differ == 0 && n > 1) {
    plan.form = ColumnForm::kConstant;
  } else if (first_whole && SmallWhole(v, n, &max)) {
    plan.form = ColumnForm::kWhole;
    plan.width = WidthOf(max);
  } else if (differ < (1u << 24)) {
    plan.form = ColumnForm::kTopByte;
  }
  return plan;
}

// Writes the column `v` (n binary32) at `out` in `plan`'s form: the form
// byte, then the form's bytes; returns the end. `v` may be out + 1 (values
// converted in place): each value is read before anything is written over
// it, and the header bytes, which sit over the first value, come last.
char* WriteNumbers(const NumberPlan& plan, const char* v, size_t n, char* out) {
  char* body = out + 1;
  char* end = body;
  switch (plan.form) {
    case ColumnForm::kConstant:
      end = body + 4;
      break;
    case ColumnForm::kWhole: {
      char* p = body + 1;
      if (plan.width == 1) {
        for (size_t j = 0; j < n; ++j) {
          p[j] = static_cast<char>(static_cast<uint8_t>(LogFloat(BitsAt(v, j))));
        }
      } else {
        for (size_t j = 0; j < n; ++j) {
          const auto x = static_cast<uint16_t>(LogFloat(BitsAt(v, j)));
          std::memcpy(p + 2 * j, &x, 2);
        }
      }
      end = p + plan.width * n;
      break;
    }
    case ColumnForm::kTopByte: {
      char* p = body + 1;
      for (size_t j = 0; j < n; ++j) {
        const uint32_t bits = BitsAt(v, j);
        std::memcpy(p + 3 * j, &bits, 3);
      }
      end = p + 3 * n;
      break;
    }
    case ColumnForm::kRaw:
      if (v != body) std::memcpy(body, v, 4 * n);
      end = body + 4 * n;
      break;
  }
  if (plan.form == ColumnForm::kConstant) std::memcpy(body, &plan.first, 4);
  if (plan.form == ColumnForm::kWhole) body[0] = static_cast<char>(plan.width);
  if (plan.form == ColumnForm::kTopByte) body[0] = static_cast<char>(plan.first >> 24);
  out[0] = static_cast<char>(plan.form);
  return end;
}

// The binary32 of each of `in` (n doubles) at `out`, four at a time.
void ToBinary32(const double* in, size_t n, char* out) {
  size_t j = 0;
  for (; j + 4 <= n; j += 4) {
    const __m128 lo = _mm_cvtpd_ps(_mm_loadu_pd(in + j));
    const __m128 hi = _mm_cvtpd_ps(_mm_loadu_pd(in + j + 2));
    _mm_storeu_ps(reinterpret_cast<float*>(out + 4 * j), _mm_movelh_ps(lo, hi));
  }
  for (; j < n; ++j) {
    const float x = static_cast<float>(in[j]);
    std::memcpy(out + 4 * j, &x, 4);
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Layout.

void ColumnsLayout::AppendTo(std::string* out) const {
  out->push_back(kBlocksLayoutTag);
  out->push_back(static_cast<char>(kColumnsLayoutVersion));
  AppendLogVarint(items, out);
  AppendLogVarint(top_items, out);
  AppendLogSlots(pieces, kinds, strings, out);
}

bool ColumnsLayout::IsColumns(absl::string_view value) {
  return value.size() >= 2 && value[0] == kBlocksLayoutTag &&
         static_cast<uint8_t>(value[1]) == kColumnsLayoutVersion;
}

absl::StatusOr<ColumnsLayout> ColumnsLayout::Parse(absl::string_view value) {
  if (!IsColumns(value)) return Corrupt("not a version-3 layout");
  coding::Reader r(value.substr(2), kContext, 2);
  ColumnsLayout layout;
  layout.items = LogVarint32(r, "items");
  layout.top_items = LogVarint32(r, "top items");
  const uint64_t slots = LogCount(r, 2, "slots");
  if (!r.ok()) return r.status();
  if (layout.items > kMaxLogItems) return Corrupt("more items than a request may have");
  if (layout.top_items > layout.items || (layout.items > 0) != (layout.top_items > 0)) {
    return Corrupt(absl::StrCat("top items ", layout.top_items, " of ", layout.items,
                                " (1.. the items, or 0 for none)"));
  }
  RETURN_IF_ERROR(ReadLogSlots(r, slots, LogSlot::kRequestIndex, kContext, &layout.pieces,
                               &layout.kinds, &layout.strings));
  if (!r.empty()) return Corrupt("bytes after the layout");
  const auto ids = std::count(layout.kinds.begin(), layout.kinds.end(), LogSlot::kItemId);
  if (ids != 1) {
    return Corrupt(absl::StrCat("a layout with ", ids, " item id slots (it has exactly one)"));
  }
  return layout;
}

// ---------------------------------------------------------------------------
// Writer.

ColumnsWriter::ColumnsWriter(const ColumnsLayout& layout, const uint32_t* order)
    : n_(layout.items), t_(layout.top_items), order_(order) {
  // Room for "#1"'s own bytes, from above: the tag and the order; per
  // slot an integer array or a number column at 4 bytes a value (ids: the
  // lengths; their bytes stay the caller's); the spare bytes of 4-byte
  // stores.
  size_t room = 16 + 4 * size_t{n_};
  for (LogSlot kind : layout.kinds) {
    if (kind != LogSlot::kPosition && kind != LogSlot::kRequestIndex) room += 8 + 4 * size_t{n_};
  }
  own_size_ = room;
  own_.reset(new char[room]);  // Not zero-filled: every byte used is written.
  top_.reserve(16 + layout.kinds.size() * (6 + 4 * size_t{t_}) + 64 * size_t{t_});
  top_numbers_.resize(t_);
  char* p = Take(1);
  *p = kAllTag;
  char* end = PutInts(order_, n_, Take(1 + 4 * size_t{n_}));
  Own(p, end);
  own_used_ = static_cast<size_t>(end - own_.get());
  top_.push_back(kTopTag);
  TopInts(nullptr);
}

char* ColumnsWriter::Take(size_t bytes) {
  char* p = own_.get() + own_used_;
  own_used_ += bytes;
  return p;
}

void ColumnsWriter::Own(const char* begin, const char* end) {
  const size_t size = static_cast<size_t>(end - begin);
  if (!all_.empty() && all_.back().data() + all_.back().size() == begin) {
    all_.back() = absl::string_view(all_.back().data(), all_.back().size() + size);
  } else {
    all_.emplace_back(begin, size);
  }
}

void ColumnsWriter::External(const char* data, size_t size) { all_.emplace_back(data, size); }

char* ColumnsWriter::PutInts(const uint32_t* values, size_t n, char* p) {
  uint32_t max = 0;
  for (size_t j = 0; j < n; ++j) max = std::max(max, values[j]);
  const uint8_t width = WidthOf(max);
  *p++ = static_cast<char>(width);
  if (width == 4) {
    std::memcpy(p, values, 4 * n);
  } else if (width == 2) {
    for (size_t j = 0; j < n; ++j) {
      const auto v = static_cast<uint16_t>(values[j]);
      std::memcpy(p + 2 * j, &v, 2);
    }
  } else {
    for (size_t j = 0; j < n; ++j) p[j] = static_cast<char>(values[j]);
  }
  return p + width * n;
}

void ColumnsWriter::TopInts(const uint32_t* values) {
  uint32_t gathered[256];
  std::vector<uint32_t> more;
  uint32_t* g = gathered;
  if (t_ > 256) {
    more.resize(t_);
    g = more.data();
  }
  for (uint32_t j = 0; j < t_; ++j) g[j] = values == nullptr ? order_[j] : values[order_[j]];
  const size_t at = top_.size();
  top_.resize(at + 1 + 4 * size_t{t_});
  char* end = PutInts(g, t_, top_.data() + at);
  top_.resize(static_cast<size_t>(end - top_.data()));
}

void ColumnsWriter::ItemIds(absl::string_view bytes, const uint32_t* ends) {
  // "#1": each id's length, then the bytes as the caller holds them.
  lengths_.resize(n_);
  for (uint32_t c = 0; c < n_; ++c) lengths_[c] = ends[c] - (c == 0 ? 0 : ends[c - 1]);
  char* start = own_.get() + own_used_;
  char* end = PutInts(lengths_.data(), n_, start);
  own_used_ = static_cast<size_t>(end - own_.get());
  Own(start, end);
  if (n_ > 0) External(bytes.data(), ends[n_ - 1]);
  // "#0": the top items' lengths, then their bytes.
  TopInts(lengths_.data());
  for (uint32_t j = 0; j < t_; ++j) {
    const uint32_t c = order_[j];
    const uint32_t begin = c == 0 ? 0 : ends[c - 1];
    top_.append(bytes.data() + begin, ends[c] - begin);
  }
}

void ColumnsWriter::Ints(const uint32_t* values) {
  char* start = own_.get() + own_used_;
  char* end = PutInts(values, n_, start);
  own_used_ = static_cast<size_t>(end - own_.get());
  Own(start, end);
  TopInts(values);
}

void ColumnsWriter::Strings(const uint32_t* indexes) { Ints(indexes); }

void ColumnsWriter::PutNumbers(const char* values, char* form, bool in_own) {
  // "#0" first: the top items' values, in position order (in place, "#1"'s
  // form is written over `values`).
  for (uint32_t j = 0; j < t_; ++j) {
    std::memcpy(&top_numbers_[j], values + 4 * size_t{order_[j]}, 4);
  }
  const char* gathered = reinterpret_cast<const char*>(top_numbers_.data());
  const NumberPlan top_plan = PlanNumbers(gathered, t_);
  const size_t at = top_.size();
  top_.resize(at + 6 + 4 * size_t{t_});
  char* top_end = WriteNumbers(top_plan, gathered, t_, top_.data() + at);
  top_.resize(static_cast<size_t>(top_end - top_.data()));
  const NumberPlan plan = PlanNumbers(values, n_);
  if (plan.form == ColumnForm::kRaw && !in_own) {
    // The caller's column as it is.
    *form = static_cast<char>(ColumnForm::kRaw);
    own_used_ = static_cast<size_t>(form + 1 - own_.get());
    Own(form, form + 1);
    External(values, 4 * size_t{n_});
  } else {
    char* end = WriteNumbers(plan, values, n_, form);
    own_used_ = static_cast<size_t>(end - own_.get());
    Own(form, end);
  }
}

void ColumnsWriter::Numbers(const float* values) {
  PutNumbers(reinterpret_cast<const char*>(values), own_.get() + own_used_, false);
}

void ColumnsWriter::Numbers(const double* values) {
  // Converted into own_ right after the form byte: raw, they are the
  // column already; another form is written over them.
  char* form = own_.get() + own_used_;
  ToBinary32(values, n_, form + 1);
  PutNumbers(form + 1, form, true);
}

// ---------------------------------------------------------------------------
// Reader.

namespace {

// An integer array of `count` values: its width byte (1, 2 or 4), then
// the values; the column points at the values.
bool ReadInts(coding::Reader& r, size_t count, const char* what, uint8_t* width,
              const char** data) {
  *width = r.Byte(what);
  if (r.ok() && *width != 1 && *width != 2 && *width != 4) {
    r.Fail(what, absl::StrCat("integer width ", *width, " (1, 2 or 4)"));
  }
  if (!r.ok()) return false;
  *data = r.Bytes(uint64_t{*width} * count, what).data();
  return r.ok();
}

inline uint32_t IntAt(const char* data, uint8_t width, size_t j) {
  uint32_t v = 0;
  std::memcpy(&v, data + size_t{width} * j, width);
  return v;
}

}  // namespace

uint32_t ColumnsReader::Int(const Column& column, size_t j) const {
  return IntAt(column.data, column.width, j);
}

float ColumnsReader::Number(const Column& column, size_t j) const {
  switch (column.form) {
    case ColumnForm::kConstant:
      return LogFloat(IntAt(column.data, 4, 0));
    case ColumnForm::kTopByte:
      return LogFloat(IntAt(column.data, 3, j) | uint32_t{column.top} << 24);
    case ColumnForm::kWhole:
      return static_cast<float>(IntAt(column.data, column.width, j));
    case ColumnForm::kRaw:
      break;
  }
  return LogFloat(IntAt(column.data, 4, j));
}

uint32_t ColumnsReader::position(size_t j) const {
  return all_ ? position_[j] : static_cast<uint32_t>(j);
}

uint32_t ColumnsReader::request_index(size_t j) const {
  return all_ ? static_cast<uint32_t>(j) : Int(order_, j);
}

absl::StatusOr<ColumnsReader> ColumnsReader::ParseTop(const ColumnsLayout& layout,
                                                      absl::string_view value) {
  return Parse(layout, value, false);
}

absl::StatusOr<ColumnsReader> ColumnsReader::ParseAll(const ColumnsLayout& layout,
                                                      absl::string_view value) {
  return Parse(layout, value, true);
}

absl::StatusOr<ColumnsReader> ColumnsReader::Parse(const ColumnsLayout& layout,
                                                   absl::string_view value, bool all) {
  const char* field = all ? "\"#1\"" : "\"#0\"";
  if (layout.items == 0) return Corrupt(absl::StrCat(field, " beside a layout of no items"));
  if (value.empty() || value[0] != (all ? kAllTag : kTopTag)) {
    return Corrupt(absl::StrCat(field, " does not start with '", all ? "A" : "T", "'"));
  }
  coding::Reader r(value.substr(1), kContext, 1);
  ColumnsReader out;
  out.layout_ = &layout;
  out.all_ = all;
  out.count_ = all ? layout.items : layout.top_items;
  const uint32_t n = out.count_;
  if (!ReadInts(r, n, "order", &out.order_.width, &out.order_.data)) return r.status();
  // The order: request indexes below the item count, none twice (for "#1"
  // a permutation, as it holds every item).
  std::vector<uint32_t> position(layout.items, UINT32_MAX);
  for (uint32_t p = 0; p < n; ++p) {
    const uint32_t c = out.Int(out.order_, p);
    if (c >= layout.items || position[c] != UINT32_MAX) {
      return Corrupt(absl::StrCat(field, ": the order names request index ", c,
                                  c >= layout.items ? " of too few items" : " twice"));
    }
    position[c] = p;
  }
  if (all) out.position_ = std::move(position);
  for (LogSlot kind : layout.kinds) {
    Column& column = out.columns_.emplace_back();
    column.kind = kind;
    switch (kind) {
      case LogSlot::kPosition:
      case LogSlot::kRequestIndex:
        break;
      case LogSlot::kItemId:
        RETURN_IF_ERROR(out.ParseIds(r, field, &column));
        break;
      case LogSlot::kInt:
      case LogSlot::kString:
        if (!ReadInts(r, n, kind == LogSlot::kInt ? "ints" : "string indexes", &column.width,
                      &column.data)) {
          return r.status();
        }
        for (uint32_t j = 0; kind == LogSlot::kString && j < n; ++j) {
          if (out.Int(column, j) >= layout.strings.size()) {
            return Corrupt(absl::StrCat(field, ": a string index past the layout's table"));
          }
        }
        break;
      case LogSlot::kNumber:
        RETURN_IF_ERROR(ParseNumbers(r, n, field, &column));
        break;
    }
    if (!r.ok()) return r.status();
  }
  if (!r.empty()) return Corrupt(absl::StrCat("bytes after ", field, "'s last column"));
  return out;
}

absl::Status ColumnsReader::ParseIds(coding::Reader& r, const char* field, Column* column) {
  const uint32_t n = count_;
  if (!ReadInts(r, n, "id lengths", &column->width, &column->data)) return r.status();
  id_begin_.assign(1, 0);
  uint64_t total = 0;
  for (uint32_t j = 0; j < n; ++j) {
    const uint32_t length = Int(*column, j);
    if (length == 0) return Corrupt(absl::StrCat(field, ": an empty item id"));
    total += length;
    if (total > r.remaining()) return Corrupt(absl::StrCat(field, ": ids past the value"));
    id_begin_.push_back(static_cast<uint32_t>(total));
  }
  ids_ = r.Bytes(total, "ids").data();
  absl::flat_hash_set<absl::string_view> seen;
  seen.reserve(n);
  for (uint32_t j = 0; j < n; ++j) {
    if (!seen.insert(id(j)).second) return Corrupt(absl::StrCat(field, " holds an item id twice"));
  }
  return absl::OkStatus();
}

absl::Status ColumnsReader::ParseNumbers(coding::Reader& r, uint32_t n, const char* field,
                                         Column* column) {
  const uint8_t form = r.Byte("number form");
  column->form = static_cast<ColumnForm>(form);
  if (form == static_cast<uint8_t>(ColumnForm::kRaw)) {
    column->data = r.Bytes(4 * uint64_t{n}, "numbers").data();
  } else if (form == static_cast<uint8_t>(ColumnForm::kConstant)) {
    column->data = r.Bytes(4, "constant").data();
  } else if (form == static_cast<uint8_t>(ColumnForm::kTopByte)) {
    column->top = r.Byte("top byte");
    column->width = 3;
    column->data = r.Bytes(3 * uint64_t{n}, "numbers").data();
  } else if (form == static_cast<uint8_t>(ColumnForm::kWhole)) {
    ReadInts(r, n, "whole numbers", &column->width, &column->data);
  } else if (r.ok()) {
    return Corrupt(absl::StrCat(field, ": number form ", form));
  }
  return r.status();
}

absl::StatusOr<std::string> ColumnsReader::Render(size_t j) const {
  const ColumnsLayout& layout = *layout_;
  return RenderLogLine(layout, "log columns", [&](size_t s, std::string* out) {
    const Column& column = columns_[s];
    switch (column.kind) {
      case LogSlot::kItemId:
        out->append(id(j).data(), id(j).size());
        break;
      case LogSlot::kPosition:
        absl::StrAppend(out, position(j) + 1);
        break;
      case LogSlot::kRequestIndex:
        absl::StrAppend(out, request_index(j) + 1);
        break;
      case LogSlot::kInt:
        absl::StrAppend(out, Int(column, j));
        break;
      case LogSlot::kString:
        out->append(layout.strings[Int(column, j)]);
        break;
      case LogSlot::kNumber:
        AppendLogNumberText(Number(column, j), out);
        break;
    }
  });
}

absl::Status CheckTopAgrees(const ColumnsReader& top, const ColumnsReader& all) {
  for (size_t j = 0; j < top.size(); ++j) {
    const size_t c = top.request_index(j);
    absl::StatusOr<std::string> a = top.Render(j);
    absl::StatusOr<std::string> b = all.Render(c);
    if (!a.ok()) return a.status();
    if (!b.ok()) return b.status();
    if (all.position(c) != j || *a != *b) {
      return Corrupt(absl::StrCat("\"#0\" and \"#1\" disagree on the item at position ", j + 1));
    }
  }
  return absl::OkStatus();
}

}  // namespace rankwire::logstore
