// The behavioural suite every log store backend passes: the in-process
// table and a real redis-server. A new backend is added to `Backends` and
// must pass all of it.
#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "logstore/log_store.h"
#include "logstore/memory_log_store.h"
#include "tests/support/log_test_util.h"
#include "tests/support/redis_process.h"

namespace rankwire::logstore {
namespace {

using test_util::GetReceipt;
using test_util::ItemIds;
using test_util::ItemsDropped;
using test_util::LogLine;
using test_util::MakeRequest;
using test_util::RandomBytes;
using test_util::TextBytes;
using test_util::WaitFor;

// The in-process table, opened by the test so it can look inside (TTL, raw
// values) the way the Redis backend uses PTTL and HGET.
class MemoryBackend {
 public:
  static constexpr const char* kName = "Memory";

  absl::Status Start() {
    table_ = std::make_shared<MemoryLogTable>();
    return absl::OkStatus();
  }
  absl::StatusOr<LogStore> Open(LogStoreConfig config) {
    config.backend = LogStoreConfig::Backend::kMemory;
    return OpenMemoryLogStore(config, table_);
  }
  // Like PTTL: milliseconds left, -2 if there is no such key.
  absl::StatusOr<int64_t> PttlMs(const std::string& key) {
    std::optional<absl::Duration> ttl = table_->TimeToLive(key);
    if (!ttl.has_value()) return -2;
    return absl::ToInt64Milliseconds(absl::Ceil(*ttl, absl::Milliseconds(1)));
  }
  absl::StatusOr<std::optional<std::string>> RawValue(const std::string& key,
                                                      const std::string& field) {
    return table_->Get(key, {field}).front();
  }

 private:
  std::shared_ptr<MemoryLogTable> table_;
};

// A redis-server started for each test on a free port.
class RedisBackend {
 public:
  static constexpr const char* kName = "Redis";

  absl::Status Start() {
    absl::StatusOr<std::unique_ptr<test::RedisProcess>> redis = test::RedisProcess::Start();
    if (!redis.ok()) return redis.status();
    redis_ = *std::move(redis);
    return absl::OkStatus();
  }
  absl::StatusOr<LogStore> Open(LogStoreConfig config) {
    config.backend = LogStoreConfig::Backend::kRedis;
    config.redis_addr = redis_->address();
    return OpenLogStore(config);
  }
  absl::StatusOr<int64_t> PttlMs(const std::string& key) {
    absl::StatusOr<test::RedisReply> reply = redis_->Command({"PTTL", key});
    if (!reply.ok()) return reply.status();
    if (reply->type != test::RedisReply::Type::kInteger) {
      return absl::InternalError(absl::StrCat("PTTL: ", reply->str));
    }
    return reply->integer;
  }
  absl::StatusOr<std::optional<std::string>> RawValue(const std::string& key,
                                                      const std::string& field) {
    absl::StatusOr<test::RedisReply> reply = redis_->Command({"HGET", key, field});
    if (!reply.ok()) return reply.status();
    if (reply->type == test::RedisReply::Type::kNil) return std::optional<std::string>();
    return std::optional<std::string>(reply->str);
  }

 private:
  std::unique_ptr<test::RedisProcess> redis_;
};

template <typename Backend>
class LogStoreBehaviourTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status started = backend_.Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  LogStore Open(const LogStoreConfig& config) {
    absl::StatusOr<LogStore> store = backend_.Open(config);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : LogStore{};
  }

  // Fetches every item of `logs` and expects the original text back.
  void ExpectReadable(LogReader& reader, const RequestLogs& logs) {
    std::vector<std::string> ids = ItemIds(logs);
    absl::StatusOr<std::vector<std::optional<std::string>>> values =
        reader.Fetch(logs.request_id, ids);
    ASSERT_TRUE(values.ok()) << values.status();
    ASSERT_EQ(values->size(), logs.items.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      ASSERT_TRUE((*values)[i].has_value()) << logs.request_id << " item " << ids[i];
      EXPECT_EQ(*(*values)[i], logs.items[i].text) << logs.request_id << " item " << ids[i];
    }
  }

  Backend backend_;
};

struct BackendNames {
  template <typename T>
  static std::string GetName(int) {
    return T::kName;
  }
};

using Backends = ::testing::Types<MemoryBackend, RedisBackend>;
TYPED_TEST_SUITE(LogStoreBehaviourTest, Backends, BackendNames);

TYPED_TEST(LogStoreBehaviourTest, StoredLogsAreReadableWithinTheTtl) {
  LogStore store = this->Open(LogStoreConfig{});
  ASSERT_NE(store.consumer, nullptr);
  const RequestLogs logs = MakeRequest("req-readable", 20);
  std::future<LogReceipt> future = store.consumer->Consume(logs);
  LogReceipt receipt = GetReceipt(future);
  ASSERT_EQ(receipt.outcome, LogReceipt::Outcome::kStored) << receipt.status;
  EXPECT_EQ(receipt.items, 20u);
  EXPECT_TRUE(receipt.status.ok());

  const std::string key = store.consumer->KeyFor("req-readable");
  EXPECT_EQ(key, "rank:log:req-readable");
  absl::StatusOr<int64_t> pttl = this->backend_.PttlMs(key);
  ASSERT_TRUE(pttl.ok()) << pttl.status();
  EXPECT_GT(*pttl, 0);
  EXPECT_LE(*pttl, 1000);

  this->ExpectReadable(*store.reader, logs);
  // Order follows the request; unknown items and requests read as nullopt.
  std::vector<std::string> ids = {"sku-unknown", logs.items[5].item_id, logs.items[0].item_id};
  absl::StatusOr<std::vector<std::optional<std::string>>> some =
      store.reader->Fetch("req-readable", ids);
  ASSERT_TRUE(some.ok()) << some.status();
  ASSERT_EQ(some->size(), 3u);
  EXPECT_FALSE((*some)[0].has_value());
  EXPECT_EQ((*some)[1], logs.items[5].text);
  EXPECT_EQ((*some)[2], logs.items[0].text);
  absl::StatusOr<std::vector<std::optional<std::string>>> none =
      store.reader->Fetch("req-never-written", ids);
  ASSERT_TRUE(none.ok()) << none.status();
  for (const auto& v : *none) EXPECT_FALSE(v.has_value());
  // A read whose caller's deadline has passed starts nothing.
  EXPECT_EQ(store.reader->FetchBefore("req-readable", ids, absl::InfinitePast()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(store.reader->FetchBefore("req-readable", ids, absl::Now() + absl::Seconds(5)).ok());
}

TYPED_TEST(LogStoreBehaviourTest, AReusedRequestIdReplacesTheEarlierLogs) {
  LogStore store = this->Open(LogStoreConfig{});
  ASSERT_NE(store.consumer, nullptr);
  const RequestLogs first = MakeRequest("req-reused", 7);
  std::future<LogReceipt> f1 = store.consumer->Consume(first);
  ASSERT_EQ(GetReceipt(f1).outcome, LogReceipt::Outcome::kStored);
  // The same request id again within the TTL, with one item that was not
  // in the first request.
  RequestLogs second;
  second.request_id = "req-reused";
  second.items.push_back(ItemLog{"sku-second", "the second request's only line"});
  std::future<LogReceipt> f2 = store.consumer->Consume(second);
  ASSERT_EQ(GetReceipt(f2).outcome, LogReceipt::Outcome::kStored);

  std::vector<std::string> ids = ItemIds(first);
  ids.push_back("sku-second");
  absl::StatusOr<std::vector<std::optional<std::string>>> values =
      store.reader->Fetch("req-reused", ids);
  ASSERT_TRUE(values.ok()) << values.status();
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    EXPECT_FALSE((*values)[i].has_value()) << "merged: " << ids[i] << " of the first request";
  }
  EXPECT_EQ(values->back(), "the second request's only line");
}

TYPED_TEST(LogStoreBehaviourTest, LogsAreGoneAfterTheTtl) {
  LogStore store = this->Open(LogStoreConfig{});  // TTL 1 s.
  const RequestLogs logs = MakeRequest("req-expiring", 10);
  std::future<LogReceipt> future = store.consumer->Consume(logs);
  ASSERT_EQ(GetReceipt(future).outcome, LogReceipt::Outcome::kStored);
  // The TTL was set before the future completed, so 1.1 s from now is past it.
  const absl::Time stored_by = absl::Now();
  this->ExpectReadable(*store.reader, logs);

  absl::SleepFor(stored_by + absl::Milliseconds(1100) - absl::Now());
  absl::StatusOr<std::vector<std::optional<std::string>>> values =
      store.reader->Fetch(logs.request_id, ItemIds(logs));
  ASSERT_TRUE(values.ok()) << values.status();
  for (const auto& v : *values) EXPECT_FALSE(v.has_value());
  absl::StatusOr<int64_t> pttl = this->backend_.PttlMs(store.consumer->KeyFor(logs.request_id));
  ASSERT_TRUE(pttl.ok()) << pttl.status();
  EXPECT_EQ(*pttl, -2);  // No such key.
}

TYPED_TEST(LogStoreBehaviourTest, SteadyLoadStoresEverythingThatWasEnqueued) {
  LogStoreConfig config;
  config.ttl = absl::Seconds(60);  // Long enough to read everything back.
  LogStore store = this->Open(config);
  constexpr int kThreads = 2;
  constexpr int kRequestsPerThread = 60;
  constexpr int kItems = 50;

  std::vector<std::vector<std::future<LogReceipt>>> futures(kThreads);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      for (int r = 0; r < kRequestsPerThread; ++r) {
        futures[t].push_back(
            store.consumer->Consume(MakeRequest(absl::StrCat("req-steady-", t, "-", r), kItems)));
        absl::SleepFor(absl::Milliseconds(3));  // Pacing, not a timing check.
      }
    });
  }
  for (std::thread& p : producers) p.join();

  for (auto& per_thread : futures) {
    for (std::future<LogReceipt>& f : per_thread) {
      LogReceipt receipt = GetReceipt(f);
      EXPECT_EQ(receipt.outcome, LogReceipt::Outcome::kStored) << receipt.status;
    }
  }
  const LogStats stats = store.consumer->stats();
  constexpr uint64_t kTotalItems = uint64_t{kThreads} * kRequestsPerThread * kItems;
  EXPECT_EQ(stats.requests_enqueued, uint64_t{kThreads} * kRequestsPerThread);
  EXPECT_EQ(stats.items_enqueued, kTotalItems);
  EXPECT_EQ(stats.items_stored, kTotalItems);
  EXPECT_EQ(ItemsDropped(stats), 0);
  EXPECT_EQ(stats.queue_requests, 0u);
  EXPECT_EQ(stats.queue_bytes, 0u);
  EXPECT_GT(stats.bytes_stored, kTotalItems * 1000);
  EXPECT_TRUE(stats.store_up);

  // Counters are not enough: every line is in the store.
  for (int t = 0; t < kThreads; ++t) {
    for (int r = 0; r < kRequestsPerThread; ++r) {
      this->ExpectReadable(*store.reader,
                           MakeRequest(absl::StrCat("req-steady-", t, "-", r), kItems));
    }
  }
}

TYPED_TEST(LogStoreBehaviourTest, CompressedAndPlainValuesReadBackFromOneStore) {
  LogStoreConfig compressed_config;
  compressed_config.compress = true;
  compressed_config.ttl = absl::Seconds(60);
  LogStoreConfig plain_config = compressed_config;
  plain_config.compress = false;
  LogStore compressed = this->Open(compressed_config);
  LogStore plain = this->Open(plain_config);

  // Two requests, one written by each: ranker-like lines (compress well),
  // a random line (does not) and a short one. A request's write replaces
  // its key, so the mix of tags is within the compressed request ('Z' and
  // 'T') and across the two.
  RequestLogs logs = MakeRequest("req-mixed", 12);
  logs.items.push_back(ItemLog{"sku-random", RandomBytes(42, 900)});
  logs.items.push_back(ItemLog{"sku-short", "ok"});
  RequestLogs first_half{"req-mixed-plain", {logs.items.begin(), logs.items.begin() + 7}};
  RequestLogs second_half{logs.request_id, {logs.items.begin() + 7, logs.items.end()}};

  std::future<LogReceipt> a = compressed.consumer->Consume(second_half);
  std::future<LogReceipt> b = plain.consumer->Consume(first_half);
  ASSERT_EQ(GetReceipt(a).outcome, LogReceipt::Outcome::kStored);
  ASSERT_EQ(GetReceipt(b).outcome, LogReceipt::Outcome::kStored);

  const std::string key = compressed.consumer->KeyFor(logs.request_id);
  const std::string plain_key = compressed.consumer->KeyFor(first_half.request_id);
  // Compression paid on the ranker-like lines; bytes_stored counts what
  // was sent (the random and short lines went plain, one tag byte extra).
  const LogStats stats = compressed.consumer->stats();
  EXPECT_LT(stats.bytes_stored, TextBytes(second_half));
  absl::StatusOr<std::optional<std::string>> raw =
      this->backend_.RawValue(key, logs.items[8].item_id);
  ASSERT_TRUE(raw.ok() && raw->has_value());
  EXPECT_LT((*raw)->size(), logs.items[8].text.size() * 7 / 10);
  auto tag = [&](const std::string& k, const std::string& item) -> char {
    absl::StatusOr<std::optional<std::string>> raw = this->backend_.RawValue(k, item);
    if (!raw.ok() || !raw->has_value() || (*raw)->empty()) return '?';
    return (*raw)->front();
  };
  EXPECT_EQ(tag(plain_key, logs.items[0].item_id), 'T');  // Written plain.
  EXPECT_EQ(tag(key, logs.items[8].item_id), 'Z');        // Written compressed.
  EXPECT_EQ(tag(key, "sku-random"), 'T');                 // Compression did not pay.
  EXPECT_EQ(tag(key, "sku-short"), 'T');

  // Either reader reads both.
  for (LogReader* reader : {compressed.reader.get(), plain.reader.get()}) {
    this->ExpectReadable(*reader, first_half);
    this->ExpectReadable(*reader, second_half);
  }
}

TYPED_TEST(LogStoreBehaviourTest, BurstNeverExceedsTheQueueBound) {
  LogStoreConfig config;
  config.queue_capacity_requests = 8;
  config.queue_capacity_bytes = 8 * 25 * 1200;
  config.batch_requests = 4;
  config.ttl = absl::Seconds(60);
  LogStore store = this->Open(config);

  constexpr int kThreads = 2;
  constexpr int kRequests = 300;
  constexpr int kItems = 20;
  std::atomic<uint64_t> max_queue_requests{0};
  std::atomic<uint64_t> max_queue_bytes{0};
  std::vector<std::vector<std::future<LogReceipt>>> futures(kThreads);
  std::vector<std::thread> producers;
  for (int t = 0; t < kThreads; ++t) {
    producers.emplace_back([&, t] {
      const RequestLogs logs = MakeRequest(absl::StrCat("req-burst-", t), kItems);
      for (int r = 0; r < kRequests; ++r) {
        RequestLogs copy = logs;
        copy.request_id = absl::StrCat("req-burst-", t, "-", r);
        futures[t].push_back(store.consumer->Consume(std::move(copy)));
        const LogStats s = store.consumer->stats();
        uint64_t seen = max_queue_requests.load();
        while (s.queue_requests > seen &&
               !max_queue_requests.compare_exchange_weak(seen, s.queue_requests)) {
        }
        seen = max_queue_bytes.load();
        while (s.queue_bytes > seen &&
               !max_queue_bytes.compare_exchange_weak(seen, s.queue_bytes)) {
        }
      }
    });
  }
  for (std::thread& p : producers) p.join();

  uint64_t stored_items = 0, dropped_items = 0;
  for (auto& per_thread : futures) {
    for (std::future<LogReceipt>& f : per_thread) {
      LogReceipt receipt = GetReceipt(f);
      ASSERT_NE(receipt.status.code(), absl::StatusCode::kDeadlineExceeded);
      if (receipt.outcome == LogReceipt::Outcome::kStored) {
        stored_items += receipt.items;
      } else {
        EXPECT_EQ(receipt.status.code(), absl::StatusCode::kResourceExhausted) << receipt.status;
        dropped_items += receipt.items;
      }
    }
  }
  EXPECT_LE(max_queue_requests.load(), config.queue_capacity_requests);
  EXPECT_LE(max_queue_bytes.load(), config.queue_capacity_bytes);
  const LogStats stats = store.consumer->stats();
  // Every item is accounted for once; what was accepted was stored.
  EXPECT_EQ(stored_items + dropped_items, uint64_t{kThreads} * kRequests * kItems);
  EXPECT_EQ(stats.items_stored, stored_items);
  EXPECT_EQ(stats.items_enqueued, stored_items);
  EXPECT_EQ(stats.items_dropped_queue_full, dropped_items);
  EXPECT_EQ(stats.items_dropped_store_error, 0u);
}

TYPED_TEST(LogStoreBehaviourTest, RequestLargerThanTheByteBoundIsDroppedAtOnce) {
  LogStoreConfig config;
  config.queue_capacity_bytes = 10 * 1024;
  LogStore store = this->Open(config);
  std::future<LogReceipt> big = store.consumer->Consume(MakeRequest("req-big", 20));
  ASSERT_EQ(big.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  LogReceipt receipt = big.get();
  EXPECT_EQ(receipt.outcome, LogReceipt::Outcome::kDropped);
  EXPECT_EQ(receipt.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store.consumer->stats().items_dropped_queue_full, 20u);

  std::future<LogReceipt> small = store.consumer->Consume(MakeRequest("req-small", 2));
  EXPECT_EQ(GetReceipt(small).outcome, LogReceipt::Outcome::kStored);
}

TYPED_TEST(LogStoreBehaviourTest, EmptyRequestCompletesAsStoredWithNothingWritten) {
  LogStore store = this->Open(LogStoreConfig{});
  std::future<LogReceipt> f = store.consumer->Consume(RequestLogs{"req-empty", {}});
  LogReceipt receipt = GetReceipt(f);
  EXPECT_EQ(receipt.outcome, LogReceipt::Outcome::kStored);
  EXPECT_EQ(receipt.items, 0u);
  absl::StatusOr<int64_t> pttl = this->backend_.PttlMs(store.consumer->KeyFor("req-empty"));
  ASSERT_TRUE(pttl.ok()) << pttl.status();
  EXPECT_EQ(*pttl, -2);
}

TYPED_TEST(LogStoreBehaviourTest, ShutdownFlushesTheQueueThenRefusesNewLogs) {
  LogStoreConfig config;
  config.ttl = absl::Seconds(60);
  LogStore store = this->Open(config);
  std::vector<std::future<LogReceipt>> futures;
  for (int r = 0; r < 40; ++r) {
    futures.push_back(store.consumer->Consume(MakeRequest(absl::StrCat("req-flush-", r), 50)));
  }
  store.consumer->Shutdown(absl::Seconds(20));
  for (std::future<LogReceipt>& f : futures) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_EQ(f.get().outcome, LogReceipt::Outcome::kStored);
  }
  LogStats stats = store.consumer->stats();
  EXPECT_EQ(stats.items_stored, 40u * 50);
  EXPECT_EQ(stats.items_stored, stats.items_enqueued);
  EXPECT_EQ(stats.queue_requests, 0u);
  this->ExpectReadable(*store.reader, MakeRequest("req-flush-39", 50));

  std::future<LogReceipt> late = store.consumer->Consume(MakeRequest("req-late", 3));
  ASSERT_EQ(late.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  LogReceipt receipt = late.get();
  EXPECT_EQ(receipt.outcome, LogReceipt::Outcome::kDropped);
  EXPECT_EQ(receipt.status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(store.consumer->stats().items_dropped_shutdown, 3u);

  store.consumer->Shutdown(absl::Seconds(1));  // Idempotent; the destructor calls it again.
}

TYPED_TEST(LogStoreBehaviourTest, ConcurrentReadersSeeCompleteRequests) {
  LogStoreConfig config;
  config.ttl = absl::Seconds(60);
  LogStore store = this->Open(config);
  constexpr int kRequests = 40;
  std::atomic<int> published{0};
  std::atomic<bool> failed{false};
  std::thread writer([&] {
    for (int r = 0; r < kRequests; ++r) {
      std::future<LogReceipt> f =
          store.consumer->Consume(MakeRequest(absl::StrCat("req-cr-", r), 30));
      if (GetReceipt(f).outcome != LogReceipt::Outcome::kStored) failed = true;
      published = r + 1;
    }
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      int r = 0;
      while (r < kRequests) {
        if (r >= published.load()) {
          absl::SleepFor(absl::Milliseconds(1));
          continue;
        }
        const RequestLogs logs = MakeRequest(absl::StrCat("req-cr-", r), 30);
        auto values = store.reader->Fetch(logs.request_id, ItemIds(logs));
        if (!values.ok()) {
          failed = true;
          ADD_FAILURE() << "reader " << t << ": " << values.status();
          return;
        }
        for (size_t i = 0; i < logs.items.size(); ++i) {
          if ((*values)[i] != logs.items[i].text) {
            failed = true;
            ADD_FAILURE() << "reader " << t << " request " << r << " item " << i;
            return;
          }
        }
        ++r;
      }
    });
  }
  writer.join();
  for (std::thread& reader : readers) reader.join();
  EXPECT_FALSE(failed.load());
}

}  // namespace
}  // namespace rankwire::logstore
