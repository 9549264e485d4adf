#include "server/linear_scorer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/vector_math.h"

namespace rankwire::server {
namespace {

using Linear = LinearModel;

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

LinearScorer::LinearScorer(LinearModel model) : model_(std::move(model)) {
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

void LinearScorer::BindAtoms(const RequestView& request, const float* features,
                             const std::vector<int>& column, size_t n, double* atoms) const {
  for (size_t a = 0; a < model_.atoms().size(); ++a) {
    const Linear::Atom& atom = model_.atoms()[a];
    double* out = atoms + a * n;
    if (atom.source != Linear::Source::kItem) {
      double raw = 0;
      if (atom.source == Linear::Source::kUser) {
        const double* value = request.FindUserFeature(atom.name);
        raw = value == nullptr ? 0.0 : *value;
      } else {
        const absl::string_view* value = request.FindContext(atom.name);
        if (value == nullptr || !absl::SimpleAtod(*value, &raw) || !std::isfinite(raw)) raw = 0;
      }
      Fill(out, n, Linear::ApplyTransform(atom, raw));
      continue;
    }
    const int col = column[static_cast<size_t>(atom_feature_[a])];
    if (col < 0) {
      Fill(out, n, 0.0);  // A feature the request does not carry is 0.
      continue;
    }
    const float* in = features + static_cast<size_t>(col) * n;
    switch (atom.transform) {
      case Linear::TransformKind::kIdentity:
        for (size_t c = 0; c < n; ++c) out[c] = in[c];
        break;
      case Linear::TransformKind::kLog1p:
        for (size_t c = 0; c < n; ++c) out[c] = std::max(static_cast<double>(in[c]), 0.0);
        Log1pNonNegativeArray(out, out, n);
        break;
      case Linear::TransformKind::kClip:
        for (size_t c = 0; c < n; ++c) {
          out[c] = std::clamp(static_cast<double>(in[c]), atom.a, atom.b);
        }
        break;
      case Linear::TransformKind::kScale:
        for (size_t c = 0; c < n; ++c) out[c] = in[c] / atom.a;
        break;
    }
  }
}

void LinearScorer::Score(const ScoreInput& in, double* score, double* values) const {
  const size_t n = in.n;
  thread_local std::vector<double> atoms, log_score, source_boost;
  atoms.resize(model_.atoms().size() * n);
  BindAtoms(in.request, in.features, in.column, n, atoms.data());
  const size_t heads = model_.heads().size();
  log_score.assign(n, 0.0);  // sum_h e_h log p_h
  size_t t = 0;
  for (size_t hi = 0; hi < heads; ++hi) {
    const Linear::Head& h = model_.heads()[hi];
    double* p = values + hi * n;
    double* logit = values + (heads + hi) * n;
    Fill(logit, n, h.bias);
    for (const Linear::Term& term : h.terms) {
      double* contrib = values + (2 * heads + t) * n;
      const double* lhs = atoms.data() + static_cast<size_t>(term.lhs) * n;
      const double* rhs = atoms.data() + static_cast<size_t>(term.rhs) * n;
      const double w = term.weight;
      switch (term.op) {
        case Linear::Op::kAtom:
          for (size_t c = 0; c < n; ++c) contrib[c] = w * lhs[c];
          break;
        case Linear::Op::kProduct:
          for (size_t c = 0; c < n; ++c) contrib[c] = w * (lhs[c] * rhs[c]);
          break;
        case Linear::Op::kAbsDiff:
          for (size_t c = 0; c < n; ++c) contrib[c] = w * std::fabs(lhs[c] - rhs[c]);
          break;
      }
      for (size_t c = 0; c < n; ++c) logit[c] += contrib[c];
      ++t;
    }
    // p = 1 / (1 + exp(-logit)); log p = -log1p(exp(-logit)).
    for (size_t c = 0; c < n; ++c) p[c] = -logit[c];
    ExpArray(p, p, n);  // exp(-logit), for now.
    if (h.exponent != 0) {
      Log1pNonNegativeArray(p, score, n);  // `score` is scratch until the end.
      for (size_t c = 0; c < n; ++c) log_score[c] -= h.exponent * score[c];
    }
    for (size_t c = 0; c < n; ++c) p[c] = 1.0 / (1.0 + p[c]);
  }
  // score = boost * prod_h p_h^e_h = boost * exp(sum_h e_h log p_h); the
  // boost per distinct recall source (a handful), then per candidate.
  ExpArray(log_score.data(), score, n);
  double* boost = values + (2 * heads + terms_) * n;
  source_boost.resize(in.sources.size());
  for (size_t k = 0; k < in.sources.size(); ++k) source_boost[k] = model_.Boost(in.sources[k]);
  for (size_t c = 0; c < n; ++c) {
    boost[c] = source_boost[in.source_code[c]];
    score[c] *= boost[c];
  }
}

}  // namespace rankwire::server
