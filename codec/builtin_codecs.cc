#include "codec/builtin_codecs.h"

#include <memory>

#include "codec/protobuf_codec.h"
#include "codec/rankbin/rankbin_codec.h"

namespace rankwire {

absl::StatusOr<CodecRegistry> MakeBuiltinCodecs(const BuiltinCodecOptions& options) {
  rankbin::ReaderOptions reader;
  reader.max_decoded_bytes = options.max_decoded_bytes;
  reader.max_materialized_bytes = options.max_materialized_bytes;
  rankbin::WriterOptions plain;
  plain.block_items = options.block_items;
  rankbin::WriterOptions zstd = plain;
  zstd.compress_values = options.zstd_values;
  zstd.compress_string_values = options.zstd_string_values;
  zstd.compress_logs = options.zstd_logs;
  zstd.zstd_level = options.zstd_level;
  zstd.min_saving = options.zstd_min_saving;

  CodecRegistry registry;
  absl::Status s = registry.Register(std::make_unique<ProtobufCodec>());
  if (s.ok()) {
    s = registry.Register(std::make_unique<RankbinCodec>(std::string(kRankbinCodecName), plain,
                                                         reader));
  }
  if (s.ok()) {
    s = registry.Register(std::make_unique<RankbinCodec>(std::string(kRankbinZstdCodecName),
                                                         zstd, reader));
  }
  if (!s.ok()) return s;
  return registry;
}

}  // namespace rankwire
