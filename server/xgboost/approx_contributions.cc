#include "server/xgboost/approx_contributions.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  leaf_steps_.shrink_to_fit();
  steps_.shrink_to_fit();
}

void ApproxContributions::AddTree(const XGBoostTree& tree) {
  const std::vector<float> mean = NodeMeans(tree);
  const uint32_t first = static_cast<uint32_t>(nodes_.size());
  trees_.push_back({first, static_cast<uint32_t>(tree.depth)});
  // Depth first from the root, numbering reachable nodes from `first`:
  // (node, its number, the steps from the root to it).
  struct Pending {
    int32_t node;
    uint32_t number;
    std::vector<Step> path;
  };
  std::vector<Pending> stack;
  stack.push_back({0, first, {}});
  nodes_.emplace_back();
  leaf_steps_.emplace_back();
  while (!stack.empty()) {
    Pending p = std::move(stack.back());
    stack.pop_back();
    if (tree.IsLeaf(p.node)) {
      nodes_[p.number] = {static_cast<int32_t>(p.number), 0, std::nanf("")};
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
    const auto left = static_cast<uint32_t>(nodes_.size());
    const uint32_t right = left + 1;
    nodes_.resize(nodes_.size() + 2);
    leaf_steps_.resize(leaf_steps_.size() + 2);
    nodes_[p.number] = {
        static_cast<int32_t>(left),
        static_cast<uint32_t>(2 * compact_feature_[feature] + (tree.default_left[p.node] ? 0 : 1)),
        tree.value[p.node]};
    for (const auto& [child, number] :
         {std::pair{tree.right[p.node], right}, std::pair{tree.left[p.node], left}}) {
      std::vector<Step> path = p.path;
      path.push_back({static_cast<uint32_t>(feature), mean[child] - mean[p.node]});
      stack.push_back({child, number, std::move(path)});
    }
  }
}

size_t ApproxContributions::MemoryBytes() const {
  return trees_.capacity() * sizeof(Tree) + nodes_.capacity() * sizeof(Node) +
         leaf_steps_.capacity() * sizeof(StepRange) + steps_.capacity() * sizeof(Step);
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
    float* sums = out + first * width;
    int32_t at[kRows];
    for (const Tree& tree : trees_) {
      std::fill(at, at + count, static_cast<int32_t>(tree.first_node));
      // Every row takes `depth` steps; a leaf steps to itself.
      for (uint32_t level = 0; level < tree.depth; ++level) {
        for (size_t r = 0; r < count; ++r) {
          const Node& n = nodes_[at[r]];
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
  for (size_t r = 0; r < n_rows; ++r) out[r * width + num_features_] = bias_;
}

}  // namespace rankwire::xgb
