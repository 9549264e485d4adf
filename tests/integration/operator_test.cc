// What an operator of a fleet meets, through the real binaries: a second
// server on a busy port, defaults sized from the cgroup's CPU quota, how
// long SIGTERM takes to end the process, and rankwire-cli as the
// operator's tool (replaying a request, reading a past request's logs,
// health of several replicas, a model's features).
#include <signal.h>
#include <sys/types.h>

#include <dirent.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "rank/v1/rank.pb.h"
#include "tests/support/command.h"
#include "tests/support/server_process.h"
#include "workload/workload.h"

namespace rankwire {
namespace {

using test::CommandResult;
using test::RunCommand;
using test::ServerProcess;
using ::testing::HasSubstr;
using ::testing::Not;

// A fresh temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/rankwire-operator-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string Write(const std::string& name, const std::string& text) const {
    const std::string path = File(name);
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The threads of `pid` whose name (comm) is `name`.
int ThreadsNamed(pid_t pid, const std::string& name) {
  int count = 0;
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  for (const auto& entry : std::filesystem::directory_iterator(tasks)) {
    std::ifstream comm(entry.path() / "comm");
    std::string line;
    std::getline(comm, line);
    count += line == name;
  }
  return count;
}

// ---------------------------------------------------------------------------
// A port in use.

TEST(BusyPortTest, ASecondServerOnABusyPortExitsNonZeroNamingThePort) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> first = ServerProcess::Start();
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = (*first)->port();

  // The real binary, run to its end as an operator would start it.
  absl::StatusOr<CommandResult> second =
      RunCommand({RANKWIRE_SERVER_BIN, "--address=127.0.0.1", absl::StrCat("--port=", port),
                  "--metrics_port=-1", absl::StrCat("--model=", RANKWIRE_MODEL_PATH)},
                 absl::Seconds(30));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(second->exit_code, 0) << second->out << second->err;
  const std::string said = second->out + second->err;
  EXPECT_THAT(said, HasSubstr(absl::StrCat("cannot listen on 127.0.0.1:", port)));
  EXPECT_THAT(said, HasSubstr(absl::StrCat("is another process using port ", port, "?")));
  EXPECT_THAT(said, Not(HasSubstr("listening port=")));
  // The first server still owns the port and serves.
  absl::StatusOr<CommandResult> health =
      RunCommand({RANKWIRE_CLI_BIN, absl::StrCat("--target=127.0.0.1:", port), "--health"});
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->exit_code, 0) << health->out << health->err;
}

TEST(BusyPortTest, ReusePortLetsTwoServersShareAPortWhenBothAsk) {
  // The control: the same start-up succeeds when both servers ask for
  // SO_REUSEPORT, so the refusal above is the exclusive bind, not a broken
  // second start.
  absl::StatusOr<std::unique_ptr<ServerProcess>> first = ServerProcess::Start({"--reuse_port"});
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<ServerProcess>> second =
      ServerProcess::Start({"--reuse_port", absl::StrCat("--port=", (*first)->port())});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->port(), (*first)->port());
}

// ---------------------------------------------------------------------------
// Defaults from the cgroup's CPU quota.

struct QuotaCase {
  std::string file;   // Relative to the fake cgroup root.
  std::string quota;  // Its text.
  std::string period_file;
  std::string period;
  int cpus;
  std::string source;
};

// Starts the server with RANKWIRE_CGROUP_ROOT at a fake cgroup tree holding
// the case's files, and checks the sizing it reports and the ranking
// worker threads it runs.
void ExpectSizedByQuota(const QuotaCase& c) {
  TempDir cgroup;
  const std::string quota_file = cgroup.Write(c.file, c.quota);
  if (!c.period_file.empty()) cgroup.Write(c.period_file, c.period);
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(
      {}, absl::Seconds(15), {absl::StrCat("RANKWIRE_CGROUP_ROOT=", cgroup.path())});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string out = (*server)->Output();
  EXPECT_THAT(out, HasSubstr(absl::StrCat("usable cpus=", c.cpus, " (", c.source, ": quota ")));
  EXPECT_THAT(out, HasSubstr(absl::StrCat(" CPUs in ", quota_file, ";")));
  // --max_concurrent_rank: twice the CPUs; --rank_workers: one per CPU.
  EXPECT_THAT(out, HasSubstr(absl::StrCat(" max_concurrent_rank=", 2 * c.cpus,
                                          " rank_workers=", c.cpus, " ")));
  EXPECT_EQ(ThreadsNamed((*server)->pid(), "rankwire-rank"), c.cpus) << out;
}

TEST(CpuQuotaTest, ATwoCpuQuotaSizesAdmissionAndWorkersForTwo) {
  ExpectSizedByQuota({"cpu.max", "200000 100000\n", "", "", 2, "cgroup v2 cpu.max"});
}

TEST(CpuQuotaTest, AOneCpuQuotaSizesForOneWhateverTheHostHas) {
  // The host (and CI) has at least 2 CPUs: 1 is the quota's number alone.
  ExpectSizedByQuota({"cpu.max", "50000 100000\n", "", "", 1, "cgroup v2 cpu.max"});
}

TEST(CpuQuotaTest, ACgroupV1QuotaCountsToo) {
  ExpectSizedByQuota({"cpu/cpu.cfs_quota_us", "100000\n", "cpu/cpu.cfs_period_us", "100000\n", 1,
                      "cgroup v1 cpu.cfs_quota_us"});
}

TEST(CpuQuotaTest, NoQuotaSaysTheAffinityMask) {
  TempDir cgroup;
  cgroup.Write("cpu.max", "max 100000\n");
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(
      {}, absl::Seconds(15), {absl::StrCat("RANKWIRE_CGROUP_ROOT=", cgroup.path())});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->Output(), HasSubstr("(affinity mask: no CPU quota; affinity mask "));
}

// ---------------------------------------------------------------------------
// SIGTERM to exit.

TEST(ShutdownTest, AnIdleServerExitsWithinDrainPlusGraceAfterSigterm) {
  constexpr int kDrainMs = 500;
  constexpr int kGraceMs = 300;
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({absl::StrCat("--drain_ms=", kDrainMs),
                            absl::StrCat("--shutdown_grace_ms=", kGraceMs), "--log_flush_ms=2000"});
  ASSERT_TRUE(server.ok()) << server.status();
  // One call, so every part (channels, log writer, ranking worker) has run.
  absl::StatusOr<CommandResult> call = RunCommand(
      {RANKWIRE_CLI_BIN, absl::StrCat("--target=", (*server)->target()), "--candidates=50"});
  ASSERT_TRUE(call.ok()) << call.status();
  ASSERT_EQ(call->exit_code, 0) << call->err;
  absl::SleepFor(absl::Milliseconds(300));

  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE((*server)->Signal(SIGTERM).ok());
  absl::StatusOr<int> exit_code = (*server)->Wait(absl::Seconds(30));
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 0) << (*server)->Output();
  std::printf("SHUTDOWN {\"drain_ms\": %d, \"grace_ms\": %d, \"sigterm_to_exit_ms\": %lld}\n",
              kDrainMs, kGraceMs, static_cast<long long>(ms));
  EXPECT_GE(ms, kDrainMs) << "the drain was skipped";
  EXPECT_LE(ms, kDrainMs + kGraceMs + 200) << (*server)->Output();
  EXPECT_THAT((*server)->Output(), HasSubstr("rankwire-server stopped"));
}

// ---------------------------------------------------------------------------
// rankwire-cli as the operator's tool.

// rankwire-cli with `args`; the test fails on a run that does not finish.
CommandResult Cli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {RANKWIRE_CLI_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> r = RunCommand(argv, absl::Seconds(60));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : CommandResult{};
}

rank::v1::RankResponse ReadResponse(const std::string& path) {
  rank::v1::RankResponse response;
  absl::StatusOr<std::string> bytes = test::ReadFileBytes(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_TRUE(bytes.ok() && response.ParseFromString(*bytes)) << path;
  return response;
}

// The two responses' bodies are the same: byte for byte for the custom
// codecs; for protobuf, the same RankResult message (protobuf writes map
// entries, an item's metrics, in no fixed order, so two answers to one
// request differ in byte order already).
void ExpectSameBody(const rank::v1::RankResponse& a, const rank::v1::RankResponse& b) {
  ASSERT_EQ(a.header().codec(), b.header().codec());
  ASSERT_EQ(a.body_case(), b.body_case());
  EXPECT_EQ(a.header().item_count(), b.header().item_count());
  if (a.body_case() == rank::v1::RankResponse::kPayload) {
    EXPECT_GT(a.payload().size(), 0u);
    EXPECT_TRUE(a.payload() == b.payload()) << a.header().codec() << ": payloads differ";
  } else {
    EXPECT_GT(a.result().items_size(), 0);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(a.result(), b.result()));
  }
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server =
        ServerProcess::Start({"--codec=rankbin", "--log_ttl_ms=60000"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    target_ = absl::StrCat("--target=", server_->target());
  }
  std::unique_ptr<ServerProcess> server_;
  std::string target_;
  TempDir dir_;
};

TEST_F(CliTest, ADumpedRequestReplaysToTheSameResponseBody) {
  for (const std::string codec : {"rankbin", "rankbin-zstd", "protobuf"}) {
    for (const std::string log_mode : {"store", "inline"}) {
      SCOPED_TRACE(codec + " " + log_mode);
      const std::vector<std::string> shape = {"--codec=" + codec, "--log_mode=" + log_mode,
                                              "--candidates=300", "--sequence=3",
                                              "--fetch_logs=false"};
      // The request as the CLI would send it, written and not sent.
      std::vector<std::string> dump = shape;
      dump.push_back("--dump_request=" + dir_.File("request.json"));
      CommandResult dumped = Cli(dump);
      ASSERT_EQ(dumped.exit_code, 0) << dumped.err;
      // The same request sent by the generator, then replayed from the file.
      std::vector<std::string> direct = shape;
      direct.insert(direct.end(), {target_, "--save_response=" + dir_.File("direct.bin")});
      CommandResult sent = Cli(direct);
      ASSERT_EQ(sent.exit_code, 0) << sent.err;
      CommandResult replayed =
          Cli({target_, "--request_file=" + dir_.File("request.json"),
               "--save_response=" + dir_.File("replayed.bin"), "--fetch_logs=false"});
      ASSERT_EQ(replayed.exit_code, 0) << replayed.err;
      const rank::v1::RankResponse a = ReadResponse(dir_.File("direct.bin"));
      const rank::v1::RankResponse b = ReadResponse(dir_.File("replayed.bin"));
      EXPECT_EQ(a.header().codec(), codec);
      EXPECT_EQ(a.header().request_id(), b.header().request_id());
      EXPECT_EQ(a.header().item_count(), 300u);
      ExpectSameBody(a, b);
    }
  }
}

TEST_F(CliTest, ABinaryRequestFileReplaysACallersRequest) {
  // A caller's request as captured bytes: the workload's request 5.
  workload::WorkloadOptions options;
  options.candidates = 200;
  options.accept_codecs = {"rankbin"};
  const std::string path =
      dir_.Write("captured.bin", workload::WorkloadGenerator(options).Make(5).SerializeAsString());
  CommandResult replayed =
      Cli({target_, "--request_file=" + path, "--save_response=" + dir_.File("replayed.bin"),
           "--fetch_logs=false"});
  ASSERT_EQ(replayed.exit_code, 0) << replayed.err;
  CommandResult direct = Cli({target_, "--codec=rankbin", "--candidates=200", "--sequence=5",
                              "--save_response=" + dir_.File("direct.bin"), "--fetch_logs=false"});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  ExpectSameBody(ReadResponse(dir_.File("direct.bin")), ReadResponse(dir_.File("replayed.bin")));
  // Flags that shape generated requests do not silently change a replay.
  CommandResult mixed = Cli({target_, "--request_file=" + path, "--top_n=3"});
  EXPECT_NE(mixed.exit_code, 0);
  EXPECT_THAT(mixed.err, HasSubstr("--top_n shapes generated requests"));
  // --codec does, and says so.
  CommandResult recoded =
      Cli({target_, "--request_file=" + path, "--codec=protobuf",
           "--save_response=" + dir_.File("recoded.bin"), "--fetch_logs=false"});
  ASSERT_EQ(recoded.exit_code, 0) << recoded.err;
  EXPECT_THAT(recoded.err, HasSubstr("--codec replaces the accept_codecs of " + path));
  EXPECT_EQ(ReadResponse(dir_.File("recoded.bin")).header().codec(), "protobuf");
  // Not a request at all.
  CommandResult garbage =
      Cli({target_, "--request_file=" + dir_.Write("garbage.json", "{\"candidates\": 7}")});
  EXPECT_NE(garbage.exit_code, 0);
  EXPECT_THAT(garbage.err, HasSubstr("not a RankRequest in protobuf JSON"));
}

TEST_F(CliTest, AClampedFlagSaysSoOnStderr) {
  CommandResult r = Cli({target_, "--top_n=600", "--fetch_logs=false"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--top_n=600 clamped to 500: a request shows at most its "
                               "candidates (--candidates=500)"));
  EXPECT_THAT(r.out, HasSubstr("500 candidates, top_n=500"));
  CommandResult unclamped = Cli({target_, "--top_n=20", "--fetch_logs=false"});
  ASSERT_EQ(unclamped.exit_code, 0) << unclamped.err;
  EXPECT_THAT(unclamped.err, Not(HasSubstr("clamped")));
}

// The request id and shown item ids the CLI printed for a call.
void ParseShown(const std::string& out, std::string* request_id, std::vector<std::string>* ids) {
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(request (\S+): )"))) *request_id = m[1];
  const std::regex row(R"(\n +\d+  (\S+) +[0-9.]+ )");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), row); it != std::sregex_iterator();
       ++it) {
    ids->push_back((*it)[1]);
  }
}

TEST_F(CliTest, FetchLogsForReadsAPastRequestsLogs) {
  CommandResult call = Cli({target_, "--sequence=9", "--log_mode=store", "--fetch_logs=false"});
  ASSERT_EQ(call.exit_code, 0) << call.err;
  std::string request_id;
  std::vector<std::string> ids;
  ParseShown(call.out, &request_id, &ids);
  ASSERT_FALSE(request_id.empty()) << call.out;
  ASSERT_EQ(ids.size(), 10u) << call.out;

  // Later, from another process: two shown items and one the request never had.
  CommandResult logs =
      Cli({target_, "--fetch_logs_for=" + request_id,
           "--items=" + ids[0] + "," + ids[3] + ",sku-not-there", "--log_chars=0"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("logs of request " + request_id + " (from the log store):"));
  EXPECT_THAT(logs.out, HasSubstr("   1  " + ids[0] + " ("));
  EXPECT_THAT(logs.out, HasSubstr("   2  " + ids[3] + " ("));
  EXPECT_THAT(logs.out, HasSubstr("   3  sku-not-there: (not in the store: expired or dropped)"));

  CommandResult none = Cli({target_, "--fetch_logs_for=req-never-sent", "--items=sku-1"});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_THAT(none.err, HasSubstr("NOT_FOUND: no logs of request req-never-sent in the store"));
  CommandResult no_items = Cli({target_, "--fetch_logs_for=" + request_id});
  EXPECT_NE(no_items.exit_code, 0);
  EXPECT_THAT(no_items.err, HasSubstr("--fetch_logs_for needs --items"));
}

TEST(CliFetchLogsTest, AStoreThatIsDownIsUnavailable) {
  // A Redis address nothing listens on: ranking works, log reads cannot.
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--logstore=redis", "--redis_addr=127.0.0.1:1"});
  ASSERT_TRUE(server.ok()) << server.status();
  CommandResult r = Cli(
      {absl::StrCat("--target=", (*server)->target()), "--fetch_logs_for=req-1", "--items=sku-1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("UNAVAILABLE: redis 127.0.0.1:1"));
}

TEST(CliHealthTest, OneLinePerReplicaWithItsAddress) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> a = ServerProcess::Start();
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<std::unique_ptr<ServerProcess>> b = ServerProcess::Start({"--drain_ms=20000"});
  ASSERT_TRUE(b.ok()) << b.status();
  const std::string pa = absl::StrCat("127.0.0.1:", (*a)->port());
  const std::string pb = absl::StrCat("127.0.0.1:", (*b)->port());
  CommandResult both = Cli({"--target=ipv4:" + pa + "," + pb, "--health"});
  EXPECT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(both.out,
            absl::StrCat("health ", pa, ": server=SERVING rank.v1.RankService=SERVING\n", "health ",
                         pb, ": server=SERVING rank.v1.RankService=SERVING\n"));

  // One replica draining (SIGTERM, --drain_ms), one address with nothing
  // behind it: each says so on its own line, and the command fails.
  ASSERT_TRUE((*b)->Signal(SIGTERM).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!absl::StrContains((*b)->Output(), "draining") && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  CommandResult mixed = Cli({"--target=ipv4:" + pa + "," + pb + ",127.0.0.1:1", "--health"});
  EXPECT_NE(mixed.exit_code, 0);
  EXPECT_THAT(mixed.out,
              HasSubstr("health " + pa + ": server=SERVING rank.v1.RankService=SERVING\n"));
  EXPECT_THAT(mixed.out,
              HasSubstr("health " + pb + ": server=NOT_SERVING rank.v1.RankService=NOT_SERVING\n"));
  EXPECT_THAT(mixed.out, HasSubstr("health 127.0.0.1:1: error UNAVAILABLE"));
  EXPECT_THAT(mixed.err, HasSubstr("2 of 3 replicas not serving"));
}

TEST_F(CliTest, ModelsPrintsWhatTheServerRanksWith) {
  CommandResult r = Cli({target_, "--models"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("models ", server_->target(), ": generation 1 from ")));
  EXPECT_THAT(r.out, HasSubstr(": ecom_search_lr@2026.11.3 (linear) from "));
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST_F(CliTest, TheResponseLineNamesTheModelAndTheExperimentBucket) {
  CommandResult r = Cli({target_, "--candidates=20", "--fetch_logs=false"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(\n?response: .* model=ecom_search_lr@2026\.11\.3 bucket=\S+\n)")))
      << r.out;
}

TEST_F(CliTest, ADumpedBinFileIsTheWireBytes) {
  CommandResult dumped = Cli({"--candidates=30", "--dump_request=" + dir_.File("captured.bin")});
  ASSERT_EQ(dumped.exit_code, 0) << dumped.err;
  EXPECT_THAT(dumped.err, HasSubstr("(30 candidates, binary)"));
  absl::StatusOr<std::string> bytes = test::ReadFileBytes(dir_.File("captured.bin"));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  rank::v1::RankRequest request;
  ASSERT_TRUE(request.ParseFromString(*bytes));
  EXPECT_EQ(request.candidates_size(), 30);
  // --dump_format overrides the name; the binary file reads back to JSON.
  CommandResult json = Cli({"--request_file=" + dir_.File("captured.bin"), "--dump_request=-"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"request_id\": \"" + request.request_id() + "\""));
  CommandResult forced = Cli({"--candidates=30", "--dump_format=binary", "--dump_request=-"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  rank::v1::RankRequest from_stdout;  // (Maps are written in no fixed order.)
  ASSERT_TRUE(from_stdout.ParseFromString(forced.out));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(from_stdout, request));
  CommandResult bad = Cli({"--dump_format=yaml", "--dump_request=-"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("expected auto, json or binary"));
}

// Two replicas over one model directory, each with its admin RPC on its
// health port: --models and --reload_models answer per replica, by address.
class CliFleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Model("1.model", "2026.11.3");
    for (auto* server : {&a_, &b_}) {
      absl::StatusOr<std::unique_ptr<ServerProcess>> s =
          ServerProcess::Start({"--model=" + dir_.File("models"), "--model_poll_interval=0",
                                "--health_port=0", "--model_admin_rpc", "--log_mode=none"});
      ASSERT_TRUE(s.ok()) << s.status();
      *server = *std::move(s);
    }
  }
  void Model(const std::string& name, const std::string& version) {
    std::ifstream in(RANKWIRE_MODEL_PATH);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    dir_.Write(
        "models/" + name,
        absl::StrReplaceAll(text, {{"\nversion 2026.11.3\n", "\nversion " + version + "\n"}}));
  }
  static std::string Health(const ServerProcess& server) {
    std::smatch m;
    const std::string out = server.Output();
    EXPECT_TRUE(std::regex_search(out, m, std::regex(R"(health_port=(\d+))"))) << out;
    return absl::StrCat("127.0.0.1:", m.size() > 1 ? m[1].str() : "0");
  }
  TempDir dir_;
  std::unique_ptr<ServerProcess> a_, b_;
};

TEST_F(CliFleetTest, ModelsAsksEveryReplicaOnceByItsAddress) {
  for (const std::string list : {"ipv4:", ""}) {  // An ipv4: list and the comma form.
    CommandResult r =
        Cli({absl::StrCat("--target=", list, a_->target(), ",", b_->target()), "--models"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
    ASSERT_EQ(lines.size(), 2u) << r.out;
    EXPECT_THAT(lines[0], HasSubstr(absl::StrCat("models ", a_->target(), ": generation 1")));
    EXPECT_THAT(lines[1], HasSubstr(absl::StrCat("models ", b_->target(), ": generation 1")));
  }
  const std::string both = absl::StrCat("--target=", a_->target(), ",", b_->target());
  CommandResult missing = Cli({both, "--models", "--expect_model=ecom_search_lr@2026.12.1"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("2 of 2 replicas do not serve ecom_search_lr@2026.12.1"));
  CommandResult met = Cli({both, "--models", "--expect_model=ecom_search_lr@2026.11.3"});
  EXPECT_EQ(met.exit_code, 0) << met.err;
  EXPECT_THAT(met.out, HasSubstr("2 of 2 replicas serve ecom_search_lr@2026.11.3\n"));
  // Exactly these: one more (or fewer) than served is not met.
  CommandResult more =
      Cli({both, "--models", "--expect_model=ecom_search_lr@2026.11.3,ecom_search_lr@2026.12.1"});
  EXPECT_NE(more.exit_code, 0);
}

TEST_F(CliFleetTest, ReloadModelsSaysWhatEachReplicaDid) {
  const std::string health = absl::StrCat("--target=", Health(*a_), ",", Health(*b_));
  CommandResult unchanged = Cli({health, "--reload_models"});
  ASSERT_EQ(unchanged.exit_code, 0) << unchanged.err;
  EXPECT_THAT(unchanged.out,
              HasSubstr(absl::StrCat("reload ", Health(*a_), ": unchanged, generation 1")));
  EXPECT_THAT(a_->Output(), HasSubstr("models (rpc): unchanged, generation 1"));

  Model("2.model", "2026.12.1");
  CommandResult loaded = Cli({health, "--reload_models"});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;
  EXPECT_THAT(loaded.out,
              HasSubstr(absl::StrCat("reload ", Health(*b_), ": loaded, generation 2 from ")));
  EXPECT_THAT(loaded.out, HasSubstr("ecom_search_lr@2026.12.1 (linear)"));

  dir_.Write("models/3.model", "rankwire-model 1\nname x\n");
  CommandResult refused = Cli({health, "--reload_models"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_THAT(refused.out,
              HasSubstr(absl::StrCat("reload ", Health(*a_), ": refused: reason truncated: ")));
  EXPECT_THAT(refused.out, HasSubstr("still serving generation 2"));
  EXPECT_THAT(refused.err, HasSubstr("2 of 2 replicas refused the new models"));
  // The refusal stays on record with its reason after the next good load.
  std::filesystem::remove(dir_.File("models/3.model"));
  Model("4.model", "2026.12.2");
  ASSERT_EQ(Cli({health, "--reload_models"}).exit_code, 0);
  CommandResult models = Cli({absl::StrCat("--target=", a_->target()), "--models",
                              "--expect_model=ecom_search_lr@2026.12.2"});
  EXPECT_EQ(models.exit_code, 0) << models.err;
  EXPECT_THAT(models.out, HasSubstr("; last refused "));
  EXPECT_THAT(models.out, HasSubstr(" (truncated): " + dir_.File("models/3.model")));

  // The main port refuses the admin RPC, and says where it is served.
  CommandResult main_port = Cli({absl::StrCat("--target=", a_->target()), "--reload_models"});
  EXPECT_NE(main_port.exit_code, 0);
  EXPECT_THAT(main_port.out, HasSubstr("error PERMISSION_DENIED: ReloadModels is served on the "
                                       "health port only"));
}

TEST_F(CliFleetTest, WaitMsWaitsForAModelToArriveOnEveryReplica) {
  Model("2.model", "2026.12.1");
  // Each replica told to reload in a while (SIGHUP), the CLI already waiting.
  std::thread later([&] {
    absl::SleepFor(absl::Milliseconds(300));
    EXPECT_TRUE(a_->Signal(SIGHUP).ok());
    EXPECT_TRUE(b_->Signal(SIGHUP).ok());
  });
  CommandResult r = Cli({absl::StrCat("--target=", a_->target(), ",", b_->target()), "--models",
                         "--expect_model=ecom_search_lr@2026.12.1", "--wait_ms=20000"});
  later.join();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("2 of 2 replicas serve ecom_search_lr@2026.12.1"));
  EXPECT_THAT(a_->Output(), HasSubstr("models (SIGHUP): generation 2 serving "
                                      "ecom_search_lr@2026.12.1"));
}

TEST(CliModelTest, ModelFeaturesListsWhatTheModelReads) {
  CommandResult r = Cli({absl::StrCat("--model_features=", RANKWIRE_MODEL_PATH)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("model ecom_search_lr@"));
  EXPECT_THAT(r.out, HasSubstr("item features (18; RankRequest.item_feature_names"));
  // Every feature the workload generator sends is one the model reads.
  for (const std::string& name : workload::ItemFeatureNames()) {
    EXPECT_THAT(r.out, HasSubstr("\n  " + name + "\n"));
  }
  EXPECT_THAT(r.out, HasSubstr("user features (3; RankRequest.user_features)"));
  CommandResult missing = Cli({"--model_features=/nonexistent/m.model"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/m.model"));
}

// --model_features takes the server's model flags and says what a server
// started with them would refuse, with the reason it would count.
TEST(CliModelTest, ModelFeaturesRefusesWhatAServerWithTheSameFlagsWould) {
  const std::string model = absl::StrCat("--model_features=", RANKWIRE_MODEL_PATH);
  CommandResult small = Cli({model, "--model_max_bytes=1000"});
  EXPECT_NE(small.exit_code, 0);
  EXPECT_THAT(small.err, HasSubstr("a server with these model flags would refuse"));
  EXPECT_THAT(small.err, HasSubstr("(reason too_large)"));
  EXPECT_EQ(Cli({model, "--xgboost_max_depth=0"}).exit_code, 1);
  TempDir dir;
  CommandResult empty = Cli({"--model_features=" + dir.Write("ranker.json", "")});
  EXPECT_NE(empty.exit_code, 0);
  EXPECT_THAT(empty.err, HasSubstr("(reason empty): " + dir.File("ranker.json") +
                                   ": not valid JSON: the file is empty"));
  // A manifest listing what callers send, and a model reading more.
  dir.Write("m/lin.model", *test::ReadFileBytes(RANKWIRE_MODEL_PATH));
  dir.Write("m/rankwire.manifest",
            "rankwire-manifest 1\nmodel lin.model\nitem_features price\nend\n");
  CommandResult unsupplied = Cli({"--model_features=" + dir.File("m")});
  EXPECT_NE(unsupplied.exit_code, 0);
  EXPECT_THAT(unsupplied.err, HasSubstr("(reason unknown_feature)"));
  CommandResult allowed = Cli({"--model_features=" + dir.File("m"), "--allow_unsupplied_features"});
  EXPECT_EQ(allowed.exit_code, 0) << allowed.err;
}

}  // namespace
}  // namespace rankwire
