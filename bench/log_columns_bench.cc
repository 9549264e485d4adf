// log_columns_bench: what a log writer does per request, on the ranker's
// real output (the workload generator's 500-candidate requests ranked by
// the shipped model, handed over deferred exactly as the server does), in
// the parts the server's CPU for logs is made of:
//
//   render   LogRenderer::RenderColumns: the layout, "#0" and "#1"'s
//            pieces (user space only; "#1" mostly points into the values);
//   send     the same, then the request's whole transaction (MULTI, DEL,
//            HSET with the fields, PEXPIRE, EXEC) sent with sendmsg over
//            loopback TCP to a reader thread on --reader_cpu that discards
//            it: what the kernel costs the sending thread per request (on
//            loopback the receiving side's TCP work runs on the sender's
//            core too), without Redis;
//   copy     as send, but "#1" copied into one buffer first (the copy a
//            writer would make without pieces): the copy's price.
//
// Prints µs of the measuring thread's CPU per request (user and kernel),
// median [min-max] over --rounds, each mode in every round (interleaved),
// and the request's value bytes. For an instruction count of the user-
// space part (repeatable where this host's speed drifts), run --modes=render
// under callgrind with --toggle-collect='*RenderMeasured*' and divide by
// --iterations.
//
//   taskset -c 1 build/bench/log_columns_bench --reader_cpu=0 --rounds=7
//   valgrind --tool=callgrind --toggle-collect='*RenderMeasured*'
//     build/bench/log_columns_bench --modes=render --rounds=1 --iterations=20
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/flags.h"
#include "base/thread_sched.h"
#include "logstore/format/packed_fields.h"
#include "logstore/log_sink.h"
#include "logstore/log_store.h"
#include "model/linear/linear_model.h"
#include "ranking/ranker.h"
#include "workload/workload.h"

ABSL_FLAG(int, rounds, 7, "Timed rounds (the median and range are printed)");
ABSL_FLAG(int, iterations, 2000, "Requests per mode per round");
ABSL_FLAG(int, requests, 16, "Distinct requests of the workload, cycled");
ABSL_FLAG(uint32_t, candidates, 500, "Candidates per request");
ABSL_FLAG(std::string, modes, "render,send,copy", "Which parts to measure");
ABSL_FLAG(int, reader_cpu, -1, "CPU of the thread that reads what send writes (-1: any)");

namespace rankwire::bench {
namespace {

double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) * 1e-3;
}

// What a writer does with one request before it talks to the store; not
// inlined, so callgrind can collect it alone. Returns the value bytes.
__attribute__((noinline)) size_t RenderMeasured(logstore::LogRenderer* renderer,
                                                logstore::PackedFields* fields) {
  *fields = logstore::PackedFields();
  if (!renderer->RenderColumns(fields)) std::abort();
  return fields->value_bytes();
}

// A loopback TCP connection whose far end a thread drains.
class Loopback {
 public:
  explicit Loopback(int reader_cpu) {
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      std::perror("log_columns_bench: listen");
      std::exit(1);
    }
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      std::perror("log_columns_bench: connect");
      std::exit(1);
    }
    const int peer = accept(listener, nullptr, nullptr);
    close(listener);
    reader_ = std::thread([peer, reader_cpu] {
      if (reader_cpu >= 0) (void)SetThreadAffinity({reader_cpu});
      std::vector<char> buf(1 << 20);
      while (read(peer, buf.data(), buf.size()) > 0) {
      }
      close(peer);
    });
  }
  ~Loopback() {
    shutdown(fd_, SHUT_WR);
    reader_.join();
    close(fd_);
  }

  // Sends `pieces` whole (blocking).
  void Send(const std::vector<absl::string_view>& pieces) {
    std::vector<iovec> iov;
    for (absl::string_view p : pieces) {
      iov.push_back(iovec{const_cast<char*>(p.data()), p.size()});
    }
    size_t next = 0;
    while (next < iov.size()) {
      msghdr m{};
      m.msg_iov = iov.data() + next;
      m.msg_iovlen = std::min<size_t>(iov.size() - next, 1024);
      ssize_t sent = sendmsg(fd_, &m, MSG_NOSIGNAL);
      if (sent < 0) {
        std::perror("log_columns_bench: sendmsg");
        std::exit(1);
      }
      while (next < iov.size() && static_cast<size_t>(sent) >= iov[next].iov_len) {
        sent -= static_cast<ssize_t>(iov[next].iov_len);
        ++next;
      }
      if (next < iov.size()) {
        iov[next].iov_base = static_cast<char*>(iov[next].iov_base) + sent;
        iov[next].iov_len -= static_cast<size_t>(sent);
      }
    }
  }

 private:
  int fd_ = -1;
  std::thread reader_;
};

// The request's transaction as a writer sends it: the commands around the
// fields' pieces (one copy of "#1" first with `copy`).
void SendTransaction(const logstore::PackedFields& fields, bool copy, Loopback* to) {
  static const std::string head =
      "*1\r\n$5\r\nMULTI\r\n*2\r\n$3\r\nDEL\r\n$16\r\nrank:log:req-123\r\n"
      "*8\r\n$4\r\nHSET\r\n$16\r\nrank:log:req-123\r\n";
  static const std::string tail =
      "*3\r\n$7\r\nPEXPIRE\r\n$16\r\nrank:log:req-123\r\n$4\r\n1000\r\n*1\r\n$4\r\nEXEC\r\n";
  thread_local std::vector<absl::string_view> pieces;
  thread_local std::string joined;
  pieces.clear();
  pieces.push_back(head);
  if (copy) {
    joined = fields.WireBytes();
    pieces.push_back(joined);
  } else {
    fields.Wire(&pieces);
  }
  pieces.push_back(tail);
  to->Send(pieces);
}

std::string Range(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return absl::StrCat(v[v.size() / 2], " [", v.front(), "-", v.back(), "]");
}

int Run() {
  absl::StatusOr<rankwire::LinearSpec> model = rankwire::LinearSpec::LoadFile(RANKWIRE_MODEL_PATH);
  if (!model.ok()) {
    std::fprintf(stderr, "log_columns_bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  const rankwire::Ranker ranker(std::make_shared<rankwire::LinearModel>(*model));
  workload::WorkloadOptions options;
  options.candidates = absl::GetFlag(FLAGS_candidates);
  const workload::WorkloadGenerator generator(options);
  std::vector<std::shared_ptr<logstore::LogRenderer>> renderers;
  for (int i = 0; i < std::max(1, absl::GetFlag(FLAGS_requests)); ++i) {
    rankwire::RankOutput out = ranker.Rank(generator.Make(i), rankwire::LogDetail::kDeferred);
    renderers.push_back(std::move(out.logs));
  }
  const std::vector<std::string> modes = absl::StrSplit(absl::GetFlag(FLAGS_modes), ',');
  const int iterations = std::max(1, absl::GetFlag(FLAGS_iterations));
  std::unique_ptr<Loopback> loopback;
  if (modes.size() > 1 || modes[0] != "render") {
    loopback = std::make_unique<Loopback>(absl::GetFlag(FLAGS_reader_cpu));
  }
  logstore::PackedFields fields;
  size_t bytes = 0;
  std::map<std::string, std::vector<double>> per_request;
  for (int round = 0; round < std::max(1, absl::GetFlag(FLAGS_rounds)); ++round) {
    for (const std::string& mode : modes) {
      const double start = ThreadCpuMicros();
      for (int i = 0; i < iterations; ++i) {
        bytes = RenderMeasured(renderers[i % renderers.size()].get(), &fields);
        if (mode != "render") SendTransaction(fields, mode == "copy", loopback.get());
      }
      per_request[mode].push_back((ThreadCpuMicros() - start) / iterations);
    }
  }
  std::printf(
      "%u candidates, %zu value bytes / request; thread CPU us / request, median [range] "
      "over %d rounds of %d:\n",
      absl::GetFlag(FLAGS_candidates), bytes, absl::GetFlag(FLAGS_rounds), iterations);
  for (const std::string& mode : modes) {
    std::printf("  %-7s %s\n", mode.c_str(), Range(per_request[mode]).c_str());
  }
  return 0;
}

}  // namespace
}  // namespace rankwire::bench

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv,
                       "What a log writer does per request (render, send, copy): "
                       "log_columns_bench --reader_cpu=0 --rounds=7 --iterations=2000");
  return rankwire::bench::Run();
}
