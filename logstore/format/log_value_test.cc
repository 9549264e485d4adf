#include "logstore/format/log_value.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/support/log_test_util.h"

namespace rankwire::logstore {
namespace {

using test_util::LogLine;
using test_util::RandomBytes;

TEST(LogValueTest, PlainValueIsTagThenText) {
  const std::string text = LogLine("req-1", 3);
  std::string value = text;
  EncodeLogValue(/*compress=*/false, 1, &value);
  EXPECT_EQ(value, "T" + text);
  absl::StatusOr<std::string> decoded = DecodeLogValue(value);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, text);
}

TEST(LogValueTest, CompressedValueIsSmallerAndRoundTrips) {
  const std::string text = LogLine("req-1", 3);
  std::string value = text;
  EncodeLogValue(/*compress=*/true, 1, &value);
  ASSERT_FALSE(value.empty());
  EXPECT_EQ(value.front(), kZstdLogTag);
  EXPECT_LT(value.size(), text.size());
  absl::StatusOr<std::string> decoded = DecodeLogValue(value);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, text);
}

TEST(LogValueTest, IncompressibleValueStaysPlain) {
  const std::string text = RandomBytes(7, 300);
  std::string value = text;
  EncodeLogValue(/*compress=*/true, 1, &value);
  EXPECT_EQ(value, "T" + text);
}

TEST(LogValueTest, EmptyTextIsAPlainValue) {
  std::string value;
  EncodeLogValue(/*compress=*/true, 1, &value);
  EXPECT_EQ(value, "T");
  absl::StatusOr<std::string> decoded = DecodeLogValue(value);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, "");
}

TEST(LogValueTest, RejectsEmptyValueAndUnknownTag) {
  EXPECT_EQ(DecodeLogValue("").status().code(), absl::StatusCode::kDataLoss);
  absl::Status unknown = DecodeLogValue("Xhello").status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(unknown.message().find("0x58"), absl::string_view::npos) << unknown;
}

TEST(LogValueTest, RejectsEveryTruncationOfACompressedValue) {
  std::string value = LogLine("req-2", 9);
  EncodeLogValue(/*compress=*/true, 3, &value);
  ASSERT_EQ(value.front(), kZstdLogTag);
  for (size_t n = 1; n < value.size(); ++n) {
    absl::StatusOr<std::string> decoded = DecodeLogValue(absl::string_view(value).substr(0, n));
    EXPECT_FALSE(decoded.ok()) << "prefix of " << n << " bytes decoded";
  }
}

TEST(LogValueTest, RefusesAnythingButOneFrame) {
  std::string value = LogLine("req-4", 2);
  EncodeLogValue(/*compress=*/true, 1, &value);
  ASSERT_EQ(value.front(), kZstdLogTag);
  ASSERT_TRUE(DecodeLogValue(value).ok());
  // A skippable frame (magic 0x184D2A50, 4-byte length, its bytes), which
  // zstd itself would step over, before or after the frame.
  const std::string skippable(
      "\x50\x2a\x4d\x18\x03\x00\x00\x00"
      "abc",
      11);
  const std::string frame = value.substr(1);
  for (const std::string& bad : {value + skippable, "Z" + skippable + frame,
                                 value + std::string(1, '\0'), value + frame, "Z" + skippable}) {
    absl::Status status = DecodeLogValue(bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss)
        << bad.size() << " of a " << value.size() << "-byte value: " << status;
  }
  EXPECT_NE(DecodeLogValue(value + "xy").status().message().find("2 bytes after the frame"),
            absl::string_view::npos);
}

TEST(LogValueTest, RefusesAFrameDeclaringMoreThanTheCap) {
  std::string value = LogLine("req-3", 1, 4000);
  const size_t text_size = value.size();
  EncodeLogValue(/*compress=*/true, 1, &value);
  ASSERT_EQ(value.front(), kZstdLogTag);
  EXPECT_EQ(DecodeLogValue(value, text_size - 1).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(DecodeLogValue(value, text_size).ok());
}

}  // namespace
}  // namespace rankwire::logstore
