#include "request/log_mode.h"

#include "gtest/gtest.h"

namespace rankwire {
namespace {

TEST(LogModeTest, EveryModeReadsBackItsName) {
  for (rank::v1::LogMode mode : {rank::v1::LOG_MODE_DEFAULT, rank::v1::LOG_MODE_STORE,
                                 rank::v1::LOG_MODE_INLINE, rank::v1::LOG_MODE_NONE}) {
    absl::StatusOr<rank::v1::LogMode> parsed = ParseLogMode(LogModeName(mode));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, mode);
  }
}

TEST(LogModeTest, DefaultIsARequestsWordOnly) {
  absl::StatusOr<rank::v1::LogMode> parsed = ParseLogMode("default", /*allow_default=*/false);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "log mode \"default\": expected store, inline or none");
  EXPECT_TRUE(ParseLogMode("store", /*allow_default=*/false).ok());
}

TEST(LogModeTest, AnUnknownNameSaysWhatIsAccepted) {
  absl::StatusOr<rank::v1::LogMode> parsed = ParseLogMode("redis");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(),
            "log mode \"redis\": expected default, store, inline or none");
}

}  // namespace
}  // namespace rankwire
