// The log line from its one description: every item's line read back from
// the store (columns, rendered on read) equals the line sent inline, for
// real ranked requests, odd values and odd ids, through the in-process
// store and a real Redis; and columns keep the store small.
#include "ranking/log_line.h"

#include <cmath>
#include <future>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "logstore/format/log_columns.h"
#include "logstore/log_store.h"
#include "tests/support/log_test_util.h"
#include "tests/support/redis_process.h"
#include "tests/support/shipped_model_test.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

rank::v1::RankRequest Request(uint64_t seed, uint32_t candidates, uint32_t top_n = 10) {
  workload::WorkloadOptions options;
  options.candidates = candidates;
  options.top_n = std::min(top_n, candidates);
  return workload::WorkloadGenerator(options).Make(seed);
}

// A request whose features and ids hold what a line must carry exactly:
// -0, subnormals, values a hair from a six-digit tie, huge and tiny
// magnitudes; ids with non-ASCII, control bytes, quotes and newlines.
rank::v1::RankRequest OddRequest(uint32_t candidates) {
  rank::v1::RankRequest r = Request(7, candidates, 3);
  const float odd[] = {-0.0f,       1e-40f,  -1.4e-45f, 1.2345650f, 1.2345649f,  0.000123456f,
                       9.999995e5f, 3.4e38f, -3.4e38f,  1e-30f,     16777216.0f, -1.0f};
  const char* ids[] = {
      "\xc3\xa9t\xc3\xa9",        "a\nb",   "q\"uote", "tab\there",       "\x01\x02",
      "\xe4\xb8\xad\xe6\x96\x87", "sp ace", "#0",      "\xf0\x9f\x98\x80"};
  for (int c = 0; c < r.candidates_size(); ++c) {
    rank::v1::Candidate* cand = r.mutable_candidates(c);
    for (int f = 0; f < cand->features_size(); ++f) {
      if ((c + f) % 3 == 0) cand->set_features(f, odd[(c * 7 + f) % 12]);
    }
    if (c < 9) cand->set_item_id(absl::StrCat(ids[c], "-", c));
  }
  (*r.mutable_context())["query"] = "line\nbreak \"quoted\" \xe2\x82\xac";
  return r;
}

class LogLineTest : public ShippedModelTest {
 protected:
  // Stores `request`'s logs in `store`, reads every item back (all at once,
  // and the top ones alone) and checks each against its inline line.
  void ExpectStoredEqualsInline(logstore::LogStore& store, const rank::v1::RankRequest& request) {
    const RankResult inline_result = ranker_->Rank(request, LogDetail::kInline).result;
    RankOutput deferred = ranker_->Rank(request, LogDetail::kDeferred);
    ASSERT_NE(deferred.logs, nullptr);
    logstore::RequestLogs logs;
    logs.request_id = request.request_id();
    logs.renderer = std::move(deferred.logs);
    std::future<logstore::LogReceipt> f = store.consumer->Consume(std::move(logs));
    ASSERT_EQ(logstore::test_util::GetReceipt(f).outcome, logstore::LogReceipt::Outcome::kStored);
    std::vector<std::string> ids;
    for (size_t i = 0; i < inline_result.size(); ++i) ids.emplace_back(inline_result.id(i));
    // Asked in reverse order, with one id that is not an item.
    std::vector<std::string> asked(ids.rbegin(), ids.rend());
    asked.push_back("no-such-item");
    absl::StatusOr<std::vector<std::optional<std::string>>> read =
        store.reader->Fetch(request.request_id(), asked);
    ASSERT_TRUE(read.ok()) << read.status();
    ASSERT_EQ(read->size(), asked.size());
    for (size_t k = 0; k + 1 < asked.size(); ++k) {
      const size_t i = ids.size() - 1 - k;
      ASSERT_TRUE((*read)[k].has_value()) << "item " << i;
      ASSERT_EQ(*(*read)[k], inline_result.log(i)) << request.request_id() << " item " << i;
    }
    EXPECT_FALSE(read->back().has_value());
  }
};

TEST_F(LogLineTest, ColumnsRenderEveryItemByteIdenticalToTheInlineLine) {
  for (uint64_t seed = 0; seed < 30; ++seed) {
    const uint32_t candidates = seed < 10 ? 1 + static_cast<uint32_t>(seed) * 57 : 500;
    const rank::v1::RankRequest request = Request(seed, candidates, 1 + seed % 20);
    const RankResult inline_result = ranker_->Rank(request, LogDetail::kInline).result;
    RankOutput deferred = ranker_->Rank(request, LogDetail::kDeferred);
    logstore::PackedFields fields;
    ASSERT_TRUE(deferred.logs->RenderColumns(&fields));
    std::vector<std::string> names, values;
    fields.ForEach([&](absl::string_view name, absl::string_view value) {
      names.emplace_back(name);
      values.emplace_back(value);
    });
    ASSERT_EQ(names, (std::vector<std::string>{"", "#0", "#1"}));
    absl::StatusOr<logstore::ColumnsLayout> layout = logstore::ColumnsLayout::Parse(values[0]);
    ASSERT_TRUE(layout.ok()) << layout.status();
    absl::StatusOr<logstore::ColumnsReader> top =
        logstore::ColumnsReader::ParseTop(*layout, values[1]);
    absl::StatusOr<logstore::ColumnsReader> all =
        logstore::ColumnsReader::ParseAll(*layout, values[2]);
    ASSERT_TRUE(top.ok()) << top.status();
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(top->size(), std::min<uint32_t>(request.top_n(), candidates));
    ASSERT_EQ(all->size(), inline_result.size());
    for (size_t j = 0; j < top->size(); ++j) {
      ASSERT_EQ(top->id(j), inline_result.id(j));
      ASSERT_EQ(*top->Render(j), inline_result.log(j)) << "seed " << seed << " item " << j;
    }
    for (size_t c = 0; c < all->size(); ++c) {
      const size_t position = all->position(c);
      ASSERT_EQ(all->id(c), inline_result.id(position));
      ASSERT_EQ(*all->Render(c), inline_result.log(position)) << "seed " << seed << " item " << c;
    }
  }
}

TEST_F(LogLineTest, OddValuesAndIdsComeBackIdentical) {
  absl::StatusOr<logstore::LogStore> store = logstore::OpenLogStore(logstore::LogStoreConfig{});
  ASSERT_TRUE(store.ok()) << store.status();
  ExpectStoredEqualsInline(*store, OddRequest(40));
  ExpectStoredEqualsInline(*store, OddRequest(1));
}

TEST_F(LogLineTest, EveryItemReadBackFromTheMemoryStoreIsIdentical) {
  absl::StatusOr<logstore::LogStore> store = logstore::OpenLogStore(logstore::LogStoreConfig{});
  ASSERT_TRUE(store.ok()) << store.status();
  for (uint64_t seed = 100; seed < 104; ++seed)
    ExpectStoredEqualsInline(*store, Request(seed, 500));
  ExpectStoredEqualsInline(*store, Request(105, 2000, 50));
}

TEST_F(LogLineTest, EveryItemReadBackFromRedisIsIdentical) {
  absl::StatusOr<std::unique_ptr<test::RedisProcess>> redis = test::RedisProcess::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  logstore::LogStoreConfig config;
  config.backend = logstore::LogStoreConfig::Backend::kRedis;
  config.redis_addr = (*redis)->address();
  config.writers = 2;
  absl::StatusOr<logstore::LogStore> store = logstore::OpenLogStore(config);
  ASSERT_TRUE(store.ok()) << store.status();
  for (uint64_t seed = 200; seed < 203; ++seed)
    ExpectStoredEqualsInline(*store, Request(seed, 500));
  ExpectStoredEqualsInline(*store, OddRequest(300));
  // The hash: the layout, the top 10, every item.
  const std::string key = "rank:log:" + Request(200, 500).request_id();
  absl::StatusOr<test::RedisReply> fields = (*redis)->Command({"HLEN", key});
  ASSERT_TRUE(fields.ok()) << fields.status();
  EXPECT_EQ(fields->integer, 3);
  absl::StatusOr<test::RedisReply> layout = (*redis)->Command({"HGET", key, ""});
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_TRUE(logstore::ColumnsLayout::IsColumns(layout->str));
}

TEST_F(LogLineTest, TextFormatStillStoresTheSameText) {
  logstore::LogStoreConfig config;
  config.format = logstore::LogStoreConfig::Format::kText;
  config.compress = true;
  absl::StatusOr<logstore::LogStore> store = logstore::OpenLogStore(config);
  ASSERT_TRUE(store.ok()) << store.status();
  ExpectStoredEqualsInline(*store, Request(300, 200));
}

TEST_F(LogLineTest, ColumnsAreAFractionOfTheText) {
  const rank::v1::RankRequest request = Request(1, 500);
  RankOutput deferred = ranker_->Rank(request, LogDetail::kDeferred);
  logstore::PackedFields fields;
  ASSERT_TRUE(deferred.logs->RenderColumns(&fields));
  const RankResult inline_result = ranker_->Rank(request, LogDetail::kInline).result;
  // ~190 bytes of values per item (48 numbers, mostly 4 bytes each) against
  // ~1.2 KB of text.
  EXPECT_LT(fields.value_bytes() * 5, inline_result.log_bytes())
      << fields.value_bytes() << " vs " << inline_result.log_bytes();
}

}  // namespace
}  // namespace rankwire
