// PackedFields is one request's hash fields laid out as Redis's HSET takes
// its arguments on the wire: for each field its name, then its value, each
// a RESP bulk string ("$<length>\r\n<bytes>\r\n"). The log writer formats
// every field once, straight into the bytes it sends; before, each item's
// value was a std::string of its own that hiredis then formatted again
// (1,000 arguments per request, each through its own length formatting).
// The in-process store and tests read the fields back (Cursor, ForEach).
//
// A value may also be added as pieces that stay where they are
// (AddPieces): the log writer's largest value is mostly the ranker's own
// columns, sent to the socket from their memory (one sendmsg of many
// pieces, Wire()) instead of copied here first. Whoever owns those pieces
// keeps them alive while the fields are used (SinkEntry::keep).
//
// Example:
//   PackedFields fields;
//   fields.Add("sku-1", "Tthe line");
//   fields.AddPieces("#1", {column_a, column_b});
//   fields.ForEach([](absl::string_view name, absl::string_view value) {...});
//
// Thread safety: a plain value; one writer at a time.
#ifndef RANKWIRE_LOGSTORE_FORMAT_PACKED_FIELDS_H_
#define RANKWIRE_LOGSTORE_FORMAT_PACKED_FIELDS_H_

#include <cassert>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace rankwire::logstore {

class PackedFields {
 public:
  PackedFields() = default;
  // A moved-from PackedFields is empty and usable.
  PackedFields(PackedFields&& other) noexcept { *this = std::move(other); }
  PackedFields& operator=(PackedFields&& other) noexcept {
    buffer_ = std::move(other.buffer_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    count_ = std::exchange(other.count_, 0);
    value_bytes_ = std::exchange(other.value_bytes_, 0);
    external_ = std::move(other.external_);
    other.external_.clear();
    return *this;
  }
  // A copy shares the pieces AddPieces added (it does not copy them).
  PackedFields(const PackedFields& other) { *this = other; }
  PackedFields& operator=(const PackedFields& other);

  // Appends a field.
  void Add(absl::string_view name, absl::string_view value);
  // Appends a field whose value is `pieces` end to end. The pieces are not
  // copied: they must outlive every use of this object.
  void AddPieces(absl::string_view name, absl::Span<const absl::string_view> pieces);

  // Fields and bytes so far; a mark to roll back to (a renderer that finds
  // it cannot finish takes back what it added).
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  struct Mark {
    size_t bytes = 0;
    size_t count = 0;
    size_t value_bytes = 0;
    size_t external = 0;
  };
  Mark mark() const { return Mark{size_, count_, value_bytes_, external_.size()}; }
  // REQUIRES: `m` is a mark of this object's, taken no earlier than the
  // last RollBack to an earlier mark.
  void RollBack(Mark m) {
    assert(m.bytes <= size_ && m.count <= count_);
    size_ = m.bytes;
    count_ = m.count;
    value_bytes_ = m.value_bytes;
    external_.resize(m.external);
  }
  void Reserve(size_t bytes) {
    if (capacity_ - size_ < bytes) Grow(bytes);
  }

  // The fields' bulk strings, name value name value ..., as sent after
  // "HSET key": appended to `pieces` (the buffer's bytes between the
  // pieces AddPieces added, and those pieces).
  void Wire(std::vector<absl::string_view>* pieces) const;
  // The same in one string (a copy: for tests).
  std::string WireBytes() const;
  // The values' bytes alone (what the store is said to hold).
  size_t value_bytes() const { return value_bytes_; }

  // Reads the fields back in the order added:
  //   PackedFields::Cursor c(fields);
  //   for (absl::string_view name, value; c.Next(&name, &value);) ...
  // Valid while `fields` is not changed; a value added as pieces is joined
  // into the cursor's own string, valid until the next Next().
  class Cursor {
   public:
    explicit Cursor(const PackedFields& fields) : fields_(fields), left_(fields.count_) {}
    bool Next(absl::string_view* name, absl::string_view* value);

   private:
    const PackedFields& fields_;
    size_t at_ = 0;        // Offset in the buffer.
    size_t external_ = 0;  // The next piece AddPieces added.
    size_t left_;
    std::string joined_;
  };

  // Calls f(name, value) for every field, in the order added.
  template <typename F>
  void ForEach(F&& f) const {
    Cursor cursor(*this);
    for (absl::string_view name, value; cursor.Next(&name, &value);) f(name, value);
  }

 private:
  // A bulk string's header: '$', up to 20 digits, "\r\n".
  static constexpr size_t kMaxHeader = 23;
  // Writes `bytes` as a bulk string at `p`; returns its end.
  static char* PutBulk(char* p, absl::string_view bytes);
  // The bulk string's header at `*p`: its length; *p moves past the header.
  static size_t NextHeader(const char** p);
  void Grow(size_t bytes);
  char* Reserved(size_t bytes) {
    Reserve(bytes);
    return buffer_.get() + size_;
  }

  std::unique_ptr<char[]> buffer_;
  size_t size_ = 0;
  size_t capacity_ = 0;
  size_t count_ = 0;
  size_t value_bytes_ = 0;
  // Pieces of values added by AddPieces, each after buffer byte `at`.
  struct External {
    size_t at = 0;
    absl::string_view piece;
  };
  std::vector<External> external_;
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_FORMAT_PACKED_FIELDS_H_
