#include "codec/builtin_codec_flags.h"

#include <cstdint>

#include "absl/flags/flag.h"
#include "absl/status/status.h"

ABSL_FLAG(uint32_t, rankbin_block_items, 16,
          "rankbin: items per block, the unit of lazy decompression.");
ABSL_FLAG(int, zstd_level, 1, "rankbin-zstd: zstd level (negative: fast modes).");
ABSL_FLAG(bool, zstd_values, false,
          "rankbin-zstd: also try to compress metric value blocks (they rarely shrink).");
ABSL_FLAG(bool, zstd_string_values, true,
          "rankbin-zstd: compress metric-value blocks made mostly of long plain strings "
          "(kept per block only where that saves 10 %).");
ABSL_FLAG(bool, zstd_logs, true, "rankbin-zstd: compress inline log blocks.");

namespace rankwire {

absl::StatusOr<BuiltinCodecOptions> BuiltinCodecOptionsFromFlags() {
  BuiltinCodecOptions o;
  o.writer.block_items = absl::GetFlag(FLAGS_rankbin_block_items);
  o.writer.zstd_level = absl::GetFlag(FLAGS_zstd_level);
  o.writer.compress_values = absl::GetFlag(FLAGS_zstd_values);
  o.writer.compress_logs = absl::GetFlag(FLAGS_zstd_logs);
  o.writer.compress_string_values = absl::GetFlag(FLAGS_zstd_string_values);
  if (o.writer.block_items == 0) {
    return absl::InvalidArgumentError("--rankbin_block_items must be at least 1");
  }
  return o;
}

}  // namespace rankwire
