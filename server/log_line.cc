#include "server/log_line.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace rankwire::server {

LogLineFormat::LogLineFormat(const LinearModel& model, const LogValues& values)
    : model_(model), v_(values) {
  prefix_ = absl::StrCat("req=", values.request_id, " ts=", values.request_time_ms,
                         " scene=", values.scene, " user=", values.user_id,
                         " bucket=", values.bucket, " model=", values.model_version, " item=");
  for (const auto& [key, value] : values.context) {
    absl::StrAppend(&context_, " ", key, "=\"", value, "\"");
  }
  feature_labels_.reserve(values.feature_names.size());
  for (const std::string& name : values.feature_names) {
    feature_labels_.push_back(absl::StrCat(" ", name, "="));
  }
  for (const LinearModel::Head& h : model.heads()) {
    std::vector<std::string>& labels = term_labels_.emplace_back();
    for (const LinearModel::Term& t : h.terms) labels.push_back(absl::StrCat(" ", t.input, ":"));
  }
}

LogLineFormat::Bound LogLineFormat::TextBound() const {
  // Six significant digits with an exponent: "-1.23457e-308".
  constexpr size_t kMaxDouble = 13;
  constexpr size_t kMaxInt = 20;
  Bound b;
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
  b.shared_bytes = shared;
  b.fixed_bytes = shared + numbers;
  b.fields = fields;
  return b;
}

std::string LogLineFormat::Text(size_t rank) const {
  std::string out;
  TextLine text(&out, 1536);
  Emit(text, rank);
  text.Finish();
  return out;
}

void LogLineFormat::EmitItemId(TextLine& out, absl::string_view id) { out.ItemId(id); }
// The record form leaves the item id out: it is the hash field's name.
void LogLineFormat::EmitItemId(logstore::LogRecordBuilder& out, absl::string_view) {
  out.ItemId();
}

TextLine::TextLine(std::string* out, size_t reserve) : out_(out) {
  out_->resize(reserve);
  p_ = out_->data();
}

void TextLine::Append(absl::string_view s) {
  Ensure(s.size());
  std::memcpy(p_, s.data(), s.size());
  p_ += s.size();
}

void TextLine::Int(int64_t v) {
  Ensure(24);
  p_ = std::to_chars(p_, p_ + 24, v).ptr;
}

void TextLine::Number(double v) { Append(absl::AlphaNum(absl::SixDigits(v)).Piece()); }

void TextLine::LabeledNumbers(const std::string* labels, const double* values, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    Append(labels[i]);
    Number(values[i]);
  }
}

void TextLine::Finish() { out_->resize(static_cast<size_t>(p_ - out_->data())); }

void TextLine::Ensure(size_t n) {
  const size_t used = static_cast<size_t>(p_ - out_->data());
  if (used + n > out_->size()) {
    out_->resize(std::max(out_->size() * 2, used + n));
    p_ = out_->data() + used;
  }
}

namespace {

// The deferred form of a request's log lines: the values, formatted when
// the log writer asks.
class RankLogRenderer final : public logstore::LogRenderer {
 public:
  RankLogRenderer(const LinearModel* model, std::unique_ptr<LogValues> values)
      : model_(model), values_(std::move(values)), estimated_bytes_(EstimateText()) {}

  size_t ItemCount() const override { return values_->n; }
  // The bound of the lines' text: the queue's and the writers' byte bounds
  // hold for requests whose lines are long, not only the shipped model's.
  size_t EstimatedBytes() const override { return estimated_bytes_; }

  void Render(std::vector<logstore::ItemLog>* items) override {
    LogLineFormat format(*model_, *values_);
    items->reserve(items->size() + values_->n);
    for (size_t r = 0; r < values_->n; ++r) {
      items->push_back(logstore::ItemLog{std::string(values_->id(values_->order[r])),
                                         format.Text(r)});
    }
  }

  bool RenderRecords(std::string* layout, logstore::PackedFields* fields) override {
    LogLineFormat format(*model_, *values_);
    logstore::LogRecordBuilder builder;
    const logstore::PackedFields::Mark start = fields->mark();
    // ~170-byte records and their ids: one growth of the buffer at most.
    fields->Reserve(values_->n * 256);
    for (size_t r = 0; r < values_->n; ++r) {
      format.Emit(builder, r);
      builder.FinishRecordInto(values_->id(values_->order[r]), fields);
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
  size_t EstimateText() const {
    const LogLineFormat::Bound bound = LogLineFormat(*model_, *values_).TextBound();
    size_t bytes = values_->n * bound.fixed_bytes + values_->ids.size();
    for (size_t c = 0; c < values_->n; ++c) {
      bytes += values_->sources[values_->source_code[c]].size();
    }
    return bytes;
  }

  const LinearModel* model_;
  std::unique_ptr<LogValues> values_;
  size_t estimated_bytes_;
};

}  // namespace

std::unique_ptr<logstore::LogRenderer> MakeLogRenderer(const LinearModel* model,
                                                       std::unique_ptr<LogValues> values) {
  return std::make_unique<RankLogRenderer>(model, std::move(values));
}

}  // namespace rankwire::server
