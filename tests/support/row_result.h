// RowResult: a RankResult written as rows (a key table and one RankedItem
// per item, each with its metrics), for tests that build a result by hand,
// change one field and encode it again. Build() appends the rows to a
// columnar RankResult with RankResult::AppendItem, so whatever the rows say
// that the model cannot hold (a key index out of range, a value of another
// type than its key, a key twice in one item) is AppendItem's
// InvalidArgument.
//
// The model keeps no per-item metric order: a row's metrics come back from
// RowResult::Of(result) in key-table order, whatever order they were
// written in.
//
// Example:
//   test::RowResult rows;
//   const uint32_t ctr = rows.AddKey("score.ctr", MetricType::kDouble);
//   rows.items.push_back({"sku-1", 0.5, 1, {{ctr, MetricValue::Double(0.25)}}, ""});
//   rows.items[0].score = 0.75;
//   RankResult r = rows.Build();
//
// Header-only, test-only.
#ifndef RANKWIRE_TESTS_SUPPORT_ROW_RESULT_H_
#define RANKWIRE_TESTS_SUPPORT_ROW_RESULT_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/rank_result.h"

namespace rankwire {

// How gtest prints a MetricRef (and so an optional one) in a failure.
inline void PrintTo(const MetricRef& v, std::ostream* os) {
  *os << MetricTypeName(v.type()) << " " << v.DebugString();
}

namespace test {

struct RowResult {
  std::vector<MetricKey> keys;
  std::vector<RankedItem> items;  // Rank order.

  // Appends a key; returns its index.
  uint32_t AddKey(std::string name, MetricType type) {
    keys.push_back(MetricKey{std::move(name), type});
    return static_cast<uint32_t>(keys.size() - 1);
  }
  // Appends an item with no metrics; returns it for filling in.
  RankedItem& AddItem(std::string id, double score, uint32_t position) {
    RankedItem& item = items.emplace_back();
    item.item_id = std::move(id);
    item.score = score;
    item.position = position;
    return item;
  }

  // The columnar result, or AppendItem's error for the first row it
  // refuses.
  absl::StatusOr<RankResult> TryBuild() const {
    RankResult r;
    for (const MetricKey& k : keys) r.AddKey(k.name, k.type);
    for (const RankedItem& item : items) {
      if (absl::Status s = r.AppendItem(item); !s.ok()) return s;
    }
    return r;
  }
  // REQUIRES: rows the model can hold (a test's own fixture); aborts with
  // the reason otherwise.
  RankResult Build() const {
    absl::StatusOr<RankResult> r = TryBuild();
    if (!r.ok()) {
      std::fprintf(stderr, "RowResult::Build: %s\n", std::string(r.status().message()).c_str());
      std::abort();
    }
    return *std::move(r);
  }

  // A result's rows (metrics in key-table order).
  static RowResult Of(const RankResult& r) {
    RowResult rows;
    rows.keys.assign(r.keys().begin(), r.keys().end());
    rows.items.reserve(r.size());
    for (size_t i = 0; i < r.size(); ++i) rows.items.push_back(r.Item(i));
    return rows;
  }
};

}  // namespace test
}  // namespace rankwire

#endif  // RANKWIRE_TESTS_SUPPORT_ROW_RESULT_H_
