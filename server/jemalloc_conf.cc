// jemalloc's options for every binary that links rankwire::malloc
// (server/malloc.cmake): the server, the benchmarks and malloc_reuse_test.
//
// Under jemalloc 5.3's defaults a large result paid for fresh pages on
// every call: encoding 5000 string-heavy items (an 8.6 MB result) faulted
// in all ~2030 pages of its buffer every time, and decoding 5000 items of
// 100 sparse keys faulted ~2900 pages. Per item, each took 3-25x what it
// took at 500 items (BENCHMARKS.md, "Allocator: large results"). Three
// settings keep freed memory for reuse instead; its pages still go back to
// the kernel after dirty_decay_ms (10 s) of disuse, as before.
//
//   oversize_threshold:0   requests of 8 MiB or more get no arena of their
//                          own (that arena purges on every free), and the
//                          arenas made from now on do not purge a freed
//                          extent of 8 MiB or more at once.
//   arena.0.oversize_threshold
//                          the same for arena 0, set up before the option
//                          above is read: the main thread's, and every
//                          thread's when jemalloc sees one CPU (a pinned
//                          benchmark, a one-CPU container). Set below.
//   lg_extent_max_active_fit:10
//                          a freed result's small blocks coalesce into
//                          extents of several MiB, now kept; by default a
//                          slab may only be cut from an extent up to 64x
//                          its size, so the next result's slabs took fresh
//                          pages instead. 1024x lets a 16 KiB slab use a
//                          16 MiB extent.
//
// malloc_reuse_test fails without each of the three. The MALLOC_CONF
// environment variable still overrides the options string, option by
// option (not the arena 0 setting).
#include "server/jemalloc_conf.h"

#include <cstddef>
#include <cstdint>

extern "C" {
// The name and type jemalloc looks up, once, before main().
extern const char* malloc_conf;
const char* malloc_conf = "oversize_threshold:0,lg_extent_max_active_fit:10";

// jemalloc's own declaration (<jemalloc/jemalloc.h> also redeclares malloc).
int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen);
}

namespace {

[[maybe_unused]] const int kArenaZeroKeepsLargeExtents = [] {
  size_t never = SIZE_MAX;
  return mallctl("arena.0.oversize_threshold", nullptr, nullptr, &never, sizeof never);
}();

}  // namespace

namespace rankwire {

const char* JemallocOptions() { return malloc_conf; }
int JemallocArenaZeroStatus() { return kArenaZeroKeepsLargeExtents; }

}  // namespace rankwire
