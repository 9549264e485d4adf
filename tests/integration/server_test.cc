// Integration tests: the real rankwire-server binary on a free port, called
// through the real client library; Redis tests use a real redis-server.
#include <grpcpp/generic/generic_stub.h>
#include <signal.h>

#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "client/rank_client.h"
#include "codec/builtin_codecs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/redis_process.h"
#include "tests/support/server_process.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

using test::ServerProcess;
using ::testing::AnyOf;
using ::testing::HasSubstr;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs({});
    ASSERT_TRUE(codecs.ok()) << codecs.status();
    codecs_ = std::make_unique<CodecRegistry>(*std::move(codecs));
  }

  std::unique_ptr<ServerProcess> Start(const std::vector<std::string>& flags = {}) {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(flags);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  client::RankClient Client(const ServerProcess& server) {
    return client::RankClient(client::MakeChannel(server.target()), codecs_.get());
  }

  static rank::v1::RankRequest Request(std::vector<std::string> accept = {},
                                       rank::v1::LogMode log_mode = rank::v1::LOG_MODE_DEFAULT,
                                       uint64_t sequence = 0) {
    workload::WorkloadOptions options;
    options.accept_codecs = std::move(accept);
    options.log_mode = log_mode;
    return workload::WorkloadGenerator(options).Make(sequence);
  }

  std::unique_ptr<CodecRegistry> codecs_;
};

TEST_F(ServerTest, EveryCodecReturnsTheSameRankedResult) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);

  std::optional<RankResult> baseline;
  for (const std::string& name : codecs_->Names()) {
    SCOPED_TRACE(name);
    absl::StatusOr<client::RankReply> reply =
        client.Rank(Request({name}, rank::v1::LOG_MODE_INLINE), {});
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->header().codec(), name);
    EXPECT_EQ(reply->header().item_count(), 500u);
    EXPECT_EQ(reply->header().request_id(), "req-1352909-00000000");
    EXPECT_EQ(reply->header().log_mode(), rank::v1::LOG_MODE_INLINE);
    EXPECT_EQ(reply->header().model_version(), "ecom_search_lr@2026.11.3");
    EXPECT_GT(reply->header().timings().rank_us(), 0u);
    EXPECT_GE(reply->header().timings().total_us(), reply->header().timings().rank_us());

    absl::StatusOr<RankResult> result = reply->view().Materialize();
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->size(), 500u);
    for (size_t i = 0; i < result->size(); ++i) {
      EXPECT_EQ(result->position(i), i + 1);
      if (i > 0) {
        EXPECT_LE(result->score(i), result->score(i - 1));
      }
      EXPECT_GT(result->log(i).size(), 800u);
    }
    if (!baseline) {
      baseline = *result;
    } else {
      EXPECT_EQ(DiffResults(*baseline, *result), "");
    }
  }
}

TEST_F(ServerTest, ProtobufBaselineWithLogsIsTheSeedShapedPayload) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  absl::StatusOr<client::RankReply> reply =
      Client(*server).Rank(Request({"protobuf"}, rank::v1::LOG_MODE_INLINE), {});
  ASSERT_TRUE(reply.ok()) << reply.status();
  // The source system's response: about 1.2 MB for 500 items.
  EXPECT_GE(reply->response_bytes(), 1100u * 1000);
  EXPECT_LE(reply->response_bytes(), 1300u * 1000);
}

TEST_F(ServerTest, DefaultCodecComesFromTheFlagAndUnknownAcceptsFallBack) {
  auto server = Start({"--codec=rankbin"});
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);
  for (const auto& accept :
       std::vector<std::vector<std::string>>{{}, {"no-such-codec"}, {"no-such-codec", "rankbin"}}) {
    absl::StatusOr<client::RankReply> reply = client.Rank(Request(accept), {});
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->header().codec(), "rankbin");
  }
  absl::StatusOr<client::RankReply> reply =
      client.Rank(Request({"no-such-codec", "rankbin-zstd", "rankbin"}), {});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header().codec(), "rankbin-zstd");
}

TEST_F(ServerTest, FlagfileSetsTheCodec) {
  const std::string path = ::testing::TempDir() + "/rankwire-test.flags";
  {
    std::ofstream flags(path);
    flags << "--codec=rankbin-zstd\n--max_candidates=600\n";
  }
  auto server = Start({"--flagfile=" + path});
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);
  absl::StatusOr<client::RankReply> reply = client.Rank(Request(), {});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->header().codec(), "rankbin-zstd");

  workload::WorkloadOptions options;
  options.candidates = 601;
  absl::StatusOr<client::RankReply> too_many =
      client.Rank(workload::WorkloadGenerator(options).Make(0), {});
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(too_many.status().message()), HasSubstr("limit of 600"));
}

TEST_F(ServerTest, BadStartupFlagsFailWithAMessage) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--codec=gzip-json"});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("unknown codec \"gzip-json\""));
  for (const auto& [flags, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--log_writer_cpus=4096"},
            "--log_writer_cpus: CPU list \"4096\": CPU 4096 does not exist"},
           {{"--log_writer_cpus=1-0"}, "is not a CPU or an ascending range"},
           {{"--latency_slice_us=-5"}, "--latency_slice_us must be >= 0"},
           {{"--rank_workers=-1"}, "--rank_workers must be >= 0"},
           {{"--rank_workers=3", "--max_concurrent_rank=2"},
            "--rank_workers=3 exceeds --max_concurrent_rank (2)"}}) {
    server = ServerProcess::Start(flags);
    ASSERT_FALSE(server.ok()) << flags.front();
    EXPECT_THAT(std::string(server.status().message()), HasSubstr(message)) << flags.front();
  }
}

TEST_F(ServerTest, BadRequestsGetInvalidArgumentAndTheServerKeepsServing) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);

  struct Case {
    std::string name;
    std::function<void(rank::v1::RankRequest*)> mutate;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"no candidates", [](auto* r) { r->clear_candidates(); }, "no candidates"},
      {"too many candidates",
       [](auto* r) {
         const rank::v1::Candidate first = r->candidates(0);
         for (int i = r->candidates_size(); i < 1001; ++i) {
           rank::v1::Candidate* c = r->add_candidates();
           *c = first;
           c->set_item_id(absl::StrCat("extra-", i));
         }
       },
       "1001 candidates exceed the limit of 1000"},
      {"empty request id", [](auto* r) { r->clear_request_id(); }, "request_id is empty"},
      {"top_n zero", [](auto* r) { r->set_top_n(0); }, "top_n 0 is out of range [1, 500]"},
      {"top_n too large", [](auto* r) { r->set_top_n(501); }, "top_n 501 is out of range"},
      {"duplicate item ids",
       [](auto* r) { r->mutable_candidates(7)->set_item_id(r->candidates(3).item_id()); },
       "at candidates[3] and candidates[7]"},
      {"nan feature", [](auto* r) { r->mutable_candidates(2)->set_features(5, std::nanf("")); },
       "candidates[2].features[5] (ctr_7d) is nan"},
      {"infinite user feature",
       [](auto* r) { (*r->mutable_user_features())["user_activity"] = INFINITY; },
       "user_features[\"user_activity\"] is inf"},
      {"feature count mismatch",
       [](auto* r) { r->mutable_candidates(4)->mutable_features()->RemoveLast(); },
       "candidates[4] has 17 features"},
      {"empty item id", [](auto* r) { r->mutable_candidates(9)->clear_item_id(); },
       "candidates[9].item_id is empty"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    rank::v1::RankRequest request = Request();
    c.mutate(&request);
    absl::StatusOr<client::RankReply> reply = client.Rank(request, {});
    ASSERT_FALSE(reply.ok());
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument) << reply.status();
    EXPECT_THAT(std::string(reply.status().message()), HasSubstr(c.message));
  }

  // Bytes that are not a RankRequest at all.
  grpc::GenericStub stub(client::MakeChannel(server->target()));
  grpc::ClientContext context;
  const char garbage[] = "\xff\xff\xff\xff not protobuf";
  grpc::Slice slice(garbage, sizeof(garbage) - 1);
  grpc::ByteBuffer request(&slice, 1), response;
  absl::Notification done;
  grpc::Status status;
  stub.UnaryCall(&context, "/rank.v1.RankService/Rank", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  absl::StatusOr<client::RankReply> good = client.Rank(Request(), {});
  EXPECT_TRUE(good.ok()) << good.status();
}

TEST_F(ServerTest, StoredLogsAreOffTheWireAndFetchableForTheItemsShown) {
  auto server = Start({"--codec=rankbin"});
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);

  absl::StatusOr<client::RankReply> inline_reply =
      client.Rank(Request({}, rank::v1::LOG_MODE_INLINE), {});
  ASSERT_TRUE(inline_reply.ok()) << inline_reply.status();
  absl::StatusOr<client::RankReply> stored =
      client.Rank(Request({}, rank::v1::LOG_MODE_DEFAULT), {});
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->header().log_mode(), rank::v1::LOG_MODE_STORE);
  EXPECT_EQ(stored->header().log_key(), "rank:log:req-1352909-00000000");
  EXPECT_LT(stored->response_bytes(), inline_reply->response_bytes() / 4);

  absl::StatusOr<std::vector<ItemRef>> top = stored->view().TopN(10);
  ASSERT_TRUE(top.ok()) << top.status();
  std::vector<std::string> ids;
  for (const ItemRef& item : *top) {
    absl::StatusOr<absl::string_view> log = item.Log();
    ASSERT_TRUE(log.ok());
    EXPECT_EQ(*log, "");
    ids.emplace_back(item.id());
  }
  ids.push_back("sku-not-ranked");
  // The writer thread formats and stores them after the response is sent:
  // they appear within milliseconds, well inside the 1 s TTL.
  absl::StatusOr<std::vector<client::ItemLogResult>> logs;
  for (int attempt = 0; attempt < 100; ++attempt) {
    logs = client.FetchLogs(stored->header().request_id(), ids, {});
    ASSERT_TRUE(logs.ok()) << logs.status();
    if ((*logs)[0].log.has_value()) break;
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_EQ(logs->size(), ids.size());
  for (size_t i = 0; i < 10; ++i) {
    ASSERT_TRUE((*logs)[i].log.has_value()) << ids[i];
    absl::StatusOr<absl::string_view> expected = inline_reply->view().Log(i);
    ASSERT_TRUE(expected.ok());
    EXPECT_EQ(*(*logs)[i].log, *expected);
  }
  EXPECT_FALSE(logs->back().log.has_value());

  // Past the TTL the logs are gone.
  absl::SleepFor(absl::Milliseconds(1300));
  logs = client.FetchLogs(stored->header().request_id(), {ids[0]}, {});
  ASSERT_TRUE(logs.ok()) << logs.status();
  EXPECT_FALSE((*logs)[0].log.has_value());
}

TEST_F(ServerTest, LogsGoToRedisWithATtl) {
  absl::StatusOr<std::unique_ptr<test::RedisProcess>> redis = test::RedisProcess::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  auto server = Start({"--logstore=redis", "--redis_addr=" + (*redis)->address()});
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);
  absl::StatusOr<client::RankReply> reply = client.Rank(Request({"rankbin"}), {});
  ASSERT_TRUE(reply.ok()) << reply.status();
  const std::string key = reply->header().log_key();
  absl::StatusOr<ItemRef> first = reply->view().Item(0);
  ASSERT_TRUE(first.ok());

  // The writer thread stores them asynchronously; poll briefly.
  std::optional<std::string> log;
  for (int attempt = 0; attempt < 50 && !log; ++attempt) {
    absl::StatusOr<std::vector<client::ItemLogResult>> logs =
        client.FetchLogs(reply->header().request_id(), {std::string(first->id())}, {});
    ASSERT_TRUE(logs.ok()) << logs.status();
    log = (*logs)[0].log;
    if (!log) absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(log.has_value());
  EXPECT_THAT(*log, HasSubstr(absl::StrCat("item=", first->id(), " pos=1 ")));

  absl::StatusOr<test::RedisReply> pttl = (*redis)->Command({"PTTL", key});
  ASSERT_TRUE(pttl.ok()) << pttl.status();
  EXPECT_GT(pttl->integer, 0);
  EXPECT_LE(pttl->integer, 1000);
  absl::StatusOr<test::RedisReply> fields = (*redis)->Command({"HLEN", key});
  ASSERT_TRUE(fields.ok()) << fields.status();
  // The layout (field ""), the top 10 items ("#0") and every item ("#1").
  EXPECT_EQ(fields->integer, 3);
}

TEST_F(ServerTest, RankingKeepsWorkingWhenRedisIsDown) {
  // Nothing listens on this port: the sink fails to connect and drops.
  auto server = Start({"--logstore=redis", "--redis_addr=127.0.0.1:1"});
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<client::RankReply> reply = client.Rank(Request({"rankbin"}, {}, i), {});
    ASSERT_TRUE(reply.ok()) << reply.status();
  }
  absl::StatusOr<std::string> metrics = test::HttpGet(server->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics, HasSubstr("rankwire_log_store_up 0"));
}

// The local address of the TCP socket listening on `port`, as /proc/net/tcp
// writes it (hex, e.g. "0200007F" for 127.0.0.2), or "" if none.
std::string ListeningAddress(int port) {
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // The header.
  const std::string suffix = absl::StrFormat(":%04X", port);
  while (std::getline(tcp, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    // sl, local_address, rem_address, st (0A: LISTEN), ...
    if (fields.size() > 3 && fields[3] == "0A" && absl::EndsWith(fields[1], suffix)) {
      return fields[1].substr(0, fields[1].size() - suffix.size());
    }
  }
  return "";
}

TEST_F(ServerTest, MetricsListenOnTheirOwnAddressWhenGiven) {
  auto server = Start({"--metrics_address=127.0.0.2"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(ListeningAddress(server->metrics_port()), "0200007F");  // 127.0.0.2
}

TEST_F(ServerTest, MetricsEndpointExposesPhaseCosts) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);
  ASSERT_TRUE(client.Rank(Request({"rankbin"}), {}).ok());
  rank::v1::RankRequest bad = Request();
  bad.clear_candidates();
  ASSERT_FALSE(client.Rank(bad, {}).ok());

  absl::StatusOr<std::string> metrics = test::HttpGet(server->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics, HasSubstr("rankwire_rank_rpcs_total{outcome=\"ok\"} 1\n"));
  EXPECT_THAT(*metrics, HasSubstr("rankwire_rank_rpcs_total{outcome=\"invalid_argument\"} 1\n"));
  for (const char* phase :
       {"request_deserialize", "validate", "rank", "log_enqueue", "response_serialize", "total"}) {
    EXPECT_THAT(*metrics, HasSubstr(absl::StrCat("rankwire_server_phase_seconds_count{phase=\"",
                                                 phase, "\"}")));
  }
  EXPECT_THAT(*metrics, HasSubstr("rankwire_responses_total{codec=\"rankbin\"} 1\n"));
  EXPECT_THAT(*metrics, HasSubstr("rankwire_log_items_total{outcome=\"enqueued\"} 500\n"));
  // Every line handed over is counted once: here stored, or still in
  // flight when the scrape came (one snapshot: the two add up).
  EXPECT_THAT(*metrics, HasSubstr("rankwire_log_items_total{outcome=\"handed\"} 500\n"));
  EXPECT_THAT(*metrics, HasSubstr("rankwire_log_items_total{outcome=\"unknown\"} 0\n"));
  EXPECT_THAT(*metrics, AnyOf(HasSubstr("rankwire_log_items_total{outcome=\"stored\"} 500\n"),
                              HasSubstr("rankwire_log_items_total{outcome=\"in_flight\"} 500\n")));
}

TEST_F(ServerTest, SigtermFinishesInFlightCallsAndFlushesLogs) {
  // One ranking worker for two slots: the second call waits in the handler
  // for the first one's ranking, so both are in the handler for all of it.
  // (With a worker each, they overlapped for a few ms at most on a fast
  // host, where 15,000 candidates rank in ~30 ms, and the poll below
  // missed that once in CI.)
  auto server = Start(
      {"--codec=rankbin", "--max_candidates=20000", "--rank_workers=1", "--max_concurrent_rank=2"});
  ASSERT_NE(server, nullptr);
  client::RankClient client = Client(*server);
  ASSERT_TRUE(client.Rank(Request(), {}).ok());  // Warm up the channel.

  // Big requests, signalled once the server has admitted both (one
  // ranking, one queued for the worker). (gRPC cancels calls that have
  // arrived but whose handler has not started; --drain_ms covers those in
  // production.)
  workload::WorkloadOptions options;
  options.candidates = 15000;
  options.log_mode = rank::v1::LOG_MODE_STORE;
  const workload::WorkloadGenerator big(options);
  constexpr int kCalls = 2;
  std::vector<std::future<absl::Status>> calls;
  for (int c = 0; c < kCalls; ++c) {
    calls.push_back(std::async(std::launch::async, [&, c] {
      client::CallOptions call;
      call.deadline = absl::Seconds(30);
      absl::StatusOr<client::RankReply> reply = client.Rank(big.Make(100 + c), call);
      if (!reply.ok()) return reply.status();
      if (reply->header().item_count() != 15000) return absl::InternalError("short reply");
      return absl::OkStatus();
    }));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  bool all_in = false;
  while (!all_in && absl::Now() < deadline) {
    absl::StatusOr<std::string> metrics = test::HttpGet(server->metrics_port(), "/metrics");
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    all_in =
        metrics->find(absl::StrCat("rankwire_rank_admitted ", kCalls, "\n")) != std::string::npos;
    if (!all_in) absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_TRUE(all_in) << "the calls never were in the handler together";
  ASSERT_TRUE(server->Signal(SIGTERM).ok());
  for (auto& call : calls) {
    absl::Status s = call.get();
    EXPECT_TRUE(s.ok()) << s << "\n" << server->Output();
  }

  absl::StatusOr<int> exit_code = server->Wait(absl::Seconds(20));
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 0) << server->Output();
  const std::string output = server->Output();
  EXPECT_THAT(output, HasSubstr("draining"));
  // Every queued log was written before exit.
  EXPECT_THAT(output, HasSubstr("dropped(queue_full=0 store_error=0 shutdown=0) unknown=0"));
  EXPECT_THAT(output, HasSubstr("rankwire-server stopped"));
}

}  // namespace
}  // namespace rankwire
