// The built-in codecs' command-line flags, defined beside the codecs they
// configure so that a binary serving codecs (rankwire-server) maps them
// without naming a codec or knowing its options:
//
//   --rankbin_block_items  items per rankbin block (lazy decompression unit)
//   --zstd_level           rankbin-zstd's zstd level
//   --zstd_values          rankbin-zstd: try every metric-value block
//   --zstd_string_values   rankbin-zstd: try blocks of long plain strings
//   --zstd_logs            rankbin-zstd: compress inline log blocks
//
// Example (RETURN_IF_ERROR and ASSIGN_OR_RETURN are base/status_macros.h's):
//   ASSIGN_OR_RETURN(options.codecs, BuiltinCodecOptionsFromFlags());
//
// Thread safety: read the flags after parsing them, from any thread.
#ifndef RANKWIRE_CODEC_BUILTIN_CODEC_FLAGS_H_
#define RANKWIRE_CODEC_BUILTIN_CODEC_FLAGS_H_

#include "absl/status/statusor.h"
#include "codec/builtin_codecs.h"

namespace rankwire {

// The options the flags say; InvalidArgument for --rankbin_block_items=0.
absl::StatusOr<BuiltinCodecOptions> BuiltinCodecOptionsFromFlags();

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_BUILTIN_CODEC_FLAGS_H_
