#include "tests/codecs/codecs_under_test.h"

#include <memory>

#include "base/status_macros.h"
#include "tests/codecs/identity_codec.h"

namespace rankwire::test {

absl::StatusOr<CodecRegistry> MakeCodecsUnderTest(const BuiltinCodecOptions& options) {
  ASSIGN_OR_RETURN(CodecRegistry registry, MakeBuiltinCodecs(options));
  // Fixture codecs, one line each.
  RETURN_IF_ERROR(registry.Register(std::make_unique<IdentityCodec>()));
  return registry;
}

}  // namespace rankwire::test
