#include "codec/protobuf/protobuf_codec.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codec/coding.h"

namespace rankwire {
namespace {

using ProtoResult = rank::v1::RankResult;

// Longest shortest-round-trip text of a double is 24 characters.
constexpr size_t kNumberTextMax = 32;

template <typename T>
size_t NumberText(T v, char (&buf)[kNumberTextMax]) {
  std::to_chars_result r = std::to_chars(buf, buf + kNumberTextMax, v);
  return static_cast<size_t>(r.ptr - buf);
}

template <typename T>
bool ParseNumber(absl::string_view text, T* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  std::from_chars_result r = std::from_chars(text.data(), end, *out);
  return r.ec == std::errc() && r.ptr == end;
}

absl::Status BadText(absl::string_view key, size_t item, MetricType type, absl::string_view text) {
  return absl::DataLossError(absl::StrCat("protobuf: item ", item, " metric \"", key, "\": \"",
                                          text.substr(0, 40), "\" is not a valid ",
                                          MetricTypeName(type)));
}

// The lazy side of the baseline: the parsed message, with metric text turned
// into values only when read.
class ProtobufResultView final : public ResultView {
 public:
  static absl::StatusOr<std::unique_ptr<ProtobufResultView>> Make(
      std::unique_ptr<ProtoResult> message) {
    auto view = std::unique_ptr<ProtobufResultView>(new ProtobufResultView(std::move(message)));
    RETURN_IF_ERROR(view->BuildKeys());
    return view;
  }

  size_t size() const override { return message_->items_size(); }
  absl::Span<const MetricKey> keys() const override { return keys_; }

  absl::StatusOr<ItemRef> Item(size_t i) const override {
    if (i >= size()) return OutOfRange(i);
    const rank::v1::RankedItem& item = message_->items(static_cast<int>(i));
    return ItemRef(this, i, item.item_id(), item.score(), item.position());
  }

  absl::StatusOr<std::optional<MetricRef>> FindMetric(size_t i,
                                                      absl::string_view name) const override {
    if (i >= size()) return OutOfRange(i);
    const auto& metrics = message_->items(static_cast<int>(i)).metrics();
    auto it = metrics.find(std::string(name));
    if (it == metrics.end()) return std::nullopt;
    auto key = index_.find(name);
    if (key == index_.end()) return Undeclared(name, i);
    absl::StatusOr<MetricRef> v = ParseMetricText(keys_[key->second].type, it->second);
    if (!v.ok()) return BadText(name, i, keys_[key->second].type, it->second);
    return std::optional<MetricRef>(*v);
  }

  absl::Status ForEachMetric(size_t i, MetricVisitor visit) const override {
    if (i >= size()) return OutOfRange(i);
    for (const auto& [name, text] : message_->items(static_cast<int>(i)).metrics()) {
      auto key = index_.find(name);
      if (key == index_.end()) return Undeclared(name, i);
      MetricType type = keys_[key->second].type;
      absl::StatusOr<MetricRef> v = ParseMetricText(type, text);
      if (!v.ok()) return BadText(name, i, type, text);
      visit(key->second, *v);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<absl::string_view> Log(size_t i) const override {
    if (i >= size()) return OutOfRange(i);
    return absl::string_view(message_->items(static_cast<int>(i)).log());
  }

 private:
  explicit ProtobufResultView(std::unique_ptr<ProtoResult> message)
      : message_(std::move(message)) {}

  absl::Status BuildKeys() {
    keys_.reserve(message_->metric_types_size());
    for (const auto& [name, type_number] : message_->metric_types()) {
      std::optional<MetricType> type = MetricTypeFromNumber(type_number);
      if (!type) {
        return absl::DataLossError(absl::StrCat("protobuf: metric_types[\"", name, "\"] = ",
                                                type_number, " is not a known metric type"));
      }
      keys_.push_back(MetricKey{name, *type});
    }
    // Map order is unspecified; sort so the key table is deterministic.
    std::sort(keys_.begin(), keys_.end(),
              [](const MetricKey& a, const MetricKey& b) { return a.name < b.name; });
    index_.reserve(keys_.size());
    for (size_t k = 0; k < keys_.size(); ++k) {
      index_.emplace(keys_[k].name, static_cast<uint32_t>(k));
    }
    return absl::OkStatus();
  }

  absl::Status OutOfRange(size_t i) const {
    return absl::OutOfRangeError(absl::StrCat("item ", i, " out of range (", size(), " items)"));
  }
  static absl::Status Undeclared(absl::string_view name, size_t i) {
    return absl::DataLossError(
        absl::StrCat("protobuf: item ", i, " metric \"", name, "\" has no entry in metric_types"));
  }

  std::unique_ptr<ProtoResult> message_;
  std::vector<MetricKey> keys_;
  // Views into keys_ names; keys_ is not resized after BuildKeys().
  absl::flat_hash_map<absl::string_view, uint32_t> index_;
};

}  // namespace

void AppendMetricText(const MetricRef& value, std::string* out) {
  char buf[kNumberTextMax];
  switch (value.type()) {
    case MetricType::kInt:
      out->append(buf, NumberText(value.int_value(), buf));
      return;
    case MetricType::kFloat:
      out->append(buf, NumberText(value.float_value(), buf));
      return;
    case MetricType::kDouble:
      out->append(buf, NumberText(value.double_value(), buf));
      return;
    case MetricType::kString:
      out->append(value.string_value().data(), value.string_value().size());
      return;
  }
}

absl::StatusOr<MetricRef> ParseMetricText(MetricType type, absl::string_view text) {
  switch (type) {
    case MetricType::kInt: {
      int64_t v;
      if (ParseNumber(text, &v)) return MetricRef::Int(v);
      break;
    }
    case MetricType::kFloat: {
      float v;
      if (ParseNumber(text, &v)) return MetricRef::Float(v);
      break;
    }
    case MetricType::kDouble: {
      double v;
      if (ParseNumber(text, &v)) return MetricRef::Double(v);
      break;
    }
    case MetricType::kString:
      return MetricRef::String(text);
  }
  return absl::DataLossError(
      absl::StrCat("\"", text.substr(0, 40), "\" is not a valid ", MetricTypeName(type)));
}

absl::Status ToProto(const RankResult& result, ProtoResult* out) {
  out->Clear();
  auto* types = out->mutable_metric_types();
  for (const MetricKey& key : result.keys()) {
    // The reader rejects type numbers outside MetricType; so does the writer.
    if (!MetricTypeFromNumber(static_cast<int>(key.type))) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric key \"", key.name, "\" has no valid type"));
    }
    auto [it, inserted] = types->insert({key.name, static_cast<rank::v1::MetricType>(key.type)});
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric key \"", key.name, "\" appears twice"));
    }
  }
  RETURN_IF_ERROR(ValidateResult(result));
  out->mutable_items()->Reserve(static_cast<int>(result.size()));
  std::string text;
  for (size_t i = 0; i < result.size(); ++i) {
    rank::v1::RankedItem* p = out->add_items();
    p->set_item_id(std::string(result.id(i)));
    p->set_score(result.score(i));
    p->set_position(result.position(i));
    auto* metrics = p->mutable_metrics();
    for (uint32_t k = 0; k < result.key_count(); ++k) {
      const Column& c = result.column(k);
      if (!c.present(i)) continue;
      text.clear();
      AppendMetricText(c.at(i), &text);
      (*metrics)[result.key(k).name] = text;
    }
    if (!result.log(i).empty()) p->set_log(std::string(result.log(i)));
  }
  return absl::OkStatus();
}

absl::StatusOr<RankResult> FromProto(const ProtoResult& message) {
  auto copy = std::make_unique<ProtoResult>(message);
  ASSIGN_OR_RETURN(std::unique_ptr<ProtobufResultView> view,
                   ProtobufResultView::Make(std::move(copy)));
  return view->Materialize();
}

absl::StatusOr<OwnedBuffer> ProtobufCodec::Encode(const RankResult& result) const {
  ProtoResult message;
  RETURN_IF_ERROR(ToProto(result, &message));
  size_t size = message.ByteSizeLong();
  if (size > INT_MAX) {
    return absl::ResourceExhaustedError(
        absl::StrCat("protobuf: RankResult of ", size, " bytes exceeds 2 GiB"));
  }
  OwnedBuffer out = OwnedBuffer::Allocate(size);
  message.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data()));
  out.set_size(size);
  return out;
}

absl::StatusOr<std::unique_ptr<ResultView>> ProtobufCodec::Open(SharedBytes bytes) const {
  if (bytes.size() > INT_MAX) {
    return absl::ResourceExhaustedError(
        absl::StrCat("protobuf: payload of ", bytes.size(), " bytes exceeds 2 GiB"));
  }
  auto message = std::make_unique<ProtoResult>();
  if (!message->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError(
        absl::StrCat("protobuf: ", bytes.size(), " bytes do not parse as rank.v1.RankResult"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ProtobufResultView> view,
                   ProtobufResultView::Make(std::move(message)));
  return std::unique_ptr<ResultView>(std::move(view));
}

namespace {

// A length-delimited field (tag < 16) holding `len` bytes.
size_t PbField(size_t len) { return 1 + coding::VarintLength(len) + len; }

size_t Digits(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

// Widest text of a value (shortest round-trip decimal:
// "-2.2250738585072014e-308", "-1.17549435e-38"; ints with a sign).
size_t ValueTextBound(const KeyBound& key, size_t item_string_bytes) {
  switch (key.type) {
    case MetricType::kDouble:
      return 24;
    case MetricType::kFloat:
      return 15;
    case MetricType::kInt:
      return 1 + Digits(key.max_int);
    case MetricType::kString:
      return key.per_item_string ? item_string_bytes : key.string_bytes;
  }
  return 24;
}

}  // namespace

// Per item: id, score (fixed64), position, the metrics map and the log
// line; before them the key -> type table.
size_t ProtobufCodec::EstimateEncodedBytes(const ResultBound& bound) const {
  // Everything but the per-item string is the same size for every item.
  size_t metrics_fixed = 0;
  size_t types = 0;
  const KeyBound* item_key = nullptr;
  for (const KeyBound& key : bound.keys) {
    const size_t name = PbField(key.name.size());
    types += PbField(name + 2);
    if (key.per_item_string) {
      item_key = &key;
      continue;
    }
    metrics_fixed += PbField(name + PbField(ValueTextBound(key, 0)));
  }
  const size_t position = 1 + coding::VarintLength(bound.items);
  size_t total = types;
  for (size_t i = 0; i < bound.items; ++i) {
    size_t item = PbField(bound.ids[i].size()) + 9 + position + metrics_fixed;
    if (item_key != nullptr) {
      item += PbField(PbField(item_key->name.size()) + PbField(bound.ItemStringBytes(i)));
    }
    if (bound.logs) item += PbField(bound.LogLineBytes(i));
    total += PbField(item);
  }
  return total;
}

}  // namespace rankwire
