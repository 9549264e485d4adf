// Low-level, bounds-checked reading and writing of varints, fixed-width
// little-endian numbers and length-prefixed bytes. Every codec, the response
// envelope (codec/envelope.cc) and the log store's records and number slots
// (logstore/) use these. Three places read or write varints of their own,
// each for a reason: the request parse (request/request_view.cc, which must
// accept and refuse exactly what protobuf's parser does, past what Reader
// allows), the health check's one-field request (client/rank_client.cc)
// and the log number slot's 4-byte store (logstore/format/log_number.cc).
//
// Writing is split in two so that an encoder can allocate its output once:
// the *Length() functions give exact sizes, and Writer then writes into memory
// the caller has already sized. Writer does not check capacity in release
// builds (REQUIRES: the caller reserved what the Length() functions said).
//
// Reader never reads past its end. Reads after a failure return zero values
// and keep the first error, so a decoder can read a whole record and check
// status() once. Every read names what it reads, so errors say what was
// truncated and where, e.g. "rankbin: truncated fixed64 (item score) at
// offset 1234".
//
// Thread safety: Reader and Writer are not thread-safe; the free functions are.
#ifndef RANKWIRE_CODEC_CODING_H_
#define RANKWIRE_CODEC_CODING_H_

#include <cassert>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rankwire::coding {

inline constexpr int kMaxVarint64Length = 10;
inline constexpr int kMaxVarint32Length = 5;

// Sizes ------------------------------------------------------------------

inline size_t VarintLength(uint64_t v) {
  // 1 + floor(log2(v|1)) / 7, computed without a loop.
  int bits = 64 - __builtin_clzll(v | 1);
  return static_cast<size_t>((bits * 9 + 64) / 64);
}
inline size_t LengthPrefixedLength(size_t n) { return VarintLength(n) + n; }

inline uint64_t ZigZagEncode64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t ZigZagDecode64(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

// Raw encoders (leveldb style): write at dst, return the byte after. ------

inline char* EncodeVarint64(char* dst, uint64_t v) {
  auto* p = reinterpret_cast<uint8_t*>(dst);
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return reinterpret_cast<char*>(p);
}

inline void EncodeFixed32(char* dst, uint32_t v) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "rankwire assumes a little-endian host");
  std::memcpy(dst, &v, sizeof(v));
}
inline void EncodeFixed64(char* dst, uint64_t v) { std::memcpy(dst, &v, sizeof(v)); }
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Writer -------------------------------------------------------------------

// Appends to a caller-sized region [begin, end).
class Writer {
 public:
  Writer(char* begin, char* end) : begin_(begin), p_(begin), end_(end) {}

  void PutVarint64(uint64_t v) {
    assert(end_ - p_ >= static_cast<ptrdiff_t>(VarintLength(v)));
    p_ = EncodeVarint64(p_, v);
  }
  void PutSignedVarint64(int64_t v) { PutVarint64(ZigZagEncode64(v)); }
  // n varints. Values below 2^14 (key indexes, mostly) are stored as two
  // bytes whichever their length, the pointer then advancing by 1 or 2:
  // no branch on the length, which mispredicted on a list mixing 1- and
  // 2-byte values. For a value below 2^7 the second byte is a 0 in the
  // slot after it, which the next value overwrites: for writing into fresh
  // space only, never over bytes already written. Nothing lands past end
  // (the branchless path needs 2 bytes of room; a last value with 1 byte
  // left takes the ordinary one).
  void PutVarint32s(const uint32_t* v, size_t n) {
    for (size_t j = 0; j < n; ++j) {
      const uint32_t x = v[j];
      if (ABSL_PREDICT_TRUE(x < (1u << 14) && end_ - p_ >= 2)) {
        const uint32_t more = x >= 0x80;
        p_[0] = static_cast<char>((x & 0x7f) | (more << 7));
        p_[1] = static_cast<char>(x >> 7);
        p_ += 1 + more;
      } else {
        PutVarint64(x);
      }
    }
  }
  void PutFixed32(uint32_t v) {
    assert(end_ - p_ >= 4);
    EncodeFixed32(p_, v);
    p_ += 4;
  }
  void PutFixed64(uint64_t v) {
    assert(end_ - p_ >= 8);
    EncodeFixed64(p_, v);
    p_ += 8;
  }
  void PutFloat(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    PutFixed32(bits);
  }
  void PutDouble(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    PutFixed64(bits);
  }
  void PutBytes(absl::string_view s) {
    assert(end_ - p_ >= static_cast<ptrdiff_t>(s.size()));
    if (!s.empty()) std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }
  void PutLengthPrefixed(absl::string_view s) {
    // The length of most strings takes one or two bytes: written without
    // the varint loop. (Not in EncodeVarint64 for every varint: there the
    // extra branches made the shipped payload's encode 1.33x slower,
    // bench/ab_codec.py BM_Encode/rankbin/logs_store, 6 rounds.)
    const size_t n = s.size();
    if (n < 0x80) {
      PutByte(static_cast<uint8_t>(n));
    } else if (n < 0x4000) {
      assert(end_ - p_ >= 2);
      p_[0] = static_cast<char>(n | 0x80);
      p_[1] = static_cast<char>(n >> 7);
      p_ += 2;
    } else {
      PutVarint64(n);
    }
    PutBytes(s);
  }
  void PutByte(uint8_t b) {
    assert(p_ < end_);
    *p_++ = static_cast<char>(b);
  }
  // Reserves n bytes to be filled later (e.g. an offset known only after the
  // data it points to is written) and returns where they start.
  char* Skip(size_t n) {
    assert(end_ - p_ >= static_cast<ptrdiff_t>(n));
    char* at = p_;
    p_ += n;
    return at;
  }

  char* position() const { return p_; }
  size_t written() const { return static_cast<size_t>(p_ - begin_); }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

 private:
  char* begin_;
  char* p_;
  char* end_;
};

// Reader -------------------------------------------------------------------

class Reader {
 public:
  // `context` prefixes error messages ("rankbin", "envelope", ...).
  // `base_offset` is where `data` starts in the enclosing payload, so that
  // error offsets refer to the payload a user can inspect.
  Reader(absl::string_view data, const char* context, size_t base_offset = 0)
      : begin_(data.data()),
        p_(data.data()),
        end_(data.data() + data.size()),
        context_(context),
        base_offset_(base_offset) {}

  uint64_t Varint64(const char* what) {
    if (ABSL_PREDICT_TRUE(p_ < end_ && static_cast<uint8_t>(*p_) < 0x80)) {
      return static_cast<uint8_t>(*p_++);
    }
    // Two bytes (up to 16383: key and dictionary indexes, most lengths)
    // also stay inline; SlowVarint64 took 3-6 % of decodes that have them.
    if (end_ - p_ >= 2 && static_cast<uint8_t>(p_[1]) < 0x80) {
      const uint64_t v = (static_cast<uint8_t>(p_[0]) & 0x7fu) |
                         static_cast<uint64_t>(static_cast<uint8_t>(p_[1])) << 7;
      p_ += 2;
      return v;
    }
    return SlowVarint64(what);
  }
  // Fails if the value does not fit in 32 bits.
  uint32_t Varint32(const char* what) {
    uint64_t v = Varint64(what);
    if (ABSL_PREDICT_FALSE(v > UINT32_MAX)) {
      Fail(what, "varint exceeds 32 bits");
      return 0;
    }
    return static_cast<uint32_t>(v);
  }
  int64_t SignedVarint64(const char* what) { return ZigZagDecode64(Varint64(what)); }
  uint8_t Byte(const char* what) {
    if (ABSL_PREDICT_FALSE(p_ >= end_)) {
      Truncated(what, "byte");
      return 0;
    }
    return static_cast<uint8_t>(*p_++);
  }
  uint32_t Fixed32(const char* what) { return Fixed<uint32_t>(what, "fixed32"); }
  uint64_t Fixed64(const char* what) { return Fixed<uint64_t>(what, "fixed64"); }
  float Float(const char* what) {
    uint32_t bits = Fixed32(what);
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  double Double(const char* what) {
    uint64_t bits = Fixed64(what);
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  // n bytes as a view into the input.
  absl::string_view Bytes(uint64_t n, const char* what) {
    if (ABSL_PREDICT_FALSE(static_cast<uint64_t>(end_ - p_) < n)) {
      Truncated(what, "bytes");
      return {};
    }
    absl::string_view v(p_, static_cast<size_t>(n));
    p_ += n;
    return v;
  }
  // A varint length followed by that many bytes. The length is checked
  // against what remains before anything is done with it.
  absl::string_view LengthPrefixed(const char* what) {
    uint64_t n = Varint64(what);
    return Bytes(n, what);
  }
  // A varint element count. Each element takes at least `min_bytes_each`
  // bytes, so a count the remaining input cannot hold is rejected here,
  // before a caller sizes a container with it.
  uint64_t Count(uint64_t min_bytes_each, const char* what) {
    uint64_t n = Varint64(what);
    if (ABSL_PREDICT_FALSE(min_bytes_each > 0 && n > remaining() / min_bytes_each)) {
      Fail(what, "count exceeds the remaining bytes");
      return 0;
    }
    return n;
  }
  void Skip(uint64_t n, const char* what) { Bytes(n, what); }

  // Records a semantic error found by the caller (bad magic, index out of
  // range...). Only the first error is kept.
  void Fail(const char* what, absl::string_view problem);
  void FailWith(absl::Status status);

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  bool empty() const { return p_ >= end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  // Offset of the next byte in the enclosing payload.
  size_t offset() const { return base_offset_ + static_cast<size_t>(p_ - begin_); }
  const char* position() const { return p_; }
  absl::string_view rest() const { return absl::string_view(p_, remaining()); }

 private:
  uint64_t SlowVarint64(const char* what);
  void Truncated(const char* what, const char* kind);
  // A little-endian unsigned T (uint32_t or uint64_t), or 0 after
  // Truncated(what, kind).
  template <typename T>
  T Fixed(const char* what, const char* kind) {
    if (ABSL_PREDICT_FALSE(end_ - p_ < static_cast<ptrdiff_t>(sizeof(T)))) {
      Truncated(what, kind);
      return 0;
    }
    T v;
    std::memcpy(&v, p_, sizeof(T));  // As DecodeFixed32/64: little-endian hosts.
    p_ += sizeof(T);
    return v;
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  const char* context_;
  size_t base_offset_;
  absl::Status status_;
};

}  // namespace rankwire::coding

#endif  // RANKWIRE_CODEC_CODING_H_
