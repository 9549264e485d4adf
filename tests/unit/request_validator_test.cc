#include "server/request_validator.h"

#include <cmath>
#include <functional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "workload/workload.h"

namespace rankwire::server {
namespace {

using ::testing::HasSubstr;

TEST(RequestValidatorTest, GeneratedRequestIsValid) {
  EXPECT_TRUE(ValidateRequest(workload::WorkloadGenerator({}).Make(0), {}).ok());
}

TEST(RequestValidatorTest, EachProblemIsNamed) {
  struct Case {
    std::function<void(rank::v1::RankRequest*)> mutate;
    std::string message;
  };
  const Case cases[] = {
      {[](auto* r) { r->clear_request_id(); }, "request_id is empty"},
      {[](auto* r) { r->set_request_id(std::string(300, 'x')); }, "request_id is 300 bytes"},
      {[](auto* r) { r->clear_candidates(); }, "no candidates"},
      {[](auto* r) { r->set_top_n(0); }, "top_n 0 is out of range [1, 500]"},
      {[](auto* r) { r->set_top_n(501); }, "top_n 501 is out of range [1, 500]"},
      {[](auto* r) { r->set_log_mode(static_cast<rank::v1::LogMode>(9)); },
       "log_mode 9 is not a known LogMode"},
      {[](auto* r) { r->set_item_feature_names(3, ""); }, "item_feature_names[3] is empty"},
      {[](auto* r) { r->set_item_feature_names(3, "price"); }, "item feature \"price\" is named twice"},
      {[](auto* r) { (*r->mutable_user_features())["x"] = NAN; }, "user_features[\"x\"] is nan"},
      {[](auto* r) { r->mutable_candidates(5)->clear_item_id(); }, "candidates[5].item_id is empty"},
      {[](auto* r) { r->mutable_candidates(5)->set_item_id(std::string(257, 'i')); },
       "candidates[5].item_id is 257 bytes"},
      {[](auto* r) { r->mutable_candidates(9)->set_item_id(r->candidates(1).item_id()); },
       "duplicate item id \"" },
      {[](auto* r) { r->mutable_candidates(2)->add_features(1); },
       "candidates[2] has 19 features but item_feature_names names 18"},
      {[](auto* r) { r->mutable_candidates(2)->set_features(0, -INFINITY); },
       "candidates[2].features[0] (price) is -inf"},
  };
  for (const Case& c : cases) {
    rank::v1::RankRequest request = workload::WorkloadGenerator({}).Make(0);
    c.mutate(&request);
    absl::Status s = ValidateRequest(request, {});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

TEST(RequestValidatorTest, LimitsAreConfigurable) {
  RequestLimits limits;
  limits.max_candidates = 499;
  absl::Status s = ValidateRequest(workload::WorkloadGenerator({}).Make(0), limits);
  EXPECT_THAT(std::string(s.message()), HasSubstr("500 candidates exceed the limit of 499"));
  limits = {};
  limits.max_item_features = 10;
  s = ValidateRequest(workload::WorkloadGenerator({}).Make(0), limits);
  EXPECT_THAT(std::string(s.message()), HasSubstr("18 item features exceed the limit of 10"));
}

}  // namespace
}  // namespace rankwire::server
