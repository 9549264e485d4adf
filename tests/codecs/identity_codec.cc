#include "tests/codecs/identity_codec.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codec/protobuf/protobuf_codec.h"
#include "rank/v1/rank.pb.h"

namespace rankwire::test {
namespace {

// A view over a decoded RankResult: every read is a lookup in its columns.
class DecodedView final : public ResultView {
 public:
  explicit DecodedView(RankResult result) : result_(std::move(result)) {}

  size_t size() const override { return result_.size(); }
  absl::Span<const MetricKey> keys() const override { return result_.keys(); }

  absl::StatusOr<ItemRef> Item(size_t i) const override {
    RETURN_IF_ERROR(Check(i));
    return ItemRef(this, i, result_.id(i), result_.score(i), result_.position(i));
  }
  absl::StatusOr<std::optional<MetricRef>> FindMetric(size_t i,
                                                      absl::string_view name) const override {
    RETURN_IF_ERROR(Check(i));
    return result_.FindMetric(i, name);
  }
  // An item's metrics are its keys' columns that have a value for it.
  absl::Status ForEachMetric(size_t i, MetricVisitor visit) const override {
    RETURN_IF_ERROR(Check(i));
    for (uint32_t k = 0; k < result_.key_count(); ++k) {
      const Column& column = result_.column(k);
      if (column.present(i)) visit(k, column.at(i));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<absl::string_view> Log(size_t i) const override {
    RETURN_IF_ERROR(Check(i));
    return result_.log(i);
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

size_t IdentityCodec::EstimateEncodedBytes(const ResultBound& bound) const {
  return ProtobufCodec().EstimateEncodedBytes(bound);
}

}  // namespace rankwire::test
