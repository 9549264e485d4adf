#include "ranking/model_check.h"

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "absl/strings/str_replace.h"
#include "base/status_reason.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/linear/linear_model.h"
#include "model/linear/linear_spec.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

std::string Shipped() {
  std::ifstream in(RANKWIRE_MODEL_PATH);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::shared_ptr<const LinearModel>> Linear(const std::string& text) {
  absl::StatusOr<LinearSpec> spec = LinearSpec::Parse(text, "check.model");
  if (!spec.ok()) return spec.status();
  return std::make_shared<const LinearModel>(*std::move(spec));
}

TEST(ModelCheckTest, TheShippedModelPasses) {
  absl::StatusOr<std::shared_ptr<const LinearModel>> model = Linear(Shipped());
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE(CheckModel(**model, std::nullopt, false, RequestLimits{}).ok());
}

TEST(ModelCheckTest, TheCheckRefusesAModelWhoseScoresAreNotFinite) {
  // p = sigmoid(-800) and exponent -1: every number finite in the file, an
  // infinite score.
  absl::StatusOr<std::shared_ptr<const LinearModel>> model =
      Linear(absl::StrReplaceAll(Shipped(), {{"head ctr -3.20 1.00", "head ctr -800 -1"}}));
  ASSERT_TRUE(model.ok()) << model.status();
  absl::Status check = CheckModel(**model, std::nullopt, false, RequestLimits{});
  EXPECT_EQ(ReasonOf(check).value_or("none"), "check_failed");
  EXPECT_THAT(std::string(check.message()), HasSubstr("not finite"));
}

TEST(ModelCheckTest, AModelReadingMoreFeaturesThanARequestCarriesIsRefused) {
  absl::StatusOr<std::shared_ptr<const LinearModel>> model = Linear(Shipped());
  ASSERT_TRUE(model.ok()) << model.status();
  RequestLimits limits;
  limits.max_item_features = 1;
  absl::Status check = CheckModel(**model, std::nullopt, false, limits);
  EXPECT_EQ(ReasonOf(check).value_or("none"), "check_failed");
  EXPECT_THAT(std::string(check.message()), HasSubstr("a request carries at most 1"));
}

}  // namespace
}  // namespace rankwire
