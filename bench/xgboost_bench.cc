// xgboost_bench: rankwire's TreeEvaluator against libxgboost's own predictor
// (XGBoosterPredictFromDense, one thread) on the same model file and the
// same rows, over 100 to 1,000 trees, depth 4 to 8 and 10 to 2,000 items;
// the shipped request through the ranker; model load time and memory.
//
//   taskset -c 1 build/bench/xgboost_bench                  # all of it, 5 repetitions
//   taskset -c 1 build/bench/xgboost_bench --benchmark_filter=t0300/d6/n0500
//   build/bench/xgboost_bench --ratio_csv=sweep.csv         # also the sweep table as CSV
//   build/bench/xgboost_bench --write_workload_model=m.json # the w0300/d6 model; exits
//
// Families (engine/cell; a cell is tTREES/dDEPTH/nITEMS):
//   xgboost/ rankwire/ scalar/ tT/dD/nN   the sweep: T in {100, 300, 500, 1000},
//        D in {4..8}, N in {10, 100, 500, 2000}. Models generated here (seeded),
//        written as XGBoost 1.7 JSON and loaded by both engines: 18 features,
//        15% of nodes below depth 2 pruned to leaves; rows N(0,1), 10% missing.
//        "rankwire" is the CPU's best kernel (AVX-512 where it has it),
//        "scalar" the portable one.
//   xgboost/ rankwire/ scalar/ w0300/d6/n0500   the same engines on the shipped
//        request (workload request 0: 500 candidates) with a 300-tree depth-6
//        model over its 18 item, 6 user ("user.x") and 3 context ("ctx.x")
//        features, split thresholds drawn from the workload's own values
//        (--write_workload_model writes it: bench/cpu_budget.py serves it).
//   ranker_xgboost/ ranker_linear/ w0300/d6/n0500   Ranker::Score on that
//        request: binding, gathering the rows, scoring and ordering, with the
//        XGBoost model and with the shipped linear model: the server's
//        "score" phase.
//   shap_exact/ shap_approx/ xgboost_contribs/ xgboost_approx/ tT/dD/nN
//        explanations: rankwire's exact TreeSHAP (TreeShap) and Saabas
//        (ApproxContributions) against XGBoost's pred_contribs and
//        approx_contribs (XGBoosterPredictFromDMatrix on a DMatrix made once,
//        one thread), T = 300, D in {4..8}, N in {1, 10, 100}; each checks
//        its values against XGBoost's first (1e-5). shap_classic/t0300/d6/n0010
//        is the classic algorithm (ReferenceTreeShap, what rankwire ran before
//        issue 47). The same engines on w0300/d6/n0010: explaining the shipped
//        request's 10 shown items (--explain_items).
//   load/ load_server/ xgboost_load/ tT/dD   parsing a model and building what
//        the server holds (XGBoostModel); the server's whole load (read the
//        file, parse, build, the built-in check request: LoadModel +
//        CheckModel); XGBoosterLoadModel of the same file. With the bytes the
//        scorer holds per node.
//
// Times are CPU time of the whole process (every thread, so a predictor
// that used more than one would pay for it), which a busy host's other
// processes do not inflate as they do wall time. Repetitions run in random
// interleaved order; the tables at the end give each cell's median and
// XGBoost/rankwire ratios: the median over repetitions (paired by
// repetition index) and their range.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"
#include "model/linear/linear_model.h"
#include "model/linear/linear_spec.h"
#include "model/model_loader.h"
#include "model/xgboost/approx_contributions.h"
#include "model/xgboost/tree_evaluator.h"
#include "model/xgboost/tree_shap.h"
#include "model/xgboost/tree_shap_reference.h"
#include "model/xgboost/xgboost_model.h"
#include "model/xgboost/xgboost_spec.h"
#include "model/xgboost/xgboost_test_util.h"
#include "ranking/model_check.h"
#include "ranking/ranker.h"
#include "request/request_view.h"
#include "workload/workload.h"
#include "xgboost/c_api.h"

namespace {

using rankwire::xgboost::TreeEvaluator;
using rankwire::xgboost::XGBoostSpec;
namespace xgbtest = rankwire::xgboost::testing;

constexpr int kSweepFeatures = 18;
constexpr int kWorkloadTrees = 300;
constexpr int kWorkloadDepth = 6;

void Die(const std::string& message) {
  std::fprintf(stderr, "xgboost_bench: %s\n", message.c_str());
  std::abort();
}

void CheckXgb(int rc) {
  if (rc != 0) Die(absl::StrCat("xgboost: ", XGBGetLastError()));
}

// The shipped request: workload request 0, as loadgen's first.
const rank::v1::RankRequest& WorkloadRequest() {
  static const auto* request =
      new rank::v1::RankRequest(rankwire::workload::WorkloadGenerator({}).Make(0));
  return *request;
}

// The workload's features as an XGBoost model names them: every item
// feature, the numeric user features as "user.x", the numeric context
// values as "ctx.x".
std::vector<std::string> WorkloadFeatureNames() {
  std::vector<std::string> names = rankwire::workload::ItemFeatureNames();
  for (const char* user : {"user_price_pref", "user_activity", "user_purchase_power",
                           "user_ctr_30d", "user_age_bucket", "is_new_user"}) {
    names.push_back(absl::StrCat("user.", user));
  }
  for (const char* ctx : {"hour_of_day", "city_tier", "is_mobile"}) {
    names.push_back(absl::StrCat("ctx.", ctx));
  }
  return names;
}

// A request's candidates as rows of model features (`names`; missing: NaN),
// as XGBoostModel gathers them.
std::vector<float> RowsOf(const rank::v1::RankRequest& request,
                          const std::vector<std::string>& names) {
  const size_t n = request.candidates_size();
  std::vector<float> rows(n * names.size(), NAN);
  for (size_t f = 0; f < names.size(); ++f) {
    absl::string_view name = names[f];
    float constant = NAN;
    if (absl::ConsumePrefix(&name, "user.")) {
      auto it = request.user_features().find(std::string(name));
      if (it != request.user_features().end()) constant = static_cast<float>(it->second);
    } else if (absl::ConsumePrefix(&name, "ctx.")) {
      auto it = request.context().find(std::string(name));
      if (it != request.context().end() && !absl::SimpleAtof(it->second, &constant)) {
        constant = NAN;
      }
    } else {
      const auto& columns = request.item_feature_names();
      const int col =
          static_cast<int>(std::find(columns.begin(), columns.end(), name) - columns.begin());
      if (col < columns.size()) {
        for (size_t c = 0; c < n; ++c)
          rows[c * names.size() + f] = request.candidates(c).features(col);
        continue;
      }
    }
    for (size_t c = 0; c < n; ++c) rows[c * names.size() + f] = constant;
  }
  return rows;
}

// The sweep's model: 18 features, 15% of nodes below depth 2 pruned.
std::string SweepModel(int trees, int depth) {
  std::mt19937 rng(trees * 100 + depth);
  xgbtest::ModelSpec spec;
  spec.objective_params = xgbtest::kLambdaRankParams;
  spec.num_feature = kSweepFeatures;
  spec.feature_names.clear();
  for (int f = 0; f < kSweepFeatures; ++f) spec.feature_names.push_back(absl::StrCat("f", f));
  for (int t = 0; t < trees; ++t) {
    spec.trees.push_back(xgbtest::RandomTree(rng, depth, kSweepFeatures, 0.15f));
  }
  return xgbtest::ModelJson(spec);
}

// The workload's model: thresholds are values the workload's features take
// (in 8 of its requests), so splits divide its rows as a trained model's do.
std::string WorkloadModel() {
  const std::vector<std::string> names = WorkloadFeatureNames();
  std::vector<float> pool;
  const rankwire::workload::WorkloadGenerator generator({});
  for (uint64_t r = 0; r < 8; ++r) {
    const std::vector<float> rows = RowsOf(generator.Make(r), names);
    pool.insert(pool.end(), rows.begin(), rows.end());
  }
  const size_t pool_rows = pool.size() / names.size();
  std::mt19937 rng(39);
  xgbtest::ModelSpec spec;
  spec.objective_params = xgbtest::kLambdaRankParams;
  spec.feature_names = names;
  spec.num_feature = static_cast<int>(names.size());
  auto threshold = [&](int feature) {
    for (;;) {  // a value the feature takes (not NaN: no request lacks it here)
      const float v = pool[(rng() % pool_rows) * names.size() + feature];
      if (!std::isnan(v)) return v;
    }
  };
  for (int t = 0; t < kWorkloadTrees; ++t) {
    spec.trees.push_back(
        xgbtest::RandomTree(rng, kWorkloadDepth, spec.num_feature, 0.15f, threshold));
  }
  return xgbtest::ModelJson(spec);
}

// A model as both engines hold it, and the rows it is scored on.
struct Engines {
  std::string json;
  std::string path;  // the JSON written to a file, for the loaders
  std::unique_ptr<XGBoostSpec> model;
  std::unique_ptr<TreeEvaluator> evaluator;         // the CPU's best kernel
  std::unique_ptr<TreeEvaluator> scalar_evaluator;  // the portable one
  BoosterHandle booster = nullptr;
  std::function<std::vector<float>(int)> rows;  // n rows, model feature order
};

std::map<std::string, Engines>& EngineCache() {
  static auto* cache = new std::map<std::string, Engines>();
  return *cache;
}

// "t0300/d6" or "w0300/d6".
Engines& EnginesFor(const std::string& key) {
  Engines& e = EngineCache()[key];
  if (e.booster != nullptr) return e;
  int trees = 0, depth = 0;
  if (std::sscanf(key.c_str() + 1, "%d/d%d", &trees, &depth) != 2) Die("bad key " + key);
  if (key[0] == 'w') {
    e.json = WorkloadModel();
    e.rows = [](int n) {
      std::vector<float> rows = RowsOf(WorkloadRequest(), WorkloadFeatureNames());
      rows.resize(static_cast<size_t>(n) * WorkloadFeatureNames().size());
      return rows;
    };
  } else {
    e.json = SweepModel(trees, depth);
    e.rows = [](int n) {
      std::mt19937 rng(n);
      std::normal_distribution<float> normal;
      std::uniform_real_distribution<float> uniform(0, 1);
      std::vector<float> rows(static_cast<size_t>(n) * kSweepFeatures);
      for (float& x : rows) x = uniform(rng) < 0.1f ? NAN : normal(rng);
      return rows;
    };
  }
  auto model = XGBoostSpec::Parse(e.json, key);
  if (!model.ok()) Die(model.status().ToString());
  e.model = std::make_unique<XGBoostSpec>(*std::move(model));
  e.evaluator = std::make_unique<TreeEvaluator>(*e.model);
  e.scalar_evaluator = std::make_unique<TreeEvaluator>(*e.model, TreeEvaluator::Kernel::kScalar);
  e.path = absl::StrCat("/tmp/xgboost_bench_", getpid(), "_", key.substr(0, 1), trees, "_d", depth,
                        ".json");
  std::FILE* f = std::fopen(e.path.c_str(), "w");
  std::fwrite(e.json.data(), 1, e.json.size(), f);
  std::fclose(f);
  CheckXgb(XGBoosterCreate(nullptr, 0, &e.booster));
  CheckXgb(XGBoosterLoadModel(e.booster, e.path.c_str()));
  CheckXgb(XGBoosterSetParam(e.booster, "nthread", "1"));
  return e;
}

int Features(const Engines& e) { return static_cast<int>(e.model->num_features()); }

void BM_Rankwire(benchmark::State& state, std::string key, int items, bool scalar) {
  Engines& e = EnginesFor(key);
  const TreeEvaluator& evaluator = scalar ? *e.scalar_evaluator : *e.evaluator;
  const std::vector<float> rows = e.rows(items);
  std::vector<float> out(items);
  for (auto _ : state) {
    evaluator.Score(rows.data(), items, Features(e), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * items);
  state.SetLabel(std::string(evaluator.kernel_name()));
}

void BM_XGBoost(benchmark::State& state, std::string key, int items) {
  Engines& e = EnginesFor(key);
  const std::vector<float> rows = e.rows(items);
  const std::string array =
      absl::StrFormat("{\"data\":[%d,true],\"shape\":[%d,%d],\"typestr\":\"<f4\",\"version\":3}",
                      reinterpret_cast<uintptr_t>(rows.data()), items, Features(e));
  const char* config =
      "{\"type\":0,\"training\":false,\"iteration_begin\":0,\"iteration_end\":0,"
      "\"strict_shape\":false,\"missing\":NaN,\"cache_id\":0}";
  // Same scores, or the comparison is void.
  std::vector<float> ours(items);
  e.evaluator->Score(rows.data(), items, Features(e), ours.data());
  for (auto _ : state) {
    const bst_ulong* shape;
    bst_ulong dim;
    const float* result;
    CheckXgb(XGBoosterPredictFromDense(e.booster, array.c_str(), config, nullptr, &shape, &dim,
                                       &result));
    benchmark::DoNotOptimize(result);
    if (state.iterations() == 1 && !std::equal(ours.begin(), ours.end(), result)) {
      state.SkipWithError("rankwire's scores differ from XGBoost's");
    }
  }
  state.SetItemsProcessed(state.iterations() * items);
}

// XGBoost's contributions (pred_contribs, or approx_contribs), which
// in-place prediction does not offer: from a DMatrix made once.
std::vector<float> XGBoostContributions(Engines& e, int items, bool approx, DMatrixHandle matrix) {
  const char* config = approx ? "{\"type\":3,\"training\":false,\"iteration_begin\":0,"
                                "\"iteration_end\":0,\"strict_shape\":false}"
                              : "{\"type\":2,\"training\":false,\"iteration_begin\":0,"
                                "\"iteration_end\":0,\"strict_shape\":false}";
  const bst_ulong* shape;
  bst_ulong dim;
  const float* result;
  CheckXgb(XGBoosterPredictFromDMatrix(e.booster, matrix, config, &shape, &dim, &result));
  return std::vector<float>(result, result + static_cast<size_t>(items) * (Features(e) + 1));
}

void BM_XGBoostContributions(benchmark::State& state, std::string key, int items, bool approx) {
  Engines& e = EnginesFor(key);
  const std::vector<float> rows = e.rows(items);
  DMatrixHandle matrix;
  CheckXgb(XGDMatrixCreateFromMat(rows.data(), items, Features(e), NAN, &matrix));
  for (auto _ : state) {
    std::vector<float> out = XGBoostContributions(e, items, approx, matrix);
    benchmark::DoNotOptimize(out.data());
  }
  CheckXgb(XGDMatrixFree(matrix));
  state.SetItemsProcessed(state.iterations() * items);
}

// kApprox: what XGBoostModel builds for --explain=approx (its tables when
// they fit issue 39's memory bound); kApproxWalk: the lean walk.
enum class Explainer { kExact, kApprox, kApproxWalk, kClassic };

// rankwire's contributions of `items` rows, checked against XGBoost's first
// (within 1e-5, relative above 1), or the comparison is void.
void BM_Explain(benchmark::State& state, std::string key, int items, Explainer which) {
  Engines& e = EnginesFor(key);
  const std::vector<float> rows = e.rows(items);
  const size_t width = Features(e) + 1;
  std::vector<float> out(items * width);
  std::vector<double> row_out(width);
  std::function<void()> explain;
  std::unique_ptr<rankwire::xgboost::TreeShap> exact;
  std::unique_ptr<rankwire::xgboost::ApproxContributions> approx;
  std::unique_ptr<rankwire::xgboost::ReferenceTreeShap> classic;
  if (which == Explainer::kExact) {
    exact = std::make_unique<rankwire::xgboost::TreeShap>(*e.model);
    explain = [&] { exact->Contributions(rows.data(), items, Features(e), out.data()); };
    state.SetLabel(std::string(exact->kernel_name()));
  } else if (which == Explainer::kApprox || which == Explainer::kApproxWalk) {
    size_t budget = 0;  // the walk
    if (which == Explainer::kApprox) {
      rankwire::XGBoostModelOptions options;
      options.mode = rankwire::ExplainMode::kApprox;
      const rankwire::XGBoostModel scorer(*e.model, "bench", "1", options);
      budget = scorer.approx()->MemoryBytes();  // the same choice
    }
    approx = std::make_unique<rankwire::xgboost::ApproxContributions>(*e.model, budget);
    explain = [&] { approx->Contributions(rows.data(), items, Features(e), out.data()); };
    state.SetLabel(approx->uses_tables() ? "tables" : "walk");
  } else {
    classic = std::make_unique<rankwire::xgboost::ReferenceTreeShap>(*e.model);
    explain = [&] {
      for (int r = 0; r < items; ++r) {
        classic->Contributions(rows.data() + r * Features(e), row_out.data());
        std::copy(row_out.begin(), row_out.end(), out.begin() + r * width);
      }
    };
  }
  DMatrixHandle matrix;
  CheckXgb(XGDMatrixCreateFromMat(rows.data(), items, Features(e), NAN, &matrix));
  const std::vector<float> theirs = XGBoostContributions(
      e, items, which == Explainer::kApprox || which == Explainer::kApproxWalk, matrix);
  CheckXgb(XGDMatrixFree(matrix));
  explain();
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::abs(out[i] - theirs[i]) > 1e-5 * std::max(1.0f, std::abs(theirs[i]))) {
      state.SkipWithError("rankwire's contributions differ from XGBoost's");
      return;
    }
  }
  for (auto _ : state) {
    explain();
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * items);
}

// Ranker::Score on the shipped request: the server's score phase.
void BM_RankerScore(benchmark::State& state, bool xgboost) {
  std::shared_ptr<const rankwire::Model> model;
  if (xgboost) {
    model = std::make_shared<rankwire::XGBoostModel>(*EnginesFor("w0300/d6").model, "bench", "1",
                                                     rankwire::XGBoostModelOptions{});
  } else {
    auto linear = rankwire::LinearSpec::LoadFile(RANKWIRE_MODEL_PATH);
    if (!linear.ok()) Die(linear.status().ToString());
    model = std::make_shared<rankwire::LinearModel>(*std::move(linear));
  }
  std::string storage;
  rankwire::RequestView view;
  if (!rankwire::RequestViewOf(WorkloadRequest(), {}, &storage, &view).ok()) {
    Die("the workload request has no view");
  }
  const rankwire::Ranker ranker(model);
  rankwire::RankWorkspace ws;
  for (auto _ : state) {
    ranker.Score(view, &ws);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * WorkloadRequest().candidates_size());
}

// --explain=exact: the load that precomputes TreeSHAP's tables.
rankwire::XGBoostModelOptions ExactOptions() {
  rankwire::XGBoostModelOptions options;
  options.mode = rankwire::ExplainMode::kExact;
  return options;
}

// Parse + XGBoostModel: what the server builds from a file's bytes (with
// --explain=exact).
void BM_Load(benchmark::State& state, std::string key) {
  Engines& e = EnginesFor(key);
  for (auto _ : state) {
    auto model = XGBoostSpec::Parse(e.json, "generated");
    rankwire::XGBoostModel scorer(*model, "bench", "1", ExactOptions());
    benchmark::DoNotOptimize(scorer.MemoryBytes());
  }
  const rankwire::XGBoostModel scorer(*e.model, "bench", "1", ExactOptions());
  const double nodes = static_cast<double>(e.model->num_nodes());
  state.counters["nodes"] = nodes;
  state.counters["json_MB"] = e.json.size() / 1e6;
  state.counters["B_per_node"] = scorer.MemoryBytes() / nodes;
  state.counters["eval_B_per_node"] = scorer.evaluator().MemoryBytes() / nodes;
  state.counters["shap_B_per_node"] = scorer.ExplainMemoryBytes() / nodes;
  state.counters["approx_B_per_node"] =
      rankwire::xgboost::ApproxContributions(*e.model).MemoryBytes() / nodes;
}

// TreeShap's precomputation alone (part of load/).
void BM_ShapBuild(benchmark::State& state, std::string key) {
  Engines& e = EnginesFor(key);
  for (auto _ : state) {
    const rankwire::xgboost::TreeShap shap(*e.model);
    benchmark::DoNotOptimize(shap.MemoryBytes());
  }
}

// The server's whole load of the file: read, parse, build, check request.
void BM_LoadServer(benchmark::State& state, std::string key) {
  Engines& e = EnginesFor(key);
  rankwire::ModelPlan::Entry entry;
  entry.path = e.path;
  entry.name_hint = "bench";
  rankwire::ModelLoadOptions options;
  options.explain = ExactOptions();
  for (auto _ : state) {
    auto loaded = rankwire::LoadModel(entry, options);
    if (!loaded.ok()) Die(loaded.status().ToString());
    const absl::Status checked = rankwire::CheckModel(*loaded->model, std::nullopt, false, {});
    if (!checked.ok()) Die(checked.ToString());
  }
}

void BM_XGBoostLoad(benchmark::State& state, std::string key) {
  Engines& e = EnginesFor(key);
  for (auto _ : state) {
    BoosterHandle booster;
    CheckXgb(XGBoosterCreate(nullptr, 0, &booster));
    CheckXgb(XGBoosterLoadModel(booster, e.path.c_str()));
    CheckXgb(XGBoosterFree(booster));
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// x's times over r's, per repetition (paired by index).
std::vector<double> Ratios(const std::vector<double>& x, const std::vector<double>& r) {
  std::vector<double> ratios;
  for (size_t i = 0; i < std::min(x.size(), r.size()); ++i) ratios.push_back(x[i] / r[i]);
  return ratios;
}

struct RatioStats {
  double median, min, max;
};
RatioStats StatsOf(const std::vector<double>& ratios) {
  return {Median(ratios), *std::min_element(ratios.begin(), ratios.end()),
          *std::max_element(ratios.begin(), ratios.end())};
}

// Console output as usual, then the tables.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  explicit RatioReporter(std::string csv_path) : csv_path_(std::move(csv_path)) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      // "engine/cell/process_time/repeats:5": the engine and the cell.
      std::vector<std::string> parts;
      for (absl::string_view p : absl::StrSplit(run.benchmark_name(), '/')) {
        if (!absl::StrContains(p, ':') && p != "process_time") parts.emplace_back(p);
      }
      if (parts.size() < 2) continue;
      const std::string cell = absl::StrJoin(parts.begin() + 1, parts.end(), "/");
      times_[cell][parts[0]].push_back(run.GetAdjustedCPUTime());  // microseconds
      for (const auto& [name, counter] : run.counters) counters_[cell][name] = counter.value;
    }
  }
  void Finalize() override {
    SweepTable();
    WorkloadTable();
    ExplainTable();
    LoadTable();
  }

 private:
  void SweepTable();
  void WorkloadTable();
  void ExplainTable();
  void ExplainTargets();
  void LoadTable();

  std::string csv_path_;
  std::map<std::string, std::map<std::string, std::vector<double>>> times_;
  std::map<std::string, std::map<std::string, double>> counters_;
};

void RatioReporter::SweepTable() {
  std::FILE* csv = csv_path_.empty() ? nullptr : std::fopen(csv_path_.c_str(), "w");
  if (csv != nullptr) {
    std::fprintf(csv,
                 "trees,depth,items,xgboost_us,rankwire_us,ratio,ratio_min,ratio_max,"
                 "scalar_us,scalar_ratio,scalar_min,scalar_max\n");
  }
  std::printf(
      "\nSweep (CPU time; ratio = XGBoost / rankwire, median of paired repetitions "
      "and their range)\n%-16s %11s %11s %7s %13s %11s %7s %13s\n",
      "cell", "xgboost us", "rankwire us", "ratio", "range", "scalar us", "ratio", "range");
  int cells = 0, below_one = 0, any_below_one = 0;
  for (auto& [cell, engines] : times_) {
    const auto& x = engines["xgboost"];
    const auto& r = engines["rankwire"];
    const auto& s = engines["scalar"];
    if (x.empty() || r.empty() || s.empty()) continue;
    const RatioStats fast = StatsOf(Ratios(x, r));
    const RatioStats portable = StatsOf(Ratios(x, s));
    ++cells;
    below_one += fast.median < 1 || portable.median < 1;
    any_below_one += fast.min < 1 || portable.min < 1;
    std::printf("%-16s %11.1f %11.1f %6.2fx %6.2f-%5.2fx %11.1f %6.2fx %6.2f-%5.2fx\n",
                cell.c_str(), Median(x), Median(r), fast.median, fast.min, fast.max, Median(s),
                portable.median, portable.min, portable.max);
    int trees = 0, depth = 0, items = 0;
    if (csv != nullptr && std::sscanf(cell.c_str(), "%*c%d/d%d/n%d", &trees, &depth, &items) == 3) {
      std::fprintf(csv, "%s,%d,%d,%.2f,%.2f,%.4f,%.4f,%.4f,%.2f,%.4f,%.4f,%.4f\n",
                   cell[0] == 'w' ? "workload" : std::to_string(trees).c_str(), depth, items,
                   Median(x), Median(r), fast.median, fast.min, fast.max, Median(s),
                   portable.median, portable.min, portable.max);
    }
  }
  if (csv != nullptr) std::fclose(csv);
  std::printf(
      "%d cells; %d where a rankwire kernel's median ratio is < 1; %d where any "
      "repetition's is\n",
      cells, below_one, any_below_one);
}

void RatioReporter::WorkloadTable() {
  auto& w = times_["w0300/d6/n0500"];
  if (w["rankwire"].empty()) return;
  std::printf(
      "\nThe shipped request (500 candidates) with a 300-tree depth-6 model over its "
      "features (CPU us per request, median [range])\n");
  auto row = [](const char* what, const std::vector<double>& t) {
    if (t.empty()) return;
    std::printf("  %-44s %9.1f [%.1f-%.1f]\n", what, Median(t),
                *std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end()));
  };
  row("XGBoost (XGBoosterPredictFromDense)", w["xgboost"]);
  row("rankwire TreeEvaluator (best kernel)", w["rankwire"]);
  row("rankwire TreeEvaluator (portable kernel)", w["scalar"]);
  row("Ranker::Score, XGBoost model (score phase)", w["ranker_xgboost"]);
  row("Ranker::Score, shipped linear model", w["ranker_linear"]);
  auto& shown = times_["w0300/d6/n0010"];
  row("TreeSHAP, 10 items (--explain=exact)", shown["shap_exact"]);
  row("Saabas, 10 items (--explain=approx)", shown["shap_approx"]);
  row("Saabas, 10 items, the lean walk", shown["shap_approx_walk"]);
  row("XGBoost's pred_contribs, 10 items", shown["xgboost_contribs"]);
  row("XGBoost's approx_contribs, 10 items", shown["xgboost_approx"]);
  if (!w["xgboost"].empty()) {
    const RatioStats s = StatsOf(Ratios(w["xgboost"], w["rankwire"]));
    std::printf("  XGBoost / rankwire: %.2fx [%.2f-%.2f]\n", s.median, s.min, s.max);
  }
  if (!w["ranker_xgboost"].empty() && !w["ranker_linear"].empty()) {
    std::vector<double> extra;
    for (size_t i = 0; i < std::min(w["ranker_xgboost"].size(), w["ranker_linear"].size()); ++i) {
      extra.push_back(w["ranker_xgboost"][i] - w["ranker_linear"][i]);
    }
    std::printf("  score phase, XGBoost minus linear: %.1f us\n", Median(extra));
  }
}

void RatioReporter::ExplainTable() {
  bool header = false;
  for (auto& [cell, engines] : times_) {
    const auto& exact = engines["shap_exact"];
    const auto& approx = engines["shap_approx"];
    const auto& xgb_exact = engines["xgboost_contribs"];
    const auto& xgb_approx = engines["xgboost_approx"];
    if (exact.empty() || approx.empty() || xgb_exact.empty() || xgb_approx.empty()) continue;
    if (!header) {
      std::printf(
          "\nExplanations (CPU us per call; ratio = XGBoost / rankwire, median of paired "
          "repetitions and their range; us/row: rankwire's per explained row)\n%-16s %10s %10s "
          "%7s %13s %9s %9s %9s %7s %13s %7s\n",
          "cell", "exact", "pred_con", "ratio", "range", "us/row", "approx", "approx_c", "ratio",
          "range", "us/row");
      header = true;
    }
    int items = 1;
    std::sscanf(cell.c_str() + cell.rfind('n') + 1, "%d", &items);
    const RatioStats e = StatsOf(Ratios(xgb_exact, exact));
    const RatioStats a = StatsOf(Ratios(xgb_approx, approx));
    std::printf(
        "%-16s %10.1f %10.1f %6.1fx %6.1f-%5.1fx %9.2f %9.1f %9.1f %6.1fx %6.1f-%5.1fx %7.2f\n",
        cell.c_str(), Median(exact), Median(xgb_exact), e.median, e.min, e.max,
        Median(exact) / items, Median(approx), Median(xgb_approx), a.median, a.min, a.max,
        Median(approx) / items);
  }
  if (header) ExplainTargets();
}

// Issue 47's targets, from this run's cells.
void RatioReporter::ExplainTargets() {
  auto& d6 = times_["t0300/d6/n0010"];
  auto& w10 = times_["w0300/d6/n0010"];
  std::printf("Targets (one thread, this run):\n");
  if (!d6["shap_exact"].empty() && !d6["xgboost_contribs"].empty()) {
    const RatioStats s = StatsOf(Ratios(d6["xgboost_contribs"], d6["shap_exact"]));
    std::printf(
        "  exact, 10 rows, 300 trees, depth 6: pred_contribs / rankwire %.1fx [%.1f-%.1f] "
        "(target >= 10x, moonshot 30x): %s\n",
        s.median, s.min, s.max, s.median >= 10 ? "met" : "MISSED");
  }
  if (!w10["shap_exact"].empty() && !w10["xgboost_contribs"].empty()) {
    const RatioStats s = StatsOf(Ratios(w10["xgboost_contribs"], w10["shap_exact"]));
    std::printf("  the same on the shipped request's model (w0300/d6): %.1fx [%.1f-%.1f]\n",
                s.median, s.min, s.max);
  }
  if (!d6["shap_exact"].empty() && !d6["shap_classic"].empty()) {
    const RatioStats s = StatsOf(Ratios(d6["shap_classic"], d6["shap_exact"]));
    std::printf("  classic algorithm (rankwire before) / exact: %.1fx [%.1f-%.1f]\n", s.median,
                s.min, s.max);
  }
  const auto& scoring = times_["w0300/d6/n0500"]["rankwire"];
  if (!w10["shap_approx"].empty() && !scoring.empty()) {
    const RatioStats s = StatsOf(Ratios(w10["shap_approx"], scoring));
    std::printf(
        "  approx of 10 rows / TreeEvaluator scoring 500 (w0300/d6): %.3f [%.3f-%.3f] "
        "(target <= 0.1): %s\n",
        s.median, s.min, s.max, s.median <= 0.1 ? "met" : "MISSED");
  }
  if (!w10["shap_approx_walk"].empty() && !scoring.empty()) {
    const RatioStats s = StatsOf(Ratios(w10["shap_approx_walk"], scoring));
    std::printf("  the same with the lean walk (deeper models' layout): %.3f [%.3f-%.3f]\n",
                s.median, s.min, s.max);
  }
  if (!w10["shap_exact"].empty() && !scoring.empty()) {
    const RatioStats s = StatsOf(Ratios(w10["shap_exact"], scoring));
    std::printf("  exact of 10 rows / TreeEvaluator scoring 500 (w0300/d6): %.3f [%.3f-%.3f]\n",
                s.median, s.min, s.max);
  }
}

void RatioReporter::LoadTable() {
  bool header = false;
  for (auto& [cell, engines] : times_) {
    if (engines["load"].empty()) continue;
    if (!header) {
      std::printf(
          "\nLoad (CPU ms, median): parse + build what the server holds (the evaluator and "
          "TreeSHAP's tables); TreeSHAP's tables alone; the server's whole load (read, parse, "
          "build, check request); XGBoost's load. Bytes per node held: all, the evaluator, "
          "TreeSHAP, Saabas (XGBoost holds 36: a 20-byte node, 16 of statistics)\n%-10s %8s "
          "%8s %8s %9s %8s %8s %8s %8s %8s %8s\n",
          "model", "parse", "shap", "server", "xgboost", "nodes", "JSON MB", "B/node", "eval B",
          "shap B", "approx B");
      header = true;
    }
    auto ms = [&](const char* engine) {
      const auto& t = engines[engine];
      return t.empty() ? NAN : Median(t) / 1e3;
    };
    auto& c = counters_[cell];
    std::printf("%-10s %8.2f %8.2f %8.2f %9.2f %8.0f %8.2f %8.1f %8.1f %8.1f %8.1f\n", cell.c_str(),
                ms("load"), ms("shap_build"), ms("load_server"), ms("xgboost_load"), c["nodes"],
                c["json_MB"], c["B_per_node"], c["eval_B_per_node"], c["shap_B_per_node"],
                c["approx_B_per_node"]);
  }
}

void Us(benchmark::internal::Benchmark* b) {
  b->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();
}

// The four explanation engines on one model and row count.
void RegisterExplain(const std::string& key, int items) {
  const std::string cell = absl::StrFormat("%s/n%04d", key, items);
  Us(benchmark::RegisterBenchmark(("shap_exact/" + cell).c_str(), BM_Explain, key, items,
                                  Explainer::kExact));
  Us(benchmark::RegisterBenchmark(("shap_approx/" + cell).c_str(), BM_Explain, key, items,
                                  Explainer::kApprox));
  Us(benchmark::RegisterBenchmark(("xgboost_contribs/" + cell).c_str(), BM_XGBoostContributions,
                                  key, items, false));
  Us(benchmark::RegisterBenchmark(("xgboost_approx/" + cell).c_str(), BM_XGBoostContributions, key,
                                  items, true));
}

void RegisterAll() {
  const auto us = Us;
  for (int trees : {100, 300, 500, 1000}) {
    for (int depth : {4, 5, 6, 7, 8}) {
      const std::string key = absl::StrFormat("t%04d/d%d", trees, depth);
      for (int items : {10, 100, 500, 2000}) {
        // Zero-padded so that the ratio table sorts by trees, depth, items.
        const std::string cell = absl::StrFormat("%s/n%04d", key, items);
        us(benchmark::RegisterBenchmark(("xgboost/" + cell).c_str(), BM_XGBoost, key, items));
        us(benchmark::RegisterBenchmark(("rankwire/" + cell).c_str(), BM_Rankwire, key, items,
                                        false));
        us(benchmark::RegisterBenchmark(("scalar/" + cell).c_str(), BM_Rankwire, key, items, true));
      }
    }
  }
  const std::string w = "w0300/d6";
  us(benchmark::RegisterBenchmark("xgboost/w0300/d6/n0500", BM_XGBoost, w, 500));
  us(benchmark::RegisterBenchmark("rankwire/w0300/d6/n0500", BM_Rankwire, w, 500, false));
  us(benchmark::RegisterBenchmark("scalar/w0300/d6/n0500", BM_Rankwire, w, 500, true));
  us(benchmark::RegisterBenchmark("ranker_xgboost/w0300/d6/n0500", BM_RankerScore, true));
  us(benchmark::RegisterBenchmark("ranker_linear/w0300/d6/n0500", BM_RankerScore, false));
  RegisterExplain(w, 10);
  Us(benchmark::RegisterBenchmark("shap_approx_walk/w0300/d6/n0010", BM_Explain, w, 10,
                                  Explainer::kApproxWalk));
  for (int depth : {4, 5, 6, 7, 8}) {
    for (int items : {1, 10, 100}) RegisterExplain(absl::StrFormat("t0300/d%d", depth), items);
  }
  us(benchmark::RegisterBenchmark("shap_classic/t0300/d6/n0010", BM_Explain, "t0300/d6", 10,
                                  Explainer::kClassic));
  for (int depth : {4, 6, 8}) {
    const std::string key = absl::StrFormat("t0300/d%d", depth);
    us(benchmark::RegisterBenchmark(("load/" + key).c_str(), BM_Load, key));
    us(benchmark::RegisterBenchmark(("shap_build/" + key).c_str(), BM_ShapBuild, key));
    us(benchmark::RegisterBenchmark(("load_server/" + key).c_str(), BM_LoadServer, key));
    us(benchmark::RegisterBenchmark(("xgboost_load/" + key).c_str(), BM_XGBoostLoad, key));
  }
}

// Takes "--name=value" out of argv; its value, or "" when absent.
std::string TakeFlag(std::vector<char*>* args, absl::string_view name) {
  const std::string prefix = absl::StrCat("--", name, "=");
  for (auto it = args->begin(); it != args->end(); ++it) {
    if (absl::StartsWith(*it, prefix)) {
      std::string value = std::string(*it).substr(prefix.size());
      args->erase(it);
      return value;
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  const std::string csv = TakeFlag(&args, "ratio_csv");
  const std::string model_out = TakeFlag(&args, "write_workload_model");
  if (!model_out.empty()) {
    const std::string json = WorkloadModel();
    std::FILE* f = std::fopen(model_out.c_str(), "w");
    if (f == nullptr || std::fwrite(json.data(), 1, json.size(), f) != json.size() ||
        std::fclose(f) != 0) {
      std::fprintf(stderr, "xgboost_bench: cannot write %s\n", model_out.c_str());
      return 1;
    }
    std::printf("wrote %s: %d trees, depth %d, features %s\n", model_out.c_str(), kWorkloadTrees,
                kWorkloadDepth, absl::StrJoin(WorkloadFeatureNames(), ",").c_str());
    return 0;
  }
  // Defaults for the sweep: repetitions, interleaved; flags still override.
  std::string repetitions = "--benchmark_repetitions=5";
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  std::string min_time = "--benchmark_min_time=0.05";
  std::string aggregates = "--benchmark_report_aggregates_only=false";
  args.insert(args.begin() + 1,
              {repetitions.data(), interleave.data(), min_time.data(), aggregates.data()});
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  RegisterAll();
  RatioReporter reporter(csv);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  for (auto& [key, e] : EngineCache()) std::remove(e.path.c_str());
  return 0;
}
