// jemalloc's compiled-in options for every binary that links rankwire::malloc
// (server/malloc.cmake): the server, the benchmarks and malloc_reuse_test.
// jemalloc reads this symbol once, before main(); the MALLOC_CONF
// environment variable still overrides it, option by option.
//
// Both options keep a freed extent of 8 MiB or more (a large result's
// response buffer; the slabs of a decoded result's many small vectors, once
// they coalesce) for reuse, where jemalloc 5.3's defaults give it back to
// the kernel at once (MADV_DONTNEED) and the next request faults every page
// in again. Encoding 5000 string-heavy items (an 8.6 MB result) faulted
// 2031 pages and took 20x longer per item than 500 items did; with these,
// no page faults and 1.3x (BENCHMARKS.md, "Allocator: large results").
//
//   oversize_threshold:0  no dedicated arena for requests of 8 MiB or more,
//                         whose pages jemalloc purges the moment they are
//                         freed: they come from the thread's own arena and
//                         are reused like any other size.
//   muzzy_decay_ms:-1     stops the eager purge of a freed extent that
//                         coalesces to 8 MiB or more, which oversize_threshold
//                         does not reach in arena 0 (the main thread's, set
//                         up before the option is read). Dirty pages still
//                         go back after dirty_decay_ms (10 s), through
//                         MADV_FREE: the kernel reclaims them when it needs
//                         the memory (before a cgroup's OOM), and RSS counts
//                         them until then. docs/OPERATING.md says so.
extern "C" {
// NOLINTNEXTLINE: the name and type jemalloc looks up.
extern const char* malloc_conf;
const char* malloc_conf = "oversize_threshold:0,muzzy_decay_ms:-1";
}
