#include "workload/workload.h"

#include <cmath>
#include <set>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace rankwire::workload {
namespace {

// Maps serialize in an unspecified order, so requests are compared as
// messages, not as bytes.
bool Same(const rank::v1::RankRequest& a, const rank::v1::RankRequest& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

TEST(WorkloadTest, SameSeedAndSequenceGiveTheSameRequest) {
  WorkloadGenerator a({}), b({});
  EXPECT_TRUE(Same(a.Make(3), b.Make(3)));
  EXPECT_FALSE(Same(a.Make(3), a.Make(4)));
  WorkloadOptions other;
  other.seed = 1;
  EXPECT_FALSE(Same(WorkloadGenerator(other).Make(3), a.Make(3)));
}

TEST(WorkloadTest, DefaultRequestIsTheSeedShapedOne) {
  rank::v1::RankRequest r = WorkloadGenerator({}).Make(0);
  EXPECT_EQ(r.request_id(), "req-1352909-00000000");
  EXPECT_EQ(r.candidates_size(), 500);
  EXPECT_EQ(r.top_n(), 10u);
  EXPECT_EQ(r.item_feature_names_size(), 18);
  std::set<std::string> ids;
  std::set<std::string> sources;
  for (const rank::v1::Candidate& c : r.candidates()) {
    EXPECT_TRUE(ids.insert(c.item_id()).second) << "duplicate " << c.item_id();
    sources.insert(c.recall_source());
    ASSERT_EQ(c.features_size(), 18);
    for (float f : c.features()) EXPECT_TRUE(std::isfinite(f));
    EXPECT_GT(c.features(0), 0);  // price
    EXPECT_GE(c.features(4), 1);  // rating
    EXPECT_LE(c.features(4), 5);
    EXPECT_TRUE(c.features(11) == 0 || c.features(11) == 1);  // category_match
    EXPECT_EQ(c.features(2), std::floor(c.features(2)));      // sales_30d is a count
  }
  EXPECT_EQ(sources.size(), 5u);
  EXPECT_TRUE(r.context().contains("query"));
  EXPECT_TRUE(r.user_features().contains("user_price_pref"));
}

TEST(WorkloadTest, OptionsAreHonoured) {
  WorkloadOptions options;
  options.candidates = 7;
  options.top_n = 20;
  options.accept_codecs = {"rankbin", "protobuf"};
  options.log_mode = rank::v1::LOG_MODE_NONE;
  options.scene = rank::v1::SCENE_DETAIL_PAGE;
  rank::v1::RankRequest r = WorkloadGenerator(options).Make(0);
  EXPECT_EQ(r.candidates_size(), 7);
  EXPECT_EQ(r.top_n(), 7u);  // Clamped to the candidates.
  ASSERT_EQ(r.accept_codecs_size(), 2);
  EXPECT_EQ(r.accept_codecs(0), "rankbin");
  EXPECT_EQ(r.log_mode(), rank::v1::LOG_MODE_NONE);
  EXPECT_EQ(r.scene(), rank::v1::SCENE_DETAIL_PAGE);
}

}  // namespace
}  // namespace rankwire::workload
