// RedisConnection against sockets that misbehave on loopback: a connect
// that is refused, one whose SYN is dropped, a server that is stopped, one
// that trickles its reply a byte at a time, and one that stops reading.
#include "logstore/redis_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "logstore/log_store.h"
#include "logstore/redis_log_reader.h"
#include "logstore/redis_log_sink.h"
#include "tests/support/redis_process.h"

namespace rankwire::logstore {
namespace {

// A loopback socket bound to a free port; `port` is 0 when that failed.
struct LoopbackSocket {
  LoopbackSocket() {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
  }
  ~LoopbackSocket() {
    if (fd >= 0) close(fd);
  }
  int fd = -1;
  int port = 0;
  sockaddr_in addr{};
};

// A listener that never accepts, its queue (backlog 0) filled: a further
// connect's SYN is dropped and the connect times out, as to an address
// that does not answer.
struct BlackholeListener {
  BlackholeListener() {
    if (socket_.port == 0 || listen(socket_.fd, 0) != 0) return;
    for (int i = 0; i < 3; ++i) {
      const int c = ::socket(AF_INET, SOCK_STREAM, 0);
      fcntl(c, F_SETFL, O_NONBLOCK);
      (void)connect(c, reinterpret_cast<const sockaddr*>(&socket_.addr), sizeof(socket_.addr));
      fillers.push_back(c);
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  ~BlackholeListener() {
    for (int c : fillers) close(c);
  }
  int port() const { return socket_.port; }
  LoopbackSocket socket_;
  std::vector<int> fillers;
};

// A fake Redis on a loopback port: `serve` runs on its own thread with
// the first connection it accepts (until `stop`, which the destructor
// sets before it shuts the listener down and joins).
class FakeRedis {
 public:
  using Serve = std::function<void(int client, const std::atomic<bool>& stop)>;
  explicit FakeRedis(Serve serve) {
    if (socket_.port == 0 || listen(socket_.fd, 8) != 0) return;
    thread_ = std::thread([this, serve = std::move(serve)] {
      const int c = accept(socket_.fd, nullptr, nullptr);
      if (c < 0) return;
      serve(c, stop_);
      close(c);
    });
  }
  ~FakeRedis() {
    stop_ = true;
    shutdown(socket_.fd, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return socket_.port; }

 private:
  LoopbackSocket socket_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Answers the connect's PING (the first thing the client sends).
void AnswerPing(int c) {
  char buf[64];
  if (recv(c, buf, sizeof(buf), 0) > 0) (void)send(c, "+PONG\r\n", 7, MSG_NOSIGNAL);
}

// A fake Redis that answers PING at once and every other command with
// `reply`, one byte every `gap`: each read gets a byte well within the
// socket timeout, the whole reply takes reply.size() * gap.
class TricklingRedis : public FakeRedis {
 public:
  TricklingRedis(std::string reply, absl::Duration gap)
      : FakeRedis([reply = std::move(reply), gap](int c, const std::atomic<bool>& stop) {
          char buf[4096];
          while (!stop) {
            const ssize_t n = recv(c, buf, sizeof(buf), 0);
            if (n <= 0) break;
            if (absl::StrContains(absl::string_view(buf, static_cast<size_t>(n)), "PING")) {
              (void)send(c, "+PONG\r\n", 7, MSG_NOSIGNAL);
              continue;
            }
            for (char ch : reply) {
              if (stop) break;
              absl::SleepFor(gap);
              if (send(c, &ch, 1, MSG_NOSIGNAL) != 1) break;
            }
          }
        }) {}
};

// A fake Redis that answers the PING of a connect, then never reads again:
// a large write fills the socket buffers and stays there.
class DeafRedis : public FakeRedis {
 public:
  DeafRedis()
      : FakeRedis([](int c, const std::atomic<bool>& stop) {
          AnswerPing(c);
          while (!stop) absl::SleepFor(absl::Milliseconds(10));
        }) {}
};

// A connection with the default options to a server on loopback `port`.
absl::StatusOr<RedisConnection> ConnectTo(int port) {
  RedisConnectOptions options;
  options.address = RedisAddress{"127.0.0.1", port};
  return RedisConnection::Connect(options);
}

// Sends `command` to the server on loopback `port` and waits at most
// `limit` for the reply, which must not come: the wait ends as a timeout.
// Returns how long it took (infinite if the connection or send failed).
absl::Duration TimeOutWaitingForReply(int port, const char* command, absl::Duration limit) {
  absl::StatusOr<RedisConnection> connection = ConnectTo(port);
  if (!connection.ok()) {
    ADD_FAILURE() << connection.status();
    return absl::InfiniteDuration();
  }
  if (redisAppendCommand(connection->get(), command) != REDIS_OK) {
    ADD_FAILURE() << "redisAppendCommand: " << connection->get()->errstr;
    return absl::InfiniteDuration();
  }
  void* reply = nullptr;
  const absl::Time start = absl::Now();
  EXPECT_FALSE(connection->GetReplyWithin(limit, &reply));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(reply, nullptr);
  EXPECT_TRUE(connection->TimedOut()) << connection->get()->errstr;
  return took;
}

// A real redis-server and a connection to it (default options).
struct ConnectedRedis {
  std::unique_ptr<test::RedisProcess> redis;
  std::optional<RedisConnection> connection;
};

absl::StatusOr<ConnectedRedis> StartAndConnect() {
  ConnectedRedis out;
  absl::StatusOr<std::unique_ptr<test::RedisProcess>> redis = test::RedisProcess::Start();
  if (!redis.ok()) return redis.status();
  out.redis = *std::move(redis);
  absl::StatusOr<RedisConnection> connection = ConnectTo(out.redis->port());
  if (!connection.ok()) return connection.status();
  out.connection.emplace(*std::move(connection));
  return out;
}

// A one-entry batch for `sink`: `items` fields of `value_bytes` each.
std::vector<SinkEntry> OneRequest(size_t items, size_t value_bytes) {
  std::vector<SinkEntry> batch(1);
  batch[0].key = "rank:log:slow";
  for (size_t i = 0; i < items; ++i) {
    batch[0].fields.Add(absl::StrCat("item", i), std::string(value_bytes, 'x'));
  }
  return batch;
}

RedisSinkOptions SinkTo(int port, absl::Duration io_timeout) {
  RedisSinkOptions options;
  options.connect.address = RedisAddress{"127.0.0.1", port};
  options.connect.io_timeout = io_timeout;
  return options;
}

TEST(RedisConnectionTest, IsRedisTimeoutTellsARefusedConnectFromATimedOutOne) {
  RedisConnectOptions options;  // 200 ms connect, 500 ms I/O.
  absl::StatusOr<int> free_port = test::PickFreePort();
  ASSERT_TRUE(free_port.ok());
  options.address = RedisAddress{"127.0.0.1", *free_port};
  absl::StatusOr<RedisConnection> refused = RedisConnection::Connect(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_FALSE(IsRedisTimeout(refused.status())) << refused.status();

  BlackholeListener blackhole;
  ASSERT_NE(blackhole.port(), 0);
  options.address = RedisAddress{"127.0.0.1", blackhole.port()};
  absl::StatusOr<RedisConnection> dropped = RedisConnection::Connect(options);
  ASSERT_FALSE(dropped.ok());
  EXPECT_TRUE(IsRedisTimeout(dropped.status())) << dropped.status();

  absl::StatusOr<std::unique_ptr<test::RedisProcess>> redis = test::RedisProcess::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  ASSERT_TRUE((*redis)->Pause().ok());
  options.address = RedisAddress{"127.0.0.1", (*redis)->port()};
  absl::StatusOr<RedisConnection> stalled = RedisConnection::Connect(options);
  (void)(*redis)->Resume();
  ASSERT_FALSE(stalled.ok());
  EXPECT_TRUE(IsRedisTimeout(stalled.status())) << stalled.status();
}

// The whole exchange ends within its limit, also when every read of the
// reply gets a byte well within the socket timeout.
TEST(RedisConnectionTest, AReplyThatTricklesInIsCutOffAtTheLimit) {
  TricklingRedis slow("*2\r\n$-1\r\n$-1\r\n", absl::Milliseconds(100));  // 1.4 s in all.
  ASSERT_NE(slow.port(), 0);
  EXPECT_LT(TimeOutWaitingForReply(slow.port(), "HMGET k a", absl::Milliseconds(300)),
            absl::Milliseconds(700));
}

// The log reader's round trip is bounded by the I/O timeout as a whole,
// so a read ends within about that after its deadline (ARCHITECTURE).
TEST(RedisConnectionTest, ALogReadFromATricklingServerEndsWithinTheIoTimeout) {
  TricklingRedis slow("*2\r\n$-1\r\n$-1\r\n", absl::Milliseconds(150));  // 2.1 s in all.
  ASSERT_NE(slow.port(), 0);
  LogStoreConfig config;
  config.backend = LogStoreConfig::Backend::kRedis;
  config.redis_addr = absl::StrCat("127.0.0.1:", slow.port());  // 500 ms I/O timeout.
  absl::StatusOr<std::unique_ptr<RedisLogReader>> reader = RedisLogReader::Create(config);
  ASSERT_TRUE(reader.ok()) << reader.status();
  const std::vector<std::string> items = {"item"};
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::optional<std::string>>> read =
      (*reader)->FetchBefore("trickle", items, start + absl::Milliseconds(200));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(read.status().code(), absl::StatusCode::kUnavailable) << read.status();
  EXPECT_LT(took, absl::Milliseconds(800)) << read.status();
}

// A log writer's batch is bounded by the I/O timeout as a whole: its
// replies trickle in well within the timeout per byte (~2.2 s in all),
// and the write still ends after about the timeout, counted as failed.
TEST(RedisConnectionTest, ALogWriteToATricklingServerEndsWithinTheIoTimeout) {
  TricklingRedis slow("+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n*3\r\n:1\r\n:1\r\n:1\r\n",
                      absl::Milliseconds(50));
  ASSERT_NE(slow.port(), 0);
  RedisLogSink sink(SinkTo(slow.port(), absl::Milliseconds(300)));
  std::vector<SinkEntry> batch = OneRequest(3, 100);
  const absl::Time start = absl::Now();
  std::vector<absl::Status> results = sink.Write(absl::MakeSpan(batch), absl::Seconds(1));
  const absl::Duration took = absl::Now() - start;
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].code(), absl::StatusCode::kUnavailable) << results[0];
  EXPECT_TRUE(IsRedisTimeout(results[0])) << results[0];
  EXPECT_LT(took, absl::Milliseconds(1000)) << results[0];
}

// A batch larger than the socket buffers, to a server that stopped
// reading, ends after about one I/O timeout: its writes wait in poll(),
// not in a blocking write that the socket timeout would end only once per
// call.
TEST(RedisConnectionTest, ALargeLogWriteToAServerThatStoppedReadingEndsWithinTheIoTimeout) {
  DeafRedis deaf;
  ASSERT_NE(deaf.port(), 0);
  // A 1 s timeout: the previous code took 3.4 of them.
  RedisLogSink sink(SinkTo(deaf.port(), absl::Seconds(1)));
  std::vector<SinkEntry> batch = OneRequest(64, 256 << 10);  // 16 MiB.
  const absl::Time start = absl::Now();
  std::vector<absl::Status> results = sink.Write(absl::MakeSpan(batch), absl::Seconds(1));
  const absl::Duration took = absl::Now() - start;
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(IsRedisTimeout(results[0])) << results[0];
  // Formatting and moving 16 MiB is CPU time on top of the 1 s of waiting
  // (~0.2 s idle, ~0.7 s beside a busy process on a loaded core).
  EXPECT_GE(took, absl::Milliseconds(900));
  EXPECT_LT(took, absl::Milliseconds(2500)) << results[0];
}

// How many PINGs `redis` has answered (INFO commandstats).
absl::StatusOr<int64_t> PingCalls(const test::RedisProcess& redis) {
  absl::StatusOr<std::string> stats = redis.Info("commandstats");
  if (!stats.ok()) return stats.status();
  constexpr absl::string_view kField = "cmdstat_ping:calls=";
  const size_t at = stats->find(kField.data(), 0, kField.size());
  if (at == std::string::npos) return 0;
  int64_t calls = 0;
  const size_t start = at + kField.size();
  const size_t end = stats->find(',', start);
  if (!absl::SimpleAtoi(stats->substr(start, end - start), &calls)) {
    return absl::InternalError("cannot read cmdstat_ping");
  }
  return calls;
}

// An idle sink's PING goes through the non-blocking path too: it is
// answered, and the connection stays up (a blocking hiredis call on the
// non-blocking socket would return no reply and drop it).
TEST(RedisConnectionTest, AnIdleSinksPingKeepsItsConnection) {
  absl::StatusOr<std::unique_ptr<test::RedisProcess>> redis = test::RedisProcess::Start();
  ASSERT_TRUE(redis.ok()) << redis.status();
  RedisLogSink sink(SinkTo((*redis)->port(), absl::Milliseconds(500)));
  std::vector<SinkEntry> batch = OneRequest(2, 10);
  ASSERT_TRUE(sink.Write(absl::MakeSpan(batch), absl::Seconds(5))[0].ok());
  const absl::StatusOr<int64_t> pings_before = PingCalls(**redis);
  ASSERT_TRUE(pings_before.ok()) << pings_before.status();
  absl::SleepFor(RedisLogSink::kIdlePingInterval + absl::Milliseconds(100));
  sink.Poll();
  EXPECT_TRUE(sink.up());
  EXPECT_EQ(sink.reconnects(), 0u);
  // Redis answered the sink's PING (reading the count costs none).
  const absl::StatusOr<int64_t> pings_after = PingCalls(**redis);
  ASSERT_TRUE(pings_after.ok()) << pings_after.status();
  EXPECT_EQ(*pings_after, *pings_before + 1);
}

// A reply already in the socket when the exchange looks, after its
// budget was spent elsewhere (the thread preempted, or serving other
// nodes), is read: the server did not keep it waiting.
TEST(RedisConnectionTest, AReplyAlreadyThereAfterTheBudgetIsSpentIsRead) {
  absl::StatusOr<ConnectedRedis> redis = StartAndConnect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  std::optional<RedisConnection>& connection = redis->connection;
  ASSERT_EQ(redisAppendCommand(connection->get(), "PING"), REDIS_OK);
  IoBudget budget(absl::Milliseconds(100));
  ASSERT_TRUE(connection->FlushWithin(&budget));
  // The reply arrives (however long redis-server takes to run here).
  pollfd reply_there{connection->get()->fd, POLLIN, 0};
  ASSERT_EQ(poll(&reply_there, 1, 5000), 1);
  budget.wait = -absl::Milliseconds(1);  // Spent elsewhere.
  void* raw = nullptr;
  EXPECT_TRUE(connection->GetReplyWithin(&budget, &raw)) << connection->TimedOut();
  RedisReplyPtr reply(static_cast<redisReply*>(raw));
  ASSERT_NE(reply, nullptr);
}

// With the budget spent and no reply in the socket, the exchange ends at
// once as a timeout: the one look does not wait.
TEST(RedisConnectionTest, ASpentBudgetWithNothingThereTimesOutAtOnce) {
  TricklingRedis slow("+PONG\r\n", absl::Milliseconds(300));
  ASSERT_NE(slow.port(), 0);
  absl::StatusOr<RedisConnection> connection = ConnectTo(slow.port());
  ASSERT_TRUE(connection.ok()) << connection.status();
  ASSERT_EQ(redisAppendCommand(connection->get(), "GET k"), REDIS_OK);
  IoBudget budget(absl::Milliseconds(500));
  budget.wait = -absl::Milliseconds(1);
  void* raw = nullptr;
  const absl::Time start = absl::Now();
  EXPECT_FALSE(connection->GetReplyWithin(&budget, &raw));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(150));
  EXPECT_TRUE(connection->TimedOut());
}

// A reply that keeps streaming in as fast as it is read (a broken or
// hostile endpoint: an endless bulk string) is cut within twice the
// budget, not held for as long as the server sends.
TEST(RedisConnectionTest, AnEndlessReplyIsCutWithinTwiceTheBudget) {
  // The connection (TimeOutWaitingForReply's) closes before this server
  // stops: its send then fails, and it ends.
  FakeRedis endless([](int c, const std::atomic<bool>& stop) {
    AnswerPing(c);
    char buf[256];
    (void)recv(c, buf, sizeof(buf), 0);
    const std::string head = "$100000000000\r\n";
    (void)send(c, head.data(), head.size(), MSG_NOSIGNAL);
    const std::string chunk(64 << 10, 'z');
    while (!stop && send(c, chunk.data(), chunk.size(), MSG_NOSIGNAL) > 0) {
    }
  });
  ASSERT_NE(endless.port(), 0);
  EXPECT_LT(TimeOutWaitingForReply(endless.port(), "GET x", absl::Milliseconds(50)),
            absl::Milliseconds(600));
}

// An infinite limit waits as long as it takes (no arithmetic overflows
// into an exchange that times out at once).
TEST(RedisConnectionTest, AnInfiniteLimitDoesNotTimeOut) {
  absl::StatusOr<ConnectedRedis> redis = StartAndConnect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  std::optional<RedisConnection>& connection = redis->connection;
  ASSERT_EQ(redisAppendCommand(connection->get(), "PING"), REDIS_OK);
  void* raw = nullptr;
  EXPECT_TRUE(connection->GetReplyWithin(absl::InfiniteDuration(), &raw)) << connection->TimedOut();
  RedisReplyPtr reply(static_cast<redisReply*>(raw));
  ASSERT_NE(reply, nullptr);
}

// A reply that arrives in time is read whole.
TEST(RedisConnectionTest, AReplyWithinTheLimitIsReadWhole) {
  absl::StatusOr<ConnectedRedis> redis = StartAndConnect();
  ASSERT_TRUE(redis.ok()) << redis.status();
  std::optional<RedisConnection>& connection = redis->connection;
  ASSERT_EQ(redisAppendCommand(connection->get(), "SET k %s", "value"), REDIS_OK);
  ASSERT_EQ(redisAppendCommand(connection->get(), "GET k"), REDIS_OK);
  for (const char* expected : {"OK", "value"}) {
    void* raw = nullptr;
    ASSERT_TRUE(connection->GetReplyWithin(absl::Seconds(1), &raw));
    RedisReplyPtr reply(static_cast<redisReply*>(raw));
    ASSERT_NE(reply, nullptr);
    EXPECT_EQ(std::string(reply->str, reply->len), expected);
  }
}

}  // namespace
}  // namespace rankwire::logstore
