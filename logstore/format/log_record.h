// Structured log records: a request's log lines stored as the values they
// are made of, and rendered back to the exact same text when read.
//
// A log line is literal text with values in between. Every line of one
// request has the same literal text (request header, feature and term
// labels) and differs only in its values, so the store keeps
//
//   - one LAYOUT per request (hash field "", value 'L' ...): the literal
//     pieces, the kind of each slot between them, and a table of strings
//     that slots refer to;
//   - one RECORD per item (hash field = item id, value 'R' ...): the slot
//     values in a compact binary form (varints; numbers as their six
//     significant decimal digits, which is what the text shows).
//
// Rendering is literal[0] value[0] literal[1] value[1] ... literal[n]. The
// bytes are specified in docs/LOGS.md; python/src/rankwire/logs.py is an
// independent decoder (tests/interop/test_log_decoder.py). A number slot
// renders as absl::SixDigits does (printf "%g"), so the text is
// byte-identical to the line the ranker formats inline.
//
// Writing: a LogRecordBuilder per request. The producer describes each line
// with Literal/ItemId/Int/String/Number calls; the literals of the first
// line become the layout (later lines' literals are checked only by kind
// sequence, not stored), then FinishRecord() returns the record value.
//
// Example:
//   LogRecordBuilder b;
//   for (item : items) {
//     b.Literal("item="); b.ItemId(); b.Literal(" p="); b.Number(item.p);
//     values.push_back(b.FinishRecord());
//   }
//   std::string layout = b.Layout();
//   absl::StatusOr<std::string> text = RenderLogRecord(layout, "sku-1", values[0]);
//
// Thread safety: a builder is used by one thread; the functions are pure.
#ifndef RANKWIRE_LOGSTORE_FORMAT_LOG_RECORD_H_
#define RANKWIRE_LOGSTORE_FORMAT_LOG_RECORD_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "logstore/format/log_blocks.h"
#include "logstore/format/log_number.h"
#include "logstore/format/packed_fields.h"

namespace rankwire::logstore {

inline constexpr char kLayoutTag = 'L';
inline constexpr char kRecordTag = 'R';
inline constexpr uint8_t kLayoutVersion = 1;

// What a slot holds.
enum class SlotKind : uint8_t {
  kItemId = 1,  // The item id (the hash field name); no bytes in the record.
  kInt = 2,     // A signed integer: zigzag varint, rendered in decimal.
  kString = 3,  // An index (varint) into the layout's string table.
  kNumber = 4,  // A double rendered with six significant digits ("%g").
};

// Limits a decoder enforces, so a corrupt or hostile value cannot ask for
// unbounded work or memory.
inline constexpr size_t kMaxLayoutSlots = 4096;
inline constexpr size_t kMaxLayoutStrings = 4096;
inline constexpr size_t kMaxRenderedBytes = size_t{1} << 20;

class LogRecordBuilder {
 public:
  LogRecordBuilder();
  // Not movable: a moved-from builder would write through a null buffer.
  LogRecordBuilder(LogRecordBuilder&&) = delete;
  LogRecordBuilder& operator=(LogRecordBuilder&&) = delete;

  // Describing one line, in order.
  void Literal(absl::string_view text) {
    if (capturing_) pieces_.back().append(text.data(), text.size());
  }
  void ItemId() { Slot(SlotKind::kItemId); }
  void Int(int64_t value);
  void String(absl::string_view text);
  // Numbers are coded in runs: a run of them is held until the next slot
  // of another kind or the end of the line.
  inline void Number(double value);
  // `count` number slots, each after its literal label: a line's features,
  // a head's terms. After the first line the labels are not looked at and
  // the values are held in one copy (one check of the slot kinds for the
  // run, not one per number).
  void LabeledNumbers(const std::string* labels, const double* values, size_t count);

  // Ends the current line and returns its record value ('R' + slot values).
  // The first line fixes the layout; a later line with a different slot
  // sequence marks the builder inconsistent (a programming error the
  // producer checks with consistent()).
  std::string FinishRecord();
  // The same, appended to `fields` as the field `item_id` (one copy, no
  // string of its own).
  void FinishRecordInto(absl::string_view item_id, PackedFields* fields);

  // The layout value ('L' + ...). Call after the last FinishRecord().
  std::string Layout() const;

  bool consistent() const { return consistent_; }

 private:
  // The calls above run ~100 times per line, so their common paths are
  // inline here (out of line, the calls were ~12 % of a record's cost in
  // perf); the first line's capture and buffer growth are not.
  void Slot(SlotKind kind) {
    if (capturing_) {
      CaptureSlot(kind);
    } else if (slot_ >= kinds_.size() || kinds_[slot_] != kind) {
      consistent_ = false;
    }
    ++slot_;
  }
  void CaptureSlot(SlotKind kind);
  // Room for `bytes` more at the end of the current record; returns where.
  char* Reserve(size_t bytes) {
    if (capacity_ - size_ < bytes) Grow(bytes);
    return buffer_.get() + size_;
  }
  void Grow(size_t bytes);
  void PutVarint(uint64_t v);
  // Codes the held numbers into the record.
  void FlushNumbers();
  // Ends the line's slots; the record value is then buffer_[0, size_).
  void EndLine();

  // number_run_[i]: how many slots from slot i on are numbers (set when
  // the first line ends).
  std::vector<uint32_t> number_run_;
  static constexpr size_t kHeldNumbers = 64;
  double held_[kHeldNumbers];
  size_t held_count_ = 0;

  bool capturing_ = true;  // Still in the first line.
  bool consistent_ = true;
  size_t slot_ = 0;  // Next slot of the current line.
  std::vector<std::string> pieces_{std::string()};
  std::vector<SlotKind> kinds_;
  std::vector<std::string> strings_;
  absl::flat_hash_map<std::string, uint32_t> string_index_;
  // The current record value: its tag ('R'), then the slot values. A
  // plain buffer, so a number is written in place rather than appended
  // through std::string, and a finished record is one view of it.
  std::unique_ptr<char[]> buffer_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

inline void LogRecordBuilder::Number(double value) {
  Slot(SlotKind::kNumber);
  held_[held_count_++] = value;
  if (held_count_ == kHeldNumbers) FlushNumbers();
}

// A parsed layout, reusable for the records of one request.
class LogLayout {
 public:
  // DataLoss for a value that is not a well-formed layout.
  static absl::StatusOr<LogLayout> Parse(absl::string_view value);

  // The text of the record `value` of item `item_id`. DataLoss for a value
  // that does not match the layout; ResourceExhausted above
  // kMaxRenderedBytes.
  absl::StatusOr<std::string> Render(absl::string_view item_id, absl::string_view value) const;

 private:
  std::vector<std::string> pieces_;  // kinds_.size() + 1 of them.
  std::vector<SlotKind> kinds_;
  std::vector<std::string> strings_;
};

// Parse + Render, for one record.
absl::StatusOr<std::string> RenderLogRecord(absl::string_view layout, absl::string_view item_id,
                                            absl::string_view value);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_FORMAT_LOG_RECORD_H_
