// xgboost_bench: rankwire's TreeEvaluator against libxgboost's own predictor
// (XGBoosterPredictFromDense, one thread) on the same model file and the
// same rows, over 100 to 1,000 trees, depth 4 to 8 and 10 to 2,000 items.
//
//   build/bench/xgboost_bench                        # the sweep, 5 repetitions
//   build/bench/xgboost_bench --benchmark_filter=t0300/d6/n0500
//
// Models are generated here (seeded), written as XGBoost 1.7 JSON and loaded
// by both engines: 18 features, split thresholds drawn from the features'
// distribution, 15% of nodes below depth 2 pruned to leaves, covers that
// halve unevenly, as trained trees look. Rows: N(0,1) features, 10% missing.
//
// Repetitions run in random interleaved order (this host is shared and its
// speed drifts); at the end a table gives each cell's median time per engine
// and XGBoost/rankwire ratios: the median over repetitions (paired by
// repetition index) and their range, for the CPU's best kernel ("rankwire":
// AVX-512 here) and for the portable one ("scalar"). A "load" family times parsing a model
// plus building its evaluator, and reports the evaluator's bytes per node.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "benchmark/benchmark.h"
#include "server/xgboost/tree_evaluator.h"
#include "server/xgboost/xgboost_model.h"
#include "xgboost/c_api.h"

namespace {

using rankwire::xgb::TreeEvaluator;
using rankwire::xgb::XGBoostModel;

constexpr int kFeatures = 18;

// One tree in XGBoost's JSON form, grown breadth first.
std::string RandomTree(std::mt19937& rng, int depth, int id) {
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(0, 1);
  std::vector<int> left, right, parent, feature, default_left, level;
  std::vector<float> value, cover;
  auto add = [&](int p, int l, float c) {
    left.push_back(-1), right.push_back(-1), parent.push_back(p), feature.push_back(0);
    default_left.push_back(0), value.push_back(0), cover.push_back(c), level.push_back(l);
  };
  add(2147483647, 0, 1000);
  for (size_t n = 0; n < left.size(); ++n) {
    const bool leaf = level[n] == depth || (level[n] >= 2 && uniform(rng) < 0.15f);
    if (leaf) {
      value[n] = 0.1f * normal(rng);
      continue;
    }
    feature[n] = static_cast<int>(rng() % kFeatures);
    value[n] = normal(rng);
    default_left[n] = static_cast<int>(rng() % 2);
    const float share = 0.2f + 0.6f * uniform(rng);
    left[n] = static_cast<int>(left.size());
    add(static_cast<int>(n), level[n] + 1, cover[n] * share);
    right[n] = static_cast<int>(left.size());
    add(static_cast<int>(n), level[n] + 1, cover[n] * (1 - share));
  }
  auto list = [](const auto& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      // XGBoost reads a float array's "1000" as an integer and refuses it.
      if constexpr (std::is_same_v<std::decay_t<decltype(v[i])>, float>) {
        absl::StrAppend(&out, i ? "," : "", absl::StrFormat("%.9e", v[i]));
      } else {
        absl::StrAppend(&out, i ? "," : "", v[i]);
      }
    }
    return out + "]";
  };
  const std::vector<int> zeros(left.size(), 0);
  return absl::StrCat(
      "{\"base_weights\":", list(value), ",\"categories\":[],\"categories_nodes\":[],",
      "\"categories_segments\":[],\"categories_sizes\":[],\"default_left\":", list(default_left),
      ",\"id\":", id, ",\"left_children\":", list(left), ",\"loss_changes\":", list(cover),
      ",\"parents\":", list(parent), ",\"right_children\":", list(right),
      ",\"split_conditions\":", list(value), ",\"split_indices\":", list(feature),
      ",\"split_type\":", list(zeros), ",\"sum_hessian\":", list(cover),
      ",\"tree_param\":{\"num_deleted\":\"0\",\"num_feature\":\"", kFeatures,
      "\",\"num_nodes\":\"", left.size(), "\",\"size_leaf_vector\":\"0\"}}");
}

std::string RandomModel(int trees, int depth) {
  std::mt19937 rng(trees * 100 + depth);
  std::string names, types, tree_json, info;
  for (int f = 0; f < kFeatures; ++f) {
    absl::StrAppend(&names, f ? "," : "", "\"f", f, "\"");
    absl::StrAppend(&types, f ? "," : "", "\"float\"");
  }
  for (int t = 0; t < trees; ++t) {
    absl::StrAppend(&tree_json, t ? "," : "", RandomTree(rng, depth, t));
    absl::StrAppend(&info, t ? "," : "", "0");
  }
  return absl::StrCat(
      "{\"learner\":{\"attributes\":{},\"feature_names\":[", names, "],\"feature_types\":[", types,
      "],\"gradient_booster\":{\"model\":{\"gbtree_model_param\":{\"num_parallel_tree\":\"1\",",
      "\"num_trees\":\"", trees, "\",\"size_leaf_vector\":\"0\"},\"tree_info\":[", info,
      "],\"trees\":[", tree_json, "]},\"name\":\"gbtree\"},\"learner_model_param\":{",
      "\"base_score\":\"5E-1\",\"boost_from_average\":\"1\",\"num_class\":\"0\",",
      "\"num_feature\":\"", kFeatures, "\",\"num_target\":\"1\"},\"objective\":{",
      "\"lambda_rank_param\":{\"fix_list_weight\":\"0\",\"num_pairsample\":\"1\"},",
      "\"name\":\"rank:ndcg\"}},\"version\":[1,7,4]}");
}

void CheckXgb(int rc) {
  if (rc != 0) {
    std::fprintf(stderr, "xgboost: %s\n", XGBGetLastError());
    std::abort();
  }
}

// A model as both engines hold it.
struct Engines {
  std::string json;
  std::unique_ptr<XGBoostModel> model;
  std::unique_ptr<TreeEvaluator> evaluator;         // the CPU's best kernel
  std::unique_ptr<TreeEvaluator> scalar_evaluator;  // the portable one
  BoosterHandle booster = nullptr;
};

Engines& EnginesFor(int trees, int depth) {
  static auto* cache = new std::map<std::pair<int, int>, Engines>();
  Engines& e = (*cache)[{trees, depth}];
  if (e.booster != nullptr) return e;
  e.json = RandomModel(trees, depth);
  auto model = XGBoostModel::Parse(e.json, "generated");
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    std::abort();
  }
  e.model = std::make_unique<XGBoostModel>(*std::move(model));
  e.evaluator = std::make_unique<TreeEvaluator>(*e.model);
  e.scalar_evaluator = std::make_unique<TreeEvaluator>(*e.model, TreeEvaluator::Kernel::kScalar);
  const std::string path = absl::StrCat("/tmp/xgboost_bench_t", trees, "_d", depth, ".json");
  std::FILE* f = std::fopen(path.c_str(), "w");
  std::fwrite(e.json.data(), 1, e.json.size(), f);
  std::fclose(f);
  CheckXgb(XGBoosterCreate(nullptr, 0, &e.booster));
  CheckXgb(XGBoosterLoadModel(e.booster, path.c_str()));
  CheckXgb(XGBoosterSetParam(e.booster, "nthread", "1"));
  std::remove(path.c_str());
  return e;
}

std::vector<float> Rows(int n) {
  std::mt19937 rng(n);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(0, 1);
  std::vector<float> rows(static_cast<size_t>(n) * kFeatures);
  for (float& x : rows) x = uniform(rng) < 0.1f ? NAN : normal(rng);
  return rows;
}

void BM_Rankwire(benchmark::State& state, int trees, int depth, int items, bool scalar) {
  Engines& e = EnginesFor(trees, depth);
  const TreeEvaluator& evaluator = scalar ? *e.scalar_evaluator : *e.evaluator;
  const std::vector<float> rows = Rows(items);
  std::vector<float> out(items);
  for (auto _ : state) {
    evaluator.Score(rows.data(), items, kFeatures, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * items);
  state.SetLabel(std::string(evaluator.kernel_name()));
}

void BM_XGBoost(benchmark::State& state, int trees, int depth, int items) {
  Engines& e = EnginesFor(trees, depth);
  const std::vector<float> rows = Rows(items);
  const std::string array = absl::StrFormat(
      "{\"data\":[%d,true],\"shape\":[%d,%d],\"typestr\":\"<f4\",\"version\":3}",
      reinterpret_cast<uintptr_t>(rows.data()), items, kFeatures);
  const char* config =
      "{\"type\":0,\"training\":false,\"iteration_begin\":0,\"iteration_end\":0,"
      "\"strict_shape\":false,\"missing\":NaN,\"cache_id\":0}";
  // Same scores, or the comparison is void.
  std::vector<float> ours(items);
  e.evaluator->Score(rows.data(), items, kFeatures, ours.data());
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

void BM_Load(benchmark::State& state, int trees, int depth) {
  Engines& e = EnginesFor(trees, depth);
  size_t bytes = 0;
  for (auto _ : state) {
    auto model = XGBoostModel::Parse(e.json, "generated");
    TreeEvaluator evaluator(*model);
    bytes = evaluator.MemoryBytes();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["nodes"] = static_cast<double>(e.model->num_nodes());
  state.counters["eval_bytes_per_node"] = static_cast<double>(bytes) / e.model->num_nodes();
  state.counters["json_MB"] = e.json.size() / 1e6;
}

// Console output as usual, plus the ratio table at the end.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration || run.error_occurred) continue;
      const std::string name = run.benchmark_name();
      std::vector<std::string> parts = absl::StrSplit(name, absl::MaxSplits('/', 1));
      if (parts.size() != 2) continue;
      std::string cell = parts[1];
      const size_t suffix = cell.find("/repeats:");
      if (suffix != std::string::npos) cell.resize(suffix);
      times_[cell][parts[0]].push_back(run.GetAdjustedRealTime());  // microseconds
    }
  }
  void Finalize() override;

 private:
  std::map<std::string, std::map<std::string, std::vector<double>>> times_;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// XGBoost's time over rankwire's, per repetition (paired by index).
std::vector<double> Ratios(const std::vector<double>& x, const std::vector<double>& r) {
  std::vector<double> ratios;
  for (size_t i = 0; i < std::min(x.size(), r.size()); ++i) ratios.push_back(x[i] / r[i]);
  return ratios;
}

void RatioReporter::Finalize() {
  std::printf("\n%-16s %11s %11s %7s %13s %11s %7s %13s\n", "cell", "xgboost us", "rankwire us",
              "ratio", "range", "scalar us", "ratio", "range");
  int cells = 0;
  int below_one = 0;
  for (auto& [cell, engines] : times_) {
    const auto& x = engines["xgboost"];
    const auto& r = engines["rankwire"];
    const auto& s = engines["scalar"];
    if (x.empty() || r.empty() || s.empty()) continue;
    const std::vector<double> ratios = Ratios(x, r);
    const std::vector<double> scalar_ratios = Ratios(x, s);
    ++cells;
    below_one += Median(ratios) < 1 || Median(scalar_ratios) < 1;
    std::printf("%-16s %11.1f %11.1f %6.2fx %6.2f-%5.2fx %11.1f %6.2fx %6.2f-%5.2fx\n",
                cell.c_str(), Median(x), Median(r), Median(ratios),
                *std::min_element(ratios.begin(), ratios.end()),
                *std::max_element(ratios.begin(), ratios.end()), Median(s),
                Median(scalar_ratios), *std::min_element(scalar_ratios.begin(), scalar_ratios.end()),
                *std::max_element(scalar_ratios.begin(), scalar_ratios.end()));
  }
  std::printf("%d cells, %d where a rankwire kernel is slower than XGBoost (median ratio < 1)\n",
              cells, below_one);
}

void RegisterAll() {
  for (int trees : {100, 300, 1000}) {
    for (int depth : {4, 6, 8}) {
      for (int items : {10, 100, 500, 2000}) {
        // Zero-padded so that the ratio table sorts by trees, depth, items.
        const std::string cell =
            absl::StrFormat("t%04d/d%d/n%04d", trees, depth, items);
        benchmark::RegisterBenchmark(("xgboost/" + cell).c_str(), BM_XGBoost, trees, depth, items)
            ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("rankwire/" + cell).c_str(), BM_Rankwire, trees, depth,
                                     items, false)
            ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark(("scalar/" + cell).c_str(), BM_Rankwire, trees, depth, items,
                                     true)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  benchmark::RegisterBenchmark("load/t300/d6", BM_Load, 300, 6)->Unit(benchmark::kMillisecond);
}

}  // namespace

int main(int argc, char** argv) {
  // Defaults for the sweep: repetitions, interleaved; flags still override.
  std::vector<char*> args(argv, argv + argc);
  std::string repetitions = "--benchmark_repetitions=5";
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  std::string min_time = "--benchmark_min_time=0.05";
  std::string aggregates = "--benchmark_report_aggregates_only=false";
  args.insert(args.begin() + 1, {repetitions.data(), interleave.data(), min_time.data(),
                                 aggregates.data()});
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  RegisterAll();
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
