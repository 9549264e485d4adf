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
#include "server/request_validator.h"
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
// as a mask (-1 or 0): from 2^23 on every float is whole; below, one that
// survives truncation to an int is. No branch, no libm call, and only
// 32-bit lanes (GCC does not vectorize bool results mixed with floats), so
// the loop over a column vectorizes.
inline int32_t SmallWholeNumber(float v) {
  const float magnitude = std::fabs(v);
  const float small = magnitude < 8388608.0f ? v : 0.0f;  // In int range.
  const float truncated = static_cast<float>(static_cast<int32_t>(small));
  const int32_t same = truncated == small ? -1 : 0;
  const int32_t big = magnitude >= 8388608.0f ? -1 : 0;
  const int32_t in_range = magnitude <= 9.0e15f ? -1 : 0;
  return (same | big) & in_range;
}

// The candidates' ids, sources, recall ranks and features (copied: the
// log values outlive the request's bytes), and per feature whether every
// value is whole.
void Gather(const RequestView& request, RankWorkspace* ws) {
  LogValues& v = ws->v;
  const size_t n = request.n;
  const size_t f_count = request.feature_names();
  v.n = n;
  v.features.assign(request.features.begin(), request.features.begin() + f_count * n);
  v.id_ends.resize(n);
  v.recall_rank.assign(request.recall_rank.begin(), request.recall_rank.end());
  v.source_code.resize(n);
  v.ids.clear();
  v.sources.clear();
  for (size_t c = 0; c < n; ++c) {
    v.ids.append(request.item_id[c].data(), request.item_id[c].size());
    v.id_ends[c] = static_cast<uint32_t>(v.ids.size());
    // Sources repeat (a handful of recall channels): a short list.
    const absl::string_view source = request.recall_source[c];
    uint32_t code = 0;
    while (code < v.sources.size() && v.sources[code] != source) ++code;
    if (code == v.sources.size()) v.sources.emplace_back(source);
    v.source_code[c] = code;
  }
  // Per feature, over its column: a loop the compiler vectorizes.
  ws->integral.resize(f_count);
  for (size_t f = 0; f < f_count; ++f) {
    const float* column = v.features.data() + f * n;
    int32_t whole = -1;
    for (size_t c = 0; c < n; ++c) whole &= SmallWholeNumber(column[c]);
    ws->integral[f] = static_cast<uint8_t>(whole != 0);
  }
}

// A constant input (user, context, or an item feature the request lacks).
void Fill(double* out, size_t n, double value) { std::fill(out, out + n, value); }

// Whether `names` are the request's item feature names.
bool SameNames(const std::vector<std::string>& names,
               const std::vector<absl::string_view>& request_names) {
  if (names.size() != request_names.size()) return false;
  for (size_t j = 0; j < names.size(); ++j) {
    if (names[j] != request_names[j]) return false;
  }
  return true;
}

// Per model input, the request's feature column it reads (-1: none), kept
// while the model and the request's feature names repeat.
const std::vector<int>& AtomColumns(const Model& model, const RequestView& request,
                                    RankWorkspace* ws) {
  if (ws->bound_model == &model && SameNames(ws->bound_features, request.item_feature_names)) {
    return ws->atom_column;
  }
  absl::flat_hash_map<absl::string_view, int> column;
  for (size_t c = 0; c < request.item_feature_names.size(); ++c) {
    column.emplace(request.item_feature_names[c], static_cast<int>(c));
  }
  ws->atom_column.assign(model.atoms().size(), -1);
  for (size_t a = 0; a < model.atoms().size(); ++a) {
    const Model::Atom& atom = model.atoms()[a];
    if (atom.source != Model::Source::kItem) continue;
    if (auto it = column.find(atom.name); it != column.end()) ws->atom_column[a] = it->second;
  }
  ws->bound_model = &model;
  ws->bound_features.clear();
  for (absl::string_view name : request.item_feature_names) ws->bound_features.emplace_back(name);
  return ws->atom_column;
}

// Each model input over the candidates, transformed: atoms[a * n + c].
void BindAtoms(const Model& model, const RequestView& request, RankWorkspace* ws) {
  const size_t n = ws->v.n;
  const std::vector<int>& column = AtomColumns(model, request, ws);
  ws->atoms.resize(model.atoms().size() * n);
  for (size_t a = 0; a < model.atoms().size(); ++a) {
    const Model::Atom& atom = model.atoms()[a];
    double* out = ws->atoms.data() + a * n;
    if (atom.source != Model::Source::kItem) {
      double raw = 0;
      if (atom.source == Model::Source::kUser) {
        const double* value = request.FindUserFeature(atom.name);
        raw = value == nullptr ? 0.0 : *value;
      } else {
        const absl::string_view* value = request.FindContext(atom.name);
        if (value == nullptr || !absl::SimpleAtod(*value, &raw) || !std::isfinite(raw)) raw = 0;
      }
      Fill(out, n, Model::ApplyTransform(atom, raw));
      continue;
    }
    if (column[a] < 0) {
      Fill(out, n, 0.0);  // A feature the request does not carry is 0.
      continue;
    }
    const float* in = ws->v.features.data() + static_cast<size_t>(column[a]) * n;
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

// A score's bits as an unsigned key that sorts best first: descending
// doubles become ascending keys (NaN, which scores never are, would sort
// first or last).
inline uint64_t DescendingKey(double score) {
  uint64_t bits;
  std::memcpy(&bits, &score, sizeof bits);
  // Ascending order of doubles: flip every bit of negatives, the sign bit
  // of the rest; then invert for descending. -0 and +0 tie, as == says.
  if (score == 0) bits = 0;
  const uint64_t ascending = (bits >> 63) != 0 ? ~bits : bits | (uint64_t{1} << 63);
  return ~ascending;
}

// Best first; ties keep request order. An LSD radix sort over the keys'
// bytes (stable, so ties stay in candidate order), skipping the bytes in
// which every key agrees (the high bytes of scores of one magnitude): a
// few passes over 500 keys, no comparisons to mispredict.
void Order(RankWorkspace* ws) {
  LogValues& v = ws->v;
  const size_t n = v.n;
  std::vector<uint64_t>& keys = ws->sort_keys;
  std::vector<uint64_t>& keys_tmp = ws->sort_keys_tmp;
  std::vector<uint32_t>& order_tmp = ws->sort_order_tmp;
  keys.resize(n);
  keys_tmp.resize(n);
  order_tmp.resize(n);
  v.order.resize(n);
  for (size_t c = 0; c < n; ++c) {
    keys[c] = DescendingKey(v.score[c]);
    v.order[c] = static_cast<uint32_t>(c);
  }
  uint32_t count[256];
  for (int shift = 0; shift < 64; shift += 8) {
    std::fill(count, count + 256, 0);
    for (size_t i = 0; i < n; ++i) ++count[(keys[i] >> shift) & 0xff];
    if (n == 0 || count[(keys[0] >> shift) & 0xff] == n) continue;  // All agree.
    uint32_t sum = 0;
    for (uint32_t& c : count) {
      const uint32_t here = c;
      c = sum;
      sum += here;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint32_t at = count[(keys[i] >> shift) & 0xff]++;
      keys_tmp[at] = keys[i];
      order_tmp[at] = v.order[i];
    }
    keys.swap(keys_tmp);
    v.order.swap(order_tmp);
  }
}

// The key table for a request with these feature names and integral flags.
void BuildSchema(const Model& model, const RequestView& request,
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
  for (size_t j = 0; j < request.item_feature_names.size(); ++j) {
    k->feature.push_back(add(absl::StrCat("feat.", request.item_feature_names[j]),
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
const RankWorkspace::Schema& SchemaFor(const Model& model, const RequestView& request,
                                       RankWorkspace* ws) {
  const auto& names = request.item_feature_names;
  if (ws->schema_model != &model || ws->schema_integral != ws->integral ||
      !SameNames(ws->schema_features, names)) {
    BuildSchema(model, request, ws->integral, &ws->schema);
    ws->schema_model = &model;
    ws->schema_integral = ws->integral;
    ws->schema_features.clear();
    for (absl::string_view name : names) ws->schema_features.emplace_back(name);
  }
  return ws->schema;
}

// The request-level values of the log lines.
void FillLogHeader(const Model& model, std::shared_ptr<const LogLabels> labels,
                   const RequestView& request, LogValues* v) {
  v->labels = std::move(labels);
  v->request_id = std::string(request.request_id);
  v->request_time_ms = request.request_time_ms;
  v->scene = std::string(SceneName(static_cast<rank::v1::Scene>(request.scene)));
  v->user_id = std::string(request.user_id);
  v->bucket = model.BucketOf(request.user_id);
  v->model_version = model.full_version();
  v->context.clear();
  for (const char* key : kLogContextKeys) {
    if (const absl::string_view* value = request.FindContext(key)) {
      v->context.emplace_back(key, std::string(*value));
    }
  }
  v->feature_names.clear();
  for (absl::string_view name : request.item_feature_names) v->feature_names.emplace_back(name);
  v->top_n = request.top_n;
}

// The result's columns, in rank order.
void EmitColumns(const Model& model, const RequestView& request,
                 const RankWorkspace::Schema& k, const RankWorkspace& ws, RankResult* result) {
  const LogValues& v = ws.v;
  const size_t n = v.n;
  const uint32_t* order = v.order.data();
  double* final_score = result->OverwriteDoubles(k.final_score);
  for (size_t r = 0; r < n; ++r) final_score[r] = v.score[order[r]];
  for (size_t h = 0; h < k.head.size(); ++h) {
    double* out = result->OverwriteDoubles(k.head[h]);
    const double* p = v.p.data() + h * n;
    for (size_t r = 0; r < n; ++r) out[r] = p[order[r]];
  }
  for (size_t t = 0; t < k.contrib.size(); ++t) {
    if (k.contrib[t] == UINT32_MAX) continue;
    float* out = result->OverwriteFloats(k.contrib[t]);
    const double* contrib = v.contribution.data() + t * n;
    for (size_t r = 0; r < n; ++r) out[r] = static_cast<float>(contrib[order[r]]);
  }
  for (size_t f = 0; f < k.feature.size(); ++f) {
    const float* in = v.features.data() + f * n;
    if (ws.integral[f]) {
      int64_t* out = result->OverwriteInts(k.feature[f]);
      for (size_t r = 0; r < n; ++r) out[r] = static_cast<int64_t>(in[order[r]]);
    } else {
      float* out = result->OverwriteFloats(k.feature[f]);
      for (size_t r = 0; r < n; ++r) out[r] = in[order[r]];
    }
  }
  for (const std::string& source : v.sources) result->AddStringEntry(k.source, source);
  uint32_t* source = result->OverwriteCodes(k.source);
  for (size_t r = 0; r < n; ++r) source[r] = v.source_code[order[r]];
  int64_t* recall_rank = result->OverwriteInts(k.recall_rank);
  for (size_t r = 0; r < n; ++r) recall_rank[r] = v.recall_rank[order[r]];
  int64_t* pre_rank = result->OverwriteInts(k.pre_rank);
  for (size_t r = 0; r < n; ++r) pre_rank[r] = static_cast<int64_t>(order[r]) + 1;
  // One entry each, every item's code 0.
  result->AddStringEntry(k.bucket, model.BucketOf(request.user_id));
  result->MutableCodes(k.bucket);
  result->AddStringEntry(k.version, model.full_version());
  result->MutableCodes(k.version);
}

}  // namespace

void Ranker::Score(const RequestView& request, RankWorkspace* ws) const {
  Gather(request, ws);
  BindAtoms(*model_, request, ws);
  ScoreHeads(*model_, ws);
  Order(ws);
}

void Ranker::Build(const RequestView& request, LogDetail detail, RankWorkspace* ws,
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
    FillLogHeader(*model_, labels_, request, &ws->v);
    const LogLineFormat format(ws->v);
    std::string line;
    for (size_t r = 0; r < v.n; ++r) {
      line.clear();
      format.AppendText(r, &line);
      result->SetLog(r, line);
    }
  }
}

std::unique_ptr<LogValues> Ranker::TakeLogValues(const RequestView& request,
                                                 RankWorkspace* ws) const {
  auto values = std::make_unique<LogValues>(std::move(ws->v));
  ws->v = LogValues();
  FillLogHeader(*model_, labels_, request, values.get());
  return values;
}

std::unique_ptr<logstore::LogRenderer> Ranker::Renderer(std::unique_ptr<LogValues> values) const {
  return MakeLogRenderer(std::move(values));
}

RankOutput Ranker::Rank(const rank::v1::RankRequest& proto, LogDetail detail) const {
  std::string storage;
  RequestView request;
  // REQUIRES: the request is valid, so it parses within any limits.
  RequestLimits unlimited;
  unlimited.max_candidates = unlimited.max_item_features = unlimited.max_user_features =
      unlimited.max_context_entries = unlimited.max_accept_codecs = UINT32_MAX >> 5;
  (void)RequestViewOf(proto, unlimited, &storage, &request);
  RankWorkspace ws;
  RankOutput out;
  Score(request, &ws);
  Build(request, detail, &ws, &out.result);
  if (detail == LogDetail::kDeferred) out.logs = Renderer(TakeLogValues(request, &ws));
  return out;
}

OutputShape Ranker::Shape(const RequestView& request) const {
  const Model& model = *model_;
  // Features as ints bound them as floats too (see OutputShape::Key).
  RankWorkspace::Schema k;
  const std::vector<uint8_t> integral(request.item_feature_names.size(), 1);
  BuildSchema(model, request, integral, &k);
  const std::string& bucket = model.BucketOf(request.user_id);
  OutputShape shape;
  for (const MetricKey& key : k.keys) {
    shape.keys.push_back(OutputShape::Key{key.name, key.type, 0, 0, false});
  }
  // What EmitColumns puts in each item, at its largest.
  for (uint32_t f : k.feature) shape.keys[f].max_int = 9'000'000'000'000'000;  // 9.0e15f
  shape.keys[k.recall_rank].max_int = UINT32_MAX;
  shape.keys[k.pre_rank].max_int = static_cast<uint64_t>(request.n);
  shape.keys[k.source].is_recall_source = true;
  shape.keys[k.bucket].string_bytes = bucket.size();
  shape.keys[k.version].string_bytes = model.full_version().size();
  LogValues header;
  FillLogHeader(model, labels_, request, &header);
  const LogLineFormat::Bound bound = LogLineFormat(header).TextBound();
  shape.line_fixed_bytes = bound.fixed_bytes;
  shape.line_shared_bytes = bound.shared_bytes;
  shape.line_fields = bound.fields;
  return shape;
}

}  // namespace rankwire::server
