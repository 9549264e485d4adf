// Reference encodings for the codec benchmarks, outside the product's code
// path: tuned protobuf (bench/tuned_rank.proto), FlatBuffers
// (bench/tuned_rank.fbs) and Cap'n Proto (bench/tuned_rank.capnp). All three
// use the design rankbin uses — metric keys once per message, items naming
// their keys through a shape, typed values in one column per type, strings as
// indexes into a per-message dictionary — so the rows compare formats, not
// schema choices.
//
// Each encoder starts from the RankResult model and does the analysis a
// server would (shapes from the columns' presence, the dictionary from the
// string columns' entry codes, code checks) before writing, reading values
// from the columns. Each decoder reads back into the model's columns (a
// dictionary string becomes one entry its items share, as rankbin's reader
// does) and checks every index it follows and every key's type against the
// column it comes in; FlatBuffers payloads are verified first, since a
// server's response is untrusted input to its client.
//
// Thread safety: plain functions; no shared state.
#ifndef RANKWIRE_BENCH_REFERENCE_FORMATS_H_
#define RANKWIRE_BENCH_REFERENCE_FORMATS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "capnp/message.h"
#include "codec/rank_result.h"
#include "flatbuffers/flatbuffers.h"
#include "tuned_rank.pb.h"

namespace rankwire::bench {

// What a top-N read touched, so the compiler cannot drop the reads. Values
// are folded in with integer ops (1-cycle latency), so the sink costs next
// to nothing next to the reads it keeps alive; a floating-point sum would be
// a chain of 4-cycle adds through every value.
struct Touched {
  uint64_t bits = 0;
  size_t chars = 0;

  void Number(double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof(b));
    bits = (bits ^ b) + 1;
  }
  void Integer(int64_t v) { bits = (bits ^ static_cast<uint64_t>(v)) + 1; }
  void Text(absl::string_view s) {
    chars += s.size();
    bits += 1;
  }
};

// Tuned protobuf ------------------------------------------------------------

// InvalidArgument if a string code is past its column's entries.
absl::Status BuildTunedProto(const RankResult& result, tuned::Result* out);
absl::StatusOr<RankResult> TunedProtoToModel(const tuned::Result& message);

// FlatBuffers ---------------------------------------------------------------

// `initial_size` sizes the builder's buffer (one allocation when it is
// enough).
absl::StatusOr<flatbuffers::DetachedBuffer> EncodeFlatbuffers(const RankResult& result,
                                                              size_t initial_size);
// Verifies, then reads everything.
absl::StatusOr<RankResult> DecodeFlatbuffers(absl::string_view bytes);
// Verifies, then reads the first `n` items: hot fields, every metric, log.
absl::Status TopNFlatbuffers(absl::string_view bytes, size_t n, Touched* touched);
bool VerifyFlatbuffers(absl::string_view bytes);

// Cap'n Proto ---------------------------------------------------------------

// Builds the message in a MallocMessageBuilder whose first segment has
// `first_segment_words` words (one segment when that is enough). The
// builder's segments are what a transport would send.
absl::StatusOr<std::unique_ptr<capnp::MallocMessageBuilder>> EncodeCapnp(
    const RankResult& result, unsigned first_segment_words);
// `words` is the flat serialized message (segment table + segments), 8-byte
// aligned.
absl::StatusOr<RankResult> DecodeCapnp(kj::ArrayPtr<const capnp::word> words);
absl::Status TopNCapnp(kj::ArrayPtr<const capnp::word> words, size_t n, Touched* touched);

}  // namespace rankwire::bench

#endif  // RANKWIRE_BENCH_REFERENCE_FORMATS_H_
