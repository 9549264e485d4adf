// The one home of /metrics: every series the server exports is registered
// by metrics/server_metrics.h (ServerMetrics and the Export* functions),
// each with the name, type and labels the docs and dashboards read; and no
// product file outside metrics/ registers a series itself.
#include "metrics/server_metrics.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rankwire {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Shaped like logstore::LogStats (ExportLogPath reads these fields).
struct FakeLogStats {
  uint64_t items_handed = 10, items_enqueued = 9, items_stored = 5, items_dropped_queue_full = 1,
           items_dropped_store_error = 1, items_dropped_shutdown = 0, items_unknown = 1,
           items_in_flight = 2, bytes_stored = 4096, format_cpu_ns = 700, store_cpu_ns = 300,
           cpu_sampled_requests = 3, queue_requests = 2, queue_bytes = 512, reconnects = 1;
  bool store_up = true;
};

// Everything a replica registers, as server.cc and server_main.cc do.
struct Replica {
  Replica() {
    server =
        std::make_unique<ServerMetrics>(&registry, std::vector<std::string>{"protobuf", "rankbin"});
    ModelSources sources;
    sources.generation = [] { return 3.0; };
    sources.models_live = [] { return 2.0; };
    sources.serving = [] {
      return std::vector<ModelSources::Serving>{{"control", "lr", "7", "linear"}};
    };
    sources.requests = [] {
      return std::vector<ModelSources::Requests>{{"treat", "gbt@2", 5}, {"control", "lr@7", 11}};
    };
    models = ExportModels(&registry, {"parse", "file_changed"}, std::move(sources));
    ExportMallocStats(&registry, [](size_t* allocated, size_t* resident) {
      *allocated = 100;
      *resident = 200;
      return true;
    });
    ExportLogPath(&registry, [] { return FakeLogStats{}; });
    ExportAdmission(
        &registry, [] { return 64.0; }, [] { return 4.0; });
    ExportServerInfo(&registry, {"rankbin", "store", "redis"});
  }

  MetricsRegistry registry;
  std::unique_ptr<ServerMetrics> server;
  std::unique_ptr<ModelMetrics> models;
};

// family name -> type, from the "# TYPE" lines.
std::map<std::string, std::string> Families(const std::string& text) {
  std::map<std::string, std::string> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "# TYPE ")) continue;
    const std::vector<std::string> parts = absl::StrSplit(line, ' ');
    EXPECT_EQ(parts.size(), 2u) << line;
    if (parts.size() == 2) out[parts[0]] = parts[1];
  }
  return out;
}

TEST(ServerMetricsTest, RegistersEverySeriesOfTheMetricsPage) {
  Replica replica;
  const std::map<std::string, std::string> expected = {
      {"rankwire_fetch_logs_total", "counter"},
      {"rankwire_log_bytes_stored_total", "gauge"},
      {"rankwire_log_items_total", "gauge"},
      {"rankwire_log_queue_bytes", "gauge"},
      {"rankwire_log_queue_requests", "gauge"},
      {"rankwire_log_store_reconnects_total", "gauge"},
      {"rankwire_log_store_up", "gauge"},
      {"rankwire_malloc_allocated_bytes", "gauge"},
      {"rankwire_malloc_resident_bytes", "gauge"},
      {"rankwire_model_generation", "gauge"},
      {"rankwire_model_info", "gauge"},
      {"rankwire_model_load_seconds", "gauge"},
      {"rankwire_model_reload_failures_total", "counter"},
      {"rankwire_model_reloads_total", "counter"},
      {"rankwire_model_requests_total", "counter"},
      {"rankwire_models_live", "gauge"},
      {"rankwire_phase_cpu_sample_nanoseconds_total", "counter"},
      {"rankwire_phase_cpu_samples_total", "counter"},
      {"rankwire_rank_admitted", "gauge"},
      {"rankwire_rank_rpcs_in_flight", "gauge"},
      {"rankwire_rank_rpcs_retried_total", "counter"},
      {"rankwire_rank_rpcs_total", "counter"},
      {"rankwire_response_body_bytes", "histogram"},
      {"rankwire_responses_total", "counter"},
      {"rankwire_server_info", "gauge"},
      {"rankwire_server_phase_seconds", "histogram"},
      {"rankwire_server_rejected_total", "counter"},
      {"rankwire_serving", "gauge"},
      {"rankwire_unknown_item_features_total", "counter"},
      {"rankwire_unsent_response_bytes", "gauge"},
  };
  EXPECT_EQ(Families(replica.registry.RenderPrometheus()), expected);
}

TEST(ServerMetricsTest, CallbackSeriesReadTheirLayersState) {
  Replica replica;
  ModelMetrics& models = *replica.models;
  models.reloads->Increment();
  models.FailuresFor("file_changed")->Increment(2);
  EXPECT_EQ(models.FailuresFor("no_such_reason"), nullptr);
  models.load_seconds.store(0.25);
  const std::string text = replica.registry.RenderPrometheus();
  for (const char* series : {
           "rankwire_server_info{default_codec=\"rankbin\",log_mode=\"store\",logstore=\"redis\"} "
           "1\n",
           "rankwire_unsent_response_bytes 64\n",
           "rankwire_rank_admitted 4\n",
           "rankwire_malloc_allocated_bytes 100\n",
           "rankwire_malloc_resident_bytes 200\n",
           "rankwire_model_reloads_total 1\n",
           "rankwire_model_reload_failures_total{reason=\"parse\"} 0\n",
           "rankwire_model_reload_failures_total{reason=\"file_changed\"} 2\n",
           "rankwire_model_load_seconds 0.25\n",
           "rankwire_model_generation 3\n",
           "rankwire_models_live 2\n",
           "rankwire_model_info{bucket=\"control\",name=\"lr\",version=\"7\",kind=\"linear\"} 1\n",
           // Sorted by labels, whatever order the reloader keeps them in.
           "rankwire_model_requests_total{bucket=\"control\",model=\"lr@7\"} 11\n"
           "rankwire_model_requests_total{bucket=\"treat\",model=\"gbt@2\"} 5\n",
           "rankwire_log_items_total{outcome=\"handed\"} 10\n"
           "rankwire_log_items_total{outcome=\"enqueued\"} 9\n"
           "rankwire_log_items_total{outcome=\"stored\"} 5\n"
           "rankwire_log_items_total{outcome=\"dropped_queue_full\"} 1\n"
           "rankwire_log_items_total{outcome=\"dropped_store_error\"} 1\n"
           "rankwire_log_items_total{outcome=\"dropped_shutdown\"} 0\n"
           "rankwire_log_items_total{outcome=\"unknown\"} 1\n"
           "rankwire_log_items_total{outcome=\"in_flight\"} 2\n",
           "rankwire_log_bytes_stored_total 4096\n",
           "rankwire_log_queue_requests 2\n",
           "rankwire_log_queue_bytes 512\n",
           "rankwire_log_store_reconnects_total 1\n",
           "rankwire_phase_cpu_sample_nanoseconds_total{phase=\"log_format\"} 700\n",
           "rankwire_phase_cpu_sample_nanoseconds_total{phase=\"log_store\"} 300\n",
           "rankwire_phase_cpu_samples_total{phase=\"log_store\"} 3\n",
           "rankwire_log_store_up 1\n",
       }) {
    EXPECT_THAT(text, HasSubstr(series));
  }
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every rankwire_* series name the operator's guide and the shipped
// dashboards read is on the page server_metrics registers.
TEST(ServerMetricsTest, EveryDocumentedSeriesIsRegisteredHere) {
  Replica replica;
  const std::map<std::string, std::string> families = Families(replica.registry.RenderPrometheus());
  const fs::path source = RANKWIRE_SOURCE_DIR;
  std::vector<fs::path> readers = {source / "docs/OPERATING.md"};
  for (const auto& entry : fs::recursive_directory_iterator(source / "deploy")) {
    if (entry.path().extension() == ".json" || entry.path().extension() == ".yaml") {
      readers.push_back(entry.path());
    }
  }
  // Words of OPERATING.md that are not series: an XGBoost model's
  // attributes (rankwire_name, rankwire_version).
  const std::set<std::string> not_series = {"rankwire_name", "rankwire_version"};
  const std::regex name("rankwire_[a-z0-9_]+");
  int seen = 0;
  for (const fs::path& path : readers) {
    const std::string text = ReadText(path);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), name);
         it != std::sregex_iterator(); ++it) {
      std::string series = it->str();
      if (not_series.count(series) > 0) continue;
      ++seen;
      if (absl::EndsWith(series, "_")) {  // A prefix: rankwire_phase_cpu_*.
        auto after = families.lower_bound(series);
        EXPECT_TRUE(after != families.end() && absl::StartsWith(after->first, series))
            << path << " names " << series << "*";
        continue;
      }
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        if (families.count(series) == 0 && absl::EndsWith(series, suffix)) {
          series.resize(series.size() - strlen(suffix));
        }
      }
      EXPECT_EQ(families.count(series), 1u) << path << " names " << it->str();
    }
  }
  EXPECT_GT(seen, 20);  // The guide and the dashboards were read.
}

// Registration calls of metrics.h's registry, outside metrics/, in the
// product tree (tests register their own registries' series freely).
TEST(ServerMetricsTest, NoProductFileOutsideMetricsRegistersASeries) {
  const fs::path source = RANKWIRE_SOURCE_DIR;
  const std::regex call(
      R"((->|\.)(AddCounter|AddHistogram|AddGauge|AddLabeledCounters|AddCollector)\()");
  int read = 0;
  for (const char* folder : {"base", "client", "codec", "logstore", "model", "ranking", "request",
                             "rpc", "server", "workload", "bench", "tools"}) {
    if (!fs::exists(source / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(source / folder)) {
      const fs::path& path = entry.path();
      if (path.extension() != ".cc" && path.extension() != ".h") continue;
      if (absl::EndsWith(path.stem().string(), "_test")) continue;
      ++read;
      const std::string text = ReadText(path);
      std::smatch match;
      EXPECT_FALSE(std::regex_search(text, match, call))
          << path << " registers a series (" << match.str()
          << "): register it in metrics/server_metrics.h and hand over a callback";
    }
  }
  EXPECT_GT(read, 100);
}

}  // namespace
}  // namespace rankwire
