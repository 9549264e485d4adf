#include "ranking/ranker.h"

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
#include "request/request_validator.h"

namespace rankwire {
namespace {

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

// The candidates' recall ranks and sources (coded by the parse; copied:
// the log values outlive the request's bytes), and per feature whether
// every value is whole. The features and ids are read from the request
// (the scorer and Build read the parse's columns, not a copy) and copied
// into the log values only when there are log lines (CopyRequestColumns).
void Gather(const RequestView& request, RankWorkspace* ws) {
  LogValues& v = ws->v;
  const size_t n = request.n;
  const size_t f_count = request.feature_names();
  v.n = n;
  v.recall_rank.assign(request.recall_rank.begin(), request.recall_rank.end());
  v.source_code.assign(request.source_code.begin(), request.source_code.end());
  v.sources.resize(request.sources.size());
  for (size_t s = 0; s < request.sources.size(); ++s)
    v.sources[s].assign(request.sources[s].data(), request.sources[s].size());
  // Per feature, over its column: a loop the compiler vectorizes.
  ws->integral.resize(f_count);
  for (size_t f = 0; f < f_count; ++f) {
    const float* column = request.features.data() + f * n;
    int32_t whole = -1;
    for (size_t c = 0; c < n; ++c) whole &= SmallWholeNumber(column[c]);
    ws->integral[f] = static_cast<uint8_t>(whole != 0);
  }
}

// The request's features and ids, into the log values (which outlive the
// request's bytes): what Gather left in the request, for log lines.
void CopyRequestColumns(const RequestView& request, LogValues* v) {
  const size_t n = request.n;
  v->features.assign(request.features.begin(),
                     request.features.begin() + request.feature_names() * n);
  v->id_ends.resize(n);
  v->ids.clear();
  v->ids.reserve(request.item_id_bytes);
  for (size_t c = 0; c < n; ++c) {
    v->ids.append(request.item_id[c].data(), request.item_id[c].size());
    v->id_ends[c] = static_cast<uint32_t>(v->ids.size());
  }
}

// Whether `names` are the request's item feature names.
bool SameNames(const std::vector<std::string>& names,
               const std::vector<absl::string_view>& request_names) {
  if (names.size() != request_names.size()) return false;
  for (size_t j = 0; j < names.size(); ++j) {
    if (names[j] != request_names[j]) return false;
  }
  return true;
}

// Per model item feature, the request column it reads (-1: the request
// does not carry it), kept while the model and the feature names repeat.
const std::vector<int>& FeatureColumns(const Model& model, const RequestView& request,
                                       RankWorkspace* ws) {
  if (ws->bound_model == model.serial() &&
      SameNames(ws->bound_features, request.item_feature_names)) {
    return ws->feature_column;
  }
  absl::flat_hash_map<absl::string_view, int> column;
  for (size_t c = 0; c < request.item_feature_names.size(); ++c) {
    column.emplace(request.item_feature_names[c], static_cast<int>(c));
  }
  ws->feature_column.clear();
  for (const std::string& name : model.item_features()) {
    auto it = column.find(name);
    ws->feature_column.push_back(it == column.end() ? -1 : it->second);
  }
  ws->bound_model = model.serial();
  ws->bound_features.clear();
  for (absl::string_view name : request.item_feature_names) ws->bound_features.emplace_back(name);
  return ws->feature_column;
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

// The key table for a request with these feature names and integral flags.
void BuildSchema(const Model& model, const RequestView& request,
                 const std::vector<uint8_t>& integral, RankWorkspace::Schema* k) {
  k->keys.clear();
  k->model.clear();
  k->feature.clear();
  k->explain_feature.clear();
  k->explain_value.clear();
  auto add = [k](std::string name, MetricType type) {
    k->keys.push_back(MetricKey{std::move(name), type});
    return static_cast<uint32_t>(k->keys.size() - 1);
  };
  k->final_score = add("score.final", MetricType::kDouble);
  const ModelOutputs& outputs = *model.outputs();
  for (const ModelOutputs::Metric& m : outputs.metrics) k->model.push_back(add(m.name, m.type));
  for (size_t j = 0; j < request.item_feature_names.size(); ++j) {
    k->feature.push_back(add(absl::StrCat("feat.", request.item_feature_names[j]),
                             integral[j] ? MetricType::kInt : MetricType::kFloat));
  }
  k->source = add("recall.source", MetricType::kString);
  k->recall_rank = add("recall.rank", MetricType::kInt);
  k->pre_rank = add("rank.pre", MetricType::kInt);
  k->bucket = add("exp.bucket", MetricType::kString);
  k->version = add("model.version", MetricType::kString);
  if (outputs.explains) {
    for (size_t e = 1; e <= outputs.explain_top_k; ++e) {
      k->explain_feature.push_back(
          add(absl::StrCat("explain.", e, ".feature"), MetricType::kString));
      k->explain_value.push_back(
          add(absl::StrCat("explain.", e, ".contribution"), MetricType::kFloat));
    }
  }
}

// The schema of this request, from the workspace's cache when the model,
// feature names and integral flags are the last request's.
const RankWorkspace::Schema& SchemaFor(const Model& model, const RequestView& request,
                                       RankWorkspace* ws) {
  const auto& names = request.item_feature_names;
  if (ws->schema_model != model.serial() || ws->schema_integral != ws->integral ||
      !SameNames(ws->schema_features, names)) {
    BuildSchema(model, request, ws->integral, &ws->schema);
    ws->schema_model = model.serial();
    ws->schema_integral = ws->integral;
    ws->schema_features.clear();
    for (absl::string_view name : names) ws->schema_features.emplace_back(name);
  }
  return ws->schema;
}

// The request-level values of the log lines.
void FillLogHeader(const Model& model, const std::string& bucket, const RequestView& request,
                   LogValues* v) {
  v->outputs = model.outputs();
  v->request_id = std::string(request.request_id);
  v->request_time_ms = request.request_time_ms;
  v->scene = std::string(SceneName(static_cast<rank::v1::Scene>(request.scene)));
  v->user_id = std::string(request.user_id);
  v->bucket = bucket;
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

// The model's metrics and the features, in rank order.
void EmitScoreColumns(const Model& model, const RequestView& request,
                      const RankWorkspace::Schema& k, const RankWorkspace& ws, RankResult* result) {
  const LogValues& v = ws.v;
  const size_t n = v.n;
  const uint32_t* order = v.order.data();
  double* final_score = result->OverwriteDoubles(k.final_score);
  for (size_t r = 0; r < n; ++r) final_score[r] = v.score[order[r]];
  const ModelOutputs& outputs = *model.outputs();
  for (size_t m = 0; m < outputs.metrics.size(); ++m) {
    const double* column = v.model_values.data() + size_t{outputs.metrics[m].column} * n;
    if (outputs.metrics[m].type == MetricType::kFloat) {
      float* out = result->OverwriteFloats(k.model[m]);
      for (size_t r = 0; r < n; ++r) out[r] = static_cast<float>(column[order[r]]);
    } else {
      double* out = result->OverwriteDoubles(k.model[m]);
      for (size_t r = 0; r < n; ++r) out[r] = column[order[r]];
    }
  }
  for (size_t f = 0; f < k.feature.size(); ++f) {
    const float* in = request.features.data() + f * n;
    if (ws.integral[f]) {
      int64_t* out = result->OverwriteInts(k.feature[f]);
      for (size_t r = 0; r < n; ++r) out[r] = static_cast<int64_t>(in[order[r]]);
    } else {
      float* out = result->OverwriteFloats(k.feature[f]);
      for (size_t r = 0; r < n; ++r) out[r] = in[order[r]];
    }
  }
}

// Sources, ranks, bucket and version, in rank order.
void EmitItemColumns(const Model& model, const std::string& bucket, const RankWorkspace::Schema& k,
                     const RankWorkspace& ws, RankResult* result) {
  const LogValues& v = ws.v;
  const size_t n = v.n;
  const uint32_t* order = v.order.data();
  for (const std::string& source : v.sources) result->AddStringEntry(k.source, source);
  uint32_t* source = result->OverwriteCodes(k.source);
  for (size_t r = 0; r < n; ++r) source[r] = v.source_code[order[r]];
  int64_t* recall_rank = result->OverwriteInts(k.recall_rank);
  for (size_t r = 0; r < n; ++r) recall_rank[r] = v.recall_rank[order[r]];
  int64_t* pre_rank = result->OverwriteInts(k.pre_rank);
  for (size_t r = 0; r < n; ++r) pre_rank[r] = static_cast<int64_t>(order[r]) + 1;
  // One entry each, every item's code 0.
  result->AddStringEntry(k.bucket, bucket);
  result->MutableCodes(k.bucket);
  result->AddStringEntry(k.version, model.full_version());
  result->MutableCodes(k.version);
}

// The shown items' explanations: metrics of those items only (the other
// items have none), and the text of each for the log line. The request says
// how many (validated against --max_explain_items), else the model's
// default.
void Explain(const Model& model, const RequestView& request, const RankWorkspace::Schema& k,
             RankWorkspace* ws, RankResult* result) {
  const ModelOutputs& outputs = *model.outputs();
  LogValues& v = ws->v;
  v.explanations.clear();
  if (!outputs.explains) return;
  const size_t wanted = request.explain_items.value_or(outputs.explain_items);
  const size_t shown = std::min<size_t>({request.top_n, v.n, wanted});
  std::vector<uint32_t> candidates(v.order.begin(), v.order.begin() + shown);
  std::vector<Explanation> explanations;
  model.Explain(ScoreInput{request, request.features.data(), ws->feature_column, v.n,
                           v.source_code.data(), v.sources},
                candidates, outputs.explain_top_k, &explanations);
  v.explanations.assign(v.n, std::string());
  for (size_t r = 0; r < explanations.size() && r < shown; ++r) {
    std::string& text = v.explanations[candidates[r]];
    const auto& contributions = explanations[r].contributions;
    for (size_t e = 0; e < contributions.size() && e < k.explain_feature.size(); ++e) {
      result->SetString(r, k.explain_feature[e], contributions[e].first);
      result->SetFloat(r, k.explain_value[e], contributions[e].second);
      if (!text.empty()) text.push_back(' ');
      absl::StrAppend(&text, contributions[e].first, ":");
      logstore::AppendLogNumberText(contributions[e].second, &text);
    }
  }
}

}  // namespace

void OrderBestFirst(absl::Span<const double> score, SortScratch* scratch,
                    std::vector<uint32_t>* order) {
  const size_t n = score.size();
  std::vector<uint64_t>& keys = scratch->keys;
  std::vector<uint32_t>& high = scratch->high;
  std::vector<uint32_t>& high_tmp = scratch->high_tmp;
  std::vector<uint32_t>& order_tmp = scratch->order_tmp;
  keys.resize(n);
  high.resize(n);
  high_tmp.resize(n);
  order_tmp.resize(n);
  order->resize(n);
  // One pass: the keys, and the histogram of each byte of their high half.
  uint32_t count[4][256] = {};
  for (size_t c = 0; c < n; ++c) {
    const uint64_t key = DescendingKey(score[c]);
    const auto h = static_cast<uint32_t>(key >> 32);
    keys[c] = key;
    high[c] = h;
    (*order)[c] = static_cast<uint32_t>(c);
    ++count[0][h & 0xff];
    ++count[1][(h >> 8) & 0xff];
    ++count[2][(h >> 16) & 0xff];
    ++count[3][h >> 24];
  }
  for (int b = 0; b < 4; ++b) {
    const int shift = 8 * b;
    uint32_t* at = count[b];
    if (n == 0 || at[(high[0] >> shift) & 0xff] == n) continue;  // All agree.
    uint32_t sum = 0;
    for (int d = 0; d < 256; ++d) {
      const uint32_t here = at[d];
      at[d] = sum;
      sum += here;
    }
    for (size_t i = 0; i < n; ++i) {
      const uint32_t to = at[(high[i] >> shift) & 0xff]++;
      high_tmp[to] = high[i];
      order_tmp[to] = (*order)[i];
    }
    high.swap(high_tmp);
    order->swap(order_tmp);
  }
  // Runs of equal high halves are in index order (the sort is stable):
  // order each by the whole key, then the index.
  uint32_t* o = order->data();
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && high[j] == high[i]) ++j;
    if (j - i > 1) {
      std::sort(o + i, o + j, [&keys](uint32_t a, uint32_t b) {
        return keys[a] != keys[b] ? keys[a] < keys[b] : a < b;
      });
    }
    i = j;
  }
}

void Ranker::Score(const RequestView& request, RankWorkspace* ws) const {
  const Model& model = *model_;
  Gather(request, ws);
  const std::vector<int>& column = FeatureColumns(model, request, ws);
  LogValues& v = ws->v;
  v.score.resize(v.n);
  v.model_values.resize(model.outputs()->value_columns * v.n);
  model.Score(
      ScoreInput{request, request.features.data(), column, v.n, v.source_code.data(), v.sources},
      v.score.data(), v.model_values.data());
  OrderBestFirst(v.score, &ws->sort, &v.order);
}

void Ranker::Build(const RequestView& request, const std::string& bucket, LogDetail detail,
                   RankWorkspace* ws, RankResult* result) const {
  const Model& model = *model_;
  const RankWorkspace::Schema& k = SchemaFor(model, request, ws);
  result->ResetKeys(k.keys);
  const LogValues& v = ws->v;
  result->Reserve(v.n, request.item_id_bytes);
  result->AddRankedItems(request.item_id, v.score.data(), v.order.data(), v.n);
  EmitScoreColumns(model, request, k, *ws, result);
  EmitItemColumns(model, bucket, k, *ws, result);
  Explain(model, request, k, ws, result);
  if (detail == LogDetail::kInline) {
    CopyRequestColumns(request, &ws->v);
    FillLogHeader(model, bucket, request, &ws->v);
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
                                                 const std::string& bucket,
                                                 RankWorkspace* ws) const {
  CopyRequestColumns(request, &ws->v);
  std::unique_ptr<LogValues> values = ws->log_values_pool->Exchange(&ws->v, ws->log_values_pool);
  FillLogHeader(*model_, bucket, request, values.get());
  return values;
}

std::unique_ptr<logstore::LogRenderer> Ranker::Renderer(std::unique_ptr<LogValues> values) const {
  return MakeLogRenderer(std::move(values));
}

RankOutput Ranker::Rank(const rank::v1::RankRequest& proto, LogDetail detail) const {
  // REQUIRES: the request is valid, so it parses within any limits.
  RequestLimits unlimited;
  unlimited.max_candidates = unlimited.max_item_features = unlimited.max_user_features =
      unlimited.max_context_entries = unlimited.max_accept_codecs = UINT32_MAX >> 5;
  const OwnedRequestView request(proto, unlimited);
  const std::string& bucket = BucketOf(request.view().user_id);
  RankWorkspace ws;
  RankOutput out;
  Score(request, &ws);
  Build(request, bucket, detail, &ws, &out.result);
  if (detail == LogDetail::kDeferred) out.logs = Renderer(TakeLogValues(request, bucket, &ws));
  return out;
}

void Ranker::Shape(const RequestView& request, const std::string& bucket, bool line_bound,
                   OutputShape* shape) const {
  const Model& model = *model_;
  // The keys depend on the model and the request's feature names alone:
  // built once per thread while those repeat (what a server sees call after
  // call), then copied into *shape (whose strings keep their capacity).
  struct Cache {
    uint64_t model = 0;
    std::vector<std::string> features;
    RankWorkspace::Schema schema;
    OutputShape shape;
  };
  thread_local Cache cache;
  if (cache.model != model.serial() || !SameNames(cache.features, request.item_feature_names)) {
    // Features as ints bound them as floats too (see OutputShape::Key).
    const std::vector<uint8_t> integral(request.item_feature_names.size(), 1);
    BuildSchema(model, request, integral, &cache.schema);
    const RankWorkspace::Schema& k = cache.schema;
    cache.shape = OutputShape();
    for (const MetricKey& key : k.keys) {
      cache.shape.keys.push_back(OutputShape::Key{key.name, key.type, 0, 0, false});
    }
    // What the result puts in each item, at its largest.
    for (uint32_t f : k.feature) cache.shape.keys[f].max_int = 9'000'000'000'000'000;  // 9.0e15f
    cache.shape.keys[k.recall_rank].max_int = UINT32_MAX;
    cache.shape.keys[k.source].per_item_string = true;
    cache.shape.keys[k.version].string_bytes = model.full_version().size();
    for (uint32_t e : k.explain_feature) {
      cache.shape.keys[e].string_bytes = model.outputs()->explain_text_bound;
    }
    cache.model = model.serial();
    cache.features.clear();
    for (absl::string_view name : request.item_feature_names) cache.features.emplace_back(name);
  }
  *shape = cache.shape;
  const RankWorkspace::Schema& k = cache.schema;
  shape->keys[k.pre_rank].max_int = static_cast<uint64_t>(request.n);
  shape->keys[k.bucket].string_bytes = bucket.size();
  if (line_bound) {
    LogValues header;
    FillLogHeader(model, bucket, request, &header);
    const LogLineFormat::Bound bound = LogLineFormat(header).TextBound();
    shape->line_fixed_bytes = bound.fixed_bytes;
    shape->line_shared_bytes = bound.shared_bytes;
    shape->line_fields = bound.fields;
  }
}

OutputShape Ranker::Shape(const RequestView& request, const std::string& bucket) const {
  OutputShape shape;
  Shape(request, bucket, true, &shape);
  return shape;
}

}  // namespace rankwire
