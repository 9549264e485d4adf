// ThreadSanitizer builds only (cmake/RankwireTsan.cmake): tells TSan about
// the synchronization done inside Debian's abseil, which is not built with
// -fsanitize=thread.
//
// absl::Mutex, CondVar, Notification, BlockingCounter and Barrier are
// implemented in libabsl_synchronization.so with atomics and futexes that
// TSan cannot see, so without help every access guarded by an absl::Mutex
// looks like a race. The build links with -Wl,--wrap=<symbol> for each
// function below: the product's and the tests' calls reach these wrappers,
// which call the real function (__real_<symbol>) and report the acquire or
// release to TSan on the object's address, exactly what abseil's own
// ABSL_TSAN_MUTEX_* annotations do in an instrumented abseil. Calls made
// inside gRPC and abseil themselves are not wrapped (nor instrumented).
//
// The mangled names are those of the abseil inline namespace Debian ships
// ("debian3", LTS 20220623); a different abseil fails to link here rather
// than silently checking nothing.
#include <sanitizer/tsan_interface.h>

#include "absl/synchronization/barrier.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

using absl::Condition;
using absl::Duration;
using absl::Time;

// Notification::HasBeenNotified() is inline: an acquire load of the atomic
// that follows the Mutex, which the uninstrumented Notify() stores to.
void* NotifiedFlag(const absl::Notification* n) {
  return const_cast<char*>(reinterpret_cast<const char*>(n)) + sizeof(absl::Mutex);
}
void Acquire(const void* p) { __tsan_acquire(const_cast<void*>(p)); }
void Release(const void* p) { __tsan_release(const_cast<void*>(p)); }

}  // namespace

// TSan's runtime provides these (dynamic annotations).
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);

namespace {

// Inside abseil's calls, the memory accesses of this thread are not
// checked. The only instrumented code they run is a waiter's
// absl::Condition, which abseil evaluates with the lock held but possibly on
// another thread (the one unlocking); the wrappers cannot tell TSan that this
// thread holds the lock at that moment. The cost: a Condition that reads a
// field written without the lock is not reported.
class Quiet {
 public:
  Quiet() { AnnotateIgnoreReadsBegin(__FILE__, __LINE__); }
  ~Quiet() { AnnotateIgnoreReadsEnd(__FILE__, __LINE__); }
};

}  // namespace

// LOCK(symbol, args) declares the real function and defines its wrapper.
#define LOCK(sym, ...)                                          \
  extern "C" void __real_##sym(absl::Mutex* mu, ##__VA_ARGS__); \
  extern "C" void __wrap_##sym(absl::Mutex* mu, ##__VA_ARGS__)
#define BOOL_LOCK(sym, ...)                                     \
  extern "C" bool __real_##sym(absl::Mutex* mu, ##__VA_ARGS__); \
  extern "C" bool __wrap_##sym(absl::Mutex* mu, ##__VA_ARGS__)

// Lock, ReaderLock, LockWhen...: the lock is held on return.
LOCK(_ZN4absl7debian35Mutex4LockEv) {
  Quiet q;
  __real__ZN4absl7debian35Mutex4LockEv(mu);
  Acquire(mu);
}
LOCK(_ZN4absl7debian35Mutex10ReaderLockEv) {
  Quiet q;
  __real__ZN4absl7debian35Mutex10ReaderLockEv(mu);
  Acquire(mu);
}
LOCK(_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE, const Condition& c) {
  Quiet q;
  __real__ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE(mu, c);
  Acquire(mu);
}
LOCK(_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE, const Condition& c) {
  Quiet q;
  __real__ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE(mu, c);
  Acquire(mu);
}
// ...WithTimeout/Deadline hold the lock on return whatever they return.
BOOL_LOCK(_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE,
          const Condition& c, Duration d) {
  Quiet q;
  bool r =
      __real__ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE(mu, c, d);
  Acquire(mu);
  return r;
}
BOOL_LOCK(_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE,
          const Condition& c, Time t) {
  Quiet q;
  bool r =
      __real__ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE(mu, c, t);
  Acquire(mu);
  return r;
}
BOOL_LOCK(_ZN4absl7debian35Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE,
          const Condition& c, Duration d) {
  Quiet q;
  bool r = __real__ZN4absl7debian35Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE(
      mu, c, d);
  Acquire(mu);
  return r;
}
BOOL_LOCK(_ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE,
          const Condition& c, Time t) {
  Quiet q;
  bool r = __real__ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE(
      mu, c, t);
  Acquire(mu);
  return r;
}
BOOL_LOCK(_ZN4absl7debian35Mutex7TryLockEv) {
  Quiet q;
  bool r = __real__ZN4absl7debian35Mutex7TryLockEv(mu);
  if (r) Acquire(mu);
  return r;
}
BOOL_LOCK(_ZN4absl7debian35Mutex13ReaderTryLockEv) {
  Quiet q;
  bool r = __real__ZN4absl7debian35Mutex13ReaderTryLockEv(mu);
  if (r) Acquire(mu);
  return r;
}
// Unlocks: what this thread did under the lock happens before the next holder.
LOCK(_ZN4absl7debian35Mutex6UnlockEv) {
  Quiet q;
  Release(mu);
  __real__ZN4absl7debian35Mutex6UnlockEv(mu);
}
LOCK(_ZN4absl7debian35Mutex12ReaderUnlockEv) {
  Quiet q;
  Release(mu);
  __real__ZN4absl7debian35Mutex12ReaderUnlockEv(mu);
}
// Await: releases the lock while waiting and holds it again on return.
LOCK(_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE, const Condition& c) {
  Quiet q;
  Release(mu);
  __real__ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE(mu, c);
  Acquire(mu);
}
BOOL_LOCK(_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE,
          const Condition& c, Duration d) {
  Quiet q;
  Release(mu);
  bool r =
      __real__ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE(mu, c, d);
  Acquire(mu);
  return r;
}
BOOL_LOCK(_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE, const Condition& c,
          Time t) {
  Quiet q;
  Release(mu);
  bool r = __real__ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE(mu, c, t);
  Acquire(mu);
  return r;
}

// CondVar waits: the same, on the Mutex they are given.
#define CV(ret, sym, ...)                                                         \
  extern "C" ret __real_##sym(absl::CondVar* cv, absl::Mutex* mu, ##__VA_ARGS__); \
  extern "C" ret __wrap_##sym(absl::CondVar* cv, absl::Mutex* mu, ##__VA_ARGS__)
CV(void, _ZN4absl7debian37CondVar4WaitEPNS0_5MutexE) {
  Quiet q;
  Release(mu);
  __real__ZN4absl7debian37CondVar4WaitEPNS0_5MutexE(cv, mu);
  Acquire(mu);
}
CV(bool, _ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE, Duration d) {
  Quiet q;
  Release(mu);
  bool r = __real__ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE(cv, mu, d);
  Acquire(mu);
  return r;
}
CV(bool, _ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE, Time t) {
  Quiet q;
  Release(mu);
  bool r = __real__ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE(cv, mu, t);
  Acquire(mu);
  return r;
}

// Notification: Notify() happens before every wait that sees it.
extern "C" void __real__ZN4absl7debian312Notification6NotifyEv(absl::Notification* n);
extern "C" void __wrap__ZN4absl7debian312Notification6NotifyEv(absl::Notification* n) {
  Quiet q;
  Release(n);
  Release(NotifiedFlag(n));
  __real__ZN4absl7debian312Notification6NotifyEv(n);
}
extern "C" void __real__ZNK4absl7debian312Notification19WaitForNotificationEv(
    const absl::Notification* n);
extern "C" void __wrap__ZNK4absl7debian312Notification19WaitForNotificationEv(
    const absl::Notification* n) {
  Quiet q;
  __real__ZNK4absl7debian312Notification19WaitForNotificationEv(n);
  Acquire(n);
}
extern "C" bool
__real__ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE(
    const absl::Notification* n, Duration d);
extern "C" bool
__wrap__ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE(
    const absl::Notification* n, Duration d) {
  Quiet q;
  bool r =
      __real__ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE(n, d);
  if (r) Acquire(n);
  return r;
}
extern "C" bool __real__ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE(
    const absl::Notification* n, Time t);
extern "C" bool __wrap__ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE(
    const absl::Notification* n, Time t) {
  Quiet q;
  bool r = __real__ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE(n, t);
  if (r) Acquire(n);
  return r;
}

// BlockingCounter and Barrier: every arrival happens before the release.
extern "C" void __real__ZN4absl7debian315BlockingCounter14DecrementCountEv(
    absl::BlockingCounter* b);
extern "C" void __wrap__ZN4absl7debian315BlockingCounter14DecrementCountEv(
    absl::BlockingCounter* b) {
  Quiet q;
  Release(b);
  __real__ZN4absl7debian315BlockingCounter14DecrementCountEv(b);
}
extern "C" void __real__ZN4absl7debian315BlockingCounter4WaitEv(absl::BlockingCounter* b);
extern "C" void __wrap__ZN4absl7debian315BlockingCounter4WaitEv(absl::BlockingCounter* b) {
  Quiet q;
  __real__ZN4absl7debian315BlockingCounter4WaitEv(b);
  Acquire(b);
}
extern "C" bool __real__ZN4absl7debian37Barrier5BlockEv(absl::Barrier* b);
extern "C" bool __wrap__ZN4absl7debian37Barrier5BlockEv(absl::Barrier* b) {
  Quiet q;
  Release(b);
  bool r = __real__ZN4absl7debian37Barrier5BlockEv(b);
  Acquire(b);
  return r;
}
