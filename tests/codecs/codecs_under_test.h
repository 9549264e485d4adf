// The codecs the conformance suite, the codec fuzzer, the seed generator,
// the response budget test (ranking/response_budget_test.cc) and the
// in-process server test (tests/integration/codec_server_test.cc) run:
// every built-in codec (MakeBuiltinCodecs) plus the test-only fixture
// codecs of this folder. A new product codec is registered in
// codec/builtin_codecs.cc and arrives here by itself; a fixture codec is
// registered below (one line in codecs_under_test.cc).
//
// Thread safety: the registry is built once per call; share it read-only.
#ifndef RANKWIRE_TESTS_CODECS_CODECS_UNDER_TEST_H_
#define RANKWIRE_TESTS_CODECS_CODECS_UNDER_TEST_H_

#include "absl/status/statusor.h"
#include "codec/builtin_codecs.h"
#include "codec/registry.h"

namespace rankwire::test {

// Built-ins first, in their order, then the fixtures. A codec's index in
// Names() is its byte in the codec fuzzer's corpus, so codecs are only ever
// appended.
absl::StatusOr<CodecRegistry> MakeCodecsUnderTest(const BuiltinCodecOptions& options = {});

}  // namespace rankwire::test

#endif  // RANKWIRE_TESTS_CODECS_CODECS_UNDER_TEST_H_
