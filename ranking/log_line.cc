#include "ranking/log_line.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rankwire {

void LogLineFormat::Add(absl::string_view literal, Field::Source source, uint32_t index) {
  absl::StrAppend(&pieces_.back(), literal);
  fields_.push_back(Field{source, index});
  pieces_.emplace_back();
}

LogLineFormat::LogLineFormat(const LogValues& v) : v_(v) {
  pieces_.emplace_back();
  Add(absl::StrCat("req=", v.request_id, " ts=", v.request_time_ms, " scene=", v.scene,
                   " user=", v.user_id, " bucket=", v.bucket, " model=", v.model_version, " item="),
      Field::kItemId);
  Add(" pos=", Field::kPosition);
  Add(" pre=", Field::kPreRank);
  Add(" src=", Field::kSource);
  Add("#", Field::kRecallRank);
  std::string context;
  for (const auto& [key, value] : v.context)
    absl::StrAppend(&context, " ", key, "=\"", value, "\"");
  pieces_.back().append(context);
  pieces_.back().append(" | feats");
  for (size_t f = 0; f < v.feature_names.size(); ++f) {
    Add(absl::StrCat(" ", v.feature_names[f], "="), Field::kFeature, static_cast<uint32_t>(f));
  }
  for (const ModelOutputs::LogField& field : v.outputs->log) {
    Add(field.label, Field::kModel, field.column);
  }
  if (v.outputs->explains) {
    Add(" | explain=", Field::kExplanation);
    explanation_strings_.emplace_back();
    explanation_index_.assign(v.n, 0);
    for (size_t c = 0; c < v.explanations.size() && c < v.n; ++c) {
      if (v.explanations[c].empty()) continue;
      explanation_index_[c] = static_cast<uint32_t>(explanation_strings_.size());
      explanation_strings_.push_back(v.explanations[c]);
    }
  }
  Add(" final=", Field::kScore);
}

uint32_t LogLineFormat::ExplanationIndex(size_t c) const {
  return static_cast<uint32_t>(v_.sources.size()) + explanation_index_[c];
}

float LogLineFormat::Number(const Field& f, size_t c) const {
  const size_t n = v_.n;
  switch (f.source) {
    case Field::kFeature:
      return v_.features[f.index * n + c];
    case Field::kModel:
      return static_cast<float>(v_.model_values[f.index * n + c]);
    case Field::kScore:
      return static_cast<float>(v_.score[c]);
    default:
      return 0;
  }
}

void LogLineFormat::AppendText(size_t rank, std::string* out) const {
  const size_t c = v_.order[rank];
  for (size_t i = 0; i < fields_.size(); ++i) {
    out->append(pieces_[i]);
    const Field& f = fields_[i];
    switch (f.source) {
      case Field::kItemId:
        out->append(v_.id(c).data(), v_.id(c).size());
        break;
      case Field::kPosition:
        absl::StrAppend(out, rank + 1);
        break;
      case Field::kPreRank:
        absl::StrAppend(out, c + 1);
        break;
      case Field::kSource:
        out->append(v_.sources[v_.source_code[c]]);
        break;
      case Field::kRecallRank:
        absl::StrAppend(out, v_.recall_rank[c]);
        break;
      case Field::kExplanation:
        out->append(explanation_strings_[explanation_index_[c]]);
        break;
      default:
        logstore::AppendLogNumberText(Number(f, c), out);
        break;
    }
  }
  out->append(pieces_.back());
}

std::string LogLineFormat::Text(size_t rank) const {
  std::string out;
  out.reserve(1536);
  AppendText(rank, &out);
  return out;
}

logstore::ColumnsLayout LogLineFormat::Layout() const {
  using logstore::LogSlot;
  logstore::ColumnsLayout layout;
  layout.pieces = pieces_;
  for (const Field& f : fields_) {
    switch (f.source) {
      case Field::kItemId:
        layout.kinds.push_back(LogSlot::kItemId);
        break;
      case Field::kPosition:
        layout.kinds.push_back(LogSlot::kPosition);
        break;
      case Field::kPreRank:
        layout.kinds.push_back(LogSlot::kRequestIndex);
        break;
      case Field::kRecallRank:
        layout.kinds.push_back(LogSlot::kInt);
        break;
      case Field::kSource:
      case Field::kExplanation:
        layout.kinds.push_back(LogSlot::kString);
        break;
      default:
        layout.kinds.push_back(LogSlot::kNumber);
        break;
    }
  }
  layout.strings = v_.sources;
  layout.strings.insert(layout.strings.end(), explanation_strings_.begin(),
                        explanation_strings_.end());
  layout.items = static_cast<uint32_t>(v_.n);
  layout.top_items =
      layout.items == 0 ? 0 : std::max<uint32_t>(1, std::min<uint32_t>(v_.top_n, layout.items));
  return layout;
}

void LogLineFormat::WriteColumns(logstore::ColumnsWriter* writer) const {
  const size_t n = v_.n;
  std::vector<uint32_t> codes;
  for (const Field& f : fields_) {
    switch (f.source) {
      case Field::kItemId:
        writer->ItemIds(v_.ids, v_.id_ends.data());
        break;
      case Field::kPosition:
      case Field::kPreRank:
        break;
      case Field::kRecallRank:
        writer->Ints(v_.recall_rank.data());
        break;
      case Field::kSource:
        writer->Strings(v_.source_code.data());
        break;
      case Field::kExplanation:
        codes.resize(n);
        for (size_t c = 0; c < n; ++c) codes[c] = ExplanationIndex(c);
        writer->Strings(codes.data());
        break;
      case Field::kFeature:
        writer->Numbers(v_.features.data() + f.index * n);
        break;
      default:
        writer->Numbers(NumberColumn(f));
        break;
    }
  }
}

const double* LogLineFormat::NumberColumn(const Field& f) const {
  if (f.source == Field::kModel) return v_.model_values.data() + f.index * v_.n;
  return v_.score.data();
}

LogLineFormat::Bound LogLineFormat::TextBound() const {
  // Six significant digits with an exponent: "-1.23457e-308"; 64-bit ints.
  constexpr size_t kMaxNumber = 13;
  constexpr size_t kMaxInt = 20;
  Bound b;
  for (const std::string& piece : pieces_) b.shared_bytes += piece.size();
  size_t varying = 0;
  for (const Field& f : fields_) {
    switch (f.source) {
      case Field::kItemId:
      case Field::kSource:
      case Field::kExplanation:
        break;  // Counted per item by the caller.
      case Field::kPosition:
      case Field::kPreRank:
      case Field::kRecallRank:
        varying += kMaxInt;
        break;
      default:
        varying += kMaxNumber;
        break;
    }
  }
  if (v_.outputs->explains) varying += v_.outputs->explain_text_bound;
  b.fields = fields_.size();
  b.fixed_bytes = b.shared_bytes + varying;
  return b;
}

namespace {

// The deferred form of a request's log lines: the values, written when the
// log writer asks.
class RankLogRenderer final : public logstore::LogRenderer {
 public:
  explicit RankLogRenderer(std::unique_ptr<LogValues> values)
      : values_(std::move(values)), held_bytes_(HeldBytes(*values_)) {}
  ~RankLogRenderer() override {
    writer_.reset();  // It points into the values.
    if (std::shared_ptr<LogValuesPool> home = std::move(values_->home)) {
      home->Give(std::move(values_));
    }
  }

  size_t ItemCount() const override { return values_->n; }
  // What the queued values hold (the queue's byte bound is on memory): the
  // arrays, counted in O(1) on the ranking thread.
  size_t EstimatedBytes() const override { return held_bytes_; }

  void Render(std::vector<logstore::ItemLog>* items) override {
    LogLineFormat format(*values_);
    items->reserve(items->size() + values_->n);
    for (size_t r = 0; r < values_->n; ++r) {
      items->push_back(
          logstore::ItemLog{std::string(values_->id(values_->order[r])), format.Text(r)});
    }
  }

  bool RenderColumns(logstore::PackedFields* fields) override {
    const LogLineFormat format(*values_);
    const logstore::ColumnsLayout layout = format.Layout();
    // The layout and "#0" are copied into `fields` (a few KB); "#1" stays
    // in the values and the writer, which this renderer holds.
    writer_ = std::make_unique<logstore::ColumnsWriter>(layout, values_->order.data());
    format.WriteColumns(writer_.get());
    std::string layout_value;
    layout_value.reserve(2048);
    layout.AppendTo(&layout_value);
    fields->Reserve(layout_value.size() + writer_->top().size() + 256);
    fields->Add(logstore::kLayoutField, layout_value);
    fields->Add(logstore::kTopField, writer_->top());
    fields->AddPieces(logstore::kAllField, writer_->all());
    return true;
  }

 private:
  static size_t HeldBytes(const LogValues& v) {
    const auto bytes = [](const auto& vec) { return vec.size() * sizeof(vec[0]); };
    size_t explained = 0;
    for (const std::string& e : v.explanations) explained += e.size();
    return sizeof(v) + v.ids.size() + bytes(v.order) + bytes(v.id_ends) + bytes(v.source_code) +
           bytes(v.recall_rank) + bytes(v.features) + bytes(v.model_values) + bytes(v.score) +
           bytes(v.explanations) + explained;
  }

  std::unique_ptr<LogValues> values_;
  size_t held_bytes_;
  std::unique_ptr<logstore::ColumnsWriter> writer_;  // Once RenderColumns ran.
};

}  // namespace

std::unique_ptr<LogValues> LogValuesPool::Exchange(LogValues* values,
                                                   std::shared_ptr<LogValuesPool> self) {
  std::unique_ptr<LogValues> spare;
  {
    absl::MutexLock lock(&mu_);
    if (!free_.empty()) {
      spare = std::move(free_.back());
      free_.pop_back();
    }
  }
  auto out = std::make_unique<LogValues>(std::move(*values));
  *values = spare != nullptr ? std::move(*spare) : LogValues();
  out->home = std::move(self);
  return out;
}

void LogValuesPool::Give(std::unique_ptr<LogValues> values) {
  values->outputs.reset();  // A reloaded model's outputs are not kept alive.
  absl::MutexLock lock(&mu_);
  if (free_.size() < capacity_) free_.push_back(std::move(values));
}

std::unique_ptr<logstore::LogRenderer> MakeLogRenderer(std::unique_ptr<LogValues> values) {
  return std::make_unique<RankLogRenderer>(std::move(values));
}

}  // namespace rankwire
