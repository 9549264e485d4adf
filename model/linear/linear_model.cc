#include "model/linear/linear_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/target_clones.h"
#include "model/vector_math.h"

namespace rankwire {
namespace {

using Linear = LinearSpec;

// A constant input (user, context, or an item feature the request lacks).
void Fill(double* out, size_t n, double value) { std::fill(out, out + n, value); }

// What the model adds to the result and the line, from its heads and terms.
std::shared_ptr<const ModelOutputs> OutputsOf(const Linear& model) {
  auto out = std::make_shared<ModelOutputs>();
  const uint32_t heads = static_cast<uint32_t>(model.heads().size());
  uint32_t terms = 0;
  for (const Linear::Head& h : model.heads()) terms += static_cast<uint32_t>(h.terms.size());
  // Columns: p per head, logit per head, each term's contribution, boost.
  out->value_columns = 2 * heads + terms + 1;
  for (uint32_t h = 0; h < heads; ++h) {
    out->metrics.push_back({absl::StrCat("score.", model.heads()[h].name), MetricType::kDouble, h});
  }
  uint32_t t = 0;
  for (uint32_t h = 0; h < heads; ++h) {
    const Linear::Head& head = model.heads()[h];
    out->log.push_back({absl::StrCat(" | ", head.name, " p="), h});
    out->log.push_back({" logit=", heads + h});
    for (const Linear::Term& term : head.terms) {
      // Per-input contributions of the heads the file marks "explain"; every
      // head's contributions are in the log line.
      if (head.explain) {
        out->metrics.push_back({absl::StrCat("contrib.", head.name, ".", term.input),
                                MetricType::kFloat, 2 * heads + t});
      }
      out->log.push_back({absl::StrCat(" ", term.input, ":"), 2 * heads + t});
      ++t;
    }
  }
  out->log.push_back({" | boost=", 2 * heads + terms});
  return out;
}

}  // namespace

LinearModel::LinearModel(LinearSpec model) : model_(std::move(model)) {
  // Each name once, in first-use order.
  auto index_in = [](std::vector<std::string>& names, const std::string& name) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) it = names.insert(names.end(), name);
    return static_cast<int>(it - names.begin());
  };
  for (const Linear::Atom& atom : model_.atoms()) {
    switch (atom.source) {
      case Linear::Source::kItem:
        atom_feature_.push_back(index_in(inputs_.item, atom.name));
        continue;
      case Linear::Source::kUser:
        index_in(inputs_.user, atom.name);
        break;
      case Linear::Source::kContext:
        index_in(inputs_.context, atom.name);
        break;
    }
    atom_feature_.push_back(-1);
  }
  for (const Linear::Head& h : model_.heads()) terms_ += h.terms.size();
  outputs_ = OutputsOf(model_);
}

namespace linear_internal {

// What ScoreBlocks reads: the request's item feature columns and the
// model's heads and terms, flattened.
struct AtomPlan {
  const float* column = nullptr;  // Null: a constant, already in the block.
  LinearSpec::TransformKind transform = LinearSpec::TransformKind::kIdentity;
  double a = 0, b = 0;
};
struct ScorePlan {
  const AtomPlan* atoms;
  size_t atom_count;
  const LinearSpec* model;
  size_t terms;
  const double* source_boost;
  const uint32_t* source_code;
  double** contrib_columns;  // Room for the most terms a head has.
};

// Items are scored kBlock at a time: a block's transformed inputs
// (atoms x kBlock doubles, 10 KB for the shipped model), its logits and
// its running log score stay in L1 while every head and term reads them,
// instead of each pass over all n items streaming them through L2.
constexpr size_t kBlock = 64;

// The block's transformed item inputs (the constant ones are filled once
// per request by the caller).
inline void BindBlock(const ScorePlan& plan, size_t c0, size_t m, double* __restrict atoms) {
  using Kind = LinearSpec::TransformKind;
  for (size_t a = 0; a < plan.atom_count; ++a) {
    const AtomPlan& at = plan.atoms[a];
    if (at.column == nullptr) continue;
    const float* __restrict in = at.column + c0;
    double* __restrict out = atoms + a * kBlock;
    switch (at.transform) {
      case Kind::kIdentity:
        for (size_t c = 0; c < m; ++c) out[c] = in[c];
        break;
      case Kind::kLog1p:
        for (size_t c = 0; c < m; ++c) out[c] = std::max(static_cast<double>(in[c]), 0.0);
        Log1pNonNegativeArray(out, out, m);
        break;
      case Kind::kClip: {
        const double lo = at.a, hi = at.b;
        for (size_t c = 0; c < m; ++c) out[c] = std::clamp(static_cast<double>(in[c]), lo, hi);
        break;
      }
      case Kind::kScale: {
        const double d = at.a;
        for (size_t c = 0; c < m; ++c) out[c] = in[c] / d;
        break;
      }
    }
  }
}

// One head over one block: its terms' contributions and its logit (into
// their value columns), p, and e * log p into log_score.
inline void HeadBlock(const LinearSpec::Head& h, const double* __restrict atoms, size_t m,
                      double* __restrict logit, double* __restrict p,
                      double* const* __restrict contrib_columns, double* __restrict log_score,
                      double* __restrict tmp) {
  for (size_t c = 0; c < m; ++c) logit[c] = h.bias;
  size_t t = 0;
  for (const LinearSpec::Term& term : h.terms) {
    double* __restrict contrib = contrib_columns[t++];
    const double* __restrict lhs = atoms + static_cast<size_t>(term.lhs) * kBlock;
    const double* __restrict rhs = atoms + static_cast<size_t>(term.rhs) * kBlock;
    const double w = term.weight;
    switch (term.op) {
      case LinearSpec::Op::kAtom:
        for (size_t c = 0; c < m; ++c) contrib[c] = w * lhs[c];
        break;
      case LinearSpec::Op::kProduct:
        for (size_t c = 0; c < m; ++c) contrib[c] = w * (lhs[c] * rhs[c]);
        break;
      case LinearSpec::Op::kAbsDiff:
        for (size_t c = 0; c < m; ++c) contrib[c] = w * std::fabs(lhs[c] - rhs[c]);
        break;
    }
    for (size_t c = 0; c < m; ++c) logit[c] += contrib[c];
  }
  // p = 1 / (1 + exp(-logit)); log p = -log1p(exp(-logit)).
  for (size_t c = 0; c < m; ++c) p[c] = -logit[c];
  ExpArray(p, p, m);  // exp(-logit), for now.
  if (h.exponent != 0) {
    Log1pNonNegativeArray(p, tmp, m);
    for (size_t c = 0; c < m; ++c) log_score[c] -= h.exponent * tmp[c];
  }
  for (size_t c = 0; c < m; ++c) p[c] = 1.0 / (1.0 + p[c]);
}

// Every block: the same arithmetic, element by element and in the same
// order, as one pass per term over all items did (so the same bits), in
// AVX-512, AVX2 or SSE2 vectors as the CPU has them (no FMA in any clone:
// -ffp-contract=off in CMakeLists.txt keeps every host's scores alike).
RANKWIRE_TARGET_CLONES("avx512f", "avx2", "default")
void ScoreBlocks(const ScorePlan& plan, size_t n, double* score, double* values, double* scratch) {
  const std::vector<LinearSpec::Head>& heads = plan.model->heads();
  const size_t head_count = heads.size();
  double* atoms = scratch;
  double* log_score = atoms + plan.atom_count * kBlock;
  double* tmp = log_score + kBlock;
  double** contrib_columns = plan.contrib_columns;
  for (size_t c0 = 0; c0 < n; c0 += kBlock) {
    const size_t m = std::min(kBlock, n - c0);
    BindBlock(plan, c0, m, atoms);
    for (size_t c = 0; c < m; ++c) log_score[c] = 0.0;  // sum_h e_h log p_h
    size_t t = 0;
    for (size_t hi = 0; hi < head_count; ++hi) {
      const LinearSpec::Head& h = heads[hi];
      for (size_t j = 0; j < h.terms.size(); ++j) {
        contrib_columns[j] = values + (2 * head_count + t + j) * n + c0;
      }
      HeadBlock(h, atoms, m, values + (head_count + hi) * n + c0, values + hi * n + c0,
                contrib_columns, log_score, tmp);
      t += h.terms.size();
    }
    // score = boost * prod_h p_h^e_h = boost * exp(sum_h e_h log p_h).
    ExpArray(log_score, score + c0, m);
    double* __restrict boost = values + (2 * head_count + plan.terms) * n + c0;
    const uint32_t* __restrict code = plan.source_code + c0;
    for (size_t c = 0; c < m; ++c) {
      boost[c] = plan.source_boost[code[c]];
      score[c0 + c] *= boost[c];
    }
  }
}

}  // namespace linear_internal

void LinearModel::Score(const ScoreInput& in, double* score, double* values) const {
  using linear_internal::kBlock;
  const size_t n = in.n;
  const size_t atom_count = model_.atoms().size();
  thread_local std::vector<double> scratch, source_boost;
  thread_local std::vector<linear_internal::AtomPlan> atoms;
  thread_local std::vector<double*> contrib_columns;
  scratch.resize((atom_count + 2) * kBlock);
  atoms.resize(atom_count);
  // Each atom: a request column to transform block by block, or a constant
  // (user and context inputs, features the request lacks) put in the
  // block's row once.
  for (size_t a = 0; a < atom_count; ++a) {
    const Linear::Atom& atom = model_.atoms()[a];
    linear_internal::AtomPlan& plan = atoms[a];
    plan = {nullptr, atom.transform, atom.a, atom.b};
    double constant = 0;
    if (atom.source != Linear::Source::kItem) {
      double raw = 0;
      if (atom.source == Linear::Source::kUser) {
        const double* value = in.request.FindUserFeature(atom.name);
        raw = value == nullptr ? 0.0 : *value;
      } else {
        const absl::string_view* value = in.request.FindContext(atom.name);
        if (value == nullptr || !absl::SimpleAtod(*value, &raw) || !std::isfinite(raw)) raw = 0;
      }
      constant = Linear::ApplyTransform(atom, raw);
    } else if (const int col = in.column[static_cast<size_t>(atom_feature_[a])]; col >= 0) {
      plan.column = in.features + static_cast<size_t>(col) * n;
      continue;
    }  // Else a feature the request does not carry: 0.
    Fill(scratch.data() + a * kBlock, kBlock, constant);
  }
  source_boost.resize(in.sources.size());
  for (size_t k = 0; k < in.sources.size(); ++k) source_boost[k] = model_.Boost(in.sources[k]);
  size_t most_terms = 0;
  for (const Linear::Head& h : model_.heads()) most_terms = std::max(most_terms, h.terms.size());
  contrib_columns.resize(most_terms);
  const linear_internal::ScorePlan plan{
      atoms.data(),          atom_count, &model_, terms_, source_boost.data(), in.source_code,
      contrib_columns.data()};
  linear_internal::ScoreBlocks(plan, n, score, values, scratch.data());
}

}  // namespace rankwire
