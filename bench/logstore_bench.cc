// logstore_bench: how fast the log store's writer gets per-item logs into a
// real redis-server on loopback, and how much Redis memory a request's logs
// take, each with and without zstd values.
//
//   1. Writer ceiling. A closed-loop producer keeps the consumer's queue
//      non-empty (--inflight requests outstanding, 500 items of ~1.2 KB
//      each), so the writer thread always has a full batch; after a warm-up
//      the items stored per second over a fixed window are the ceiling. The
//      TTL is the service's 1 s, so Redis also pays for expiring keys as it
//      would in production. Variants alternate order each round (AB, BA, ...)
//      so drift in machine speed hits both alike; medians and min..max are
//      reported. CPU use of the writer thread, the producer and redis-server
//      over the window says which one is the bottleneck.
//   2. Redis memory per request: INFO used_memory before and after N live
//      requests (long TTL), per variant, alternating, median of rounds; plus
//      MEMORY USAGE of one key as a cross-check. With the steady-state
//      used_memory of part 1 it gives the effective residency of a 1 s TTL
//      and the QPS that fits the design's ~1 GB budget.
//
// It starts its own redis-server (tests/support/redis_process.h). Pin it with
// `taskset -c 0 logstore_bench --redis_cpu=1` (scripts/bench_logstore.sh does).
#include <dirent.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/flags.h"
#include "logstore/log_store.h"
#include "server/ranker.h"
#include "tests/support/redis_process.h"
#include "workload/workload.h"

ABSL_FLAG(int, rounds, 5, "Rounds of the writer-ceiling measurement (each runs every variant)");
ABSL_FLAG(double, seconds, 2.0, "Measured window per variant per round, seconds");
ABSL_FLAG(double, warmup_seconds, 1.5,
          "Warm-up before each window, seconds; longer than the TTL so Redis memory is at "
          "its steady state (expired keys' memory reused) when the window starts");
ABSL_FLAG(int, items, 500, "Items (log lines) per request");
ABSL_FLAG(int, templates, 16, "Distinct request templates the producer cycles through");
ABSL_FLAG(int, inflight, 32, "Requests outstanding in the closed loop (< queue capacity)");
ABSL_FLAG(int, batch_requests, 16, "LogStoreConfig::batch_requests");
ABSL_FLAG(int, compress_level, 1, "zstd level of the compressed variant");
ABSL_FLAG(int, ttl_ms, 1000, "TTL during the ceiling runs");
ABSL_FLAG(int, memory_requests, 200, "Live requests per memory measurement");
ABSL_FLAG(int, memory_rounds, 3, "Rounds of the memory measurement");
ABSL_FLAG(int, redis_cpu, -1, "Pin redis-server to this CPU (-1: no pinning)");
ABSL_FLAG(double, budget_gb, 1.0, "The design's Redis memory budget, GB");
ABSL_FLAG(std::string, variants, "plain,zstd",
          "Variants, in order: plain, zstd (at --compress_level), zstd:<level>");

namespace rankwire::logstore {
namespace {

// ---------------------------------------------------------------------------
// The real log lines: the workload generator's requests ranked by the shipped
// model, exactly what the server hands to the log store.

RequestLogs MakeRequestLogs(const server::Ranker& ranker, uint64_t sequence, int items) {
  workload::WorkloadOptions options;
  options.candidates = static_cast<uint32_t>(items);
  const auto request = std::make_shared<const rank::v1::RankRequest>(
      workload::WorkloadGenerator(options).Make(sequence));
  RankResult result = ranker.Rank(request, server::LogDetail::kInline).result;
  RequestLogs logs;
  logs.request_id = request->request_id();
  logs.items.reserve(result.items.size());
  for (RankedItem& item : result.items) {
    logs.items.push_back(ItemLog{std::move(item.item_id), std::move(item.log)});
  }
  return logs;
}

size_t TextBytes(const RequestLogs& logs) {
  size_t n = 0;
  for (const ItemLog& item : logs.items) n += item.text.size();
  return n;
}

// ---------------------------------------------------------------------------
// CPU accounting.

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// utime + stime of this process's thread named `name` (/proc, clock ticks).
std::optional<double> NamedThreadCpuSeconds(const std::string& name) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return std::nullopt;
  std::optional<double> result;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string base = absl::StrCat("/proc/self/task/", e->d_name);
    std::ifstream comm(base + "/comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name != name) continue;
    std::ifstream stat_file(base + "/stat");
    std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
    // Fields after the ")" that closes the name: state is field 3; utime
    // and stime are fields 14 and 15.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(stat.substr(close + 2), ' ');
    uint64_t utime = 0, stime = 0;
    if (fields.size() > 12 && absl::SimpleAtoi(fields[11], &utime) &&
        absl::SimpleAtoi(fields[12], &stime)) {
      result = double(utime + stime) / double(sysconf(_SC_CLK_TCK));
    }
  }
  closedir(dir);
  return result;
}

std::string InfoString(const test::RedisProcess& redis, const std::string& section,
                       const std::string& field) {
  absl::StatusOr<std::string> info = redis.Info(section);
  if (!info.ok()) return "";
  for (absl::string_view line : absl::StrSplit(*info, "\r\n")) {
    if (absl::ConsumePrefix(&line, field) && absl::ConsumePrefix(&line, ":")) {
      return std::string(line);
    }
  }
  return "";
}

double InfoDouble(const test::RedisProcess& redis, const std::string& section,
                  const std::string& field) {
  double v = 0;
  return absl::SimpleAtod(InfoString(redis, section, field), &v) ? v : NAN;
}

double RedisCpuSeconds(const test::RedisProcess& redis) {
  return InfoDouble(redis, "cpu", "used_cpu_user") + InfoDouble(redis, "cpu", "used_cpu_sys");
}

int64_t UsedMemory(const test::RedisProcess& redis) {
  absl::StatusOr<int64_t> used = redis.InfoInt("memory", "used_memory");
  return used.ok() ? *used : -1;
}

void Check(const absl::Status& status, absl::string_view what) {
  if (!status.ok()) {
    std::cerr << what << ": " << status << "\n";
    std::exit(1);
  }
}

// Empties Redis. No MEMORY PURGE: handing a GB of freed pages back to the
// OS only for Redis to fault them in again makes the next round measure the
// VM's page-fault path instead of the writer.
void FlushRedis(const test::RedisProcess& redis) {
  Check(redis.Command({"FLUSHALL", "SYNC"}).status(), "FLUSHALL");
}

// Busy and total jiffies of each CPU, from /proc/stat.
struct CpuTimes {
  std::vector<uint64_t> busy, total;
};
CpuTimes ReadCpuTimes() {
  CpuTimes t;
  std::ifstream in("/proc/stat");
  std::string line;
  while (std::getline(in, line)) {
    if (!absl::StartsWith(line, "cpu") || absl::StartsWith(line, "cpu ")) continue;
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint64_t busy = 0, total = 0;
    for (size_t i = 1; i < f.size() && i <= 8; ++i) {
      uint64_t v = 0;
      if (!absl::SimpleAtoi(f[i], &v)) continue;
      total += v;
      if (i != 4 && i != 5) busy += v;  // Not idle, not iowait.
    }
    t.busy.push_back(busy);
    t.total.push_back(total);
  }
  return t;
}
std::string CpuBusy(const CpuTimes& a, const CpuTimes& b) {
  std::string out;
  for (size_t i = 0; i < a.busy.size() && i < b.busy.size(); ++i) {
    const double total = double(b.total[i] - a.total[i]);
    absl::StrAppendFormat(&out, "%scpu%d %.0f%%", i ? " " : "", i,
                          total > 0 ? 100.0 * double(b.busy[i] - a.busy[i]) / total : 0.0);
  }
  return out;
}

// ---------------------------------------------------------------------------

struct Variant {
  std::string name;
  bool compress;
  int level;
};

struct CeilingSample {
  double items_per_s = 0;
  double text_mb_per_s = 0;    // Log text handed to the consumer (MB = 1e6 B).
  double stored_mb_per_s = 0;  // Value bytes sent to Redis (after compression).
  double writer_cpu = 0;       // Fraction of one core.
  double producer_cpu = 0;
  double redis_cpu = 0;
  double steady_used_memory = 0;  // Bytes, end of window (TTL running).
  uint64_t dropped = 0;
  std::string machine_busy;  // Per-CPU busy share over the window, all processes.
};

LogStoreConfig BaseConfig(const test::RedisProcess& redis, const Variant& variant) {
  LogStoreConfig config;
  config.backend = LogStoreConfig::Backend::kRedis;
  config.redis_addr = redis.address();
  config.compress = variant.compress;
  config.compress_level = variant.level;
  config.batch_requests = size_t(absl::GetFlag(FLAGS_batch_requests));
  config.io_timeout = absl::Seconds(5);
  return config;
}

// Keeps `inflight` requests outstanding until `until`; returns how many
// completed as dropped.
class ClosedLoop {
 public:
  ClosedLoop(LogConsumer* consumer, const std::vector<RequestLogs>* templates, int inflight)
      : consumer_(consumer), templates_(templates), inflight_(size_t(inflight)) {}

  void RunUntil(absl::Time until) {
    while (absl::Now() < until) {
      while (outstanding_.size() >= inflight_) Reap();
      RequestLogs logs = (*templates_)[sequence_ % templates_->size()];
      logs.request_id = absl::StrCat(logs.request_id, "-", sequence_++);
      outstanding_.push_back(consumer_->Consume(std::move(logs)));
    }
  }
  void Drain() {
    while (!outstanding_.empty()) Reap();
  }
  uint64_t dropped() const { return dropped_; }

 private:
  void Reap() {
    LogReceipt receipt = outstanding_.front().get();
    outstanding_.pop_front();
    if (receipt.outcome != LogReceipt::Outcome::kStored) ++dropped_;
  }

  LogConsumer* const consumer_;
  const std::vector<RequestLogs>* const templates_;
  const size_t inflight_;
  std::deque<std::future<LogReceipt>> outstanding_;
  uint64_t sequence_ = 0;
  uint64_t dropped_ = 0;
};

CeilingSample MeasureCeiling(const test::RedisProcess& redis, const Variant& variant,
                             const std::vector<RequestLogs>& templates, double avg_line_bytes) {
  FlushRedis(redis);
  LogStoreConfig config = BaseConfig(redis, variant);
  config.ttl = absl::Milliseconds(absl::GetFlag(FLAGS_ttl_ms));
  absl::StatusOr<LogStore> store = OpenLogStore(config);
  Check(store.status(), "OpenLogStore");
  LogConsumer& consumer = *store->consumer;
  ClosedLoop loop(&consumer, &templates, absl::GetFlag(FLAGS_inflight));

  loop.RunUntil(absl::Now() + absl::Seconds(absl::GetFlag(FLAGS_warmup_seconds)));
  const LogStats s0 = consumer.stats();
  const absl::Time t0 = absl::Now();
  const double w0 = NamedThreadCpuSeconds("rankwire-logw").value_or(NAN);
  const double p0 = ThreadCpuSeconds();
  const double r0 = RedisCpuSeconds(redis);
  const CpuTimes m0 = ReadCpuTimes();
  loop.RunUntil(t0 + absl::Seconds(absl::GetFlag(FLAGS_seconds)));
  const CpuTimes m1 = ReadCpuTimes();
  const LogStats s1 = consumer.stats();
  const absl::Time t1 = absl::Now();
  const double w1 = NamedThreadCpuSeconds("rankwire-logw").value_or(NAN);
  const double p1 = ThreadCpuSeconds();
  const double r1 = RedisCpuSeconds(redis);
  const int64_t used = UsedMemory(redis);
  loop.Drain();
  consumer.Shutdown(absl::Seconds(10));

  const double secs = absl::ToDoubleSeconds(t1 - t0);
  CeilingSample out;
  const double items = double(s1.items_stored - s0.items_stored);
  out.items_per_s = items / secs;
  out.text_mb_per_s = items * avg_line_bytes / secs / 1e6;
  out.stored_mb_per_s = double(s1.bytes_stored - s0.bytes_stored) / secs / 1e6;
  out.writer_cpu = (w1 - w0) / secs;
  out.producer_cpu = (p1 - p0) / secs;
  out.redis_cpu = (r1 - r0) / secs;
  out.steady_used_memory = double(used);
  out.machine_busy = CpuBusy(m0, m1);
  const LogStats end = consumer.stats();
  out.dropped = end.items_dropped_queue_full + end.items_dropped_store_error +
                end.items_dropped_shutdown + loop.dropped();
  return out;
}

struct MemorySample {
  double used_per_request = 0;    // INFO used_memory delta / N.
  double key_usage = 0;           // MEMORY USAGE of one key.
  double value_bytes_per_request = 0;
};

MemorySample MeasureMemory(const test::RedisProcess& redis, const Variant& variant,
                           const std::vector<RequestLogs>& templates) {
  FlushRedis(redis);
  absl::SleepFor(absl::Milliseconds(100));
  const int64_t before = UsedMemory(redis);
  LogStoreConfig config = BaseConfig(redis, variant);
  config.ttl = absl::Seconds(3600);  // Live for the measurement.
  absl::StatusOr<LogStore> store = OpenLogStore(config);
  Check(store.status(), "OpenLogStore");
  const int n = absl::GetFlag(FLAGS_memory_requests);
  ClosedLoop loop(store->consumer.get(), &templates, absl::GetFlag(FLAGS_inflight));
  std::string first_key;
  for (int i = 0; i < n; ++i) {
    RequestLogs logs = templates[size_t(i) % templates.size()];
    logs.request_id = absl::StrCat(logs.request_id, "-mem-", i);
    if (i == 0) first_key = store->consumer->KeyFor(logs.request_id);
    std::future<LogReceipt> f = store->consumer->Consume(std::move(logs));
    if (f.get().outcome != LogReceipt::Outcome::kStored) {
      std::cerr << "memory run: a request was dropped\n";
      std::exit(1);
    }
  }
  const LogStats stats = store->consumer->stats();
  store->consumer->Shutdown(absl::Seconds(10));
  const int64_t after = UsedMemory(redis);
  MemorySample out;
  out.used_per_request = double(after - before) / n;
  out.value_bytes_per_request = double(stats.bytes_stored) / n;
  absl::StatusOr<test::RedisReply> usage = redis.Command({"MEMORY", "USAGE", first_key, "SAMPLES", "0"});
  out.key_usage = usage.ok() ? double(usage->integer) : NAN;
  FlushRedis(redis);
  return out;
}

struct Summary {
  double median = 0, min = 0, max = 0;
};
Summary Summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return Summary{NAN, NAN, NAN};
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return s;
}
std::string Fmt(const Summary& s, int precision = 0) {
  return absl::StrFormat("%.*f (%.*f..%.*f)", precision, s.median, precision, s.min, precision,
                         s.max);
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (absl::StartsWith(line, "model name")) {
      return std::string(absl::StripAsciiWhitespace(line.substr(line.find(':') + 1)));
    }
  }
  return "unknown";
}

int Main() {
  test::RedisProcessOptions redis_options;
  redis_options.cpu = absl::GetFlag(FLAGS_redis_cpu);
  absl::StatusOr<std::unique_ptr<test::RedisProcess>> started =
      test::RedisProcess::Start(redis_options);
  Check(started.status(), "start redis-server");
  const test::RedisProcess& redis = **started;

  const int items = absl::GetFlag(FLAGS_items);
  absl::StatusOr<server::LinearModel> model = server::LinearModel::LoadFile(RANKWIRE_MODEL_PATH);
  Check(model.status(), "load the ranking model");
  const server::Ranker ranker(&*model);
  std::vector<RequestLogs> templates;
  size_t text_bytes = 0, lines = 0;
  for (int t = 0; t < absl::GetFlag(FLAGS_templates); ++t) {
    templates.push_back(MakeRequestLogs(ranker, uint64_t(t), items));
    text_bytes += TextBytes(templates.back());
    lines += templates.back().items.size();
  }
  const double avg_line = double(text_bytes) / double(lines);

  utsname uts{};
  uname(&uts);
  std::cout << "# logstore_bench\n\n"
            << "machine: " << CpuModel() << ", " << sysconf(_SC_NPROCESSORS_ONLN)
            << " CPUs online, " << uts.sysname << " " << uts.release << "\n"
            << "redis-server " << InfoString(redis, "server", "redis_version") << " ("
            << "pinned to CPU " << absl::GetFlag(FLAGS_redis_cpu) << "), port " << redis.port()
            << "\n"
            << absl::StrFormat(
                   "payload: %d items/request, avg log line %.0f B (request %.0f KB of text)\n",
                   items, avg_line, avg_line * items / 1e3)
            << absl::StrFormat("writer: batch_requests=%d, inflight=%d, ttl=%d ms\n\n",
                               absl::GetFlag(FLAGS_batch_requests), absl::GetFlag(FLAGS_inflight),
                               absl::GetFlag(FLAGS_ttl_ms));

  std::vector<Variant> variants;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_variants), ',')) {
    int level = absl::GetFlag(FLAGS_compress_level);
    if (name == "plain") {
      variants.push_back({"plain", false, 0});
    } else if (name == "zstd" ||
               (absl::ConsumePrefix(&name, "zstd:") && absl::SimpleAtoi(name, &level))) {
      variants.push_back({absl::StrCat("zstd ", level), true, level});
    } else {
      std::cerr << "unknown variant '" << name << "' (plain, zstd, zstd:<level>)\n";
      return 2;
    }
  }

  // 1. Writer ceiling, variants alternating order each round.
  std::vector<std::vector<CeilingSample>> ceiling(variants.size());
  for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (size_t k = 0; k < variants.size(); ++k) {
      const size_t v = round % 2 == 0 ? k : variants.size() - 1 - k;
      CeilingSample s = MeasureCeiling(redis, variants[v], templates, avg_line);
      std::cerr << absl::StrFormat(
          "round %d %-12s %8.0f items/s %7.1f MB/s text %7.1f MB/s stored  cpu writer %.2f "
          "producer %.2f redis %.2f  used_memory %.0f MB  dropped %d  [%s]\n",
          round, variants[v].name, s.items_per_s, s.text_mb_per_s, s.stored_mb_per_s,
          s.writer_cpu, s.producer_cpu, s.redis_cpu, s.steady_used_memory / 1e6, s.dropped,
          s.machine_busy);
      ceiling[v].push_back(s);
    }
  }

  // 2. Memory per request.
  std::vector<std::vector<MemorySample>> memory(variants.size());
  for (int round = 0; round < absl::GetFlag(FLAGS_memory_rounds); ++round) {
    for (size_t k = 0; k < variants.size(); ++k) {
      const size_t v = round % 2 == 0 ? k : variants.size() - 1 - k;
      MemorySample m = MeasureMemory(redis, variants[v], templates);
      std::cerr << absl::StrFormat("memory round %d %-12s %.0f B/request (MEMORY USAGE %.0f)\n",
                                   round, variants[v].name, m.used_per_request, m.key_usage);
      memory[v].push_back(m);
    }
  }

  const int rounds = absl::GetFlag(FLAGS_rounds);
  std::cout << absl::StrFormat(
      "## Writer ceiling into Redis (loopback), median (min..max) of %d rounds of %.1f s\n\n",
      rounds, absl::GetFlag(FLAGS_seconds));
  std::cout << "| values | items/s | requests/s | text MB/s | stored MB/s | writer CPU | "
               "producer CPU | redis CPU | used_memory at 1 s TTL | spread | drops |\n"
            << "|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::vector<double> residency(variants.size(), NAN);
  std::vector<Summary> items_summary(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> ips, text, stored, wc, pc, rc, used;
    uint64_t drops = 0;
    for (const CeilingSample& s : ceiling[v]) {
      ips.push_back(s.items_per_s);
      text.push_back(s.text_mb_per_s);
      stored.push_back(s.stored_mb_per_s);
      wc.push_back(s.writer_cpu);
      pc.push_back(s.producer_cpu);
      rc.push_back(s.redis_cpu);
      used.push_back(s.steady_used_memory / 1e6);
      drops += s.dropped;
    }
    const Summary i = Summarize(ips);
    items_summary[v] = i;
    std::vector<double> rps;
    for (double x : ips) rps.push_back(x / items);
    std::cout << absl::StrFormat("| %s | %s | %s | %s | %s | %.2f | %.2f | %.2f | %s MB | %.0f%% | %d |\n",
                                 variants[v].name, Fmt(i), Fmt(Summarize(rps)), Fmt(Summarize(text), 1),
                                 Fmt(Summarize(stored), 1), Summarize(wc).median,
                                 Summarize(pc).median, Summarize(rc).median, Fmt(Summarize(used)),
                                 100.0 * (i.max - i.min) / i.median, drops);
  }

  std::cout << absl::StrFormat(
      "\n## Redis memory per request (%d items), median (min..max) of %d rounds, %d live requests each\n\n",
      items, absl::GetFlag(FLAGS_memory_rounds), absl::GetFlag(FLAGS_memory_requests));
  std::cout << "| values | used_memory delta / request | MEMORY USAGE of one key | value bytes / "
               "request | Redis overhead | per item |\n|---|---|---|---|---|---|\n";
  std::vector<double> per_request(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> used, usage, value;
    for (const MemorySample& m : memory[v]) {
      used.push_back(m.used_per_request / 1e3);
      usage.push_back(m.key_usage / 1e3);
      value.push_back(m.value_bytes_per_request / 1e3);
    }
    const Summary u = Summarize(used);
    per_request[v] = u.median * 1e3;
    const double value_kb = Summarize(value).median;
    std::cout << absl::StrFormat("| %s | %s KB | %.1f KB | %.1f KB | %+.0f%% | %.0f B |\n",
                                 variants[v].name, Fmt(u, 1), Summarize(usage).median, value_kb,
                                 100.0 * (u.median - value_kb) / value_kb, u.median * 1e3 / items);
    // Effective residency of a key under a 1 s TTL: steady used_memory over
    // (request rate x bytes per request).
    std::vector<double> res;
    for (const CeilingSample& s : ceiling[v]) {
      res.push_back(s.steady_used_memory / (s.items_per_s / items * per_request[v]));
    }
    residency[v] = Summarize(res).median;
  }

  const double budget = absl::GetFlag(FLAGS_budget_gb) * 1e9;
  std::cout << absl::StrFormat(
      "\n## What fits in the %.1f GB budget at a %d ms TTL\n\n", absl::GetFlag(FLAGS_budget_gb),
      absl::GetFlag(FLAGS_ttl_ms));
  std::cout << "| values | effective key residency | Redis memory at 100 / 500 / 1000 QPS | QPS "
               "that fits the budget | writer ceiling (requests/s) |\n|---|---|---|---|---|\n";
  for (size_t v = 0; v < variants.size(); ++v) {
    const double per_qps = per_request[v] * residency[v];  // Bytes per 1 QPS.
    std::cout << absl::StrFormat("| %s | %.2f s | %.0f / %.0f / %.0f MB | %.0f | %.0f |\n",
                                 variants[v].name, residency[v], 100 * per_qps / 1e6,
                                 500 * per_qps / 1e6, 1000 * per_qps / 1e6, budget / per_qps,
                                 items_summary[v].median / items);
  }
  return 0;
}

}  // namespace
}  // namespace rankwire::logstore

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv,
                       "Log store writer ceiling and Redis memory per request; see "
                       "scripts/bench_logstore.sh.");
  return rankwire::logstore::Main();
}
