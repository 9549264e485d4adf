#ifndef RANKWIRE_SERVER_JEMALLOC_CONF_H_
#define RANKWIRE_SERVER_JEMALLOC_CONF_H_

// What server/jemalloc_conf.cc gives jemalloc. Defined only in binaries
// that link rankwire::malloc with jemalloc, which also defines
// RANKWIRE_JEMALLOC_CONF.

namespace rankwire {

// The options string compiled in (MALLOC_CONF may override parts of it).
const char* JemallocOptions();
// 0 once arena 0's oversize threshold is set; mallctl's error number if it
// could not be (an older jemalloc), when arena 0 still purges freed
// extents of 8 MiB or more at once.
int JemallocArenaZeroStatus();

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_JEMALLOC_CONF_H_
