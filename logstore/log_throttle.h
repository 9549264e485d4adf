// LogThrottle rate-limits an error line: at most one per interval, and the
// line that gets through says how many were held back. The log store uses
// it so that a Redis outage at thousands of requests per second costs one
// line a second, not thousands.
//
// Example:
//   uint64_t suppressed = 0;
//   if (throttle_.Allow(&suppressed)) {
//     spdlog::error("redis down: {} ({} similar suppressed)", why, suppressed);
//   }
//
// Thread safety: Allow() is safe from many threads.
#ifndef RANKWIRE_LOGSTORE_LOG_THROTTLE_H_
#define RANKWIRE_LOGSTORE_LOG_THROTTLE_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace rankwire::logstore {

class LogThrottle {
 public:
  explicit LogThrottle(absl::Duration interval = absl::Seconds(1)) : interval_(interval) {}

  // True when the caller may log now; then `*suppressed` is the number of
  // calls refused since the last allowed one.
  bool Allow(uint64_t* suppressed) {
    const absl::Time now = absl::Now();
    absl::MutexLock lock(&mu_);
    if (now < next_allowed_) {
      ++suppressed_;
      return false;
    }
    next_allowed_ = now + interval_;
    *suppressed = suppressed_;
    suppressed_ = 0;
    return true;
  }

 private:
  const absl::Duration interval_;
  absl::Mutex mu_;
  absl::Time next_allowed_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  uint64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_LOG_THROTTLE_H_
