// Logs handed over unrendered (RequestLogs::renderer): the consumer counts
// and bounds them by the renderer's numbers, and the lines are made on the
// writer thread, never on the thread that called Consume().
#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "logstore/log_store.h"
#include "logstore/memory_log_store.h"
#include "tests/support/log_test_util.h"

namespace rankwire::logstore {
namespace {

using test_util::GetReceipt;

class CountingRenderer final : public LogRenderer {
 public:
  CountingRenderer(int items, std::atomic<int>* renders, std::thread::id* rendered_on)
      : items_(items), renders_(renders), rendered_on_(rendered_on) {}
  size_t ItemCount() const override { return items_; }
  size_t EstimatedBytes() const override { return items_ * 100; }
  void Render(std::vector<ItemLog>* items) override {
    renders_->fetch_add(1);
    *rendered_on_ = std::this_thread::get_id();
    for (int i = 0; i < items_; ++i) {
      items->push_back(ItemLog{absl::StrCat("sku-", i), absl::StrCat("line ", i)});
    }
  }

 private:
  int items_;
  std::atomic<int>* renders_;
  std::thread::id* rendered_on_;
};

TEST(LogRendererTest, LinesAreMadeOnTheWriterThreadAndStored) {
  auto table = std::make_shared<MemoryLogTable>();
  absl::StatusOr<LogStore> store = OpenMemoryLogStore(LogStoreConfig{}, table);
  ASSERT_TRUE(store.ok()) << store.status();
  std::atomic<int> renders{0};
  std::thread::id rendered_on;
  RequestLogs logs;
  logs.request_id = "req-deferred";
  logs.renderer = std::make_shared<CountingRenderer>(7, &renders, &rendered_on);
  std::future<LogReceipt> f = store->consumer->Consume(std::move(logs));
  LogReceipt receipt = GetReceipt(f);
  EXPECT_EQ(receipt.outcome, LogReceipt::Outcome::kStored);
  EXPECT_EQ(receipt.items, 7u);
  EXPECT_EQ(renders.load(), 1);
  EXPECT_NE(rendered_on, std::this_thread::get_id());
  EXPECT_EQ(store->consumer->stats().items_enqueued, 7u);
  EXPECT_EQ(store->consumer->stats().items_stored, 7u);
  absl::StatusOr<std::vector<std::optional<std::string>>> read =
      store->reader->Fetch("req-deferred", std::vector<std::string>{"sku-0", "sku-6", "sku-7"});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[0], "line 0");
  EXPECT_EQ((*read)[1], "line 6");
  EXPECT_FALSE((*read)[2].has_value());
}

TEST(LogRendererTest, TheQueueBoundUsesTheRenderersEstimate) {
  LogStoreConfig config;
  config.queue_capacity_bytes = 1000;  // One 10-item request is charged ~1000.
  absl::StatusOr<LogStore> store = OpenLogStore(config);
  ASSERT_TRUE(store.ok()) << store.status();
  std::atomic<int> renders{0};
  std::thread::id rendered_on;
  RequestLogs logs;
  logs.request_id = "req-too-big";
  logs.renderer = std::make_shared<CountingRenderer>(20, &renders, &rendered_on);
  std::future<LogReceipt> f = store->consumer->Consume(std::move(logs));
  LogReceipt receipt = GetReceipt(f);
  EXPECT_EQ(receipt.outcome, LogReceipt::Outcome::kDropped);
  EXPECT_EQ(receipt.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(store->consumer->stats().items_dropped_queue_full, 20u);
  EXPECT_EQ(renders.load(), 0);  // Dropped before anything was formatted.
}

// A renderer with a structured form that writes some fields and then gives
// up: the consumer must store the text only, none of the fields it took
// back.
class GivingUpRenderer final : public LogRenderer {
 public:
  size_t ItemCount() const override { return 3; }
  size_t EstimatedBytes() const override { return 300; }
  void Render(std::vector<ItemLog>* items) override {
    for (int i = 0; i < 3; ++i) items->push_back(ItemLog{absl::StrCat("sku-", i), "text line"});
  }
  bool RenderColumns(PackedFields* fields) override {
    const PackedFields::Mark start = fields->mark();
    fields->Add("", "L\x03half a layout");
    fields->Add("#0", "Tnot a top");
    const absl::string_view pieces[] = {"A", "not all"};
    fields->AddPieces("#1", pieces);
    fields->RollBack(start);
    return false;
  }
};

TEST(LogRendererTest, ARendererThatGivesUpOnColumnsIsStoredAsTextOnly) {
  auto table = std::make_shared<MemoryLogTable>();
  absl::StatusOr<LogStore> store = OpenMemoryLogStore(LogStoreConfig{}, table);
  ASSERT_TRUE(store.ok()) << store.status();
  RequestLogs logs;
  logs.request_id = "req-gives-up";
  logs.renderer = std::make_shared<GivingUpRenderer>();
  std::future<LogReceipt> f = store->consumer->Consume(std::move(logs));
  ASSERT_EQ(GetReceipt(f).outcome, LogReceipt::Outcome::kStored);
  absl::StatusOr<std::vector<std::optional<std::string>>> read =
      store->reader->Fetch("req-gives-up", std::vector<std::string>{"sku-0", "sku-2", "sku-9", ""});
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[0], "text line");
  EXPECT_EQ((*read)[1], "text line");
  EXPECT_FALSE((*read)[2].has_value()) << "a rolled-back field was stored";
  EXPECT_FALSE((*read)[3].has_value()) << "a layout was stored for text";
  const LogStats stats = store->consumer->stats();
  EXPECT_EQ(stats.items_stored, 3u);
  // 'T' + "text line" per item: the stored value bytes, nothing rolled back.
  EXPECT_EQ(stats.bytes_stored, 3u * 10u);
}

TEST(LogRendererTest, StoredBytesAreTheValuesWritten) {
  auto table = std::make_shared<MemoryLogTable>();
  absl::StatusOr<LogStore> store = OpenMemoryLogStore(LogStoreConfig{}, table);
  ASSERT_TRUE(store.ok()) << store.status();
  std::atomic<int> renders{0};
  std::thread::id rendered_on;
  RequestLogs logs;
  logs.request_id = "req-bytes";
  logs.renderer = std::make_shared<CountingRenderer>(12, &renders, &rendered_on);
  std::future<LogReceipt> f = store->consumer->Consume(std::move(logs));
  ASSERT_EQ(GetReceipt(f).outcome, LogReceipt::Outcome::kStored);
  // "line 0" .. "line 11", each tagged 'T': 10 values of 7 bytes, 2 of 8.
  EXPECT_EQ(store->consumer->stats().bytes_stored, 10u * 7u + 2u * 8u);
}

}  // namespace
}  // namespace rankwire::logstore
