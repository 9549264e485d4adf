// PackedFields holds HSET's field arguments as RESP bulk strings: what
// Add writes reads back the same through ForEach
// and is exactly the bytes Redis expects (checked against a real Redis in
// redis_log_store_test); a mark rolls back what a renderer added.
#include "logstore/format/packed_fields.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rankwire::logstore {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

Fields Read(const PackedFields& packed) {
  Fields out;
  packed.ForEach([&](absl::string_view name, absl::string_view value) {
    out.emplace_back(std::string(name), std::string(value));
  });
  return out;
}

TEST(PackedFieldsTest, FieldsAreBulkStringsInOrder) {
  PackedFields fields;
  fields.Add("sku-1", "Tline");
  fields.Add("", "");
  EXPECT_EQ(fields.WireBytes(), "$5\r\nsku-1\r\n$5\r\nTline\r\n$0\r\n\r\n$0\r\n\r\n");
  EXPECT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields.value_bytes(), 5u);
  EXPECT_EQ(Read(fields), (Fields{{"sku-1", "Tline"}, {"", ""}}));
}

TEST(PackedFieldsTest, ValuesOfEveryLengthReadBack) {
  PackedFields fields;
  Fields want;
  // Lengths whose headers have 1 to 5 digits.
  for (size_t length : {0, 1, 9, 10, 99, 100, 999, 1000, 65536}) {
    const std::string name = absl::StrCat("item-", length);
    const std::string value(length, static_cast<char>('a' + length % 26));
    fields.Add(name, value);
    want.emplace_back(name, value);
    // Bytes with "\r\n" inside are data, not separators.
    fields.Add(absl::StrCat(name, "\r\n"), "\r\n$3\r\n");
    want.emplace_back(absl::StrCat(name, "\r\n"), "\r\n$3\r\n");
  }
  EXPECT_EQ(Read(fields), want);
  EXPECT_EQ(fields.size(), want.size());
}

TEST(PackedFieldsTest, RollBackTakesBackWhatFollowedTheMark) {
  PackedFields fields;
  fields.Add("a", "1");
  const PackedFields::Mark mark = fields.mark();
  for (int i = 0; i < 1000; ++i) fields.Add(absl::StrCat("b", i), std::string(100, 'x'));
  fields.RollBack(mark);
  fields.Add("c", "3");
  EXPECT_EQ(Read(fields), (Fields{{"a", "1"}, {"c", "3"}}));
  EXPECT_EQ(fields.value_bytes(), 2u);
}

TEST(PackedFieldsTest, CopiesAreIndependent) {
  PackedFields fields;
  fields.Add("a", "1");
  PackedFields copy = fields;
  copy.Add("b", "2");
  EXPECT_EQ(Read(fields), (Fields{{"a", "1"}}));
  EXPECT_EQ(Read(copy), (Fields{{"a", "1"}, {"b", "2"}}));
}

TEST(PackedFieldsTest, AMovedFromObjectIsEmptyAndUsable) {
  PackedFields fields;
  fields.Add("a", "1");
  PackedFields moved = std::move(fields);
  EXPECT_EQ(Read(moved), (Fields{{"a", "1"}}));
  EXPECT_TRUE(fields.empty());  // NOLINT(bugprone-use-after-move): what is tested.
  EXPECT_EQ(fields.WireBytes(), "");
  EXPECT_EQ(fields.value_bytes(), 0u);
  fields.Add("c", "3");
  PackedFields copy = fields;
  EXPECT_EQ(Read(copy), (Fields{{"c", "3"}}));
  PackedFields assigned;
  assigned.Add("x", "y");
  assigned = std::move(copy);
  EXPECT_EQ(Read(assigned), (Fields{{"c", "3"}}));
  EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move)
}

}  // namespace
}  // namespace rankwire::logstore
