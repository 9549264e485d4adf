// The Redis Cluster backend against a real cluster on loopback
// (tests/support/redis_cluster.h): slots as Redis computes them, keys spread
// over every master with the right TTL and contents, -ASK and -MOVED
// followed, and a master failover under a real rankwire-server's load that
// fails no Rank call, counts every lost line and resumes writing.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/rank_client.h"
#include "codec/builtin_codecs.h"
#include "gtest/gtest.h"
#include "logstore/log_store.h"
#include "logstore/redis_cluster.h"
#include "logstore/redis_cluster_log_store.h"
#include "logstore/redis_commands.h"
#include "logstore/redis_log_reader.h"
#include "tests/support/log_test_util.h"
#include "tests/support/redis_cluster.h"
#include "tests/support/server_process.h"
#include "workload/workload.h"

namespace rankwire::logstore {
namespace {

using test::RedisCluster;
using test::RedisReply;
using test_util::GetReceipt;
using test_util::ItemIds;
using test_util::MakeRequest;

LogStoreConfig ClusterConfig(const RedisCluster& cluster) {
  LogStoreConfig config;
  config.backend = LogStoreConfig::Backend::kRedisCluster;
  config.redis_addr = cluster.SeedList();
  config.writers = 2;
  config.reconnect_backoff_min = absl::Milliseconds(20);
  config.reconnect_backoff_max = absl::Milliseconds(200);
  return config;
}

test::RedisClusterOptions ClusterShape(int masters, int replicas) {
  test::RedisClusterOptions options;
  options.masters = masters;
  options.replicas = replicas;
  return options;
}

std::string NodeId(const test::RedisProcess& node) {
  absl::StatusOr<RedisReply> id = node.Command({"CLUSTER", "MYID"});
  return id.ok() ? id->str : "";
}

// A command's calls on a node (INFO commandstats, e.g. "cluster|slots"), or
// with `command` "MOVED" the MOVED errors it answered (INFO errorstats; a
// redirected command is not a call).
int64_t CommandCalls(const test::RedisProcess& node, absl::string_view command) {
  const bool error = command == "MOVED";
  absl::StatusOr<std::string> info = node.Info(error ? "errorstats" : "commandstats");
  if (!info.ok()) return -1;
  const std::string prefix =
      error ? "errorstat_MOVED:count=" : absl::StrCat("cmdstat_", command, ":calls=");
  for (absl::string_view line : absl::StrSplit(*info, '\n')) {
    if (!absl::ConsumePrefix(&line, prefix)) continue;
    int64_t calls = 0;
    const size_t comma = line.find(',');
    if (absl::SimpleAtoi(line.substr(0, comma), &calls)) return calls;
  }
  return 0;
}

// The first request id "<prefix>N" whose key lives on `node` (with `on`)
// or on another master (without); empty if none of the first 1000 does.
std::string IdOn(const RedisCluster& cluster, const test::RedisProcess* node,
                 absl::string_view prefix, bool on = true) {
  for (int i = 0; i < 1000; ++i) {
    std::string id = absl::StrCat(prefix, i);
    absl::StatusOr<test::RedisProcess*> owner = cluster.MasterOf(KeySlot("rank:log:" + id));
    if (owner.ok() && (*owner == node) == on) return id;
  }
  return "";
}

// Of `nodes`, the one with the highest config epoch (CLUSTER INFO).
test::RedisProcess* HighestEpoch(const std::vector<test::RedisProcess*>& nodes) {
  auto epoch = [](const test::RedisProcess& node) -> int64_t {
    absl::StatusOr<RedisReply> info = node.Command({"CLUSTER", "INFO"});
    if (!info.ok()) return -1;
    for (absl::string_view line : absl::StrSplit(info->str, '\n')) {
      int64_t e = 0;
      if (absl::ConsumePrefix(&line, "cluster_my_epoch:") &&
          absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &e)) {
        return e;
      }
    }
    return -1;
  };
  test::RedisProcess* best = nullptr;
  for (test::RedisProcess* node : nodes) {
    if (best == nullptr || epoch(*node) > epoch(*best)) best = node;
  }
  return best;
}

// Three masters for a move that one of them does not hear of: `source`
// leads CLUSTER SLOTS (the node a reload asks first); a slot moved from
// `from` to `to` stays unknown to it, since `from` has the higher config
// epoch and gossip prefers its claim.
struct LaggingMove {
  test::RedisProcess* source = nullptr;
  test::RedisProcess* from = nullptr;
  test::RedisProcess* to = nullptr;
};
absl::StatusOr<LaggingMove> PlanLaggingMove(const RedisCluster& cluster) {
  const auto& nodes = cluster.nodes();
  absl::StatusOr<RedisReply> slots = nodes[0]->Command({"CLUSTER", "SLOTS"});
  if (!slots.ok()) return slots.status();
  const RedisReply& first_master = slots->elements[0].elements[2];
  const std::string source_address =
      absl::StrCat(first_master.elements[0].str, ":", first_master.elements[1].integer);
  LaggingMove move;
  std::vector<test::RedisProcess*> others;
  for (const auto& node : nodes) {
    if (node->address() == source_address) {
      move.source = node.get();
    } else {
      others.push_back(node.get());
    }
  }
  if (move.source == nullptr || others.size() != 2) {
    return absl::InternalError("expected 3 masters, one leading CLUSTER SLOTS");
  }
  move.from = HighestEpoch(others);
  move.to = others[0] == move.from ? others[1] : others[0];
  return move;
}

TEST(RedisClusterSlotTest, SlotsAreRedisClusterSlots) {
  EXPECT_EQ(Crc16("123456789"), 0x31C3);  // CRC16/XMODEM check value.
  EXPECT_EQ(KeySlot("foo"), 12182);
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("{user1000}.followers"));
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("user1000"));
  EXPECT_EQ(KeySlot("foo{}{bar}"), KeySlot("foo{}{bar}"));  // Empty tag: whole key.
  EXPECT_NE(KeySlot("foo{}{bar}"), KeySlot("bar"));
  EXPECT_EQ(KeySlot("foo{{bar}}zap"), KeySlot("{bar"));
}

TEST(RedisRedirectTest, SlotAndAddressAreParsed) {
  std::optional<RedisRedirect> moved = ParseRedirect("MOVED 3999 127.0.0.1:6381");
  ASSERT_TRUE(moved.has_value());
  EXPECT_FALSE(moved->ask);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->address, "127.0.0.1:6381");
  std::optional<RedisRedirect> ask = ParseRedirect("ASK 0 10.0.0.2:7000");
  ASSERT_TRUE(ask.has_value());
  EXPECT_TRUE(ask->ask);
  EXPECT_EQ(ask->slot, 0);
  // No host (cluster-preferred-endpoint-type unknown-endpoint): the host of
  // the node that answered.
  std::optional<RedisRedirect> no_host = ParseRedirect("MOVED 7 :6390", "127.0.0.5:6379");
  ASSERT_TRUE(no_host.has_value());
  EXPECT_EQ(no_host->address, "127.0.0.5:6390");
  no_host = ParseRedirect("ASK 7 :6390", "[::1]:6379");
  ASSERT_TRUE(no_host.has_value());
  EXPECT_EQ(no_host->address, "[::1]:6390");
  EXPECT_FALSE(ParseRedirect("MOVED 16384 127.0.0.1:1").has_value());
  EXPECT_FALSE(ParseRedirect("MOVED x 127.0.0.1:1").has_value());
  EXPECT_FALSE(ParseRedirect("MOVED 1").has_value());
  EXPECT_FALSE(ParseRedirect("ERR MOVED 1 127.0.0.1:1").has_value());
}

// A hand-built hiredis reply (only the fields WriteOutcome reads).
struct FakeReply {
  explicit FakeReply(int type, std::string text = "") : text(std::move(text)) {
    reply.type = type;
    reply.str = this->text.data();
    reply.len = this->text.size();
  }
  std::string text;
  redisReply reply{};
};

TEST(RedisRedirectTest, ARedirectAnsweredByExecIsFollowed) {
  // The slot moved between queueing and EXEC: every command was QUEUED and
  // EXEC itself answers -MOVED (the transaction did not run).
  FakeReply ok(REDIS_REPLY_STATUS, "OK");
  FakeReply queued(REDIS_REPLY_STATUS, "QUEUED");
  FakeReply exec(REDIS_REPLY_ERROR, "MOVED 1238 127.0.0.1:7002");
  redisReply* replies[] = {&ok.reply, &queued.reply, &queued.reply, &queued.reply, &exec.reply};
  std::optional<RedisRedirect> redirect;
  EXPECT_TRUE(WriteOutcome(replies, "127.0.0.1:7001", &redirect).ok());
  ASSERT_TRUE(redirect.has_value());
  EXPECT_EQ(redirect->slot, 1238);
  EXPECT_EQ(redirect->address, "127.0.0.1:7002");
  // Any other EXEC error is still a refusal.
  FakeReply refused(REDIS_REPLY_ERROR, "EXECABORT Transaction discarded");
  replies[4] = &refused.reply;
  EXPECT_EQ(WriteOutcome(replies, "127.0.0.1:7001", &redirect).code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(redirect.has_value());
}

// A cluster shared by one suite's tests, started once as Shape::Options()
// says.
template <typename Shape>
class SharedClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<RedisCluster>> cluster = RedisCluster::Start(Shape::Options());
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  static RedisCluster* cluster_;
};
template <typename Shape>
RedisCluster* SharedClusterTest<Shape>::cluster_ = nullptr;

// Three masters, no replicas.
struct ThreeMasters {
  static test::RedisClusterOptions Options() { return ClusterShape(3, 0); }
};
class RedisClusterTest : public SharedClusterTest<ThreeMasters> {};

TEST_F(RedisClusterTest, KeySlotAgreesWithTheServer) {
  for (int i = 0; i < 200; ++i) {
    const std::string key = absl::StrCat("rank:log:req-", i * 7919);
    absl::StatusOr<RedisReply> slot = cluster_->nodes()[0]->Command({"CLUSTER", "KEYSLOT", key});
    ASSERT_TRUE(slot.ok()) << slot.status();
    EXPECT_EQ(slot->integer, KeySlot(key)) << key;
  }
}

TEST_F(RedisClusterTest, KeysSpreadOverEveryMasterWithTheirTtlAndContents) {
  absl::StatusOr<LogStore> store = OpenLogStore(ClusterConfig(*cluster_));
  ASSERT_TRUE(store.ok()) << store.status();
  std::vector<RequestLogs> requests;
  std::vector<std::future<LogReceipt>> futures;
  for (int r = 0; r < 60; ++r) {
    requests.push_back(MakeRequest(absl::StrCat("req-spread-", r), 20, 300));
    futures.push_back(store->consumer->Consume(requests.back()));
  }
  for (auto& f : futures) ASSERT_EQ(GetReceipt(f).outcome, LogReceipt::Outcome::kStored);

  std::set<std::string> masters_used;
  for (const RequestLogs& logs : requests) {
    const std::string key = store->consumer->KeyFor(logs.request_id);
    absl::StatusOr<test::RedisProcess*> master = cluster_->MasterOf(KeySlot(key));
    ASSERT_TRUE(master.ok()) << master.status();
    // On its master, with the TTL and every field.
    absl::StatusOr<RedisReply> pttl = (*master)->Command({"PTTL", key});
    ASSERT_TRUE(pttl.ok()) << pttl.status();
    EXPECT_GT(pttl->integer, 0) << key;
    EXPECT_LE(pttl->integer, 1000) << key;
    absl::StatusOr<RedisReply> len = (*master)->Command({"HLEN", key});
    ASSERT_TRUE(len.ok()) << len.status();
    EXPECT_EQ(len->integer, 20) << key;
    masters_used.insert((*master)->address());
    // And read back through the cluster reader.
    absl::StatusOr<std::vector<std::optional<std::string>>> read =
        store->reader->Fetch(logs.request_id, ItemIds(logs));
    ASSERT_TRUE(read.ok()) << read.status();
    for (size_t i = 0; i < logs.items.size(); ++i) {
      ASSERT_EQ((*read)[i], logs.items[i].text) << key << " " << logs.items[i].item_id;
    }
  }
  EXPECT_EQ(masters_used.size(), 3u);
  EXPECT_EQ(store->consumer->stats().items_dropped_store_error, 0u);
}

// Moves `slot` from its master to another master: with `finish`, the whole
// way (the old master then answers MOVED); without, only marked migrating
// (the old master answers ASK for keys it does not have).
void MoveSlot(RedisCluster& cluster, int slot, bool finish) {
  absl::StatusOr<test::RedisProcess*> source = cluster.MasterOf(slot);
  ASSERT_TRUE(source.ok()) << source.status();
  test::RedisProcess* target = nullptr;
  for (const auto& node : cluster.nodes()) {
    if (node.get() != *source) target = node.get();
  }
  ASSERT_NE(target, nullptr);
  const std::string s = absl::StrCat(slot);
  ASSERT_EQ(target->Command({"CLUSTER", "SETSLOT", s, "IMPORTING", NodeId(**source)})->str, "OK");
  ASSERT_EQ((*source)->Command({"CLUSTER", "SETSLOT", s, "MIGRATING", NodeId(*target)})->str, "OK");
  if (!finish) return;
  for (const auto& node : cluster.nodes()) {
    ASSERT_EQ(node->Command({"CLUSTER", "SETSLOT", s, "NODE", NodeId(*target)})->str, "OK");
  }
}

TEST_F(RedisClusterTest, AskAndMovedRedirectsAreFollowed) {
  absl::StatusOr<LogStore> store = OpenLogStore(ClusterConfig(*cluster_));
  ASSERT_TRUE(store.ok()) << store.status();
  // The writers load the slot map with a first write.
  std::future<LogReceipt> warm = store->consumer->Consume(MakeRequest("req-warm", 3));
  ASSERT_EQ(GetReceipt(warm).outcome, LogReceipt::Outcome::kStored);

  // ASK: the slot is migrating; a new key goes to the importing node.
  const RequestLogs asked = MakeRequest("req-ask", 5);
  const int ask_slot = KeySlot(store->consumer->KeyFor("req-ask"));
  absl::StatusOr<test::RedisProcess*> migrating = cluster_->MasterOf(ask_slot);
  ASSERT_TRUE(migrating.ok()) << migrating.status();
  MoveSlot(*cluster_, ask_slot, /*finish=*/false);
  std::future<LogReceipt> f1 = store->consumer->Consume(asked);
  LogReceipt r1 = GetReceipt(f1);
  EXPECT_EQ(r1.outcome, LogReceipt::Outcome::kStored) << r1.status;
  absl::StatusOr<std::vector<std::optional<std::string>>> read =
      store->reader->Fetch("req-ask", ItemIds(asked));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[4], asked.items[4].text);
  // Finish that migration too, so the cluster stays consistent.
  absl::StatusOr<test::RedisProcess*> importing = [&]() -> absl::StatusOr<test::RedisProcess*> {
    for (const auto& node : cluster_->nodes()) {
      absl::StatusOr<RedisReply> n =
          node->Command({"CLUSTER", "COUNTKEYSINSLOT", absl::StrCat(ask_slot)});
      if (n.ok() && n->integer == 1) return node.get();
    }
    return absl::NotFoundError("the asked key is on no node");
  }();
  ASSERT_TRUE(importing.ok()) << importing.status();
  EXPECT_NE(*importing, *migrating);  // Written where ASK pointed.
  for (const auto& node : cluster_->nodes()) {
    ASSERT_EQ(
        node->Command({"CLUSTER", "SETSLOT", absl::StrCat(ask_slot), "NODE", NodeId(**importing)})
            ->str,
        "OK");
  }

  // MOVED: the slot now lives elsewhere; the writer's map is stale.
  const RequestLogs moved = MakeRequest("req-moved", 5);
  const int moved_slot = KeySlot(store->consumer->KeyFor("req-moved"));
  absl::StatusOr<test::RedisProcess*> before = cluster_->MasterOf(moved_slot);
  ASSERT_TRUE(before.ok());
  const std::string old_master = (*before)->address();
  MoveSlot(*cluster_, moved_slot, /*finish=*/true);
  std::future<LogReceipt> f2 = store->consumer->Consume(moved);
  LogReceipt r2 = GetReceipt(f2);
  EXPECT_EQ(r2.outcome, LogReceipt::Outcome::kStored) << r2.status;
  absl::StatusOr<test::RedisProcess*> after = cluster_->MasterOf(moved_slot);
  ASSERT_TRUE(after.ok());
  EXPECT_NE((*after)->address(), old_master);
  absl::StatusOr<RedisReply> len =
      (*after)->Command({"HLEN", store->consumer->KeyFor("req-moved")});
  ASSERT_TRUE(len.ok());
  EXPECT_EQ(len->integer, 5);
  read = store->reader->Fetch("req-moved", ItemIds(moved));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[0], moved.items[0].text);
  EXPECT_EQ(store->consumer->stats().items_dropped_store_error, 0u);
}

// Writes `n` one-field requests "<tag>-<i>" through `sink`; the failures.
std::vector<absl::Status> WriteRequests(LogSink& sink, const std::string& tag, int n) {
  std::vector<SinkEntry> batch;
  for (int i = 0; i < n; ++i) {
    SinkEntry entry;
    entry.key = absl::StrCat("rank:log:", tag, "-", i);
    entry.fields.Add("item", "Ttext");
    batch.push_back(std::move(entry));
  }
  std::vector<absl::Status> results = sink.Write(absl::MakeSpan(batch), absl::Seconds(5));
  std::vector<absl::Status> failed;
  for (const absl::Status& s : results) {
    if (!s.ok()) failed.push_back(s);
  }
  return failed;
}

// Redis closes connections idle past its `timeout`; the next batch and the
// next read find theirs closed and go on over a fresh one.
TEST_F(RedisClusterTest, ConnectionsClosedWhileIdleAreReplacedWithoutLosingABatch) {
  // Restored however the test ends: the cluster is shared by the suite.
  auto restore = absl::MakeCleanup([] {
    for (const auto& node : cluster_->nodes()) {
      (void)node->Command({"CONFIG", "SET", "timeout", "0"});
    }
  });
  for (const auto& node : cluster_->nodes()) {
    ASSERT_TRUE(node->Command({"CONFIG", "SET", "timeout", "1"}).ok());
  }
  LogStoreConfig config = ClusterConfig(*cluster_);
  absl::StatusOr<std::unique_ptr<RedisClusterSink>> sink = RedisClusterSink::Create(config);
  ASSERT_TRUE(sink.ok()) << sink.status();
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader = RedisClusterReader::Create(config);
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_TRUE(WriteRequests(**sink, "idle-a", 30).empty());
  const std::vector<std::string> items = {"item"};
  // Concurrent reads of one key fill its master's idle pool (up to 4), and
  // Redis then closes all of them at once.
  std::vector<std::thread> readers;
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&] {
      absl::Status s = (*reader)->Fetch("idle-a-0", items).status();
      EXPECT_TRUE(s.ok()) << s;
    });
  }
  for (std::thread& t : readers) t.join();
  // Past the timeout (Redis checks idle clients about every 100 ms).
  absl::SleepFor(absl::Milliseconds(2500));
  std::vector<absl::Status> failed = WriteRequests(**sink, "idle-b", 30);
  EXPECT_TRUE(failed.empty()) << failed.size() << " failed, first: " << failed.front();
  EXPECT_TRUE((*sink)->up());
  absl::StatusOr<std::vector<std::optional<std::string>>> read =
      (*reader)->Fetch("idle-a-0", items);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[0], "text");
  read = (*reader)->Fetch("idle-b-0", items);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[0], "text");
}

// A MOVED names the new master; the node the map is reloaded from may not
// know yet (the cluster spreads the change by gossip). The writer and the
// reader follow the MOVED, not the stale map.
TEST_F(RedisClusterTest, AMovedIsFollowedWhenTheReloadedMapIsStale) {
  const auto& nodes = cluster_->nodes();
  // The node the router reloads from: the first master the first seed lists.
  absl::StatusOr<RedisReply> slots = nodes[0]->Command({"CLUSTER", "SLOTS"});
  ASSERT_TRUE(slots.ok()) << slots.status();
  const RedisReply& first_master = slots->elements[0].elements[2];
  const std::string source_address =
      absl::StrCat(first_master.elements[0].str, ":", first_master.elements[1].integer);
  test::RedisProcess* source = nullptr;
  for (const auto& node : nodes) {
    if (node->address() == source_address) source = node.get();
  }
  ASSERT_NE(source, nullptr);
  // A request whose slot is on another master (x); it moves to the third (y).
  std::string id;
  test::RedisProcess* x = nullptr;
  for (int i = 0; i < 1000 && x == nullptr; ++i) {
    absl::StatusOr<test::RedisProcess*> owner =
        cluster_->MasterOf(KeySlot(absl::StrCat("rank:log:stale-", i)));
    ASSERT_TRUE(owner.ok()) << owner.status();
    if (*owner != source) {
      x = *owner;
      id = absl::StrCat("stale-", i);
    }
  }
  test::RedisProcess* y = nullptr;
  for (const auto& node : nodes) {
    if (node.get() != source && node.get() != x) y = node.get();
  }
  ASSERT_NE(y, nullptr);
  LogStoreConfig config = ClusterConfig(*cluster_);
  absl::StatusOr<std::unique_ptr<RedisClusterSink>> sink = RedisClusterSink::Create(config);
  ASSERT_TRUE(sink.ok());
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader = RedisClusterReader::Create(config);
  ASSERT_TRUE(reader.ok());
  EXPECT_TRUE(WriteRequests(**sink, "stale-warm", 5).empty());  // Loads the maps.
  const std::vector<std::string> items = {"item"};
  ASSERT_TRUE((*reader)->Fetch("stale-warm-0", items).ok());

  // The (empty) slot moves x -> y; only x and y are told. The whole cluster
  // agrees again however the test ends.
  const std::string slot = absl::StrCat(KeySlot("rank:log:" + id));
  auto agree = absl::MakeCleanup([&] {
    (void)source->Command({"CLUSTER", "SETSLOT", slot, "NODE", NodeId(*y)});
  });
  ASSERT_EQ(y->Command({"CLUSTER", "SETSLOT", slot, "NODE", NodeId(*y)})->str, "OK");
  ASSERT_EQ(x->Command({"CLUSTER", "SETSLOT", slot, "NODE", NodeId(*y)})->str, "OK");
  std::vector<SinkEntry> batch(1);
  batch[0].key = "rank:log:" + id;
  batch[0].fields.Add("item", "Tmoved");
  std::vector<absl::Status> results = (*sink)->Write(absl::MakeSpan(batch), absl::Seconds(5));
  EXPECT_TRUE(results[0].ok()) << results[0];
  absl::StatusOr<RedisReply> len = y->Command({"HLEN", batch[0].key});
  ASSERT_TRUE(len.ok());
  EXPECT_EQ(len->integer, 1);
  absl::StatusOr<std::vector<std::optional<std::string>>> read = (*reader)->Fetch(id, items);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ((*read)[0], "moved");
}

// A reader's own MOVED outlives the reload it triggers: when the node asked
// for the map has not heard of the move, the MOVED target still wins, so
// the read goes to the new master after one redirect, not back to the old.
TEST_F(RedisClusterTest, AReaderKeepsItsMovedOverAStaleReload) {
  absl::StatusOr<LaggingMove> move = PlanLaggingMove(*cluster_);
  ASSERT_TRUE(move.ok()) << move.status();
  test::RedisProcess *source = move->source, *x = move->from, *y = move->to;
  const std::string id = IdOn(*cluster_, x, "keep-moved-");
  ASSERT_FALSE(id.empty());
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader =
      RedisClusterReader::Create(ClusterConfig(*cluster_));
  ASSERT_TRUE(reader.ok());
  const std::vector<std::string> items = {"item"};
  ASSERT_TRUE((*reader)->Fetch(id, items).ok());  // Loads the map.
  const std::string slot = absl::StrCat(KeySlot("rank:log:" + id));
  auto agree = absl::MakeCleanup([&] {
    (void)source->Command({"CLUSTER", "SETSLOT", slot, "NODE", NodeId(*y)});
  });
  ASSERT_EQ(y->Command({"CLUSTER", "SETSLOT", slot, "NODE", NodeId(*y)})->str, "OK");
  ASSERT_EQ(x->Command({"CLUSTER", "SETSLOT", slot, "NODE", NodeId(*y)})->str, "OK");
  // Past the reload spacing, so the MOVED's reload runs within this read.
  absl::SleepFor(RedisClusterSink::kRefreshInterval + absl::Milliseconds(50));
  const int64_t moved_before = CommandCalls(*x, "MOVED");
  const int64_t reloads_before = CommandCalls(*source, "cluster|slots");
  for (int read = 0; read < 2; ++read) {
    absl::StatusOr<std::vector<std::optional<std::string>>> values = (*reader)->Fetch(id, items);
    EXPECT_TRUE(values.ok()) << values.status();
  }
  EXPECT_EQ(CommandCalls(*source, "cluster|slots") - reloads_before, 1)
      << "the MOVED's reload did not ask the node that has not heard of the move";
  EXPECT_EQ(CommandCalls(*x, "MOVED") - moved_before, 1)
      << "a reload undid the reader's MOVED: reads went back to the old master";
}

// With cluster-preferred-endpoint-type unknown-endpoint, CLUSTER SLOTS
// gives NIL hosts (the node asked) and redirects have no host.
TEST_F(RedisClusterTest, NodesThatDoNotNameTheirHostAreUsable) {
  auto restore = absl::MakeCleanup([] {
    for (const auto& node : cluster_->nodes()) {
      (void)node->Command({"CONFIG", "SET", "cluster-preferred-endpoint-type", "ip"});
    }
  });
  for (const auto& node : cluster_->nodes()) {
    ASSERT_TRUE(
        node->Command({"CONFIG", "SET", "cluster-preferred-endpoint-type", "unknown-endpoint"})
            .ok());
  }
  LogStoreConfig config = ClusterConfig(*cluster_);
  absl::StatusOr<std::unique_ptr<RedisClusterSink>> sink = RedisClusterSink::Create(config);
  ASSERT_TRUE(sink.ok());
  std::vector<absl::Status> failed = WriteRequests(**sink, "nil-host", 30);
  EXPECT_TRUE(failed.empty()) << failed.size() << " failed, first: " << failed.front();
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader = RedisClusterReader::Create(config);
  ASSERT_TRUE(reader.ok());
  const std::vector<std::string> items = {"item"};
  for (int i = 0; i < 30; ++i) {
    absl::StatusOr<std::vector<std::optional<std::string>>> read =
        (*reader)->Fetch(absl::StrCat("nil-host-", i), items);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ((*read)[0], "text");
  }
}

// A stalled master delays the reads of its own keys only: the reader does
// not hold its lock while it waits on one master.
TEST_F(RedisClusterTest, AStalledMasterDoesNotHoldUpReadsOfOtherMasters) {
  LogStoreConfig config = ClusterConfig(*cluster_);
  config.io_timeout = absl::Milliseconds(400);
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader = RedisClusterReader::Create(config);
  ASSERT_TRUE(reader.ok());
  std::string stalled_id, healthy_id;
  test::RedisProcess* stalled = nullptr;
  for (int i = 0; i < 1000 && healthy_id.empty(); ++i) {
    const std::string id = absl::StrCat("hol-", i);
    absl::StatusOr<test::RedisProcess*> owner = cluster_->MasterOf(KeySlot("rank:log:" + id));
    ASSERT_TRUE(owner.ok()) << owner.status();
    if (stalled == nullptr) {
      stalled = *owner;
      stalled_id = id;
    } else if (*owner != stalled) {
      healthy_id = id;
    }
  }
  const std::vector<std::string> items = {"item"};
  ASSERT_TRUE((*reader)->Fetch(stalled_id, items).ok());
  ASSERT_TRUE((*reader)->Fetch(healthy_id, items).ok());
  // Stopped for less than the cluster's node timeout (1 s), so the cluster
  // itself stays up.
  ASSERT_TRUE(stalled->Pause().ok());
  std::atomic<bool> stalled_done{false};
  std::thread slow([&] {
    EXPECT_FALSE((*reader)->Fetch(stalled_id, items).ok());
    stalled_done = true;
  });
  absl::SleepFor(absl::Milliseconds(50));
  absl::StatusOr<std::vector<std::optional<std::string>>> healthy =
      (*reader)->Fetch(healthy_id, items);
  const bool answered_while_stalled = !stalled_done.load();
  slow.join();
  ASSERT_TRUE(stalled->Resume().ok());
  EXPECT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_TRUE(answered_while_stalled);
  // And the stalled master's keys are readable again once it resumes.
  absl::Status back = absl::UnknownError("not read");
  for (int attempt = 0; attempt < 50 && !back.ok(); ++attempt) {
    back = (*reader)->Fetch(stalled_id, items).status();
    if (!back.ok()) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(back.ok()) << back;
}

// Stalled masters: a cluster of its own, with a node timeout long enough
// that a paused master is not failed over. Each test resumes what it paused.
struct ThreeSlowToFailMasters {
  static test::RedisClusterOptions Options() {
    test::RedisClusterOptions shape = ClusterShape(3, 0);
    shape.node_timeout = absl::Seconds(15);
    return shape;
  }
};
class RedisClusterStallTest : public SharedClusterTest<ThreeSlowToFailMasters> {
 protected:
  void TearDown() override {
    if (paused_ != nullptr) (void)paused_->Resume();
  }

  // A reader (made with `config`) that has read a key on the master of
  // slot 0, which leads the map, and one on another master; then that
  // master is paused (resumed at TearDown) and a read of its key times
  // out, which leaves the map stale. Ids are "<prefix>N".
  struct StalledLeader {
    std::unique_ptr<RedisClusterReader> reader;
    std::string stalled_id, healthy_id;
  };
  absl::StatusOr<StalledLeader> StallTheLeader(const LogStoreConfig& config,
                                               absl::string_view prefix) {
    absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader = RedisClusterReader::Create(config);
    if (!reader.ok()) return reader.status();
    absl::StatusOr<test::RedisProcess*> stalled = cluster_->MasterOf(0);
    if (!stalled.ok()) return stalled.status();
    StalledLeader out{*std::move(reader), IdOn(*cluster_, *stalled, prefix),
                      IdOn(*cluster_, *stalled, prefix, false)};
    const std::vector<std::string> items = {"item"};
    for (const std::string* id : {&out.stalled_id, &out.healthy_id}) {
      if (absl::Status read = out.reader->Fetch(*id, items).status(); !read.ok()) return read;
    }
    if (absl::Status paused = (*stalled)->Pause(); !paused.ok()) return paused;
    paused_ = *stalled;
    if (out.reader->Fetch(out.stalled_id, items).ok()) {
      return absl::InternalError("a read from the paused master succeeded");
    }
    return out;
  }

  test::RedisProcess* paused_ = nullptr;
};

// A stalled master whose turn it is to be asked for the slot map (it serves
// slot 0, so it leads the map) holds up the read that reloads the map, not
// every read: the reload runs outside the reader's lock.
TEST_F(RedisClusterStallTest, AMapReloadFromAStalledMasterDoesNotHoldUpOtherReads) {
  LogStoreConfig config = ClusterConfig(*cluster_);
  config.io_timeout = absl::Seconds(1);
  config.connect_timeout = absl::Seconds(1);
  absl::StatusOr<StalledLeader> stall = StallTheLeader(config, "reload-");
  ASSERT_TRUE(stall.ok()) << stall.status();
  RedisClusterReader* reader = stall->reader.get();
  const std::string& healthy_id = stall->healthy_id;
  const std::vector<std::string> items = {"item"};
  absl::SleepFor(RedisClusterSink::kRefreshInterval);
  // This read reloads the map, asking the stalled master first: it waits
  // out the 1 s timeout. (Durations are compared with that timeout, with
  // a wide margin, to tell waiting on the master from not waiting.)
  absl::Duration reloading_took;
  std::thread reloading([&] {
    const absl::Time start = absl::Now();
    EXPECT_TRUE(reader->Fetch(healthy_id, items).ok());
    reloading_took = absl::Now() - start;
  });
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::optional<std::string>>> other = reader->Fetch(healthy_id, items);
  const absl::Duration other_took = absl::Now() - start;
  reloading.join();
  EXPECT_TRUE(other.ok()) << other.status();
  EXPECT_GE(reloading_took, absl::Milliseconds(900)) << "the reload did not ask the stalled master";
  EXPECT_LT(other_took, absl::Milliseconds(500)) << "a read waited for the reload";
}

// A read that finds no slot map waits for the reload under way only until
// its deadline; a read whose deadline has passed starts nothing.
TEST_F(RedisClusterStallTest, AReadWaitsForTheFirstMapOnlyUntilItsDeadline) {
  absl::StatusOr<test::RedisProcess*> stalled = cluster_->MasterOf(0);
  ASSERT_TRUE(stalled.ok());
  LogStoreConfig config = ClusterConfig(*cluster_);
  config.io_timeout = absl::Seconds(2);
  // The stalled master is the first seed: the first reload waits on it.
  config.redis_addr = absl::StrCat((*stalled)->address(), ",", cluster_->SeedList());
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader = RedisClusterReader::Create(config);
  ASSERT_TRUE(reader.ok());
  const std::string healthy_id = IdOn(*cluster_, *stalled, "first-map-", false);
  const std::vector<std::string> items = {"item"};
  EXPECT_EQ((*reader)->FetchBefore(healthy_id, items, absl::InfinitePast()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE((*stalled)->Pause().ok());
  auto resume = absl::MakeCleanup([&] { (void)(*stalled)->Resume(); });
  absl::Status reloaded = absl::UnknownError("not read");
  std::thread reloading([&] { reloaded = (*reader)->Fetch(healthy_id, items).status(); });
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::optional<std::string>>> waited =
      (*reader)->FetchBefore(healthy_id, items, start + absl::Milliseconds(300));
  const absl::Duration took = absl::Now() - start;
  reloading.join();
  EXPECT_EQ(waited.status().code(), absl::StatusCode::kDeadlineExceeded) << waited.status();
  EXPECT_LT(took, absl::Milliseconds(1200)) << "the read waited out the whole reload";
  // The reload itself got the map from the next seed, and reads go on.
  EXPECT_TRUE(reloaded.ok()) << reloaded;
  EXPECT_TRUE((*reader)->Fetch(healthy_id, items).ok());
}

// No round trip starts after the deadline, also when the map reload the
// read made first (from a stalled master) used the time up.
TEST_F(RedisClusterStallTest, NoRoundTripStartsAfterTheDeadlineOnceAReloadEnds) {
  // 200 ms connect, 500 ms I/O.
  absl::StatusOr<StalledLeader> stall = StallTheLeader(ClusterConfig(*cluster_), "deadline-");
  ASSERT_TRUE(stall.ok()) << stall.status();
  const std::vector<std::string> items = {"item"};
  absl::SleepFor(RedisClusterSink::kRefreshInterval + absl::Milliseconds(50));
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::optional<std::string>>> read =
      stall->reader->FetchBefore(stall->healthy_id, items, start + absl::Milliseconds(200));
  const absl::Duration took = absl::Now() - start;
  EXPECT_GT(took, absl::Milliseconds(400)) << "the reload did not ask the stalled master";
  EXPECT_EQ(read.status().code(), absl::StatusCode::kDeadlineExceeded)
      << read.status() << " after " << took;
}

// A node that timed out is skipped by the reloads of the next second
// (kStalledNodeBackoff), every time: after CLUSTER SLOTS timed out on a
// kept connection, and after a new connection's PING timed out. With a
// backoff shorter than the reload spacing (100 ms), the next reload asked
// it again and waited out its timeout once more.
TEST_F(RedisClusterStallTest, AStalledNodeIsLeftAloneAfterEachTimeout) {
  LogStoreConfig config = ClusterConfig(*cluster_);
  config.io_timeout = absl::Milliseconds(600);
  absl::StatusOr<RedisClusterOptions> options = ClusterOptionsFrom(config);
  ASSERT_TRUE(options.ok()) << options.status();
  RedisClusterRouter router(*std::move(options));
  ASSERT_TRUE(router.Refresh().ok());
  absl::StatusOr<test::RedisProcess*> stalled = cluster_->MasterOf(0);
  ASSERT_TRUE(stalled.ok());
  ASSERT_EQ(router.masters().front(), (*stalled)->address()) << "slot 0's master leads the map";
  ASSERT_TRUE((*stalled)->Pause().ok());
  auto resume = absl::MakeCleanup([&] { (void)(*stalled)->Resume(); });
  std::vector<absl::Duration> took;
  auto reload = [&] {
    const absl::Time start = absl::Now();
    EXPECT_TRUE(router.Refresh().ok());
    took.push_back(absl::Now() - start);
  };
  reload();  // The kept connection: CLUSTER SLOTS times out.
  absl::SleepFor(2 * RedisClusterSink::kRefreshInterval);
  reload();  // Within the backoff: not asked.
  absl::SleepFor(kStalledNodeBackoff);
  reload();  // Asked again, on a new connection: its PING times out.
  absl::SleepFor(2 * RedisClusterSink::kRefreshInterval);
  reload();  // Within the second backoff: not asked.
  EXPECT_GE(took[0], absl::Milliseconds(550)) << "the first reload did not ask the stalled master";
  EXPECT_LT(took[1], absl::Milliseconds(400)) << "a reload 200 ms after a CLUSTER SLOTS that "
                                                 "timed out asked the stalled node again";
  EXPECT_GE(took[2], absl::Milliseconds(550)) << "the stalled node was not asked after 1 s";
  EXPECT_LT(took[3], absl::Milliseconds(400))
      << "a reload 200 ms after a connect that timed out asked the stalled node again";
}

// A writer's batch over three masters, two of them stalled: the healthy
// master's entries are stored (its replies wait in its socket while the
// stalled ones are waited for; each node has its own budget), and its next
// batch is not refused. The stalled masters are backed off, so their next
// batch fails at once instead of waiting out another timeout.
TEST_F(RedisClusterStallTest, AWriterKeepsAHealthyMasterAndBacksOffStalledOnes) {
  LogStoreConfig config = ClusterConfig(*cluster_);  // 500 ms I/O timeout.
  absl::StatusOr<std::unique_ptr<RedisClusterSink>> sink = RedisClusterSink::Create(config);
  ASSERT_TRUE(sink.ok()) << sink.status();
  // One key per master.
  std::vector<test::RedisProcess*> owners;
  std::vector<std::string> keys;
  for (int i = 0; i < 1000 && owners.size() < 3; ++i) {
    const std::string key = absl::StrCat("rank:log:stall-", i);
    absl::StatusOr<test::RedisProcess*> owner = cluster_->MasterOf(KeySlot(key));
    ASSERT_TRUE(owner.ok());
    if (std::find(owners.begin(), owners.end(), *owner) != owners.end()) continue;
    owners.push_back(*owner);
    keys.push_back(key);
  }
  ASSERT_EQ(owners.size(), 3u);
  auto batch_of = [](const std::vector<std::string>& batch_keys) {
    std::vector<SinkEntry> batch;
    for (const std::string& key : batch_keys) {
      batch.emplace_back().key = key;
      batch.back().fields.Add("item", "Ttext");
    }
    return batch;
  };
  std::vector<SinkEntry> warm = batch_of(keys);
  for (const absl::Status& s : (*sink)->Write(absl::MakeSpan(warm), absl::Seconds(5))) {
    ASSERT_TRUE(s.ok()) << s;
  }
  ASSERT_TRUE(owners[0]->Pause().ok());
  ASSERT_TRUE(owners[1]->Pause().ok());
  auto resume = absl::MakeCleanup([&] {
    (void)owners[0]->Resume();
    (void)owners[1]->Resume();
  });
  std::vector<SinkEntry> batch = batch_of(keys);
  std::vector<absl::Status> results = (*sink)->Write(absl::MakeSpan(batch), absl::Seconds(5));
  EXPECT_FALSE(results[0].ok());
  EXPECT_FALSE(results[1].ok());
  EXPECT_TRUE(results[2].ok()) << "healthy master: " << results[2];

  std::vector<SinkEntry> healthy = batch_of({keys[2]});
  absl::Status again = (*sink)->Write(absl::MakeSpan(healthy), absl::Seconds(5))[0];
  EXPECT_TRUE(again.ok()) << "healthy master, next batch: " << again;

  std::vector<SinkEntry> stalled = batch_of({keys[0]});
  const absl::Time start = absl::Now();
  absl::Status refused = (*sink)->Write(absl::MakeSpan(stalled), absl::Seconds(5))[0];
  const absl::Duration took = absl::Now() - start;
  EXPECT_FALSE(refused.ok());
  EXPECT_LT(took, absl::Milliseconds(300)) << "a backed-off master waited: " << refused;
}

// One Redis node: a read whose kept connection times out is not retried,
// and a read queued behind it gives up at its own deadline.
TEST_F(RedisClusterStallTest, ASingleNodeReadStopsAtItsDeadline) {
  absl::StatusOr<test::RedisProcess*> stalled = cluster_->MasterOf(0);
  ASSERT_TRUE(stalled.ok());
  const std::string id = IdOn(*cluster_, *stalled, "single-");
  ASSERT_FALSE(id.empty());
  LogStoreConfig config;
  config.backend = LogStoreConfig::Backend::kRedis;
  config.redis_addr = (*stalled)->address();  // 200 ms connect, 500 ms I/O.
  absl::StatusOr<std::unique_ptr<RedisLogReader>> reader = RedisLogReader::Create(config);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const std::vector<std::string> items = {"item"};
  ASSERT_TRUE((*reader)->Fetch(id, items).ok());  // Keeps a connection.
  ASSERT_TRUE((*stalled)->Pause().ok());
  auto resume = absl::MakeCleanup([&] { (void)(*stalled)->Resume(); });
  // The first read (a long deadline) takes the connection and waits on the
  // stalled node; one queued 100 ms later gives up 100 ms after that.
  const absl::Time start = absl::Now();
  absl::Duration first_took;
  absl::Status first;
  std::thread holder([&] {
    first = (*reader)->FetchBefore(id, items, start + absl::Seconds(5)).status();
    first_took = absl::Now() - start;
  });
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time queued_start = absl::Now();
  const absl::Status queued =
      (*reader)->FetchBefore(id, items, queued_start + absl::Milliseconds(100)).status();
  const absl::Duration queued_took = absl::Now() - queued_start;
  holder.join();
  EXPECT_EQ(first.code(), absl::StatusCode::kUnavailable) << first;
  EXPECT_LT(first_took, absl::Milliseconds(800)) << "a second try after a timeout";
  EXPECT_EQ(queued.code(), absl::StatusCode::kDeadlineExceeded) << queued;
  EXPECT_LT(queued_took, absl::Milliseconds(300)) << "a queued read waited past its deadline";
}

// After a round trip to a master times out, the next reads of its keys
// fail at once (its idle connections dropped, the node backed off) instead
// of each waiting out the timeout again on another pooled connection.
TEST_F(RedisClusterStallTest, ReadsAfterATimeoutDoNotWaitItOutAgain) {
  // Not the master of slot 0, which leads the map: a reload asks another.
  absl::StatusOr<test::RedisProcess*> stalled = cluster_->MasterOf(kClusterSlots - 1);
  ASSERT_TRUE(stalled.ok());
  const std::string id = IdOn(*cluster_, *stalled, "after-timeout-");
  ASSERT_FALSE(id.empty());
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader =
      RedisClusterReader::Create(ClusterConfig(*cluster_));  // 500 ms I/O timeout.
  ASSERT_TRUE(reader.ok());
  const std::vector<std::string> items = {"item"};
  // Concurrent reads leave several idle connections to the master.
  std::vector<std::thread> warm;
  for (int t = 0; t < 4; ++t) {
    warm.emplace_back([&] {
      for (int i = 0; i < 20; ++i) EXPECT_TRUE((*reader)->Fetch(id, items).ok());
    });
  }
  for (std::thread& t : warm) t.join();
  ASSERT_TRUE((*stalled)->Pause().ok());
  auto resume = absl::MakeCleanup([&] { (void)(*stalled)->Resume(); });
  EXPECT_FALSE((*reader)->Fetch(id, items).ok());  // Waits out the timeout.
  for (int i = 0; i < 3; ++i) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::vector<std::optional<std::string>>> read = (*reader)->Fetch(id, items);
    const absl::Duration took = absl::Now() - start;
    EXPECT_FALSE(read.ok());
    EXPECT_LT(took, absl::Milliseconds(250)) << "read " << i << ": " << read.status();
  }
}

// A read with no slot map yet that waits for another call's reload counts
// it as its own one reload: with every master stalled, no read takes much
// longer than one reload (each stalled node asked costs its timeout).
TEST_F(RedisClusterStallTest, AReadThatWaitedForTheFirstMapDoesNotReloadAgain) {
  for (const auto& node : cluster_->nodes()) ASSERT_TRUE(node->Pause().ok());
  auto resume = absl::MakeCleanup([&] {
    for (const auto& node : cluster_->nodes()) (void)node->Resume();
  });
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader =
      RedisClusterReader::Create(ClusterConfig(*cluster_));
  ASSERT_TRUE(reader.ok());
  const std::vector<std::string> items = {"item"};
  std::vector<absl::Duration> took(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      absl::SleepFor(absl::Milliseconds(30 * i));
      const absl::Time begin = absl::Now();
      (void)(*reader)->Fetch(absl::StrCat("nomap-", i), items);
      took[i] = absl::Now() - begin;
    });
  }
  for (std::thread& t : threads) t.join();
  // One reload asks the 3 stalled masters (~0.5-0.7 s each).
  for (int i = 0; i < 4; ++i) EXPECT_LT(took[i], absl::Milliseconds(2500)) << "read " << i;
}

// A reader's MOVED target that stops serving the slot without redirecting
// (a node reset, as one replaced by a fresh node at the same address
// answers: CLUSTERDOWN) is dropped, and the slot follows the reloaded map
// again. Its own cluster: a node is reset.
TEST(RedisClusterResetTest, AMovedTargetThatAnswersAnErrorIsDropped) {
  test::RedisClusterOptions shape = ClusterShape(3, 0);
  shape.node_timeout = absl::Seconds(15);  // No failure detection meanwhile.
  absl::StatusOr<std::unique_ptr<RedisCluster>> started = RedisCluster::Start(shape);
  ASSERT_TRUE(started.ok()) << started.status();
  RedisCluster& cluster = **started;
  for (const auto& node : cluster.nodes()) {
    (void)node->Command({"CONFIG", "SET", "cluster-require-full-coverage", "no"});
  }
  absl::StatusOr<LaggingMove> move = PlanLaggingMove(cluster);
  ASSERT_TRUE(move.ok()) << move.status();
  test::RedisProcess *source = move->source, *x = move->from, *y = move->to;
  const std::string x_id = NodeId(*x), y_id = NodeId(*y), source_id = NodeId(*source);
  // `id` on x's slot s (moves to y and back); `other` on another of x's
  // slots t (moves to source, to make the reader reload later).
  std::string id, other;
  for (int i = 0; i < 2000 && other.empty(); ++i) {
    const std::string candidate = absl::StrCat("pin-", i);
    absl::StatusOr<test::RedisProcess*> owner = cluster.MasterOf(KeySlot("rank:log:" + candidate));
    ASSERT_TRUE(owner.ok());
    if (*owner != x) continue;
    if (id.empty()) {
      id = candidate;
    } else if (KeySlot("rank:log:" + candidate) != KeySlot("rank:log:" + id)) {
      other = candidate;
    }
  }
  ASSERT_FALSE(other.empty());
  const std::string s = absl::StrCat(KeySlot("rank:log:" + id));
  const std::string t = absl::StrCat(KeySlot("rank:log:" + other));
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> reader =
      RedisClusterReader::Create(ClusterConfig(cluster));
  ASSERT_TRUE(reader.ok());
  const std::vector<std::string> items = {"item"};
  ASSERT_TRUE((*reader)->Fetch(id, items).ok());  // Loads the map.
  // As in AReaderKeepsItsMovedOverAStaleReload: s moves x -> y, source
  // does not hear of it; the reader's MOVED outlives the reload (s -> x).
  ASSERT_EQ(y->Command({"CLUSTER", "SETSLOT", s, "NODE", y_id})->str, "OK");
  ASSERT_EQ(x->Command({"CLUSTER", "SETSLOT", s, "NODE", y_id})->str, "OK");
  absl::SleepFor(RedisClusterSink::kRefreshInterval + absl::Milliseconds(50));
  ASSERT_TRUE((*reader)->Fetch(id, items).ok());
  // y stops serving s without redirecting: it is reset (a node replaced by
  // a fresh one at the same address), and s goes back to x.
  ASSERT_EQ(y->Command({"FLUSHALL"})->str, "OK");
  absl::StatusOr<RedisReply> reset = y->Command({"CLUSTER", "RESET", "HARD"});
  ASSERT_TRUE(reset.ok());
  ASSERT_EQ(reset->str, "OK");
  ASSERT_EQ(x->Command({"CLUSTER", "SETSLOT", s, "NODE", x_id})->str, "OK");
  absl::StatusOr<std::unique_ptr<RedisClusterReader>> fresh =
      RedisClusterReader::Create(ClusterConfig(cluster));
  ASSERT_TRUE(fresh.ok());
  absl::StatusOr<std::vector<std::optional<std::string>>> fresh_read = (*fresh)->Fetch(id, items);
  EXPECT_TRUE(fresh_read.ok()) << fresh_read.status();
  // Make the reader reload: t moves x -> source, a MOVED for t.
  ASSERT_EQ(source->Command({"CLUSTER", "SETSLOT", t, "NODE", source_id})->str, "OK");
  ASSERT_EQ(x->Command({"CLUSTER", "SETSLOT", t, "NODE", source_id})->str, "OK");
  absl::SleepFor(RedisClusterSink::kRefreshInterval + absl::Milliseconds(50));
  EXPECT_TRUE((*reader)->Fetch(other, items).ok());
  int failed = 0;
  std::string last;
  const int reads = 10;
  for (int i = 0; i < reads; ++i) {
    absl::SleepFor(RedisClusterSink::kRefreshInterval + absl::Milliseconds(50));
    absl::StatusOr<std::vector<std::optional<std::string>>> read = (*reader)->Fetch(id, items);
    if (!read.ok()) {
      ++failed;
      last = read.status().ToString();
    }
  }
  // The first read may meet the reset node's CLUSTERDOWN; none after it.
  EXPECT_LE(failed, 1) << "the reader keeps sending slot " << s
                       << " to the reset node; last: " << last;
}

TEST(RedisClusterBadConfigTest, BadSeedListIsInvalidArgument) {
  LogStoreConfig config;
  config.backend = LogStoreConfig::Backend::kRedisCluster;
  config.redis_addr = " , ";
  EXPECT_EQ(OpenLogStore(config).status().code(), absl::StatusCode::kInvalidArgument);
  config.redis_addr = "127.0.0.1:1,nonsense";
  EXPECT_EQ(OpenLogStore(config).status().code(), absl::StatusCode::kInvalidArgument);
}

// A metric's value from /metrics text.
double Metric(const std::string& text, const std::string& name) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, name) && absl::ConsumePrefix(&line, " ")) {
      double v = 0;
      if (absl::SimpleAtod(line, &v)) return v;
    }
  }
  return -1;
}

TEST(RedisClusterFailoverTest, AMasterFailoverUnderLoadFailsNoRankCallAndCountsEveryLoss) {
  absl::StatusOr<std::unique_ptr<RedisCluster>> cluster = RedisCluster::Start(ClusterShape(3, 1));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::unique_ptr<test::ServerProcess>> server = test::ServerProcess::Start(
      {"--logstore=redis-cluster", absl::StrCat("--redis_addr=", (*cluster)->SeedList()),
       "--log_writers=2", "--codec=rankbin"});
  ASSERT_TRUE(server.ok()) << server.status();
  absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs({});
  ASSERT_TRUE(codecs.ok());
  client::RankClient rank_client(client::MakeChannel((*server)->target()), &*codecs);
  workload::WorkloadOptions options;
  options.candidates = 100;
  workload::WorkloadGenerator generator(options);

  std::atomic<bool> stop{false};
  std::atomic<int> calls{0}, failed{0};
  std::string first_error;
  std::thread load([&] {
    for (uint64_t seq = 0; !stop.load(); ++seq) {
      rank::v1::RankRequest request = generator.Make(seq);
      request.set_log_mode(rank::v1::LOG_MODE_STORE);
      absl::StatusOr<client::RankReply> reply = rank_client.Rank(request, {});
      calls.fetch_add(1);
      if (!reply.ok() && failed.fetch_add(1) == 0) first_error = reply.status().ToString();
      absl::SleepFor(absl::Milliseconds(5));
    }
  });
  absl::SleepFor(absl::Seconds(1));
  // Kill the master of some slot; its replica takes over.
  const int slot = 0;
  absl::StatusOr<test::RedisProcess*> master = (*cluster)->MasterOf(slot);
  ASSERT_TRUE(master.ok()) << master.status();
  const std::string old_master = (*master)->address();
  const int calls_at_kill = calls.load();
  ASSERT_TRUE((*cluster)->KillMasterOf(slot).ok());
  absl::Status promoted = (*cluster)->WaitForNewMaster(slot, old_master, absl::Seconds(30));
  // Let writes resume on the promoted replica under load.
  absl::SleepFor(absl::Seconds(1));
  stop = true;
  load.join();
  ASSERT_TRUE(promoted.ok()) << promoted;
  EXPECT_EQ(failed.load(), 0) << first_error;
  EXPECT_GT(calls.load(), calls_at_kill + 20);

  // Requests after the failover whose keys live in the promoted master's
  // slots are stored there.
  absl::StatusOr<test::RedisProcess*> new_master = (*cluster)->MasterOf(slot);
  ASSERT_TRUE(new_master.ok());
  int stored_on_new_master = 0;
  for (uint64_t seq = 100000; seq < 100060; ++seq) {
    rank::v1::RankRequest request = generator.Make(seq);
    request.set_log_mode(rank::v1::LOG_MODE_STORE);
    ASSERT_TRUE(rank_client.Rank(request, {}).ok());
    const std::string key = absl::StrCat("rank:log:", request.request_id());
    absl::StatusOr<test::RedisProcess*> owner = (*cluster)->MasterOf(KeySlot(key));
    if (!owner.ok() || *owner != *new_master) continue;
    for (int attempt = 0; attempt < 100; ++attempt) {
      absl::StatusOr<RedisReply> len = (*new_master)->Command({"HLEN", key});
      // The layout, the top 10 items ("#0") and every item ("#1").
      if (len.ok() && len->integer == 3) {
        ++stored_on_new_master;
        break;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
  }
  EXPECT_GT(stored_on_new_master, 0);

  // Every line is accounted for, exactly once: stored, dropped (some were:
  // the dead master's share during the failover window) or unknown, once
  // nothing is in flight.
  const std::string items = "rankwire_log_items_total{outcome=";
  std::string metrics;
  for (int attempt = 0; attempt < 500; ++attempt) {
    absl::StatusOr<std::string> got = test::HttpGet((*server)->metrics_port(), "/metrics");
    ASSERT_TRUE(got.ok()) << got.status();
    metrics = *got;
    if (Metric(metrics, items + "\"in_flight\"}") == 0) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  const double handed = Metric(metrics, items + "\"handed\"}");
  const double stored = Metric(metrics, items + "\"stored\"}");
  const double store_error = Metric(metrics, items + "\"dropped_store_error\"}");
  const double queue_full = Metric(metrics, items + "\"dropped_queue_full\"}");
  const double unknown = Metric(metrics, items + "\"unknown\"}");
  EXPECT_EQ(Metric(metrics, items + "\"in_flight\"}"), 0);
  EXPECT_GT(store_error + unknown, 0);
  EXPECT_EQ(queue_full, 0);
  EXPECT_EQ(stored + store_error + unknown, handed);
  EXPECT_GT(stored, handed * 0.5);
}

}  // namespace
}  // namespace rankwire::logstore
