// RANKWIRE_TARGET_CLONES(...): a function compiled once per instruction set
// and picked at load time (GCC/Clang target_clones), except under
// ThreadSanitizer: the clones' resolver runs while the dynamic loader
// relocates the binary, before TSan's runtime is up, and an instrumented
// resolver crashes there (__tsan_func_entry). Every clone computes the same
// bits (no FMA), so a TSan build that uses the default one tests the same
// results.
#ifndef RANKWIRE_BASE_TARGET_CLONES_H_
#define RANKWIRE_BASE_TARGET_CLONES_H_

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RANKWIRE_NO_TARGET_CLONES 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define RANKWIRE_NO_TARGET_CLONES 1
#endif

#if defined(RANKWIRE_NO_TARGET_CLONES)
#define RANKWIRE_TARGET_CLONES(...)
#else
#define RANKWIRE_TARGET_CLONES(...) __attribute__((target_clones(__VA_ARGS__)))
#endif

#endif  // RANKWIRE_BASE_TARGET_CLONES_H_
