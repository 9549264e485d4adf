// logstore_bench: what a request's per-item logs cost in each stored
// representation, and how fast the log writers get them into a real
// redis-server on loopback.
//
//   0. Representations, on the real ranker output (the workload generator's
//      requests ranked by the shipped model, handed over deferred exactly as
//      the server does): (a) text 'T', (a') text zstd 'Z', (b) text zstd
//      with a dictionary trained per model version (bench-only: values are
//      compressed here and stored as opaque values), (c) structured records
//      'R' + one layout per request. Per request: encode CPU on one thread
//      (rendering + encoding, what the writer does), value bytes, Redis
//      memory (INFO used_memory delta over N live keys), and the latency of
//      reading the top 10 (HMGET + decode, the reader's path).
//   1. Writer ceiling per representation and writer count. A closed-loop
//      producer keeps the consumer's queue non-empty (--inflight requests
//      outstanding, 500 items each), ranking each request (deferred logs);
//      after a warm-up the items stored per second over a fixed window are
//      the ceiling. Writer CPU is summed over the writer threads. Variants
//      alternate order each round (AB, BA, ...); medians and min..max.
//   2. Redis memory per request (INFO used_memory delta / N live requests),
//      with the steady-state used_memory of part 1 giving the effective key
//      residency at a 1 s TTL and the QPS that fits the ~1 GB budget.
//
// It starts its own redis-server (tests/support/redis_process.h). Pin it with
// `taskset -c 0 logstore_bench --redis_cpu=1` (scripts/bench_logstore.sh does).
#define ZDICT_STATIC_LINKING_ONLY
#include <dirent.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zdict.h>
#include <zstd.h>

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
#include "logstore/format/log_number.h"
#include "logstore/format/log_record.h"
#include "logstore/format/log_value.h"
#include "logstore/log_store.h"
#include "logstore/redis_log_sink.h"
#include "model/linear/linear_model.h"
#include "ranking/ranker.h"
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
ABSL_FLAG(std::string, variants, "text:1,record:1,record:2",
          "Writer-ceiling variants <representation>:<writers>, representation text, zstd "
          "(text, zstd at --compress_level) or record");
ABSL_FLAG(int, read_samples, 2000, "Top-10 reads per representation for the read latency");
ABSL_FLAG(int, dict_kb, 64, "Size of the trained zstd dictionary, KB");

namespace rankwire::logstore {
namespace {

// ---------------------------------------------------------------------------
// The real log lines: the workload generator's requests ranked by the shipped
// model, exactly what the server hands to the log store.

// One request of the workload and its inline log lines (the reference text).
struct Template {
  std::shared_ptr<const rank::v1::RankRequest> request;
  RequestLogs text;
};

Template MakeTemplate(const rankwire::Ranker& ranker, uint64_t sequence, int items) {
  workload::WorkloadOptions options;
  options.candidates = static_cast<uint32_t>(items);
  Template t;
  t.request = std::make_shared<const rank::v1::RankRequest>(
      workload::WorkloadGenerator(options).Make(sequence));
  RankResult result = ranker.Rank(*t.request, rankwire::LogDetail::kInline).result;
  t.text.request_id = t.request->request_id();
  t.text.items.reserve(result.size());
  for (size_t i = 0; i < result.size(); ++i) {
    t.text.items.push_back(ItemLog{std::string(result.id(i)), std::string(result.log(i))});
  }
  return t;
}

// The request's logs as the server hands them over: deferred, not rendered.
RequestLogs Deferred(const rankwire::Ranker& ranker, const Template& t, std::string request_id) {
  rankwire::RankOutput out = ranker.Rank(*t.request, rankwire::LogDetail::kDeferred);
  RequestLogs logs;
  logs.request_id = std::move(request_id);
  logs.renderer = std::move(out.logs);
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

// utime + stime of this process's threads named `name` (/proc, clock ticks).
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
      // Summed: there is one such thread per log writer.
      result = result.value_or(0) + double(utime + stime) / double(sysconf(_SC_CLK_TCK));
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

enum class Rep { kText, kZstd, kZstdDict, kColumns };

const char* RepName(Rep rep) {
  switch (rep) {
    case Rep::kText:
      return "text (T)";
    case Rep::kZstd:
      return "text zstd (Z)";
    case Rep::kZstdDict:
      return "text zstd + dictionary";
    case Rep::kColumns:
      return "columns (layout 3)";
  }
  return "?";
}

// A zstd dictionary trained on the lines of one model version.
struct Dictionary {
  ZSTD_CDict* cdict = nullptr;
  ZSTD_DDict* ddict = nullptr;
  size_t bytes = 0;
  ~Dictionary() {
    ZSTD_freeCDict(cdict);
    ZSTD_freeDDict(ddict);
  }
};

void TrainDictionary(const std::vector<Template>& templates, Dictionary* dict) {
  std::string samples;
  std::vector<size_t> sizes;
  for (const Template& t : templates) {
    for (const ItemLog& item : t.text.items) {
      samples += item.text;
      sizes.push_back(item.text.size());
    }
  }
  std::string buffer(size_t(absl::GetFlag(FLAGS_dict_kb)) << 10, '\0');
  const size_t n = ZDICT_trainFromBuffer(buffer.data(), buffer.size(), samples.data(), sizes.data(),
                                         unsigned(sizes.size()));
  if (ZDICT_isError(n)) {
    std::cerr << "dictionary training failed: " << ZDICT_getErrorName(n) << "\n";
    std::exit(1);
  }
  dict->bytes = n;
  dict->cdict = ZSTD_createCDict(buffer.data(), n, absl::GetFlag(FLAGS_compress_level));
  dict->ddict = ZSTD_createDDict(buffer.data(), n);
}

// What the writer does for one request in `rep`, from the deferred logs to
// the sink entry (key, fields). The dictionary variant is stored as opaque
// values behind a 'T' tag: the product has no 'D' tag, and the benchmark
// decompresses after reading.
SinkEntry Encode(Rep rep, RequestLogs logs, const Dictionary& dict, ZSTD_CCtx* cctx) {
  SinkEntry entry;
  entry.key = absl::StrCat("rank:log:", logs.request_id);
  std::vector<ItemLog> items;
  if (rep == Rep::kColumns) {
    if (!logs.renderer->RenderColumns(&entry.fields)) std::exit(3);
    entry.keep = logs.renderer;  // "#1" points into it.
  } else {
    logs.renderer->Render(&items);
  }
  std::string scratch;
  for (ItemLog& item : items) {
    if (rep == Rep::kText || rep == Rep::kZstd) {
      EncodeLogValue(rep == Rep::kZstd, absl::GetFlag(FLAGS_compress_level), &item.text);
    } else if (rep == Rep::kZstdDict) {
      scratch.resize(ZSTD_compressBound(item.text.size()) + 1);
      scratch[0] = kPlainLogTag;
      const size_t n = ZSTD_compress_usingCDict(cctx, scratch.data() + 1, scratch.size() - 1,
                                                item.text.data(), item.text.size(), dict.cdict);
      if (ZSTD_isError(n)) std::exit(3);
      item.text.assign(scratch.data(), n + 1);
    }
    entry.fields.Add(item.item_id, item.text);
  }
  return entry;
}

struct RepResult {
  std::vector<double> encode_us;  // Per request, per round.
  double value_bytes = 0;         // Per request.
  std::vector<double> redis_bytes;
  std::vector<double> read_us;  // Every top-10 read.
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

void MeasureRepresentation(const test::RedisProcess& redis, const rankwire::Ranker& ranker,
                           const std::vector<Template>& templates, const Dictionary& dict, Rep rep,
                           RepResult* out) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  // Encode CPU: the writer's work per request, on this thread.
  std::vector<SinkEntry> entries;
  double cpu = 0;
  size_t value_bytes = 0;
  for (size_t i = 0; i < templates.size(); ++i) {
    RequestLogs logs = Deferred(ranker, templates[i], absl::StrCat("rep-", i));
    const double c0 = ThreadCpuSeconds();
    entries.push_back(Encode(rep, std::move(logs), dict, cctx));
    cpu += ThreadCpuSeconds() - c0;
    value_bytes += entries.back().fields.value_bytes();
  }
  out->encode_us.push_back(cpu / double(templates.size()) * 1e6);
  out->value_bytes = double(value_bytes) / double(templates.size());

  // Redis memory: N live requests (long TTL), written by the real sink.
  FlushRedis(redis);
  absl::SleepFor(absl::Milliseconds(100));
  const int64_t before = UsedMemory(redis);
  LogStoreConfig config;
  config.backend = LogStoreConfig::Backend::kRedis;
  config.redis_addr = redis.address();
  config.io_timeout = absl::Seconds(5);
  absl::StatusOr<std::unique_ptr<RedisLogSink>> sink = RedisLogSink::Create(config);
  Check(sink.status(), "sink");
  const int n = absl::GetFlag(FLAGS_memory_requests);
  for (int i = 0; i < n; i += 16) {
    std::vector<SinkEntry> batch;
    for (int j = i; j < std::min(n, i + 16); ++j) {
      SinkEntry e = entries[size_t(j) % entries.size()];
      e.key = absl::StrCat("rank:log:mem-", j);
      batch.push_back(std::move(e));
    }
    for (const absl::Status& s : (*sink)->Write(absl::MakeSpan(batch), absl::Hours(1))) {
      Check(s, "memory write");
    }
  }
  out->redis_bytes.push_back(double(UsedMemory(redis) - before) / n);

  // Top-10 read latency through the product reader (HMGET + decode).
  absl::StatusOr<std::unique_ptr<LogReader>> reader = OpenRedisLogReader(config);
  Check(reader.status(), "reader");
  const std::vector<std::string> top10 = [&] {
    std::vector<std::string> ids;
    for (int k = 0; k < 10; ++k) ids.push_back(templates[0].text.items[size_t(k)].item_id);
    return ids;
  }();
  for (int r = 0; r < absl::GetFlag(FLAGS_read_samples); ++r) {
    // mem-j holds template j % templates.size(); read template 0's.
    const std::string id =
        absl::StrCat("mem-", (r % (n / int(templates.size()))) * int(templates.size()));
    const absl::Time t0 = absl::Now();
    absl::StatusOr<std::vector<std::optional<std::string>>> got = (*reader)->Fetch(id, top10);
    Check(got.status(), "read");
    std::vector<std::string> texts;
    for (size_t k = 0; k < got->size(); ++k) {
      if (!(*got)[k].has_value()) Check(absl::NotFoundError(id), "read");
      if (rep == Rep::kZstdDict) {
        const std::string& frame = *(*got)[k];
        std::string text(ZSTD_getFrameContentSize(frame.data(), frame.size()), '\0');
        ZSTD_decompress_usingDDict(dctx, text.data(), text.size(), frame.data(), frame.size(),
                                   dict.ddict);
        texts.push_back(std::move(text));
      } else {
        texts.push_back(*std::move((*got)[k]));
      }
    }
    out->read_us.push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
    if (r == 0) {
      for (size_t k = 0; k < texts.size(); ++k) {
        if (texts[k] != templates[0].text.items[k].text) {
          std::cerr << RepName(rep) << ": item " << k << " does not read back identical\n";
          std::exit(1);
        }
      }
    }
  }
  FlushRedis(redis);
  ZSTD_freeCCtx(cctx);
  ZSTD_freeDCtx(dctx);
}

struct Variant {
  std::string name;
  Rep rep = Rep::kColumns;
  size_t writers = 1;
};

struct CeilingSample {
  double items_per_s = 0;
  double writer_cpu = 0;  // Cores, summed over writers.
  double writer_us_per_request = 0;
  double producer_cpu = 0;
  double redis_cpu = 0;
  double steady_used_memory = 0;  // Bytes, end of window (TTL running).
  uint64_t dropped = 0;
  std::string machine_busy;  // Per-CPU busy share over the window, all processes.
};

// Keeps `inflight` requests outstanding until `until`, each ranked with
// deferred logs as the server does; returns how many completed as dropped.
class ClosedLoop {
 public:
  ClosedLoop(LogConsumer* consumer, const rankwire::Ranker* ranker,
             const std::vector<Template>* templates, int inflight)
      : consumer_(consumer), ranker_(ranker), templates_(templates), inflight_(size_t(inflight)) {}

  void RunUntil(absl::Time until) {
    while (absl::Now() < until) {
      while (outstanding_.size() >= inflight_) Reap();
      const Template& t = (*templates_)[sequence_ % templates_->size()];
      outstanding_.push_back(consumer_->Consume(
          Deferred(*ranker_, t, absl::StrCat(t.request->request_id(), "-", sequence_++))));
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
  const rankwire::Ranker* const ranker_;
  const std::vector<Template>* const templates_;
  const size_t inflight_;
  std::deque<std::future<LogReceipt>> outstanding_;
  uint64_t sequence_ = 0;
  uint64_t dropped_ = 0;
};

CeilingSample MeasureCeiling(const test::RedisProcess& redis, const rankwire::Ranker& ranker,
                             const Variant& variant, const std::vector<Template>& templates) {
  FlushRedis(redis);
  LogStoreConfig config;
  config.backend = LogStoreConfig::Backend::kRedis;
  config.redis_addr = redis.address();
  config.format = variant.rep == Rep::kColumns ? LogStoreConfig::Format::kColumns
                                               : LogStoreConfig::Format::kText;
  config.compress = variant.rep == Rep::kZstd;
  config.compress_level = absl::GetFlag(FLAGS_compress_level);
  config.writers = variant.writers;
  config.batch_requests = size_t(absl::GetFlag(FLAGS_batch_requests));
  config.io_timeout = absl::Seconds(5);
  config.ttl = absl::Milliseconds(absl::GetFlag(FLAGS_ttl_ms));
  absl::StatusOr<LogStore> store = OpenLogStore(config);
  Check(store.status(), "OpenLogStore");
  LogConsumer& consumer = *store->consumer;
  ClosedLoop loop(&consumer, &ranker, &templates, absl::GetFlag(FLAGS_inflight));

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
  const double requests = items / double(absl::GetFlag(FLAGS_items));
  out.items_per_s = items / secs;
  out.writer_cpu = (w1 - w0) / secs;
  out.writer_us_per_request = (w1 - w0) / requests * 1e6;
  out.producer_cpu = (p1 - p0) / secs;
  out.redis_cpu = (r1 - r0) / secs;
  out.steady_used_memory = double(used);
  out.machine_busy = CpuBusy(m0, m1);
  const LogStats end = consumer.stats();
  out.dropped = end.items_dropped_queue_full + end.items_dropped_store_error +
                end.items_dropped_shutdown + loop.dropped();
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

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line;
}

int Main() {
  test::RedisProcessOptions redis_options;
  redis_options.cpu = absl::GetFlag(FLAGS_redis_cpu);
  absl::StatusOr<std::unique_ptr<test::RedisProcess>> started =
      test::RedisProcess::Start(redis_options);
  Check(started.status(), "start redis-server");
  const test::RedisProcess& redis = **started;

  const int items = absl::GetFlag(FLAGS_items);
  absl::StatusOr<rankwire::LinearSpec> model = rankwire::LinearSpec::LoadFile(RANKWIRE_MODEL_PATH);
  Check(model.status(), "load the ranking model");
  const rankwire::Ranker ranker(std::make_shared<rankwire::LinearModel>(*model));
  std::vector<Template> templates;
  size_t text_bytes = 0, lines = 0;
  for (int t = 0; t < absl::GetFlag(FLAGS_templates); ++t) {
    templates.push_back(MakeTemplate(ranker, uint64_t(t), items));
    text_bytes += TextBytes(templates.back().text);
    lines += templates.back().text.items.size();
  }
  const double avg_line = double(text_bytes) / double(lines);
  // The dictionary is trained on other requests than the measured ones
  // (one dictionary per model version, made offline).
  std::vector<Template> training;
  for (int t = 0; t < 16; ++t) training.push_back(MakeTemplate(ranker, uint64_t(1000 + t), items));
  Dictionary dict;
  TrainDictionary(training, &dict);

  utsname uts{};
  uname(&uts);
  std::cout << "# logstore_bench\n\n"
            << "machine: " << CpuModel() << ", " << sysconf(_SC_NPROCESSORS_ONLN)
            << " CPUs online, " << uts.sysname << " " << uts.release << "; load average at start "
            << LoadAverage() << "\n"
            << "redis-server " << InfoString(redis, "server", "redis_version") << " ("
            << "pinned to CPU " << absl::GetFlag(FLAGS_redis_cpu) << "), port " << redis.port()
            << "\n"
            << absl::StrFormat(
                   "payload: %d items/request, avg log line %.0f B (request %.0f KB of text)\n",
                   items, avg_line, avg_line * items / 1e3)
            << absl::StrFormat("writer: batch_requests=%d, inflight=%d, ttl=%d ms\n\n",
                               absl::GetFlag(FLAGS_batch_requests), absl::GetFlag(FLAGS_inflight),
                               absl::GetFlag(FLAGS_ttl_ms));

  // 0. Representations, interleaved rounds.
  const Rep reps[] = {Rep::kText, Rep::kZstd, Rep::kZstdDict, Rep::kColumns};
  std::vector<RepResult> rep_results(4);
  for (int round = 0; round < absl::GetFlag(FLAGS_memory_rounds); ++round) {
    for (int k = 0; k < 4; ++k) {
      const int i = round % 2 == 0 ? k : 3 - k;
      MeasureRepresentation(redis, ranker, templates, dict, reps[i], &rep_results[size_t(i)]);
      std::cerr << absl::StrFormat(
          "representation round %d %-24s encode %.0f us, redis %.0f B/request\n", round,
          RepName(reps[i]), rep_results[size_t(i)].encode_us.back(),
          rep_results[size_t(i)].redis_bytes.back());
    }
  }
  const double text_redis = Summarize(rep_results[0].redis_bytes).median;
  const double text_encode = Summarize(rep_results[0].encode_us).median;
  const double text_read = Percentile(rep_results[0].read_us, 0.5);
  std::cout << absl::StrFormat(
      "## Representations (%d rounds; %d live requests for memory; %d top-10 reads)\n\n"
      "Encode CPU is the writer's work per request on one thread (render + encode; the\n"
      "dictionary (%zu B, trained on other requests of the same model version) lives in the\n"
      "reader and writer, not in Redis). Read: HMGET of 10 items + decode, through the product\n"
      "reader. Every value read back was checked byte-identical to the inline line.\n\n",
      absl::GetFlag(FLAGS_memory_rounds), absl::GetFlag(FLAGS_memory_requests),
      absl::GetFlag(FLAGS_read_samples), dict.bytes);
  std::cout
      << "| representation | value bytes / request | Redis memory / request (min..max) | "
         "vs text | encode CPU us / request (min..max) | vs text | top-10 read p50 / p99 us | "
         "vs text |\n|---|---|---|---|---|---|---|---|\n";
  for (int i = 0; i < 4; ++i) {
    const RepResult& r = rep_results[size_t(i)];
    const Summary redis_kb = Summarize(r.redis_bytes);
    const Summary encode = Summarize(r.encode_us);
    const double p50 = Percentile(r.read_us, 0.5);
    std::cout << absl::StrFormat(
        "| %s | %.1f KB | %.1f KB (%.1f..%.1f) | %.2fx | %.0f (%.0f..%.0f) | %.2fx | %.0f / %.0f | "
        "%.2fx |\n",
        RepName(reps[i]), r.value_bytes / 1e3, redis_kb.median / 1e3, redis_kb.min / 1e3,
        redis_kb.max / 1e3, redis_kb.median / text_redis, encode.median, encode.min, encode.max,
        encode.median / text_encode, p50, Percentile(r.read_us, 0.99), p50 / text_read);
  }

  std::vector<Variant> variants;
  for (absl::string_view spec : absl::StrSplit(absl::GetFlag(FLAGS_variants), ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(spec, ':');
    Variant v;
    int writers = 1;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &writers) || writers < 1) {
      std::cerr << "variant '" << spec << "': expected <text|zstd|blocks>:<writers>\n";
      return 2;
    }
    if (parts[0] == "text") {
      v.rep = Rep::kText;
    } else if (parts[0] == "zstd") {
      v.rep = Rep::kZstd;
    } else if (parts[0] == "columns" || parts[0] == "blocks" || parts[0] == "record") {
      v.rep = Rep::kColumns;
    } else {
      std::cerr << "variant '" << spec << "': unknown representation\n";
      return 2;
    }
    v.writers = size_t(writers);
    v.name = absl::StrCat(RepName(v.rep), ", ", writers, " writer", writers > 1 ? "s" : "");
    variants.push_back(v);
  }

  // 1. Writer ceiling, variants alternating order each round.
  std::vector<std::vector<CeilingSample>> ceiling(variants.size());
  for (int round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (size_t k = 0; k < variants.size(); ++k) {
      const size_t v = round % 2 == 0 ? k : variants.size() - 1 - k;
      CeilingSample s = MeasureCeiling(redis, ranker, variants[v], templates);
      std::cerr << absl::StrFormat(
          "round %d %-36s %8.0f items/s  writer cpu %.2f (%.0f us/request) producer %.2f redis "
          "%.2f  used_memory %.0f MB  dropped %d  [%s]\n",
          round, variants[v].name, s.items_per_s, s.writer_cpu, s.writer_us_per_request,
          s.producer_cpu, s.redis_cpu, s.steady_used_memory / 1e6, s.dropped, s.machine_busy);
      ceiling[v].push_back(s);
    }
  }

  const int rounds = absl::GetFlag(FLAGS_rounds);
  std::cout << absl::StrFormat(
      "\n## Writer ceiling into Redis (loopback), median (min..max) of %d rounds of %.1f s\n\n"
      "The producer ranks each request (deferred logs, as the server's ranking threads do) on\n"
      "the same CPU as the writers; Redis has its own CPU. Writer CPU is summed over writers.\n\n",
      rounds, absl::GetFlag(FLAGS_seconds));
  std::cout << "| variant | requests/s | vs first | writer CPU (cores) | writer CPU us / request | "
               "producer CPU | redis CPU | used_memory at 1 s TTL | drops |\n"
               "|---|---|---|---|---|---|---|---|---|\n";
  std::vector<Summary> rps_summary(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> rps, wc, wus, pc, rc, used, ratio;
    uint64_t drops = 0;
    for (size_t r = 0; r < ceiling[v].size(); ++r) {
      const CeilingSample& s = ceiling[v][r];
      rps.push_back(s.items_per_s / items);
      wc.push_back(s.writer_cpu);
      wus.push_back(s.writer_us_per_request);
      pc.push_back(s.producer_cpu);
      rc.push_back(s.redis_cpu);
      used.push_back(s.steady_used_memory / 1e6);
      ratio.push_back(s.items_per_s / ceiling[0][r].items_per_s);
      drops += s.dropped;
    }
    rps_summary[v] = Summarize(rps);
    std::cout << absl::StrFormat("| %s | %s | %.2fx | %.2f | %s | %.2f | %.2f | %s MB | %d |\n",
                                 variants[v].name, Fmt(rps_summary[v]), Summarize(ratio).median,
                                 Summarize(wc).median, Fmt(Summarize(wus)), Summarize(pc).median,
                                 Summarize(rc).median, Fmt(Summarize(used)), drops);
  }

  // 2. What fits in the budget at the TTL.
  const double budget = absl::GetFlag(FLAGS_budget_gb) * 1e9;
  std::cout << absl::StrFormat("\n## What fits in the %.1f GB budget at a %d ms TTL\n\n",
                               absl::GetFlag(FLAGS_budget_gb), absl::GetFlag(FLAGS_ttl_ms));
  std::cout << "| variant | Redis memory / request | effective key residency | QPS that fits the "
               "budget | writer ceiling (requests/s) |\n|---|---|---|---|---|\n";
  for (size_t v = 0; v < variants.size(); ++v) {
    const int rep_index = static_cast<int>(variants[v].rep);
    const double per_request = Summarize(rep_results[size_t(rep_index)].redis_bytes).median;
    std::vector<double> res;
    for (const CeilingSample& s : ceiling[v]) {
      res.push_back(s.steady_used_memory / (s.items_per_s / items * per_request));
    }
    const double residency = Summarize(res).median;
    std::cout << absl::StrFormat("| %s | %.1f KB | %.2f s | %.0f | %.0f |\n", variants[v].name,
                                 per_request / 1e3, residency, budget / (per_request * residency),
                                 rps_summary[v].median);
  }
  std::cout << "\nload average at end: " << LoadAverage() << "\n";
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
