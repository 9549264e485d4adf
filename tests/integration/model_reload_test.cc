// Models reloading in the real rankwire-server binary: on SIGHUP, on a
// poll that sees a new version or a ConfigMap-style symlink swap, through
// the admin RPC; every bad model refused with the old one serving on, a
// named reason counted and logged; a bucket manifest routing users to a
// linear and an XGBoost model; and many reloads under load with no failed
// call, no response mixing two versions and no model leaked.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/rank_client.h"
#include "codec/builtin_codecs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/xgboost/xgboost_test_util.h"
#include "rank/v1/rank.grpc.pb.h"
#include "tests/support/server_process.h"
#include "workload/workload.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define RANKWIRE_SANITIZED_BUILD 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RANKWIRE_SANITIZED_BUILD 1
#endif
#ifndef RANKWIRE_SANITIZED_BUILD
#define RANKWIRE_SANITIZED_BUILD 0
#endif

namespace rankwire {
namespace {

namespace fs = std::filesystem;
using test::ServerProcess;
using ::testing::HasSubstr;

std::string ShippedModelText() {
  std::ifstream in(RANKWIRE_MODEL_PATH);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The shipped model under another version.
std::string LinearSpec(absl::string_view version) {
  return absl::StrReplaceAll(
      ShippedModelText(), {{"\nversion 2026.11.3\n", absl::StrCat("\nversion ", version, "\n")}});
}

void Write(const fs::path& path, absl::string_view text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// An XGBoost model over some of the shipped request's features and a user
// feature.
std::string XGBoostSpec(absl::string_view version) {
  xgboost::testing::ModelSpec model = xgboost::testing::RandomModel(7, 40, 5, 4);
  const std::vector<std::string> items = workload::ItemFeatureNames();
  model.feature_names = {items[0], items[1], items[2], "user.user_price_pref"};
  std::string json = xgboost::testing::ModelJson(model);
  return absl::StrReplaceAll(
      json, {{"\"attributes\":{}", absl::StrCat("\"attributes\":{\"rankwire_name\":\"ctr_xgb\","
                                                "\"rankwire_version\":\"",
                                                version, "\"}")}});
}

class ModelReloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs({});
    ASSERT_TRUE(codecs.ok()) << codecs.status();
    codecs_ = std::make_unique<CodecRegistry>(*std::move(codecs));
    char dir[] = "/tmp/rankwire-models-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::unique_ptr<ServerProcess> Start(std::vector<std::string> flags) {
    flags.insert(flags.begin(), "--log_mode=none");
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(flags);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  client::RankClient Client(const ServerProcess& server) {
    return client::RankClient(client::MakeChannel(server.target()), codecs_.get());
  }

  static rank::v1::RankRequest Request(uint64_t sequence = 0) {
    workload::WorkloadOptions options;
    options.accept_codecs = {"rankbin"};
    options.log_mode = rank::v1::LOG_MODE_NONE;
    options.candidates = 50;
    return workload::WorkloadGenerator(options).Make(sequence);
  }

  // The model_version the server answers with now ("" on error).
  std::string VersionNow(const ServerProcess& server) {
    absl::StatusOr<client::RankReply> reply = Client(server).Rank(Request(), {});
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? reply->header().model_version() : "";
  }

  // Waits up to `timeout` for the server to answer with `version`.
  bool WaitForVersion(const ServerProcess& server, const std::string& version,
                      absl::Duration timeout = absl::Seconds(5)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      // A failed call is not an error here: the server may have no model yet.
      absl::StatusOr<client::RankReply> reply = Client(server).Rank(Request(), {});
      if (reply.ok() && reply->header().model_version() == version) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  static double Metric(const ServerProcess& server, const std::string& series) {
    absl::StatusOr<std::string> page = test::HttpGet(server.metrics_port(), "/metrics");
    EXPECT_TRUE(page.ok()) << page.status();
    if (!page.ok()) return -1;
    const std::string prefix = series + " ";
    size_t at = page->find("\n" + prefix);
    if (at == std::string::npos) return -1;
    return std::stod(page->substr(at + 1 + prefix.size()));
  }

  // Waits until `series` reaches at least `value`.
  bool WaitForMetric(const ServerProcess& server, const std::string& series, double value,
                     absl::Duration timeout = absl::Seconds(5)) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (Metric(server, series) >= value) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  // The plaintext health port's address, from the start-up line.
  static std::string HealthTarget(const ServerProcess& server) {
    const std::string out = server.Output();
    const size_t at = out.find("health_port=");
    EXPECT_NE(at, std::string::npos);
    return absl::StrCat("127.0.0.1:", at == std::string::npos ? 0 : std::stoi(out.substr(at + 12)));
  }

  static rank::v1::GetModelsResponse Models(const std::string& target) {
    auto stub = rank::v1::ModelService::NewStub(
        grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    rank::v1::GetModelsResponse response;
    grpc::Status status = stub->GetModels(&context, {}, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  std::unique_ptr<CodecRegistry> codecs_;
  fs::path dir_;
};

TEST_F(ModelReloadTest, SighupLoadsTheNewestVersionAndTheServerKeepsServing) {
  Write(dir_ / "1.model", LinearSpec("v1"));
  auto server = Start({absl::StrCat("--model=", dir_.string()), "--model_poll_interval=0"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(VersionNow(*server), "ecom_search_lr@v1");
  Write(dir_ / "2.model", LinearSpec("v2"));
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(VersionNow(*server), "ecom_search_lr@v1") << "no poll: only SIGHUP reloads";
  ASSERT_TRUE(server->Signal(SIGHUP).ok());
  EXPECT_TRUE(WaitForVersion(*server, "ecom_search_lr@v2"));
  EXPECT_TRUE(server->running());
  EXPECT_EQ(Metric(*server, "rankwire_model_reloads_total"), 1);
  EXPECT_EQ(Metric(*server,
                   "rankwire_model_info{bucket=\"\",name=\"ecom_search_lr\","
                   "version=\"v2\",kind=\"linear\"}"),
            1);
  EXPECT_THAT(server->Output(), HasSubstr("models (SIGHUP): generation 2 serving "
                                          "ecom_search_lr@v2"));
  // Each item names the version, and the header the bucket.
  absl::StatusOr<client::RankReply> reply = Client(*server).Rank(Request(), {});
  ASSERT_TRUE(reply.ok());
  EXPECT_FALSE(reply->header().experiment_bucket().empty());
  absl::StatusOr<ItemRef> item = reply->view().Item(0);
  ASSERT_TRUE(item.ok());
  absl::StatusOr<std::optional<MetricRef>> version = item->Metric("model.version");
  ASSERT_TRUE(version.ok() && version->has_value());
  EXPECT_EQ((*version)->string_value(), "ecom_search_lr@v2");
}

// A Kubernetes ConfigMap volume: the file is a symlink through "..data",
// which an update points at a new directory with one rename.
TEST_F(ModelReloadTest, APollSeesAConfigMapSymlinkSwapWithinItsInterval) {
  fs::create_directory(dir_ / "..2026_12_06_01");
  Write(dir_ / "..2026_12_06_01" / "ranker.model", LinearSpec("cm1"));
  fs::create_directory_symlink("..2026_12_06_01", dir_ / "..data");
  fs::create_symlink("..data/ranker.model", dir_ / "ranker.model");
  auto server = Start(
      {absl::StrCat("--model=", (dir_ / "ranker.model").string()), "--model_poll_interval=100ms"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(VersionNow(*server), "ecom_search_lr@cm1");
  fs::create_directory(dir_ / "..2026_12_06_02");
  Write(dir_ / "..2026_12_06_02" / "ranker.model", LinearSpec("cm2"));
  fs::create_directory_symlink("..2026_12_06_02", dir_ / "..data_tmp");
  const absl::Time swapped = absl::Now();
  fs::rename(dir_ / "..data_tmp", dir_ / "..data");
  fs::remove_all(dir_ / "..2026_12_06_01");
  ASSERT_TRUE(WaitForVersion(*server, "ecom_search_lr@cm2", absl::Seconds(3)));
  // Within the poll interval and the load (the shipped model loads in a
  // few ms; the bound leaves room for a loaded CI machine).
  EXPECT_LT(absl::Now() - swapped, absl::Seconds(2));
  EXPECT_THAT(server->Output(), HasSubstr("models (poll): generation 2"));
}

// Waits up to 5 s for the server's output to hold `text`.
bool WaitForOutput(const ServerProcess& server, absl::string_view text) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (absl::Now() < deadline) {
    if (absl::StrContains(server.Output(), text)) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return false;
}

// An operator's SIGHUP is answered in the log whatever it finds: unchanged,
// refused with the reason, or loaded. GetModels keeps the refusal, with its
// time, after the next good load (until a newer refusal replaces it).
TEST_F(ModelReloadTest, EverySighupLogsItsOutcomeAndTheLastRefusalIsKept) {
  Write(dir_ / "1.model", LinearSpec("v1"));
  auto server = Start(
      {absl::StrCat("--model=", dir_.string()), "--model_poll_interval=0", "--health_port=0"});
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(server->Signal(SIGHUP).ok());
  EXPECT_TRUE(WaitForOutput(*server,
                            "models (SIGHUP): unchanged, generation 1 serving "
                            "ecom_search_lr@v1 from "))
      << server->Output();
  EXPECT_EQ(Models(HealthTarget(*server)).last_failure_reason(), "");

  const std::string good = LinearSpec("v2");
  Write(dir_ / "2.model", good.substr(0, good.find("\nweight cvr")));
  ASSERT_TRUE(server->Signal(SIGHUP).ok());
  EXPECT_TRUE(WaitForOutput(*server, "model reload (SIGHUP) refused, reason truncated: "))
      << server->Output();
  const rank::v1::GetModelsResponse refused = Models(HealthTarget(*server));
  EXPECT_EQ(refused.last_failure_reason(), "truncated");
  EXPECT_THAT(refused.last_failure(), HasSubstr("2.model"));
  EXPECT_GT(refused.last_failure_unix_ms(), 0);

  Write(dir_ / "3.model", LinearSpec("v3"));
  ASSERT_TRUE(server->Signal(SIGHUP).ok());
  EXPECT_TRUE(WaitForVersion(*server, "ecom_search_lr@v3"));
  EXPECT_THAT(server->Output(), HasSubstr("models (SIGHUP): generation 2 serving "
                                          "ecom_search_lr@v3"));
  const rank::v1::GetModelsResponse kept = Models(HealthTarget(*server));
  EXPECT_EQ(kept.generation(), 2u);
  EXPECT_EQ(kept.last_failure_reason(), "truncated");
  EXPECT_EQ(kept.last_failure(), refused.last_failure());
  EXPECT_EQ(kept.last_failure_unix_ms(), refused.last_failure_unix_ms());
  ASSERT_EQ(kept.models_size(), 1);
  EXPECT_GE(kept.models(0).loaded_unix_ms(), kept.last_failure_unix_ms());
}

// Every bad model: refused with its reason counted and logged with the
// file, the old model serving on, health SERVING.
TEST_F(ModelReloadTest, ABadModelNeverTakesTheServiceDown) {
  Write(dir_ / "1.model", LinearSpec("good"));
  auto server = Start({absl::StrCat("--model=", dir_.string()), "--model_poll_interval=50ms"});
  ASSERT_NE(server, nullptr);
  const std::string good = LinearSpec("bad");
  struct Case {
    std::string reason;
    std::function<void(const fs::path&)> write;
    std::string logged;  // Part of the error line.
  };
  const Case cases[] = {
      {"truncated", [&](const fs::path& p) { Write(p, good.substr(0, good.find("\nweight cvr"))); },
       "no \"end\" line"},
      {"truncated", [&](const fs::path& p) { Write(p, good.substr(0, good.size() / 2 + 7)); }, ""},
      {"invalid_number",
       [&](const fs::path& p) {
         Write(p, absl::StrReplaceAll(good, {{"head ctr -3.20 1.00", "head ctr nan 1.00"}}));
       },
       "\"nan\" is not a finite number"},
      {"invalid_number",
       [&](const fs::path& p) {
         Write(p, absl::StrReplaceAll(good, {{"boost i2i_cf 1.03", "boost i2i_cf inf"}}));
       },
       "is not a finite number"},
      {"unknown_transform",
       [&](const fs::path& p) {
         Write(p, absl::StrReplaceAll(good, {{"transform price log1p", "transform price sqrt"}}));
       },
       "unknown transform \"sqrt\""},
      {"empty", [&](const fs::path& p) { Write(p, ""); }, "empty model file"},
      {"permission_denied",
       [&](const fs::path& p) {
         Write(p, good);
         chmod(p.c_str(), 0);
       },
       "Permission denied"},
      {"too_large",
       [&](const fs::path& p) {
         Write(p, good);
         ASSERT_EQ(truncate(p.c_str(), off_t{1} << 30), 0);  // 1 GB, sparse.
       },
       "1073741824 bytes, over the limit"},
      {"invalid_model", [&](const fs::path& p) { Write(p, "{\"learner\": {\"objective\": 3}}"); },
       ""},
  };
  int version = 2;
  std::map<std::string, double> counted;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.reason);
    const fs::path bad = dir_ / absl::StrCat(version++, ".model");
    c.write(bad);
    const std::string series =
        absl::StrCat("rankwire_model_reload_failures_total{reason=\"", c.reason, "\"}");
    EXPECT_TRUE(WaitForMetric(*server, series, ++counted[c.reason]))
        << series << " " << Metric(*server, series) << "\n"
        << server->Output();
    EXPECT_EQ(VersionNow(*server), "ecom_search_lr@good");
    EXPECT_EQ(Metric(*server, "rankwire_serving"), 1);
    const std::string out = server->Output();
    EXPECT_THAT(out, HasSubstr(absl::StrCat("model reload (poll) refused, reason ", c.reason, ": ",
                                            bad.string())));
    if (!c.logged.empty()) {
      EXPECT_THAT(out, HasSubstr(c.logged));
    }
    // A poll does not try the same bad file again.
    absl::SleepFor(absl::Milliseconds(150));
    EXPECT_EQ(Metric(*server, series), counted[c.reason]);
    fs::remove(bad);
  }
  EXPECT_EQ(Metric(*server, "rankwire_model_reloads_total"), 0);
  // Once a good version arrives, it serves.
  Write(dir_ / absl::StrCat(version, ".model"), LinearSpec("fixed"));
  EXPECT_TRUE(WaitForVersion(*server, "ecom_search_lr@fixed"));
}

// Health of `service` asked on a channel that does not health-check (so it
// reaches a replica that is NOT_SERVING).
client::HealthStatus HealthOf(const ServerProcess& server, const std::string& service) {
  client::ChannelOptions options;
  options.health_service = "";
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      client::MakeChannel(server.target(), options);
  EXPECT_TRUE(channel.ok()) << channel.status();
  if (!channel.ok()) return client::HealthStatus::kUnknown;
  absl::StatusOr<client::HealthStatus> status = client::CheckHealth(channel->get(), service, {});
  EXPECT_TRUE(status.ok()) << status.status();
  return status.ok() ? *status : client::HealthStatus::kUnknown;
}

// A replica (re)started while the newest version is broken starts on the
// newest older version that loads, with the refusal on record; it serves
// the newest once that is fixed.
TEST_F(ModelReloadTest, StartsOnTheNewestVersionThatLoads) {
  Write(dir_ / "1.model", LinearSpec("v1"));
  Write(dir_ / "2.model", LinearSpec("v2"));
  const std::string good = LinearSpec("v3");
  Write(dir_ / "3.model", good.substr(0, good.find("\nweight cvr")));
  auto server = Start(
      {absl::StrCat("--model=", dir_.string()), "--model_poll_interval=50ms", "--health_port=0"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(VersionNow(*server), "ecom_search_lr@v2");
  EXPECT_EQ(HealthOf(*server, "rank.v1.RankService"), client::HealthStatus::kServing);
  EXPECT_THAT(server->Output(), HasSubstr("refused (truncated)"));
  EXPECT_THAT(server->Output(), HasSubstr("starting on the older version"));
  EXPECT_EQ(Metric(*server, "rankwire_model_reload_failures_total{reason=\"truncated\"}"), 1);
  const rank::v1::GetModelsResponse models = Models(HealthTarget(*server));
  EXPECT_EQ(models.last_failure_reason(), "truncated");
  EXPECT_THAT(models.last_failure(), HasSubstr("3.model"));
  ASSERT_EQ(models.models_size(), 1);
  EXPECT_THAT(models.models(0).path(), HasSubstr("2.model"));
  // A poll does not retry the broken file, and a fixed one serves.
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(Metric(*server, "rankwire_model_reload_failures_total{reason=\"truncated\"}"), 1);
  Write(dir_ / "3.model", good);
  EXPECT_TRUE(WaitForVersion(*server, "ecom_search_lr@v3"));
}

// Nothing loads: the server starts anyway, alive ("" SERVING, so a
// liveness probe does not restart it) but not ready (rank.v1.RankService
// NOT_SERVING, Rank UNAVAILABLE, GetModels saying why), and serves once a
// good model appears.
TEST_F(ModelReloadTest, StartsNotServingWithoutALoadableModelAndServesOnceOneLoads) {
  const std::string good = LinearSpec("late");
  Write(dir_ / "ranker.model", good.substr(0, good.find("\nweight cvr")));
  auto server = Start({absl::StrCat("--model=", (dir_ / "ranker.model").string()),
                       "--model_poll_interval=50ms", "--health_port=0"});
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Output(), HasSubstr("model=none"));
  EXPECT_THAT(server->Output(), HasSubstr("no model loads from"));
  EXPECT_EQ(HealthOf(*server, "rank.v1.RankService"), client::HealthStatus::kNotServing);
  EXPECT_EQ(HealthOf(*server, ""), client::HealthStatus::kServing);
  EXPECT_EQ(Metric(*server, "rankwire_serving"), 0);
  client::ChannelOptions unchecked;
  unchecked.health_service = "";
  client::RankClient direct(*client::MakeChannel(server->target(), unchecked), codecs_.get());
  absl::StatusOr<client::RankReply> refused = direct.Rank(Request(), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("no model loaded yet"));
  const rank::v1::GetModelsResponse none = Models(HealthTarget(*server));
  EXPECT_EQ(none.generation(), 0u);
  EXPECT_EQ(none.models_size(), 0);
  EXPECT_EQ(none.last_failure_reason(), "truncated");
  EXPECT_EQ(Metric(*server, "rankwire_model_reload_failures_total{reason=\"truncated\"}"), 1);
  // Polls do not count the same broken file again.
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(Metric(*server, "rankwire_model_reload_failures_total{reason=\"truncated\"}"), 1);

  Write(dir_ / "ranker.model", good);
  EXPECT_TRUE(WaitForVersion(*server, "ecom_search_lr@late"));
  EXPECT_EQ(HealthOf(*server, "rank.v1.RankService"), client::HealthStatus::kServing);
  EXPECT_EQ(Metric(*server, "rankwire_serving"), 1);
  EXPECT_EQ(Metric(*server, "rankwire_model_generation"), 1);
  // A drain still takes both down.
  ASSERT_TRUE(server->Signal(SIGTERM).ok());
  absl::StatusOr<int> status = server->Wait(absl::Seconds(20));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, 0);
}

// --model_fail_fast: no model, no server (exit 1, the reason printed); also
// for a --model that names nothing.
TEST_F(ModelReloadTest, FailFastExitsWhenNoModelLoads) {
  Write(dir_ / "1.model", "rankwire-model 1\nname x\n");
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(
      {"--log_mode=none", absl::StrCat("--model=", dir_.string()), "--model_fail_fast"},
      absl::Seconds(10));
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("1.model"));
  server = ServerProcess::Start(
      {"--log_mode=none", absl::StrCat("--model=", (dir_ / "nothing.model").string()),
       "--model_fail_fast"},
      absl::Seconds(10));
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("nothing.model"));
  // Without the flag, a --model that names nothing yet is looked for until it appears.
  auto waiting = Start(
      {absl::StrCat("--model=", (dir_ / "later.model").string()), "--model_poll_interval=50ms"});
  ASSERT_NE(waiting, nullptr);
  Write(dir_ / "later.model", LinearSpec("appeared"));
  EXPECT_TRUE(WaitForVersion(*waiting, "ecom_search_lr@appeared"));
}

// A model file written slowly, in place, while the server polls it every
// 20 ms: partial reads are refused (as truncated, or as changed while read),
// never served, and the whole file serves once written.
TEST_F(ModelReloadTest, AFileBeingWrittenIsNeverServedHalfWritten) {
  Write(dir_ / "ranker.model", LinearSpec("old"));
  auto server = Start(
      {absl::StrCat("--model=", (dir_ / "ranker.model").string()), "--model_poll_interval=20ms"});
  ASSERT_NE(server, nullptr);
  std::atomic<bool> written{false};
  std::atomic<int> wrong{0};
  std::thread caller([&] {
    while (!written.load()) {
      const std::string version = VersionNow(*server);
      if (version != "ecom_search_lr@old" && version != "ecom_search_lr@new") wrong.fetch_add(1);
    }
  });
  {
    std::ofstream out(dir_ / "ranker.model", std::ios::trunc);
    for (absl::string_view line : absl::StrSplit(LinearSpec("new"), '\n')) {
      out << line << '\n' << std::flush;
      absl::SleepFor(absl::Milliseconds(2));
    }
  }
  EXPECT_TRUE(WaitForVersion(*server, "ecom_search_lr@new"));
  written.store(true);
  caller.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(Metric(*server, "rankwire_model_reloads_total"), 1);
  double refused = 0;
  for (const char* reason : {"truncated", "file_changed", "empty"}) {
    refused += Metric(
        *server, absl::StrCat("rankwire_model_reload_failures_total{reason=\"", reason, "\"}"));
  }
  EXPECT_GT(refused, 0) << "the polls saw the file half-written";
  EXPECT_EQ(Metric(*server, "rankwire_model_reload_failures_total{reason=\"invalid_model\"}"), 0);
}

// A manifest: a linear model for half the users, XGBoost for the other
// half; its feature lists refuse a model reading what callers do not send.
TEST_F(ModelReloadTest, AManifestRoutesEachUserToItsBucketsModel) {
  fs::create_directory(dir_ / "xgb");
  Write(dir_ / "linear.model", LinearSpec("lin1"));
  Write(dir_ / "xgb" / "3.json", XGBoostSpec("x3"));
  Write(dir_ / "rankwire.manifest",
        "rankwire-manifest 1\nbucket control 50 linear.model\nbucket trees 50 xgb/\nend\n");
  auto server = Start({absl::StrCat("--model=", dir_.string()), "--model_poll_interval=50ms",
                       "--health_port=0", "--model_admin_rpc"});
  ASSERT_NE(server, nullptr);
  std::map<std::string, std::string> version_of_bucket;
  std::map<std::string, std::string> bucket_of_user;
  client::RankClient client = Client(*server);
  for (uint64_t i = 0; i < 40; ++i) {
    rank::v1::RankRequest request = Request(i);
    absl::StatusOr<client::RankReply> reply = client.Rank(request, {});
    ASSERT_TRUE(reply.ok()) << reply.status();
    const std::string& bucket = reply->header().experiment_bucket();
    version_of_bucket[bucket] = reply->header().model_version();
    auto [it, added] = bucket_of_user.emplace(request.user_id(), bucket);
    EXPECT_EQ(it->second, bucket) << "a user's bucket is stable";
    absl::StatusOr<ItemRef> item = reply->view().Item(0);
    ASSERT_TRUE(item.ok());
    absl::StatusOr<std::optional<MetricRef>> item_bucket = item->Metric("exp.bucket");
    ASSERT_TRUE(item_bucket.ok() && item_bucket->has_value());
    EXPECT_EQ((*item_bucket)->string_value(), bucket);
    if (bucket == "trees") {
      absl::StatusOr<std::optional<MetricRef>> why = item->Metric("explain.1.feature");
      ASSERT_TRUE(why.ok());
      EXPECT_TRUE(why->has_value()) << "XGBoost explains the items shown";
    }
  }
  EXPECT_EQ(version_of_bucket["control"], "ecom_search_lr@lin1");
  EXPECT_EQ(version_of_bucket["trees"], "ctr_xgb@x3");
  EXPECT_EQ(version_of_bucket.size(), 2u);
  rank::v1::GetModelsResponse models = Models(server->target());
  ASSERT_EQ(models.models_size(), 2);
  EXPECT_EQ(models.models(1).kind(), "xgboost");
  EXPECT_EQ(models.models(1).user_features(0), "user_price_pref");

  // A new XGBoost version, then a model that reads an unsent feature.
  Write(dir_ / "xgb" / "4.json", XGBoostSpec("x4"));
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (Models(server->target()).models(1).version() != "x4" && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(Models(server->target()).models(1).version(), "x4");
  const std::vector<std::string> items = workload::ItemFeatureNames();
  // Every feature the linear model reads, but not the user feature the
  // XGBoost model reads.
  Write(dir_ / "rankwire.manifest",
        absl::StrCat("rankwire-manifest 1\nbucket control 50 linear.model\n"
                     "bucket trees 50 xgb/\nitem_features ",
                     absl::StrJoin(items, " "),
                     "\nuser_features user_activity user_purchase_power\n"
                     "context_features is_mobile\nend\n"));
  ASSERT_TRUE(WaitForMetric(*server,
                            "rankwire_model_reload_failures_total{reason=\"unknown_feature\"}", 1));
  EXPECT_THAT(server->Output(), HasSubstr("reads features the manifest says callers do not send"));
  EXPECT_EQ(Models(server->target()).models(1).version(), "x4");

  // The admin RPC reloads on the health port and refuses on the main one.
  auto reload = [](const std::string& target) {
    auto stub = rank::v1::ModelService::NewStub(
        grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    rank::v1::GetModelsResponse response;
    return stub->ReloadModels(&context, {}, &response);
  };
  EXPECT_EQ(reload(server->target()).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const std::string health = HealthTarget(*server);
  grpc::Status refused = reload(health);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("user.user_price_pref"));
  Write(dir_ / "rankwire.manifest",
        "rankwire-manifest 1\nbucket control 20 linear.model\nbucket trees 80 xgb/\nend\n");
  EXPECT_TRUE(reload(health).ok());
  EXPECT_EQ(Models(health).models(1).percent(), 80u);
}

// Reloads, one after another, while callers rank without pause: no call
// fails, no response mixes two versions, and the replaced models are freed.
TEST_F(ModelReloadTest, ManyReloadsUnderLoadFailNothingAndLeakNothing) {
  Write(dir_ / "1.model", LinearSpec("r1"));
  auto server = Start({absl::StrCat("--model=", dir_.string()), "--model_poll_interval=0",
                       "--health_port=0", "--model_admin_rpc", "--log_mode=store"});
  ASSERT_NE(server, nullptr);
  std::atomic<int> calls{0}, failures{0}, mixed{0};
  // Two callers ranking without pause until `stop`; every item of every
  // response must name the header's version.
  auto load = [&](std::atomic<bool>* stop) {
    std::vector<std::thread> callers;
    for (int t = 0; t < 2; ++t) {
      callers.emplace_back([&, stop, t] {
        client::RankClient client = Client(*server);
        for (uint64_t i = 0; !stop->load(); ++i) {
          workload::WorkloadOptions options;
          options.accept_codecs = {"rankbin"};
          options.log_mode = rank::v1::LOG_MODE_STORE;
          options.candidates = 200;
          absl::StatusOr<client::RankReply> reply =
              client.Rank(workload::WorkloadGenerator(options).Make(i * 2 + t), {});
          calls.fetch_add(1);
          if (!reply.ok()) {
            failures.fetch_add(1);
            continue;
          }
          for (size_t k = 0; k < reply->view().size(); ++k) {
            absl::StatusOr<ItemRef> item = reply->view().Item(k);
            absl::StatusOr<std::optional<MetricRef>> v =
                item.ok() ? item->Metric("model.version")
                          : absl::StatusOr<std::optional<MetricRef>>(item.status());
            if (!v.ok() || !v->has_value() ||
                (*v)->string_value() != reply->header().model_version()) {
              mixed.fetch_add(1);
              break;
            }
          }
        }
      });
    }
    return callers;
  };
  // What the server holds once a load is over: its logs written and
  // expired (1 s TTL), its queues empty.
  auto idle_allocated = [&] {
    absl::SleepFor(absl::Milliseconds(1500));
    return Metric(*server, "rankwire_malloc_allocated_bytes");
  };
  // Two loads as long as the reloads will take: the first warms the
  // server (its tables and caches grow to what the load needs and keep
  // that capacity), the second is the baseline.
  std::atomic<bool> stop{false};
  double before = 0;
  for (int warm = 0; warm < 2; ++warm) {
    stop.store(false);
    std::vector<std::thread> callers = load(&stop);
    absl::SleepFor(absl::Milliseconds(2000));
    stop.store(true);
    for (std::thread& t : callers) t.join();
    before = idle_allocated();
  }

  stop.store(false);
  std::vector<std::thread> callers = load(&stop);
  auto stub = rank::v1::ModelService::NewStub(
      grpc::CreateChannel(HealthTarget(*server), grpc::InsecureChannelCredentials()));
  constexpr int kReloads = 200;
  const absl::Time reloads_started = absl::Now();
  for (int r = 2; r <= kReloads + 1; ++r) {
    Write(dir_ / absl::StrCat(r, ".model"), LinearSpec(absl::StrCat("r", r)));
    fs::remove(dir_ / absl::StrCat(r - 1, ".model"));
    grpc::ClientContext context;
    rank::v1::GetModelsResponse response;
    grpc::Status status = stub->ReloadModels(&context, {}, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.models(0).version(), absl::StrCat("r", r));
  }
  const absl::Duration reloading = absl::Now() - reloads_started;
  absl::SleepFor(std::max(absl::Milliseconds(200), absl::Milliseconds(2000) - reloading));
  stop.store(true);
  for (std::thread& t : callers) t.join();
  const double after = idle_allocated();
  std::printf("%d reloads in %s\n", kReloads, absl::FormatDuration(reloading).c_str());

  EXPECT_GT(calls.load(), kReloads / 4);
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mixed.load(), 0);
  EXPECT_EQ(Metric(*server, "rankwire_model_reloads_total"), kReloads);
  // The replaced models are freed (queued log lines held them until
  // written), and what the server holds in allocations once idle is what
  // it held after the same load without reloads: within 1 MB, where the
  // same load twice varies by ~0.5 MB and 200 kept models would add ~3 MB.
  // RSS moves with jemalloc's decay of freed memory (10 s) by tens of
  // percent under the same load with no reload at all, so
  // bench/model_reload_bench.py measures it over steady windows instead.
  EXPECT_EQ(Metric(*server, "rankwire_models_live"), 1);
#if !RANKWIRE_SANITIZED_BUILD
  // rankwire_malloc_allocated_bytes is jemalloc's; sanitizer builds link
  // glibc's malloc (server/malloc.cmake) and export no such series, so there
  // the models_live count above is the leak check.
  EXPECT_GT(before, 0);
  EXPECT_LT(after, before + (1 << 20)) << before << " -> " << after << " bytes allocated";
#else
  (void)before, (void)after;
#endif
}

}  // namespace
}  // namespace rankwire
