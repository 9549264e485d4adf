// LogReader::FetchBefore (logstore/log_store.cc), the reading docs/LOGS.md
// specifies, over a hash held in memory: what it reads in one round trip,
// and every inconsistency it refuses as DataLoss instead of answering
// "no log" or a wrong line.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "logstore/format/log_blocks.h"
#include "logstore/format/log_columns.h"
#include "logstore/log_store.h"
#include "tests/support/log_blocks_v2.h"

namespace rankwire::logstore {
namespace {

using Values = std::vector<std::optional<std::string>>;

// One request's hash; counts round trips.
class FakeReader : public LogReader {
 public:
  std::map<std::string, std::string> fields;
  int round_trips = 0;

  absl::StatusOr<Values> ReadFields(absl::string_view, absl::Span<const std::string> names,
                                    absl::Time) override {
    ++round_trips;
    Values out;
    for (const std::string& name : names) {
      auto it = fields.find(name);
      out.push_back(it == fields.end() ? std::nullopt : std::optional<std::string>(it->second));
    }
    return out;
  }
};

// "id=<ID> x=<NUMBER>;" for ids i0 .. i<n-1>, x = j + 0.5, in blocks: the
// first of `top` items, then of 2.
void StoreBlocks(FakeReader* reader, uint32_t n, uint32_t top) {
  BlockLayout layout;
  layout.pieces = {"id=", " x=", ";"};
  layout.kinds = {LogSlot::kItemId, LogSlot::kNumber};
  layout.items = n;
  layout.top_items = top;
  layout.block_items = 2;
  reader->fields[""] = layout.Serialize();
  std::vector<std::string> ids;
  std::vector<float> numbers;
  for (uint32_t j = 0; j < n; ++j) {
    ids.push_back(absl::StrCat("i", j));
    numbers.push_back(j + 0.5f);
  }
  const std::vector<std::string> blocks = test_util::WriteV2Blocks(layout, ids, {}, {}, numbers);
  for (size_t b = 0; b < blocks.size(); ++b) reader->fields[LogBlockField(b)] = blocks[b];
}

// "id=<ID> pos=<POSITION> x=<NUMBER>;" for ids i0 .. i<n-1> in request
// order, x = c + 0.5, ranked in reverse (i<n-1> first), as columns with
// `top` items in "#0".
void StoreColumns(FakeReader* reader, uint32_t n, uint32_t top) {
  ColumnsLayout layout;
  layout.pieces = {"id=", " pos=", " x=", ";"};
  layout.kinds = {LogSlot::kItemId, LogSlot::kPosition, LogSlot::kNumber};
  layout.items = n;
  layout.top_items = top;
  std::string ids;
  std::vector<uint32_t> ends, order;
  std::vector<float> numbers;
  for (uint32_t c = 0; c < n; ++c) {
    absl::StrAppend(&ids, "i", c);
    ends.push_back(static_cast<uint32_t>(ids.size()));
    numbers.push_back(c + 0.5f);
    order.push_back(n - 1 - c);
  }
  ColumnsWriter writer(layout, order.data());
  writer.ItemIds(ids, ends.data());
  writer.Numbers(numbers.data());
  reader->fields[""] = layout.Serialize();
  reader->fields["#0"] = std::string(writer.top());
  std::string all;
  for (absl::string_view piece : writer.all()) all.append(piece.data(), piece.size());
  reader->fields["#1"] = all;
}

TEST(LogReaderTest, ColumnsTopItemsInOneRoundTripTheRestInTwo) {
  FakeReader reader;
  StoreColumns(&reader, 5, 2);
  absl::StatusOr<Values> top = reader.Fetch("r", {"i3", "i4"});
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ(*top, Values({"id=i3 pos=2 x=3.5;", "id=i4 pos=1 x=4.5;"}));
  EXPECT_EQ(reader.round_trips, 1);
  absl::StatusOr<Values> rest = reader.Fetch("r", {"i0", "nope", "i0", "i4"});
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(*rest, Values({"id=i0 pos=5 x=0.5;", std::nullopt, "id=i0 pos=5 x=0.5;",
                           "id=i4 pos=1 x=4.5;"}));
  EXPECT_EQ(reader.round_trips, 3);
  // An item called like a field of the layout is looked for in the columns.
  absl::StatusOr<Values> named = reader.Fetch("r", {"#1", "#0"});
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(*named, Values({std::nullopt, std::nullopt}));
}

TEST(LogReaderTest, ColumnsRefuseDamageWhateverIsAsked) {
  FakeReader good;
  StoreColumns(&good, 5, 2);
  std::string version4 = good.fields[""];
  version4[1] = 4;
  // "#1" with the ids of the two first items (i4, i3) swapped: every value
  // well formed, but "#0" and "#1" disagree on who is first.
  std::string swapped = good.fields["#1"];
  std::swap(swapped[swapped.find("i3") + 1], swapped[swapped.find("i4") + 1]);
  std::string twice = good.fields["#1"];
  twice[twice.find("i1") + 1] = '0';  // i0 twice.
  std::string empty_layout = [] {
    ColumnsLayout empty;
    empty.pieces = {"id=", ";"};
    empty.kinds = {LogSlot::kItemId};
    return empty.Serialize();
  }();
  const std::map<std::string, std::map<std::string, std::string>> damage = {
      {"layout version 4", {{"", version4}}},
      {"field \"\" is not a layout", {{"", "Ttext"}}},
      {"an item field beside the layout", {{"i4", "Ttext"}}},
      {"no \"#0\"", {{"#0", ""}}},
      {"\"#0\" beside a layout without items", {{"", empty_layout}}},
      {"an id twice in \"#1\"", {{"#1", twice}}},
      {"\"#0\" and \"#1\" disagree", {{"#1", swapped}}},
      {"a \"#1\" as \"#0\"", {{"#0", good.fields["#1"]}}},
  };
  for (const auto& [what, change] : damage) {
    FakeReader reader;
    reader.fields = good.fields;
    for (const auto& [name, value] : change) {
      if (value.empty()) {
        reader.fields.erase(name);
      } else {
        reader.fields[name] = value;
      }
    }
    // Asked for an id of "#0" and one of "#1" alone: both values are read.
    absl::StatusOr<Values> got = reader.Fetch("r", {"i4", "i0"});
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << what << ": " << got.status();
  }
  // A duplicate id in "#1" is refused even when the id asked for is not it.
  FakeReader reader;
  reader.fields = good.fields;
  reader.fields["#1"] = twice;
  EXPECT_EQ(reader.Fetch("r", {"i2"}).status().code(), absl::StatusCode::kDataLoss);
}

TEST(LogReaderTest, ColumnsRewrittenBetweenTheReadsAreReadAgain) {
  // The second read sees another write's "#0" (same layout bytes): the
  // reader starts over rather than mixing two writes.
  class Rewriting : public FakeReader {
   public:
    absl::StatusOr<Values> ReadFields(absl::string_view id, absl::Span<const std::string> names,
                                      absl::Time deadline) override {
      if (round_trips == 1) StoreColumns(this, 5, 3);
      return FakeReader::ReadFields(id, names, deadline);
    }
  } reader;
  StoreColumns(&reader, 5, 2);
  absl::StatusOr<Values> got = reader.Fetch("r", {"i0"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Values({"id=i0 pos=5 x=0.5;"}));
  EXPECT_EQ(reader.round_trips, 4);
}

TEST(LogReaderTest, TopItemsInOneRoundTripTheRestInTwo) {
  FakeReader reader;
  StoreBlocks(&reader, 5, 2);
  absl::StatusOr<Values> top = reader.Fetch("r", {"i1", "i0"});
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ(*top, Values({"id=i1 x=1.5;", "id=i0 x=0.5;"}));
  EXPECT_EQ(reader.round_trips, 1);
  absl::StatusOr<Values> rest = reader.Fetch("r", {"i4", "nope", "i4"});
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(*rest, Values({"id=i4 x=4.5;", std::nullopt, "id=i4 x=4.5;"}));
  EXPECT_EQ(reader.round_trips, 3);
}

TEST(LogReaderTest, AnItemCalledLikeABlockIsReadFromTheBlocks) {
  FakeReader reader;
  StoreBlocks(&reader, 5, 2);
  absl::StatusOr<Values> got = reader.Fetch("r", {"#1", "i0"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Values({std::nullopt, "id=i0 x=0.5;"}));
}

TEST(LogReaderTest, RefusesWhatTheWriterNeverWrites) {
  FakeReader good;
  StoreBlocks(&good, 5, 2);
  const std::string layout = good.fields[""];
  std::string version4 = layout;
  version4[1] = 4;
  std::string twice = good.fields["#1"];
  twice.replace(twice.find("2"), 1, "3");  // Block 1 holds i3 twice.
  std::string earlier = good.fields["#1"];
  earlier.replace(earlier.find("2"), 1, "1");  // Block 1 holds i1, block 0's.
  const std::map<std::string, std::map<std::string, std::string>> damage = {
      // Field "" of another version is damage, not "no logs" (the items'
      // own fields, absent here, would have read as nil).
      {"layout version 4", {{"", version4}}},
      {"field \"\" is not a layout", {{"", "Ttext"}}},
      {"an item field beside the blocks", {{"i0", "Ttext"}}},
      {"block 0 of a layout without items",
       {{"",
         [] {
           BlockLayout empty;
           empty.pieces = {"id=", " x=", ";"};
           empty.kinds = {LogSlot::kItemId, LogSlot::kNumber};
           empty.top_items = 1;
           return empty.Serialize();
         }()}}},
      {"an id twice in a block", {{"#1", twice}}},
      {"an id of block 0 again in block 1", {{"#1", earlier}}},
      {"a block of another size", {{"#0", good.fields["#1"]}}},
  };
  for (const auto& [what, change] : damage) {
    FakeReader reader;
    reader.fields = good.fields;
    for (const auto& [name, value] : change) reader.fields[name] = value;
    // i4 is in no damaged block: the damage is refused all the same.
    absl::StatusOr<Values> got = reader.Fetch("r", {"i0", "i4"});
    EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << what << ": " << got.status();
  }
  // Text values beside a version-1 layout are read; a damaged version-1
  // layout is refused even when no record asks for it.
  FakeReader text;
  text.fields = {{"i0", "Tline"}};
  ASSERT_TRUE(text.Fetch("r", {"i0"}).ok());
  text.fields[""] = std::string("L\x01\x00\x00\x00", 5);
  EXPECT_EQ(*text.Fetch("r", {"i0"}), Values({"line"}));
  text.fields[""] = std::string("L\x01\x00\x00\x00\x00", 6);
  EXPECT_EQ(text.Fetch("r", {"i0"}).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace rankwire::logstore
