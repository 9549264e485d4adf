// OpenRankbin opens a rankbin payload (docs/FORMAT.md) as a lazy ResultView.
//
// Open checks the structure (header, section table, key table, the shape,
// item and block counts) and allocates nothing proportional to the
// payload: items are parsed when read, shapes and block directory entries
// are checked on first use (docs/FORMAT.md, "What a lazy reader checks"),
// metric values stay in the payload (or in a block decompressed on first
// read) until visited, and a compressed block is decompressed at most once,
// only when one of its items' values or logs is read.
//
// Every read is bounds-checked; every count and length is checked against
// the bytes that remain before it sizes anything; decompressed bytes and the
// model Materialize() builds are capped (ReaderOptions). Malformed input
// gives DataLoss (ResourceExhausted for caps, Unimplemented for a newer major
// version).
//
// Thread safety: the view may be read from many threads; shapes and block
// directories are parsed under a lock, block decompression is guarded by a
// once-flag per block.
#ifndef RANKWIRE_CODEC_RANKBIN_READER_H_
#define RANKWIRE_CODEC_RANKBIN_READER_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "codec/buffer.h"
#include "codec/codec.h"

namespace rankwire::rankbin {

struct ReaderOptions {
  // Most bytes all compressed blocks of one payload may decompress to.
  uint64_t max_decoded_bytes = uint64_t{256} << 20;
  // Most bytes of ids, metrics and logs Materialize() may build. Items may
  // share a dictionary value, so a small payload could otherwise
  // materialize to gigabytes.
  uint64_t max_materialized_bytes = uint64_t{256} << 20;
};

absl::StatusOr<std::unique_ptr<ResultView>> OpenRankbin(SharedBytes bytes,
                                                        const ReaderOptions& options);

}  // namespace rankwire::rankbin

#endif  // RANKWIRE_CODEC_RANKBIN_READER_H_
