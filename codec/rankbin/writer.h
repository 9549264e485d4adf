// WriteRankbin encodes a RankResult in the rankbin format (docs/FORMAT.md)
// into one buffer allocated once: an analysis pass finds the item shapes
// (which keys an item carries, in which order), the string dictionaries and
// the sizes (exact, but for a few bytes per item record and up to 9 per int
// value), then one write
// pass fills the buffer: VALUES and LOGS first, then ITEMS, whose records
// point at values written by then.
//
// Compression (rankbin-zstd) is per block of `block_items` items and per
// column (metric values, logs), so a reader decompresses only the blocks of
// the items it reads; a block stays raw when compressing it saves less than
// `min_saving`.
//
// Thread safety: thread-safe (scratch memory is per thread).
#ifndef RANKWIRE_CODEC_RANKBIN_WRITER_H_
#define RANKWIRE_CODEC_RANKBIN_WRITER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "codec/buffer.h"
#include "codec/rank_result.h"

namespace rankwire::rankbin {

struct WriterOptions {
  // Items per VALUES/LOGS block; the unit of lazy decompression.
  uint32_t block_items = 16;
  // Try to compress every VALUES block (numbers rarely pay: see
  // docs/bench-notes/2026-11-29-compression-study.md).
  bool compress_values = false;
  // Try to compress the VALUES blocks made mostly of long plain strings
  // (keys without a dictionary), which do pay; kept per block only where
  // they save min_saving.
  bool compress_string_values = false;
  bool compress_logs = false;
  // zstd level; negative levels are zstd's fast modes.
  int zstd_level = 1;
  // zstd's content checksum in every frame. Format 1.1 requires it (its
  // readers reject frames without it); off only to measure what it costs.
  bool zstd_checksum = true;
  // A compressed block is kept only if it is at most (1 - min_saving) of
  // the raw block.
  double min_saving = 0.10;
  // A string key gets a dictionary only while it has at most this many
  // distinct values (and only if the dictionary is smaller).
  uint32_t max_dict_entries = 4096;
  // A string key keeps its dictionary only if, among its first 64 values,
  // at most this share are distinct (the rest are repeats), and, below 1,
  // not if its first 16 values are all distinct. Decided early so that long
  // distinct strings are not hashed for nothing.
  double dict_distinct_threshold = 0.5;
};

// InvalidArgument if `result` breaks ValidateResult's invariants (every one
// is checked on the way), or a block or section exceeds 4 GiB.
absl::StatusOr<OwnedBuffer> WriteRankbin(const RankResult& result, const WriterOptions& options);

}  // namespace rankwire::rankbin

#endif  // RANKWIRE_CODEC_RANKBIN_WRITER_H_
