// Test helpers for model/xgboost: XGBoost 1.7 model JSON built from node
// arrays, and seeded random models. Header-only, for tests and the fuzz
// seeds; not part of the library.
#ifndef RANKWIRE_MODEL_XGBOOST_XGBOOST_TEST_UTIL_H_
#define RANKWIRE_MODEL_XGBOOST_XGBOOST_TEST_UTIL_H_

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace rankwire::xgboost::testing {

// A tree's node arrays, as in XGBoost's JSON (left -1 marks a leaf; value is
// the split threshold or the leaf value).
struct TreeSpec {
  std::vector<int> left, right, feature;
  std::vector<float> value;
  std::vector<int> default_left;
  std::vector<float> cover;
};

// Floats as XGBoost writes them: NaN and [-]Infinity as bare words.
inline std::string FloatList(const std::vector<float>& v) {
  return absl::StrCat("[",
                      absl::StrJoin(v, ",",
                                    [](std::string* out, float x) {
                                      if (std::isnan(x)) return absl::StrAppend(out, "NaN");
                                      if (std::isinf(x))
                                        return absl::StrAppend(out, x < 0 ? "-" : "", "Infinity");
                                      absl::StrAppend(out, absl::StrFormat("%.9e", x));
                                    }),
                      "]");
}

inline std::string IntList(const std::vector<int>& v) {
  return absl::StrCat("[", absl::StrJoin(v, ","), "]");
}

// Tree `id` of a model (XGBoost places each tree by its id), with the
// parents XGBoost writes (the root's is 2147483647).
inline std::string TreeJson(const TreeSpec& t, int num_feature, int id = 0) {
  const std::vector<int> zeros(t.left.size(), 0);
  std::vector<int> parents(t.left.size(), 2147483647);
  for (size_t n = 0; n < t.left.size(); ++n) {
    for (int child : {t.left[n], t.right[n]}) {
      if (child > 0 && static_cast<size_t>(child) < t.left.size()) {
        parents[child] = static_cast<int>(n);
      }
    }
  }
  return absl::StrCat(
      "{\"base_weights\":", FloatList(t.value), ",\"categories\":[],\"categories_nodes\":[],",
      "\"categories_segments\":[],\"categories_sizes\":[],\"default_left\":",
      IntList(t.default_left), ",\"id\":", id, ",\"left_children\":", IntList(t.left),
      ",\"loss_changes\":", FloatList(t.cover), ",\"parents\":", IntList(parents),
      ",\"right_children\":", IntList(t.right), ",\"split_conditions\":", FloatList(t.value),
      ",\"split_indices\":", IntList(t.feature), ",\"split_type\":", IntList(zeros),
      ",\"sum_hessian\":", FloatList(t.cover), ",\"tree_param\":{\"num_deleted\":\"0\",",
      "\"num_feature\":\"", num_feature, "\",\"num_nodes\":\"", t.left.size(),
      "\",\"size_leaf_vector\":\"0\"}}");
}

struct ModelSpec {
  std::vector<TreeSpec> trees;
  std::vector<std::string> feature_names = {"f0", "f1", "f2"};
  std::string objective = "rank:ndcg";
  std::string base_score = "5E-1";
  int num_feature = 3;
  std::string num_class = "0";
  std::string booster = "gbtree";
  // The objective's parameters, as XGBoost writes them beside its name;
  // libxgboost needs them to load the file (rankwire ignores them).
  std::string objective_params;
};

// What XGBoost 1.7 writes for rank:ndcg's parameters.
inline constexpr char kLambdaRankParams[] =
    "\"lambda_rank_param\":{\"fix_list_weight\":\"0\",\"num_pairsample\":\"1\"}";

inline std::string ModelJson(const ModelSpec& m) {
  std::vector<std::string> trees;
  std::vector<int> info;
  for (const TreeSpec& t : m.trees) {
    trees.push_back(TreeJson(t, m.num_feature, static_cast<int>(trees.size())));
    info.push_back(0);
  }
  std::vector<std::string> names;
  for (const std::string& n : m.feature_names) names.push_back(absl::StrCat("\"", n, "\""));
  return absl::StrCat(
      "{\"learner\":{\"attributes\":{},\"feature_names\":[", absl::StrJoin(names, ","),
      "],\"feature_types\":[],\"gradient_booster\":{\"model\":{\"gbtree_model_param\":",
      "{\"num_parallel_tree\":\"1\",\"num_trees\":\"", trees.size(),
      "\",\"size_leaf_vector\":\"0\"},\"tree_info\":", IntList(info), ",\"trees\":[",
      absl::StrJoin(trees, ","), "]},\"name\":\"", m.booster, "\"},\"learner_model_param\":{",
      "\"base_score\":\"", m.base_score, "\",\"boost_from_average\":\"1\",\"num_class\":\"",
      m.num_class, "\",\"num_feature\":\"", m.num_feature, "\",\"num_target\":\"1\"},",
      "\"objective\":{", m.objective_params, m.objective_params.empty() ? "" : ",", "\"name\":\"",
      m.objective, "\"}},\"version\":[1,7,4]}");
}

// A random tree of at most `depth` levels; below depth 2 a node becomes a
// leaf with probability `prune`. Thresholds are N(0,1), some on a grid of
// halves so that rows can land exactly on them; or, with `threshold`, what
// it returns for the split's feature (e.g. a value drawn from real rows).
inline TreeSpec RandomTree(std::mt19937& rng, int depth, int num_feature, float prune = 0.2f,
                           const std::function<float(int feature)>& threshold = nullptr) {
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(0, 1);
  TreeSpec t;
  std::vector<int> level;
  auto add = [&](int l, float c) {
    t.left.push_back(-1), t.right.push_back(-1), t.feature.push_back(0), t.value.push_back(0);
    t.default_left.push_back(0), t.cover.push_back(c), level.push_back(l);
  };
  add(0, 100);
  for (size_t n = 0; n < t.left.size(); ++n) {
    if (level[n] == depth || (level[n] >= 2 && uniform(rng) < prune)) {
      t.value[n] = normal(rng);
      continue;
    }
    t.feature[n] = static_cast<int>(rng() % num_feature);
    t.value[n] = threshold             ? threshold(t.feature[n])
                 : uniform(rng) < 0.3f ? std::round(normal(rng) * 2) / 2
                                       : normal(rng);
    t.default_left[n] = static_cast<int>(rng() % 2);
    const float share = 0.1f + 0.8f * uniform(rng);
    t.left[n] = static_cast<int>(t.left.size());
    add(level[n] + 1, t.cover[n] * share);
    t.right[n] = static_cast<int>(t.left.size());
    add(level[n] + 1, t.cover[n] * (1 - share));
  }
  return t;
}

inline ModelSpec RandomModel(uint32_t seed, int trees, int depth, int num_feature) {
  std::mt19937 rng(seed);
  ModelSpec m;
  m.num_feature = num_feature;
  m.feature_names.clear();
  for (int f = 0; f < num_feature; ++f) m.feature_names.push_back(absl::StrCat("x", f));
  for (int i = 0; i < trees; ++i) m.trees.push_back(RandomTree(rng, depth, num_feature));
  return m;
}

// Rows with N(0,1) values, some on the half grid, `missing` of them NaN.
inline std::vector<float> RandomRows(uint32_t seed, size_t n, int num_feature,
                                     float missing = 0.15f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_real_distribution<float> uniform(0, 1);
  std::vector<float> rows(n * num_feature);
  for (float& x : rows) {
    const float u = uniform(rng);
    x = u < missing ? NAN : u < 0.4f ? std::round(normal(rng) * 2) / 2 : normal(rng);
  }
  return rows;
}

}  // namespace rankwire::xgboost::testing

#endif  // RANKWIRE_MODEL_XGBOOST_XGBOOST_TEST_UTIL_H_
