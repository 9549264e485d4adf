// Tests of the rankbin writer's short-string dictionary (short_dict.h): the
// packed form tells every two strings apart, the hash spreads values that
// differ only in their last bytes, and the table finds, clears and gives
// back memory as documented.
#include "codec/rankbin/short_dict.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"

namespace rankwire::rankbin {
namespace {

TEST(ShortStringTest, StringsThatDifferInOneByteDiffer) {
  for (size_t n = 0; n <= ShortString::kMax; ++n) {
    const std::string base(n, 'a');
    const ShortString b = ShortString::Of(base);
    EXPECT_TRUE(b == ShortString::Of(std::string(n, 'a')));
    if (n > 0) {
      EXPECT_FALSE(b == ShortString::Of(std::string(n - 1, 'a'))) << n;
    }
    for (size_t p = 0; p < n; ++p) {
      std::string other = base;
      other[p] = 'b';
      EXPECT_FALSE(b == ShortString::Of(other)) << "length " << n << ", byte " << p;
    }
  }
}

// Ids that differ only in their last characters are what categorical
// metrics look like (bucket_017, model-2024-v0003). Their differing bytes
// land in the high bits of a word; a hash that only multiplied put them all
// in one slot of a small table. 1000 values over 2048 slots fill ~800 when
// the hash is random; a bad one fills a handful.
TEST(ShortStringTest, HashSpreadsValuesThatDifferInTheirLastBytes) {
  for (const char* format : {"bucket_%03d", "x%015d", "cat-%04d", "model-2024-v%04d", "%d"}) {
    std::set<uint64_t> slots;
    for (int i = 0; i < 1000; ++i) {
      slots.insert(ShortString::Of(absl::StrFormat(format, i)).Hash() & 2047);
    }
    EXPECT_GE(slots.size(), 700u) << format;
  }
}

TEST(ShortDictTest, FindsWhatWasInsertedUntilCleared) {
  ShortDict dict;
  std::vector<std::string> values;
  for (int i = 0; i < 3000; ++i) values.push_back(absl::StrFormat("v%05d", i));
  for (uint32_t i = 0; i < values.size(); ++i) {
    size_t slot = 0;
    ASSERT_EQ(dict.Find(ShortString::Of(values[i]), &slot), UINT32_MAX);
    dict.Insert(slot, ShortString::Of(values[i]), i);
  }
  for (uint32_t i = 0; i < values.size(); ++i) {
    size_t slot = 0;
    EXPECT_EQ(dict.Find(ShortString::Of(values[i]), &slot), i);
  }
  // A table grown past its keep size is given back by Clear(); a small
  // one is kept and emptied.
  EXPECT_GT(dict.slot_count(), 1024u);
  dict.Clear();
  EXPECT_EQ(dict.slot_count(), 0u);
  size_t slot = 0;
  EXPECT_EQ(dict.Find(ShortString::Of(values[0]), &slot), UINT32_MAX);
  dict.Insert(slot, ShortString::Of(values[0]), 7);
  const size_t small = dict.slot_count();
  dict.Clear();
  EXPECT_EQ(dict.slot_count(), small);
  EXPECT_EQ(dict.Find(ShortString::Of(values[0]), &slot), UINT32_MAX);
}

}  // namespace
}  // namespace rankwire::rankbin
