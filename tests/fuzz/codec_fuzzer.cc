// libFuzzer target: every codec's decoder over any bytes. The first input
// byte picks the codec (its index in test::MakeCodecsUnderTest(), modulo the
// count), the rest is the body: the codec opens it, every lazy read runs,
// it is materialized, and the invariants of view_checks.h are checked. A
// codec registered in codec/builtin_codecs.cc or tests/codecs/ is fuzzed
// with no change here; rankwire_fuzz_seeds writes its seeds.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "codec/buffer.h"
#include "google/protobuf/stubs/logging.h"
#include "tests/codecs/codecs_under_test.h"
#include "tests/fuzz/view_checks.h"

namespace {

// Caps well under libFuzzer's 2 GB RSS limit, so a hostile size claim is
// refused rather than reported as an out-of-memory crash; small zstd blocks
// with every column compressed, so what decodes re-encodes through the
// compressing writer too.
rankwire::BuiltinCodecOptions FuzzOptions() {
  rankwire::BuiltinCodecOptions options;
  options.reader.max_decoded_bytes = 64 << 20;
  options.reader.max_materialized_bytes = 64 << 20;
  options.writer.block_items = 3;
  options.writer.compress_values = true;
  options.writer.compress_logs = true;
  options.writer.min_saving = 0;
  return options;
}

// The registry and its codecs by index, reachable from one static so the
// leak checker sees them as in use.
struct Registry {
  rankwire::CodecRegistry registry;
  std::vector<const rankwire::Codec*> by_index;
};

const std::vector<const rankwire::Codec*>& Codecs() {
  static const Registry* const codecs = [] {
    auto registry = rankwire::test::MakeCodecsUnderTest(FuzzOptions());
    if (!registry.ok()) {
      std::fprintf(stderr, "codec_fuzzer: %s\n", registry.status().ToString().c_str());
      std::abort();
    }
    auto* out = new Registry{*std::move(registry), {}};
    for (const std::string& name : out->registry.Names()) {
      out->by_index.push_back(out->registry.Find(name));
    }
    return out;
  }();
  return codecs->by_index;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Invalid UTF-8 in a protobuf string field makes protobuf log an error per
  // input; that is expected here and would drown the fuzzer's own output.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::vector<const rankwire::Codec*>& codecs = Codecs();
  const rankwire::Codec& codec = *codecs[data[0] % codecs.size()];
  const absl::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto view = codec.Open(rankwire::SharedBytes::Unowned(body));
  if (!view.ok()) return 0;
  rankwire::fuzz::ExerciseView(**view, codec);
  return 0;
}
