// The allocator configuration linked into the server and the benchmarks
// (server/malloc.cmake, jemalloc_conf.cc) keeps freed large extents for
// reuse: a buffer of 8 MiB or more (a large result's response), freed and
// asked for again, comes back without faulting its pages in again, on the
// main thread and on others.
// Under jemalloc 5.3's defaults each of these faults in every page again
// (MALLOC_CONF=oversize_threshold:8388608,muzzy_decay_ms:0 brings the
// defaults back, and these tests then fail).
#include <sys/resource.h>

#include <cstddef>
#include <memory>
#include <thread>

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

// The third of three equal rounds: the first faults its pages in, and
// from then on they should be reused.
void ExpectReused(size_t bytes) {
  FaultsToFill(bytes);
  FaultsToFill(bytes);
  const long pages = static_cast<long>(bytes / kPage);
  EXPECT_LT(FaultsToFill(bytes), pages / 10) << bytes << " bytes, " << pages << " pages";
}

TEST(MallocReuseTest, LargeBufferIsReusedOnTheMainThread) {
  ExpectReused(9u << 20);
  ExpectReused(24u << 20);
}

TEST(MallocReuseTest, LargeBufferIsReusedOnOtherThreads) {
  std::thread worker([] {
    ExpectReused(9u << 20);
    ExpectReused(24u << 20);
  });
  worker.join();
}

}  // namespace
}  // namespace rankwire
