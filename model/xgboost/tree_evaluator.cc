#include "model/xgboost/tree_evaluator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <utility>

#include "model/xgboost/avx512.h"

namespace rankwire::xgboost {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

bool TreeEvaluator::Avx512Available() { return CpuHasAvx512F(); }

TreeEvaluator::TreeEvaluator(const XGBoostSpec& model, Kernel kernel)
    : num_features_(model.num_features()),
      base_margin_(model.base_margin()),
      objective_(model.objective()) {
  if (kernel == Kernel::kAuto) kernel = Avx512Available() ? Kernel::kAvx512 : Kernel::kScalar;
  kernel_ = kernel;
  UsedFeatures used = CompactUsedFeatures(model);
  used_features_ = std::move(used.features);
  compact_feature_ = std::move(used.compact);
  block_floats_ = (2 * used_features_.size() + 1) * kLanes;
  trees_.reserve(model.trees().size());
  for (const XGBoostTree& tree : model.trees()) {
    if (tree.depth <= kMaxCompleteDepth) {
      AddCompleteTree(tree);
    } else {
      AddCompactTree(tree);
    }
  }
  slot_.shrink_to_fit();
  threshold_.shrink_to_fit();
  child_.shrink_to_fit();
  leaf_.shrink_to_fit();
}

// The block slot a node reads: the feature's copy whose missing values go
// the node's default way (see FillBlock), times the lane count.
int32_t TreeEvaluator::SlotOf(const XGBoostTree& tree, int32_t node) const {
  const int32_t feature = compact_feature_[tree.split_feature[node]];
  const int32_t used = static_cast<int32_t>(used_features_.size());
  const int32_t slot = tree.default_left[node] ? used + feature : feature;
  return slot * kLanes;
}

void TreeEvaluator::AddCompleteTree(const XGBoostTree& tree) {
  const int depth = tree.depth;
  const size_t internal = (size_t{1} << depth) - 1;
  const size_t nodes = slot_.size();
  const size_t leaves = leaf_.size();
  trees_.push_back({static_cast<uint32_t>(nodes), static_cast<uint32_t>(leaves),
                    static_cast<uint16_t>(depth), true});
  // Each level is read with 16-wide (or 32-wide) loads: pad past the end.
  slot_.resize(nodes + internal + kLanes, 0);
  threshold_.resize(nodes + internal + kLanes, 0.0f);
  leaf_.resize(leaves + (size_t{1} << depth) + kLanes, 0.0f);
  const int32_t always_left = static_cast<int32_t>(2 * used_features_.size()) * kLanes;
  // Heap position h at `level` holds XGBoost node `node`; below a leaf that
  // is shallower than the tree, padding nodes go left (the -inf slot).
  struct Position {
    int32_t node;
    size_t heap;
    int level;
  };
  std::vector<Position> stack = {{0, 0, 0}};
  while (!stack.empty()) {
    const Position p = stack.back();
    stack.pop_back();
    if (p.level == depth) {
      leaf_[leaves + p.heap - internal] = tree.value[p.node];
      continue;
    }
    const bool leaf = tree.IsLeaf(p.node);
    slot_[nodes + p.heap] = leaf ? always_left : SlotOf(tree, p.node);
    threshold_[nodes + p.heap] = leaf ? 0.0f : tree.value[p.node];
    stack.push_back({leaf ? p.node : tree.left[p.node], 2 * p.heap + 1, p.level + 1});
    stack.push_back({leaf ? p.node : tree.right[p.node], 2 * p.heap + 2, p.level + 1});
  }
}

void TreeEvaluator::AddCompactTree(const XGBoostTree& tree) {
  const size_t nodes = slot_.size();
  const size_t leaves = leaf_.size();
  trees_.push_back({static_cast<uint32_t>(nodes), static_cast<uint32_t>(leaves),
                    static_cast<uint16_t>(tree.depth), false});
  // Breadth-first renumbering, each node's children side by side.
  std::vector<int32_t> order = {0};
  for (size_t i = 0; i < order.size(); ++i) {
    if (!tree.IsLeaf(order[i])) {
      order.push_back(tree.left[order[i]]);
      order.push_back(tree.right[order[i]]);
    }
  }
  child_.resize(nodes, 0);
  const int32_t always_left = static_cast<int32_t>(2 * used_features_.size()) * kLanes;
  int32_t next_child = 1;
  for (size_t id = 0; id < order.size(); ++id) {
    const int32_t node = order[id];
    if (tree.IsLeaf(node)) {
      // A leaf links to itself through its left (-inf) slot: walking past
      // it for the deeper leaves of other rows leaves a row where it is.
      slot_.push_back(always_left);
      threshold_.push_back(0.0f);
      child_.push_back(static_cast<int32_t>(id));
      leaf_.push_back(tree.value[node]);
    } else {
      slot_.push_back(SlotOf(tree, node));
      threshold_.push_back(tree.value[node]);
      child_.push_back(next_child);
      leaf_.push_back(0.0f);
      next_child += 2;
    }
  }
}

// Transposes n rows (n <= 16) into feature-major order, each used feature
// twice: slot u with missing as +inf (default right), slot U + u with
// missing as -inf (default left); slot 2U is all -inf (always left). Lanes
// past n copy lane 0 so that they walk real paths; their results are dropped.
void TreeEvaluator::FillBlock(const float* rows, size_t n, size_t row_stride, float* block) const {
  const size_t features = used_features_.size();
  float* right = block;
  float* left = block + features * kLanes;
  for (int lane = 0; lane < kLanes; ++lane) {
    const float* row = rows + (static_cast<size_t>(lane) < n ? lane : 0) * row_stride;
    for (size_t f = 0; f < features; ++f) {
      const float x = row[used_features_[f]];
      const bool missing = std::isnan(x);
      right[f * kLanes + lane] = missing ? kInf : x;
      left[f * kLanes + lane] = missing ? -kInf : x;
    }
  }
  std::fill_n(block + 2 * features * kLanes, kLanes, -kInf);
}

void TreeEvaluator::ScoreBlockScalar(const float* block, float* acc) const {
  for (const Tree& tree : trees_) {
    const int32_t* slot = slot_.data() + tree.nodes;
    const float* threshold = threshold_.data() + tree.nodes;
    const float* leaf = leaf_.data() + tree.leaves;
    uint32_t j[kLanes] = {};
    if (tree.complete) {
      for (int level = 0, base = 0; level < tree.depth; ++level, base = 2 * base + 1) {
        for (int lane = 0; lane < kLanes; ++lane) {
          const uint32_t node = base + j[lane];
          const float x = block[slot[node] + lane];
          j[lane] = 2 * j[lane] + !(x < threshold[node]);
        }
      }
    } else {
      const int32_t* child = child_.data() + tree.nodes;
      for (int level = 0; level < tree.depth; ++level) {
        for (int lane = 0; lane < kLanes; ++lane) {
          const uint32_t node = j[lane];
          const float x = block[slot[node] + lane];
          j[lane] = child[node] + !(x < threshold[node]);
        }
      }
    }
    for (int lane = 0; lane < kLanes; ++lane) acc[lane] += leaf[j[lane]];
  }
}

void TreeEvaluator::ScoreBlocks(const float* blocks, int n_blocks, float* acc) const {
  if (kernel_ == Kernel::kAvx512) {
    ScoreBlocksAvx512(blocks, n_blocks, acc);
    return;
  }
  for (int b = 0; b < n_blocks; ++b) {
    ScoreBlockScalar(blocks + b * block_floats_, acc + static_cast<ptrdiff_t>(b) * kLanes);
  }
}

void TreeEvaluator::ScoreMargin(const float* rows, size_t n_rows, size_t row_stride,
                                float* out) const {
  constexpr size_t kPass = size_t{kMaxBlocks} * kLanes;
  std::vector<float> blocks(kMaxBlocks * block_floats_);
  alignas(64) float acc[kPass];
  for (size_t start = 0; start < n_rows; start += kPass) {
    const size_t n = std::min(kPass, n_rows - start);
    const int n_blocks = static_cast<int>((n + kLanes - 1) / kLanes);
    for (int b = 0; b < n_blocks; ++b) {
      const size_t first = start + static_cast<size_t>(b) * kLanes;
      FillBlock(rows + first * row_stride, std::min<size_t>(kLanes, n_rows - first), row_stride,
                blocks.data() + b * block_floats_);
    }
    std::fill_n(acc, kPass, base_margin_);
    ScoreBlocks(blocks.data(), n_blocks, acc);
    std::copy_n(acc, n, out + start);
  }
}

void TreeEvaluator::Score(const float* rows, size_t n_rows, size_t row_stride, float* out) const {
  ScoreMargin(rows, n_rows, row_stride, out);
  if (objective_ == Objective::kBinaryLogistic) {
    for (size_t i = 0; i < n_rows; ++i) out[i] = TransformMargin(objective_, out[i]);
  }
}

size_t TreeEvaluator::MemoryBytes() const {
  return trees_.capacity() * sizeof(Tree) + slot_.capacity() * sizeof(int32_t) +
         (used_features_.capacity() + compact_feature_.capacity()) * sizeof(int32_t) +
         threshold_.capacity() * sizeof(float) + child_.capacity() * sizeof(int32_t) +
         leaf_.capacity() * sizeof(float);
}

absl::string_view TreeEvaluator::kernel_name() const {
  return kernel_ == Kernel::kAvx512 ? "avx512" : "scalar";
}

#if RANKWIRE_HAVE_AVX512_KERNEL

// GCC 12's own AVX-512 intrinsics (permutexvar, i32gather) start from
// _mm512_undefined_*(), which its -Wmaybe-uninitialized flags in every
// caller (a known false positive, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace {

// Entry j (per lane) of an array of `width` entries: a register permute for
// up to 32 entries (the arrays are padded for the 16-wide loads), a gather
// beyond.
RANKWIRE_TARGET_AVX512 inline __m512 LookUp(const float* p, __m512i j, int width) {
  if (width <= 16) return _mm512_permutexvar_ps(j, _mm512_loadu_ps(p));
  if (width == 32) return _mm512_permutex2var_ps(_mm512_loadu_ps(p), j, _mm512_loadu_ps(p + 16));
  return _mm512_i32gather_ps(j, p, 4);
}

RANKWIRE_TARGET_AVX512 inline __m512i LookUp(const int32_t* p, __m512i j, int width) {
  if (width <= 16) return _mm512_permutexvar_epi32(j, _mm512_loadu_si512(p));
  if (width == 32) {
    return _mm512_permutex2var_epi32(_mm512_loadu_si512(p), j, _mm512_loadu_si512(p + 16));
  }
  return _mm512_i32gather_epi32(j, p, 4);
}

// One step down for the 16 rows of a block: 2j + 1 if !(x < threshold).
RANKWIRE_TARGET_AVX512 inline __m512i Step(__m512i base, __m512i slot, __m512 threshold,
                                           const float* block) {
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 x = _mm512_i32gather_ps(_mm512_add_epi32(slot, lane), block, 4);
  const __mmask16 right = _mm512_cmp_ps_mask(x, threshold, _CMP_NLT_UQ);
  return _mm512_mask_add_epi32(base, right, base, _mm512_set1_epi32(1));
}

// The evaluator's arrays, for the kernel (a free function: a member with a
// target attribute that its declaration lacks would be a second version).
struct Arrays {
  const internal::EvalTree* trees;
  size_t n_trees;
  const int32_t* slot;
  const float* threshold;
  const int32_t* child;
  const float* leaf;
  size_t block_floats;
};

constexpr int kLanes = 16;

template <int kBlocks>
RANKWIRE_TARGET_AVX512 void WalkAvx512(const Arrays& a, const float* blocks, float* acc) {
  __m512 sum[kBlocks];
  for (int b = 0; b < kBlocks; ++b)
    sum[b] = _mm512_loadu_ps(acc + static_cast<ptrdiff_t>(b) * kLanes);
  for (size_t i = 0; i < a.n_trees; ++i) {
    const internal::EvalTree& tree = a.trees[i];
    const int32_t* slot = a.slot + tree.nodes;
    const float* threshold = a.threshold + tree.nodes;
    const float* leaf = a.leaf + tree.leaves;
    __m512i j[kBlocks];
    for (int b = 0; b < kBlocks; ++b) j[b] = _mm512_setzero_si512();
    if (tree.complete) {
      for (int level = 0, width = 1; level < tree.depth; ++level, width *= 2) {
        for (int b = 0; b < kBlocks; ++b) {
          const __m512i s = LookUp(slot + width - 1, j[b], width);
          const __m512 t = LookUp(threshold + width - 1, j[b], width);
          j[b] = Step(_mm512_add_epi32(j[b], j[b]), s, t, blocks + b * a.block_floats);
        }
      }
      for (int b = 0; b < kBlocks; ++b) {
        sum[b] = _mm512_add_ps(sum[b], LookUp(leaf, j[b], 1 << tree.depth));
      }
      continue;
    }
    const int32_t* child = a.child + tree.nodes;
    for (int level = 0; level < tree.depth; ++level) {
      for (int b = 0; b < kBlocks; ++b) {
        const __m512i s = _mm512_i32gather_epi32(j[b], slot, 4);
        const __m512 t = _mm512_i32gather_ps(j[b], threshold, 4);
        j[b] = Step(_mm512_i32gather_epi32(j[b], child, 4), s, t, blocks + b * a.block_floats);
      }
    }
    for (int b = 0; b < kBlocks; ++b) {
      sum[b] = _mm512_add_ps(sum[b], _mm512_i32gather_ps(j[b], leaf, 4));
    }
  }
  for (int b = 0; b < kBlocks; ++b)
    _mm512_storeu_ps(acc + static_cast<ptrdiff_t>(b) * kLanes, sum[b]);
}

}  // namespace

void TreeEvaluator::ScoreBlocksAvx512(const float* blocks, int n_blocks, float* acc) const {
  const Arrays arrays = {trees_.data(), trees_.size(), slot_.data(), threshold_.data(),
                         child_.data(), leaf_.data(),  block_floats_};
  switch (n_blocks) {
    case 1:
      return WalkAvx512<1>(arrays, blocks, acc);
    case 2:
      return WalkAvx512<2>(arrays, blocks, acc);
    case 3:
      return WalkAvx512<3>(arrays, blocks, acc);
    default:
      return WalkAvx512<4>(arrays, blocks, acc);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#else

void TreeEvaluator::ScoreBlocksAvx512(const float* blocks, int n_blocks, float* acc) const {
  for (int b = 0; b < n_blocks; ++b) {
    ScoreBlockScalar(blocks + b * block_floats_, acc + static_cast<ptrdiff_t>(b) * kLanes);
  }
}

#endif

}  // namespace rankwire::xgboost
