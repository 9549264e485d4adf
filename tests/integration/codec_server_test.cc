// Every codec under test (tests/codecs/codecs_under_test.h: the built-ins
// and the test-only fixtures) served by a real server started in-process
// from the server library (server/server.h), called through the real client
// library. A codec that exists only in tests/ is negotiated, encoded, sent,
// decoded and held to the response budget like a built-in: the proof that
// adding a codec needs no product file changed (docs/ARCHITECTURE.md,
// "Adding a codec").
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/rank_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/codecs/codecs_under_test.h"
#include "tests/support/hostile_requests.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;

class CodecServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<CodecRegistry> codecs = test::MakeCodecsUnderTest();
    ASSERT_TRUE(codecs.ok()) << codecs.status();
    codecs_ = std::make_unique<CodecRegistry>(*std::move(codecs));
  }

  // A server on a free loopback port with every codec under test, no log
  // store and no side ports.
  std::unique_ptr<rankwire::Server> Start(size_t max_response_bytes = size_t{64} << 20) {
    rankwire::ServerOptions options;
    options.address = "127.0.0.1";
    options.port = 0;
    options.metrics_port = -1;
    options.model_path = RANKWIRE_MODEL_PATH;
    options.model_poll_interval = absl::ZeroDuration();
    options.log_store.reset();
    options.max_response_bytes = max_response_bytes;
    options.make_codecs = [](const BuiltinCodecOptions& o) { return test::MakeCodecsUnderTest(o); };
    absl::StatusOr<std::unique_ptr<rankwire::Server>> server = rankwire::Server::Start(options);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  client::RankClient Client(const rankwire::Server& server) {
    return client::RankClient(client::MakeChannel(absl::StrCat("127.0.0.1:", server.port())),
                              codecs_.get());
  }

  static rank::v1::RankRequest Request(const std::string& codec, rank::v1::LogMode log_mode) {
    workload::WorkloadOptions options;
    options.accept_codecs = {codec};
    options.log_mode = log_mode;
    return workload::WorkloadGenerator(options).Make(0);
  }

  std::unique_ptr<CodecRegistry> codecs_;
};

TEST_F(CodecServerTest, TheFixtureCodecsAreUnderTest) {
  // The registry has more than the built-ins, or this file proves nothing.
  absl::StatusOr<CodecRegistry> builtin = MakeBuiltinCodecs({});
  ASSERT_TRUE(builtin.ok()) << builtin.status();
  EXPECT_GT(codecs_->Names().size(), builtin->Names().size());
}

TEST_F(CodecServerTest, EveryCodecServesTheSameRankedResult) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);
  std::optional<RankResult> baseline;
  for (const std::string& name : codecs_->Names()) {
    for (rank::v1::LogMode mode : {rank::v1::LOG_MODE_INLINE, rank::v1::LOG_MODE_NONE}) {
      SCOPED_TRACE(absl::StrCat(name, " ", rank::v1::LogMode_Name(mode)));
      absl::StatusOr<client::RankReply> reply = client.Rank(Request(name, mode), {});
      ASSERT_TRUE(reply.ok()) << reply.status();
      EXPECT_EQ(reply->header().codec(), name);
      EXPECT_EQ(reply->header().item_count(), 500u);
      EXPECT_EQ(reply->header().log_mode(), mode);
      absl::StatusOr<RankResult> result = reply->view().Materialize();
      ASSERT_TRUE(result.ok()) << result.status();
      ASSERT_EQ(result->size(), 500u);
      for (size_t i = 0; i < result->size(); ++i) {
        EXPECT_EQ(result->position(i), i + 1);
        EXPECT_EQ(result->log(i).empty(), mode != rank::v1::LOG_MODE_INLINE);
      }
      if (mode != rank::v1::LOG_MODE_INLINE) continue;
      if (!baseline) {
        baseline = *result;
      } else {
        EXPECT_EQ(DiffResults(*baseline, *result), "");
      }
    }
  }
}

// The budget asks the negotiated codec for its estimate: a response too big
// is refused, naming the codec, whichever codec it is; the same request
// without inline logs is served.
TEST_F(CodecServerTest, TheBudgetSizesEveryCodec) {
  auto server = Start(size_t{2} << 20);  // The smallest limit a server takes.
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);
  for (const std::string& name : codecs_->Names()) {
    SCOPED_TRACE(name);
    absl::StatusOr<client::RankReply> refused =
        client.Rank(test::MaximalRequest(1000, rank::v1::LOG_MODE_INLINE, name.c_str()), {});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
    EXPECT_THAT(std::string(refused.status().message()),
                HasSubstr(absl::StrCat("items, codec ", name, ", logs inline")));
    absl::StatusOr<client::RankReply> served =
        client.Rank(Request(name, rank::v1::LOG_MODE_NONE), {});
    ASSERT_TRUE(served.ok()) << served.status();
    EXPECT_EQ(served->header().codec(), name);
  }
}

}  // namespace
}  // namespace rankwire
