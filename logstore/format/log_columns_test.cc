// Layout version 3 (log_columns.h): what ColumnsWriter writes reads back
// through ColumnsReader as the values it was given, in every number form,
// and the reader refuses, whole and whatever is asked of it afterwards,
// every value LOGS.md says it refuses.
#include "logstore/format/log_columns.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "logstore/format/packed_fields.h"

namespace rankwire::logstore {
namespace {

// A request of n items, values in request order: an id, a recall source
// (a string), a recall rank (an int), and number columns of each form.
struct Request {
  ColumnsLayout layout;
  std::vector<uint32_t> order;  // Request index by position.
  std::string ids;
  std::vector<uint32_t> ends;
  std::vector<uint32_t> sources, ranks;
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<double>> doubles;
};

Request MakeRequest(uint32_t n, uint32_t top) {
  Request q;
  q.layout.items = n;
  q.layout.top_items = top;
  q.layout.strings = {"text_bm25", "i2i_cf", ""};
  q.layout.pieces = {
      "req=r item=", " pos=", " pre=", " src=", "#", " f=", " c=", " w=", " t=", " d=", " e=", ""};
  q.layout.kinds = {LogSlot::kItemId, LogSlot::kPosition, LogSlot::kRequestIndex, LogSlot::kString,
                    LogSlot::kInt,    LogSlot::kNumber,   LogSlot::kNumber,       LogSlot::kNumber,
                    LogSlot::kNumber, LogSlot::kNumber,   LogSlot::kNumber};
  for (uint32_t c = 0; c < n; ++c) {
    absl::StrAppend(&q.ids, c % 3 == 0 ? "sku-" : "\n\x01", c * 7919);
    q.ends.push_back(static_cast<uint32_t>(q.ids.size()));
    q.sources.push_back(c % 3);
    q.ranks.push_back(c * 100003 % 70000);
  }
  q.order.resize(n);
  std::iota(q.order.begin(), q.order.end(), 0u);
  for (uint32_t r = 0; r < n; ++r) std::swap(q.order[r], q.order[(r * 7 + 3) % n]);
  q.floats.assign(3, std::vector<float>(n));
  q.doubles.assign(3, std::vector<double>(n));
  for (uint32_t c = 0; c < n; ++c) {
    q.floats[0][c] = 0.1f * static_cast<float>(c) - 7.3f;                    // raw
    q.floats[1][c] = 2.5f;                                                   // constant
    q.floats[2][c] = static_cast<float>(c * 131 % (n > 200 ? 60000 : 255));  // whole
    q.doubles[0][c] = 0.5 + 0.49 * std::sin(c);                              // top byte [0.5, 1)
    q.doubles[1][c] = c % 2 == 0 ? -0.0 : std::numeric_limits<double>::infinity();
    q.doubles[2][c] = c == 1 ? std::nan("") : 1e-40 * (c + 1);  // raw, odd values
  }
  return q;
}

void Write(const Request& q, ColumnsWriter* w) {
  w->ItemIds(q.ids, q.ends.data());
  w->Strings(q.sources.data());
  w->Ints(q.ranks.data());
  for (const auto& column : q.floats) w->Numbers(column.data());
  for (const auto& column : q.doubles) w->Numbers(column.data());
}

std::string Join(const std::vector<absl::string_view>& pieces) {
  std::string out;
  for (absl::string_view p : pieces) out.append(p.data(), p.size());
  return out;
}

std::string Number(float v) {
  std::string out;
  AppendLogNumberText(v, &out);
  return out;
}

// The text of the item of request index c at position p.
std::string Line(const Request& q, uint32_t c, uint32_t p) {
  const uint32_t begin = c == 0 ? 0 : q.ends[c - 1];
  std::string out =
      absl::StrCat("req=r item=", q.ids.substr(begin, q.ends[c] - begin), " pos=", p + 1,
                   " pre=", c + 1, " src=", q.layout.strings[q.sources[c]], "#", q.ranks[c]);
  const char* labels[] = {" f=", " c=", " w=", " t=", " d=", " e="};
  for (int k = 0; k < 3; ++k) absl::StrAppend(&out, labels[k], Number(q.floats[k][c]));
  for (int k = 0; k < 3; ++k) {
    absl::StrAppend(&out, labels[3 + k], Number(static_cast<float>(q.doubles[k][c])));
  }
  return out;
}

TEST(LogColumnsTest, WhatIsWrittenReadsBackAsTheLines) {
  for (uint32_t n : {1u, 2u, 3u, 10u, 255u, 500u}) {
    for (uint32_t top : {1u, 10u, n}) {
      if (top > n) continue;
      SCOPED_TRACE(absl::StrCat("n=", n, " top=", top));
      const Request q = MakeRequest(n, top);
      ColumnsWriter w(q.layout, q.order.data());
      Write(q, &w);
      const std::string layout_value = q.layout.Serialize();
      absl::StatusOr<ColumnsLayout> layout = ColumnsLayout::Parse(layout_value);
      ASSERT_TRUE(layout.ok()) << layout.status();
      const std::string top_value(w.top());
      const std::string all_value = Join(w.all());
      absl::StatusOr<ColumnsReader> t = ColumnsReader::ParseTop(*layout, top_value);
      absl::StatusOr<ColumnsReader> a = ColumnsReader::ParseAll(*layout, all_value);
      ASSERT_TRUE(t.ok()) << t.status();
      ASSERT_TRUE(a.ok()) << a.status();
      ASSERT_EQ(t->size(), top);
      ASSERT_EQ(a->size(), n);
      for (uint32_t j = 0; j < top; ++j) {
        EXPECT_EQ(t->position(j), j);
        EXPECT_EQ(t->request_index(j), q.order[j]);
        EXPECT_EQ(*t->Render(j), Line(q, q.order[j], j)) << j;
      }
      for (uint32_t r = 0; r < n; ++r) {
        const uint32_t c = q.order[r];
        EXPECT_EQ(a->position(c), r);
        EXPECT_EQ(*a->Render(c), Line(q, c, r)) << c;
      }
      EXPECT_TRUE(CheckTopAgrees(*t, *a).ok());
    }
  }
}

// Every value is checked whole when parsed, so these are refused whatever
// ids a reader goes on to ask for (docs/LOGS.md, "What a reader refuses").
TEST(LogColumnsTest, DamageIsRefusedWhole) {
  const Request q = MakeRequest(5, 2);
  ColumnsWriter w(q.layout, q.order.data());
  Write(q, &w);
  const std::string layout_value = q.layout.Serialize();
  const std::string top(w.top()), all = Join(w.all());
  ASSERT_TRUE(ColumnsLayout::Parse(layout_value).ok());
  const ColumnsLayout layout = *ColumnsLayout::Parse(layout_value);
  ASSERT_TRUE(ColumnsReader::ParseAll(layout, all).ok());
  // Every cut of each value, and a byte after it.
  for (size_t cut = 0; cut < layout_value.size(); ++cut) {
    EXPECT_FALSE(ColumnsLayout::Parse(layout_value.substr(0, cut)).ok()) << cut;
  }
  for (size_t cut = 0; cut < all.size(); ++cut) {
    EXPECT_EQ(ColumnsReader::ParseAll(layout, all.substr(0, cut)).status().code(),
              absl::StatusCode::kDataLoss)
        << cut;
  }
  EXPECT_FALSE(ColumnsReader::ParseAll(layout, all + "x").ok());
  EXPECT_FALSE(ColumnsReader::ParseTop(layout, top + "x").ok());
  EXPECT_FALSE(ColumnsReader::ParseTop(layout, all).ok());  // The tags.
  // A varint not in its shortest form: the item count 5 as two bytes.
  std::string long_varint = layout_value;
  long_varint.replace(2, 1, std::string("\x85\x00", 2));
  EXPECT_FALSE(ColumnsLayout::Parse(long_varint).ok());
  // top_items 0 beside items, past the items, or not 0 beside none.
  for (auto [items, top_items] : {std::pair{5u, 0u}, {5u, 6u}, {0u, 1u}}) {
    ColumnsLayout bad = q.layout;
    bad.items = items;
    bad.top_items = top_items;
    EXPECT_FALSE(ColumnsLayout::Parse(bad.Serialize()).ok()) << items << " " << top_items;
  }
  // In "#1": the order's width byte, an order index twice, an empty id, an
  // id twice (the ids are "sku-0", then "\n\x01" + 7919 ...).
  std::string bad = all;
  bad[1] = 3;
  EXPECT_FALSE(ColumnsReader::ParseAll(layout, bad).ok());
  bad = all;
  bad[3] = bad[2];  // Widths are 1 for 5 items: order[1] = order[0].
  EXPECT_FALSE(ColumnsReader::ParseAll(layout, bad).ok());
  const size_t lengths = 2 + 5 + 1;  // Tag, order (width + 5), id lengths' width.
  bad = all;
  bad[lengths] = 0;
  EXPECT_FALSE(ColumnsReader::ParseAll(layout, bad).ok());
  Request same = q;  // Item 1's id made item 0's ("sku-0").
  same.ids = "sku-0sku-0" + q.ids.substr(q.ends[1]);
  for (size_t c = 1; c < same.ends.size(); ++c) same.ends[c] = q.ends[c] - (q.ends[1] - 10);
  ColumnsWriter twice(same.layout, same.order.data());
  Write(same, &twice);
  EXPECT_FALSE(ColumnsReader::ParseAll(layout, Join(twice.all())).ok());
  // A value beside a layout of no items.
  ColumnsLayout none = q.layout;
  none.items = none.top_items = 0;
  EXPECT_FALSE(ColumnsReader::ParseAll(none, all).ok());
}

}  // namespace
}  // namespace rankwire::logstore
