// Log columns (layout version 3): a request's log lines stored as the
// ranker holds them, a column per value slot, rendered back to the exact
// text on read.
//
// Every line of a request is the same literal text (its header, labels)
// with the item's values in between. The ranker holds each value slot as a
// column in request order (the order the candidates came in), beside the
// rank order. The store keeps (docs/LOGS.md specifies the bytes):
//
//   - field ""   the LAYOUT ('L', version 3): the literal pieces, the kind
//                of each value slot between them, the string table, the
//                item count and how many items field "#0" holds;
//   - field "#0" TOP ('T'): the first `top_items` items by position (what
//                a caller shows), each column gathered in position order,
//                so reading them reads one small value;
//   - field "#1" ALL ('A'): every item, each column in request order as
//                the ranker holds it (ids end to end, numbers as
//                binary32), and the rank order once.
//
// Nothing is chosen per value: a number column is stored as binary32, or
// once when every value is the same, or with its one shared top byte once,
// or as small whole numbers, whichever one pass over the column finds.
// Field "#1" is mostly the ranker's own memory: the writer hands its
// columns to the socket as they are (pieces pointing into the caller's
// arrays), and copies only what it converts (doubles to binary32, indexes
// to their width).
//
// Writing: a ColumnsLayout, then a ColumnsWriter fed column by column in
// slot order. Reading: ColumnsLayout::Parse, then ColumnsReader::Parse of
// "#0" or "#1", which checks the whole value against every rule LOGS.md
// lists whatever is asked of it afterwards.
//
// Thread safety: plain values; a writer or reader is used by one thread.
#ifndef RANKWIRE_LOGSTORE_FORMAT_LOG_COLUMNS_H_
#define RANKWIRE_LOGSTORE_FORMAT_LOG_COLUMNS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codec/coding.h"
#include "logstore/format/log_blocks.h"

namespace rankwire::logstore {

inline constexpr uint8_t kColumnsLayoutVersion = 3;
inline constexpr char kTopTag = 'T';
inline constexpr char kAllTag = 'A';
// The fields of a version-3 request beside its layout.
inline constexpr absl::string_view kTopField = "#0";
inline constexpr absl::string_view kAllField = "#1";

// How "#0" and "#1" store one number column.
enum class ColumnForm : uint8_t {
  kRaw = 0,       // count x 4 bytes, little-endian binary32.
  kConstant = 1,  // one binary32, every item's.
  kTopByte = 2,   // the shared top byte, then count x the low 3 bytes.
  kWhole = 3,     // an integer array: the binary32 of each (small whole numbers).
};

struct ColumnsLayout {
  std::vector<std::string> pieces;  // kinds.size() + 1 of them.
  std::vector<LogSlot> kinds;
  std::vector<std::string> strings;
  uint32_t items = 0;
  uint32_t top_items = 0;  // Items in "#0": 1..items (0 when items is 0).

  // Appends the layout value to `out`.
  void AppendTo(std::string* out) const;
  std::string Serialize() const {
    std::string out;
    AppendTo(&out);
    return out;
  }
  // DataLoss for a value that is not a well-formed version-3 layout.
  static absl::StatusOr<ColumnsLayout> Parse(absl::string_view value);
  // Whether a layout value is version 3, without parsing it.
  static bool IsColumns(absl::string_view value);
};

// Writes "#0" and "#1" of a request, column by column: one call per slot
// of the layout that has bytes (none for kPosition and kRequestIndex), in
// slot order, each with the slot's values for every item in request order
// (layout.items of them). Then top() and all().
//
//   ColumnsWriter writer(layout, order);
//   writer.ItemIds(ids, ends); writer.Numbers(column_1); ...
//   fields->Add(kTopField, writer.top());
//   fields->AddPieces(kAllField, writer.all());
//
// Arrays given to ItemIds and to Numbers(const float*) may end up in all()
// as they are, not copied: they must outlive the use of all().
class ColumnsWriter {
 public:
  // `order[r]`: the request index of the item at position r + 1
  // (layout.items of them, a permutation).
  ColumnsWriter(const ColumnsLayout& layout, const uint32_t* order);
  ColumnsWriter(const ColumnsWriter&) = delete;
  ColumnsWriter& operator=(const ColumnsWriter&) = delete;

  // The ids end to end; ends[c] is where item c's ends.
  void ItemIds(absl::string_view bytes, const uint32_t* ends);
  void Ints(const uint32_t* values);
  void Strings(const uint32_t* indexes);
  void Numbers(const float* values);
  // Each value as binary32 (the conversion the line prints).
  void Numbers(const double* values);

  // Field "#0"'s value.
  absl::string_view top() const { return top_; }
  // Field "#1"'s value, as pieces end to end.
  const std::vector<absl::string_view>& all() const { return all_; }

 private:
  // Room in own_ for `bytes` more; returns where.
  char* Take(size_t bytes);
  // A piece of own_ from `begin` to `end` (joined to the last piece when
  // they touch), or of the caller's memory.
  void Own(const char* begin, const char* end);
  void External(const char* data, size_t size);
  // Writes the integer array of `values` (n of them) at `p`: its width
  // byte, then the values; returns the end.
  static char* PutInts(const uint32_t* values, size_t n, char* p);
  // The top's copy of a column of ints: values[order[j]].
  void TopInts(const uint32_t* values);
  // One number column (n binary32 at `values`, little-endian, any
  // alignment) in its form, its form byte at `form`; `in_own` says whether
  // `values` is in own_ right after `form` (then written over in place).
  void PutNumbers(const char* values, char* form, bool in_own);

  const uint32_t n_;
  const uint32_t t_;
  const uint32_t* order_;
  std::unique_ptr<char[]> own_;  // Sized from above once: never moves.
  size_t own_used_ = 0;
  size_t own_size_ = 0;
  std::vector<absl::string_view> all_;
  std::string top_;
  std::vector<float> top_numbers_;  // Scratch: one column's top values.
  std::vector<uint32_t> lengths_;   // Scratch: the ids' lengths.
};

// One decoded "#0" or "#1" value: its items' ids, positions and request
// indexes, and each item's text. The value must outlive the reader (ids
// and columns are views into it).
class ColumnsReader {
 public:
  // DataLoss if `value` is not a well-formed "#0" (top) or "#1" value of
  // `layout`, checked whole: every rule of docs/LOGS.md.
  static absl::StatusOr<ColumnsReader> ParseTop(const ColumnsLayout& layout,
                                                absl::string_view value);
  static absl::StatusOr<ColumnsReader> ParseAll(const ColumnsLayout& layout,
                                                absl::string_view value);

  size_t size() const { return count_; }
  absl::string_view id(size_t j) const {
    return absl::string_view(ids_ + id_begin_[j], id_begin_[j + 1] - id_begin_[j]);
  }
  // Item j's position (0-based) and request index.
  uint32_t position(size_t j) const;
  uint32_t request_index(size_t j) const;
  // Item j's text. ResourceExhausted past kMaxLogLineBytes.
  absl::StatusOr<std::string> Render(size_t j) const;

 private:
  struct Column {
    LogSlot kind = LogSlot::kPosition;
    ColumnForm form = ColumnForm::kRaw;
    uint8_t width = 0;  // Of an integer array; 3 for kTopByte's low bytes.
    uint8_t top = 0;    // kTopByte's.
    const char* data = nullptr;
  };
  static absl::StatusOr<ColumnsReader> Parse(const ColumnsLayout& layout, absl::string_view value,
                                             bool all);
  // The id column of count_ items (lengths, then bytes; none empty, none
  // twice) and a number column of `n` items, from `r`.
  absl::Status ParseIds(coding::Reader& r, const char* field, Column* column);
  static absl::Status ParseNumbers(coding::Reader& r, uint32_t n, const char* field,
                                   Column* column);
  uint32_t Int(const Column& column, size_t j) const;
  float Number(const Column& column, size_t j) const;

  const ColumnsLayout* layout_ = nullptr;
  bool all_ = false;
  uint32_t count_ = 0;
  Column order_;                    // Request index by position.
  std::vector<uint32_t> position_;  // "#1": each item's position.
  const char* ids_ = nullptr;
  std::vector<uint32_t> id_begin_;  // count_ + 1 offsets into ids_.
  std::vector<Column> columns_;     // One per slot.
};

// OK when "#0" (`top`) repeats the first top_items positions of "#1"
// (`all`) of the same request: the same items, the same text. DataLoss
// otherwise.
absl::Status CheckTopAgrees(const ColumnsReader& top, const ColumnsReader& all);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_FORMAT_LOG_COLUMNS_H_
