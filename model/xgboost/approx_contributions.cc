#include "model/xgboost/approx_contributions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "model/xgboost/node_means.h"

namespace rankwire::xgboost {

ApproxContributions::ApproxContributions(const XGBoostSpec& model, size_t max_table_bytes)
    : num_features_(model.num_features()), bias_(ContributionBias(model)) {
  UsedFeatures used = CompactUsedFeatures(model);
  used_features_ = std::move(used.features);
  compact_feature_ = std::move(used.compact);
  used_features_.shrink_to_fit();
  if (TableBytes(model) <= max_table_bytes) {
    for (const XGBoostTree& tree : model.trees()) AddTreeTables(tree);
  } else {
    for (const XGBoostTree& tree : model.trees()) AddTree(tree);
  }
  trees_.shrink_to_fit();
  nodes_.shrink_to_fit();
  splits_.shrink_to_fit();
  leaf_steps_.shrink_to_fit();
  steps_.shrink_to_fit();
}

size_t ApproxContributions::TableBytes(const XGBoostSpec& model) const {
  size_t nodes = 0;
  size_t steps = 0;
  for (const XGBoostTree& tree : model.trees()) {
    // Reachable nodes, and per leaf the distinct features on its path.
    std::vector<int32_t> path(static_cast<size_t>(tree.depth) + 1);
    std::vector<std::pair<int32_t, size_t>> stack = {{0, 0}};  // (node, its depth)
    while (!stack.empty()) {
      const auto [node, depth] = stack.back();
      stack.pop_back();
      ++nodes;
      if (!tree.IsLeaf(node)) {
        path[depth] = tree.split_feature[node];
        stack.push_back({tree.left[node], depth + 1});
        stack.push_back({tree.right[node], depth + 1});
        continue;
      }
      for (size_t d = 0; d < depth; ++d) {
        if (std::find(path.begin(), path.begin() + d, path[d]) == path.begin() + d) ++steps;
      }
    }
  }
  return model.trees().size() * sizeof(Tree) + nodes * (sizeof(Split) + sizeof(StepRange)) +
         steps * sizeof(Step) + (used_features_.size() + compact_feature_.size()) * sizeof(int32_t);
}

void ApproxContributions::AddTreeTables(const XGBoostTree& tree) {
  const std::vector<float> mean = NodeMeans(tree);
  const auto first = static_cast<uint32_t>(splits_.size());
  trees_.push_back({first, static_cast<uint32_t>(tree.depth)});
  // Depth first from the root, numbering reachable nodes from `first`,
  // children side by side: (node, its number, the steps from the root).
  struct Pending {
    int32_t node;
    uint32_t number;
    std::vector<Step> path;
  };
  std::vector<Pending> stack;
  stack.push_back({0, first, {}});
  splits_.emplace_back();
  leaf_steps_.emplace_back();
  while (!stack.empty()) {
    Pending p = std::move(stack.back());
    stack.pop_back();
    if (tree.IsLeaf(p.node)) {
      splits_[p.number] = {static_cast<int32_t>(p.number), 0, std::nanf("")};
      // The tree's per-feature sums for a row reaching this leaf, as
      // XGBoost adds its steps: in path order, from 0, in float; then the
      // leaf's own step (its value minus its mean: 0) to the last feature.
      std::vector<Step> sums;
      for (const Step& s : p.path) {
        auto it = std::find_if(sums.begin(), sums.end(),
                               [&](const Step& x) { return x.feature == s.feature; });
        if (it == sums.end()) it = sums.insert(sums.end(), Step{s.feature, 0.0f});
        it->value += s.value;
      }
      if (!p.path.empty()) {
        const uint32_t last = p.path.back().feature;
        for (Step& s : sums) {
          if (s.feature == last) s.value += tree.value[p.node] - mean[p.node];
        }
      }
      leaf_steps_[p.number] = {static_cast<uint32_t>(steps_.size()),
                               static_cast<uint32_t>(sums.size())};
      steps_.insert(steps_.end(), sums.begin(), sums.end());
      continue;
    }
    const int32_t feature = tree.split_feature[p.node];
    const auto left = static_cast<uint32_t>(splits_.size());
    splits_.resize(splits_.size() + 2);
    leaf_steps_.resize(leaf_steps_.size() + 2);
    splits_[p.number] = {
        static_cast<int32_t>(left),
        static_cast<uint32_t>(2 * compact_feature_[feature] + (tree.default_left[p.node] ? 0 : 1)),
        tree.value[p.node]};
    for (const auto& [child, number] :
         {std::pair{tree.right[p.node], left + 1}, std::pair{tree.left[p.node], left}}) {
      std::vector<Step> path = p.path;
      path.push_back({static_cast<uint32_t>(feature), mean[child] - mean[p.node]});
      stack.push_back({child, number, std::move(path)});
    }
  }
}

namespace {

// Per node of `tree`, 1 when an ancestor or a descendant splits on its
// feature (reachable nodes only).
std::vector<uint8_t> SharedSplits(const XGBoostTree& tree) {
  std::vector<uint8_t> shared(tree.left.size(), 0);
  std::vector<int32_t> parent(tree.left.size(), -1);
  std::vector<int32_t> stack = {0};
  while (!stack.empty()) {
    const int32_t node = stack.back();
    stack.pop_back();
    if (tree.IsLeaf(node)) continue;
    for (int32_t up = parent[node]; up >= 0; up = parent[up]) {
      if (tree.split_feature[up] == tree.split_feature[node]) shared[up] = shared[node] = 1;
    }
    for (const int32_t child : {tree.left[node], tree.right[node]}) {
      parent[child] = node;
      stack.push_back(child);
    }
  }
  return shared;
}

}  // namespace

void ApproxContributions::AddTree(const XGBoostTree& tree) {
  const std::vector<float> mean = NodeMeans(tree);
  const auto first = static_cast<uint32_t>(nodes_.size());
  trees_.push_back({first, static_cast<uint32_t>(tree.depth)});
  max_depth_ = std::max<size_t>(max_depth_, static_cast<size_t>(tree.depth));
  // Reachable nodes numbered from `first`, children side by side:
  // (node, its number).
  std::vector<std::pair<int32_t, uint32_t>> stack = {{0, first}};
  nodes_.push_back({static_cast<int32_t>(first), 0, std::nanf(""), {0, 0}, 0});
  const std::vector<uint8_t> shared = SharedSplits(tree);
  while (!stack.empty()) {
    const auto [node, number] = stack.back();
    stack.pop_back();
    if (tree.IsLeaf(node)) continue;
    const int32_t feature = tree.split_feature[node];
    const auto left = static_cast<uint32_t>(nodes_.size());
    for (const int32_t child : {tree.left[node], tree.right[node]}) {
      const auto at = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back({static_cast<int32_t>(at), 0, std::nanf(""), {0, 0}, 0});
      stack.push_back({child, at});
    }
    Node& n = nodes_[number];
    n.left = static_cast<int32_t>(left);
    // As XGBoost: the child's mean minus the node's, in float.
    n.step[0] = mean[tree.left[node]] - mean[node];
    n.step[1] = mean[tree.right[node]] - mean[node];
    n.slot =
        static_cast<uint32_t>(2 * compact_feature_[feature] + (tree.default_left[node] ? 0 : 1));
    n.threshold = tree.value[node];
    n.shared = shared[node];
  }
}

// One tree for `count` rows (copies: their values, see Contributions): each
// step's change in expected value added to the row's total for the split's
// feature (sums, per row), or, for a feature split on twice in the tree, to
// the row's sum for the feature in this tree (this_tree, per row and used
// feature), the feature recorded in path (per row, path_size of them).
void ApproxContributions::WalkTree(const Tree& tree, size_t count, const float* copies,
                                   float* this_tree, uint32_t* path, uint32_t* path_size,
                                   float* sums, size_t width) const {
  const size_t used = used_features_.size();
  int32_t at[kRows];
  std::fill(at, at + count, static_cast<int32_t>(tree.first_node));
  std::fill(path_size, path_size + count, 0);
  for (uint32_t level = 0; level < tree.depth; ++level) {
    for (size_t r = 0; r < count; ++r) {
      const Node& n = nodes_[at[r]];
      const int right = copies[r * 2 * used + n.slot] >= n.threshold ? 1 : 0;
      const uint32_t u = n.slot >> 1;
      // A leaf steps to itself and adds nothing (a zero added to feature
      // 0's total, which changes no value).
      if (n.shared) {
        this_tree[r * used + u] += n.step[right];
        path[r * tree.depth + path_size[r]++] = u;
      } else {
        sums[r * width + used_features_[u]] += n.step[right];
      }
      at[r] = n.left + right;
    }
  }
}

size_t ApproxContributions::MemoryBytes() const {
  return trees_.capacity() * sizeof(Tree) + nodes_.capacity() * sizeof(Node) +
         splits_.capacity() * sizeof(Split) + leaf_steps_.capacity() * sizeof(StepRange) +
         steps_.capacity() * sizeof(Step) +
         (used_features_.capacity() + compact_feature_.capacity()) * sizeof(int32_t);
}

// The lean walk: rows' steps added on the way down (see WalkTree).
void ApproxContributions::WalkAll(size_t count, const float* copies, float* sums,
                                  size_t width) const {
  const size_t used = used_features_.size();
  // Per row, this tree's sums per used feature (XGBoost's this_tree_contribs)
  // and the features its path split on, to add to the totals and reset.
  thread_local std::vector<float> this_tree;
  thread_local std::vector<uint32_t> path;
  uint32_t path_size[kRows];
  this_tree.assign(std::max<size_t>(1, size_t{kRows} * used), 0.0f);
  path.resize(std::max<size_t>(1, size_t{kRows} * max_depth_));
  for (const Tree& tree : trees_) {
    WalkTree(tree, count, copies, this_tree.data(), path.data(), path_size, sums, width);
    // The tree's sums of shared features into the totals, in tree order,
    // as XGBoost; a feature split on twice on the path adds its sum, then 0.
    for (size_t r = 0; r < count; ++r) {
      float* row_sums = sums + r * width;
      float* row_tree = this_tree.data() + r * used;
      const uint32_t* row_path = path.data() + r * tree.depth;
      for (uint32_t level = 0; level < path_size[r]; ++level) {
        const uint32_t u = row_path[level];
        row_sums[used_features_[u]] += row_tree[u];
        row_tree[u] = 0.0f;
      }
    }
  }
}

// The tables: each row walked to its leaf (a leaf steps to itself), then
// the leaf's per-feature sums added to the row's totals, tree by tree.
void ApproxContributions::LookUpAll(size_t count, const float* copies, float* sums,
                                    size_t width) const {
  const size_t used = used_features_.size();
  int32_t at[kRows];
  for (const Tree& tree : trees_) {
    std::fill(at, at + count, static_cast<int32_t>(tree.first_node));
    for (uint32_t level = 0; level < tree.depth; ++level) {
      for (size_t r = 0; r < count; ++r) {
        const Split& n = splits_[at[r]];
        at[r] = n.left + (copies[r * 2 * used + n.slot] >= n.threshold ? 1 : 0);
      }
    }
    for (size_t r = 0; r < count; ++r) {
      float* row_sums = sums + r * width;
      const StepRange range = leaf_steps_[at[r]];
      const Step* s = steps_.data() + range.first;
      for (const Step* end = s + range.count; s != end; ++s) row_sums[s->feature] += s->value;
    }
  }
}

void ApproxContributions::Contributions(const float* rows, size_t n_rows, size_t row_stride,
                                        float* out) const {
  const size_t width = num_features_ + 1;
  const size_t used = used_features_.size();
  std::fill(out, out + n_rows * width, 0.0f);
  // Each row's used features twice: missing as -inf (a node whose missing
  // values go left reads that one) and as +inf. x < threshold then picks
  // the child with no test for missing values (thresholds are finite).
  thread_local std::vector<float> copies;
  copies.resize(std::max<size_t>(1, size_t{kRows} * 2 * used));
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (size_t first = 0; first < n_rows; first += kRows) {
    const size_t count = std::min<size_t>(kRows, n_rows - first);
    for (size_t r = 0; r < count; ++r) {
      const float* row = rows + (first + r) * row_stride;
      float* copy = copies.data() + r * 2 * used;
      for (size_t u = 0; u < used; ++u) {
        const float x = row[used_features_[u]];
        copy[2 * u] = std::isnan(x) ? -kInf : x;
        copy[2 * u + 1] = std::isnan(x) ? kInf : x;
      }
    }
    if (uses_tables()) {
      LookUpAll(count, copies.data(), out + first * width, width);
    } else {
      WalkAll(count, copies.data(), out + first * width, width);
    }
  }
  for (size_t r = 0; r < n_rows; ++r) out[r * width + num_features_] = bias_;
}

}  // namespace rankwire::xgboost
