// What the server spends on a Rank request, phase by phase: the prescan
// (PrescanRequest, a walk over the wire bytes that counts entries without
// allocating), the protobuf parse and ValidateRequest, each on the same
// serialized request read the way rank_service.cc reads it (a
// grpc::ByteBuffer through grpc::ProtoBufferReader); then, on the parsed
// request, the response budget's shape (Ranker::Shape) and the ranking
// itself with logs deferred to the store (Ranker::Rank, the shipped model).
// The questions it answers: what share of the request's decode cost the
// prescan adds, and what the phases before the codec cost next to ranking
// (docs/bench-notes/2026-12-01-prescan-cost.md).
//
// Requests: the workload generator's (the shipped payload shape) at 10, 500
// and 1000 candidates, and the same requests received as 8 KiB slices (what
// a large message looks like off the wire) as well as one slice.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "codec/builtin_codecs.h"
#include "grpcpp/impl/codegen/proto_utils.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "grpcpp/support/slice.h"
#include "model/linear/linear_model.h"
#include "rank/v1/rank.pb.h"
#include "ranking/ranker.h"
#include "ranking/response_budget.h"
#include "request/request_validator.h"
#include "request/request_view.h"
#include "workload/workload.h"

namespace rankwire::bench {
namespace {

// The serialized request for `candidates`, as `slice_bytes`-sized slices
// (0: one slice).
grpc::ByteBuffer RequestBuffer(uint32_t candidates, size_t slice_bytes) {
  workload::WorkloadOptions options;
  options.candidates = candidates;
  const std::string wire = workload::WorkloadGenerator(options).Make(1).SerializeAsString();
  std::vector<grpc::Slice> slices;
  const size_t step = slice_bytes == 0 ? wire.size() : slice_bytes;
  for (size_t at = 0; at < wire.size(); at += step) {
    const size_t n = std::min(step, wire.size() - at);
    slices.emplace_back(wire.data() + at, n);
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// The request a benchmark's arguments name: {candidates, slice bytes}.
grpc::ByteBuffer RequestBuffer(const benchmark::State& state) {
  return RequestBuffer(static_cast<uint32_t>(state.range(0)), static_cast<size_t>(state.range(1)));
}

// As rank_service.cc parses: from a copy, which the parse consumes.
bool Parse(const grpc::ByteBuffer& request, rank::v1::RankRequest* parsed) {
  grpc::ByteBuffer input(request);
  return grpc::SerializationTraits<rank::v1::RankRequest>::Deserialize(&input, parsed).ok();
}

void Args(benchmark::internal::Benchmark* b) {
  for (int64_t candidates : {10, 500, 1000}) {
    for (int64_t slice : {0, 8192}) b->Args({candidates, slice});
  }
  b->ArgNames({"candidates", "slice"});
}

void SetBytes(benchmark::State& state, const grpc::ByteBuffer& buffer) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * buffer.Length()));
}

void BM_Prescan(benchmark::State& state) {
  const grpc::ByteBuffer request = RequestBuffer(state);
  const rankwire::RequestLimits limits;
  for (auto _ : state) {
    grpc::ByteBuffer scanned(request);
    grpc::ProtoBufferReader reader(&scanned);
    const absl::Status status = rankwire::PrescanRequest(&reader, limits);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
  }
  SetBytes(state, request);
}
BENCHMARK(BM_Prescan)->Apply(Args);

void BM_Parse(benchmark::State& state) {
  const grpc::ByteBuffer request = RequestBuffer(state);
  for (auto _ : state) {
    rank::v1::RankRequest parsed;
    if (!Parse(request, &parsed)) {
      state.SkipWithError("the request did not parse");
      break;
    }
    benchmark::DoNotOptimize(parsed);
  }
  SetBytes(state, request);
}
BENCHMARK(BM_Parse)->Apply(Args);

// The parse and ValidateRequest (the work before the prescan existed), for
// the prescan's share of the whole.
void BM_ParseAndValidate(benchmark::State& state) {
  const grpc::ByteBuffer request = RequestBuffer(state);
  const rankwire::RequestLimits limits;
  for (auto _ : state) {
    rank::v1::RankRequest parsed;
    if (!Parse(request, &parsed)) {
      state.SkipWithError("the request did not parse");
      break;
    }
    const absl::Status status = rankwire::ValidateRequest(parsed, limits);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(parsed);
  }
  SetBytes(state, request);
}
BENCHMARK(BM_ParseAndValidate)->Apply(Args);

// The shipped model, loaded once.
const rankwire::LinearSpec* Model() {
  static const rankwire::LinearSpec* model = [] {
    absl::StatusOr<rankwire::LinearSpec> loaded =
        rankwire::LinearSpec::LoadFile(RANKWIRE_MODEL_PATH);
    return loaded.ok() ? new rankwire::LinearSpec(*std::move(loaded)) : nullptr;
  }();
  return model;
}

// The parsed request a benchmark's arguments name, or nullptr (and the
// benchmark skipped) when the model or the request is unusable.
std::shared_ptr<const rank::v1::RankRequest> ParsedRequest(benchmark::State& state) {
  auto parsed = std::make_shared<rank::v1::RankRequest>();
  if (Model() == nullptr) {
    state.SkipWithError("the model did not load");
    return nullptr;
  }
  if (!Parse(RequestBuffer(state), parsed.get())) {
    state.SkipWithError("the request did not parse");
    return nullptr;
  }
  return parsed;
}

void RankArgs(benchmark::internal::Benchmark* b) {
  for (int64_t candidates : {10, 500, 1000}) b->Args({candidates, 0});
  b->ArgNames({"candidates", "slice"});
}

// The response budget's estimate (run before ranking, on every call), on
// the request as the server holds it: a RequestView.
void BM_Shape(benchmark::State& state) {
  const std::shared_ptr<const rank::v1::RankRequest> request = ParsedRequest(state);
  if (request == nullptr) return;
  std::string storage;
  rankwire::RequestView view;
  if (!rankwire::RequestViewOf(*request, rankwire::RequestLimits{}, &storage, &view).ok()) {
    state.SkipWithError("the request did not make a view");
    return;
  }
  const rankwire::Ranker ranker(std::make_shared<rankwire::LinearModel>(*Model()));
  for (auto _ : state) {
    rankwire::OutputShape shape = ranker.Shape(view);
    benchmark::DoNotOptimize(shape);
  }
}
BENCHMARK(BM_Shape)->Apply(RankArgs);

// Ranking with logs for the store (rendered later, on a writer thread).
void BM_Rank(benchmark::State& state) {
  const std::shared_ptr<const rank::v1::RankRequest> request = ParsedRequest(state);
  if (request == nullptr) return;
  const rankwire::Ranker ranker(std::make_shared<rankwire::LinearModel>(*Model()));
  for (auto _ : state) {
    rankwire::RankOutput out = ranker.Rank(*request, rankwire::LogDetail::kDeferred);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Rank)->Apply(RankArgs);

// The server's phases of one Rank request, each hot: the same request
// parsed, validated, scored, built and encoded again and again on one
// thread, as RankServiceImpl::Rank and RankHandler::Handle call them (the
// shipped model, 500 candidates, rankbin, logs off). BM_Hot/<phase> repeats
// one phase on what the phases before it left (its input stays in cache);
// BM_Hot/all runs them in sequence, so each phase finds what the one before
// it left in cache and not its own previous round's. bench/cpu_budget.py
// sets the server's phase counters beside these (server cost / hot cost).
class HotRequest {
 public:
  explicit HotRequest(uint32_t candidates)
      : codecs_(*MakeBuiltinCodecs(BuiltinCodecOptions{})),
        codec_(codecs_.Find("rankbin")),
        ranker_(std::make_shared<LinearModel>(*Model())),
        budget_(64 << 20) {
    workload::WorkloadOptions options;
    options.candidates = candidates;
    bytes_ = workload::WorkloadGenerator(options).Make(1).SerializeAsString();
    for (const std::string& name : ranker_.model().item_features()) known_.insert(name);
  }
  bool ok() const { return codec_ != nullptr && ParseOnly().ok() && ValidateOnly().ok(); }

  absl::Status ParseOnly() const { return rankwire::ParseRequestView(bytes_, limits_, &view_); }
  absl::Status ValidateOnly() const {
    if (absl::Status s = rankwire::ValidateRequest(view_, limits_); !s.ok()) return s;
    unknown_ = rankwire::UnknownItemFeatures(view_, known_);
    bucket_ = &ranker_.BucketOf(view_.user_id);
    ranker_.Shape(view_, *bucket_, false, &shape_);
    return budget_.Check(view_, shape_, *codec_, rank::v1::LOG_MODE_NONE, codecs_);
  }
  void ScoreOnly() const { ranker_.Score(view_, &ws_); }
  void BuildOnly() const {
    ranker_.Build(view_, *bucket_, rankwire::LogDetail::kNone, &ws_, &result_);
  }
  absl::StatusOr<OwnedBuffer> EncodeOnly() const { return codec_->Encode(result_); }

 private:
  CodecRegistry codecs_;
  const Codec* codec_;
  rankwire::Ranker ranker_;
  rankwire::ResponseBudget budget_;
  rankwire::RequestLimits limits_;
  std::string bytes_;
  absl::flat_hash_set<std::string> known_;
  mutable rankwire::RequestView view_;
  mutable std::vector<std::string> unknown_;
  mutable const std::string* bucket_ = nullptr;
  mutable rankwire::OutputShape shape_;
  mutable rankwire::RankWorkspace ws_;
  mutable RankResult result_;
};

void BM_Hot(benchmark::State& state, int phase) {
  if (Model() == nullptr) {
    state.SkipWithError("the model did not load");
    return;
  }
  HotRequest r(static_cast<uint32_t>(state.range(0)));
  if (!r.ok()) {
    state.SkipWithError("the request did not parse or validate");
    return;
  }
  // Every phase's input in place once.
  r.ScoreOnly();
  r.BuildOnly();
  bool ok = true;
  for (auto _ : state) {
    if (phase == 0 || phase == 5) ok = ok && r.ParseOnly().ok();
    if (phase == 1 || phase == 5) ok = ok && r.ValidateOnly().ok();
    if (phase == 2 || phase == 5) r.ScoreOnly();
    if (phase == 3 || phase == 5) r.BuildOnly();
    if (phase == 4 || phase == 5) {
      absl::StatusOr<OwnedBuffer> body = r.EncodeOnly();
      ok = ok && body.ok();
      benchmark::DoNotOptimize(body);
    }
  }
  if (!ok) state.SkipWithError("a phase failed");
}
BENCHMARK_CAPTURE(BM_Hot, parse, 0)->Arg(500)->ArgName("candidates");
BENCHMARK_CAPTURE(BM_Hot, validate, 1)->Arg(500)->ArgName("candidates");
BENCHMARK_CAPTURE(BM_Hot, score, 2)->Arg(500)->ArgName("candidates");
BENCHMARK_CAPTURE(BM_Hot, build, 3)->Arg(500)->ArgName("candidates");
BENCHMARK_CAPTURE(BM_Hot, encode, 4)->Arg(500)->ArgName("candidates");
BENCHMARK_CAPTURE(BM_Hot, all, 5)->Arg(500)->ArgName("candidates");

}  // namespace
}  // namespace rankwire::bench

BENCHMARK_MAIN();
