#include "codec/codec.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace rankwire {

absl::StatusOr<std::optional<MetricRef>> ItemRef::Metric(absl::string_view name) const {
  return view_->FindMetricOf(*this, name);
}

absl::Status ItemRef::ForEachMetric(MetricVisitor visit) const {
  return view_->ForEachMetricOf(*this, visit);
}

absl::StatusOr<absl::string_view> ItemRef::Log() const { return view_->Log(index_); }

absl::StatusOr<RankedItem> ItemRef::Materialize() const { return view_->MaterializeItem(index_); }

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
  for (const MetricKey& k : keys()) result.AddKey(k.name, k.type);
  result.Reserve(size());
  absl::Status wrong;
  for (size_t i = 0; i < size(); ++i) {
    ASSIGN_OR_RETURN(ItemRef ref, Item(i));
    const size_t item = result.AddItem(ref.id(), ref.score(), ref.position());
    RETURN_IF_ERROR(ForEachMetricOf(ref, [&](uint32_t key, const MetricRef& v) {
      if (wrong.ok()) wrong = result.Set(item, key, v);
    }));
    // A view that hands out a value of another type than its key's is
    // broken (the codecs check types as they decode).
    if (!wrong.ok()) return absl::DataLossError(wrong.message());
    ASSIGN_OR_RETURN(absl::string_view log, Log(i));
    if (!log.empty()) result.SetLog(item, log);
  }
  return result;
}

absl::StatusOr<RankResult> Codec::Decode(SharedBytes bytes) const {
  ASSIGN_OR_RETURN(std::unique_ptr<ResultView> view, Open(std::move(bytes)));
  return view->Materialize();
}

}  // namespace rankwire
