#include "logstore/packed_fields.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace rankwire::logstore {

char* PackedFields::PutBulk(char* p, absl::string_view bytes) {
  *p++ = '$';
  p = std::to_chars(p, p + 20, bytes.size()).ptr;
  *p++ = '\r';
  *p++ = '\n';
  std::memcpy(p, bytes.data(), bytes.size());
  p += bytes.size();
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

absl::string_view PackedFields::NextBulk(const char** p) {
  // Our own bytes, written by Add: '$' digits "\r\n" bytes "\r\n".
  const char* q = *p + 1;
  size_t length = 0;
  while (*q != '\r') length = length * 10 + static_cast<size_t>(*q++ - '0');
  q += 2;
  *p = q + length + 2;
  return absl::string_view(q, length);
}

PackedFields& PackedFields::operator=(const PackedFields& other) {
  if (this == &other) return *this;
  size_ = 0;
  Reserve(other.size_);
  if (other.size_ > 0) std::memcpy(buffer_.get(), other.buffer_.get(), other.size_);
  size_ = other.size_;
  count_ = other.count_;
  value_bytes_ = other.value_bytes_;
  return *this;
}

void PackedFields::Grow(size_t bytes) {
  capacity_ = std::max(2 * capacity_, size_ + bytes + 4096);
  // Not make_unique: it zero-fills, ~130 KB a request for bytes that are
  // written next.
  std::unique_ptr<char[]> grown(new char[capacity_]);
  if (size_ > 0) std::memcpy(grown.get(), buffer_.get(), size_);
  buffer_ = std::move(grown);
}

void PackedFields::Add(absl::string_view name, absl::string_view value) {
  char* p = Reserved(2 * kMaxHeader + name.size() + value.size() + 4);
  char* start = p;
  p = PutBulk(PutBulk(p, name), value);
  size_ += static_cast<size_t>(p - start);
  ++count_;
  value_bytes_ += value.size();
}

}  // namespace rankwire::logstore
