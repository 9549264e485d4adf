#include "model/xgboost/xgboost_spec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/status_reason.h"
#include "simdjson.h"

namespace rankwire::xgboost {

namespace dom = simdjson::dom;

absl::string_view ObjectiveName(Objective objective) {
  switch (objective) {
    case Objective::kRankPairwise:
      return "rank:pairwise";
    case Objective::kRankNdcg:
      return "rank:ndcg";
    case Objective::kRankMap:
      return "rank:map";
    case Objective::kBinaryLogistic:
      return "binary:logistic";
    case Objective::kRegSquaredError:
      return "reg:squarederror";
  }
  return "unknown";
}

FeatureSource SourceOfFeature(absl::string_view name) {
  if (absl::StartsWith(name, "user.")) return FeatureSource::kUser;
  if (absl::StartsWith(name, "ctx.")) return FeatureSource::kContext;
  return FeatureSource::kItem;
}

int32_t XGBoostTree::Next(int32_t node, float feature_value) const {
  if (std::isnan(feature_value)) return default_left[node] ? left[node] : right[node];
  return feature_value < value[node] ? left[node] : right[node];
}

// XGBoost writes a NaN or infinite float as the bare word NaN, Infinity or
// -Infinity, which is not JSON. Returns a copy with each such word (outside
// strings) replaced by null, so the tree reader can say which node holds it;
// nullopt if there is none.
std::optional<std::string> NullNonFiniteWords(absl::string_view json) {
  std::string out;
  bool replaced = false;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        out.append(json.data() + i, std::min<size_t>(2, json.size() - i));
        ++i;
        continue;
      }
      in_string = c != '"';
    } else if (c == '"') {
      in_string = true;
    } else {
      bool matched = false;
      for (absl::string_view word : {"NaN", "-Infinity", "Infinity"}) {
        if (absl::StartsWith(json.substr(i), word)) {
          out.append("null");
          i += word.size() - 1;
          matched = replaced = true;
          break;
        }
      }
      if (matched) continue;
    }
    out.push_back(c);
  }
  if (!replaced) return std::nullopt;
  return out;
}

// Reads one saved model into an XGBoostSpec, section by section; every
// error starts with the source name and says where in the model it is.
class ModelReader {
 public:
  ModelReader(absl::string_view source, const XGBoostLoadOptions& options)
      : source_(source), options_(options) {}

  absl::StatusOr<XGBoostSpec> Read(simdjson::padded_string_view json);

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": ", what));
  }
  absl::Status Unsupported(absl::string_view what) const {
    return absl::UnimplementedError(absl::StrCat(source_, ": ", what));
  }
  absl::StatusOr<dom::element> Field(dom::object object, absl::string_view key,
                                     absl::string_view where) const;
  absl::StatusOr<absl::string_view> StringField(dom::object object, absl::string_view key,
                                                absl::string_view where) const;
  absl::StatusOr<int64_t> IntStringField(dom::object object, absl::string_view key,
                                         absl::string_view where) const;

  absl::Status ReadObjective(dom::object learner);
  absl::Status ReadModelParam(dom::object learner);
  absl::Status ReadFeatureNames(dom::object learner);
  absl::Status ReadTrees(dom::object learner);
  absl::Status ReadAttributes(dom::object learner);
  absl::StatusOr<XGBoostTree> ReadTree(dom::element element, size_t index) const;
  absl::Status CheckTree(XGBoostTree& tree, size_t index);

  template <typename T>
  absl::Status ReadNumbers(dom::object tree, absl::string_view key, absl::string_view where,
                           std::vector<T>* out) const;

  absl::string_view source_;
  const XGBoostLoadOptions& options_;
  XGBoostSpec model_;
  int64_t num_feature_ = 0;
};

absl::StatusOr<dom::element> ModelReader::Field(dom::object object, absl::string_view key,
                                                absl::string_view where) const {
  dom::element value;
  if (object.at_key(std::string_view(key.data(), key.size())).get(value)) {
    return Error(absl::StrCat(where, " has no \"", key, "\""));
  }
  return value;
}

absl::StatusOr<absl::string_view> ModelReader::StringField(dom::object object,
                                                           absl::string_view key,
                                                           absl::string_view where) const {
  ASSIGN_OR_RETURN(dom::element value, Field(object, key, where));
  std::string_view text;
  if (value.get_string().get(text)) {
    return Error(absl::StrCat(where, ".", key, " is not a string"));
  }
  return absl::string_view(text.data(), text.size());
}

// XGBoost writes its parameters as strings ("num_feature": "18").
absl::StatusOr<int64_t> ModelReader::IntStringField(dom::object object, absl::string_view key,
                                                    absl::string_view where) const {
  ASSIGN_OR_RETURN(absl::string_view text, StringField(object, key, where));
  int64_t number = 0;
  if (!absl::SimpleAtoi(text, &number)) {
    return Error(absl::StrCat(where, ".", key, " is \"", text, "\", not an integer"));
  }
  return number;
}

absl::StatusOr<XGBoostSpec> ModelReader::Read(simdjson::padded_string_view json) {
  if (json.empty()) return WithReason(Error("empty file"), "empty");
  if (json.size() > 1 && json.data()[0] == '{' && json.data()[1] != '"' &&
      !std::isspace(static_cast<unsigned char>(json.data()[1])) && json.data()[1] != '}') {
    return Unsupported(
        "looks like UBJSON; rankwire reads the JSON format: save_model(\"model.json\")");
  }
  dom::parser parser;
  dom::element root;
  if (auto error = parser.parse(json).get(root)) {
    std::optional<std::string> nulled =
        NullNonFiniteWords(absl::string_view(json.data(), json.size()));
    if (!nulled || parser.parse(*nulled).get(root)) {
      return WithReason(
          Error(absl::StrCat("not valid JSON (truncated?): ", simdjson::error_message(error))),
          "truncated");
    }
  }
  dom::object top;
  dom::object learner;
  if (root.get_object().get(top)) return Error("the document is not a JSON object");
  ASSIGN_OR_RETURN(dom::element learner_element, Field(top, "learner", "the model"));
  if (learner_element.get_object().get(learner)) return Error("learner is not an object");
  RETURN_IF_ERROR(ReadModelParam(learner));
  RETURN_IF_ERROR(ReadObjective(learner));
  RETURN_IF_ERROR(ReadFeatureNames(learner));
  RETURN_IF_ERROR(ReadTrees(learner));
  RETURN_IF_ERROR(ReadAttributes(learner));
  return std::move(model_);
}

// learner.attributes: string pairs set with Booster.set_attr(); rankwire
// reads "rankwire_name" and "rankwire_version" from them.
absl::Status ModelReader::ReadAttributes(dom::object learner) {
  dom::element element;
  if (learner.at_key("attributes").get(element)) return absl::OkStatus();  // Optional.
  dom::object attributes;
  if (element.get_object().get(attributes)) return Error("learner.attributes is not an object");
  for (auto [key, value] : attributes) {
    std::string_view text;
    if (value.get_string().get(text)) {
      return Error(absl::StrCat("learner.attributes.", std::string(key), " is not a string"));
    }
    if (key == "rankwire_name") model_.name_ = std::string(text);
    if (key == "rankwire_version") model_.version_ = std::string(text);
  }
  return absl::OkStatus();
}

absl::Status ModelReader::ReadObjective(dom::object learner) {
  ASSIGN_OR_RETURN(dom::element objective_element, Field(learner, "objective", "learner"));
  dom::object objective;
  if (objective_element.get_object().get(objective)) {
    return Error("learner.objective is not an object");
  }
  ASSIGN_OR_RETURN(absl::string_view name, StringField(objective, "name", "learner.objective"));
  static constexpr Objective kServed[] = {Objective::kRankPairwise, Objective::kRankNdcg,
                                          Objective::kRankMap, Objective::kBinaryLogistic,
                                          Objective::kRegSquaredError};
  for (Objective candidate : kServed) {
    if (ObjectiveName(candidate) != name) continue;
    model_.objective_ = candidate;
    model_.base_margin_ = model_.base_score_;
    if (candidate == Objective::kBinaryLogistic) {
      // XGBoost's ProbToMargin for logistic loss, in float as it computes it.
      float p = model_.base_score_;
      if (!(p > 0.0f && p < 1.0f)) {
        return Error(
            absl::StrCat("base_score ", p, " is outside (0, 1), which ", "binary:logistic needs"));
      }
      model_.base_margin_ = -std::log(1.0f / p - 1.0f);
    }
    return absl::OkStatus();
  }
  return Unsupported(absl::StrCat("objective \"", name,
                                  "\" is not served; rankwire serves rank:pairwise, rank:ndcg, "
                                  "rank:map, binary:logistic and reg:squarederror"));
}

absl::Status ModelReader::ReadModelParam(dom::object learner) {
  static constexpr absl::string_view kWhere = "learner.learner_model_param";
  ASSIGN_OR_RETURN(dom::element param_element, Field(learner, "learner_model_param", "learner"));
  dom::object param;
  if (param_element.get_object().get(param))
    return Error(absl::StrCat(kWhere, " is not an object"));
  ASSIGN_OR_RETURN(num_feature_, IntStringField(param, "num_feature", kWhere));
  if (num_feature_ <= 0 || num_feature_ > (int64_t{1} << 20)) {
    return Error(absl::StrCat("num_feature is ", num_feature_, "; 1 to 2^20 are accepted"));
  }
  ASSIGN_OR_RETURN(int64_t num_class, IntStringField(param, "num_class", kWhere));
  if (num_class > 1) {
    return Unsupported(absl::StrCat("num_class is ", num_class, "; multi-class is not served"));
  }
  ASSIGN_OR_RETURN(absl::string_view base_text, StringField(param, "base_score", kWhere));
  // XGBoost 2 writes a vector ("[5E-1]"); 1.7 a scalar ("5E-1").
  absl::string_view text = base_text;
  if (absl::ConsumePrefix(&text, "[")) absl::ConsumeSuffix(&text, "]");
  float base_score = 0;
  if (!absl::SimpleAtof(text, &base_score) || !std::isfinite(base_score)) {
    return WithReason(
        Error(absl::StrCat(kWhere, ".base_score \"", base_text, "\" is not a finite number")),
        "invalid_number");
  }
  model_.base_score_ = base_score;
  return absl::OkStatus();
}

absl::Status ModelReader::ReadFeatureNames(dom::object learner) {
  auto& out = model_.feature_names_;
  dom::element names_element;
  // Absent when trained on a bare array. (A default dom::array has no tape:
  // iterate only one that was read.)
  if (!learner.at_key("feature_names").get(names_element)) {
    dom::array names;
    if (names_element.get_array().get(names)) return Error("learner.feature_names is not an array");
    for (dom::element name : names) {
      std::string_view text;
      if (name.get_string().get(text) || text.empty()) {
        return Error(absl::StrCat("feature_names[", out.size(), "] is not a non-empty string"));
      }
      out.emplace_back(text);
    }
  }
  if (out.empty()) {
    if (!options_.allow_unnamed_features) {
      return Error(
          "the model has no feature_names (trained on an unnamed array); train with a DMatrix "
          "or DataFrame that names the features, or allow unnamed features (f0, f1, ...)");
    }
    for (int64_t i = 0; i < num_feature_; ++i) out.push_back(absl::StrCat("f", i));
  }
  if (static_cast<int64_t>(out.size()) != num_feature_) {
    return Error(
        absl::StrCat("feature_names has ", out.size(), " names but num_feature is ", num_feature_));
  }
  absl::flat_hash_map<absl::string_view, size_t> seen;
  for (size_t i = 0; i < out.size(); ++i) {
    auto [it, inserted] = seen.emplace(out[i], i);
    if (!inserted) {
      return Error(absl::StrCat("feature_names[", i, "] \"", out[i], "\" repeats feature_names[",
                                it->second, "]"));
    }
  }
  dom::element types_element;
  dom::array types;
  if (!learner.at_key("feature_types").get(types_element) &&
      !types_element.get_array().get(types)) {
    size_t i = 0;
    for (dom::element type : types) {
      std::string_view text;
      if (!type.get_string().get(text) && text == "c") {
        return Unsupported(absl::StrCat("feature ", out[i], " is categorical; not served"));
      }
      ++i;
    }
  }
  return absl::OkStatus();
}

absl::Status ModelReader::ReadTrees(dom::object learner) {
  ASSIGN_OR_RETURN(dom::element booster_element, Field(learner, "gradient_booster", "learner"));
  dom::object booster;
  if (booster_element.get_object().get(booster)) return Error("gradient_booster is not an object");
  ASSIGN_OR_RETURN(absl::string_view booster_name,
                   StringField(booster, "name", "gradient_booster"));
  if (booster_name != "gbtree") {
    return Unsupported(absl::StrCat("booster \"", booster_name, "\" is not served (gbtree only)"));
  }
  ASSIGN_OR_RETURN(dom::element model_element, Field(booster, "model", "gradient_booster"));
  dom::object model;
  dom::array trees;
  dom::array tree_info;
  if (model_element.get_object().get(model))
    return Error("gradient_booster.model is not an object");
  ASSIGN_OR_RETURN(dom::element trees_element, Field(model, "trees", "gradient_booster.model"));
  ASSIGN_OR_RETURN(dom::element info_element, Field(model, "tree_info", "gradient_booster.model"));
  if (trees_element.get_array().get(trees)) return Error("trees is not an array");
  if (info_element.get_array().get(tree_info)) return Error("tree_info is not an array");
  if (tree_info.size() != trees.size()) {
    return Error(
        absl::StrCat("tree_info has ", tree_info.size(), " entries for ", trees.size(), " trees"));
  }
  size_t index = 0;
  for (dom::element group : tree_info) {
    int64_t g = -1;
    if (group.get_int64().get(g) || g != 0) {
      return Unsupported(absl::StrCat("tree ", index, " is in output group ", g,
                                      "; only single-output models are served"));
    }
    ++index;
  }
  model_.trees_.reserve(trees.size());
  index = 0;
  for (dom::element tree_element : trees) {
    ASSIGN_OR_RETURN(XGBoostTree tree, ReadTree(tree_element, index));
    RETURN_IF_ERROR(CheckTree(tree, index));
    model_.max_depth_ = std::max(model_.max_depth_, tree.depth);
    model_.trees_.push_back(std::move(tree));
    ++index;
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status ModelReader::ReadNumbers(dom::object tree, absl::string_view key,
                                      absl::string_view where, std::vector<T>* out) const {
  ASSIGN_OR_RETURN(dom::element element, Field(tree, key, where));
  dom::array array;
  if (element.get_array().get(array))
    return Error(absl::StrCat(where, ".", key, " is not an array"));
  out->clear();
  out->reserve(array.size());
  for (dom::element number : array) {
    if constexpr (std::is_same_v<T, float>) {
      double value = 0;
      if (number.is_null()) {
        return Error(absl::StrCat(where, " node ", out->size(), ": ", key, " is NaN or infinite"));
      }
      if (number.get_double().get(value)) {
        return Error(absl::StrCat(where, " node ", out->size(), ": ", key, " is not a number"));
      }
      out->push_back(static_cast<float>(value));
    } else {
      int64_t value = 0;
      bool flag = false;
      if (!number.get_bool().get(flag)) {
        value = flag;
      } else if (number.get_int64().get(value) || value < INT32_MIN || value > INT32_MAX) {
        return Error(
            absl::StrCat(where, " node ", out->size(), ": ", key, " is not a 32-bit integer"));
      }
      out->push_back(static_cast<T>(value));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<XGBoostTree> ModelReader::ReadTree(dom::element element, size_t index) const {
  const std::string where = absl::StrCat("tree ", index);
  dom::object object;
  if (element.get_object().get(object)) return Error(absl::StrCat(where, " is not an object"));
  XGBoostTree tree;
  std::vector<int32_t> split_type;
  RETURN_IF_ERROR(ReadNumbers(object, "left_children", where, &tree.left));
  RETURN_IF_ERROR(ReadNumbers(object, "right_children", where, &tree.right));
  RETURN_IF_ERROR(ReadNumbers(object, "split_indices", where, &tree.split_feature));
  RETURN_IF_ERROR(ReadNumbers(object, "split_conditions", where, &tree.value));
  RETURN_IF_ERROR(ReadNumbers(object, "default_left", where, &tree.default_left));
  RETURN_IF_ERROR(ReadNumbers(object, "sum_hessian", where, &tree.cover));
  dom::element split_type_element;
  if (!object.at_key("split_type").get(split_type_element)) {
    RETURN_IF_ERROR(ReadNumbers(object, "split_type", where, &split_type));
  }
  const size_t n = tree.left.size();
  if (n == 0) return Error(absl::StrCat(where, " has no nodes"));
  for (auto [key, size] : {std::pair{"right_children", tree.right.size()},
                           {"split_indices", tree.split_feature.size()},
                           {"split_conditions", tree.value.size()},
                           {"default_left", tree.default_left.size()},
                           {"sum_hessian", tree.cover.size()}}) {
    if (size != n) {
      return Error(absl::StrCat(where, ": ", key, " has ", size, " nodes, left_children ", n));
    }
  }
  for (size_t i = 0; i < split_type.size() && i < n; ++i) {
    if (split_type[i] != 0 && tree.left[i] >= 0) {
      return Unsupported(absl::StrCat(where, " node ", i, " is a categorical split; not served"));
    }
  }
  return tree;
}

// Walks the tree from the root once: every reachable node is checked, a
// node reached twice means a cycle (or two parents), and the depth is known.
absl::Status ModelReader::CheckTree(XGBoostTree& tree, size_t index) {
  const int32_t n = static_cast<int32_t>(tree.left.size());
  std::vector<uint8_t> reached(n, 0);
  std::vector<std::pair<int32_t, int>> stack = {{0, 0}};
  reached[0] = 1;
  auto where = [&](int32_t node) { return absl::StrCat("tree ", index, " node ", node, ": "); };
  while (!stack.empty()) {
    auto [node, depth] = stack.back();
    stack.pop_back();
    ++model_.num_nodes_;
    if (!std::isfinite(tree.value[node])) {
      return WithReason(
          Error(absl::StrCat(where(node), tree.IsLeaf(node) ? "leaf value " : "split value ",
                             tree.value[node], " is not finite")),
          "invalid_number");
    }
    if (!(tree.cover[node] >= 0) || !std::isfinite(tree.cover[node])) {
      return Error(absl::StrCat(where(node), "sum_hessian ", tree.cover[node], " is not >= 0"));
    }
    if (tree.IsLeaf(node)) {
      if (tree.right[node] != -1) {
        return Error(absl::StrCat(where(node), "left child -1 but right child ", tree.right[node]));
      }
      tree.depth = std::max(tree.depth, depth);
      continue;
    }
    if (tree.split_feature[node] < 0 || tree.split_feature[node] >= num_feature_) {
      return Error(absl::StrCat(where(node), "split feature ", tree.split_feature[node],
                                " is past the feature count ", num_feature_));
    }
    if (depth + 1 > options_.max_depth) {
      return Error(absl::StrCat(where(node), "depth over the limit of ", options_.max_depth));
    }
    for (int32_t child : {tree.left[node], tree.right[node]}) {
      if (child < 0 || child >= n) {
        return Error(absl::StrCat(where(node), "child ", child, " is out of range [0, ", n, ")"));
      }
      if (reached[child]) {
        return Error(absl::StrCat(where(node), "child ", child,
                                  " is reached twice (a cycle or a shared node)"));
      }
      reached[child] = 1;
      stack.push_back({child, depth + 1});
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<XGBoostSpec> XGBoostSpec::Parse(absl::string_view json,
                                               absl::string_view source_name,
                                               const XGBoostLoadOptions& options) {
  simdjson::padded_string padded(json.data(), json.size());
  return ModelReader(source_name, options).Read(padded);
}

absl::StatusOr<XGBoostSpec> XGBoostSpec::LoadFile(const std::string& path,
                                                  const XGBoostLoadOptions& options) {
  ASSIGN_OR_RETURN(CheckedFile file, ReadFileChecked(path, options.max_file_bytes));
  return Parse(file.bytes, path, options);
}

float TransformMargin(Objective objective, float margin) {
  if (objective != Objective::kBinaryLogistic) return margin;
  // XGBoost 1.7's common::Sigmoid: exp's argument capped at 88.7 so that a
  // very negative margin gives a tiny probability (3e-39), not exp overflow
  // and 0; the epsilon is below float resolution next to 1 but kept, as it is
  // in XGBoost, for the same rounding.
  constexpr float kEpsilon = 1e-16f;
  const float exponent = std::min(-margin, 88.7f);
  return 1.0f / (std::exp(exponent) + 1.0f + kEpsilon);
}

float XGBoostSpec::PredictMargin(const float* row) const {
  float sum = base_margin_;
  for (const XGBoostTree& tree : trees_) {
    int32_t node = 0;
    while (!tree.IsLeaf(node)) node = tree.Next(node, row[tree.split_feature[node]]);
    sum += tree.value[node];
  }
  return sum;
}

UsedFeatures CompactUsedFeatures(const XGBoostSpec& model) {
  UsedFeatures used;
  used.compact.assign(model.num_features(), -1);
  for (const XGBoostTree& tree : model.trees()) {
    std::vector<int32_t> stack = {0};  // Reachable nodes only: the loader checked those.
    while (!stack.empty()) {
      const int32_t node = stack.back();
      stack.pop_back();
      if (tree.IsLeaf(node)) continue;
      used.compact[tree.split_feature[node]] = 0;
      stack.push_back(tree.left[node]);
      stack.push_back(tree.right[node]);
    }
  }
  for (size_t f = 0; f < used.compact.size(); ++f) {
    if (used.compact[f] < 0) continue;
    used.compact[f] = static_cast<int32_t>(used.features.size());
    used.features.push_back(static_cast<int32_t>(f));
  }
  return used;
}

absl::StatusOr<std::vector<int>> XGBoostSpec::BindFeatures(absl::Span<const std::string> columns,
                                                           bool allow_unbound) const {
  absl::flat_hash_map<absl::string_view, int> by_name;
  for (size_t i = 0; i < columns.size(); ++i) by_name.emplace(columns[i], static_cast<int>(i));
  std::vector<int> bound(feature_names_.size(), -1);
  std::vector<absl::string_view> unbound;
  for (size_t f = 0; f < feature_names_.size(); ++f) {
    auto it = by_name.find(feature_names_[f]);
    if (it != by_name.end()) {
      bound[f] = it->second;
    } else {
      unbound.push_back(feature_names_[f]);
    }
  }
  if (!unbound.empty() && !allow_unbound) {
    return WithReason(absl::FailedPreconditionError(absl::StrCat(
                          "no input supplies the model features ", absl::StrJoin(unbound, ", "))),
                      "unknown_feature");
  }
  return bound;
}

}  // namespace rankwire::xgboost
