// Log blocks (layout version 2, which servers no longer write but readers
// read): layouts and blocks built as LOGS.md specifies and read back, each
// number form, and corrupt values refused with DataLoss, never a crash or
// a wrong line.
#include "logstore/format/log_blocks.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/log_blocks_v2.h"

namespace rankwire::logstore {
namespace {

// A layout of every slot kind: "id=<ID> pos=<POS> n=<INT> s=<STRING> x=<NUMBER>;".
BlockLayout TestLayout(uint32_t items, uint32_t top, uint32_t block) {
  BlockLayout layout;
  layout.pieces = {"id=", " pos=", " n=", " s=", " x=", ";"};
  layout.kinds = {LogSlot::kItemId, LogSlot::kPosition, LogSlot::kInt, LogSlot::kString,
                  LogSlot::kNumber};
  layout.strings = {"alpha", "", "gamma"};
  layout.items = items;
  layout.top_items = top;
  layout.block_items = block;
  return layout;
}

struct Written {
  BlockLayout layout;
  std::vector<std::string> blocks;
  std::vector<std::string> expected;  // Each item's line.
};

// Writes `numbers` (one per item) with ids "sku-<i>", ints i * 7 - 3 and
// strings i % 3 (numbers in `form`), and the lines they must render to.
Written Write(const std::vector<float>& numbers, uint32_t top, uint32_t block,
              test_util::V2Form form = test_util::V2Form()) {
  Written w;
  const uint32_t n = static_cast<uint32_t>(numbers.size());
  w.layout = TestLayout(n, top, block);
  std::vector<std::string> id_storage;
  std::vector<int64_t> ints;
  std::vector<uint32_t> codes;
  for (uint32_t i = 0; i < n; ++i) id_storage.push_back(absl::StrCat("sku-", i));
  for (uint32_t i = 0; i < n; ++i) {
    ints.push_back(int64_t{i} * 7 - 3);
    codes.push_back(i % 3);
    std::string line = absl::StrCat("id=", id_storage[i], " pos=", i + 1, " n=", ints[i],
                                    " s=", w.layout.strings[i % 3], " x=");
    AppendLogNumberText(numbers[i], &line);
    w.expected.push_back(line + ";");
  }
  w.blocks = test_util::WriteV2Blocks(w.layout, id_storage, ints, codes, numbers, form);
  return w;
}

test_util::V2Form Form(NumberForm form, int scale = 0) { return test_util::V2Form{form, scale}; }

// Every item of `w`, read back through a parsed layout, renders its line.
void ExpectReadBack(const Written& w) {
  absl::StatusOr<BlockLayout> layout = BlockLayout::Parse(w.layout.Serialize());
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_EQ(layout->BlockCount(), w.blocks.size());
  size_t item = 0;
  for (size_t b = 0; b < w.blocks.size(); ++b) {
    absl::StatusOr<BlockReader> block = BlockReader::Parse(*layout, b, w.blocks[b]);
    ASSERT_TRUE(block.ok()) << block.status();
    for (size_t j = 0; j < block->size(); ++j, ++item) {
      EXPECT_EQ(block->id(j), absl::StrCat("sku-", item));
      absl::StatusOr<std::string> text = block->Render(j);
      ASSERT_TRUE(text.ok()) << text.status();
      EXPECT_EQ(*text, w.expected[item]);
    }
  }
  EXPECT_EQ(item, w.expected.size());
}

TEST(LogBlocksTest, BlocksSplitTheTopItemsFromTheRest) {
  BlockLayout layout = TestLayout(45, 10, 16);
  EXPECT_EQ(layout.BlockCount(), 4u);  // 10, 16, 16, 3
  EXPECT_EQ(layout.BlockSize(0), 10u);
  EXPECT_EQ(layout.BlockBegin(1), 10u);
  EXPECT_EQ(layout.BlockSize(3), 3u);
  EXPECT_EQ(layout.BlockOf(9), 0u);
  EXPECT_EQ(layout.BlockOf(10), 1u);
  EXPECT_EQ(layout.BlockOf(44), 3u);
  layout.items = 5;  // Fewer items than the top block.
  EXPECT_EQ(layout.BlockCount(), 1u);
  EXPECT_EQ(layout.BlockSize(0), 5u);
  layout.items = 0;
  EXPECT_EQ(layout.BlockCount(), 0u);
}

TEST(LogBlocksTest, EveryNumberFormReadsBack) {
  ExpectReadBack(Write(std::vector<float>(20, 0.25f), 4, 8, Form(NumberForm::kConstant)));
  ExpectReadBack(Write({0, 1, -2, 3, 16777215, -16777215, 7, 8}, 8, 8, Form(NumberForm::kWhole)));
  ExpectReadBack(Write({0.5f, 0.75f, 0.875f, 0.99f, 0.51f}, 5, 5, Form(NumberForm::kTopByte)));
  ExpectReadBack(Write({1e-30f, -3.5f, 1e30f, 0.1f, 123456.7f}, 2, 2));
  // Both sides of a power of two: two top bytes.
  ExpectReadBack(Write({0.3123457f, 0.6123457f, 0.2612346f, 0.9912346f, 0.5012346f, 0.4912346f,
                        0.7012346f, 0.3112346f},
                       8, 8, Form(NumberForm::kTwoTops)));
  ExpectReadBack(
      Write({1.5123457f, -1.5123457f, 1.2512346f, -1.7512346f}, 4, 4, Form(NumberForm::kTwoTops)));
  // Prices with two decimals, negative rates: the binary32 of d * 10^-k.
  ExpectReadBack(Write({78.7f, 54.65f, 40.93f, 21.73f, 445.18f, 71.31f, 9.99f, 0.5f}, 8, 8,
                       Form(NumberForm::kDecimal, 2)));
  ExpectReadBack(Write({-0.11f, -0.33f, -0.22f, 0.0f, -0.11f, -0.44f, -0.33f, -0.11f}, 8, 8,
                       Form(NumberForm::kDecimal, 2)));
}

TEST(LogBlocksTest, OddNumbersRenderAsSixDigits) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> odd = {
      0.0f,    -0.0f,           inf,           -inf,      nan,       -nan,       1e-45f,
      -1e-40f, 1.17549435e-38f, 3.4028235e38f, 1.234565f, 0.999999f, 9999995.0f, 1e-5f,
      1e6f,    123456.5f};
  Written w = Write(odd, 3, 5);
  ExpectReadBack(w);
  // The texts themselves, as printf("%.6g") writes them (NaN as "nan").
  EXPECT_NE(w.expected[1].find("x=-0;"), std::string::npos);
  EXPECT_NE(w.expected[3].find("x=-inf;"), std::string::npos);
  EXPECT_NE(w.expected[5].find("x=nan;"), std::string::npos);
  EXPECT_NE(w.expected[6].find("x=1.4013e-45;"), std::string::npos);
}

TEST(LogBlocksTest, MinusZeroIsNotStoredAsAWholeNumber) {
  Written w = Write({-0.0f, 0.0f, 1.0f}, 3, 3);
  ExpectReadBack(w);
  EXPECT_NE(w.expected[0].find("x=-0;"), std::string::npos);
}

TEST(LogBlocksTest, CorruptLayoutsAndBlocksAreDataLossNeverACrash) {
  std::vector<float> numbers;
  for (int i = 0; i < 40; ++i) numbers.push_back(i % 3 == 0 ? i : 0.37f * i);
  const Written w = Write(numbers, 10, 16, Form(NumberForm::kTopByte));
  const std::string layout_value = w.layout.Serialize();
  // Every truncation of the layout, and of each block, is refused.
  for (size_t cut = 0; cut < layout_value.size(); ++cut) {
    EXPECT_FALSE(BlockLayout::Parse(layout_value.substr(0, cut)).ok()) << cut;
  }
  EXPECT_FALSE(BlockLayout::Parse(layout_value + "x").ok());
  absl::StatusOr<BlockLayout> layout = BlockLayout::Parse(layout_value);
  ASSERT_TRUE(layout.ok());
  for (size_t b = 0; b < w.blocks.size(); ++b) {
    for (size_t cut = 0; cut < w.blocks[b].size(); ++cut) {
      absl::StatusOr<BlockReader> r = BlockReader::Parse(*layout, b, w.blocks[b].substr(0, cut));
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << b << " " << cut;
    }
    EXPECT_FALSE(BlockReader::Parse(*layout, b, w.blocks[b] + "\x01").ok());
  }
  // A block read as another block (another item count) is refused.
  EXPECT_FALSE(BlockReader::Parse(*layout, 0, w.blocks[1]).ok());
  // Random damage: refused, or read (and rendered) without a crash.
  std::mt19937 rng(7);
  for (int round = 0; round < 20000; ++round) {
    std::string block = w.blocks[round % w.blocks.size()];
    for (int e = 0; e < 3; ++e) block[rng() % block.size()] = static_cast<char>(rng());
    absl::StatusOr<BlockReader> r = BlockReader::Parse(*layout, round % w.blocks.size(), block);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
      continue;
    }
    for (size_t j = 0; j < r->size(); ++j) (void)r->Render(j);
  }
  // Unknown kinds, forms and versions.
  std::string bad_version = layout_value;
  bad_version[1] = 4;
  EXPECT_FALSE(BlockLayout::Parse(bad_version).ok());
  EXPECT_FALSE(BlockLayout::IsBlocks(bad_version));
}

// A one-item block of TestLayout holding `number` as its number column.
std::string OneItemBlock(const std::string& number) {
  // 'B', count 1, ids: prefix "" and "a"; int 0; string 0.
  return std::string(
             "B\x01\x00\x01"
             "a"
             "\x00\x00",
             7) +
         number;
}

TEST(LogBlocksTest, WhatNoServerWritesIsRefused) {
  // A version-2 layout has exactly one item id slot.
  BlockLayout layout = TestLayout(1, 1, 16);
  layout.kinds[0] = LogSlot::kPosition;
  EXPECT_EQ(BlockLayout::Parse(layout.Serialize()).status().code(), absl::StatusCode::kDataLoss);
  layout.kinds[1] = LogSlot::kItemId;
  layout.kinds[0] = LogSlot::kItemId;
  EXPECT_EQ(BlockLayout::Parse(layout.Serialize()).status().code(), absl::StatusCode::kDataLoss);
  // Blocks, against a well-formed one-item layout.
  absl::StatusOr<BlockLayout> one = BlockLayout::Parse(TestLayout(1, 1, 16).Serialize());
  ASSERT_TRUE(one.ok()) << one.status();
  const std::string raw("\x00\x00\x00\xc0\x3f", 5);  // 1.5
  ASSERT_TRUE(BlockReader::Parse(*one, 0, OneItemBlock(raw)).ok());
  // A block the layout does not have.
  EXPECT_EQ(BlockReader::Parse(*one, 1, OneItemBlock(raw)).status().code(),
            absl::StatusCode::kDataLoss);
  absl::StatusOr<BlockLayout> none = BlockLayout::Parse(TestLayout(0, 1, 16).Serialize());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(BlockReader::Parse(*none, 0, std::string("B\x00\x00", 3)).ok());
  // An empty item id, whether or not anyone asks for it.
  EXPECT_EQ(
      BlockReader::Parse(*one, 0, std::string("B\x01\x00\x00\x00\x00", 6) + raw).status().code(),
      absl::StatusCode::kDataLoss);
  // A varint not in its shortest form (the count 1 as two bytes).
  EXPECT_EQ(
      BlockReader::Parse(
          *one, 0, std::string("B\x81\x00\x00\x01", 5) + "a" + std::string("\x00\x00", 2) + raw)
          .status()
          .code(),
      absl::StatusCode::kDataLoss);
  const std::map<std::string, std::string> bad = {
      {"unknown form", std::string("\x06\x00\x00\xc0\x3f", 5)},
      {"two tops out of order", std::string("\x04\x3f\x3e\x01\x00\x00\xc0", 7)},
      {"two tops equal", std::string("\x04\x3f\x3f\x01\x00\x00\xc0", 7)},
      {"two tops, one used", std::string("\x04\x3e\x3f\x01\x00\x00\xc0", 7)},
      {"two tops, a bit past the item", std::string("\x04\x3e\x3f\x02\x00\x00\xc0", 7)},
      {"decimal scale 0", std::string("\x05\x00\x02", 3)},
      {"decimal scale 7", std::string("\x05\x07\x02", 3)},
      {"decimal digits 2^31", std::string("\x05\x01\x80\x80\x80\x80\x10", 7)},
      {"whole number 2^24", std::string("\x02\x80\x80\x80\x10", 5)},
  };
  for (const auto& [what, number] : bad) {
    absl::StatusOr<BlockReader> r = BlockReader::Parse(*one, 0, OneItemBlock(number));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss) << what;
  }
  // Decimal digits just inside the limit read back as their product.
  absl::StatusOr<BlockReader> r =
      BlockReader::Parse(*one, 0, OneItemBlock(std::string("\x05\x02\xa6\x0c", 4)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->Render(0), "id=a pos=1 n=0 s=alpha x=7.87;");  // 787 * 1e-2
}

TEST(LogBlocksTest, HostileLayoutsCannotAskForUnboundedWork) {
  BlockLayout layout = TestLayout(kMaxLogItems + 1, 1, 1);
  EXPECT_FALSE(BlockLayout::Parse(layout.Serialize()).ok());
  layout = TestLayout(10, 0, 16);  // A first block of no items.
  EXPECT_FALSE(BlockLayout::Parse(layout.Serialize()).ok());
  layout = TestLayout(10, 3, 0);
  EXPECT_FALSE(BlockLayout::Parse(layout.Serialize()).ok());
  // block_items 0 is refused beside no items too.
  layout = TestLayout(0, 1, 0);
  EXPECT_FALSE(BlockLayout::Parse(layout.Serialize()).ok());
}

}  // namespace
}  // namespace rankwire::logstore
