// The codecs rankwire ships, registered explicitly: main() (and tests, and
// benchmarks) call MakeBuiltinCodecs() and pass the registry on.
//
// To add a codec: see docs/ARCHITECTURE.md, "Adding a codec".
#ifndef RANKWIRE_CODEC_BUILTIN_CODECS_H_
#define RANKWIRE_CODEC_BUILTIN_CODECS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "codec/protobuf/protobuf_codec.h"
#include "codec/rankbin/reader.h"
#include "codec/rankbin/writer.h"
#include "codec/registry.h"

namespace rankwire {

struct BuiltinCodecOptions {
  // How "rankbin-zstd" writes: block size (the unit of lazy decompression;
  // 16 keeps a top-10 read inside one block: the compression study,
  // docs/bench-notes/2026-11-29-compression-study.md), zstd level and
  // which columns are compressed. Numeric metric values never compress
  // below 97.7 % of raw (floats), so every VALUES block is tried only with
  // compress_values; blocks made mostly of long plain strings (debug traces
  // kept as metrics), which do compress, are tried by default
  // (compress_string_values), and so are logs.
  // "rankbin" writes the same way with compression off.
  rankbin::WriterOptions writer = DefaultWriterOptions();
  // Both rankbin codecs read with these caps.
  rankbin::ReaderOptions reader;

  static rankbin::WriterOptions DefaultWriterOptions() {
    rankbin::WriterOptions w;
    w.compress_logs = true;
    w.compress_string_values = true;
    return w;
  }
};

// The codec a server answers with when a request accepts none it has, and
// rankwire-server's --codec default: the baseline, which every client of
// the source system decodes.
inline constexpr absl::string_view kDefaultCodecName = kProtobufCodecName;

// "protobuf" (the baseline), "rankbin" and "rankbin-zstd", in that order.
absl::StatusOr<CodecRegistry> MakeBuiltinCodecs(const BuiltinCodecOptions& options);

// The built-in codecs' names, comma-separated, from the registry itself:
// what the binaries' --codec help lists, so it cannot go stale.
std::string BuiltinCodecNames();

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_BUILTIN_CODECS_H_
