// The custom codecs: "rankbin" (values and logs uncompressed) and
// "rankbin-zstd" (value and log blocks zstd-compressed where that pays).
// Both write the rankbin format (docs/FORMAT.md) and open it lazily; they
// differ only in WriterOptions, and either reads both.
//
// Thread safety: immutable, safe to share.
#ifndef RANKWIRE_CODEC_RANKBIN_RANKBIN_CODEC_H_
#define RANKWIRE_CODEC_RANKBIN_RANKBIN_CODEC_H_

#include <memory>
#include <string>

#include "codec/codec.h"
#include "codec/rankbin/reader.h"
#include "codec/rankbin/writer.h"

namespace rankwire {

inline constexpr absl::string_view kRankbinCodecName = "rankbin";
inline constexpr absl::string_view kRankbinZstdCodecName = "rankbin-zstd";

class RankbinCodec final : public Codec {
 public:
  RankbinCodec(std::string name, rankbin::WriterOptions writer, rankbin::ReaderOptions reader)
      : name_(std::move(name)), writer_(writer), reader_(reader) {}

  absl::string_view name() const override { return name_; }
  uint32_t format_version() const override;
  BodyKind body_kind() const override { return BodyKind::kOpaquePayload; }

  absl::StatusOr<OwnedBuffer> Encode(const RankResult& result) const override;
  absl::StatusOr<std::unique_ptr<ResultView>> Open(SharedBytes bytes) const override;
  // Numbers at their widest varint, value blocks uncompressed; log blocks
  // modelled as compressed when the writer compresses logs (a line in full
  // per block, then each further line's varying bytes).
  size_t EstimateEncodedBytes(const ResultBound& bound) const override;
  bool compresses_logs() const override { return writer_.compress_logs; }

  const rankbin::WriterOptions& writer_options() const { return writer_; }

 private:
  std::string name_;
  rankbin::WriterOptions writer_;
  rankbin::ReaderOptions reader_;
};

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_RANKBIN_RANKBIN_CODEC_H_
