// The codecs rankwire ships, registered explicitly: main() (and tests, and
// benchmarks) call MakeBuiltinCodecs() and pass the registry on.
//
// To add a codec: see docs/ARCHITECTURE.md, "Adding a codec".
#ifndef RANKWIRE_CODEC_BUILTIN_CODECS_H_
#define RANKWIRE_CODEC_BUILTIN_CODECS_H_

#include "absl/status/statusor.h"
#include "codec/registry.h"

namespace rankwire {

struct BuiltinCodecOptions {
  // Placeholder-free: options are added with the codecs that read them.
};

// "protobuf" (the baseline) and the custom codecs, in that order.
absl::StatusOr<CodecRegistry> MakeBuiltinCodecs(const BuiltinCodecOptions& options);

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_BUILTIN_CODECS_H_
