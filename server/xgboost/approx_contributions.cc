#include "server/xgboost/approx_contributions.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "server/xgboost/node_means.h"

namespace rankwire::xgb {

ApproxContributions::ApproxContributions(const XGBoostModel& model)
    : num_features_(model.num_features()),
      compact_feature_(model.num_features(), -1),
      bias_(ContributionBias(model)) {
  for (const XGBoostTree& tree : model.trees()) {
    std::vector<int32_t> stack = {0};  // reachable nodes only: the loader checked those
    while (!stack.empty()) {
      const int32_t node = stack.back();
      stack.pop_back();
      if (tree.IsLeaf(node)) continue;
      compact_feature_[tree.split_feature[node]] = 0;
      stack.push_back(tree.left[node]);
      stack.push_back(tree.right[node]);
    }
  }
  for (size_t f = 0; f < num_features_; ++f) {
    if (compact_feature_[f] < 0) continue;
    compact_feature_[f] = static_cast<int32_t>(used_features_.size());
    used_features_.push_back(static_cast<int32_t>(f));
  }
  for (const XGBoostTree& tree : model.trees()) AddTree(tree);
  nodes_.shrink_to_fit();
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
         (used_features_.capacity() + compact_feature_.capacity()) * sizeof(int32_t);
}

void ApproxContributions::Contributions(const float* rows, size_t n_rows, size_t row_stride,
                                        float* out) const {
  const size_t width = num_features_ + 1;
  const size_t used = used_features_.size();
  std::fill(out, out + n_rows * width, 0.0f);
  // Each row's used features twice: missing as -inf (a node whose missing
  // values go left reads that one) and as +inf. x < threshold then picks
  // the child with no test for missing values (thresholds are finite).
  // Per row, this tree's sums per used feature (XGBoost's this_tree_contribs)
  // and the features its path split on, to add to the totals and reset.
  thread_local std::vector<float> copies, this_tree;
  thread_local std::vector<uint32_t> path;
  uint32_t path_size[kRows];
  copies.resize(std::max<size_t>(1, size_t{kRows} * 2 * used));
  this_tree.assign(std::max<size_t>(1, size_t{kRows} * used), 0.0f);
  path.resize(std::max<size_t>(1, size_t{kRows} * max_depth_));
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
    float* sums = out + first * width;
    for (const Tree& tree : trees_) {
      WalkTree(tree, count, copies.data(), this_tree.data(), path.data(), path_size, sums, width);
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
  for (size_t r = 0; r < n_rows; ++r) out[r * width + num_features_] = bias_;
}

}  // namespace rankwire::xgb
