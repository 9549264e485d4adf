# ThreadSanitizer builds (RANKWIRE_SANITIZE=thread, scripts/tsan.sh): every
# executable links tests/tsan/absl_sync_tsan.cc and wraps abseil's
# synchronization functions with it, so TSan sees the happens-before edges
# made inside Debian's uninstrumented libabsl_synchronization (see that
# file). Included from the top-level CMakeLists.txt before any target.
add_library(rankwire_tsan_absl STATIC ${PROJECT_SOURCE_DIR}/tests/tsan/absl_sync_tsan.cc)
target_link_libraries(rankwire_tsan_absl PUBLIC absl::synchronization absl::time)
set(_rankwire_tsan_wrapped
  _ZN4absl7debian35Mutex4LockEv
  _ZN4absl7debian35Mutex10ReaderLockEv
  _ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE
  _ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE
  _ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE
  _ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE
  _ZN4absl7debian35Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE
  _ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE
  _ZN4absl7debian35Mutex7TryLockEv
  _ZN4absl7debian35Mutex13ReaderTryLockEv
  _ZN4absl7debian35Mutex6UnlockEv
  _ZN4absl7debian35Mutex12ReaderUnlockEv
  _ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE
  _ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE
  _ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE
  _ZN4absl7debian37CondVar4WaitEPNS0_5MutexE
  _ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE
  _ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE
  _ZN4absl7debian312Notification6NotifyEv
  _ZNK4absl7debian312Notification19WaitForNotificationEv
  _ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE
  _ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE
  _ZN4absl7debian315BlockingCounter14DecrementCountEv
  _ZN4absl7debian315BlockingCounter4WaitEv
  _ZN4absl7debian37Barrier5BlockEv)
foreach(_sym ${_rankwire_tsan_wrapped})
  add_link_options(LINKER:--wrap=${_sym})
endforeach()
# Every target made after this links the wrappers (a static library: pulled
# into a link only where a wrapped function is called; never installed).
link_libraries($<BUILD_INTERFACE:rankwire_tsan_absl>)
