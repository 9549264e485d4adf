// Codec turns a RankResult into response bytes and opens response bytes as a
// lazy ResultView. One Codec per wire format ("protobuf", "rankbin",
// "rankbin-zstd"); a CodecRegistry (codec/registry.h) holds them by name.
//
// Encode writes into one OwnedBuffer that the caller may hand to the
// transport without copying. Open does the least work the format allows and
// returns a view; items and metrics are decoded when read, so a caller that
// shows ten of five hundred items pays for ten. Materialize() decodes all.
//
// Example:
//   absl::StatusOr<OwnedBuffer> bytes = codec.Encode(result);
//   auto view = codec.Open(SharedBytes::FromBuffer(*std::move(bytes)));
//   for (const ItemRef& item : *(*view)->TopN(10)) {
//     auto ctr = item.Metric("score.ctr");  // StatusOr<optional<MetricRef>>
//   }
//
// Errors: malformed bytes give kDataLoss (or kInvalidArgument for values the
// format forbids, kResourceExhausted for sizes over a configured cap), from
// Open or from the read that meets them. Nothing here throws or aborts on
// input.
//
// Thread safety: a Codec is immutable after construction and safe to share.
// A ResultView and its ItemRefs may be read from many threads; views fill
// internal caches (decompressed blocks) under their own synchronization.
//
// Adding a codec takes four steps (brpc's protocol.h lists its own the
// same way):
//
//   1. Write it: codec/<name>/<name>_codec.{h,cc}, a Codec subclass with
//      name(), format_version(), body_kind() (codec/envelope.h), Encode,
//      Open and EstimateEncodedBytes (an upper bound on what Encode writes,
//      from a ResultBound: the server refuses, before ranking, a request
//      whose response would not fit), and a ResultView that decodes what is
//      read. Read and write bytes with codec/coding.h and compress with
//      codec/compression.h: no private varints, bounds checks or zstd calls.
//   2. Register it: one line in MakeBuiltinCodecs (codec/builtin_codecs.cc),
//        RETURN_IF_ERROR(registry.Register(std::make_unique<MyCodec>()));
//   3. Build it: one line in rankwire_codec's source list in
//      codec/CMakeLists.txt,
//        <name>/<name>_codec.cc
//   4. Read it in the other clients: the Python package's reader (a class
//      with _view.View's methods, python/src/rankwire/) named in _READERS
//      (python/src/rankwire/_result.py) with the RankResponse field its
//      bodies travel in, and its name in CODECS there; the Java client's
//      ResultView.open (java/src/main/java/io/rankwire/ResultView.java).
//      The conformance dump (tests/interop/conformance_dump.cc) writes
//      every built-in codec's payloads, so interop.python_conformance and
//      java.client's ConformanceIT fail until both read it.
//
// Nothing outside codec/ names a codec or knows its layout: the server
// negotiates the new codec, sizes its responses with its own estimate and
// lists it in --codec's help; the client decodes it. The conformance suite
// (codec/codec_conformance_test.cc), the codec fuzzer
// (tests/fuzz/codec_fuzzer.cc), the response budget test
// (ranking/response_budget_test.cc, the estimate against real sizes) and
// the in-process server test (tests/integration/codec_server_test.cc) run
// every codec of tests/codecs/codecs_under_test.h, which has the built-ins.
// Its fuzz seeds are generated: `rankwire_fuzz_seeds tests/fuzz/corpus`
// writes them (the ctest fuzz.seeds_current fails until it has).
// tests/codecs/identity_codec.* is a worked example that lives only in
// tests/: registered in tests/codecs/codecs_under_test.cc instead of step
// 2, built by tests/codecs/CMakeLists.txt instead of step 3, and (not a
// built-in: no client reads it) without step 4.
#ifndef RANKWIRE_CODEC_CODEC_H_
#define RANKWIRE_CODEC_CODEC_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "codec/buffer.h"
#include "codec/envelope.h"
#include "codec/rank_result.h"
#include "codec/result_bound.h"

namespace rankwire {

// Called once per metric of an item: the key's index in ResultView::keys()
// and the value.
using MetricVisitor = absl::FunctionRef<void(uint32_t key, const MetricRef&)>;

class ResultView;

// One item of a view: its hot fields, read when the ItemRef was made, and
// handles to read the rest. Cheap to copy; valid while its view lives.
// What a view already parsed of an item to make its ItemRef, kept in the
// ref so that reading the item's metrics does not parse it again (rankbin:
// the record's shape and values offset). Opaque to everyone but the view.
struct ItemCursor {
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t a = kNone;
  uint32_t b = 0;
};

class ItemRef {
 public:
  using Cursor = ItemCursor;

  ItemRef(const ResultView* view, size_t index, absl::string_view id, double score,
          uint32_t position, Cursor cursor = {})
      : view_(view), index_(index), id_(id), score_(score), position_(position), cursor_(cursor) {}

  size_t index() const { return index_; }
  const Cursor& cursor() const { return cursor_; }
  absl::string_view id() const { return id_; }
  double score() const { return score_; }
  uint32_t position() const { return position_; }

  // nullopt when the item has no metric of that name.
  absl::StatusOr<std::optional<MetricRef>> Metric(absl::string_view name) const;
  absl::Status ForEachMetric(MetricVisitor visit) const;
  // Empty when logs were not sent inline.
  absl::StatusOr<absl::string_view> Log() const;
  absl::StatusOr<RankedItem> Materialize() const;

 private:
  const ResultView* view_;
  size_t index_;
  absl::string_view id_;
  double score_;
  uint32_t position_;
  Cursor cursor_;
};

class ResultView {
 public:
  virtual ~ResultView() = default;

  virtual size_t size() const = 0;
  // The metric key table of the result.
  virtual absl::Span<const MetricKey> keys() const = 0;
  // Item i's id, score and position; reads nothing else.
  // OutOfRange if i >= size(); DataLoss if the item's bytes are malformed.
  virtual absl::StatusOr<ItemRef> Item(size_t i) const = 0;
  virtual absl::StatusOr<std::optional<MetricRef>> FindMetric(size_t i,
                                                              absl::string_view name) const = 0;
  virtual absl::Status ForEachMetric(size_t i, MetricVisitor visit) const = 0;
  virtual absl::StatusOr<absl::string_view> Log(size_t i) const = 0;
  // The same for an ItemRef this view made; a view may use its cursor to
  // skip re-reading the item. By default, by index.
  virtual absl::StatusOr<std::optional<MetricRef>> FindMetricOf(const ItemRef& item,
                                                                absl::string_view name) const {
    return FindMetric(item.index(), name);
  }
  virtual absl::Status ForEachMetricOf(const ItemRef& item, MetricVisitor visit) const {
    return ForEachMetric(item.index(), visit);
  }

  // The first min(n, size()) items. By default Item(0), Item(1), ...; a
  // view may read them in one pass, with the same items and errors.
  virtual absl::StatusOr<std::vector<ItemRef>> TopN(size_t n) const;
  // Decodes item i completely, as an owning copy (metric keys refer to
  // keys()).
  virtual absl::StatusOr<RankedItem> MaterializeItem(size_t i) const;
  // Decodes everything into a columnar result (O(keys) allocations).
  virtual absl::StatusOr<RankResult> Materialize() const;
};

class Codec {
 public:
  virtual ~Codec() = default;

  // The name on the wire and in flags: "protobuf", "rankbin", ...
  virtual absl::string_view name() const = 0;
  virtual uint32_t format_version() const = 0;
  // Which RankResponse field carries this codec's bytes (codec/envelope.h).
  virtual BodyKind body_kind() const = 0;

  // InvalidArgument if `result` breaks ValidateResult's invariants or the
  // format's limits.
  virtual absl::StatusOr<OwnedBuffer> Encode(const RankResult& result) const = 0;
  virtual absl::StatusOr<std::unique_ptr<ResultView>> Open(SharedBytes bytes) const = 0;

  // An upper bound on the bytes Encode writes for any result within
  // `bound`, close enough to be a refusal threshold (server/
  // response_budget_test.cc holds every codec to at most 2x the real size,
  // 3.5x with compressed logs). O(bound.items) arithmetic; allocates
  // nothing.
  virtual size_t EstimateEncodedBytes(const ResultBound& bound) const = 0;
  // Whether Encode compresses inline log lines: when logs inline make a
  // response too big, the server suggests such codecs.
  virtual bool compresses_logs() const { return false; }

  // Open + Materialize.
  absl::StatusOr<RankResult> Decode(SharedBytes bytes) const;
};

}  // namespace rankwire

#endif  // RANKWIRE_CODEC_CODEC_H_
