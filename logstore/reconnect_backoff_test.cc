// ReconnectBackoff (logstore/redis_connection.h): the one reconnect policy
// of the sink, the cluster router and the cluster reader.
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "logstore/redis_connection.h"

namespace rankwire::logstore {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

TEST(ReconnectBackoffTest, FailuresDoubleTheWaitUpToTheMaximum) {
  ReconnectBackoff backoff(absl::Milliseconds(50), absl::Milliseconds(300));
  EXPECT_TRUE(backoff.Ready(kStart));
  EXPECT_EQ(backoff.Failed(kStart), absl::Milliseconds(50));
  EXPECT_FALSE(backoff.Ready(kStart + absl::Milliseconds(49)));
  EXPECT_TRUE(backoff.Ready(kStart + absl::Milliseconds(50)));
  EXPECT_EQ(backoff.Failed(kStart), absl::Milliseconds(100));
  EXPECT_EQ(backoff.Failed(kStart), absl::Milliseconds(200));
  EXPECT_EQ(backoff.Failed(kStart), absl::Milliseconds(300));
  EXPECT_EQ(backoff.Failed(kStart), absl::Milliseconds(300));
  EXPECT_FALSE(backoff.Ready(kStart + absl::Milliseconds(299)));
}

TEST(ReconnectBackoffTest, AStalledNodeWaitsAtLeastTheFloor) {
  ReconnectBackoff backoff(absl::Milliseconds(50), absl::Seconds(2));
  EXPECT_EQ(backoff.Failed(kStart, absl::Seconds(1)), absl::Seconds(1));
  EXPECT_FALSE(backoff.Ready(kStart + absl::Milliseconds(999)));
  EXPECT_TRUE(backoff.Ready(kStart + absl::Seconds(1)));
  // The floor does not inflate the delay itself: it still doubled from 50 ms.
  EXPECT_EQ(backoff.Failed(kStart), absl::Milliseconds(100));
}

TEST(ReconnectBackoffTest, ASuccessResetsTheDelayALostConnectionOnlyTheWait) {
  ReconnectBackoff backoff(absl::Milliseconds(50), absl::Seconds(2));
  backoff.Failed(kStart);
  backoff.Failed(kStart);  // Delay now 200 ms.
  backoff.RetryNow();
  EXPECT_TRUE(backoff.Ready(kStart));
  EXPECT_EQ(backoff.Failed(kStart), absl::Milliseconds(200));
  backoff.Succeeded();
  EXPECT_TRUE(backoff.Ready(kStart));
  EXPECT_EQ(backoff.Failed(kStart), absl::Milliseconds(50));
}

TEST(ReconnectBackoffTest, DefaultsAreTheStoreConfigDefaults) {
  const LogStoreConfig config;
  ReconnectBackoff backoff;
  ReconnectBackoff configured(config.reconnect_backoff_min, config.reconnect_backoff_max);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(backoff.Failed(kStart), configured.Failed(kStart));
}

}  // namespace
}  // namespace rankwire::logstore
