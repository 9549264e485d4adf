#include "ranking/rank_handler.h"

#include <string>

#include "codec/builtin_codecs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/row_result.h"
#include "tests/support/shipped_model_test.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

class RankHandlerTest : public ShippedModelTest {
 protected:
  void SetUp() override {
    ShippedModelTest::SetUp();
    if (HasFatalFailure()) return;
    absl::StatusOr<logstore::LogStore> store = logstore::OpenLogStore({});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    metrics_ = std::make_unique<ServerMetrics>(&registry_, codecs_->Names());
    RankHandlerOptions options;
    options.default_codec = codecs_->Find("rankbin");
    handler_ = std::make_unique<RankHandler>(models_.get(), codecs_.get(), store_.consumer.get(),
                                             metrics_.get(), options);
  }

  absl::StatusOr<EncodedResponse> Handle(const rank::v1::RankRequest& request) {
    return handler_->Handle(request, RankHandler::Clock::now(), 5);
  }
  absl::StatusOr<RankResult> Decode(const EncodedResponse& response) {
    const Codec* codec = codecs_->Find(response.header.codec());
    EXPECT_NE(codec, nullptr);
    return codec->Decode(SharedBytes::Unowned(response.body->view()));
  }
  static rank::v1::RankRequest Request(std::vector<std::string> accept, rank::v1::LogMode mode) {
    workload::WorkloadOptions options;
    options.accept_codecs = std::move(accept);
    options.log_mode = mode;
    return workload::WorkloadGenerator(options).Make(0);
  }

  logstore::LogStore store_;
  MetricsRegistry registry_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<RankHandler> handler_;
};

TEST_F(RankHandlerTest, NegotiatesTheCodecAndFillsTheHeader) {
  absl::StatusOr<EncodedResponse> r =
      Handle(Request({"nope", "rankbin-zstd"}, rank::v1::LOG_MODE_NONE));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->header.codec(), "rankbin-zstd");
  EXPECT_EQ(r->header.request_id(), "req-1352909-00000000");
  EXPECT_EQ(r->header.item_count(), 500u);
  EXPECT_EQ(r->header.format_version(), 1u);
  EXPECT_EQ(r->header.log_mode(), rank::v1::LOG_MODE_NONE);
  EXPECT_EQ(r->header.timings().request_deserialize_us(), 5u);
  EXPECT_GT(r->header.timings().rank_us(), 0u);
  EXPECT_EQ(r->body_kind, BodyKind::kOpaquePayload);

  r = Handle(Request({"protobuf"}, rank::v1::LOG_MODE_NONE));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->body_kind, BodyKind::kProtobufResult);
  r = Handle(Request({}, rank::v1::LOG_MODE_NONE));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header.codec(), "rankbin");  // The server default.
}

TEST_F(RankHandlerTest, InlineLogsTravelStoredLogsDoNot) {
  absl::StatusOr<EncodedResponse> inline_r = Handle(Request({}, rank::v1::LOG_MODE_INLINE));
  ASSERT_TRUE(inline_r.ok());
  absl::StatusOr<RankResult> with_logs = Decode(*inline_r);
  ASSERT_TRUE(with_logs.ok());
  EXPECT_GT(with_logs->log(0).size(), 1000u);

  absl::StatusOr<EncodedResponse> stored = Handle(Request({}, rank::v1::LOG_MODE_DEFAULT));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->header.log_mode(), rank::v1::LOG_MODE_STORE);
  EXPECT_EQ(stored->header.log_key(), "rank:log:req-1352909-00000000");
  absl::StatusOr<RankResult> without = Decode(*stored);
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE(without->has_logs());
  for (size_t i = 0; i < without->size(); ++i) EXPECT_EQ(without->log(i), "");
  // Everything else is the same.
  test::RowResult rows = test::RowResult::Of(*with_logs);
  for (RankedItem& item : rows.items) item.log.clear();
  EXPECT_EQ(DiffResults(rows.Build(), *without), "");

  // The logs reach the store.
  store_.consumer->Shutdown(absl::Seconds(5));
  EXPECT_EQ(store_.consumer->stats().items_stored, 500u);
  absl::StatusOr<std::vector<std::optional<std::string>>> logs =
      store_.reader->Fetch("req-1352909-00000000", {std::string(without->id(0))});
  ASSERT_TRUE(logs.ok()) << logs.status();
  ASSERT_TRUE((*logs)[0].has_value());
  EXPECT_THAT(*(*logs)[0], HasSubstr("pos=1 "));
}

TEST_F(RankHandlerTest, WithoutALogStoreStoreModeMeansNoLogs) {
  RankHandlerOptions options;
  options.default_codec = codecs_->Find("protobuf");
  RankHandler handler(models_.get(), codecs_.get(), nullptr, nullptr, options);
  absl::StatusOr<EncodedResponse> r =
      handler.Handle(Request({}, rank::v1::LOG_MODE_STORE), RankHandler::Clock::now(), 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->header.log_mode(), rank::v1::LOG_MODE_NONE);
  EXPECT_EQ(r->header.log_key(), "");
}

TEST_F(RankHandlerTest, InvalidRequestsAreRejectedAndCounted) {
  rank::v1::RankRequest request = Request({}, rank::v1::LOG_MODE_NONE);
  request.set_top_n(0);
  absl::StatusOr<EncodedResponse> r = Handle(request);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(metrics_->rank->count(), 0u);
  EXPECT_EQ(metrics_->validate->count(), 1u);
}

TEST_F(RankHandlerTest, UnknownFeaturesAreCountedAndListedInTheHeader) {
  rank::v1::RankRequest request = Request({}, rank::v1::LOG_MODE_NONE);
  request.set_item_feature_names(3, "reveiw_count");
  absl::StatusOr<EncodedResponse> r = Handle(request);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->header.unknown_item_features(), ::testing::ElementsAre("reveiw_count"));
  EXPECT_THAT(registry_.RenderPrometheus(),
              HasSubstr("rankwire_unknown_item_features_total{name=\"reveiw_count\"} 1\n"));
  absl::StatusOr<EncodedResponse> known = Handle(Request({}, rank::v1::LOG_MODE_NONE));
  ASSERT_TRUE(known.ok());
  EXPECT_EQ(known->header.unknown_item_features_size(), 0);
}

TEST_F(RankHandlerTest, UnknownFeaturesAreRefusedWhenTheServerSaysSo) {
  RankHandlerOptions options;
  options.default_codec = codecs_->Find("rankbin");
  options.unknown_features = UnknownFeaturePolicy::kReject;
  RankHandler strict(models_.get(), codecs_.get(), nullptr, metrics_.get(), options);
  rank::v1::RankRequest request = Request({}, rank::v1::LOG_MODE_NONE);
  request.set_item_feature_names(3, "reveiw_count");
  absl::StatusOr<EncodedResponse> r = strict.Handle(request, RankHandler::Clock::now(), 0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("does not know: reveiw_count (the server runs with "
                        "--unknown_features=reject)"));
}

TEST_F(RankHandlerTest, ACallPastItsDeadlineIsNotRanked) {
  absl::StatusOr<EncodedResponse> r =
      handler_->Handle(Request({}, rank::v1::LOG_MODE_NONE), RankHandler::Clock::now(), 0,
                       std::chrono::system_clock::now() - std::chrono::seconds(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(metrics_->rank->count(), 0u);
  EXPECT_EQ(metrics_->rejected.deadline->value(), 1u);
}

// A codec with a size cap, as a real format has one (protobuf's 2 GiB):
// over it, Encode says ResourceExhausted. The handler must pass that code on.
class CappedCodec final : public Codec {
 public:
  absl::string_view name() const override { return "capped"; }
  uint32_t format_version() const override { return 1; }
  BodyKind body_kind() const override { return BodyKind::kOpaquePayload; }
  absl::StatusOr<OwnedBuffer> Encode(const RankResult& result) const override {
    if (result.size() > 10) {
      return absl::ResourceExhaustedError("capped: more than 10 items");
    }
    return OwnedBuffer::CopyOf("ok");
  }
  absl::StatusOr<std::unique_ptr<ResultView>> Open(SharedBytes) const override {
    return absl::UnimplementedError("capped: encode-only");
  }
  size_t EstimateEncodedBytes(const ResultBound&) const override { return 2; }
};

TEST_F(RankHandlerTest, EncodeFailuresKeepTheCodecsCode) {
  CodecRegistry codecs;
  ASSERT_TRUE(codecs.Register(std::make_unique<CappedCodec>()).ok());
  RankHandlerOptions options;
  options.default_codec = codecs.Find("capped");
  RankHandler handler(models_.get(), &codecs, nullptr, nullptr, options);
  absl::StatusOr<EncodedResponse> r =
      handler.Handle(Request({}, rank::v1::LOG_MODE_NONE), RankHandler::Clock::now(), 0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("encoding with capped: capped: more than 10"));
}

TEST(RankHandlerDeathTest, NullDefaultCodecIsCaughtAtConstruction) {
  CodecRegistry codecs;
  EXPECT_DEATH(RankHandler(nullptr, &codecs, nullptr, nullptr, RankHandlerOptions{}),
               "default_codec is null");
}

}  // namespace
}  // namespace rankwire
