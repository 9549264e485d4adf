#include "server/ranker.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/vector_math.h"

namespace rankwire::server {
namespace {

using Model = LinearModel;

absl::string_view SceneName(rank::v1::Scene scene) {
  switch (scene) {
    case rank::v1::SCENE_SEARCH:
      return "search";
    case rank::v1::SCENE_DETAIL_PAGE:
      return "detail_page";
    case rank::v1::SCENE_HOME_FEED:
      return "home_feed";
    case rank::v1::SCENE_CART:
      return "cart";
    default:
      return "unspecified";
  }
}

// The context values a log line shows, in line order.
constexpr const char* kLogContextKeys[] = {"query", "device", "hour_of_day", "city_tier"};

// Whether a finite float is a whole number of at most 9.0e15 in magnitude,
// from its bits (no libm call, no branch): below 1 only zero is; from 2^23
// every float is whole; between, the mantissa bits under the binary point
// must be zero.
inline uint8_t SmallWholeNumber(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const uint32_t magnitude = bits & 0x7fffffffu;
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  const uint32_t fraction_bits = exponent < 0 ? 0x7fffffffu
                                 : exponent >= 23 ? 0u
                                                  : (1u << (23 - exponent)) - 1;
  return static_cast<uint8_t>((magnitude & fraction_bits) == 0 && std::fabs(v) <= 9.0e15f);
}

// The candidates' ids, sources, recall ranks and features, column by
// column (feature-major), and per feature whether every value is whole.
void Gather(const rank::v1::RankRequest& request, RankWorkspace* ws) {
  LogValues& v = ws->v;
  const size_t n = static_cast<size_t>(request.candidates_size());
  const size_t f_count = static_cast<size_t>(request.item_feature_names_size());
  v.n = n;
  v.features.resize(f_count * n);
  v.id_ends.resize(n);
  v.recall_rank.resize(n);
  v.source_code.resize(n);
  v.ids.clear();
  v.sources.clear();
  ws->integral.assign(f_count, 1);
  float* features = v.features.data();
  uint8_t* integral = ws->integral.data();
  for (size_t c = 0; c < n; ++c) {
    const rank::v1::Candidate& cand = request.candidates(static_cast<int>(c));
    v.ids.append(cand.item_id());
    v.id_ends[c] = static_cast<uint32_t>(v.ids.size());
    v.recall_rank[c] = cand.recall_rank();
    // Sources repeat (a handful of recall channels): a short list.
    const std::string& source = cand.recall_source();
    uint32_t code = 0;
    while (code < v.sources.size() && v.sources[code] != source) ++code;
    if (code == v.sources.size()) v.sources.push_back(source);
    v.source_code[c] = code;
    const float* row = cand.features().data();  // f_count of them (validated).
    for (size_t f = 0; f < f_count; ++f) {
      features[f * n + c] = row[f];
      integral[f] &= SmallWholeNumber(row[f]);
    }
  }
}

// A constant input (user, context, or an item feature the request lacks).
void Fill(double* out, size_t n, double value) { std::fill(out, out + n, value); }

// Each model input over the candidates, transformed: atoms[a * n + c].
void BindAtoms(const Model& model, const rank::v1::RankRequest& request, RankWorkspace* ws) {
  const size_t n = ws->v.n;
  absl::flat_hash_map<absl::string_view, int> column;
  for (int c = 0; c < request.item_feature_names_size(); ++c) {
    column.emplace(request.item_feature_names(c), c);
  }
  ws->atoms.resize(model.atoms().size() * n);
  for (size_t a = 0; a < model.atoms().size(); ++a) {
    const Model::Atom& atom = model.atoms()[a];
    double* out = ws->atoms.data() + a * n;
    if (atom.source != Model::Source::kItem) {
      double raw = 0;
      if (atom.source == Model::Source::kUser) {
        auto it = request.user_features().find(atom.name);
        raw = it == request.user_features().end() ? 0.0 : it->second;
      } else {
        auto it = request.context().find(atom.name);
        if (it == request.context().end() || !absl::SimpleAtod(it->second, &raw) ||
            !std::isfinite(raw)) {
          raw = 0;
        }
      }
      Fill(out, n, Model::ApplyTransform(atom, raw));
      continue;
    }
    auto it = column.find(atom.name);
    if (it == column.end()) {
      Fill(out, n, 0.0);  // A feature the request does not carry is 0.
      continue;
    }
    const float* in = ws->v.features.data() + static_cast<size_t>(it->second) * n;
    switch (atom.transform) {
      case Model::TransformKind::kIdentity:
        for (size_t c = 0; c < n; ++c) out[c] = in[c];
        break;
      case Model::TransformKind::kLog1p:
        for (size_t c = 0; c < n; ++c) out[c] = std::max(static_cast<double>(in[c]), 0.0);
        Log1pNonNegativeArray(out, out, n);
        break;
      case Model::TransformKind::kClip:
        for (size_t c = 0; c < n; ++c) {
          out[c] = std::clamp(static_cast<double>(in[c]), atom.a, atom.b);
        }
        break;
      case Model::TransformKind::kScale:
        for (size_t c = 0; c < n; ++c) out[c] = in[c] / atom.a;
        break;
    }
  }
}

// Terms, logits, probabilities and scores, a column at a time.
void ScoreHeads(const Model& model, RankWorkspace* ws) {
  LogValues& v = ws->v;
  const size_t n = v.n;
  const size_t heads = model.heads().size();
  size_t terms = 0;
  for (const Model::Head& h : model.heads()) terms += h.terms.size();
  v.contribution.resize(terms * n);
  v.logit.resize(heads * n);
  v.p.resize(heads * n);
  v.score.resize(n);
  ws->scratch.assign(n, 0.0);  // sum_h e_h log p_h
  const double* atoms = ws->atoms.data();
  size_t t = 0;
  for (size_t hi = 0; hi < heads; ++hi) {
    const Model::Head& h = model.heads()[hi];
    double* logit = v.logit.data() + hi * n;
    Fill(logit, n, h.bias);
    for (const Model::Term& term : h.terms) {
      double* contrib = v.contribution.data() + t * n;
      const double* lhs = atoms + static_cast<size_t>(term.lhs) * n;
      const double* rhs = atoms + static_cast<size_t>(term.rhs) * n;
      const double w = term.weight;
      switch (term.op) {
        case Model::Op::kAtom:
          for (size_t c = 0; c < n; ++c) contrib[c] = w * lhs[c];
          break;
        case Model::Op::kProduct:
          for (size_t c = 0; c < n; ++c) contrib[c] = w * (lhs[c] * rhs[c]);
          break;
        case Model::Op::kAbsDiff:
          for (size_t c = 0; c < n; ++c) contrib[c] = w * std::fabs(lhs[c] - rhs[c]);
          break;
      }
      for (size_t c = 0; c < n; ++c) logit[c] += contrib[c];
      ++t;
    }
    // p = 1 / (1 + exp(-logit)); log p = -log1p(exp(-logit)).
    double* p = v.p.data() + hi * n;
    for (size_t c = 0; c < n; ++c) p[c] = -logit[c];
    ExpArray(p, p, n);  // exp(-logit), for now.
    double* log_score = ws->scratch.data();
    if (h.exponent != 0) {
      double* z = v.score.data();  // Scratch until the scores are made.
      Log1pNonNegativeArray(p, z, n);
      for (size_t c = 0; c < n; ++c) log_score[c] -= h.exponent * z[c];
    }
    for (size_t c = 0; c < n; ++c) p[c] = 1.0 / (1.0 + p[c]);
  }
  // score = boost * prod_h p_h^e_h = boost * exp(sum_h e_h log p_h).
  ExpArray(ws->scratch.data(), v.score.data(), n);
  // Boosts per distinct source (a hash lookup each), then per candidate.
  ws->source_boost.resize(v.sources.size());
  for (size_t s = 0; s < v.sources.size(); ++s) ws->source_boost[s] = model.Boost(v.sources[s]);
  v.boost.resize(n);
  for (size_t c = 0; c < n; ++c) {
    v.boost[c] = ws->source_boost[v.source_code[c]];
    v.score[c] *= v.boost[c];
  }
}

// Best first; ties keep request order.
void Order(RankWorkspace* ws) {
  LogValues& v = ws->v;
  const size_t n = v.n;
  ws->sort_keys.resize(n);
  for (size_t c = 0; c < n; ++c) ws->sort_keys[c] = {v.score[c], static_cast<uint32_t>(c)};
  std::sort(ws->sort_keys.begin(), ws->sort_keys.end(),
            [](const std::pair<double, uint32_t>& a, const std::pair<double, uint32_t>& b) {
              return a.first > b.first || (a.first == b.first && a.second < b.second);
            });
  v.order.resize(n);
  for (size_t r = 0; r < n; ++r) v.order[r] = ws->sort_keys[r].second;
}

// The key table for a request with these feature names and integral flags.
void BuildSchema(const Model& model, const rank::v1::RankRequest& request,
                 const std::vector<uint8_t>& integral, RankWorkspace::Schema* k) {
  k->keys.clear();
  k->head.clear();
  k->contrib.clear();
  k->feature.clear();
  auto add = [k](std::string name, MetricType type) {
    k->keys.push_back(MetricKey{std::move(name), type});
    return static_cast<uint32_t>(k->keys.size() - 1);
  };
  k->final_score = add("score.final", MetricType::kDouble);
  for (const Model::Head& h : model.heads()) {
    k->head.push_back(add(absl::StrCat("score.", h.name), MetricType::kDouble));
  }
  // Per-input contributions of the heads the model file marks "explain";
  // every head's contributions are in the log line.
  for (const Model::Head& h : model.heads()) {
    for (const Model::Term& t : h.terms) {
      k->contrib.push_back(!h.explain ? UINT32_MAX
                                      : add(absl::StrCat("contrib.", h.name, ".", t.input),
                                            MetricType::kFloat));
    }
  }
  for (int j = 0; j < request.item_feature_names_size(); ++j) {
    k->feature.push_back(add(absl::StrCat("feat.", request.item_feature_names(j)),
                             integral[j] ? MetricType::kInt : MetricType::kFloat));
  }
  k->source = add("recall.source", MetricType::kString);
  k->recall_rank = add("recall.rank", MetricType::kInt);
  k->pre_rank = add("rank.pre", MetricType::kInt);
  k->bucket = add("exp.bucket", MetricType::kString);
  k->version = add("model.version", MetricType::kString);
}

// The schema of this request, from the workspace's cache when the model,
// feature names and integral flags are the last request's.
const RankWorkspace::Schema& SchemaFor(const Model& model, const rank::v1::RankRequest& request,
                                       RankWorkspace* ws) {
  const auto& names = request.item_feature_names();
  bool same = ws->schema_model == &model && ws->schema_integral == ws->integral &&
              ws->schema_features.size() == static_cast<size_t>(names.size());
  for (int j = 0; same && j < names.size(); ++j) same = ws->schema_features[j] == names[j];
  if (!same) {
    BuildSchema(model, request, ws->integral, &ws->schema);
    ws->schema_model = &model;
    ws->schema_integral = ws->integral;
    ws->schema_features.assign(names.begin(), names.end());
  }
  return ws->schema;
}

// The request-level values of the log lines.
void FillLogHeader(const Model& model, const rank::v1::RankRequest& request, LogValues* v) {
  v->request_id = request.request_id();
  v->request_time_ms = request.request_time_ms();
  v->scene = std::string(SceneName(request.scene()));
  v->user_id = request.user_id();
  v->bucket = model.BucketOf(request.user_id());
  v->model_version = model.full_version();
  v->context.clear();
  for (const char* key : kLogContextKeys) {
    auto it = request.context().find(key);
    if (it != request.context().end()) v->context.emplace_back(key, it->second);
  }
  v->feature_names.assign(request.item_feature_names().begin(),
                          request.item_feature_names().end());
}

// The result's columns, in rank order.
void EmitColumns(const Model& model, const rank::v1::RankRequest& request,
                 const RankWorkspace::Schema& k, const RankWorkspace& ws, RankResult* result) {
  const LogValues& v = ws.v;
  const size_t n = v.n;
  const uint32_t* order = v.order.data();
  double* final_score = result->MutableDoubles(k.final_score);
  for (size_t r = 0; r < n; ++r) final_score[r] = v.score[order[r]];
  for (size_t h = 0; h < k.head.size(); ++h) {
    double* out = result->MutableDoubles(k.head[h]);
    const double* p = v.p.data() + h * n;
    for (size_t r = 0; r < n; ++r) out[r] = p[order[r]];
  }
  for (size_t t = 0; t < k.contrib.size(); ++t) {
    if (k.contrib[t] == UINT32_MAX) continue;
    float* out = result->MutableFloats(k.contrib[t]);
    const double* contrib = v.contribution.data() + t * n;
    for (size_t r = 0; r < n; ++r) out[r] = static_cast<float>(contrib[order[r]]);
  }
  for (size_t f = 0; f < k.feature.size(); ++f) {
    const float* in = v.features.data() + f * n;
    if (ws.integral[f]) {
      int64_t* out = result->MutableInts(k.feature[f]);
      for (size_t r = 0; r < n; ++r) out[r] = static_cast<int64_t>(in[order[r]]);
    } else {
      float* out = result->MutableFloats(k.feature[f]);
      for (size_t r = 0; r < n; ++r) out[r] = in[order[r]];
    }
  }
  for (const std::string& source : v.sources) result->AddStringEntry(k.source, source);
  uint32_t* source = result->MutableCodes(k.source);
  for (size_t r = 0; r < n; ++r) source[r] = v.source_code[order[r]];
  int64_t* recall_rank = result->MutableInts(k.recall_rank);
  for (size_t r = 0; r < n; ++r) recall_rank[r] = v.recall_rank[order[r]];
  int64_t* pre_rank = result->MutableInts(k.pre_rank);
  for (size_t r = 0; r < n; ++r) pre_rank[r] = static_cast<int64_t>(order[r]) + 1;
  // One entry each, every item's code 0.
  result->AddStringEntry(k.bucket, model.BucketOf(request.user_id()));
  result->MutableCodes(k.bucket);
  result->AddStringEntry(k.version, model.full_version());
  result->MutableCodes(k.version);
}

}  // namespace

void Ranker::Score(const rank::v1::RankRequest& request, RankWorkspace* ws) const {
  Gather(request, ws);
  BindAtoms(*model_, request, ws);
  ScoreHeads(*model_, ws);
  Order(ws);
}

void Ranker::Build(const rank::v1::RankRequest& request, LogDetail detail, RankWorkspace* ws,
                   RankResult* result) const {
  const RankWorkspace::Schema& k = SchemaFor(*model_, request, ws);
  result->ResetKeys(k.keys);
  const LogValues& v = ws->v;
  result->Reserve(v.n, v.ids.size());
  for (size_t r = 0; r < v.n; ++r) {
    const uint32_t c = v.order[r];
    result->AddItem(v.id(c), v.score[c], static_cast<uint32_t>(r + 1));
  }
  EmitColumns(*model_, request, k, *ws, result);
  if (detail == LogDetail::kInline) {
    FillLogHeader(*model_, request, &ws->v);
    const LogLineFormat format(*model_, ws->v);
    std::string line;
    for (size_t r = 0; r < v.n; ++r) {
      line.clear();
      TextLine text(&line, 1536);
      format.Emit(text, r);
      text.Finish();
      result->SetLog(r, line);
    }
  }
}

std::unique_ptr<LogValues> Ranker::TakeLogValues(const rank::v1::RankRequest& request,
                                                 RankWorkspace* ws) const {
  auto values = std::make_unique<LogValues>(std::move(ws->v));
  ws->v = LogValues();
  FillLogHeader(*model_, request, values.get());
  return values;
}

std::unique_ptr<logstore::LogRenderer> Ranker::Renderer(std::unique_ptr<LogValues> values) const {
  return MakeLogRenderer(model_, std::move(values));
}

RankOutput Ranker::Rank(const rank::v1::RankRequest& request, LogDetail detail) const {
  RankWorkspace ws;
  RankOutput out;
  Score(request, &ws);
  Build(request, detail, &ws, &out.result);
  if (detail == LogDetail::kDeferred) out.logs = Renderer(TakeLogValues(request, &ws));
  return out;
}

OutputShape Ranker::Shape(const rank::v1::RankRequest& request) const {
  const Model& model = *model_;
  // Features as ints bound them as floats too (see OutputShape::Key).
  RankWorkspace::Schema k;
  const std::vector<uint8_t> integral(static_cast<size_t>(request.item_feature_names_size()), 1);
  BuildSchema(model, request, integral, &k);
  const std::string& bucket = model.BucketOf(request.user_id());
  OutputShape shape;
  for (const MetricKey& key : k.keys) {
    shape.keys.push_back(OutputShape::Key{key.name, key.type, 0, 0, false});
  }
  // What EmitColumns puts in each item, at its largest.
  for (uint32_t f : k.feature) shape.keys[f].max_int = 9'000'000'000'000'000;  // 9.0e15f
  shape.keys[k.recall_rank].max_int = UINT32_MAX;
  shape.keys[k.pre_rank].max_int = static_cast<uint64_t>(request.candidates_size());
  shape.keys[k.source].is_recall_source = true;
  shape.keys[k.bucket].string_bytes = bucket.size();
  shape.keys[k.version].string_bytes = model.full_version().size();
  LogValues header;
  FillLogHeader(model, request, &header);
  const LogLineFormat::Bound bound = LogLineFormat(model, header).TextBound();
  shape.line_fixed_bytes = bound.fixed_bytes;
  shape.line_shared_bytes = bound.shared_bytes;
  shape.line_fields = bound.fields;
  return shape;
}

}  // namespace rankwire::server
