// ShortString and ShortDict: the rankbin writer's dictionary lookup for
// string values of up to 16 bytes (categories, buckets, recall sources),
// which are most of the string values a ranker emits. A value is two 64-bit
// words and a size, so a lookup hashes and compares three integers, with
// no string hash and no memcmp; the table is reused from call to call and
// cleared in O(1).
//
// Thread safety: plain values; not thread-safe (one per encoder scratch).
#ifndef RANKWIRE_CODEC_RANKBIN_SHORT_DICT_H_
#define RANKWIRE_CODEC_RANKBIN_SHORT_DICT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "codec/coding.h"

namespace rankwire::rankbin {

// A string of at most 16 bytes as two words and its size. Two short
// strings are equal exactly when their keys are: the words cover every byte
// (overlapping in the middle), so no byte comparison is needed.
struct ShortString {
  uint64_t lo = 0;
  uint64_t hi = 0;
  uint32_t size = 0;

  static constexpr size_t kMax = 16;
  // REQUIRES: v.size() <= kMax.
  static ShortString Of(absl::string_view v) {
    // Computed in locals and built at the end: filling the fields one by
    // one made the compiler assemble the struct on the stack and reload it
    // as one 16-byte word, a store-forwarding stall on every lookup.
    const char* p = v.data();
    const size_t n = v.size();
    uint64_t lo = 0;
    uint64_t hi = 0;
    if (n >= 8) {
      lo = coding::DecodeFixed64(p);
      hi = coding::DecodeFixed64(p + n - 8);
    } else if (n >= 4) {
      lo = coding::DecodeFixed32(p);
      hi = coding::DecodeFixed32(p + n - 4);
    } else if (n > 0) {
      lo = static_cast<uint8_t>(p[0]) | static_cast<uint64_t>(static_cast<uint8_t>(p[n / 2])) << 8 |
           static_cast<uint64_t>(static_cast<uint8_t>(p[n - 1])) << 16;
    }
    return ShortString{lo, hi, static_cast<uint32_t>(n)};
  }
  bool operator==(const ShortString& o) const {
    return ((lo ^ o.lo) | (hi ^ o.hi) | (size ^ o.size)) == 0;
  }
  // Every input bit reaches the low bits a table uses: values that differ
  // only in their last bytes (bucket_001, bucket_002, ...) sit in the high
  // bits of `hi`, and a multiply alone carries bits only upwards, so the
  // result goes through MurmurHash3's full 64-bit finalizer (fmix64).
  uint64_t Hash() const {
    uint64_t h = lo ^ (hi * 0x9e3779b97f4a7c15ull) ^ size;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
  }
};

// A key's dictionary entries of at most ShortString::kMax bytes: open
// addressing with linear probing over ShortStrings, so a lookup is a hash
// of two words and a compare of three, with no call to memcmp or to a
// string hash. Clear() is O(1) (an epoch), since the table is reused from
// call to call.
class ShortDict {
 public:
  // The dictionary index of `s`, or UINT32_MAX with *slot set to where it
  // would go (valid until the next Insert or Clear).
  uint32_t Find(const ShortString& s, size_t* slot) {
    if (slots_.empty()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t at = s.Hash() & mask;; at = (at + 1) & mask) {
      const Slot& e = slots_[at];
      if (e.epoch != epoch_) {
        *slot = at;
        return UINT32_MAX;
      }
      if (e.key == s) return e.index;
    }
  }
  // REQUIRES: `slot` came from Find(s) with nothing inserted since.
  void Insert(size_t slot, const ShortString& s, uint32_t index) {
    slots_[slot] = Slot{s, index, epoch_};
    if (2 * ++used_ > slots_.size()) Grow();
  }
  // Slots allocated (a power of two, or 0); memory is 32 bytes a slot.
  size_t slot_count() const { return slots_.size(); }
  void Clear() {
    used_ = 0;
    // A table grown for an earlier, larger dictionary is given back, so a
    // thread's scratch does not keep it (the writer keeps one per string key per thread).
    if (slots_.size() > kKeepSlots) {
      std::vector<Slot>().swap(slots_);
      epoch_ = 1;
      return;
    }
    if (++epoch_ == 0) {  // Wrapped: no slot may look current.
      for (Slot& e : slots_) e.epoch = 0;
      epoch_ = 1;
    }
  }

 private:
  struct Slot {
    ShortString key;
    uint32_t index = 0;
    uint32_t epoch = 0;  // Current when equal to the table's epoch_.
  };
  void Grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(old.empty() ? 16 : 2 * old.size());
    const size_t mask = slots_.size() - 1;
    for (const Slot& e : old) {
      if (e.epoch != epoch_) continue;
      size_t at = e.key.Hash() & mask;
      while (slots_[at].epoch == epoch_) at = (at + 1) & mask;
      slots_[at] = e;
    }
  }

  static constexpr size_t kKeepSlots = 1024;
  std::vector<Slot> slots_;
  size_t used_ = 0;
  uint32_t epoch_ = 1;
};

}  // namespace rankwire::rankbin

#endif  // RANKWIRE_CODEC_RANKBIN_SHORT_DICT_H_
