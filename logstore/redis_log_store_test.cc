// The Redis backend's failure behaviour against a real redis-server: absent
// at start, killed mid-run and restarted, stalled (SIGSTOP), password
// protected; and the exact key and value layout it writes.
#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "logstore/log_store.h"
#include "tests/support/log_test_util.h"
#include "tests/support/redis_process.h"

namespace rankwire::logstore {
namespace {

using test::RedisProcess;
using test::RedisReply;
using test_util::GetReceipt;
using test_util::ItemIds;
using test_util::MakeRequest;
using test_util::WaitFor;

std::unique_ptr<RedisProcess> StartRedis(test::RedisProcessOptions options = {}) {
  absl::StatusOr<std::unique_ptr<RedisProcess>> redis = RedisProcess::Start(std::move(options));
  EXPECT_TRUE(redis.ok()) << redis.status();
  return redis.ok() ? *std::move(redis) : nullptr;
}

LogStoreConfig RedisConfig(const RedisProcess& redis) {
  LogStoreConfig config;
  config.backend = LogStoreConfig::Backend::kRedis;
  config.redis_addr = redis.address();
  // Short backoff so recovery is quick to observe; the behaviour is the same.
  config.reconnect_backoff_min = absl::Milliseconds(20);
  config.reconnect_backoff_max = absl::Milliseconds(200);
  return config;
}

LogStore OpenOrDie(const LogStoreConfig& config) {
  absl::StatusOr<LogStore> store = OpenLogStore(config);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : LogStore{};
}

// Waits (up to 10 s) until the store has stored `items` log lines.
bool WaitForStored(const LogStore& store, uint64_t items) {
  return WaitFor([&] { return store.consumer->stats().items_stored >= items; }, absl::Seconds(10));
}

// Every key in the server (SCAN), and whether any of them has no TTL.
absl::StatusOr<std::vector<std::string>> KeysWithoutTtl(const RedisProcess& redis) {
  std::vector<std::string> immortal;
  std::string cursor = "0";
  do {
    absl::StatusOr<RedisReply> page = redis.Command({"SCAN", cursor, "COUNT", "1000"});
    if (!page.ok()) return page.status();
    if (page->type != RedisReply::Type::kArray || page->elements.size() != 2) {
      return absl::InternalError("unexpected SCAN reply");
    }
    cursor = page->elements[0].str;
    for (const RedisReply& key : page->elements[1].elements) {
      absl::StatusOr<RedisReply> pttl = redis.Command({"PTTL", key.str});
      if (!pttl.ok()) return pttl.status();
      if (pttl->type == RedisReply::Type::kInteger && pttl->integer == -1) {
        immortal.push_back(key.str);
      }
    }
  } while (cursor != "0");
  return immortal;
}

// Consumes a request every `period` from its own thread until stopped,
// keeping every future.
class Producer {
 public:
  Producer(LogConsumer* consumer, std::string prefix, int items, absl::Duration period)
      : consumer_(consumer),
        prefix_(std::move(prefix)),
        items_(items),
        period_(period),
        thread_([this] { Run(); }) {}
  ~Producer() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int sent() const { return sent_.load(); }
  std::vector<std::future<LogReceipt>>& futures() { return futures_; }  // After Stop().

 private:
  void Run() {
    const RequestLogs logs = MakeRequest(prefix_, items_);
    while (!stop_) {
      RequestLogs copy = logs;
      copy.request_id = absl::StrCat(prefix_, "-", sent_.load());
      futures_.push_back(consumer_->Consume(std::move(copy)));
      ++sent_;
      absl::SleepFor(period_);
    }
  }

  LogConsumer* const consumer_;
  const std::string prefix_;
  const int items_;
  const absl::Duration period_;
  std::atomic<bool> stop_{false};
  std::atomic<int> sent_{0};
  std::vector<std::future<LogReceipt>> futures_;
  std::thread thread_;
};

TEST(RedisLogStoreTest, WritesOneHashPerRequestWithTaggedValues) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.key_prefix = "test:log:";
  LogStore store = OpenOrDie(config);
  const RequestLogs logs = MakeRequest("req-layout", 3);
  std::future<LogReceipt> f = store.consumer->Consume(logs);
  ASSERT_EQ(GetReceipt(f).outcome, LogReceipt::Outcome::kStored);

  absl::StatusOr<RedisReply> type = redis->Command({"TYPE", "test:log:req-layout"});
  ASSERT_TRUE(type.ok()) << type.status();
  EXPECT_EQ(type->str, "hash");
  absl::StatusOr<RedisReply> len = redis->Command({"HLEN", "test:log:req-layout"});
  ASSERT_TRUE(len.ok()) << len.status();
  EXPECT_EQ(len->integer, 3);
  absl::StatusOr<RedisReply> value =
      redis->Command({"HGET", "test:log:req-layout", logs.items[1].item_id});
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(value->str, "T" + logs.items[1].text);
}

TEST(RedisLogStoreTest, AReusedRequestIdReplacesTheKey) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStore store = OpenOrDie(RedisConfig(*redis));
  std::future<LogReceipt> f1 = store.consumer->Consume(MakeRequest("req-again", 7));
  ASSERT_EQ(GetReceipt(f1).outcome, LogReceipt::Outcome::kStored);
  RequestLogs second;
  second.request_id = "req-again";
  second.items.push_back(ItemLog{"sku-new", "one line"});
  std::future<LogReceipt> f2 = store.consumer->Consume(second);
  ASSERT_EQ(GetReceipt(f2).outcome, LogReceipt::Outcome::kStored);
  // 7 + 1 items: the key holds the second request's one field, not 8.
  absl::StatusOr<RedisReply> len = redis->Command({"HLEN", "rank:log:req-again"});
  ASSERT_TRUE(len.ok()) << len.status();
  EXPECT_EQ(len->integer, 1);
  absl::StatusOr<RedisReply> pttl = redis->Command({"PTTL", "rank:log:req-again"});
  ASSERT_TRUE(pttl.ok()) << pttl.status();
  EXPECT_GT(pttl->integer, 0);
  EXPECT_LE(pttl->integer, 1000);
}

TEST(RedisLogStoreTest, RedisAbsentAtStartDropsThenRecoversByItself) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  ASSERT_TRUE(redis->Stop().ok());  // The port is known and nothing listens.

  LogStore store = OpenOrDie(RedisConfig(*redis));
  std::vector<std::future<LogReceipt>> futures;
  for (int r = 0; r < 5; ++r) {
    futures.push_back(store.consumer->Consume(MakeRequest(absl::StrCat("req-absent-", r), 10)));
  }
  for (std::future<LogReceipt>& f : futures) {
    LogReceipt receipt = GetReceipt(f);
    EXPECT_EQ(receipt.outcome, LogReceipt::Outcome::kDropped);
    EXPECT_EQ(receipt.status.code(), absl::StatusCode::kUnavailable) << receipt.status;
  }
  LogStats stats = store.consumer->stats();
  EXPECT_EQ(stats.items_dropped_store_error, 50u);
  EXPECT_EQ(stats.items_stored, 0u);
  EXPECT_FALSE(stats.store_up);

  ASSERT_TRUE(redis->Restart().ok());
  // No traffic needed: the idle writer reconnects on its own.
  EXPECT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));
  const RequestLogs logs = MakeRequest("req-after-start", 10);
  std::future<LogReceipt> f = store.consumer->Consume(logs);
  EXPECT_EQ(GetReceipt(f).outcome, LogReceipt::Outcome::kStored);
  EXPECT_GE(store.consumer->stats().reconnects, 1u);
  auto values = store.reader->Fetch(logs.request_id, ItemIds(logs));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[9], logs.items[9].text);
}

TEST(RedisLogStoreTest, IdleWriterNoticesRedisGoingAwayAndComingBack) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStore store = OpenOrDie(RedisConfig(*redis));
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));
  ASSERT_TRUE(redis->Kill().ok());
  // No Consume() at all: the idle writer's PING finds out.
  EXPECT_TRUE(WaitFor([&] { return !store.consumer->stats().store_up; }, absl::Seconds(10)));
  ASSERT_TRUE(redis->Restart().ok());
  EXPECT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));
  EXPECT_GE(store.consumer->stats().reconnects, 1u);
  EXPECT_EQ(test_util::ItemsDropped(store.consumer->stats()), 0);
}

TEST(RedisLogStoreTest, KilledMidRunDropsAreCountedAndWritesResumeAfterRestart) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStore store = OpenOrDie(RedisConfig(*redis));
  Producer producer(store.consumer.get(), "req-kill", 50, absl::Milliseconds(2));

  ASSERT_TRUE(WaitForStored(store, 50 * 20));
  ASSERT_TRUE(redis->Kill().ok());
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().items_dropped_store_error > 0; },
                      absl::Seconds(10)));
  EXPECT_FALSE(store.consumer->stats().store_up);
  // Keep the load on while Redis is gone.
  const int sent_while_down = producer.sent();
  ASSERT_TRUE(WaitFor([&] { return producer.sent() >= sent_while_down + 50; }, absl::Seconds(10)));

  ASSERT_TRUE(redis->Restart().ok());
  const uint64_t stored_at_restart = store.consumer->stats().items_stored;
  ASSERT_TRUE(WaitForStored(store, stored_at_restart + 50 * 20));
  producer.Stop();

  uint64_t stored = 0, dropped = 0, unknown = 0;
  for (std::future<LogReceipt>& f : producer.futures()) {
    LogReceipt receipt = GetReceipt(f);
    ASSERT_NE(receipt.status.code(), absl::StatusCode::kDeadlineExceeded)
        << "future never completed";
    if (receipt.outcome == LogReceipt::Outcome::kStored) {
      stored += receipt.items;
    } else {
      // Dropped, or (sent whole to a Redis that then died) unknown.
      EXPECT_EQ(receipt.status.code(), absl::StatusCode::kUnavailable) << receipt.status;
      (receipt.outcome == LogReceipt::Outcome::kUnknown ? unknown : dropped) += receipt.items;
    }
  }
  const LogStats stats = store.consumer->stats();
  EXPECT_EQ(stats.items_stored, stored);
  EXPECT_EQ(stats.items_dropped_store_error, dropped);
  EXPECT_EQ(stats.items_unknown, unknown);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(stats.items_enqueued, stored + dropped + unknown);
  EXPECT_EQ(stats.items_in_flight, 0u);
  EXPECT_EQ(stats.items_handed, stored + dropped + unknown);
  EXPECT_EQ(stats.items_dropped_queue_full, 0u);
  EXPECT_GE(stats.reconnects, 1u);
  EXPECT_TRUE(stats.store_up);

  // The last request went to the restarted server and reads back.
  const std::string last = absl::StrCat("req-kill-", producer.sent() - 1);
  RequestLogs expected = MakeRequest("req-kill", 50);
  auto values = store.reader->Fetch(last, ItemIds(expected));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[0], expected.items[0].text);
}

TEST(RedisLogStoreTest, StalledRedisNeverBlocksConsumeAndTheQueueBoundHolds) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.queue_capacity_requests = 16;
  config.batch_requests = 4;
  config.io_timeout = absl::Seconds(20);  // The writer waits; Consume must not.
  config.ttl = absl::Seconds(60);
  LogStore store = OpenOrDie(config);
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));

  ASSERT_TRUE(redis->Pause().ok());
  constexpr int kBurst = 400;
  std::vector<std::future<LogReceipt>> futures;
  uint64_t max_queue = 0;
  const RequestLogs logs = MakeRequest("req-stall", 20);
  const absl::Time start = absl::Now();
  for (int r = 0; r < kBurst; ++r) {
    RequestLogs copy = logs;
    copy.request_id = absl::StrCat("req-stall-", r);
    futures.push_back(store.consumer->Consume(std::move(copy)));
    max_queue = std::max(max_queue, store.consumer->stats().queue_requests);
  }
  const absl::Duration burst_time = absl::Now() - start;
  // 400 calls against a server that answers nothing for 20 s.
  EXPECT_LT(burst_time, absl::Seconds(2));
  EXPECT_LE(max_queue, config.queue_capacity_requests);
  LogStats stats = store.consumer->stats();
  EXPECT_GT(stats.items_dropped_queue_full, 0u);
  // Accepted: what the queue holds plus at most one batch in the writer.
  EXPECT_LE(stats.requests_enqueued, config.queue_capacity_requests + config.batch_requests);
  EXPECT_GE(stats.requests_enqueued, config.queue_capacity_requests);

  ASSERT_TRUE(redis->Resume().ok());
  uint64_t stored = 0;
  for (std::future<LogReceipt>& f : futures) {
    LogReceipt receipt = GetReceipt(f);
    ASSERT_NE(receipt.status.code(), absl::StatusCode::kDeadlineExceeded);
    if (receipt.outcome == LogReceipt::Outcome::kStored) {
      stored += receipt.items;
    } else {
      EXPECT_EQ(receipt.status.code(), absl::StatusCode::kResourceExhausted) << receipt.status;
    }
  }
  stats = store.consumer->stats();
  // Redis came back before the I/O timeout: nothing accepted was lost.
  EXPECT_EQ(stored, stats.items_enqueued);
  EXPECT_EQ(stats.items_stored, stats.items_enqueued);
  EXPECT_EQ(stats.items_dropped_store_error, 0u);
}

TEST(RedisLogStoreTest, QueueFullWhileRedisIsDownCountsAsStoreErrors) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.queue_capacity_requests = 4;
  config.batch_requests = 2;
  config.linger = absl::ZeroDuration();
  config.io_timeout = absl::Milliseconds(200);
  LogStore store = OpenOrDie(config);
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));
  ASSERT_TRUE(redis->Pause().ok());
  // The writer waits on the stalled server until its I/O timeout; the
  // requests that find the queue full meanwhile are the queue's drops.
  int sent = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        store.consumer->Consume(MakeRequest(absl::StrCat("req-down-", sent++), 5));
        return !store.consumer->stats().store_up;
      },
      absl::Seconds(10)));
  // Now the store is down: a full queue is the store's doing.
  const LogStats before = store.consumer->stats();
  std::vector<std::future<LogReceipt>> futures;
  for (int r = 0; r < 200; ++r) {
    futures.push_back(store.consumer->Consume(MakeRequest(absl::StrCat("req-down-b", r), 5)));
  }
  const LogStats after = store.consumer->stats();
  ASSERT_TRUE(redis->Resume().ok());
  if (!after.store_up) {  // Still down when the burst ended (a reconnect takes a PING).
    EXPECT_EQ(after.items_dropped_queue_full, before.items_dropped_queue_full);
    EXPECT_GT(after.items_dropped_store_error, before.items_dropped_store_error);
  }
  for (std::future<LogReceipt>& f : futures) {
    const LogReceipt receipt = GetReceipt(f);
    if (receipt.outcome == LogReceipt::Outcome::kDropped && !after.store_up) {
      EXPECT_EQ(receipt.status.code(), absl::StatusCode::kUnavailable) << receipt.status;
    }
  }
}

TEST(RedisLogStoreTest, ByteBoundHoldsWhileRedisIsStalled) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.queue_capacity_requests = 1000;
  config.queue_capacity_bytes = 64 * 1024;  // About five 10-item requests.
  config.batch_requests = 2;
  config.io_timeout = absl::Seconds(20);
  LogStore store = OpenOrDie(config);
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));

  ASSERT_TRUE(redis->Pause().ok());
  std::vector<std::future<LogReceipt>> futures;
  uint64_t max_bytes = 0;
  for (int r = 0; r < 100; ++r) {
    futures.push_back(store.consumer->Consume(MakeRequest(absl::StrCat("req-bytes-", r), 10)));
    max_bytes = std::max(max_bytes, store.consumer->stats().queue_bytes);
  }
  EXPECT_LE(max_bytes, config.queue_capacity_bytes);
  EXPECT_GT(max_bytes, config.queue_capacity_bytes / 2);
  const LogStats stats = store.consumer->stats();
  EXPECT_LE(stats.requests_enqueued, 5u + config.batch_requests + 1);
  EXPECT_GT(stats.items_dropped_queue_full, 0u);
  ASSERT_TRUE(redis->Resume().ok());
  for (std::future<LogReceipt>& f : futures) {
    EXPECT_NE(GetReceipt(f).status.code(), absl::StatusCode::kDeadlineExceeded);
  }
}

TEST(RedisLogStoreTest, SlowRedisTimesOutDropsAndRecoversWithoutImmortalKeys) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.io_timeout = absl::Milliseconds(300);
  config.batch_requests = 4;
  LogStore store = OpenOrDie(config);
  Producer producer(store.consumer.get(), "req-slow", 200, absl::Milliseconds(5));
  ASSERT_TRUE(WaitForStored(store, 200 * 10));

  ASSERT_TRUE(redis->Pause().ok());
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().items_dropped_store_error > 0; },
                      absl::Seconds(10)));
  EXPECT_FALSE(store.consumer->stats().store_up);
  ASSERT_TRUE(redis->Resume().ok());
  const uint64_t stored_at_resume = store.consumer->stats().items_stored;
  ASSERT_TRUE(WaitForStored(store, stored_at_resume + 200 * 10));
  producer.Stop();
  for (std::future<LogReceipt>& f : producer.futures()) {
    EXPECT_NE(GetReceipt(f).status.code(), absl::StatusCode::kDeadlineExceeded);
  }
  const LogStats stats = store.consumer->stats();
  EXPECT_GE(stats.reconnects, 1u);
  EXPECT_EQ(stats.items_enqueued,
            stats.items_stored + stats.items_dropped_store_error + stats.items_unknown);

  // The writer hung up mid-batch; Redis then ran whatever it had received.
  // MULTI/EXEC means a cut transaction left nothing behind, so every key
  // still has its TTL.
  absl::StatusOr<std::vector<std::string>> immortal = KeysWithoutTtl(*redis);
  ASSERT_TRUE(immortal.ok()) << immortal.status();
  EXPECT_TRUE(immortal->empty()) << immortal->size() << " keys without TTL, e.g. "
                                 << immortal->front();
}

TEST(RedisLogStoreTest, RedisStoppedAndResumedUnderLoadEveryLineIsCountedOnce) {
  // Redis frozen (SIGSTOP) longer than the I/O timeout under load, then
  // resumed: every line handed over ends stored, dropped (by reason) or
  // unknown (a batch that went out whole and timed out: Redis runs it when
  // it wakes), exactly once, in the counters as in the receipts, and
  // nothing stays in flight once the writers have drained.
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.io_timeout = absl::Milliseconds(200);
  config.batch_requests = 4;
  config.queue_capacity_requests = 32;
  LogStore store = OpenOrDie(config);
  Producer producer(store.consumer.get(), "req-frozen", 20, absl::Milliseconds(1));
  ASSERT_TRUE(WaitForStored(store, 20 * 20));
  ASSERT_TRUE(redis->Pause().ok());
  ASSERT_TRUE(
      WaitFor([&] { return store.consumer->stats().items_unknown > 0; }, absl::Seconds(10)));
  ASSERT_TRUE(WaitFor([&] { return test_util::ItemsDropped(store.consumer->stats()) > 0; },
                      absl::Seconds(10)));
  ASSERT_TRUE(redis->Resume().ok());
  const uint64_t stored_at_resume = store.consumer->stats().items_stored;
  ASSERT_TRUE(WaitForStored(store, stored_at_resume + 401));
  producer.Stop();
  uint64_t stored = 0, dropped = 0, unknown = 0;
  for (std::future<LogReceipt>& f : producer.futures()) {
    const LogReceipt receipt = GetReceipt(f);
    ASSERT_NE(receipt.status.code(), absl::StatusCode::kDeadlineExceeded);
    switch (receipt.outcome) {
      case LogReceipt::Outcome::kStored:
        stored += receipt.items;
        break;
      case LogReceipt::Outcome::kDropped:
        dropped += receipt.items;
        break;
      case LogReceipt::Outcome::kUnknown:
        unknown += receipt.items;
        break;
    }
  }
  const LogStats stats = store.consumer->stats();
  EXPECT_EQ(stats.items_in_flight, 0u);
  EXPECT_EQ(stats.items_handed, uint64_t(producer.sent()) * 20);
  EXPECT_EQ(stats.items_handed, stats.items_stored + stats.items_dropped_queue_full +
                                    stats.items_dropped_store_error + stats.items_dropped_shutdown +
                                    stats.items_unknown);
  EXPECT_EQ(stats.items_stored, stored);
  EXPECT_EQ(stats.items_unknown, unknown);
  EXPECT_EQ(stats.items_dropped_queue_full + stats.items_dropped_store_error, dropped);
  EXPECT_GT(unknown, 0u);
}

TEST(RedisLogStoreTest, ShutdownWithAStalledRedisCancelsWhatIsLeftWithinTheBound) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.io_timeout = absl::Seconds(1);
  config.batch_requests = 4;
  LogStore store = OpenOrDie(config);
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));
  ASSERT_TRUE(redis->Pause().ok());
  std::vector<std::future<LogReceipt>> futures;
  for (int r = 0; r < 30; ++r) {
    futures.push_back(store.consumer->Consume(MakeRequest(absl::StrCat("req-shut-", r), 10)));
  }
  const absl::Time start = absl::Now();
  store.consumer->Shutdown(absl::Milliseconds(100));
  const absl::Duration took = absl::Now() - start;
  // The bound: the timeout plus the batch in flight (one I/O timeout), with
  // slack for a loaded machine.
  EXPECT_LT(took, absl::Seconds(3));

  int cancelled = 0;
  for (std::future<LogReceipt>& f : futures) {
    ASSERT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    LogReceipt receipt = f.get();
    // The batch in the writer's hands went out whole to a stalled Redis:
    // its outcome is unknown (Redis runs it when it resumes).
    EXPECT_NE(receipt.outcome, LogReceipt::Outcome::kStored);
    if (receipt.status.code() == absl::StatusCode::kCancelled) ++cancelled;
  }
  // At most one batch was in the writer's hands; the rest were cancelled.
  EXPECT_GE(cancelled, 30 - 4);
  const LogStats stats = store.consumer->stats();
  EXPECT_EQ(stats.items_dropped_shutdown, uint64_t(cancelled) * 10);
  EXPECT_EQ(stats.items_dropped_shutdown + stats.items_dropped_store_error + stats.items_unknown,
            300u);
  EXPECT_EQ(stats.items_handed, 300u);
  EXPECT_EQ(stats.queue_requests, 0u);
  ASSERT_TRUE(redis->Resume().ok());
}

TEST(RedisLogStoreTest, RedisDyingMidWriteDoesNotKillTheProcess) {
  // hiredis writes with write(2): a peer that vanishes while a large
  // pipeline is going out raises SIGPIPE, whose default action would end
  // the ranking server. Stall Redis so a ~10 MB batch is stuck mid-write,
  // then kill it.
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.io_timeout = absl::Seconds(20);
  config.batch_requests = 16;
  LogStore store = OpenOrDie(config);
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));
  ASSERT_TRUE(redis->Pause().ok());
  const RequestLogs logs = MakeRequest("req-pipe", 500);
  std::vector<std::future<LogReceipt>> futures;
  for (int r = 0; r < 16; ++r) {
    RequestLogs copy = logs;
    copy.request_id = absl::StrCat("req-pipe-", r);
    futures.push_back(store.consumer->Consume(std::move(copy)));
  }
  // Let the writer fill the socket buffers and block in write().
  ASSERT_TRUE(
      WaitFor([&] { return store.consumer->stats().queue_requests < 16; }, absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(200));
  ASSERT_TRUE(redis->Kill().ok());
  for (std::future<LogReceipt>& f : futures) {
    LogReceipt receipt = GetReceipt(f);
    EXPECT_NE(receipt.outcome, LogReceipt::Outcome::kStored);
    EXPECT_EQ(receipt.status.code(), absl::StatusCode::kUnavailable) << receipt.status;
  }
  // Still alive, and writing again once Redis is back (and the sink's
  // backoff has let it reconnect).
  ASSERT_TRUE(redis->Restart().ok());
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));
  std::future<LogReceipt> after = store.consumer->Consume(MakeRequest("req-pipe-after", 5));
  EXPECT_EQ(GetReceipt(after).outcome, LogReceipt::Outcome::kStored);
}

TEST(RedisLogStoreTest, LargeBatchOnAConnectionThatDiedWhileIdleIsRetried) {
  // The other SIGPIPE path: Redis restarts while the writer is idle, then a
  // ~10 MB batch goes out on the dead connection. The peer answers the
  // first segment with a reset and hiredis's next write(2) hits EPIPE.
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.batch_requests = 16;
  config.ttl = absl::Seconds(60);
  LogStore store = OpenOrDie(config);
  ASSERT_TRUE(WaitFor([&] { return store.consumer->stats().store_up; }, absl::Seconds(10)));
  ASSERT_TRUE(redis->Restart().ok());

  const RequestLogs logs = MakeRequest("req-stale", 500);
  std::vector<std::future<LogReceipt>> futures;
  for (int r = 0; r < 16; ++r) {
    RequestLogs copy = logs;
    copy.request_id = absl::StrCat("req-stale-", r);
    futures.push_back(store.consumer->Consume(std::move(copy)));
  }
  for (std::future<LogReceipt>& f : futures) {
    LogReceipt receipt = GetReceipt(f);
    EXPECT_EQ(receipt.outcome, LogReceipt::Outcome::kStored) << receipt.status;
  }
  EXPECT_EQ(store.consumer->stats().items_stored, 16u * 500);
  auto values = store.reader->Fetch("req-stale-15", ItemIds(logs));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[499], logs.items[499].text);
}

TEST(RedisLogStoreTest, PasswordProtectedRedis) {
  test::RedisProcessOptions options;
  options.password = "s3cret pass";
  std::unique_ptr<RedisProcess> redis = StartRedis(options);
  ASSERT_NE(redis, nullptr);

  LogStoreConfig config = RedisConfig(*redis);
  config.redis_password = "s3cret pass";
  LogStore store = OpenOrDie(config);
  const RequestLogs logs = MakeRequest("req-auth", 5);
  std::future<LogReceipt> f = store.consumer->Consume(logs);
  ASSERT_EQ(GetReceipt(f).outcome, LogReceipt::Outcome::kStored);
  auto values = store.reader->Fetch(logs.request_id, ItemIds(logs));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[4], logs.items[4].text);

  // A reader without the password is refused, and says why.
  LogStoreConfig no_password = config;
  no_password.redis_password.clear();
  absl::StatusOr<std::unique_ptr<LogReader>> reader = OpenRedisLogReader(no_password);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto refused = (*reader)->Fetch(logs.request_id, ItemIds(logs));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnauthenticated) << refused.status();

  // A writer with the wrong password drops, counts, and stays down.
  LogStoreConfig wrong = config;
  wrong.redis_password = "wrong";
  LogStore bad = OpenOrDie(wrong);
  std::future<LogReceipt> dropped = bad.consumer->Consume(MakeRequest("req-bad-auth", 5));
  LogReceipt receipt = GetReceipt(dropped);
  EXPECT_EQ(receipt.outcome, LogReceipt::Outcome::kDropped);
  EXPECT_EQ(receipt.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(receipt.status.message(), "AUTH")) << receipt.status;
  EXPECT_FALSE(bad.consumer->stats().store_up);
  EXPECT_EQ(bad.consumer->stats().items_dropped_store_error, 5u);
}

TEST(RedisLogStoreTest, ReaderAndWriterRecoverFromARestartWhileIdle) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  config.ttl = absl::Seconds(60);
  LogStore store = OpenOrDie(config);
  const RequestLogs logs = MakeRequest("req-reader", 4);
  std::future<LogReceipt> f = store.consumer->Consume(logs);
  ASSERT_EQ(GetReceipt(f).outcome, LogReceipt::Outcome::kStored);
  ASSERT_TRUE(store.reader->Fetch(logs.request_id, ItemIds(logs)).ok());

  ASSERT_TRUE(redis->Kill().ok());
  auto down = store.reader->Fetch(logs.request_id, ItemIds(logs));
  EXPECT_EQ(down.status().code(), absl::StatusCode::kUnavailable) << down.status();

  ASSERT_TRUE(redis->Restart().ok());  // Empty: persistence is off.
  // The writer's connection died while idle; it finds out on this write
  // and retries on a fresh connection instead of dropping.
  std::future<LogReceipt> again = store.consumer->Consume(logs);
  LogReceipt receipt = GetReceipt(again);
  ASSERT_EQ(receipt.outcome, LogReceipt::Outcome::kStored) << receipt.status;
  EXPECT_EQ(store.consumer->stats().items_dropped_store_error, 0u);
  EXPECT_GE(store.consumer->stats().reconnects, 1u);
  auto values = store.reader->Fetch(logs.request_id, ItemIds(logs));
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[2], logs.items[2].text);
}

TEST(RedisLogStoreTest, ReaderOnAStaleConnectionRetriesOnce) {
  std::unique_ptr<RedisProcess> redis = StartRedis();
  ASSERT_NE(redis, nullptr);
  LogStoreConfig config = RedisConfig(*redis);
  absl::StatusOr<std::unique_ptr<LogReader>> reader = OpenRedisLogReader(config);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> ids = {"sku-1"};
  ASSERT_TRUE((*reader)->Fetch("req-x", ids).ok());  // Connected now.
  ASSERT_TRUE(redis->Restart().ok());                // That connection is dead.
  auto values = (*reader)->Fetch("req-x", ids);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_FALSE((*values)[0].has_value());
}

TEST(RedisLogStoreTest, BadConfigIsInvalidArgument) {
  auto expect_invalid = [](LogStoreConfig config, const char* what) {
    absl::StatusOr<LogStore> store = OpenLogStore(config);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << what;
  };
  LogStoreConfig redis;
  redis.backend = LogStoreConfig::Backend::kRedis;
  LogStoreConfig c = redis;
  c.redis_addr = "localhost";
  expect_invalid(c, "no port");
  c.redis_addr = "localhost:0";
  expect_invalid(c, "port 0");
  c.redis_addr = ":6379";
  expect_invalid(c, "no host");
  c = redis;
  c.io_timeout = absl::ZeroDuration();
  expect_invalid(c, "zero I/O timeout");
  c = redis;
  c.reconnect_backoff_max = absl::Milliseconds(1);
  expect_invalid(c, "backoff max < min");
  LogStoreConfig memory;
  c = memory;
  c.queue_capacity_requests = 0;
  expect_invalid(c, "zero capacity");
  c = memory;
  c.batch_requests = 0;
  expect_invalid(c, "zero batch");
  c = memory;
  c.ttl = absl::ZeroDuration();
  expect_invalid(c, "zero TTL");
  c = memory;
  c.ttl = absl::Hours(24 * 365);
  expect_invalid(c, "one-year TTL");
  c = memory;
  c.compress = true;
  c.compress_level = 23;
  expect_invalid(c, "zstd level 23");

  // Redis being down is not a config error.
  c = redis;
  c.redis_addr = "127.0.0.1:1";
  EXPECT_TRUE(OpenLogStore(c).ok());
}

}  // namespace
}  // namespace rankwire::logstore
