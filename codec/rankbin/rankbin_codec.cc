#include "codec/rankbin/rankbin_codec.h"

#include "codec/rankbin/format.h"

namespace rankwire {

uint32_t RankbinCodec::format_version() const { return rankbin::kMajorVersion; }

absl::StatusOr<OwnedBuffer> RankbinCodec::Encode(const RankResult& result) const {
  return rankbin::WriteRankbin(result, writer_);
}

absl::StatusOr<std::unique_ptr<ResultView>> RankbinCodec::Open(SharedBytes bytes) const {
  return rankbin::OpenRankbin(std::move(bytes), reader_);
}

}  // namespace rankwire
