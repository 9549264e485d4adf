#include "server/ranker.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstring>
#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "logstore/log_record.h"

namespace rankwire::server {
namespace {

using Model = LinearModel;

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

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

// Model inputs resolved against one request: where each item atom's column
// is, and the values of user/context atoms (the same for every candidate).
struct Binding {
  std::vector<int> item_column;    // Per atom; -1 for non-item or missing.
  std::vector<double> fixed_value;  // Per atom, for user/context atoms.
};

Binding Bind(const Model& model, const rank::v1::RankRequest& request) {
  absl::flat_hash_map<absl::string_view, int> column;
  for (int c = 0; c < request.item_feature_names_size(); ++c) {
    column.emplace(request.item_feature_names(c), c);
  }
  Binding b;
  b.item_column.assign(model.atoms().size(), -1);
  b.fixed_value.assign(model.atoms().size(), 0.0);
  for (size_t a = 0; a < model.atoms().size(); ++a) {
    const Model::Atom& atom = model.atoms()[a];
    switch (atom.source) {
      case Model::Source::kItem:
        if (auto it = column.find(atom.name); it != column.end()) {
          b.item_column[a] = it->second;
        }
        break;
      case Model::Source::kUser: {
        auto it = request.user_features().find(atom.name);
        double raw = it == request.user_features().end() ? 0.0 : it->second;
        b.fixed_value[a] = Model::ApplyTransform(atom, raw);
        break;
      }
      case Model::Source::kContext: {
        auto it = request.context().find(atom.name);
        double raw = 0;
        if (it == request.context().end() || !absl::SimpleAtod(it->second, &raw) ||
            !std::isfinite(raw)) {
          raw = 0;
        }
        b.fixed_value[a] = Model::ApplyTransform(atom, raw);
        break;
      }
    }
  }
  return b;
}

// Each candidate's head logits, probabilities and per-input contributions,
// one flat array each indexed by candidate: three allocations per request,
// not three per candidate.
struct Scores {
  size_t heads = 0;
  size_t terms = 0;  // Over all heads.
  std::vector<double> logit, p, contribution;

  Scores(size_t candidates, size_t head_count, size_t term_count)
      : heads(head_count),
        terms(term_count),
        logit(candidates * head_count),
        p(candidates * head_count),
        contribution(candidates * term_count) {}
  double* Logit(int c) { return logit.data() + c * heads; }
  double* P(int c) { return p.data() + c * heads; }
  double* Contribution(int c) { return contribution.data() + c * terms; }
  const double* Logit(int c) const { return logit.data() + c * heads; }
  const double* P(int c) const { return p.data() + c * heads; }
  const double* Contribution(int c) const { return contribution.data() + c * terms; }
};

// A candidate's place in the ranking.
struct Scored {
  int candidate = 0;
  double score = 0;
  double boost = 1;
};

// Appends to a string through a raw pointer, growing it only when needed;
// Finish() trims it to what was written.
class LogLine {
 public:
  LogLine(std::string* out, size_t reserve) : out_(out) {
    out_->resize(reserve);
    p_ = out_->data();
  }
  void Append(absl::string_view s) {
    Ensure(s.size());
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }
  // Six significant digits, like printf's %g, without printf's cost.
  void Number(double v) { Append(absl::AlphaNum(absl::SixDigits(v)).Piece()); }
  void Number(int64_t v) {
    Ensure(24);
    p_ = std::to_chars(p_, p_ + 24, v).ptr;
  }
  void Finish() { out_->resize(static_cast<size_t>(p_ - out_->data())); }

 private:
  void Ensure(size_t n) {
    size_t used = static_cast<size_t>(p_ - out_->data());
    if (used + n > out_->size()) {
      out_->resize(std::max(out_->size() * 2, used + n));
      p_ = out_->data() + used;
    }
  }
  std::string* out_;
  char* p_;
};

// Formats the log lines of one request: what the lines share is formatted
// once, then each line is assembled with memcpy and SixDigits.
class LogLineFormatter {
 public:
  LogLineFormatter(const Model& model, const rank::v1::RankRequest& request,
                   const std::string& bucket)
      : model_(model), request_(request) {
    prefix_ = absl::StrCat("req=", request.request_id(), " ts=", request.request_time_ms(),
                           " scene=", SceneName(request.scene()), " user=", request.user_id(),
                           " bucket=", bucket, " model=", model.full_version(), " item=");
    for (const char* key : {"query", "device", "hour_of_day", "city_tier"}) {
      auto it = request.context().find(key);
      if (it != request.context().end()) absl::StrAppend(&context_, " ", key, "=\"", it->second, "\"");
    }
    for (const std::string& name : request.item_feature_names()) {
      feature_labels_.push_back(absl::StrCat(" ", name, "="));
    }
    for (const Model::Head& h : model.heads()) {
      std::vector<std::string>& labels = term_labels_.emplace_back();
      for (const Model::Term& t : h.terms) labels.push_back(absl::StrCat(" ", t.input, ":"));
    }
  }

  // What OutputShape says about this request's lines; Format() below is
  // what it bounds, so the two change together.
  void Bound(OutputShape* shape) const {
    // Six significant digits with an exponent: "-1.23457e-308".
    constexpr size_t kMaxDouble = 13;
    constexpr size_t kMaxInt = 20;
    size_t shared = prefix_.size() + context_.size();
    size_t fields = 4;  // item id, position, pre-rank, recall source + rank.
    shared += std::strlen(" pos=") + std::strlen(" pre=") + std::strlen(" src=") + 1 +
              std::strlen(" | feats");
    size_t numbers = 3 * kMaxInt;
    for (const std::string& label : feature_labels_) {
      shared += label.size();
      numbers += kMaxDouble;
      ++fields;
    }
    for (size_t h = 0; h < model_.heads().size(); ++h) {
      shared += 3 + model_.heads()[h].name.size() + 3 + 7;  // " | ", name, " p=", " logit="
      numbers += 2 * kMaxDouble;
      fields += 2;
      for (const std::string& label : term_labels_[h]) {
        shared += label.size();
        numbers += kMaxDouble;
        ++fields;
      }
    }
    shared += std::strlen(" | boost=") + std::strlen(" final=");
    numbers += 2 * kMaxDouble;
    fields += 2;
    shape->line_shared_bytes = shared;
    shape->line_fixed_bytes = shared + numbers;
    shape->line_fields = fields;
  }

  // The line of the item ranked at `position` (1-based).
  std::string Format(int position, const Scored& s, const Scores& scores) const {
    std::string out;
    TextOut text(&out, 1536);
    Emit(text, position, s, scores);
    text.Finish();
    return out;
  }

  // The same line as a structured record (logstore/log_record.h): the
  // values without their text, which the reader renders back. The caller
  // finishes the record.
  void Record(logstore::LogRecordBuilder& builder, int position, const Scored& s,
              const Scores& scores) const {
    Emit(builder, position, s, scores);
  }

 private:
  // Text output for Emit: appends each part.
  class TextOut {
   public:
    TextOut(std::string* out, size_t reserve) : line_(out, reserve) {}
    void Literal(absl::string_view s) { line_.Append(s); }
    void ItemId(absl::string_view id) { line_.Append(id); }
    void Int(int64_t v) { line_.Number(v); }
    void String(absl::string_view s) { line_.Append(s); }
    void Number(double v) { line_.Number(v); }
    void LabeledNumbers(const std::string* labels, const double* values, size_t count) {
      for (size_t i = 0; i < count; ++i) {
        line_.Append(labels[i]);
        line_.Number(values[i]);
      }
    }
    void Finish() { line_.Finish(); }

   private:
    LogLine line_;
  };

  // The one description of a log line, written to text (TextOut) or to a
  // structured record (logstore::LogRecordBuilder, which keeps the
  // literals of the first line as the request's layout). What varies per
  // item goes through ItemId/Int/String/Number, the rest is Literal.
  template <typename Out>
  void Emit(Out& out, int position, const Scored& s, const Scores& scores) const {
    const rank::v1::Candidate& c = request_.candidates(s.candidate);
    const double* head_p = scores.P(s.candidate);
    const double* head_logit = scores.Logit(s.candidate);
    const double* contribution = scores.Contribution(s.candidate);
    out.Literal(prefix_);
    EmitItemId(out, c.item_id());
    out.Literal(" pos=");
    out.Int(static_cast<int64_t>(position));
    out.Literal(" pre=");
    out.Int(static_cast<int64_t>(s.candidate + 1));
    out.Literal(" src=");
    out.String(c.recall_source());
    out.Literal("#");
    out.Int(static_cast<int64_t>(c.recall_rank()));
    out.Literal(context_);
    out.Literal(" | feats");
    absl::InlinedVector<double, 32> features(feature_labels_.size());
    for (size_t j = 0; j < features.size(); ++j) {
      features[j] = static_cast<double>(c.features(static_cast<int>(j)));
    }
    out.LabeledNumbers(feature_labels_.data(), features.data(), features.size());
    size_t t = 0;
    for (size_t h = 0; h < model_.heads().size(); ++h) {
      out.Literal(" | ");
      out.Literal(model_.heads()[h].name);
      out.Literal(" p=");
      out.Number(head_p[h]);
      out.Literal(" logit=");
      out.Number(head_logit[h]);
      out.LabeledNumbers(term_labels_[h].data(), contribution + t, term_labels_[h].size());
      t += term_labels_[h].size();
    }
    out.Literal(" | boost=");
    out.Number(s.boost);
    out.Literal(" final=");
    out.Number(s.score);
  }
  // The record form leaves the item id out: it is the hash field's name.
  static void EmitItemId(TextOut& out, absl::string_view id) { out.ItemId(id); }
  static void EmitItemId(logstore::LogRecordBuilder& out, absl::string_view) { out.ItemId(); }

  const Model& model_;
  const rank::v1::RankRequest& request_;
  std::string prefix_;
  std::string context_;
  std::vector<std::string> feature_labels_;
  std::vector<std::vector<std::string>> term_labels_;
};

// The deferred form of a request's log lines: the request and the scores,
// formatted when the log writer asks.
class RankLogRenderer final : public logstore::LogRenderer {
 public:
  RankLogRenderer(const Model* model, std::shared_ptr<const rank::v1::RankRequest> request,
                  std::string bucket, std::vector<Scored> ranked, Scores scores)
      : model_(model),
        request_(std::move(request)),
        bucket_(std::move(bucket)),
        ranked_(std::move(ranked)),
        scores_(std::move(scores)),
        estimated_bytes_(TextBound()) {}

  size_t ItemCount() const override { return ranked_.size(); }
  // The bound of the lines' text (what the response budget uses for inline
  // logs): the queue's and the writers' byte bounds hold for requests whose
  // lines are long (many or long feature names), not only for the shipped
  // model's 1.1-1.3 KB.
  size_t EstimatedBytes() const override { return estimated_bytes_; }
  void Render(std::vector<logstore::ItemLog>* items) override {
    LogLineFormatter formatter(*model_, *request_, bucket_);
    items->reserve(items->size() + ranked_.size());
    for (size_t r = 0; r < ranked_.size(); ++r) {
      items->push_back(logstore::ItemLog{request_->candidates(ranked_[r].candidate).item_id(),
                                         formatter.Format(static_cast<int>(r + 1), ranked_[r],
                                                          scores_)});
    }
  }
  size_t TextBound() const {
    OutputShape shape;
    LogLineFormatter(*model_, *request_, bucket_).Bound(&shape);
    size_t bytes = ranked_.size() * shape.line_fixed_bytes;
    for (const Scored& s : ranked_) {
      const rank::v1::Candidate& c = request_->candidates(s.candidate);
      bytes += c.item_id().size() + c.recall_source().size();
    }
    return bytes;
  }

  bool RenderRecords(std::string* layout, logstore::PackedFields* fields) override {
    LogLineFormatter formatter(*model_, *request_, bucket_);
    logstore::LogRecordBuilder builder;
    const logstore::PackedFields::Mark start = fields->mark();
    // ~170-byte records and their ids: one growth of the buffer at most.
    fields->Reserve(ranked_.size() * 256);
    // In the candidates' order, not the ranking's: a line reads its
    // candidate and its scores, which then sit one after another in memory
    // (in rank order each line missed the cache on both; the writer runs
    // well after ranking, with other requests in between). HSET's field
    // order means nothing.
    // ranked_ is a permutation of the candidates (ScoreAndSort ranks all).
    assert(ranked_.size() == static_cast<size_t>(request_->candidates_size()));
    std::vector<uint32_t> position(ranked_.size());
    for (size_t r = 0; r < ranked_.size(); ++r) {
      position[static_cast<size_t>(ranked_[r].candidate)] = static_cast<uint32_t>(r);
    }
    for (size_t c = 0; c < ranked_.size(); ++c) {
      const size_t r = position[c];
      formatter.Record(builder, static_cast<int>(r + 1), ranked_[r], scores_);
      builder.FinishRecordInto(request_->candidates(ranked_[r].candidate).item_id(), fields);
    }
    // Every line has the same shape by construction; if not, text it is.
    if (!builder.consistent()) {
      fields->RollBack(start);
      return false;
    }
    *layout = builder.Layout();
    return true;
  }

 private:
  const Model* model_;
  std::shared_ptr<const rank::v1::RankRequest> request_;
  std::string bucket_;
  std::vector<Scored> ranked_;
  Scores scores_;
  size_t estimated_bytes_;
};

// The candidates scored and ordered best first (a stable sort: ties keep
// request order).
struct Ranking {
  std::vector<Scored> order;
  Scores scores;
};

// Scores candidate `i` into its rows of `scores`; `atom_value` is scratch.
Scored ScoreCandidate(const Model& model, const Binding& binding,
                      const rank::v1::RankRequest& request, int i,
                      std::vector<double>& atom_value, Scores& scores) {
  const rank::v1::Candidate& c = request.candidates(i);
  for (size_t a = 0; a < atom_value.size(); ++a) {
    const int col = binding.item_column[a];
    atom_value[a] = col < 0 ? binding.fixed_value[a]
                            : Model::ApplyTransform(model.atoms()[a], c.features(col));
  }
  Scored s;
  s.candidate = i;
  s.boost = model.Boost(c.recall_source());
  s.score = s.boost;
  double* head_logit = scores.Logit(i);
  double* head_p = scores.P(i);
  double* contribution = scores.Contribution(i);
  for (size_t hi = 0; hi < model.heads().size(); ++hi) {
    const Model::Head& h = model.heads()[hi];
    double logit = h.bias;
    for (const Model::Term& t : h.terms) {
      double x = atom_value[t.lhs];
      if (t.op == Model::Op::kProduct) x *= atom_value[t.rhs];
      if (t.op == Model::Op::kAbsDiff) x = std::fabs(x - atom_value[t.rhs]);
      const double contrib = t.weight * x;
      *contribution++ = contrib;
      logit += contrib;
    }
    const double p = Sigmoid(logit);
    head_logit[hi] = logit;
    head_p[hi] = p;
    s.score *= std::pow(p, h.exponent);
  }
  return s;
}

Ranking ScoreAndSort(const Model& model, const rank::v1::RankRequest& request) {
  const Binding binding = Bind(model, request);
  const int n = request.candidates_size();
  size_t term_count = 0;
  for (const Model::Head& h : model.heads()) term_count += h.terms.size();
  Ranking ranking{std::vector<Scored>(n), Scores(n, model.heads().size(), term_count)};
  std::vector<double> atom_value(model.atoms().size());
  for (int i = 0; i < n; ++i) {
    ranking.order[i] = ScoreCandidate(model, binding, request, i, atom_value, ranking.scores);
  }
  std::stable_sort(ranking.order.begin(), ranking.order.end(),
                   [](const Scored& a, const Scored& b) { return a.score > b.score; });
  return ranking;
}

// Per item feature: true when every candidate's value is integral (counts,
// days, flags), so it is an int metric (1-3 varint bytes, not a 4-byte float).
//
// Whether a finite float is a whole number of at most 9.0e15 in magnitude,
// from its bits (no libm call, no branch): below 1 only zero is; from 2^23
// every float is whole; between, the mantissa bits under the binary point
// must be zero.
inline bool SmallWholeNumber(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const uint32_t magnitude = bits & 0x7fffffffu;
  const int exponent = static_cast<int>(magnitude >> 23) - 127;
  const uint32_t fraction_bits = exponent < 0 ? 0x7fffffffu
                                 : exponent >= 23 ? 0u
                                                  : (1u << (23 - exponent)) - 1;
  return (magnitude & fraction_bits) == 0 && std::fabs(v) <= 9.0e15f;
}

std::vector<bool> IntegralFeatures(const rank::v1::RankRequest& request) {
  const int feature_count = request.item_feature_names_size();
  std::vector<uint8_t> integral(static_cast<size_t>(feature_count), 1);
  for (const rank::v1::Candidate& c : request.candidates()) {
    const float* values = c.features().data();  // feature_count of them (validated).
    for (int j = 0; j < feature_count; ++j) integral[j] &= SmallWholeNumber(values[j]);
  }
  return std::vector<bool>(integral.begin(), integral.end());
}

// The result's key table, one for all items, and each key's index.
struct Schema {
  uint32_t final_score = 0;
  std::vector<uint32_t> head;     // Per head.
  std::vector<uint32_t> contrib;  // Per term, UINT32_MAX when not emitted.
  std::vector<uint32_t> feature;  // Per item feature.
  std::vector<bool> integral;     // Per item feature: an int metric.
  uint32_t source = 0, recall_rank = 0, pre_rank = 0, bucket = 0, version = 0;
};

Schema BuildSchema(const Model& model, const rank::v1::RankRequest& request,
                   RankResult* result) {
  Schema k;
  k.final_score = result->AddKey("score.final", MetricType::kDouble);
  for (const Model::Head& h : model.heads()) {
    k.head.push_back(result->AddKey(absl::StrCat("score.", h.name), MetricType::kDouble));
  }
  // Per-input contributions of the heads the model file marks "explain";
  // every head's contributions are in the log line.
  for (const Model::Head& h : model.heads()) {
    for (const Model::Term& t : h.terms) {
      k.contrib.push_back(!h.explain ? UINT32_MAX
                                     : result->AddKey(absl::StrCat("contrib.", h.name, ".", t.input),
                                                      MetricType::kFloat));
    }
  }
  k.integral = IntegralFeatures(request);
  for (int j = 0; j < request.item_feature_names_size(); ++j) {
    k.feature.push_back(result->AddKey(absl::StrCat("feat.", request.item_feature_names(j)),
                                       k.integral[j] ? MetricType::kInt : MetricType::kFloat));
  }
  k.source = result->AddKey("recall.source", MetricType::kString);
  k.recall_rank = result->AddKey("recall.rank", MetricType::kInt);
  k.pre_rank = result->AddKey("rank.pre", MetricType::kInt);
  k.bucket = result->AddKey("exp.bucket", MetricType::kString);
  k.version = result->AddKey("model.version", MetricType::kString);
  return k;
}

// Writes the ranked items, in `ranking` order, with the metrics of `k`.
void EmitItems(const Model& model, const rank::v1::RankRequest& request, const Schema& k,
               const Ranking& ranking, RankResult* result) {
  // Strings every item shares are made once; copies share their bytes.
  const MetricValue bucket_value = MetricValue::String(model.BucketOf(request.user_id()));
  const MetricValue version_value = MetricValue::String(model.full_version());
  std::vector<std::pair<std::string, MetricValue>> sources;
  auto source_value = [&sources](const std::string& source) -> const MetricValue& {
    for (const auto& [name, value] : sources) {
      if (name == source) return value;
    }
    sources.emplace_back(source, MetricValue::String(source));
    return sources.back().second;
  };

  result->items.resize(ranking.order.size());
  for (size_t r = 0; r < ranking.order.size(); ++r) {
    const Scored& s = ranking.order[r];
    const rank::v1::Candidate& c = request.candidates(s.candidate);
    RankedItem& item = result->items[r];
    item.item_id = c.item_id();
    item.score = s.score;
    item.position = static_cast<uint32_t>(r + 1);
    item.metrics.reserve(result->keys.size());
    auto add = [&item](uint32_t key, MetricValue v) {
      item.metrics.push_back(MetricEntry{key, std::move(v)});
    };
    add(k.final_score, MetricValue::Double(s.score));
    const double* head_p = ranking.scores.P(s.candidate);
    const double* contribution = ranking.scores.Contribution(s.candidate);
    for (size_t h = 0; h < k.head.size(); ++h) add(k.head[h], MetricValue::Double(head_p[h]));
    for (size_t t = 0; t < k.contrib.size(); ++t) {
      if (k.contrib[t] == UINT32_MAX) continue;
      add(k.contrib[t], MetricValue::Float(static_cast<float>(contribution[t])));
    }
    for (size_t j = 0; j < k.feature.size(); ++j) {
      const float v = c.features(static_cast<int>(j));
      add(k.feature[j], k.integral[j] ? MetricValue::Int(static_cast<int64_t>(v))
                                      : MetricValue::Float(v));
    }
    add(k.source, source_value(c.recall_source()));
    add(k.recall_rank, MetricValue::Int(c.recall_rank()));
    add(k.pre_rank, MetricValue::Int(s.candidate + 1));
    add(k.bucket, bucket_value);
    add(k.version, version_value);
  }
}

}  // namespace

OutputShape Ranker::Shape(const rank::v1::RankRequest& request) const {
  const Model& model = *model_;
  RankResult keys_only;
  const Schema k = BuildSchema(model, request, &keys_only);
  const std::string& bucket = model.BucketOf(request.user_id());
  OutputShape shape;
  for (const MetricKey& key : keys_only.keys) {
    shape.keys.push_back(OutputShape::Key{key.name, key.type, 0, 0, false});
  }
  // What EmitItems puts in each item, at its largest.
  for (uint32_t f : k.feature) shape.keys[f].max_int = 9'000'000'000'000'000;  // 9.0e15f
  shape.keys[k.recall_rank].max_int = UINT32_MAX;
  shape.keys[k.pre_rank].max_int = static_cast<uint64_t>(request.candidates_size());
  shape.keys[k.source].is_recall_source = true;
  shape.keys[k.bucket].string_bytes = bucket.size();
  shape.keys[k.version].string_bytes = model.full_version().size();
  LogLineFormatter(model, request, bucket).Bound(&shape);
  return shape;
}

RankOutput Ranker::Rank(std::shared_ptr<const rank::v1::RankRequest> request,
                        LogDetail detail) const {
  const Model& model = *model_;
  const rank::v1::RankRequest& r = *request;
  Ranking ranking = ScoreAndSort(model, r);
  RankOutput out;
  const Schema schema = BuildSchema(model, r, &out.result);
  EmitItems(model, r, schema, ranking, &out.result);

  const std::string& bucket = model.BucketOf(r.user_id());
  if (detail == LogDetail::kInline) {
    const LogLineFormatter formatter(model, r, bucket);
    for (size_t i = 0; i < ranking.order.size(); ++i) {
      out.result.items[i].log =
          formatter.Format(static_cast<int>(i + 1), ranking.order[i], ranking.scores);
    }
  } else if (detail == LogDetail::kDeferred) {
    out.logs = std::make_unique<RankLogRenderer>(model_, std::move(request), bucket,
                                                 std::move(ranking.order),
                                                 std::move(ranking.scores));
  }
  return out;
}

}  // namespace rankwire::server
