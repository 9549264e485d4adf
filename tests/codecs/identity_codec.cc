#include "tests/codecs/identity_codec.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codec/protobuf_codec.h"
#include "rank/v1/rank.pb.h"

namespace rankwire::test {
namespace {

// A view over a decoded RankResult: every read is a lookup.
class DecodedView final : public ResultView {
 public:
  explicit DecodedView(RankResult result) : result_(std::move(result)) {}

  size_t size() const override { return result_.items.size(); }
  absl::Span<const MetricKey> keys() const override { return result_.keys; }

  absl::StatusOr<ItemRef> Item(size_t i) const override {
    RETURN_IF_ERROR(Check(i));
    const RankedItem& item = result_.items[i];
    return ItemRef(this, i, item.item_id, item.score, item.position);
  }
  absl::StatusOr<std::optional<MetricRef>> FindMetric(size_t i,
                                                      absl::string_view name) const override {
    RETURN_IF_ERROR(Check(i));
    const MetricValue* v = result_.FindMetric(i, name);
    if (v == nullptr) return std::nullopt;
    return MetricRef::Of(*v);
  }
  absl::Status ForEachMetric(size_t i, MetricVisitor visit) const override {
    RETURN_IF_ERROR(Check(i));
    for (const MetricEntry& e : result_.items[i].metrics) visit(e.key, MetricRef::Of(e.value));
    return absl::OkStatus();
  }
  absl::StatusOr<absl::string_view> Log(size_t i) const override {
    RETURN_IF_ERROR(Check(i));
    return absl::string_view(result_.items[i].log);
  }

 private:
  absl::Status Check(size_t i) const {
    if (i < size()) return absl::OkStatus();
    return absl::OutOfRangeError(absl::StrCat("item ", i, " of ", size()));
  }

  RankResult result_;
};

}  // namespace

absl::StatusOr<OwnedBuffer> IdentityCodec::Encode(const RankResult& result) const {
  RETURN_IF_ERROR(ValidateResult(result));
  rank::v1::RankResult message;
  RETURN_IF_ERROR(ToProto(result, &message));
  return OwnedBuffer::CopyOf(message.SerializeAsString());
}

absl::StatusOr<std::unique_ptr<ResultView>> IdentityCodec::Open(SharedBytes bytes) const {
  rank::v1::RankResult message;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError("identity: the body is not a rank.v1.RankResult");
  }
  ASSIGN_OR_RETURN(RankResult result, FromProto(message));
  RETURN_IF_ERROR(ValidateResult(result));
  return std::unique_ptr<ResultView>(std::make_unique<DecodedView>(std::move(result)));
}

}  // namespace rankwire::test
