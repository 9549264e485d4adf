// ModelSet (routing users to buckets, the refusals of a bad bucket list)
// and ServingModels (the atomic swap requests read from).
#include "ranking/model_set.h"

#include <atomic>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/stable_hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/linear/linear_model.h"
#include "model/linear/linear_spec.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

std::shared_ptr<const Model> Shipped(const std::string& version) {
  std::ifstream in(RANKWIRE_MODEL_PATH);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<LinearSpec> model = LinearSpec::Parse(
      absl::StrReplaceAll(text.str(), {{"\nversion 2026.11.3\n", "\nversion " + version + "\n"}}),
      "shipped");
  EXPECT_TRUE(model.ok()) << model.status();
  return std::make_shared<const LinearModel>(*std::move(model));
}

std::shared_ptr<const ServedModel> Served(const std::string& bucket, int percent,
                                          const std::string& version) {
  return std::make_shared<const ServedModel>(bucket, percent, "", FileStamp{}, Shipped(version));
}

TEST(ModelSetTest, OneModelServesEveryUserInItsOwnExperimentBuckets) {
  std::shared_ptr<const Model> model = Shipped("v1");
  std::shared_ptr<const ModelSet> set = ModelSet::Of(model);
  EXPECT_FALSE(set->bucketed());
  EXPECT_EQ(set->generation(), 1u);
  EXPECT_EQ(set->Summary(), "ecom_search_lr@v1");
  ASSERT_EQ(set->models().size(), 1u);
  const ServedModel& served = *set->models()[0];
  EXPECT_EQ(served.model, model);
  EXPECT_EQ(served.feature_values, FeatureValues::kFinite);
  for (const std::string& name : model->item_features()) {
    EXPECT_TRUE(served.known_item_features.contains(name)) << name;
  }
  EXPECT_EQ(served.known_item_features.size(), model->item_features().size());
  // The model's own experiment buckets (control 50, two treatments 25)
  // label the users, by the model's own hash.
  int control = 0;
  for (int u = 0; u < 1000; ++u) {
    const std::string user = absl::StrCat("u", u);
    const ModelSet::Route route = set->RouteOf(user);
    EXPECT_EQ(&route.served, &served);
    EXPECT_EQ(route.bucket, model->BucketOf(user));
    control += route.bucket == "control" ? 1 : 0;
  }
  EXPECT_GT(control, 400);
  EXPECT_LT(control, 600);
}

TEST(ModelSetTest, BucketsRouteEachUserSlotToItsShareInOrder) {
  absl::StatusOr<std::shared_ptr<const ModelSet>> set =
      ModelSet::Buckets({Served("a", 30, "v1"), Served("b", 70, "v2")}, 7);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_TRUE((*set)->bucketed());
  EXPECT_EQ((*set)->generation(), 7u);
  EXPECT_EQ((*set)->Summary(), "a=ecom_search_lr@v1(30%) b=ecom_search_lr@v2(70%)");
  // A set built again from other objects routes every user the same way:
  // only the shares move a user (the stable hash, not the set, decides).
  absl::StatusOr<std::shared_ptr<const ModelSet>> again =
      ModelSet::Buckets({Served("a", 30, "v1"), Served("b", 70, "v2")}, 8);
  ASSERT_TRUE(again.ok());
  int in_a = 0;
  for (int u = 0; u < 10000; ++u) {
    const std::string user = absl::StrCat("user-", u);
    const ModelSet::Route route = (*set)->RouteOf(user);
    const std::string want = UserSlot(user) < 30 ? "a" : "b";
    ASSERT_EQ(route.bucket, want) << user;
    EXPECT_EQ(&route.served, (*set)->models()[want == "a" ? 0 : 1].get());
    EXPECT_EQ((*again)->RouteOf(user).bucket, want);
    in_a += want == "a" ? 1 : 0;
  }
  EXPECT_GT(in_a, 2700);
  EXPECT_LT(in_a, 3300);
}

TEST(ModelSetTest, ABadBucketListIsRefused) {
  struct Case {
    std::vector<std::shared_ptr<const ServedModel>> models;
    const char* message;
  };
  std::vector<std::shared_ptr<const ServedModel>> too_many;
  for (int i = 0; i < 101; ++i) too_many.push_back(Served(absl::StrCat("b", i), 1, "v"));
  std::vector<Case> cases;
  cases.push_back({{}, "0 buckets"});
  cases.push_back({too_many, "101 buckets"});
  cases.push_back({{Served("", 100, "v")}, "is empty or repeated"});
  cases.push_back({{Served("a", 50, "v"), Served("a", 50, "v")}, "\"a\" is empty or repeated"});
  cases.push_back({{Served("a", 0, "v"), Served("b", 100, "v")}, "percent 0 is out of range"});
  cases.push_back({{Served("a", 60, "v"), Served("b", 50, "v")}, "percent 50 is out of range"});
  cases.push_back({{Served("a", 50, "v"), Served("b", 40, "v")}, "sum to 90, not 100"});
  for (const Case& c : cases) {
    absl::StatusOr<std::shared_ptr<const ModelSet>> set = ModelSet::Buckets(c.models, 1);
    ASSERT_FALSE(set.ok()) << c.message;
    EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(set.status().message()), HasSubstr(c.message));
  }
}

TEST(ModelSetTest, ASwapIsSeenWholeAndTheOldSetLivesWhileHeld) {
  const int64_t live = Model::Live();
  ServingModels serving(ModelSet::Of(Shipped("v0")));
  std::shared_ptr<const ModelSet> held = serving.Current();  // A request in flight.
  // Readers take the current set while a writer swaps 200 sets in: each
  // sees a whole set, generations never go back.
  std::vector<std::shared_ptr<const ModelSet>> next;
  for (uint64_t g = 2; g <= 201; ++g) {
    next.push_back(ModelSet::Single(Served("", 100, absl::StrCat("v", g)), g));
  }
  std::atomic<bool> done{false};
  std::atomic<int> went_back{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      uint64_t last = 0;
      while (!done.load()) {
        const std::shared_ptr<const ModelSet> set = serving.Current();
        const uint64_t g = set->generation();
        if (g < last) went_back.fetch_add(1);
        last = g;
        // Whole: its one model is the one this generation was built with.
        if (g > 1 && set->Summary() != absl::StrCat("ecom_search_lr@v", g)) went_back.fetch_add(1);
      }
    });
  }
  for (const auto& set : next) serving.Swap(set);
  done.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(went_back.load(), 0);
  EXPECT_EQ(serving.Current()->generation(), 201u);
  EXPECT_EQ(held->Summary(), "ecom_search_lr@v0");
  next.clear();
  EXPECT_EQ(Model::Live(), live + 2);  // v0 (held) and v201 (serving).
  held.reset();
  EXPECT_EQ(Model::Live(), live + 1);
}

}  // namespace
}  // namespace rankwire
