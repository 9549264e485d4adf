// The one place rankwire calls zstd. The rankbin-zstd codec compresses value
// blocks with it and the log store compresses log values with it; neither
// carries its own copy.
//
// Decompression never trusts a size from the input: the caller says how many
// bytes it expects (from a header it has already bounds-checked) or the most
// it will accept, and a frame that would exceed that is an error, not an
// allocation.
//
// Thread safety: all functions are thread-safe (contexts are per thread).
#ifndef RANKWIRE_CODEC_COMPRESSION_H_
#define RANKWIRE_CODEC_COMPRESSION_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rankwire::compression {

// Largest compressed size of `n` input bytes.
size_t ZstdBound(size_t n);

// Compresses `src` into one zstd frame in [dst, dst + dst_capacity) at
// `level` (negative levels are zstd's fast modes). The frame declares its
// content size; with `checksum` it also carries zstd's content checksum
// (XXH64, 4 bytes), which decompression verifies. Returns the compressed
// size. REQUIRES: dst_capacity >= ZstdBound(src.size()) or the call may fail
// with ResourceExhausted.
absl::StatusOr<size_t> ZstdCompressInto(absl::string_view src, int level, char* dst,
                                        size_t dst_capacity, bool checksum = false);
absl::StatusOr<std::string> ZstdCompress(absl::string_view src, int level);

// Decompresses one frame into exactly `dst_size` bytes. DataLoss if the
// frame is malformed, does not decompress to exactly `dst_size` bytes or its
// checksum does not match.
absl::Status ZstdDecompressExact(absl::string_view frame, char* dst, size_t dst_size);

// What a rankbin block's frame may be (docs/FORMAT.md, "Blocks"): exactly
// one zstd frame (not a skippable frame, no trailing bytes), no dictionary
// id, its content size declared and equal to `raw_size`, and, with
// `require_checksum`, a content checksum. DataLoss naming the first
// violation otherwise. Reads only the frame header (and walks the frame's
// block headers to find its end).
absl::Status CheckBlockFrame(absl::string_view frame, size_t raw_size, bool require_checksum);
// Decompresses one frame of at most `max_size` bytes. `frame` must be
// exactly one zstd frame (not a skippable frame, nothing after it) that
// declares its content size; DataLoss if it is not, ResourceExhausted if
// it declares more than `max_size`.
absl::StatusOr<std::string> ZstdDecompress(absl::string_view frame, size_t max_size);

}  // namespace rankwire::compression

#endif  // RANKWIRE_CODEC_COMPRESSION_H_
