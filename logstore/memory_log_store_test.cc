// What the in-process table does beyond the shared suite
// (log_store_behaviour_test.cc): it purges expired keys on its own, so its
// memory is bounded by what was written in the last TTL.
#include "logstore/memory_log_store.h"

#include <algorithm>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/support/log_test_util.h"

namespace rankwire::logstore {
namespace {

using test_util::GetReceipt;
using test_util::MakeRequest;
using test_util::WaitFor;

SinkEntry Entry(std::string key, std::vector<std::pair<std::string, std::string>> fields) {
  SinkEntry entry{std::move(key), {}, nullptr};
  for (auto& [name, value] : fields) entry.fields.Add(name, value);
  return entry;
}

// A clock the test moves by hand: expiry is tested without sleeping.
class ManualClock {
 public:
  MemoryLogTable::Clock::time_point Now() const {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += absl::ToChronoNanoseconds(d);
  }
  MemoryLogTable::NowFunction AsFunction() {
    return [this] { return Now(); };
  }

 private:
  mutable absl::Mutex mu_;
  MemoryLogTable::Clock::time_point now_{};
};

TEST(MemoryLogTableTest, RewritingAKeyReplacesItsFieldsAndResetsItsExpiry) {
  ManualClock clock;
  MemoryLogTable table(clock.AsFunction());
  SinkEntry first = Entry("k", {{"a", "Ta1"}, {"b", "Tb1"}});
  table.Put(first, absl::Milliseconds(300));
  SinkEntry second = Entry("k", {{"b", "Tb2"}, {"c", "Tc2"}});
  table.Put(second, absl::Seconds(10));

  std::vector<std::string> fields = {"a", "b", "c", "d"};
  std::vector<std::optional<std::string>> values = table.Get("k", fields);
  // Like Redis's DEL + HSET: the first write's field "a" is gone.
  EXPECT_FALSE(values[0].has_value());
  EXPECT_EQ(values[1], "Tb2");
  EXPECT_EQ(values[2], "Tc2");
  EXPECT_FALSE(values[3].has_value());
  EXPECT_EQ(table.key_count(), 1u);
  EXPECT_EQ(table.byte_count(), 2u * 4);  // Two fields of 1 + 3 bytes.
  std::optional<absl::Duration> ttl = table.TimeToLive("k");
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(*ttl, absl::Seconds(10));
  // The first write's expiry (300 ms) no longer applies.
  clock.Advance(absl::Milliseconds(350));
  EXPECT_EQ(table.PurgeExpired(), 0u);
  EXPECT_EQ(table.Get("k", fields)[1], "Tb2");
  clock.Advance(absl::Seconds(10));
  EXPECT_FALSE(table.Get("k", fields)[1].has_value());
  EXPECT_EQ(table.PurgeExpired(), 1u);
  EXPECT_EQ(table.byte_count(), 0u);
}

TEST(MemoryLogTableTest, ExpiredKeyIsInvisibleBeforeItIsPurged) {
  ManualClock clock;
  MemoryLogTable table(clock.AsFunction());
  SinkEntry entry = Entry("k", {{"a", "Ta"}});
  table.Put(entry, absl::Milliseconds(20));
  std::vector<std::string> fields = {"a"};
  clock.Advance(absl::Milliseconds(19));
  EXPECT_TRUE(table.Get("k", fields)[0].has_value());
  EXPECT_EQ(table.TimeToLive("k"), absl::Milliseconds(1));
  clock.Advance(absl::Milliseconds(1));  // Expired at exactly now + ttl.
  EXPECT_FALSE(table.Get("k", fields)[0].has_value());
  EXPECT_FALSE(table.TimeToLive("k").has_value());
  EXPECT_EQ(table.key_count(), 1u);     // Still held...
  EXPECT_EQ(table.PurgeExpired(), 1u);  // ...until purged.
  EXPECT_EQ(table.key_count(), 0u);
  EXPECT_EQ(table.byte_count(), 0u);
}

TEST(MemoryLogStoreTest, ExpiredLogsArePurgedWithoutAnyReads) {
  auto table = std::make_shared<MemoryLogTable>();
  LogStoreConfig config;
  config.ttl = absl::Milliseconds(100);
  absl::StatusOr<LogStore> store = OpenMemoryLogStore(config, table);
  ASSERT_TRUE(store.ok()) << store.status();
  std::vector<std::future<LogReceipt>> futures;
  for (int r = 0; r < 100; ++r) {
    futures.push_back(store->consumer->Consume(MakeRequest(absl::StrCat("req-purge-", r), 20)));
  }
  for (auto& f : futures) ASSERT_EQ(GetReceipt(f).outcome, LogReceipt::Outcome::kStored);
  EXPECT_GT(table->key_count() + store->consumer->stats().items_stored, 0u);
  // The idle writer's Poll() purges; nothing reads the table.
  EXPECT_TRUE(WaitFor([&] { return table->key_count() == 0 && table->byte_count() == 0; },
                      absl::Seconds(5)));
}

TEST(MemoryLogStoreTest, MemoryIsBoundedByWhatTheLastTtlWrote) {
  auto table = std::make_shared<MemoryLogTable>();
  LogStoreConfig config;
  config.ttl = absl::Milliseconds(100);
  absl::StatusOr<LogStore> store = OpenMemoryLogStore(config, table);
  ASSERT_TRUE(store.ok()) << store.status();
  // One request per 2 ms for 1 s: about 50 live keys at any time.
  size_t max_keys = 0;
  std::vector<std::future<LogReceipt>> futures;
  const absl::Time end = absl::Now() + absl::Seconds(1);
  int r = 0;
  while (absl::Now() < end) {
    futures.push_back(
        store->consumer->Consume(MakeRequest(absl::StrCat("req-bound-", r++), 5, 200)));
    max_keys = std::max(max_keys, table->key_count());
    absl::SleepFor(absl::Milliseconds(2));
  }
  for (auto& f : futures) ASSERT_EQ(GetReceipt(f).outcome, LogReceipt::Outcome::kStored);
  EXPECT_GT(r, 100);
  // About 50 (one TTL's worth) of the ~500 written; half is the slack for
  // a writer that falls behind on a loaded machine and catches up at once.
  EXPECT_LT(max_keys, size_t(r) / 2);
}

}  // namespace
}  // namespace rankwire::logstore
