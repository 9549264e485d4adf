// jemalloc's options for every binary that links rankwire::malloc
// (server/malloc.cmake): the server, the benchmarks and malloc_reuse_test.
//
// Under jemalloc 5.3's defaults a large result paid for fresh pages on
// every call: encoding 5000 string-heavy items (an 8.6 MB result) faulted
// in all ~2030 pages of its buffer every time, and decoding 5000 items of
// 100 sparse keys faulted ~2900 pages. Per item, each took 3-25x what it
// took at 500 items (docs/bench-notes/2026-12-04-allocator-large-results.md).
// Three settings keep freed memory for reuse instead, and a fourth gives it
// back to the kernel once it has gone unused for dirty_decay_ms (10 s), busy
// or idle.
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
//   lg_extent_max_active_fit:16
//                          a freed result's small blocks coalesce into
//                          extents of several MiB, now kept; by default a
//                          slab may only be cut from an extent up to 64x
//                          its size, so the next result's slabs took fresh
//                          pages instead. jemalloc still takes the smallest
//                          free extent that fits; this only lets it split a
//                          large one rather than map fresh pages. 1024x (10)
//                          was enough until the background thread below,
//                          whose purges coalesce freed extents further: the
//                          small-blocks test then failed at 10 every time,
//                          and passes at 12 and 16.
//   background threads     jemalloc's own threads purge what has decayed.
//                          Without them the decay advances only when the
//                          arena allocates, so a server that went idle
//                          after a burst kept the burst's peak resident
//                          until traffic came back (a 50 MB peak stayed
//                          50 MB after 16 s idle; with them, 4.8 MB).
//                          Started by StartJemallocBackgroundThreads(), not
//                          by the options string: jemalloc would start one
//                          before main(), and the server's threads must all
//                          inherit its CPU and time-slice settings.
//
// malloc_reuse_test fails without each of the four. The MALLOC_CONF
// environment variable still overrides the options string, option by
// option (not the arena 0 setting; a background_thread in it wins over
// StartJemallocBackgroundThreads).
#include "server/jemalloc_conf.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

extern "C" {
// The name and type jemalloc looks up, once, before main().
extern const char* malloc_conf;
const char* malloc_conf = "oversize_threshold:0,lg_extent_max_active_fit:16";
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

namespace {

// Whether MALLOC_CONF sets the option `name` (not one whose name merely
// ends with it, as max_background_threads ends with background_thread).
bool MallocConfSets(const char* name) {
  const char* env = std::getenv("MALLOC_CONF");
  const size_t length = std::strlen(name);
  for (const char* p = env; p != nullptr && (p = std::strstr(p, name)) != nullptr; p += length) {
    if ((p == env || p[-1] == ',') && p[length] == ':') return true;
  }
  return false;
}

}  // namespace

int StartJemallocBackgroundThreads() {
  if (MallocConfSets("background_thread")) return 0;
  bool on = true;
  return mallctl("background_thread", nullptr, nullptr, &on, sizeof on);
}

bool JemallocBackgroundThreadsOn() {
  bool on = false;
  size_t size = sizeof on;
  return mallctl("background_thread", &on, &size, nullptr, 0) == 0 && on;
}

// "stats.*" are refreshed by writing "epoch"; both reads are of that
// refresh.
bool JemallocStats(size_t* allocated, size_t* resident) {
  uint64_t epoch = 1;
  size_t size = sizeof epoch;
  if (mallctl("epoch", &epoch, &size, &epoch, size) != 0) return false;
  size = sizeof(size_t);
  return mallctl("stats.allocated", allocated, &size, nullptr, 0) == 0 &&
         mallctl("stats.resident", resident, &size, nullptr, 0) == 0;
}

}  // namespace rankwire
