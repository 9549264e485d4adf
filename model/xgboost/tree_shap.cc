#include "model/xgboost/tree_shap.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "model/xgboost/avx512.h"
#include "model/xgboost/node_means.h"

namespace rankwire::xgboost {

namespace internal {

struct ShapTree {
  uint32_t first_node;
  uint32_t num_nodes;
  uint32_t first_feature;  // in tree_features_
  uint32_t num_features;
  uint32_t points;  // quadrature points: ceil(longest unique path / 2), >= 1
};

// A node in depth-first order, with the edge from its parent (root: none).
// A node whose children are both leaves, on a feature not split on above
// it, is a "pair": its children are not listed, their edges are folded
// into its own constants.
//
// consts_[consts] holds (m: the tree's quadrature points) for an edge on a
// feature split again above it (prev_depth != 0), RepeatConstants' 4m + 3
// floats; then, for a pair, PairConstants' 4.
struct ShapNode {
  float value;         // internal: split threshold; leaf: leaf value
  float zc;            // the edge's "zero": its feature's cover fractions on the path, multiplied
  int32_t slot;        // internal: the block row its split reads (2 * used feature + default)
  uint32_t consts;     // in consts_
  uint8_t depth;       // root: 0
  uint8_t prev_depth;  // the path's earlier edge on the same feature's depth; 0: none
  uint8_t left;        // 1: its parent's left child
  uint8_t kind;        // kInternal, kLeaf or kPair
};
constexpr uint8_t kInternal = 0;
constexpr uint8_t kLeaf = 1;
constexpr uint8_t kPair = 2;

}  // namespace internal

namespace {

using internal::kInternal;
using internal::kLeaf;
using internal::kPair;
using internal::ShapNode;
using internal::ShapTree;

constexpr int kMaxPoints = 64;

// Gauss-Legendre quadrature on [0, 1] with m points: points t and weights w
// (they integrate polynomials of degree < 2m exactly).
void GaussLegendre(int m, std::vector<double>* t, std::vector<double>* w) {
  t->assign(m, 0);
  w->assign(m, 0);
  for (int i = 0; i < (m + 1) / 2; ++i) {
    double x = std::cos(M_PI * (i + 0.75) / (m + 0.5));
    double derivative = 1;
    for (int iteration = 0; iteration < 100; ++iteration) {
      double p1 = 1, p2 = 0;
      for (int j = 1; j <= m; ++j) {
        const double p3 = p2;
        p2 = p1;
        p1 = ((2 * j - 1) * x * p2 - (j - 1) * p3) / j;
      }
      derivative = m * (x * p1 - p2) / (x * x - 1);
      const double previous = x;
      x = previous - p1 / derivative;
      if (std::abs(x - previous) < 1e-16) break;
    }
    const double weight = 1 / ((1 - x * x) * derivative * derivative);  // 2/(...) halved
    (*t)[i] = (1 - x) / 2;
    (*t)[m - 1 - i] = (1 + x) / 2;
    (*w)[i] = (*w)[m - 1 - i] = weight;
  }
}

// The constants of an edge on a feature the path split on before (zp, op:
// that earlier edge's "zero" and "one"; z: this edge's own cover fraction;
// zc = z * zp, oc = o * op: the feature's combined ones; t: the quadrature
// points), in this order:
//   z, zc, zp;
//   A[k], B[k]: the factor that replaces the earlier one, z + op A + oc B:
//       z when op = 0 (the earlier factor zp (1-t) times z), and
//       (zc (1-t) + oc t) / (zp (1-t) + t) when op = 1;
//   G0[k], GD[k]: 1 / (the earlier factor), G0 + op GD: 1 / (zp (1-t)) when
//       op = 0 (0 when zp = 0: the terms it multiplies then have a zero
//       coefficient), 1 / (zp (1-t) + t) when op = 1.
void RepeatConstants(const std::vector<double>& t, double z, double zc, double zp,
                     std::vector<float>* out) {
  const size_t m = t.size();
  std::vector<double> a(m), b(m), g0(m), gd(m);
  for (size_t k = 0; k < m; ++k) {
    const double before = zp * (1 - t[k]) + t[k];
    const double r10 = zc * (1 - t[k]) / before;
    const double r11 = (zc * (1 - t[k]) + t[k]) / before;
    a[k] = r10 - z;
    b[k] = r11 - r10;
    const double off = zp * (1 - t[k]);
    g0[k] = off > std::numeric_limits<float>::min() ? 1 / off : 0;
    gd[k] = 1 / before - g0[k];
  }
  for (double x : {z, zc, zp}) out->push_back(static_cast<float>(x));
  for (const std::vector<double>* column : {&a, &b, &g0, &gd}) {
    for (double x : *column) out->push_back(static_cast<float>(x));
  }
}

// The most distinct features on one root-to-leaf path below `node`, given
// those above it in `path`.
int LongestUniquePath(const XGBoostTree& tree, int32_t node, std::vector<int32_t>* path) {
  if (tree.IsLeaf(node)) return static_cast<int>(path->size());
  const int32_t feature = tree.split_feature[node];
  const bool fresh = std::find(path->begin(), path->end(), feature) == path->end();
  if (fresh) path->push_back(feature);
  const int longest = std::max(LongestUniquePath(tree, tree.left[node], path),
                               LongestUniquePath(tree, tree.right[node], path));
  if (fresh) path->pop_back();
  return longest;
}

}  // namespace

// Lays out one tree: nodes in depth-first order, each edge's constants.
struct TreeShap::Builder {
  TreeShap* shap;
  const XGBoostTree& tree;
  std::vector<double> t;
  std::vector<bool> in_tree;  // per used feature: in this tree's list
  struct PathEdge {
    int32_t feature;  // model feature
    int depth;        // of the node it leads to
    float zc;
  };
  std::vector<PathEdge> path;
  struct Edge {
    int32_t feature;
    float z;
    bool left;
  };

  const PathEdge* Earlier(int32_t feature) const;
  void AddEdge(const Edge& edge, int depth, ShapNode* n);
  void Visit(int32_t node, int depth, const Edge* edge);
};

// The path's latest edge on `feature`, or null.
const TreeShap::Builder::PathEdge* TreeShap::Builder::Earlier(int32_t feature) const {
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    if (it->feature == feature) return &*it;
  }
  return nullptr;
}

// Fills n's edge fields and constants, and extends the path with it.
void TreeShap::Builder::AddEdge(const Edge& edge, int depth, ShapNode* n) {
  n->left = edge.left ? 1 : 0;
  const PathEdge* earlier = Earlier(edge.feature);
  // As XGBoost: the cover fractions multiplied in float.
  n->zc = earlier != nullptr ? edge.z * earlier->zc : edge.z;
  if (earlier != nullptr) {
    n->prev_depth = static_cast<uint8_t>(earlier->depth);
    RepeatConstants(t, edge.z, n->zc, earlier->zc, &shap->consts_);
  }
  path.push_back({edge.feature, depth, n->zc});
}

void TreeShap::Builder::Visit(int32_t node, int depth, const Edge* edge) {
  ShapNode n{};
  n.depth = static_cast<uint8_t>(depth);
  n.value = tree.value[node];
  n.slot = -1;
  n.kind = tree.IsLeaf(node) ? kLeaf : kInternal;
  n.consts = static_cast<uint32_t>(shap->consts_.size());
  if (edge != nullptr) AddEdge(*edge, depth, &n);
  if (n.kind == kLeaf) {
    shap->nodes_.push_back(n);
    if (edge != nullptr) path.pop_back();
    return;
  }
  const int32_t feature = tree.split_feature[node];
  const int32_t left = tree.left[node];
  const int32_t right = tree.right[node];
  const int32_t used = shap->compact_feature_[feature];
  n.slot = 2 * used + (tree.default_left[node] ? 0 : 1);
  if (!in_tree[used]) {
    in_tree[used] = true;
    shap->tree_features_.push_back(static_cast<uint32_t>(used));
  }
  const float cover = tree.cover[node];
  const Edge left_edge{feature, tree.cover[left] / cover, true};
  const Edge right_edge{feature, tree.cover[right] / cover, false};
  if (tree.IsLeaf(left) && tree.IsLeaf(right) && Earlier(feature) == nullptr) {
    // The children's zeros, then their values.
    n.kind = kPair;
    for (float x : {left_edge.z, right_edge.z, tree.value[left], tree.value[right]}) {
      shap->consts_.push_back(x);
    }
    shap->nodes_.push_back(n);
  } else {
    shap->nodes_.push_back(n);
    Visit(left, depth + 1, &left_edge);
    Visit(right, depth + 1, &right_edge);
  }
  if (edge != nullptr) path.pop_back();
}

bool TreeShap::Avx512Available() { return CpuHasAvx512F(); }

TreeShap::TreeShap(const XGBoostSpec& model, Kernel kernel)
    : num_features_(model.num_features()), bias_(ContributionBias(model)) {
  if (kernel == Kernel::kAuto) kernel = Avx512Available() ? Kernel::kAvx512 : Kernel::kPortable;
  kernel_ = kernel;
  UsedFeatures used = CompactUsedFeatures(model);
  used_features_ = std::move(used.features);
  compact_feature_ = std::move(used.compact);
  std::vector<int32_t> scratch_path;
  for (const XGBoostTree& tree : model.trees()) {
    const int longest = LongestUniquePath(tree, 0, &scratch_path);
    const int points = std::min(kMaxPoints, std::max(1, (longest + 1) / 2));
    trees_.push_back(ShapTree{static_cast<uint32_t>(nodes_.size()), 0,
                              static_cast<uint32_t>(tree_features_.size()), 0,
                              static_cast<uint32_t>(points)});
    Builder builder{this, tree, {}, std::vector<bool>(used_features_.size(), false), {}};
    std::vector<double> w;
    GaussLegendre(points, &builder.t, &w);
    builder.Visit(0, 0, nullptr);
    ShapTree& t = trees_.back();
    t.num_nodes = static_cast<uint32_t>(nodes_.size() - t.first_node);
    t.num_features = static_cast<uint32_t>(tree_features_.size() - t.first_feature);
    max_depth_ = std::max(max_depth_, tree.depth);
    max_points_ = std::max(max_points_, points);
  }
  for (int m = 1; m <= max_points_; ++m) {
    std::vector<double> t, w;
    GaussLegendre(m, &t, &w);
    for (int k = 0; k < m; ++k) quadrature_.push_back(static_cast<float>(t[k]));
    for (int k = 0; k < m; ++k) quadrature_.push_back(static_cast<float>(w[k]));
  }
  nodes_.shrink_to_fit();
  consts_.shrink_to_fit();
  tree_features_.shrink_to_fit();
}

TreeShap::~TreeShap() = default;
TreeShap::TreeShap(TreeShap&&) noexcept = default;
TreeShap& TreeShap::operator=(TreeShap&&) noexcept = default;

size_t TreeShap::MemoryBytes() const {
  return trees_.capacity() * sizeof(ShapTree) + nodes_.capacity() * sizeof(ShapNode) +
         consts_.capacity() * sizeof(float) + tree_features_.capacity() * sizeof(uint32_t) +
         (used_features_.capacity() + compact_feature_.capacity()) * sizeof(int32_t) +
         quadrature_.capacity() * sizeof(float);
}

absl::string_view TreeShap::kernel_name() const {
  return kernel_ == Kernel::kAvx512 ? "avx512" : "portable";
}

namespace {

// kLanes floats: one value per row of a block. GCC's and Clang's vector
// extension: plain arithmetic on it compiles to one instruction per
// operation with AVX-512, and to several with narrower vector units.
typedef float Lanes __attribute__((vector_size(TreeShap::kLanes * sizeof(float))));
typedef int32_t LaneMask __attribute__((vector_size(TreeShap::kLanes * sizeof(int32_t))));
// Lanes in a struct, so containers hold them without dropping the
// attribute.
struct alignas(64) LaneBox {
  Lanes v;
};

// What the kernel reads and writes for one block of rows. Per depth d, for
// the open node there (its subtree not yet finished):
//   q[d * m + k]: the quadrature weight w_k times the factors of the path's
//       edges down to it, at point t_k (the product for its subtree's edges'
//       "other features");
//   u[d * m + k]: its finished children's leaf values times their subtree's
//       factors below it;
//   f[d * m + k]: its own edge's factor; oc[d]: its edge's "one";
//   left[d]: 1 where the row goes left at it.
struct KernelArgs {
  const ShapTree* trees;
  size_t num_trees;
  const ShapNode* nodes;
  const float* consts;
  const uint32_t* tree_features;
  const float* quadrature;
  const LaneBox* block;  // per slot: the rows' values (NaN as -inf, +inf)
  LaneBox* total;        // per used feature: the rows' sums over trees
  LaneBox* phi;          // per used feature: this tree's contributions
  LaneBox* q;
  LaneBox* u;
  LaneBox* f;
  LaneBox* oc;
  LaneBox* left;
  uint32_t* open;     // per depth: the open node
  uint32_t* feature;  // per depth: the open node's split feature (used index)
};

// Where depth d's values start in a per-depth, per-point array.
inline __attribute__((always_inline)) size_t At(int depth, uint32_t points) {
  return static_cast<size_t>(depth) * points;
}

// The kernel's functions take the tree's quadrature size as kPoints (1..4,
// the trees up to depth 8, unrolled) or 0 (any: `points`).
#define RANKWIRE_POINTS(points) (kPoints > 0 ? static_cast<uint32_t>(kPoints) : (points))

// The edge into node n at depth d (> 0): its "one" into *oc and its factor
// at each point into f (a feature's first edge: zc + (oc - zc) t; a feature
// split again: the factor that replaces the earlier one).
template <int kPoints>
inline __attribute__((always_inline)) void Factor(const KernelArgs& a, const ShapNode& n,
                                                  uint32_t points, const float* t, Lanes* oc,
                                                  Lanes* f) {
  points = RANKWIRE_POINTS(points);
  const Lanes go_left = a.left[n.depth - 1].v;
  const Lanes o = n.left ? go_left : (Lanes{} + 1.0f) - go_left;
  if (n.prev_depth == 0) {
    *oc = o;
    const Lanes slope = o - n.zc;
    for (uint32_t k = 0; k < points; ++k) f[k] = n.zc + slope * t[k];
  } else {
    const float* c = a.consts + n.consts;
    const Lanes op = a.oc[n.prev_depth].v;
    *oc = o * op;
    const float z = c[0];
    const float* ca = c + 3;
    const float* cb = ca + points;
    for (uint32_t k = 0; k < points; ++k) f[k] = z + op * ca[k] + *oc * cb[k];
  }
}

// Closes the edge into node n at depth d (> 0), given its subtree's sums u,
// its factor f and "one" oc: adds its contribution to its feature and
// f * u to its parent's sums (the left child, closed first, sets them).
// q_up: the parent's products; q_down: n's (a feature split again only).
template <int kPoints>
inline __attribute__((always_inline)) void CloseEdge(const KernelArgs& a, const ShapNode& n,
                                                     uint32_t points, const Lanes* u,
                                                     const Lanes* f, const Lanes& oc,
                                                     const Lanes* q_down) {
  points = RANKWIRE_POINTS(points);
  const int depth = n.depth;
  const Lanes* q_up = &a.q[At(depth - 1, points)].v;
  Lanes* parent = &a.u[At(depth - 1, points)].v;
  const uint32_t feature = a.feature[depth - 1];
  if (n.prev_depth == 0) {
    Lanes acc = q_up[0] * u[0];
    for (uint32_t k = 1; k < points; ++k) acc += q_up[k] * u[k];
    a.phi[feature].v += (oc - n.zc) * acc;
  } else {
    // Divided by the earlier edge's factor: this edge's leaves, whose own
    // contribution this is, and which the earlier edge must leave out.
    const float* c = a.consts + n.consts;
    const float* g0 = c + 3 + size_t{2} * points;
    const float* gd = g0 + points;
    const Lanes op = a.oc[n.prev_depth].v;
    Lanes own = Lanes{}, earlier = Lanes{};
    for (uint32_t k = 0; k < points; ++k) {
      const Lanes x = u[k] * (g0[k] + op * gd[k]);
      own += q_up[k] * x;
      earlier += q_down[k] * x;
    }
    a.phi[feature].v += (oc - c[1]) * own - (op - c[2]) * earlier;
  }
  if (n.left) {
    for (uint32_t k = 0; k < points; ++k) parent[k] = f[k] * u[k];
  } else {
    for (uint32_t k = 0; k < points; ++k) parent[k] += f[k] * u[k];
  }
}

// Closes the edge into the open node at `depth`.
template <int kPoints>
inline __attribute__((always_inline)) void CloseOpen(const KernelArgs& a, uint32_t points,
                                                     int depth) {
  points = RANKWIRE_POINTS(points);
  CloseEdge<kPoints>(a, a.nodes[a.open[depth]], points, &a.u[At(depth, points)].v,
                     &a.f[At(depth, points)].v, a.oc[depth].v, &a.q[At(depth, points)].v);
}

// A leaf at depth d on a feature's first edge: CloseEdge with the sums u
// its value, in fewer steps.
template <int kPoints>
inline __attribute__((always_inline)) void Leaf(const KernelArgs& a, const ShapNode& n,
                                                uint32_t points, const float* t) {
  points = RANKWIRE_POINTS(points);
  const int depth = n.depth;
  const Lanes go_left = a.left[depth - 1].v;
  const Lanes o = n.left ? go_left : (Lanes{} + 1.0f) - go_left;
  const Lanes* q_up = &a.q[At(depth - 1, points)].v;
  Lanes* parent = &a.u[At(depth - 1, points)].v;
  Lanes sum = q_up[0];
  for (uint32_t k = 1; k < points; ++k) sum += q_up[k];
  a.phi[a.feature[depth - 1]].v += ((o - n.zc) * n.value) * sum;
  // v * (zc + (o - zc) t)
  const float base = n.value * n.zc;
  const Lanes slope = (o - n.zc) * n.value;
  if (n.left) {
    for (uint32_t k = 0; k < points; ++k) parent[k] = base + slope * t[k];
  } else {
    for (uint32_t k = 0; k < points; ++k) parent[k] += base + slope * t[k];
  }
}

// A pair node at depth d: its leaves' sums into u[d] and its split's
// contribution, for rows going left where go_left is 1. With the leaves'
// zeros zl, zr and values vl, vr: u = vl (zl + (o - zl) t) + vr (zr + (1 -
// o - zr) t), and the contribution (o - zl) vl + (1 - o - zr) vr times the
// sum of q[d].
template <int kPoints>
inline __attribute__((always_inline)) void Pair(const KernelArgs& a, const ShapNode& n,
                                                uint32_t points, const float* t,
                                                const Lanes& go_left) {
  points = RANKWIRE_POINTS(points);
  const float* c = a.consts + n.consts + (n.prev_depth != 0 ? 4 * points + 3 : 0);
  const float zl = c[0], zr = c[1], vl = c[2], vr = c[3];
  const float base = vl * zl + vr * zr;
  const Lanes slope = (vr - base) + go_left * (vl - vr);
  const Lanes* q = &a.q[At(n.depth, points)].v;
  Lanes* u = &a.u[At(n.depth, points)].v;
  Lanes sum = q[0];
  u[0] = base + slope * t[0];
  for (uint32_t k = 1; k < points; ++k) {
    sum += q[k];
    u[k] = base + slope * t[k];
  }
  const Lanes coefficient = (vr - zl * vl - zr * vr) + go_left * (vl - vr);
  a.phi[n.slot >> 1].v += coefficient * sum;
}

// One tree's contributions for the block's rows, into a.phi. An internal
// node stays open (its products, sums, factor and "one" kept per depth)
// until the walk leaves its subtree; a leaf's edge opens and closes at
// once.
template <int kPoints>
inline __attribute__((always_inline)) void ExplainTree(const KernelArgs& a, const ShapTree& tree) {
  const ShapNode* nodes = a.nodes + tree.first_node;
  const uint32_t points = RANKWIRE_POINTS(tree.points);
  const float* t = a.quadrature + static_cast<size_t>(points) * (points - 1);
  const float* w = t + points;
  const LaneMask one_bits = LaneMask{} + 0x3f800000;  // 1.0f
  for (uint32_t k = 0; k < points; ++k) a.q[k].v = Lanes{} + w[k];
  a.open[0] = tree.first_node;
  int top = 0;  // the deepest open node's depth
  for (uint32_t i = 0; i < tree.num_nodes; ++i) {
    const ShapNode& n = nodes[i];
    const int depth = n.depth;
    for (; top >= depth && top > 0; --top) CloseOpen<kPoints>(a, points, top);
    if (n.kind == kLeaf) {
      if (depth == 0) break;  // a tree of one leaf: nothing to explain
      if (n.prev_depth == 0) {
        Leaf<kPoints>(a, n, points, t);
        top = depth - 1;
        continue;
      }
      Lanes oc, f[kPoints > 0 ? kPoints : kMaxPoints], u[kPoints > 0 ? kPoints : kMaxPoints],
          q[kPoints > 0 ? kPoints : kMaxPoints];
      Factor<kPoints>(a, n, points, t, &oc, f);
      for (uint32_t k = 0; k < points; ++k) u[k] = Lanes{} + n.value;
      if (n.prev_depth != 0) {
        const Lanes* q_up = &a.q[At(depth - 1, points)].v;
        for (uint32_t k = 0; k < points; ++k) q[k] = q_up[k] * f[k];
      }
      CloseEdge<kPoints>(a, n, points, u, f, oc, q);
      top = depth - 1;
      continue;
    }
    if (depth > 0) {
      Lanes* f = &a.f[At(depth, points)].v;
      Factor<kPoints>(a, n, points, t, &a.oc[depth].v, f);
      const Lanes* q_up = &a.q[At(depth - 1, points)].v;
      Lanes* q = &a.q[At(depth, points)].v;
      for (uint32_t k = 0; k < points; ++k) q[k] = q_up[k] * f[k];
    }
    a.open[depth] = tree.first_node + i;
    a.feature[depth] = static_cast<uint32_t>(n.slot) >> 1;
    const LaneMask goes_left = a.block[n.slot].v < (Lanes{} + n.value);
    const Lanes go_left = (Lanes)(goes_left & one_bits);  // 1.0f or 0.0f per lane
    if (n.kind == kPair) {
      Pair<kPoints>(a, n, points, t, go_left);
    } else {
      a.left[depth].v = go_left;
    }
    top = depth;
  }
  for (; top > 0; --top) CloseOpen<kPoints>(a, points, top);
}

#undef RANKWIRE_POINTS

// Every tree for one block: each tree's contributions, then (in float, in
// tree order, as XGBoost) into the totals.
inline __attribute__((always_inline)) void ExplainTrees(const KernelArgs& a) {
  for (size_t i = 0; i < a.num_trees; ++i) {
    const ShapTree& tree = a.trees[i];
    switch (tree.points) {
      case 1:
        ExplainTree<1>(a, tree);
        break;
      case 2:
        ExplainTree<2>(a, tree);
        break;
      case 3:
        ExplainTree<3>(a, tree);
        break;
      case 4:
        ExplainTree<4>(a, tree);
        break;
      default:
        ExplainTree<0>(a, tree);
    }
    const uint32_t* features = a.tree_features + tree.first_feature;
    for (uint32_t f = 0; f < tree.num_features; ++f) {
      a.total[features[f]].v += a.phi[features[f]].v;
      a.phi[features[f]].v = Lanes{};
    }
  }
}

#if RANKWIRE_HAVE_AVX512_KERNEL
RANKWIRE_TARGET_AVX512 void ExplainTreesAvx512(const KernelArgs& a) { ExplainTrees(a); }
#endif
void ExplainTreesPortable(const KernelArgs& a) { ExplainTrees(a); }

}  // namespace

struct TreeShap::Scratch {
  std::vector<LaneBox> block, total, phi, q, u, f, oc, left;
  std::vector<uint32_t> open, feature;
};

void TreeShap::ExplainBlock(const float* rows, size_t count, size_t row_stride, float* out) const {
  thread_local Scratch scratch;
  Scratch& s = scratch;
  const size_t used = used_features_.size();
  const size_t levels = static_cast<size_t>(max_depth_) + 1;
  s.block.resize(2 * used);
  s.total.assign(used, LaneBox{});
  s.phi.assign(used, LaneBox{});
  for (auto* v : {&s.q, &s.u, &s.f}) v->resize(levels * max_points_);
  s.oc.resize(levels);
  s.left.resize(levels);
  s.open.resize(levels);
  s.feature.resize(levels);
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (size_t u = 0; u < used; ++u) {
    const size_t f = static_cast<size_t>(used_features_[u]);
    float* low = reinterpret_cast<float*>(&s.block[2 * u]);
    float* high = reinterpret_cast<float*>(&s.block[2 * u + 1]);
    for (int l = 0; l < kLanes; ++l) {
      const float x = static_cast<size_t>(l) < count ? rows[l * row_stride + f] : 0.0f;
      low[l] = std::isnan(x) ? -kInf : x;
      high[l] = std::isnan(x) ? kInf : x;
    }
  }
  const KernelArgs args{
      trees_.data(),         trees_.size(),      nodes_.data(),  consts_.data(),
      tree_features_.data(), quadrature_.data(), s.block.data(), s.total.data(),
      s.phi.data(),          s.q.data(),         s.u.data(),     s.f.data(),
      s.oc.data(),           s.left.data(),      s.open.data(),  s.feature.data()};
#if RANKWIRE_HAVE_AVX512_KERNEL
  if (kernel_ == Kernel::kAvx512) {
    ExplainTreesAvx512(args);
  } else {
    ExplainTreesPortable(args);
  }
#else
  ExplainTreesPortable(args);
#endif
  const size_t width = num_features_ + 1;
  for (size_t r = 0; r < count; ++r) {
    std::fill(out + r * width, out + r * width + num_features_, 0.0f);
  }
  for (size_t u = 0; u < used; ++u) {
    const float* sums = reinterpret_cast<const float*>(&s.total[u]);
    const size_t f = static_cast<size_t>(used_features_[u]);
    for (size_t r = 0; r < count; ++r) out[r * width + f] = sums[r];
  }
  for (size_t r = 0; r < count; ++r) out[r * width + num_features_] = bias_;
}

void TreeShap::Contributions(const float* rows, size_t n_rows, size_t row_stride,
                             float* out) const {
  for (size_t first = 0; first < n_rows; first += kLanes) {
    const size_t count = std::min<size_t>(kLanes, n_rows - first);
    ExplainBlock(rows + first * row_stride, count, row_stride, out + first * (num_features_ + 1));
  }
}

}  // namespace rankwire::xgboost
