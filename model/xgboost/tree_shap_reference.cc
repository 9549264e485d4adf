#include "model/xgboost/tree_shap_reference.h"

#include <algorithm>

#include "model/xgboost/node_means.h"

namespace rankwire::xgboost {

struct ReferenceTreeShap::Walk {
  const XGBoostTree& tree;
  const float* row;
  float* phi;  // this tree's contributions
  std::vector<uint8_t>& touched_mark;
  std::vector<int>& touched;  // features phi holds a value for
};

ReferenceTreeShap::ReferenceTreeShap(const XGBoostSpec& model)
    : num_features_(model.num_features()),
      base_margin_(model.base_margin()),
      max_depth_(model.max_depth()),
      trees_(model.trees()) {
  mean_.reserve(trees_.size());
  for (const XGBoostTree& tree : trees_) mean_.push_back(NodeMeans(tree));
}

size_t ReferenceTreeShap::MemoryBytes() const {
  size_t bytes =
      trees_.capacity() * sizeof(XGBoostTree) + mean_.capacity() * sizeof(std::vector<float>);
  for (const XGBoostTree& t : trees_) {
    bytes +=
        (t.left.capacity() + t.right.capacity() + t.split_feature.capacity()) * sizeof(int32_t) +
        (t.value.capacity() + t.cover.capacity()) * sizeof(float) + t.default_left.capacity();
  }
  for (const std::vector<float>& m : mean_) bytes += m.capacity() * sizeof(float);
  return bytes;
}

namespace internal {

// One element of the path of unique features from the root to a node: the
// fraction of "zero" (feature absent: rows split by cover) and "one"
// (feature present: the row's own way) paths through its splits, and the
// permutation weight of subsets with this element's index of ones.
struct ShapPathElement {
  int feature;
  float zero_fraction;
  float one_fraction;
  float weight;
};

}  // namespace internal

namespace {

using PathElement = internal::ShapPathElement;

// The paper's EXTEND: adds a split on `feature` to the path of unique
// features, updating the permutation weights of every subset size.
void Extend(PathElement* path, int depth, float zero_fraction, float one_fraction, int feature) {
  path[depth] = {feature, zero_fraction, one_fraction, depth == 0 ? 1.0f : 0.0f};
  for (int i = depth - 1; i >= 0; --i) {
    path[i + 1].weight += one_fraction * path[i].weight * (i + 1) / static_cast<float>(depth + 1);
    path[i].weight = zero_fraction * path[i].weight * (depth - i) / static_cast<float>(depth + 1);
  }
}

// The paper's UNWIND: removes element `index` from the path, undoing its
// EXTEND.
void Unwind(PathElement* path, int depth, int index) {
  const float one = path[index].one_fraction;
  const float zero = path[index].zero_fraction;
  float next = path[depth].weight;
  for (int i = depth - 1; i >= 0; --i) {
    if (one != 0) {
      const float kept = path[i].weight;
      path[i].weight = next * (depth + 1) / static_cast<float>((i + 1) * one);
      next = kept - path[i].weight * zero * (depth - i) / static_cast<float>(depth + 1);
    } else {
      path[i].weight = path[i].weight * (depth + 1) / static_cast<float>(zero * (depth - i));
    }
  }
  for (int i = index; i < depth; ++i) {
    path[i].feature = path[i + 1].feature;
    path[i].zero_fraction = path[i + 1].zero_fraction;
    path[i].one_fraction = path[i + 1].one_fraction;
  }
}

// The total permutation weight the path would have without element `index`
// (UNWIND's sum, without changing the path).
float UnwoundSum(const PathElement* path, int depth, int index) {
  const float one = path[index].one_fraction;
  const float zero = path[index].zero_fraction;
  float next = path[depth].weight;
  float total = 0;
  for (int i = depth - 1; i >= 0; --i) {
    if (one != 0) {
      const float w = next * (depth + 1) / static_cast<float>((i + 1) * one);
      total += w;
      next = path[i].weight - w * zero * ((depth - i) / static_cast<float>(depth + 1));
    } else if (zero != 0) {
      total += (path[i].weight / zero) / ((depth - i) / static_cast<float>(depth + 1));
    }
  }
  return total;
}

}  // namespace

void ReferenceTreeShap::Recurse(Walk& walk, int32_t node, PathElement* parent_path, int depth,
                                float zero_fraction, float one_fraction, int feature) const {
  const XGBoostTree& tree = walk.tree;
  PathElement* path = parent_path + depth + 1;
  std::copy(parent_path, parent_path + depth + 1, path);
  Extend(path, depth, zero_fraction, one_fraction, feature);
  if (tree.IsLeaf(node)) {
    for (int i = 1; i <= depth; ++i) {
      const float w = UnwoundSum(path, depth, i);
      const PathElement& e = path[i];
      walk.phi[e.feature] += w * (e.one_fraction - e.zero_fraction) * tree.value[node];
      if (!walk.touched_mark[e.feature]) {
        walk.touched_mark[e.feature] = 1;
        walk.touched.push_back(e.feature);
      }
    }
    return;
  }
  const int split = tree.split_feature[node];
  const int32_t hot = tree.Next(node, walk.row[split]);
  const int32_t cold = hot == tree.left[node] ? tree.right[node] : tree.left[node];
  const float cover = tree.cover[node];
  const float hot_zero = tree.cover[hot] / cover;
  const float cold_zero = tree.cover[cold] / cover;
  float incoming_zero = 1;
  float incoming_one = 1;
  // A feature split on again: undo its earlier element and redo it here.
  int k = 0;
  while (k <= depth && path[k].feature != split) ++k;
  if (k <= depth) {
    incoming_zero = path[k].zero_fraction;
    incoming_one = path[k].one_fraction;
    Unwind(path, depth, k);
    --depth;
  }
  Recurse(walk, hot, path, depth + 1, hot_zero * incoming_zero, incoming_one, split);
  Recurse(walk, cold, path, depth + 1, cold_zero * incoming_zero, 0, split);
}

void ReferenceTreeShap::Contributions(const float* row, double* out) const {
  const size_t bias = num_features_;
  std::vector<float> total(num_features_ + 1, 0.0f);
  std::vector<float> phi(num_features_ + 1, 0.0f);
  std::vector<uint8_t> touched_mark(num_features_ + 1, 0);
  std::vector<int> touched;
  const int max_path = max_depth_ + 2;
  std::vector<PathElement> path((max_path * (max_path + 1)) / 2 + 1, PathElement{0, 0, 0, 0});
  for (size_t t = 0; t < trees_.size(); ++t) {
    // Per tree then into the total, in float, as XGBoost sums them.
    phi[bias] = mean_[t][0];
    touched.assign(1, static_cast<int>(bias));
    touched_mark[bias] = 1;
    Walk walk{trees_[t], row, phi.data(), touched_mark, touched};
    Recurse(walk, 0, path.data(), 0, 1.0f, 1.0f, -1);
    for (int f : touched) {
      total[f] += phi[f];
      phi[f] = 0.0f;
      touched_mark[f] = 0;
    }
  }
  total[bias] += base_margin_;
  for (size_t f = 0; f <= bias; ++f) out[f] = total[f];
}

}  // namespace rankwire::xgboost
