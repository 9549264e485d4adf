// Helpers shared by the log store tests: ranker-like log lines, requests
// made of them, and polling with a deadline (tests wait for conditions, never
// for a fixed time, except where the TTL itself is what is tested).
#ifndef RANKWIRE_TESTS_SUPPORT_LOG_TEST_UTIL_H_
#define RANKWIRE_TESTS_SUPPORT_LOG_TEST_UTIL_H_

#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "logstore/log_store.h"

namespace rankwire::logstore::test_util {

// splitmix64: a fixed generator so the lines are the same on every run.
inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline std::string ItemId(int item) { return absl::StrCat("sku-", 100000 + item * 7919); }

// A line shaped like the ranker's (header, feature dump, head scores),
// about `approx_bytes` long.
inline std::string LogLine(const std::string& request_id, int item, size_t approx_bytes = 1200) {
  static const char* const kFeatures[] = {
      "price",        "discount_rate", "ctr_7d",     "cvr_7d",    "sales_30d", "rating",
      "review_count", "stock",         "shop_score", "brand_pop", "age_days",  "return_rate"};
  uint64_t state = Mix(std::hash<std::string>()(request_id) ^ (uint64_t(item) << 32));
  auto next = [&state] { return state = Mix(state); };
  std::string line =
      absl::StrCat("req=", request_id, " ts=1764400000123 scene=search user=u-", next() % 100000,
                   " bucket=b", next() % 4, " model=ecom_search_lr@2025.11 item=", ItemId(item),
                   " pos=", item + 1, " pre=", next() % 500 + 1, " src=cf#", next() % 50,
                   " query=\"running shoes\" device=\"ios\" | feats");
  while (line.size() + 40 < approx_bytes) {
    for (const char* f : kFeatures) {
      absl::StrAppendFormat(&line, " %s=%.4g", f, double(next() % 100000) / 137.0);
    }
    absl::StrAppendFormat(&line, " | ctr p=%.6f logit=%.5f bias=-3.2", double(next() % 1000) / 1e4,
                          -double(next() % 50000) / 1e4);
  }
  return line;
}

// Uniformly random bytes: zstd cannot shrink them.
inline std::string RandomBytes(uint64_t seed, size_t bytes) {
  std::string text(bytes, ' ');
  uint64_t state = seed;
  for (char& c : text) c = static_cast<char>((state = Mix(state)) & 0xff);
  return text;
}

inline RequestLogs MakeRequest(const std::string& request_id, int items,
                               size_t approx_bytes = 1200) {
  RequestLogs logs;
  logs.request_id = request_id;
  for (int i = 0; i < items; ++i) {
    logs.items.push_back(ItemLog{ItemId(i), LogLine(request_id, i, approx_bytes)});
  }
  return logs;
}

inline std::vector<std::string> ItemIds(const RequestLogs& logs) {
  std::vector<std::string> ids;
  for (const ItemLog& item : logs.items) ids.push_back(item.item_id);
  return ids;
}

inline size_t TextBytes(const RequestLogs& logs) {
  size_t n = 0;
  for (const ItemLog& item : logs.items) n += item.text.size();
  return n;
}

// Polls `condition` every 5 ms until it holds or `timeout` passes; returns
// its last value.
template <typename Condition>
bool WaitFor(Condition condition, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() >= deadline) return condition();
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

// The receipt, or a kDropped receipt with DeadlineExceeded if the future did
// not complete within `timeout` (a test failure: every future completes).
inline LogReceipt GetReceipt(std::future<LogReceipt>& future,
                             absl::Duration timeout = absl::Seconds(20)) {
  if (future.wait_for(absl::ToChronoMilliseconds(timeout)) != std::future_status::ready) {
    return LogReceipt{LogReceipt::Outcome::kDropped, 0,
                      absl::DeadlineExceededError("future did not complete")};
  }
  return future.get();
}

inline int64_t ItemsDropped(const LogStats& s) {
  return s.items_dropped_queue_full + s.items_dropped_store_error + s.items_dropped_shutdown;
}

}  // namespace rankwire::logstore::test_util

#endif  // RANKWIRE_TESTS_SUPPORT_LOG_TEST_UTIL_H_
