#include "server/xgboost/tree_shap.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "server/xgboost/node_means.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define RANKWIRE_HAVE_AVX512_KERNEL 1
#define RANKWIRE_TARGET_AVX512 __attribute__((target("avx512f")))
#else
#define RANKWIRE_HAVE_AVX512_KERNEL 0
#endif

namespace rankwire::xgb {

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
// into its own constants (PairConstants).
//
// Its constants start at consts_[consts] (m: the tree's quadrature points):
//   the edge's (EdgeConstants; none for the root): m + 1 floats for a
//   feature's first edge on the path, 3m + 2 for a feature split again
//   (prev_depth != 0), the last one the earlier edge's `consts` as bits;
//   then a pair's (PairConstants): 4m + 1 floats, the last one its split's
//   feature (in the tree's feature list) as bits.
struct ShapNode {
  float value;         // internal: split threshold; leaf: leaf value
  int32_t slot;        // internal: the block row its split reads; leaf: -1
  uint32_t consts;     // in consts_
  uint32_t feature;    // the edge's feature, in the tree's feature list
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

// A uint32 stored among the float constants.
float Bits(uint32_t value) {
  float f;
  std::memcpy(&f, &value, sizeof f);
  return f;
}

// The per-point constants of an edge (zc: the product of the cover
// fractions of the path's edges on its feature, this one included; oc: the
// product of their "one"s, 0 or 1; t, w: the quadrature):
//   D1[k] = C1[k] - C0[k], where an edge's contribution is
//           sum_k S[k] * (C0[k] + oc * D1[k]): C1 = (1 - zc) w / (zc (1-t) + t)
//           divides out the factor when oc = 1, C0 = -w / (1-t) when oc = 0;
// then, for the feature's first edge on the path,
//   zc: the factor zc (1-t) + oc t is zc + (oc - zc) t;
// or, for a feature split again (zp, op: the earlier edge's zc and oc; z
// this edge's own cover fraction; earlier: its constants' offset), the
// factor that replaces the earlier one:
//   z, A[k], B[k], earlier: z + op * A + oc * B, which is z when op = 0,
//           zc (1-t) / (zp (1-t) + t) when op = 1 and oc = 0, and
//           (zc (1-t) + t) / (zp (1-t) + t) when op = oc = 1.
void EdgeConstants(const std::vector<double>& t, const std::vector<double>& w, double z, double zc,
                   bool repeat, double zp, uint32_t earlier, std::vector<float>* out) {
  const size_t m = t.size();
  for (size_t k = 0; k < m; ++k) {
    const double c1 = (1 - zc) * w[k] / (zc * (1 - t[k]) + t[k]);
    const double c0 = -w[k] / (1 - t[k]);
    out->push_back(static_cast<float>(c1 - c0));
  }
  if (!repeat) {
    out->push_back(static_cast<float>(zc));
    return;
  }
  out->push_back(static_cast<float>(z));
  std::vector<double> r10(m), r11(m);
  for (size_t k = 0; k < m; ++k) {
    const double before = zp * (1 - t[k]) + t[k];
    r10[k] = zc * (1 - t[k]) / before;
    r11[k] = (zc * (1 - t[k]) + t[k]) / before;
  }
  for (size_t k = 0; k < m; ++k) out->push_back(static_cast<float>(r10[k] - z));
  for (size_t k = 0; k < m; ++k) out->push_back(static_cast<float>(r11[k] - r10[k]));
  out->push_back(Bits(earlier));
}

// A pair's constants: its leaf sum is q * (A + o * B) and its split's
// contribution sum_k q * (C + o * D), where q is the pair node's product of
// factors and o its rows' "goes left" (0 or 1). From the two leaf edges'
// own (fresh feature: zc = z): S = q * v * (z (1-t) + o t) per leaf, and
// each edge's contribution S * (C0 + o D1) with o^2 = o.
void PairConstants(const std::vector<double>& t, const std::vector<double>& w, double z_left,
                   double v_left, double z_right, double v_right, uint32_t feature,
                   std::vector<float>* out) {
  const size_t m = t.size();
  std::vector<double> a(m), b(m), c(m), d(m);
  for (size_t k = 0; k < m; ++k) {
    const double c0 = -w[k] / (1 - t[k]);
    const double c1_left = (1 - z_left) * w[k] / (z_left * (1 - t[k]) + t[k]);
    const double c1_right = (1 - z_right) * w[k] / (z_right * (1 - t[k]) + t[k]);
    // One leaf's (z (1-t) + o t)(C0 + o D1) = P + o R.
    const double p_left = z_left * (1 - t[k]) * c0;
    const double r_left = z_left * (1 - t[k]) * (c1_left - c0) + t[k] * c1_left;
    const double p_right = z_right * (1 - t[k]) * c0;
    const double r_right = z_right * (1 - t[k]) * (c1_right - c0) + t[k] * c1_right;
    // The right leaf's o is 1 - o.
    a[k] = (v_left * z_left + v_right * z_right) * (1 - t[k]) + v_right * t[k];
    b[k] = (v_left - v_right) * t[k];
    c[k] = v_left * p_left + v_right * (p_right + r_right);
    d[k] = v_left * r_left - v_right * r_right;
  }
  for (const std::vector<double>* column : {&a, &b, &c, &d}) {
    for (double x : *column) out->push_back(static_cast<float>(x));
  }
  out->push_back(Bits(feature));
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
  std::vector<double> t, w;
  std::vector<int32_t> local;  // used feature -> index in this tree's list (-1)
  struct PathEdge {
    int32_t feature;  // model feature
    int depth;        // of the node it leads to
    float zc;
    uint32_t consts;
  };
  std::vector<PathEdge> path;
  struct Edge {
    int32_t feature;
    float z;
    bool left;
  };

  uint32_t Local(int32_t feature);
  const PathEdge* Earlier(int32_t feature) const;
  void AddEdge(const Edge& edge, int depth, ShapNode* n);
  void Visit(int32_t node, int depth, const Edge* edge);
};

// The index of model feature `feature` in this tree's feature list, added
// when new.
uint32_t TreeShap::Builder::Local(int32_t feature) {
  const int32_t used = shap->compact_feature_[feature];
  if (local[used] < 0) {
    local[used] =
        static_cast<int32_t>(shap->tree_features_.size() - shap->trees_.back().first_feature);
    shap->tree_features_.push_back(static_cast<uint32_t>(used));
  }
  return static_cast<uint32_t>(local[used]);
}

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
  n->feature = Local(edge.feature);
  const PathEdge* earlier = Earlier(edge.feature);
  // As XGBoost: the cover fractions multiplied in float.
  const float zc = earlier != nullptr ? edge.z * earlier->zc : edge.z;
  n->consts = static_cast<uint32_t>(shap->consts_.size());
  if (earlier != nullptr) n->prev_depth = static_cast<uint8_t>(earlier->depth);
  EdgeConstants(t, w, edge.z, zc, earlier != nullptr, earlier != nullptr ? earlier->zc : 0,
                earlier != nullptr ? earlier->consts : 0, &shap->consts_);
  path.push_back({edge.feature, depth, zc, n->consts});
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
  n.slot = 2 * shap->compact_feature_[feature] + (tree.default_left[node] ? 0 : 1);
  const uint32_t split_local = Local(feature);
  const float cover = tree.cover[node];
  const Edge left_edge{feature, tree.cover[left] / cover, true};
  const Edge right_edge{feature, tree.cover[right] / cover, false};
  if (tree.IsLeaf(left) && tree.IsLeaf(right) && Earlier(feature) == nullptr) {
    n.kind = kPair;
    PairConstants(t, w, left_edge.z, tree.value[left], right_edge.z, tree.value[right], split_local,
                  &shap->consts_);
    shap->nodes_.push_back(n);
  } else {
    shap->nodes_.push_back(n);
    Visit(left, depth + 1, &left_edge);
    Visit(right, depth + 1, &right_edge);
  }
  if (edge != nullptr) path.pop_back();
}

bool TreeShap::Avx512Available() {
#if RANKWIRE_HAVE_AVX512_KERNEL
  return __builtin_cpu_supports("avx512f");
#else
  return false;
#endif
}

TreeShap::TreeShap(const XGBoostModel& model, Kernel kernel)
    : num_features_(model.num_features()),
      bias_(ContributionBias(model)),
      compact_feature_(model.num_features(), -1) {
  if (kernel == Kernel::kAuto) kernel = Avx512Available() ? Kernel::kAvx512 : Kernel::kPortable;
  kernel_ = kernel;
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
  std::vector<int32_t> scratch_path;
  for (const XGBoostTree& tree : model.trees()) {
    const int longest = LongestUniquePath(tree, 0, &scratch_path);
    const int points = std::min(kMaxPoints, std::max(1, (longest + 1) / 2));
    trees_.push_back(ShapTree{static_cast<uint32_t>(nodes_.size()), 0,
                              static_cast<uint32_t>(tree_features_.size()), 0,
                              static_cast<uint32_t>(points)});
    Builder builder{this, tree, {}, {}, std::vector<int32_t>(used_features_.size(), -1), {}};
    GaussLegendre(points, &builder.t, &builder.w);
    builder.Visit(0, 0, nullptr);
    ShapTree& t = trees_.back();
    t.num_nodes = static_cast<uint32_t>(nodes_.size() - t.first_node);
    t.num_features = static_cast<uint32_t>(tree_features_.size() - t.first_feature);
    max_depth_ = std::max(max_depth_, tree.depth);
    max_points_ = std::max(max_points_, points);
    max_tree_features_ = std::max<size_t>(max_tree_features_, t.num_features);
  }
  for (int m = 1; m <= max_points_; ++m) {
    std::vector<double> t, w;
    GaussLegendre(m, &t, &w);
    for (int k = 0; k < m; ++k) quadrature_.push_back(static_cast<float>(t[k]));
    for (int k = 0; k < m; ++k) quadrature_.push_back(static_cast<float>(-w[k] / (1 - t[k])));
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

// What the kernel reads and writes for one block of rows.
struct KernelArgs {
  const ShapTree* trees;
  size_t num_trees;
  const ShapNode* nodes;
  const float* consts;
  const uint32_t* tree_features;
  const float* quadrature;
  const LaneBox* block;  // per slot: the rows' values (NaN as -inf, +inf)
  LaneBox* total;        // per used feature: the rows' sums over trees
  LaneBox* phi;          // per tree feature: this tree's contributions
  LaneBox* q;            // per depth, per point: the product of factors
  LaneBox* s;            // per depth, per point: the subtree's leaf sums
  LaneBox* oc;           // per depth: the edge's "one" (0 or 1)
  LaneBox* left;         // per depth: 1 where the row goes left at that node
  uint32_t* open;        // per depth: the node whose edge is still open
};

// The kernel's functions take the tree's quadrature size as kPoints (1..4,
// the trees up to depth 8, unrolled) or 0 (any, from the tree).
template <int kPoints>
inline __attribute__((always_inline)) uint32_t PointsOf(const ShapTree& tree) {
  return kPoints > 0 ? kPoints : tree.points;
}

// A uint32 stored among the float constants.
inline __attribute__((always_inline)) uint32_t BitsAt(const float* at) {
  uint32_t value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

// Closes the edge into node n, whose leaf sums are s and "one" oc: adds
// its contribution to its feature and its leaf sums to its parent's (the
// left child, closed first, sets them; the right one adds).
template <int kPoints>
inline __attribute__((always_inline)) void CloseEdge(const KernelArgs& a, const ShapNode& n,
                                                     uint32_t points, const float* c0,
                                                     const Lanes* s, const Lanes& oc) {
  if (kPoints > 0) points = kPoints;
  const float* d1 = a.consts + n.consts;
  Lanes* parent = &a.s[(n.depth - 1) * points].v;
  Lanes acc = s[0] * (c0[0] + oc * d1[0]);
  for (uint32_t k = 1; k < points; ++k) acc += s[k] * (c0[k] + oc * d1[k]);
  if (n.left) {
    for (uint32_t k = 0; k < points; ++k) parent[k] = s[k];
  } else {
    for (uint32_t k = 0; k < points; ++k) parent[k] += s[k];
  }
  if (n.prev_depth != 0) {
    const float* p1 = a.consts + BitsAt(d1 + 3 * points + 1);  // the earlier edge's D1
    const Lanes op = a.oc[n.prev_depth].v;
    for (uint32_t k = 0; k < points; ++k) acc -= s[k] * (c0[k] + op * p1[k]);
  }
  a.phi[n.feature].v += acc;
}

// The edge into node n (depth > 0): its "one" into *oc and its factor times
// the parent's products into q.
template <int kPoints>
inline __attribute__((always_inline)) void OpenEdge(const KernelArgs& a, const ShapNode& n,
                                                    uint32_t points, const float* t, Lanes* oc,
                                                    Lanes* q) {
  if (kPoints > 0) points = kPoints;
  const int depth = n.depth;
  const Lanes go_left = a.left[depth - 1].v;
  const Lanes o = n.left ? go_left : (Lanes{} + 1.0f) - go_left;
  const float* c = a.consts + n.consts + points;  // past D1
  const Lanes* up = &a.q[(depth - 1) * points].v;
  if (n.prev_depth == 0) {
    *oc = o;
    const float zc = c[0];
    const Lanes slope = o - zc;
    for (uint32_t k = 0; k < points; ++k) q[k] = up[k] * (zc + slope * t[k]);
  } else {
    const Lanes op = a.oc[n.prev_depth].v;
    *oc = o * op;
    const float z = c[0];
    const float* ca = c + 1;
    const float* cb = ca + points;
    for (uint32_t k = 0; k < points; ++k) q[k] = up[k] * (z + op * ca[k] + *oc * cb[k]);
  }
}

// A pair node's leaf sums into s and its split's contribution
// (PairConstants), for rows going left where go_left is 1.
template <int kPoints>
inline __attribute__((always_inline)) void Pair(const KernelArgs& a, const ShapNode& n,
                                                uint32_t points, const Lanes& go_left) {
  if (kPoints > 0) points = kPoints;
  const uint32_t edge = n.depth == 0 ? 0 : n.prev_depth == 0 ? points + 1 : 3 * points + 2;
  const float* ca = a.consts + n.consts + edge;
  const float* cb = ca + points;
  const float* cc = cb + points;
  const float* cd = cc + points;
  const Lanes* q = &a.q[n.depth * points].v;
  Lanes* s = &a.s[n.depth * points].v;
  Lanes acc = q[0] * (cc[0] + go_left * cd[0]);
  s[0] = q[0] * (ca[0] + go_left * cb[0]);
  for (uint32_t k = 1; k < points; ++k) {
    acc += q[k] * (cc[k] + go_left * cd[k]);
    s[k] = q[k] * (ca[k] + go_left * cb[k]);
  }
  a.phi[BitsAt(cd + points)].v += acc;
}

// One tree's contributions for the block's rows, into a.phi. Internal
// nodes stay open (their products, "one" and leaf sums kept per depth)
// until the walk leaves their subtree; a leaf's edge opens and closes at
// once.
template <int kPoints>
inline __attribute__((always_inline)) void ExplainTree(const KernelArgs& a, const ShapTree& tree) {
  const ShapNode* nodes = a.nodes + tree.first_node;
  const uint32_t points = PointsOf<kPoints>(tree);
  const float* t = a.quadrature + points * (points - 1);
  const float* c0 = t + points;
  const LaneMask one_bits = LaneMask{} + 0x3f800000;  // 1.0f
  for (uint32_t k = 0; k < points; ++k) a.q[k].v = Lanes{} + 1.0f;
  int top = 0;  // the deepest open node's depth
  for (uint32_t i = 0; i < tree.num_nodes; ++i) {
    const ShapNode& n = nodes[i];
    const int depth = n.depth;
    for (; top >= depth && top > 0; --top) {
      const ShapNode& open = nodes[a.open[top]];
      CloseEdge<kPoints>(a, open, points, c0, &a.s[top * points].v, a.oc[top].v);
    }
    if (n.kind == kLeaf) {
      if (depth == 0) break;  // a tree of one leaf: nothing to explain
      if (kPoints > 0) {
        Lanes s[kPoints > 0 ? kPoints : 1], oc;
        OpenEdge<kPoints>(a, n, points, t, &oc, s);
        for (uint32_t k = 0; k < points; ++k) s[k] *= n.value;
        CloseEdge<kPoints>(a, n, points, c0, s, oc);
      } else {
        Lanes* s = &a.q[depth * points].v;  // free: a leaf has no children
        OpenEdge<kPoints>(a, n, points, t, &a.oc[depth].v, s);
        for (uint32_t k = 0; k < points; ++k) s[k] *= n.value;
        CloseEdge<kPoints>(a, n, points, c0, s, a.oc[depth].v);
      }
      top = depth - 1;
      continue;
    }
    if (depth > 0) {
      OpenEdge<kPoints>(a, n, points, t, &a.oc[depth].v, &a.q[depth * points].v);
      a.open[depth] = i;
    }
    const LaneMask goes_left = a.block[n.slot].v < (Lanes{} + n.value);
    const Lanes go_left = (Lanes)(goes_left & one_bits);  // 1.0f or 0.0f per lane
    if (n.kind == kPair) {
      Pair<kPoints>(a, n, points, go_left);
    } else {
      a.left[depth].v = go_left;
    }
    top = depth;
  }
  for (; top > 0; --top) {
    const ShapNode& open = nodes[a.open[top]];
    CloseEdge<kPoints>(a, open, points, c0, &a.s[top * points].v, a.oc[top].v);
  }
}

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
      a.total[features[f]].v += a.phi[f].v;
      a.phi[f].v = Lanes{};
    }
  }
}

#if RANKWIRE_HAVE_AVX512_KERNEL
RANKWIRE_TARGET_AVX512 void ExplainTreesAvx512(const KernelArgs& a) { ExplainTrees(a); }
#endif
void ExplainTreesPortable(const KernelArgs& a) { ExplainTrees(a); }

}  // namespace

struct TreeShap::Scratch {
  std::vector<LaneBox> block, total, phi, q, s, oc, left;
  std::vector<uint32_t> open;
};

void TreeShap::ExplainBlock(const float* rows, size_t count, size_t row_stride, float* out) const {
  thread_local Scratch scratch;
  Scratch& s = scratch;
  const size_t used = used_features_.size();
  const size_t levels = static_cast<size_t>(max_depth_) + 1;
  s.block.resize(2 * used);
  s.total.assign(used, LaneBox{});
  s.phi.assign(max_tree_features_, LaneBox{});
  s.q.resize(levels * max_points_);
  s.s.resize(levels * max_points_);
  s.oc.resize(levels);
  s.left.resize(levels);
  s.open.resize(levels);
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
  const KernelArgs args{trees_.data(),         trees_.size(),      nodes_.data(),  consts_.data(),
                        tree_features_.data(), quadrature_.data(), s.block.data(), s.total.data(),
                        s.phi.data(),          s.q.data(),         s.s.data(),     s.oc.data(),
                        s.left.data(),         s.open.data()};
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
  for (size_t r = 0; r < count; ++r)
    std::fill(out + r * width, out + r * width + num_features_, 0.0f);
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

}  // namespace rankwire::xgb
