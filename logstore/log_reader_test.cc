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
#include "logstore/log_blocks.h"
#include "logstore/log_store.h"

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
  std::vector<absl::string_view> views;
  std::vector<float> numbers;
  for (uint32_t j = 0; j < n; ++j) ids.push_back(absl::StrCat("i", j));
  for (uint32_t j = 0; j < n; ++j) {
    views.push_back(ids[j]);
    numbers.push_back(j + 0.5f);
  }
  BlocksWriter writer(layout, views.data());
  writer.ItemIds(views.data());
  writer.Numbers(numbers.data());
  for (size_t b = 0; b < writer.blocks(); ++b) {
    reader->fields[LogBlockField(b)] = std::string(writer.block(b));
  }
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
  std::string version3 = layout;
  version3[1] = 3;
  std::string twice = good.fields["#1"];
  twice.replace(twice.find("2"), 1, "3");  // Block 1 holds i3 twice.
  const std::map<std::string, std::map<std::string, std::string>> damage = {
      // Field "" of another version is damage, not "no logs" (the items'
      // own fields, absent here, would have read as nil).
      {"layout version 3", {{"", version3}}},
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
      {"a block of another size", {{"#0", good.fields["#1"]}}},
  };
  for (const auto& [what, change] : damage) {
    FakeReader reader;
    reader.fields = good.fields;
    for (const auto& [name, value] : change) reader.fields[name] = value;
    absl::StatusOr<Values> got = reader.Fetch("r", {"i0", "i3"});
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
