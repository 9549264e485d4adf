// The number slot of a version-1 record (log_number.h), which readers
// still read: what EncodeLogNumber writes reads back (ReadLogNumber) to the
// value SixDigits shows, every cut of a slot is DataLoss, and a varint not
// in its shortest form is refused. log_record_test checks whole records.
#include "logstore/format/log_number.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace rankwire::logstore {
namespace {

TEST(LogNumberTest, ReadBackGivesTheValueSixDigitsShows) {
  const double values[] = {0.0, -0.0, 0.123456, -4.5, 1e-20, 3e15, 999999.5, 78.7};
  for (double v : values) {
    std::string slot;
    AppendLogNumber(v, &slot);
    coding::Reader in(slot, "slot");
    absl::StatusOr<double> read = ReadLogNumber(in);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(std::string(absl::AlphaNum(absl::SixDigits(*read)).Piece()),
              std::string(absl::AlphaNum(absl::SixDigits(v)).Piece()))
        << v;
    EXPECT_TRUE(in.empty());
    // Every cut of the slot is DataLoss.
    for (size_t n = 0; n < slot.size(); ++n) {
      coding::Reader cut(absl::string_view(slot).substr(0, n), "slot");
      EXPECT_EQ(ReadLogNumber(cut).status().code(), absl::StatusCode::kDataLoss) << v << " " << n;
    }
  }
}

TEST(LogNumberTest, AVarintNotInItsShortestFormIsRefused) {
  std::string slot;
  AppendLogNumber(0.5, &slot);  // One byte: 5 << 6 | 23.
  ASSERT_EQ(slot.size(), 2u);
  std::string longer = slot;
  longer[1] = static_cast<char>(longer[1] | 0x80);
  longer.push_back('\0');
  coding::Reader in(longer, "slot");
  EXPECT_EQ(ReadLogNumber(in).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace rankwire::logstore
