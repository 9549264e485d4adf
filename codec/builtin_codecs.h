// The codecs rankwire ships, registered explicitly: main() (and tests, and
// benchmarks) call MakeBuiltinCodecs() and pass the registry on.
//
// To add a codec: see docs/ARCHITECTURE.md, "Adding a codec".
#ifndef RANKWIRE_CODEC_BUILTIN_CODECS_H_
#define RANKWIRE_CODEC_BUILTIN_CODECS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "codec/registry.h"

namespace rankwire {

struct BuiltinCodecOptions {
  // Items per rankbin block (the unit of lazy decompression). 16 keeps a
  // top-10 read inside one block (BENCHMARKS.md, compression study).
  uint32_t block_items = 16;
  // rankbin-zstd: zstd level and which columns are compressed. Numeric
  // metric values never compress below 97.7 % of raw (floats), so every
  // VALUES block is tried only with zstd_values; blocks made mostly of long
  // plain strings (debug traces kept as metrics) are tried with
  // zstd_string_values; logs always. Level 1 is the best size for its speed
  // here.
  int zstd_level = 1;
  bool zstd_values = false;
  bool zstd_string_values = true;
  bool zstd_logs = true;
  // A compressed block is kept only if it saves at least this fraction.
  double zstd_min_saving = 0.10;
  // Readers: most bytes one payload's compressed blocks may decode to, and
  // most bytes Materialize() may build from one payload.
  uint64_t max_decoded_bytes = uint64_t{256} << 20;
  uint64_t max_materialized_bytes = uint64_t{256} << 20;
};

// "protobuf" (the baseline), "rankbin" and "rankbin-zstd", in that order.
absl::StatusOr<CodecRegistry> MakeBuiltinCodecs(const BuiltinCodecOptions& options);

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_BUILTIN_CODECS_H_
