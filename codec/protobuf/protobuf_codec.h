// The "protobuf" codec: the baseline. The RankResult travels as the
// rank.v1.RankResult message, exactly as the source system sent it: metrics in
// a map<string,string> with numbers printed as text (shortest round-trip
// decimal, so values survive exactly), plus a small key -> type table so a
// reader can turn the text back into typed values.
//
// It cannot be lazy: Open() parses the whole message (that is the cost the
// custom codecs remove), but it does not build the C++ model; metric text is
// parsed only when read.
//
// Thread safety: immutable, safe to share.
#ifndef RANKWIRE_CODEC_PROTOBUF_PROTOBUF_CODEC_H_
#define RANKWIRE_CODEC_PROTOBUF_PROTOBUF_CODEC_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/codec.h"
#include "rank/v1/rank.pb.h"

namespace rankwire {

inline constexpr absl::string_view kProtobufCodecName = "protobuf";

class ProtobufCodec final : public Codec {
 public:
  absl::string_view name() const override { return kProtobufCodecName; }
  uint32_t format_version() const override { return 1; }
  BodyKind body_kind() const override { return BodyKind::kProtobufResult; }

  absl::StatusOr<OwnedBuffer> Encode(const RankResult& result) const override;
  absl::StatusOr<std::unique_ptr<ResultView>> Open(SharedBytes bytes) const override;
  // Numbers at their widest text, every key in every item.
  size_t EstimateEncodedBytes(const ResultBound& bound) const override;
};

// The model <-> message conversions the codec uses, for benchmarks and tests.
// ToProto: InvalidArgument if `result` breaks ValidateResult's invariants.
absl::Status ToProto(const RankResult& result, rank::v1::RankResult* out);
// DataLoss if a metric's text does not parse as its declared type or a
// metric has no declared type.
absl::StatusOr<RankResult> FromProto(const rank::v1::RankResult& message);

// The text form of a metric value in the baseline ("0.1", "-inf", "42").
void AppendMetricText(const MetricRef& value, std::string* out);
// Parses text written by AppendMetricText as `type`.
absl::StatusOr<MetricRef> ParseMetricText(MetricType type, absl::string_view text);

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_PROTOBUF_PROTOBUF_CODEC_H_
