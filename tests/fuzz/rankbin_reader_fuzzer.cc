// libFuzzer target: the rankbin reader (codec/rankbin/reader.h) over any
// bytes. Opens the payload, reads everything lazily, materializes it, and
// checks the invariants in view_checks.h.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "codec/buffer.h"
#include "codec/rankbin/rankbin_codec.h"
#include "codec/rankbin/reader.h"
#include "tests/fuzz/view_checks.h"

namespace {

// Caps well under libFuzzer's 2 GB RSS limit, so a hostile size claim is
// refused rather than reported as an out-of-memory crash.
rankwire::rankbin::ReaderOptions Limits() {
  rankwire::rankbin::ReaderOptions options;
  options.max_decoded_bytes = 64 << 20;
  options.max_materialized_bytes = 64 << 20;
  return options;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using rankwire::RankbinCodec;
  // Re-encoding what decodes goes through the plain writer or the zstd one.
  static const RankbinCodec* const plain =
      new RankbinCodec("rankbin", rankwire::rankbin::WriterOptions{}, Limits());
  static const RankbinCodec* const zstd = [] {
    rankwire::rankbin::WriterOptions w;
    w.block_items = 3;
    w.compress_values = w.compress_logs = true;
    w.min_saving = 0;
    return new RankbinCodec("rankbin-zstd", w, Limits());
  }();

  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto view = rankwire::rankbin::OpenRankbin(rankwire::SharedBytes::Unowned(bytes), Limits());
  if (!view.ok()) return 0;
  rankwire::fuzz::ExerciseView(**view, size % 2 == 0 ? *plain : *zstd);
  return 0;
}
