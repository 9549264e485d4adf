// ModelReloader, synchronously: each trigger (start-up, a poll, an
// operator's SIGHUP or RPC, a Kubernetes ConfigMap's ..data swap, one
// bucket's file) and each refusal, through Reload() / PollOnce() on the
// test's thread (the poll thread is off: poll_interval 0). Each test says
// what serves after, and what is counted (the metrics) and kept (Describe,
// what GetModels returns). The real server doing the same over gRPC and
// SIGHUP: tests/integration/model_reload_test.cc.
#include "server/model_reloader.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/status_reason.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/model_dir.h"

namespace rankwire {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ModelReloaderTest : public ModelDirTest {
 protected:
  // `registry_` records the metrics of the one reloader a test starts with
  // it (the registry outlives the reloaders it reads from only when they are
  // started with `metrics` false).
  absl::StatusOr<std::unique_ptr<ModelReloader>> Start(const std::string& source,
                                                       bool fail_fast = false,
                                                       bool metrics = true) {
    ModelReloadOptions options;
    options.source = (dir_ / source).string();
    options.poll_interval = absl::ZeroDuration();
    options.fail_fast = fail_fast;
    options.load.max_file_bytes = max_file_bytes_;
    options.on_first_model = [this] { ++first_models_; };
    return ModelReloader::Start(std::move(options), metrics ? &registry_ : nullptr);
  }
  // A metric's value on the metrics page (-1 when absent).
  double Metric(absl::string_view series) const {
    for (absl::string_view line : absl::StrSplit(registry_.RenderPrometheus(), '\n')) {
      if (absl::StartsWith(line, absl::StrCat(series, " "))) {
        double v = -1;
        EXPECT_TRUE(absl::SimpleAtod(line.substr(series.size() + 1), &v)) << line;
        return v;
      }
    }
    return -1;
  }
  double Failures(absl::string_view reason) const {
    return Metric(absl::StrCat("rankwire_model_reload_failures_total{reason=\"", reason, "\"}"));
  }
  // Every refusal counted, whatever its reason.
  double AllFailures() const {
    double sum = 0;
    for (const char* reason : kRefusalReasons) sum += Failures(reason);
    return sum;
  }
  static std::string Serving(const ModelReloader& r) {
    std::shared_ptr<const ModelSet> set = r.Current();
    return set == nullptr ? "nothing" : set->Summary();
  }

  MetricsRegistry registry_;
  uint64_t max_file_bytes_ = uint64_t{1} << 20;
  int first_models_ = 0;
};

TEST_F(ModelReloaderTest, StartUpLoadsTheNewestVersionAndCountsNoReload) {
  Write("1.model", Model("v1"));
  Write("2.model", Model("v2"));
  absl::StatusOr<std::unique_ptr<ModelReloader>> r = Start("");
  ASSERT_TRUE(r.ok()) << r.status();
  ModelReloader& reloader = **r;
  EXPECT_EQ(Serving(reloader), "ecom_search_lr@v2");
  EXPECT_EQ(reloader.Current()->generation(), 1u);
  EXPECT_EQ(first_models_, 1);
  EXPECT_EQ(Metric("rankwire_model_reloads_total"), 0);
  EXPECT_EQ(Metric("rankwire_model_generation"), 1);
  EXPECT_EQ(AllFailures(), 0);
  const rank::v1::GetModelsResponse described = reloader.Describe();
  ASSERT_EQ(described.models_size(), 1);
  EXPECT_EQ(described.models(0).version(), "v2");
  EXPECT_EQ(described.models(0).path(), (dir_ / "2.model").string());
  EXPECT_EQ(described.models(0).kind(), "linear");
  EXPECT_EQ(described.generation(), 1u);
  EXPECT_EQ(described.last_failure_reason(), "");
  // Nothing changed: an operator's reload swaps nothing in.
  const std::shared_ptr<const ModelSet> before = reloader.Current();
  absl::StatusOr<bool> again = reloader.Reload("SIGHUP");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(*again);
  EXPECT_EQ(reloader.Current(), before);
  EXPECT_EQ(Metric("rankwire_model_reloads_total"), 0);
}

TEST_F(ModelReloaderTest, StartUpOnTheNewestVersionThatLoadsCountsTheRefusedOne) {
  Write("1.model", Model("v1"));
  Write("2.model", "rankwire-model 1\nname x\n");  // No "end": half written.
  absl::StatusOr<std::unique_ptr<ModelReloader>> r = Start("");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Serving(**r), "ecom_search_lr@v1");
  EXPECT_EQ(AllFailures(), 1);
  EXPECT_EQ(Failures("truncated"), 1);
  EXPECT_EQ((*r)->Describe().last_failure_reason(), "truncated");
}

TEST_F(ModelReloaderTest, StartUpWithNothingLoadableServesNothingUntilOneLoads) {
  Write("ranker.model", "");
  absl::StatusOr<std::unique_ptr<ModelReloader>> failed =
      Start("ranker.model", /*fail_fast=*/true, /*metrics=*/false);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(RefusalReason(failed.status()), "empty");
  absl::StatusOr<std::unique_ptr<ModelReloader>> r = Start("ranker.model");
  ASSERT_TRUE(r.ok()) << r.status();
  ModelReloader& reloader = **r;
  EXPECT_EQ(reloader.Current(), nullptr);
  EXPECT_EQ(first_models_, 0);
  EXPECT_EQ(Failures("empty"), 1);
  EXPECT_EQ(reloader.Describe().last_failure_reason(), "empty");
  EXPECT_EQ(reloader.Describe().models_size(), 0);
  // A poll does not retry the same refused file; an operator's reload does.
  EXPECT_FALSE(*reloader.PollOnce());
  EXPECT_EQ(Failures("empty"), 1);
  EXPECT_FALSE(reloader.Reload("SIGHUP").ok());
  EXPECT_EQ(Failures("empty"), 2);
  Write("ranker.model", Model("v1"));
  absl::StatusOr<bool> polled = reloader.PollOnce();
  ASSERT_TRUE(polled.ok()) << polled.status();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(Serving(reloader), "ecom_search_lr@v1");
  EXPECT_EQ(reloader.Current()->generation(), 1u);
  EXPECT_EQ(first_models_, 1);
  // The first load is not a reload; the refusal stays on record.
  EXPECT_EQ(Metric("rankwire_model_reloads_total"), 0);
  EXPECT_EQ(reloader.Describe().last_failure_reason(), "empty");
}

TEST_F(ModelReloaderTest, APollLoadsAChangeAndRequestsOnTheOldSetKeepIt) {
  Write("ranker.model", Model("v1"));
  absl::StatusOr<std::unique_ptr<ModelReloader>> r = Start("ranker.model");
  ASSERT_TRUE(r.ok()) << r.status();
  ModelReloader& reloader = **r;
  EXPECT_FALSE(*reloader.PollOnce());
  const std::shared_ptr<const ModelSet> running = reloader.Current();  // A request in flight.
  const int64_t live = Model::Live();
  Write("ranker.model", Model("v2"));
  absl::StatusOr<bool> polled = reloader.PollOnce();
  ASSERT_TRUE(polled.ok()) << polled.status();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(Serving(reloader), "ecom_search_lr@v2");
  EXPECT_EQ(running->Summary(), "ecom_search_lr@v1");
  EXPECT_EQ(reloader.Current()->generation(), 2u);
  EXPECT_EQ(Metric("rankwire_model_reloads_total"), 1);
  EXPECT_EQ(Metric("rankwire_model_generation"), 2);
  EXPECT_EQ(Model::Live(), live + 1);  // v1 held by the running request.
  EXPECT_EQ(first_models_, 1);
}

TEST_F(ModelReloaderTest, AConfigMapDataSwapIsAChange) {
  fs::create_directory(dir_ / "..2026_12_07_01");
  std::ofstream(dir_ / "..2026_12_07_01" / "ranker.model") << Model("cm1");
  fs::create_directory_symlink("..2026_12_07_01", dir_ / "..data");
  fs::create_symlink("..data/ranker.model", dir_ / "ranker.model");
  absl::StatusOr<std::unique_ptr<ModelReloader>> r = Start("ranker.model");
  ASSERT_TRUE(r.ok()) << r.status();
  ModelReloader& reloader = **r;
  EXPECT_EQ(Serving(reloader), "ecom_search_lr@cm1");
  fs::create_directory(dir_ / "..2026_12_07_02");
  std::ofstream(dir_ / "..2026_12_07_02" / "ranker.model") << Model("cm2");
  fs::create_directory_symlink("..2026_12_07_02", dir_ / "..data_tmp");
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  absl::StatusOr<bool> polled = reloader.PollOnce();
  ASSERT_TRUE(polled.ok()) << polled.status();
  EXPECT_TRUE(*polled);
  EXPECT_EQ(Serving(reloader), "ecom_search_lr@cm2");
  EXPECT_EQ(reloader.Describe().models(0).path(), (dir_ / "ranker.model").string());
}

TEST_F(ModelReloaderTest, OneBucketsNewFileReplacesOnlyThatBucketsModel) {
  Write("a.model", Model("a1"));
  Write("b.model", Model("b1"));
  Write(kManifestName, "rankwire-manifest 1\nbucket a 30 a.model\nbucket b 70 b.model\nend\n");
  absl::StatusOr<std::unique_ptr<ModelReloader>> r = Start("");
  ASSERT_TRUE(r.ok()) << r.status();
  ModelReloader& reloader = **r;
  EXPECT_EQ(Serving(reloader), "a=ecom_search_lr@a1(30%) b=ecom_search_lr@b1(70%)");
  const std::shared_ptr<const ModelSet> before = reloader.Current();
  Write("b.model", Model("b2"));
  absl::StatusOr<bool> reloaded = reloader.Reload("SIGHUP");
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_TRUE(*reloaded);
  const std::shared_ptr<const ModelSet> after = reloader.Current();
  EXPECT_EQ(after->Summary(), "a=ecom_search_lr@a1(30%) b=ecom_search_lr@b2(70%)");
  // Bucket a's model, its load time and request counter: the same object.
  EXPECT_EQ(after->models()[0], before->models()[0]);
  EXPECT_NE(after->models()[1], before->models()[1]);
  // New shares only: the same models, new routes.
  Write(kManifestName, "rankwire-manifest 1\nbucket a 60 a.model\nbucket b 40 b.model\nend\n");
  ASSERT_TRUE(*reloader.Reload("rpc"));
  EXPECT_EQ(Serving(reloader), "a=ecom_search_lr@a1(60%) b=ecom_search_lr@b2(40%)");
  EXPECT_EQ(reloader.Current()->models()[0]->model, before->models()[0]->model);
  EXPECT_EQ(reloader.Current()->models()[1]->model, after->models()[1]->model);
  EXPECT_EQ(Metric("rankwire_model_reloads_total"), 2);
  EXPECT_EQ(reloader.Describe().models(1).percent(), 40u);
}

// The poll thread (every millisecond here) and an operator's reloads take
// turns (reload_mu_): whichever sees a new file first loads it, the other
// finds it unchanged, and every version is served once it is written. Run
// under ThreadSanitizer by scripts/tsan.sh.
TEST_F(ModelReloaderTest, ThePollThreadAndSynchronousReloadsTakeTurns) {
  Write("ranker.model", Model("v0"));
  ModelReloadOptions options;
  options.source = (dir_ / "ranker.model").string();
  options.poll_interval = absl::Milliseconds(1);
  absl::StatusOr<std::unique_ptr<ModelReloader>> r =
      ModelReloader::Start(std::move(options), &registry_);
  ASSERT_TRUE(r.ok()) << r.status();
  ModelReloader& reloader = **r;
  for (int i = 1; i <= 20; ++i) {
    const std::string version = absl::StrCat("v", i);
    Write("ranker.model", Model(version));
    absl::StatusOr<bool> reloaded = reloader.Reload("rpc");
    ASSERT_TRUE(reloaded.ok()) << reloaded.status();
    EXPECT_EQ(Serving(reloader), "ecom_search_lr@" + version);
    reloader.RequestReload("SIGHUP");
  }
  EXPECT_EQ(reloader.Current()->generation(), 21u);
  EXPECT_EQ(Metric("rankwire_model_reloads_total"), 20);
  EXPECT_EQ(AllFailures(), 0);
}

// Each refusal, from a server serving v1: the reload fails with the
// reason, v1 serves on (the same set), the reason is counted once and kept
// for GetModels with the file's error.
TEST_F(ModelReloaderTest, EveryRefusalKeepsTheOldModelsAndIsCountedAndKept) {
  struct Case {
    const char* what;
    std::string file;      // Written to 1.model.
    std::string manifest;  // Written to rankwire.manifest, if not empty.
    const char* reason;
    const char* message;
  };
  const std::string big = Model("v2") + "# " + std::string(2000, 'x') + "\n";
  const std::vector<Case> cases = {
      {"an empty file", "", "", "empty", "empty"},
      {"a half-written file", "rankwire-model 1\nname x\nversion 1\n", "", "truncated", ""},
      {"a number that is not one",
       absl::StrReplaceAll(Model("v2"), {{"head ctr -3.20 1.00", "head ctr -3.2x 1.00"}}), "",
       "invalid_number", "1.model:"},
      {"an unknown transform",
       absl::StrReplaceAll(Model("v2"), {{"transform price log1p", "transform price cube"}}), "",
       "unknown_transform", "cube"},
      {"scores that are not finite (the load check)",
       absl::StrReplaceAll(Model("v2"), {{"head ctr -3.20 1.00", "head ctr -800 -1"}}), "",
       "check_failed", "not finite"},
      {"a file over --model_max_file_bytes", big, "", "too_large", ""},
      {"a JSON model that is not XGBoost's", "{}", "", "invalid_model", ""},
      {"features callers do not send", Model("v2"),
       "rankwire-manifest 1\nmodel 1.model\nitem_features price\nend\n", "unknown_feature",
       "sales_30d"},
      {"a manifest without its end", Model("v2"), "rankwire-manifest 1\nmodel 1.model\n",
       "truncated", kManifestName},
      {"a manifest whose shares do not sum to 100", Model("v2"),
       "rankwire-manifest 1\nbucket a 50 1.model\nbucket b 40 1.model\nend\n", "manifest", "100"},
      {"a manifest naming a file that is not there", Model("v2"),
       "rankwire-manifest 1\nmodel missing.model\nend\n", "not_found", "missing.model"},
      {"a manifest with an unknown directive", Model("v2"),
       "rankwire-manifest 1\nmodle 1.model\nend\n", "manifest", "modle"},
  };
  max_file_bytes_ = Model("v2").size() + 1000;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    fs::remove_all(dir_);
    fs::create_directory(dir_);
    Write("1.model", Model("v1"));
    MetricsRegistry registry;
    ModelReloadOptions options;
    options.source = dir_.string();
    options.poll_interval = absl::ZeroDuration();
    options.load.max_file_bytes = max_file_bytes_;
    absl::StatusOr<std::unique_ptr<ModelReloader>> r =
        ModelReloader::Start(std::move(options), &registry);
    ASSERT_TRUE(r.ok()) << r.status();
    ModelReloader& reloader = **r;
    const std::shared_ptr<const ModelSet> serving = reloader.Current();
    if (!c.manifest.empty()) Write(kManifestName, c.manifest);
    Write("1.model", c.file);
    absl::StatusOr<bool> reloaded = reloader.Reload("SIGHUP");
    ASSERT_FALSE(reloaded.ok());
    EXPECT_EQ(RefusalReason(reloaded.status()), c.reason) << reloaded.status();
    EXPECT_THAT(std::string(reloaded.status().message()), HasSubstr(c.message));
    EXPECT_EQ(reloader.Current(), serving);
    EXPECT_EQ(Serving(reloader), "ecom_search_lr@v1");
    const std::string page = registry.RenderPrometheus();
    EXPECT_THAT(page, HasSubstr(absl::StrCat("rankwire_model_reload_failures_total{reason=\"",
                                             c.reason, "\"} 1\n")));
    EXPECT_THAT(page, HasSubstr("rankwire_model_reloads_total 0\n"));
    const rank::v1::GetModelsResponse described = reloader.Describe();
    EXPECT_EQ(described.last_failure_reason(), c.reason);
    EXPECT_EQ(described.last_failure(), reloaded.status().message());
    EXPECT_GT(described.last_failure_unix_ms(), 0);
    ASSERT_EQ(described.models_size(), 1);
    EXPECT_EQ(described.models(0).version(), "v1");
    // A poll does not retry it; a fixed file loads.
    EXPECT_FALSE(*reloader.PollOnce());
    EXPECT_THAT(registry.RenderPrometheus(),
                HasSubstr(absl::StrCat("{reason=\"", c.reason, "\"} 1\n")));
    fs::remove(dir_ / kManifestName);
    Write("1.model", Model("v3"));
    absl::StatusOr<bool> fixed = reloader.PollOnce();
    ASSERT_TRUE(fixed.ok()) << fixed.status();
    EXPECT_TRUE(*fixed);
    EXPECT_EQ(Serving(reloader), "ecom_search_lr@v3");
    EXPECT_EQ(reloader.Describe().last_failure_reason(), c.reason);
  }
}

}  // namespace
}  // namespace rankwire
