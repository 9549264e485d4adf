// What an operator of a fleet meets, through the real binaries: a second
// server on a busy port, defaults sized from the cgroup's CPU quota, how
// long SIGTERM takes to end the process, and rankwire-cli as the
// operator's tool (replaying a request, reading a past request's logs,
// health of several replicas, a model's features).
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rank/v1/rank.pb.h"
#include "tests/support/command.h"
#include "tests/support/server_process.h"

namespace rankwire {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using test::CommandResult;
using test::RunCommand;
using test::ServerProcess;

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
  absl::StatusOr<CommandResult> health = RunCommand(
      {RANKWIRE_CLI_BIN, absl::StrCat("--target=127.0.0.1:", port), "--health"});
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->exit_code, 0) << health->out << health->err;
}

TEST(BusyPortTest, ReusePortLetsTwoServersShareAPortWhenBothAsk) {
  // The control: the same start-up succeeds when both servers ask for
  // SO_REUSEPORT, so the refusal above is the exclusive bind, not a broken
  // second start.
  absl::StatusOr<std::unique_ptr<ServerProcess>> first = ServerProcess::Start({"--reuse_port"});
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<ServerProcess>> second = ServerProcess::Start(
      {"--reuse_port", absl::StrCat("--port=", (*first)->port())});
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
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0)
                      .count();
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 0) << (*server)->Output();
  std::printf("SHUTDOWN {\"drain_ms\": %d, \"grace_ms\": %d, \"sigterm_to_exit_ms\": %lld}\n",
              kDrainMs, kGraceMs, static_cast<long long>(ms));
  EXPECT_GE(ms, kDrainMs) << "the drain was skipped";
  EXPECT_LE(ms, kDrainMs + kGraceMs + 200) << (*server)->Output();
  EXPECT_THAT((*server)->Output(), HasSubstr("rankwire-server stopped"));
}

}  // namespace
}  // namespace rankwire
