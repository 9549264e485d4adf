// PackedFields is one request's hash fields laid out as Redis's HSET takes
// its arguments on the wire: for each field its name, then its value, each
// a RESP bulk string ("$<length>\r\n<bytes>\r\n"). The log writer formats
// every field once, straight into the bytes it sends; before, each item's
// value was a std::string of its own that hiredis then formatted again
// (1,000 arguments per request, each through its own length formatting).
// The in-process store and tests read the fields back (Cursor, ForEach).
//
// Example:
//   PackedFields fields;
//   fields.Add("sku-1", "Tthe line");
//   fields.ForEach([](absl::string_view name, absl::string_view value) {...});
//
// Thread safety: a plain value; one writer at a time.
#ifndef RANKWIRE_LOGSTORE_PACKED_FIELDS_H_
#define RANKWIRE_LOGSTORE_PACKED_FIELDS_H_

#include <cassert>
#include <cstddef>
#include <memory>
#include <utility>

#include "absl/strings/string_view.h"

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
    return *this;
  }
  PackedFields(const PackedFields& other) { *this = other; }
  PackedFields& operator=(const PackedFields& other);

  // Appends a field.
  void Add(absl::string_view name, absl::string_view value);

  // Fields and bytes so far; a mark to roll back to (a renderer that finds
  // it cannot finish takes back what it added).
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  struct Mark {
    size_t bytes = 0;
    size_t count = 0;
    size_t value_bytes = 0;
  };
  Mark mark() const { return Mark{size_, count_, value_bytes_}; }
  // REQUIRES: `m` is a mark of this object's, taken no earlier than the
  // last RollBack to an earlier mark.
  void RollBack(Mark m) {
    assert(m.bytes <= size_ && m.count <= count_);
    size_ = m.bytes;
    count_ = m.count;
    value_bytes_ = m.value_bytes;
  }
  void Reserve(size_t bytes) {
    if (capacity_ - size_ < bytes) Grow(bytes);
  }

  // The fields' bulk strings, name value name value ..., as sent after
  // "HSET key".
  absl::string_view wire() const { return absl::string_view(buffer_.get(), size_); }
  // The values' bytes alone (what the store is said to hold).
  size_t value_bytes() const { return value_bytes_; }

  // Reads the fields back in the order added:
  //   PackedFields::Cursor c(fields);
  //   for (absl::string_view name, value; c.Next(&name, &value);) ...
  // Valid while `fields` is not changed.
  class Cursor {
   public:
    explicit Cursor(const PackedFields& fields) : p_(fields.buffer_.get()), left_(fields.count_) {}
    bool Next(absl::string_view* name, absl::string_view* value) {
      if (left_ == 0) return false;
      --left_;
      *name = NextBulk(&p_);
      *value = NextBulk(&p_);
      return true;
    }

   private:
    const char* p_;
    size_t left_;
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
  static absl::string_view NextBulk(const char** p);
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
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_PACKED_FIELDS_H_
