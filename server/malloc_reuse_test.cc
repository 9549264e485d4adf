// The allocator configuration linked into the server and the benchmarks
// (server/malloc.cmake, jemalloc_conf.cc) keeps freed memory of a large
// result for reuse: a buffer of 8 MiB or more (a large response), freed and
// asked for again, comes back without faulting its pages in again, on the
// main thread (arena 0) and on another, whether jemalloc sees one CPU (one
// arena, as under `taskset -c 0`) or several; and the small blocks of a
// freed large result are reused by the next one.
//
// Each fails when its part of jemalloc_conf.cc is undone: the main-thread
// test without the arena 0 setting (under `taskset -c 0`, the worker-thread
// test too); both large-buffer tests with MALLOC_CONF=oversize_threshold:8388608;
// the small-blocks test with MALLOC_CONF=lg_extent_max_active_fit:6.
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstddef>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace rankwire {
namespace {

constexpr size_t kPage = 4096;

long ThreadMinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// Page faults taken to allocate `bytes` and write one byte per page.
long FaultsToFill(size_t bytes) {
  const long before = ThreadMinorFaults();
  std::unique_ptr<char[]> buffer(new char[bytes]);
  volatile char* p = buffer.get();
  for (size_t i = 0; i < bytes; i += kPage) p[i] = 1;
  return ThreadMinorFaults() - before;
}

// The same for `blocks` allocations of `block` bytes, all live at once (a
// decoded result's per-item vectors and strings), freed together.
long FaultsToFillBlocks(size_t blocks, size_t block) {
  const long before = ThreadMinorFaults();
  std::vector<std::unique_ptr<char[]>> live;
  live.reserve(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    live.emplace_back(new char[block]);
    volatile char* p = live.back().get();
    for (size_t i = 0; i < block; i += kPage) p[i] = 1;
  }
  return ThreadMinorFaults() - before;
}

// Whether touching fresh anonymous memory faults once per 4 KiB page, as
// these tests count on. With transparent huge pages set to `always`, one
// fault maps 2 MiB and a fresh buffer would look reused.
bool FreshPagesFaultOneByOne() {
  constexpr size_t kBytes = 8u << 20;
  void* region = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return false;
  const long before = ThreadMinorFaults();
  volatile char* p = static_cast<char*>(region);
  for (size_t i = 0; i < kBytes; i += kPage) p[i] = 1;
  const long faults = ThreadMinorFaults() - before;
  munmap(region, kBytes);
  return faults >= static_cast<long>(kBytes / kPage / 2);
}

#define SKIP_UNLESS_PAGES_FAULT_ONE_BY_ONE()                                          \
  if (!FreshPagesFaultOneByOne())                                                     \
  GTEST_SKIP() << "fresh memory does not fault page by page here (transparent huge " \
                  "pages set to always?): reuse cannot be told from a fresh buffer"

// The third of three equal rounds: the first faults its pages in, and
// from then on they should be reused.
void ExpectReused(size_t bytes) {
  FaultsToFill(bytes);
  FaultsToFill(bytes);
  const long pages = static_cast<long>(bytes / kPage);
  EXPECT_LT(FaultsToFill(bytes), pages / 10) << bytes << " bytes, " << pages << " pages";
}

TEST(MallocReuseTest, LargeBufferIsReusedOnTheMainThread) {
  SKIP_UNLESS_PAGES_FAULT_ONE_BY_ONE();
  ExpectReused(9u << 20);
  ExpectReused(24u << 20);
}

TEST(MallocReuseTest, LargeBufferIsReusedOnAWorkerThread) {
  SKIP_UNLESS_PAGES_FAULT_ONE_BY_ONE();
  std::thread worker([] {
    ExpectReused(9u << 20);
    ExpectReused(24u << 20);
  });
  worker.join();
}

// A large result decoded, freed and decoded again: once freed, its many
// small blocks coalesce into extents of 8 MiB or more, which are now kept;
// the next result's small blocks must be carved from them, not from fresh
// pages.
TEST(MallocReuseTest, SmallBlocksReuseTheExtentsALargeResultFreed) {
  SKIP_UNLESS_PAGES_FAULT_ONE_BY_ONE();
  for (const size_t block : {size_t{256}, size_t{2400}, size_t{6} << 10}) {
    const size_t blocks = (24u << 20) / block;
    FaultsToFillBlocks(blocks, block);
    FaultsToFillBlocks(blocks, block);
    const long pages = static_cast<long>(blocks * block / kPage);
    EXPECT_LT(FaultsToFillBlocks(blocks, block), pages / 10) << blocks << " blocks of " << block;
  }
}

}  // namespace
}  // namespace rankwire
