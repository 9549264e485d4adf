#include "model/xgboost/xgboost_spec.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/xgboost/xgboost_test_util.h"

namespace rankwire::xgboost {
namespace {

using ::testing::HasSubstr;
using testing::ModelJson;
using testing::ModelSpec;
using testing::TreeSpec;

// f0 < 0.5 (missing: left) ? 1 : (f1 < -1 (missing: right) ? -2 : 3); then 0.25.
ModelSpec SmallModel() {
  ModelSpec m;
  m.trees.push_back(TreeSpec{{1, -1, 3, -1, -1},
                             {2, -1, 4, -1, -1},
                             {0, 0, 1, 0, 0},
                             {0.5f, 1.0f, -1.0f, -2.0f, 3.0f},
                             {1, 0, 0, 0, 0},
                             {10, 4, 6, 2, 4}});
  m.trees.push_back(TreeSpec{{-1}, {-1}, {0}, {0.25f}, {0}, {10}});
  return m;
}

absl::Status ParseError(const ModelSpec& m, XGBoostLoadOptions options = {}) {
  return XGBoostSpec::Parse(ModelJson(m), "m.json", options).status();
}

TEST(XGBoostModelTest, ParsesAndPredictsAsXGBoostWalks) {
  auto model = XGBoostSpec::Parse(ModelJson(SmallModel()), "m.json");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->objective(), Objective::kRankNdcg);
  EXPECT_EQ(model->num_features(), 3u);
  EXPECT_EQ(model->trees().size(), 2u);
  EXPECT_EQ(model->num_nodes(), 6u);
  EXPECT_EQ(model->max_depth(), 2);
  EXPECT_EQ(model->base_margin(), 0.5f);  // ranking: base_score as is
  const float nan = NAN;
  const float rows[][3] = {{0.0f, 0, 0}, {0.5f, -3, 0}, {0.5f, -1, 0}, {nan, 9, 0}, {2, nan, 0}};
  const float expected[] = {1.0f, -2.0f, 3.0f, 1.0f, 3.0f};  // 0.5 is not < 0.5: right
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(model->PredictMargin(rows[i]), 0.5f + expected[i] + 0.25f) << "row " << i;
    EXPECT_EQ(model->Predict(rows[i]), model->PredictMargin(rows[i]));
  }
}

TEST(XGBoostModelTest, LogisticBaseScoreIsInMarginSpaceAndOutputIsSigmoid) {
  ModelSpec m = SmallModel();
  m.objective = "binary:logistic";
  m.base_score = "2E-1";
  auto model = XGBoostSpec::Parse(ModelJson(m), "m.json");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->base_score(), 0.2f);
  EXPECT_EQ(model->base_margin(), -std::log(1.0f / 0.2f - 1.0f));
  EXPECT_FLOAT_EQ(model->Transform(0.0f), 0.5f);
  // 1.7's capped sigmoid: a very negative margin is tiny, not 0.
  EXPECT_EQ(model->Transform(-100.0f), 1.0f / (std::exp(88.7f) + 1.0f));
  EXPECT_GT(model->Transform(-100.0f), 0.0f);
  m.base_score = "1E0";
  EXPECT_THAT(ParseError(m).message(), HasSubstr("outside (0, 1)"));
}

TEST(XGBoostModelTest, ServesEachListedObjective) {
  for (const char* name :
       {"rank:pairwise", "rank:ndcg", "rank:map", "binary:logistic", "reg:squarederror"}) {
    ModelSpec m = SmallModel();
    m.objective = name;
    auto model = XGBoostSpec::Parse(ModelJson(m), "m.json");
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    EXPECT_EQ(ObjectiveName(model->objective()), name);
  }
}

TEST(XGBoostModelTest, RefusesUnlistedObjectiveBoosterAndMultiClass) {
  ModelSpec m = SmallModel();
  m.objective = "reg:logistic";
  EXPECT_EQ(ParseError(m).code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(ParseError(m).message(), HasSubstr("objective \"reg:logistic\" is not served"));
  m = SmallModel();
  m.booster = "dart";
  EXPECT_EQ(ParseError(m).code(), absl::StatusCode::kUnimplemented);
  m = SmallModel();
  m.num_class = "3";
  EXPECT_EQ(ParseError(m).code(), absl::StatusCode::kUnimplemented);
}

TEST(XGBoostModelTest, RefusesBadTreesNamingTreeAndNode) {
  struct Case {
    const char* what;
    void (*corrupt)(TreeSpec&);
    const char* message;
  };
  const Case cases[] = {
      {"cycle", [](TreeSpec& t) { t.left[2] = 0; }, "tree 0 node 2: child 0 is reached twice"},
      {"shared", [](TreeSpec& t) { t.left[2] = 1; }, "tree 0 node 2: child 1 is reached twice"},
      {"range", [](TreeSpec& t) { t.right[2] = 99; }, "tree 0 node 2: child 99 is out of range"},
      {"negative", [](TreeSpec& t) { t.right[0] = -5; }, "tree 0 node 0: child -5 is out of"},
      {"feature", [](TreeSpec& t) { t.feature[2] = 3; }, "tree 0 node 2: split feature 3 is past"},
      // XGBoost writes these as the words NaN and Infinity (not JSON).
      {"nan leaf", [](TreeSpec& t) { t.value[3] = NAN; }, "tree 0 node 3: split_conditions is NaN"},
      {"inf leaf", [](TreeSpec& t) { t.value[4] = -INFINITY; }, "tree 0 node 4: split_conditions"},
      {"nan split", [](TreeSpec& t) { t.value[2] = NAN; }, "tree 0 node 2: split_conditions is"},
      {"leaf right", [](TreeSpec& t) { t.right[1] = 3; }, "tree 0 node 1: left child -1 but"},
      {"cover", [](TreeSpec& t) { t.cover[1] = -1; }, "tree 0 node 1: sum_hessian -1"},
      {"lengths", [](TreeSpec& t) { t.value.pop_back(); }, "tree 0: split_conditions has 4"},
      {"empty", [](TreeSpec& t) { t = TreeSpec{}; }, "tree 0 has no nodes"},
  };
  for (const Case& c : cases) {
    ModelSpec m = SmallModel();
    c.corrupt(m.trees[0]);
    const absl::Status status = ParseError(m);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.what;
    EXPECT_THAT(status.message(), HasSubstr("m.json: ")) << c.what;
  }
}

TEST(XGBoostModelTest, RefusesAFiniteNumberPastFloatRange) {
  std::string json = ModelJson(SmallModel());
  const size_t at = json.find("1.000000000e+00", json.find("split_conditions"));
  json.replace(at, 15, "1e39");  // a double, but inf as a float
  EXPECT_THAT(XGBoostSpec::Parse(json, "m.json").status().message(),
              HasSubstr("tree 0 node 1: leaf value inf is not finite"));
}

TEST(XGBoostModelTest, RefusesTreesDeeperThanTheLimit) {
  ModelSpec m = SmallModel();
  XGBoostLoadOptions options;
  options.max_depth = 1;
  EXPECT_THAT(ParseError(m, options).message(),
              HasSubstr("tree 0 node 2: depth over the limit of 1"));
  // A chain: each level a leaf on the left and the next split on the right.
  auto chain = [](int depth) {
    TreeSpec t;
    for (int level = 0; level < depth; ++level) {
      const int node = static_cast<int>(t.left.size());
      t.left.insert(t.left.end(), {node + 1, -1});
      t.right.insert(t.right.end(), {node + 2, -1});
      t.feature.insert(t.feature.end(), {level % 3, 0});
      t.value.insert(t.value.end(), {0.1f * level, 1.0f});
      t.default_left.insert(t.default_left.end(), {0, 0});
      t.cover.insert(t.cover.end(), {2, 1});
    }
    t.left.push_back(-1), t.right.push_back(-1), t.feature.push_back(0), t.value.push_back(2);
    t.default_left.push_back(0), t.cover.push_back(1);
    return t;
  };
  m.trees = {chain(16)};
  auto model = XGBoostSpec::Parse(ModelJson(m), "m.json");  // default limit 16
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->max_depth(), 16);
  m.trees = {chain(17)};
  EXPECT_THAT(ParseError(m).message(), HasSubstr("depth over the limit of 16"));
}

TEST(XGBoostModelTest, FeatureNamesAreRequiredUnlessAllowed) {
  ModelSpec m = SmallModel();
  m.feature_names.clear();
  EXPECT_THAT(ParseError(m).message(), HasSubstr("has no feature_names"));
  XGBoostLoadOptions options;
  options.allow_unnamed_features = true;
  auto model = XGBoostSpec::Parse(ModelJson(m), "m.json", options);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_THAT(model->feature_names(), ::testing::ElementsAre("f0", "f1", "f2"));
  // Without the key at all (the fuzzer's first find: it crashed).
  std::string json = ModelJson(m);
  const std::string key = "\"feature_names\":[],";
  json.erase(json.find(key), key.size());
  EXPECT_THAT(XGBoostSpec::Parse(json, "m.json").status().message(),
              HasSubstr("has no feature_names"));
  m.feature_names = {"a", "b", "a"};
  EXPECT_THAT(ParseError(m).message(), HasSubstr("feature_names[2] \"a\" repeats"));
  m.feature_names = {"a", "b"};
  EXPECT_THAT(ParseError(m).message(), HasSubstr("2 names but num_feature is 3"));
}

TEST(XGBoostModelTest, RefusesBrokenDocuments) {
  const std::string json = ModelJson(SmallModel());
  EXPECT_THAT(XGBoostSpec::Parse("", "m.json").status().message(), HasSubstr("empty file"));
  for (size_t cut : {size_t{1}, json.size() / 3, json.size() - 1}) {
    const absl::Status status = XGBoostSpec::Parse(json.substr(0, cut), "m.json").status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << cut;
  }
  EXPECT_THAT(XGBoostSpec::Parse("[1,2]", "m.json").status().message(),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(XGBoostSpec::Parse("{\"learner\":{}}", "m.json").status().message(),
              HasSubstr("has no \"learner_model_param\""));
  EXPECT_THAT(XGBoostSpec::Parse("{L\x07learner{", "m.json").status().message(),
              HasSubstr("UBJSON"));
}

TEST(XGBoostModelTest, RefusesCategoricalSplits) {
  std::string json = ModelJson(SmallModel());
  const std::string from = "\"split_type\":[0,0,0";
  json.replace(json.find(from), from.size(), "\"split_type\":[1,0,0");
  EXPECT_EQ(XGBoostSpec::Parse(json, "m.json").status().code(), absl::StatusCode::kUnimplemented);
}

class TempFile {
 public:
  TempFile() {
    char name[] = "/tmp/xgboost_model_test_XXXXXX";
    fd_ = mkstemp(name);
    path_ = name;
  }
  ~TempFile() {
    close(fd_);
    unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

TEST(XGBoostModelTest, LoadFileReadsAndChecksSizeFirst) {
  TempFile file;
  const std::string json = ModelJson(SmallModel());
  ASSERT_EQ(write(file.fd(), json.data(), json.size()), static_cast<ssize_t>(json.size()));
  auto model = XGBoostSpec::LoadFile(file.path());
  ASSERT_TRUE(model.ok()) << model.status();
  XGBoostLoadOptions small;
  small.max_file_bytes = json.size() - 1;
  EXPECT_EQ(XGBoostSpec::LoadFile(file.path(), small).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(XGBoostSpec::LoadFile("/nonexistent/m.json").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(XGBoostModelTest, OneGigabyteFileIsRefusedWithoutReadingIt) {
  TempFile file;
  ASSERT_EQ(ftruncate(file.fd(), off_t{1} << 30), 0);  // sparse: no disk used
  const absl::Status status = XGBoostSpec::LoadFile(file.path()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr("1073741824 bytes, over the limit of 268435456"));
}

TEST(XGBoostModelTest, BindsFeaturesByNameAndKnowsTheirSource) {
  ModelSpec m = SmallModel();
  m.feature_names = {"price", "user.age", "ctx.hour"};
  auto model = XGBoostSpec::Parse(ModelJson(m), "m.json");
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<std::string> columns = {"ctx.hour", "price", "other"};
  EXPECT_THAT(model->BindFeatures(columns, true).value(), ::testing::ElementsAre(1, -1, 0));
  const absl::Status status = model->BindFeatures(columns, false).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("user.age"));
  EXPECT_EQ(SourceOfFeature("price"), FeatureSource::kItem);
  EXPECT_EQ(SourceOfFeature("user.age"), FeatureSource::kUser);
  EXPECT_EQ(SourceOfFeature("ctx.hour"), FeatureSource::kContext);
}

}  // namespace
}  // namespace rankwire::xgboost
