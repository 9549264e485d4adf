// Client-side balancing against real rankwire-server processes on loopback:
// round_robin spreads one channel's calls over every replica of an ipv4:
// target list (pick_first pins them to one, the problem this fixes); the
// server reports health per service and flips it on drain; a health-checked
// channel sends a draining replica no new calls; the retry policy re-sends
// calls that die with their replica.
#include <signal.h>

#include <cstdio>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "client/rank_client.h"
#include "codec/builtin_codecs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

using client::ChannelOptions;
using client::HealthStatus;
using test::ServerProcess;

class BalancingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs({});
    ASSERT_TRUE(codecs.ok()) << codecs.status();
    codecs_ = std::make_unique<CodecRegistry>(*std::move(codecs));
  }

  // Starts `n` replicas; empty on failure (the test then fails).
  std::vector<std::unique_ptr<ServerProcess>> StartReplicas(
      int n, const std::vector<std::string>& flags = {}) {
    std::vector<std::unique_ptr<ServerProcess>> out;
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<std::unique_ptr<ServerProcess>> s =
          ServerProcess::Start(Concat({"--codec=rankbin", "--log_mode=none"}, flags));
      EXPECT_TRUE(s.ok()) << s.status();
      if (!s.ok()) return {};
      out.push_back(*std::move(s));
    }
    return out;
  }

  static std::vector<std::string> Concat(std::vector<std::string> a,
                                         const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  static std::string Target(const std::vector<const ServerProcess*>& replicas) {
    std::vector<std::string> addrs;
    for (const ServerProcess* r : replicas) addrs.push_back(r->target());
    return "ipv4:" + absl::StrJoin(addrs, ",");
  }
  static std::string Target(const std::vector<std::unique_ptr<ServerProcess>>& replicas) {
    std::vector<const ServerProcess*> raw;
    for (const auto& r : replicas) raw.push_back(r.get());
    return Target(raw);
  }
  static std::string Peer(const ServerProcess& s) { return "ipv4:" + s.target(); }

  client::RankClient Client(const std::string& target, const ChannelOptions& options) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = client::MakeChannel(target, options);
    EXPECT_TRUE(channel.ok()) << channel.status();
    return client::RankClient(channel.ok() ? *channel : client::MakeChannel(target), codecs_.get());
  }

  static rank::v1::RankRequest Request(uint64_t sequence = 0) {
    workload::WorkloadOptions options;
    options.candidates = 50;
    options.log_mode = rank::v1::LOG_MODE_NONE;
    return workload::WorkloadGenerator(options).Make(sequence);
  }

  // Calls until every one of `peers` has answered (round_robin reaches a
  // replica once its connection and health watch are up); false if that
  // takes more than 200 calls.
  static bool WarmUp(const client::RankClient& c, const std::vector<std::string>& peers) {
    std::map<std::string, int> seen;
    for (int i = 0; i < 200 && seen.size() < peers.size(); ++i) {
      absl::StatusOr<client::RankReply> r = c.Rank(Request(i), {});
      if (r.ok()) ++seen[r->call().peer];
      if (!r.ok() || seen.size() < peers.size()) absl::SleepFor(absl::Milliseconds(5));
    }
    return seen.size() == peers.size();
  }

  static std::map<std::string, int> CountPeers(const client::RankClient& c, int calls) {
    std::map<std::string, int> by_peer;
    for (int i = 0; i < calls; ++i) {
      absl::StatusOr<client::RankReply> r = c.Rank(Request(i), {});
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok()) ++by_peer[r->call().peer];
    }
    return by_peer;
  }

  // A counter's value from the replica's /metrics; -1 if absent.
  static int Counter(const ServerProcess& s, const std::string& name) {
    absl::StatusOr<std::string> text = test::HttpGet(s.metrics_port(), "/metrics");
    EXPECT_TRUE(text.ok()) << text.status();
    if (!text.ok()) return -1;
    for (absl::string_view line : absl::StrSplit(*text, '\n')) {
      int value = 0;
      if (absl::ConsumePrefix(&line, name + " ") && absl::SimpleAtoi(line, &value)) return value;
    }
    return -1;
  }

  static HealthStatus Health(const ServerProcess& s, const std::string& service) {
    ChannelOptions plain;
    plain.health_service.clear();
    absl::StatusOr<std::shared_ptr<grpc::Channel>> ch = client::MakeChannel(s.target(), plain);
    absl::StatusOr<HealthStatus> h = client::CheckHealth(ch->get(), service, {});
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? *h : HealthStatus::kUnknown;
  }

  std::unique_ptr<CodecRegistry> codecs_;
};

TEST_F(BalancingTest, RoundRobinSpreadsOneChannelOverEveryReplica) {
  auto replicas = StartReplicas(3);
  ASSERT_EQ(replicas.size(), 3u);
  client::RankClient c = Client(Target(replicas), ChannelOptions{});
  ASSERT_TRUE(WarmUp(c, {Peer(*replicas[0]), Peer(*replicas[1]), Peer(*replicas[2])}));
  std::map<std::string, int> by_peer = CountPeers(c, 30);
  ASSERT_EQ(by_peer.size(), 3u);
  for (const auto& r : replicas) {
    EXPECT_NEAR(by_peer[Peer(*r)], 10, 1) << Peer(*r);
  }
}

TEST_F(BalancingTest, PickFirstPinsTheChannelToOneReplica) {
  // What the old default did: every call of a long-lived channel to one pod.
  auto replicas = StartReplicas(3);
  ASSERT_EQ(replicas.size(), 3u);
  ChannelOptions options;
  options.lb_policy = "pick_first";
  options.health_service.clear();
  std::map<std::string, int> by_peer = CountPeers(Client(Target(replicas), options), 30);
  EXPECT_EQ(by_peer.size(), 1u);
}

TEST_F(BalancingTest, HealthIsReportedPerServiceAndFlipsOnDrain) {
  auto replicas = StartReplicas(1, {"--drain_ms=3000"});
  ASSERT_EQ(replicas.size(), 1u);
  ServerProcess& s = *replicas[0];
  EXPECT_EQ(Health(s, ""), HealthStatus::kServing);
  EXPECT_EQ(Health(s, "rank.v1.RankService"), HealthStatus::kServing);
  {
    ChannelOptions plain;
    plain.health_service.clear();
    auto ch = client::MakeChannel(s.target(), plain);
    EXPECT_EQ(client::CheckHealth(ch->get(), "no.such.Service", {}).status().code(),
              absl::StatusCode::kNotFound);
  }

  ASSERT_TRUE(s.Signal(SIGTERM).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (absl::Now() < deadline && Health(s, "rank.v1.RankService") != HealthStatus::kNotServing) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(Health(s, "rank.v1.RankService"), HealthStatus::kNotServing);
  EXPECT_EQ(Health(s, ""), HealthStatus::kNotServing);
  // Draining is not refusing: a caller that does not watch health is still
  // served until the drain ends.
  ChannelOptions plain;
  plain.health_service.clear();
  absl::StatusOr<client::RankReply> r = Client(s.target(), plain).Rank(Request(), {});
  EXPECT_TRUE(r.ok()) << r.status();
  absl::StatusOr<int> exit = s.Wait(absl::Seconds(15));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(*exit, 0) << s.Output();
}

TEST_F(BalancingTest, HealthCheckedChannelSendsADrainingReplicaNoNewCalls) {
  auto replicas = StartReplicas(2, {"--drain_ms=4000"});
  ASSERT_EQ(replicas.size(), 2u);
  ServerProcess& draining = *replicas[0];
  ServerProcess& other = *replicas[1];
  client::RankClient checked = Client(Target(replicas), ChannelOptions{});
  ChannelOptions unchecked_options;
  unchecked_options.health_service.clear();
  client::RankClient unchecked = Client(Target(replicas), unchecked_options);
  ASSERT_TRUE(WarmUp(checked, {Peer(draining), Peer(other)}));
  ASSERT_TRUE(WarmUp(unchecked, {Peer(draining), Peer(other)}));

  ASSERT_TRUE(draining.Signal(SIGTERM).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(2);
  while (absl::Now() < deadline && Health(draining, "") != HealthStatus::kNotServing) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_EQ(Health(draining, ""), HealthStatus::kNotServing);
  absl::SleepFor(absl::Milliseconds(200));  // The channel's health watch hears it.

  std::map<std::string, int> by_peer = CountPeers(checked, 20);
  EXPECT_EQ(by_peer[Peer(other)], 20);
  // Without health checking the draining replica still gets half the calls
  // (it serves them, but it is about to stop).
  std::map<std::string, int> unchecked_by_peer = CountPeers(unchecked, 20);
  EXPECT_GT(unchecked_by_peer[Peer(draining)], 0);
  absl::StatusOr<int> exit = draining.Wait(absl::Seconds(15));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(*exit, 0);
}

// Calls stuck on a replica that then dies (SIGSTOP, calls sent, SIGKILL):
// the connection breaks before any response byte, gRPC sees UNAVAILABLE and
// the retry policy re-sends the calls to the surviving replica. With
// retries off the same calls fail.
TEST_F(BalancingTest, CallsOnAReplicaThatDiesAreRetriedElsewhere) {
  for (int max_attempts : {4, 1}) {
    SCOPED_TRACE(absl::StrCat("max_attempts=", max_attempts));
    auto replicas = StartReplicas(2);
    ASSERT_EQ(replicas.size(), 2u);
    ServerProcess& victim = *replicas[0];
    ServerProcess& survivor = *replicas[1];
    ChannelOptions options;
    options.max_attempts = max_attempts;
    client::RankClient c = Client(Target(replicas), options);
    ASSERT_TRUE(WarmUp(c, {Peer(victim), Peer(survivor)}));

    ASSERT_TRUE(victim.Signal(SIGSTOP).ok());
    std::vector<std::future<absl::StatusOr<client::RankReply>>> calls;
    for (int i = 0; i < 6; ++i) {
      calls.push_back(std::async(std::launch::async, [&c, i] {
        client::CallOptions o;
        o.deadline = absl::Seconds(10);
        return c.Rank(Request(i), o);
      }));
    }
    absl::SleepFor(absl::Milliseconds(300));  // Round robin has put some on the victim.
    ASSERT_TRUE(victim.Signal(SIGKILL).ok());
    int ok = 0, unavailable = 0;
    for (auto& f : calls) {
      absl::StatusOr<client::RankReply> r = f.get();
      if (r.ok()) {
        ++ok;
      } else {
        EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
        ++unavailable;
      }
    }
    // The survivor counts the calls that reached it as retries.
    const int retried = Counter(survivor, "rankwire_rank_rpcs_retried_total");
    std::fprintf(stderr, "max_attempts=%d ok=%d unavailable=%d retried=%d\n", max_attempts, ok,
                 unavailable, retried);
    // With retries every call succeeds (the survivor may count the re-sent
    // ones as retries; a call gRPC retries transparently carries no attempt
    // count, so that number is only printed). Without retries the
    // calls that were on the victim fail: that is what the policy saves.
    if (max_attempts > 1) {
      EXPECT_EQ(ok, 6);
      EXPECT_LE(retried, 6);
    } else {
      EXPECT_GT(unavailable, 0);
      EXPECT_EQ(retried, 0);
    }
    victim.Wait(absl::Seconds(5)).IgnoreError();
  }
}

}  // namespace
}  // namespace rankwire
