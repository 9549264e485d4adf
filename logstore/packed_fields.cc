#include "logstore/packed_fields.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace rankwire::logstore {

char* PackedFields::PutHeader(char* p, size_t length) {
  *p++ = '$';
  p = std::to_chars(p, p + 20, length).ptr;
  *p++ = '\r';
  *p++ = '\n';
  return p;
}

absl::string_view PackedFields::NextBulk(const char** p) {
  // Our own bytes, written by Add/EndValue: '$' digits "\r\n" bytes "\r\n".
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
  p = PutHeader(p, name.size());
  std::memcpy(p, name.data(), name.size());
  p += name.size();
  *p++ = '\r';
  *p++ = '\n';
  p = PutHeader(p, value.size());
  std::memcpy(p, value.data(), value.size());
  p += value.size();
  *p++ = '\r';
  *p++ = '\n';
  size_ += static_cast<size_t>(p - start);
  ++count_;
  value_bytes_ += value.size();
}

char* PackedFields::BeginValue(absl::string_view name, size_t max_value_bytes) {
  char* p = Reserved(2 * kMaxHeader + name.size() + max_value_bytes + 4);
  char* start = p;
  p = PutHeader(p, name.size());
  std::memcpy(p, name.data(), name.size());
  p += name.size();
  *p++ = '\r';
  *p++ = '\n';
  size_ += static_cast<size_t>(p - start);
  open_value_ = size_ + kMaxHeader;
  open_max_ = max_value_bytes;
  return buffer_.get() + open_value_;
}

void PackedFields::EndValue(size_t value_bytes) {
  assert(open_value_ != kNoOpenValue && value_bytes <= open_max_);
  char* header = buffer_.get() + size_;
  char* p = PutHeader(header, value_bytes);
  std::memmove(p, buffer_.get() + open_value_, value_bytes);
  p += value_bytes;
  *p++ = '\r';
  *p++ = '\n';
  size_ = static_cast<size_t>(p - buffer_.get());
  ++count_;
  value_bytes_ += value_bytes;
  open_value_ = kNoOpenValue;
}

}  // namespace rankwire::logstore
