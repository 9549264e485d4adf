#include "codec/builtin_codecs.h"

#include <memory>

#include "codec/protobuf_codec.h"

namespace rankwire {

absl::StatusOr<CodecRegistry> MakeBuiltinCodecs(const BuiltinCodecOptions& /*options*/) {
  CodecRegistry registry;
  if (absl::Status s = registry.Register(std::make_unique<ProtobufCodec>()); !s.ok()) {
    return s;
  }
  return registry;
}

}  // namespace rankwire
