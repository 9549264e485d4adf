// AcceptedNames: the last key table a rankbin writer or reader checked on
// this thread, remembered so that the next call with the same table skips
// the check. A ranker's results carry the same keys call after call (its
// output schema); comparing names with the remembered ones costs a fraction
// of hashing them into a set to find a repeated name, which was a fifth of
// a 10-item, 39-key encode and a tenth of its full decode.
//
// A table is a list of (name, tag) pairs; the tag is whatever else the
// check depends on (the writer: the key's type; the reader: whether the key
// is one the model sees). A table that matches the remembered one passed
// the same check, so the caller may skip it.
//
// Example:
//   thread_local AcceptedNames accepted;
//   auto key = [&](size_t k) { return AcceptedNames::Entry{names[k], tags[k]}; };
//   if (!accepted.Matches(n, key)) {
//     accepted.Forget();
//     RETURN_IF_ERROR(CheckUnique(...));
//     accepted.Remember(n, key);
//   }
//
// Thread safety: plain values; one per thread.
#ifndef RANKWIRE_CODEC_RANKBIN_ACCEPTED_NAMES_H_
#define RANKWIRE_CODEC_RANKBIN_ACCEPTED_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace rankwire::rankbin {

class AcceptedNames {
 public:
  // Larger tables are not remembered.
  static constexpr size_t kMaxNameBytes = size_t{1} << 16;
  static constexpr size_t kMaxNames = size_t{1} << 12;

  struct Entry {
    absl::string_view name;
    uint8_t tag;
  };

  // Whether entry(0) .. entry(n - 1) are the remembered table.
  template <typename EntryAt>
  bool Matches(size_t n, EntryAt entry) const {
    if (n != tags_.size()) return false;
    size_t begin = 0;
    for (size_t k = 0; k < n; ++k) {
      const Entry e = entry(k);
      if (ends_[k] - begin != e.name.size() || tags_[k] != e.tag ||
          (!e.name.empty() &&
           std::memcmp(names_.data() + begin, e.name.data(), e.name.size()) != 0)) {
        return false;
      }
      begin = ends_[k];
    }
    return true;
  }

  // Remembers entry(0) .. entry(n - 1) (forgets instead if the table is
  // over the limits above), giving back what a much larger table left
  // behind.
  template <typename EntryAt>
  void Remember(size_t n, EntryAt entry) {
    size_t bytes = 0;
    for (size_t k = 0; k < n; ++k) bytes += entry(k).name.size();
    Forget();
    // A table this large is not a ranker's schema; checking it costs
    // little next to the result it comes with.
    if (bytes > kMaxNameBytes || n > kMaxNames) return;
    constexpr size_t kKeepAlways = 1 << 14;
    if (names_.capacity() > kKeepAlways && names_.capacity() / 4 > bytes) {
      std::string().swap(names_);
    }
    if (ends_.capacity() > kKeepAlways && ends_.capacity() / 4 > n) {
      std::vector<size_t>().swap(ends_);
      std::vector<uint8_t>().swap(tags_);
    }
    names_.reserve(bytes);
    ends_.reserve(n);
    tags_.reserve(n);
    for (size_t k = 0; k < n; ++k) {
      const Entry e = entry(k);
      names_.append(e.name.data(), e.name.size());
      ends_.push_back(names_.size());
      tags_.push_back(e.tag);
    }
  }

  // Call before a check that may fail: a failed table is not remembered.
  void Forget() {
    names_.clear();
    ends_.clear();
    tags_.clear();
  }

 private:
  std::string names_;         // Every name, one after another.
  std::vector<size_t> ends_;  // Where each name ends in names_.
  std::vector<uint8_t> tags_;
};

}  // namespace rankwire::rankbin

#endif  // RANKWIRE_CODEC_RANKBIN_ACCEPTED_NAMES_H_
