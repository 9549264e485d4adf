// StableHash: FNV-1a, 64-bit. The same value on every build, platform and
// run (unlike absl::Hash, which is seeded per process), for what must not
// move between replicas or releases: which experiment bucket a user falls
// into.
//
// Thread safety: a pure function.
#ifndef RANKWIRE_BASE_STABLE_HASH_H_
#define RANKWIRE_BASE_STABLE_HASH_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace rankwire {

inline uint64_t StableHash(absl::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// The user's slot in 0..99: experiment buckets are runs of slots.
inline int UserSlot(absl::string_view user_id) {
  return static_cast<int>(StableHash(user_id) % 100);
}

}  // namespace rankwire

#endif  // RANKWIRE_BASE_STABLE_HASH_H_
