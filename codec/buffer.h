// Byte buffers that cross the codec boundary.
//
// OwnedBuffer is what an encoder writes into: one heap allocation, sized up
// front, not zero-filled. The server shares it with a gRPC slice, which drops
// its reference after the bytes are on the wire, so the encoded payload is
// never copied.
//
// SharedBytes is what a decoder reads from: a read-only view plus a shared
// handle on whatever keeps the bytes alive (an OwnedBuffer, a std::string, a
// gRPC slice). Lazy result views hold one, so they stay valid on their own.
//
// Thread safety: OwnedBuffer is a plain movable value. SharedBytes may be
// copied and read from many threads.
#ifndef RANKWIRE_CODEC_BUFFER_H_
#define RANKWIRE_CODEC_BUFFER_H_

#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace rankwire {

class OwnedBuffer {
 public:
  OwnedBuffer() = default;
  // Uninitialized storage for `capacity` bytes; size() starts at 0.
  static OwnedBuffer Allocate(size_t capacity) {
    OwnedBuffer b;
    b.data_.reset(new char[capacity > 0 ? capacity : 1]);
    b.capacity_ = capacity;
    return b;
  }
  static OwnedBuffer CopyOf(absl::string_view bytes) {
    OwnedBuffer b = Allocate(bytes.size());
    if (!bytes.empty()) std::memcpy(b.data(), bytes.data(), bytes.size());
    b.set_size(bytes.size());
    return b;
  }

  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  // REQUIRES: n <= capacity().
  void set_size(size_t n) { size_ = n; }
  absl::string_view view() const { return absl::string_view(data(), size_); }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

class SharedBytes {
 public:
  SharedBytes() = default;
  SharedBytes(std::shared_ptr<const void> owner, absl::string_view bytes)
      : owner_(std::move(owner)), bytes_(bytes) {}

  static SharedBytes FromBuffer(OwnedBuffer buffer) {
    auto owner = std::make_shared<OwnedBuffer>(std::move(buffer));
    absl::string_view bytes = owner->view();
    return SharedBytes(std::move(owner), bytes);
  }
  static SharedBytes FromString(std::string s) {
    auto owner = std::make_shared<std::string>(std::move(s));
    absl::string_view bytes = *owner;
    return SharedBytes(std::move(owner), bytes);
  }
  // No ownership: the caller keeps `bytes` alive for as long as this and
  // anything opened over it live.
  static SharedBytes Unowned(absl::string_view bytes) { return SharedBytes(nullptr, bytes); }

  // A view of `part`, which must lie inside view(), sharing this owner.
  SharedBytes Share(absl::string_view part) const { return SharedBytes(owner_, part); }

  absl::string_view view() const { return bytes_; }
  const char* data() const { return bytes_.data(); }
  size_t size() const { return bytes_.size(); }

 private:
  std::shared_ptr<const void> owner_;
  absl::string_view bytes_;
};

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_BUFFER_H_
