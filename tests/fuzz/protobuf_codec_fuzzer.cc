// libFuzzer target: the protobuf codec's decoder (codec/protobuf_codec.h)
// over any bytes. Opens the message, reads everything lazily, materializes
// it, and checks the invariants in view_checks.h.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "codec/buffer.h"
#include "codec/protobuf_codec.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/fuzz/view_checks.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Invalid UTF-8 in a string field makes protobuf log an error per input;
  // that is expected here and would drown the fuzzer's own output.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const rankwire::ProtobufCodec* const codec = new rankwire::ProtobufCodec;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto view = codec->Open(rankwire::SharedBytes::Unowned(bytes));
  if (!view.ok()) return 0;
  rankwire::fuzz::ExerciseView(**view, *codec);
  return 0;
}
