#include "codec/builtin_codecs.h"

#include <memory>
#include <string>

#include "absl/strings/str_join.h"

#include "base/status_macros.h"
#include "codec/protobuf/protobuf_codec.h"
#include "codec/rankbin/rankbin_codec.h"

namespace rankwire {

absl::StatusOr<CodecRegistry> MakeBuiltinCodecs(const BuiltinCodecOptions& options) {
  rankbin::WriterOptions plain = options.writer;
  plain.compress_values = false;
  plain.compress_string_values = false;
  plain.compress_logs = false;

  CodecRegistry registry;
  RETURN_IF_ERROR(registry.Register(std::make_unique<ProtobufCodec>()));
  RETURN_IF_ERROR(registry.Register(
      std::make_unique<RankbinCodec>(std::string(kRankbinCodecName), plain, options.reader)));
  RETURN_IF_ERROR(registry.Register(std::make_unique<RankbinCodec>(
      std::string(kRankbinZstdCodecName), options.writer, options.reader)));
  return registry;
}

std::string BuiltinCodecNames() {
  absl::StatusOr<CodecRegistry> registry = MakeBuiltinCodecs({});
  if (!registry.ok()) return registry.status().ToString();
  return absl::StrJoin(registry->Names(), ", ");
}

}  // namespace rankwire
