// The allocator configuration linked into the server and the benchmarks
// (server/malloc.cmake, jemalloc_conf.cc) keeps freed memory of a large
// result for reuse: a buffer of 8 MiB or more (a large response), freed and
// asked for again, comes back without faulting its pages in again, on the
// main thread (arena 0) and on another, whether jemalloc sees one CPU (one
// arena, as under `taskset -c 0`) or several; and the small blocks of a
// freed large result are reused by the next one. Kept memory still goes
// back to the kernel once it has decayed, on an idle process too.
//
// Each fails when its part of jemalloc_conf.cc is undone: the main-thread
// test without the arena 0 setting (under `taskset -c 0`, the worker-thread
// test too); both large-buffer tests with MALLOC_CONF=oversize_threshold:8388608;
// the small-blocks test with MALLOC_CONF=lg_extent_max_active_fit:6; the
// idle test with MALLOC_CONF=background_thread:false.
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/jemalloc_conf.h"
#include "tests/support/proc_status.h"

namespace rankwire {
namespace {

constexpr size_t kPage = 4096;

long ThreadMinorFaults() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

// Writes one byte in each page of [p, p + bytes).
void TouchPages(void* p, size_t bytes) {
  volatile char* c = static_cast<char*>(p);
  for (size_t i = 0; i < bytes; i += kPage) c[i] = 1;
}

// Page faults taken to allocate `bytes` and write one byte per page.
long FaultsToFill(size_t bytes) {
  const long before = ThreadMinorFaults();
  std::unique_ptr<char[]> buffer(new char[bytes]);
  TouchPages(buffer.get(), bytes);
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
    TouchPages(live.back().get(), block);
  }
  return ThreadMinorFaults() - before;
}

// The process as the server runs it: jemalloc's background threads on
// (the small-blocks test failed with them on and lg_extent_max_active_fit
// at 10, and passed with them off).
class MallocReuseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_EQ(StartJemallocBackgroundThreads(), 0); }
};

// Whether touching fresh anonymous memory faults once per 4 KiB page, as
// these tests count on. With transparent huge pages set to `always`, one
// fault maps 2 MiB and a fresh buffer would look reused.
bool FreshPagesFaultOneByOne() {
  constexpr size_t kBytes = 8u << 20;
  void* region = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return false;
  const long before = ThreadMinorFaults();
  TouchPages(region, kBytes);
  const long faults = ThreadMinorFaults() - before;
  munmap(region, kBytes);
  return faults >= static_cast<long>(kBytes / kPage / 2);
}

#define SKIP_UNLESS_PAGES_FAULT_ONE_BY_ONE()                                         \
  if (!FreshPagesFaultOneByOne())                                                    \
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

TEST_F(MallocReuseTest, LargeBufferIsReusedOnTheMainThread) {
  SKIP_UNLESS_PAGES_FAULT_ONE_BY_ONE();
  ExpectReused(9u << 20);
  ExpectReused(24u << 20);
}

TEST_F(MallocReuseTest, LargeBufferIsReusedOnAWorkerThread) {
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
TEST_F(MallocReuseTest, SmallBlocksReuseTheExtentsALargeResultFreed) {
  SKIP_UNLESS_PAGES_FAULT_ONE_BY_ONE();
  for (const size_t block : {size_t{256}, size_t{2400}, size_t{6} << 10}) {
    const size_t blocks = (24u << 20) / block;
    FaultsToFillBlocks(blocks, block);
    FaultsToFillBlocks(blocks, block);
    const long pages = static_cast<long>(blocks * block / kPage);
    EXPECT_LT(FaultsToFillBlocks(blocks, block), pages / 10) << blocks << " blocks of " << block;
  }
}

// Resident memory of this process, in bytes (0 if /proc has none).
long ResidentBytes() { return static_cast<long>(ProcStatusBytes("self", "VmRSS:").value_or(0)); }

// Sets every arena's dirty decay (and that of arenas made later); false if
// jemalloc refused. Arenas not yet created (EFAULT) are skipped.
bool SetDirtyDecayMs(ssize_t ms) {
  unsigned arenas = 0;
  size_t size = sizeof arenas;
  if (mallctl("arenas.narenas", &arenas, &size, nullptr, 0) != 0) return false;
  for (unsigned a = 0; a < arenas; ++a) {
    const std::string name = "arena." + std::to_string(a) + ".dirty_decay_ms";
    const int error = mallctl(name.c_str(), nullptr, nullptr, &ms, sizeof ms);
    if (error != 0 && error != EFAULT) return false;
  }
  return mallctl("arenas.dirty_decay_ms", nullptr, nullptr, &ms, sizeof ms) == 0;
}

// Memory kept for reuse still goes back to the kernel once unused for the
// decay time, on a process that has gone idle (no allocation advances the
// decay then: jemalloc's background thread has to). The decay is cut to
// 100 ms here so the test need not wait 10 s.
TEST_F(MallocReuseTest, IdleMemoryGoesBackOnceItHasDecayed) {
  ASSERT_TRUE(SetDirtyDecayMs(100));
  constexpr size_t kBytes = 24u << 20;
  long after_free = 0;
  {
    std::unique_ptr<char[]> buffer(new char[kBytes]);
    std::memset(buffer.get(), 1, kBytes);
    std::vector<std::unique_ptr<char[]>> blocks;
    for (size_t b = 0; b < kBytes / 2400; ++b) {
      blocks.emplace_back(new char[2400]);
      std::memset(blocks.back().get(), 1, 2400);
    }
    buffer.reset();
    blocks.clear();
    blocks.shrink_to_fit();
    after_free = ResidentBytes();
  }
  // The whole 48 MiB is still resident right after the free (kept), and
  // at least three quarters of it must go within 5 s of idling.
  const long target = after_free - static_cast<long>(2 * kBytes * 3 / 4);
  long now = after_free;
  for (int waited_ms = 0; waited_ms < 5000 && now > target; waited_ms += 50) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    now = ResidentBytes();
  }
  ASSERT_TRUE(SetDirtyDecayMs(10000));
  EXPECT_LE(now, target) << "resident " << now << " bytes, " << after_free
                         << " right after the free";
}

}  // namespace
}  // namespace rankwire
