#include "logstore/format/packed_fields.h"

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

size_t PackedFields::NextHeader(const char** p) {
  // Our own bytes, written by Add: '$' digits "\r\n".
  const char* q = *p + 1;
  size_t length = 0;
  while (*q != '\r') length = length * 10 + static_cast<size_t>(*q++ - '0');
  *p = q + 2;
  return length;
}

bool PackedFields::Cursor::Next(absl::string_view* name, absl::string_view* value) {
  if (left_ == 0) return false;
  --left_;
  const char* base = fields_.buffer_.get();
  absl::string_view* out[] = {name, value};
  for (absl::string_view* bulk : out) {
    const char* p = base + at_;
    const size_t length = NextHeader(&p);
    at_ = static_cast<size_t>(p - base);
    const auto& external = fields_.external_;
    if (external_ < external.size() && external[external_].at == at_) {
      // A value of pieces: every piece after this offset.
      joined_.clear();
      joined_.reserve(length);
      for (; external_ < external.size() && external[external_].at == at_; ++external_) {
        joined_.append(external[external_].piece.data(), external[external_].piece.size());
      }
      *bulk = joined_;
      at_ += 2;
    } else {
      *bulk = absl::string_view(p, length);
      at_ += length + 2;
    }
  }
  return true;
}

void PackedFields::Wire(std::vector<absl::string_view>* pieces) const {
  size_t from = 0;
  for (const External& e : external_) {
    if (e.at > from) pieces->emplace_back(buffer_.get() + from, e.at - from);
    pieces->push_back(e.piece);
    from = e.at;
  }
  if (size_ > from) pieces->emplace_back(buffer_.get() + from, size_ - from);
}

std::string PackedFields::WireBytes() const {
  std::vector<absl::string_view> pieces;
  Wire(&pieces);
  std::string out;
  for (absl::string_view piece : pieces) out.append(piece.data(), piece.size());
  return out;
}

PackedFields& PackedFields::operator=(const PackedFields& other) {
  if (this == &other) return *this;
  size_ = 0;
  Reserve(other.size_);
  if (other.size_ > 0) std::memcpy(buffer_.get(), other.buffer_.get(), other.size_);
  size_ = other.size_;
  count_ = other.count_;
  value_bytes_ = other.value_bytes_;
  external_ = other.external_;
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

void PackedFields::AddPieces(absl::string_view name, absl::Span<const absl::string_view> pieces) {
  size_t length = 0;
  for (absl::string_view piece : pieces) length += piece.size();
  char* p = Reserved(2 * kMaxHeader + name.size() + 4);
  char* start = p;
  p = PutBulk(p, name);
  *p++ = '$';
  p = std::to_chars(p, p + 20, length).ptr;
  *p++ = '\r';
  *p++ = '\n';
  size_ += static_cast<size_t>(p - start);
  for (absl::string_view piece : pieces) {
    if (!piece.empty()) external_.push_back(External{size_, piece});
  }
  p = buffer_.get() + size_;
  *p++ = '\r';
  *p++ = '\n';
  size_ += 2;
  ++count_;
  value_bytes_ += length;
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
