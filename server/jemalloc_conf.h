#ifndef RANKWIRE_SERVER_JEMALLOC_CONF_H_
#define RANKWIRE_SERVER_JEMALLOC_CONF_H_

// What server/jemalloc_conf.cc gives jemalloc. Defined only in binaries
// that link rankwire::malloc with jemalloc, which also defines
// RANKWIRE_JEMALLOC_CONF.

#include <cstddef>

// jemalloc's own declaration (<jemalloc/jemalloc.h> also redeclares malloc).
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen);

namespace rankwire {

// The options string compiled in (MALLOC_CONF may override parts of it).
const char* JemallocOptions();
// 0 once arena 0's oversize threshold is set; mallctl's error number if it
// could not be (an older jemalloc), when arena 0 still purges freed
// extents of 8 MiB or more at once.
int JemallocArenaZeroStatus();
// Starts jemalloc's background threads, which give memory that has gone
// unused for the dirty decay time (10 s) back to the kernel, on an idle
// process too. They inherit the calling thread's CPUs, nice and time
// slice, so the server calls this once those are set. 0 on success (or
// when MALLOC_CONF sets background_thread itself), else mallctl's error.
int StartJemallocBackgroundThreads();
// Whether they run.
bool JemallocBackgroundThreadsOn();
// Bytes the program holds in allocations, and bytes of physical memory
// jemalloc holds for them (with its caches); false if unavailable.
bool JemallocStats(size_t* allocated, size_t* resident);

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_JEMALLOC_CONF_H_
