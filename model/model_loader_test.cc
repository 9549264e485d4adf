#include "model/model_loader.h"

#include <filesystem>
#include <string>

#include "base/status_reason.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_dir.h"

namespace rankwire {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using ModelLoaderTest = ModelDirTest;

TEST_F(ModelLoaderTest, ADirectoryServesItsNewestVersionNumberByNumber) {
  Write("2.model", Model("a"));
  Write("10.model", Model("b"));
  Write("9.9.model", Model("c"));
  Write(".11.model", Model("hidden"));
  Write("11.model.tmp", Model("partial"));
  Write("README", "not a model");
  absl::StatusOr<ModelPlan> plan = PlanModels(dir_.string());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->entries.size(), 1u);
  EXPECT_EQ(plan->entries[0].path, (dir_ / "10.model").string());
  EXPECT_EQ(plan->entries[0].version_hint, "10");
  EXPECT_FALSE(plan->bucketed);
  Write("2026.11.10.json", "{}");
  Write("2026.11.3.model", Model("d"));
  plan = PlanModels(dir_.string());
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->entries[0].path, (dir_ / "2026.11.10.json").string());
}

TEST_F(ModelLoaderTest, AManifestNamesBucketsOrOneModel) {
  fs::create_directory(dir_ / "trees");
  Write("trees/1.model", Model("t1"));
  Write("lin.model", Model("lin"));
  Write(kManifestName,
        "rankwire-manifest 1\nbucket a 30 lin.model\nbucket b 70 trees/\n"
        "item_features price\nend\n");
  absl::StatusOr<ModelPlan> plan = PlanModels(dir_.string());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->bucketed);
  ASSERT_EQ(plan->entries.size(), 2u);
  EXPECT_EQ(plan->entries[1].bucket, "b");
  EXPECT_EQ(plan->entries[1].percent, 70);
  EXPECT_EQ(plan->entries[1].path, (dir_ / "trees/1.model").string());
  ASSERT_TRUE(plan->supplied.has_value());
  EXPECT_EQ(plan->supplied->item, std::vector<std::string>{"price"});

  Write(kManifestName, "rankwire-manifest 1\nmodel lin.model\nend\n");
  plan = PlanModels(dir_.string());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->bucketed);
  absl::StatusOr<LoadedModel> loaded = LoadModel(plan->entries[0], {});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model->full_version(), "ecom_search_lr@lin");
}

TEST_F(ModelLoaderTest, ABadManifestIsRefusedWithItsLineAndReason) {
  Write("lin.model", Model("lin"));
  struct Case {
    std::string text;
    std::string message;
    std::string reason;
  };
  const Case cases[] = {
      {"rankwire-manifest 1\nbucket a 50 lin.model\nend\n", "percents sum to 50", "manifest"},
      {"rankwire-manifest 1\nbucket a 50 lin.model\nbucket a 50 lin.model\nend\n",
       ":3: bucket \"a\" named twice", "manifest"},
      {"rankwire-manifest 1\nmodel lin.model\nbucket a 100 lin.model\nend\n",
       ":3: a bucket line after", "manifest"},
      {"rankwire-manifest 1\nbucket a 100 lin.model\n", "no \"end\" line", "truncated"},
      {"rankwire-manifest 1\nfrobnicate\nend\n", ":2: unknown directive", "manifest"},
      {"", "empty manifest", "manifest"},
      // The canary's last step taken literally: the model line alone.
      {"model lin.model\n",
       ":1: the header line \"rankwire-manifest 1\" is missing (the first line is \"model "
       "lin.model\")",
       "manifest"},
      {"rankwire-manifest 1\nmodel lin.model\n",
       "no \"end\" line: the manifest is truncated (or was read while being written)", "truncated"},
  };
  for (const Case& c : cases) {
    Write(kManifestName, c.text);
    absl::StatusOr<ModelPlan> plan = PlanModels(dir_.string());
    ASSERT_FALSE(plan.ok()) << c.text;
    EXPECT_THAT(std::string(plan.status().message()), HasSubstr(c.message)) << c.text;
    EXPECT_EQ(ReasonOf(plan.status()).value_or("none"), c.reason) << c.text;
    if (c.reason != "manifest" || c.text.empty() || c.text[0] != 'r') {
      // A missing header or end is shown the whole form.
      EXPECT_THAT(std::string(plan.status().message()),
                  HasSubstr("the three lines \"rankwire-manifest 1\" / \"model <file or version "
                            "directory>\" / \"end\""))
          << c.text;
    }
  }
  // A missing file is the load's error (the plan names it).
  Write(kManifestName, "rankwire-manifest 1\nbucket a 100 gone.model\nend\n");
  absl::StatusOr<ModelPlan> plan = PlanModels(dir_.string());
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<LoadedModel> loaded = LoadModel(plan->entries[0], {});
  EXPECT_EQ(ReasonOf(loaded.status()).value_or("none"), "not_found");
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("gone.model"));
}

// A file named .json is read as JSON: empty, text and cut-off files all get
// "not valid JSON", each with its reason; other names go by content.
TEST_F(ModelLoaderTest, AJsonFileIsReadAsJson) {
  struct Case {
    std::string text;
    std::string message;
    std::string reason;
  };
  const Case cases[] = {
      {"", "ranker.json: not valid JSON: the file is empty", "empty"},
      {"  \n", "ranker.json: not valid JSON: the file is empty", "empty"},
      {"hello world\n", "ranker.json: not valid JSON: it starts with \"hello world\", not '{'",
       "invalid_model"},
      {shipped_, "(it is a linear model: name it <version>.model", "invalid_model"},
      {"{\"learner\": {\"attributes\": {", "ranker.json: not valid JSON (truncated?)", "truncated"},
  };
  ModelPlan::Entry entry;
  entry.path = (dir_ / "ranker.json").string();
  for (const Case& c : cases) {
    Write("ranker.json", c.text);
    absl::StatusOr<LoadedModel> loaded = LoadModel(entry, {});
    ASSERT_FALSE(loaded.ok()) << c.text;
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument) << loaded.status();
    EXPECT_THAT(std::string(loaded.status().message()), HasSubstr(c.message));
    EXPECT_EQ(ReasonOf(loaded.status()).value_or("none"), c.reason) << loaded.status();
  }
  // The same bytes under another name: the linear format's errors (and a
  // linear model loads).
  Write("ranker.model", "");
  entry.path = (dir_ / "ranker.model").string();
  absl::StatusOr<LoadedModel> loaded = LoadModel(entry, {});
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(std::string(loaded.status().message()), HasSubstr("empty model file"));
  Write("ranker.model", shipped_);
  EXPECT_TRUE(LoadModel(entry, {}).ok());
}

}  // namespace
}  // namespace rankwire
