#include "codec/codec.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rankwire {

std::optional<double> MetricRef::AsDouble() const {
  switch (type_) {
    case MetricType::kInt:
      return static_cast<double>(i_);
    case MetricType::kFloat:
    case MetricType::kDouble:
      return d_;
    case MetricType::kString:
      return std::nullopt;
  }
  return std::nullopt;
}

MetricRef MetricRef::Of(const MetricValue& v) {
  switch (v.type()) {
    case MetricType::kInt:
      return Int(v.int_value());
    case MetricType::kFloat:
      return Float(v.float_value());
    case MetricType::kDouble:
      return Double(v.double_value());
    case MetricType::kString:
      break;
  }
  return String(v.string_value());
}

MetricValue MetricRef::ToValue() const {
  switch (type_) {
    case MetricType::kInt:
      return MetricValue::Int(i_);
    case MetricType::kFloat:
      return MetricValue::Float(static_cast<float>(d_));
    case MetricType::kDouble:
      return MetricValue::Double(d_);
    case MetricType::kString:
      return MetricValue::String(std::string(s_));
  }
  return MetricValue();
}

absl::StatusOr<std::optional<MetricRef>> ItemRef::Metric(
    absl::string_view name) const {
  return view_->FindMetric(index_, name);
}

absl::Status ItemRef::ForEachMetric(MetricVisitor visit) const {
  return view_->ForEachMetric(index_, visit);
}

absl::StatusOr<absl::string_view> ItemRef::Log() const {
  return view_->Log(index_);
}

absl::StatusOr<RankedItem> ItemRef::Materialize() const {
  return view_->MaterializeItem(index_);
}

absl::StatusOr<std::vector<ItemRef>> ResultView::TopN(size_t n) const {
  std::vector<ItemRef> out;
  size_t count = std::min(n, size());
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(ItemRef item, Item(i));
    out.push_back(item);
  }
  return out;
}

absl::StatusOr<RankedItem> ResultView::MaterializeItem(size_t i) const {
  ASSIGN_OR_RETURN(ItemRef ref, Item(i));
  RankedItem item;
  item.item_id = std::string(ref.id());
  item.score = ref.score();
  item.position = ref.position();
  RETURN_IF_ERROR(ForEachMetric(i, [&](uint32_t key, const MetricRef& v) {
    item.metrics.push_back(MetricEntry{key, v.ToValue()});
  }));
  ASSIGN_OR_RETURN(absl::string_view log, Log(i));
  item.log = std::string(log);
  return item;
}

absl::StatusOr<RankResult> ResultView::Materialize() const {
  RankResult result;
  absl::Span<const MetricKey> k = keys();
  result.keys.assign(k.begin(), k.end());
  result.items.reserve(size());
  for (size_t i = 0; i < size(); ++i) {
    ASSIGN_OR_RETURN(RankedItem item, MaterializeItem(i));
    result.items.push_back(std::move(item));
  }
  return result;
}

absl::StatusOr<RankResult> Codec::Decode(SharedBytes bytes) const {
  ASSIGN_OR_RETURN(std::unique_ptr<ResultView> view, Open(std::move(bytes)));
  return view->Materialize();
}

}  // namespace rankwire
