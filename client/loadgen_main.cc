// rankwire-loadgen: the end-to-end load generator. Sends the workload
// generator's requests (the benchmarks' payload) to a server from several
// threads, decodes the top-N of every response as a caller would, and
// reports latency percentiles, throughput, bytes on the wire and the
// server's and client's phase costs.
//
// Closed loop (--qps=0): each of --concurrency callers sends its next
// request when the previous one is decoded; the result is the peak rate.
// Open loop (--qps>0): requests are scheduled at a fixed rate and latency is
// measured from the scheduled time, so a slow server is not hidden by
// callers that wait for it (no coordinated omission).
#include <algorithm>
#include <atomic>
#include <map>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "client/channel_flags.h"
#include "client/rank_client.h"
#include "client/workload.h"
#include "codec/builtin_codecs.h"

ABSL_FLAG(std::string, target, "localhost:50051",
          "Server: host:port, dns:///name:port or ipv4:a:port,b:port (replicas are "
          "balanced by --lb_policy).");
ABSL_FLAG(std::string, codec, "", "Codecs to accept, comma-separated (empty: server default).");
ABSL_FLAG(std::string, log_mode, "default", "default, store, inline or none.");
ABSL_FLAG(uint32_t, candidates, 500, "Candidates per request.");
ABSL_FLAG(uint32_t, top_n, 10, "Items each response's caller decodes fully.");
ABSL_FLAG(uint32_t, distinct_requests, 64, "Distinct requests, cycled.");
ABSL_FLAG(uint64_t, seed, 20261129, "Workload seed.");
ABSL_FLAG(int, concurrency, 4, "Caller threads (one channel each).");
ABSL_FLAG(bool, shared_channel, false,
          "All caller threads share one channel (as one central-control process does).");
ABSL_FLAG(double, qps, 0, "Target rate for open-loop load; 0 for closed loop.");
ABSL_FLAG(double, duration_s, 10, "Measured seconds.");
ABSL_FLAG(double, warmup_s, 2, "Unmeasured seconds first.");
ABSL_FLAG(int, deadline_ms, 5000, "Per-call deadline.");
ABSL_FLAG(std::string, label, "", "A label echoed in the output (for scripts).");
ABSL_FLAG(bool, json, false, "Print one JSON object instead of text.");

namespace rankwire::client {
namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  double latency_us;  // Send (or scheduled send) to top-N decoded.
  double decode_us;   // Envelope + open + top-N decode.
  double server_total_us;
  double server_serialize_us;
  double server_rank_us;
  size_t response_bytes;
};

struct Worker {
  std::vector<Sample> samples;
  Clock::time_point last_done;
  uint64_t errors = 0;
  std::string first_error;
  std::map<std::string, uint64_t> by_status;  // Every measured call, "OK" included.
  // Successful calls per replica (of the first attempt: see CallInfo).
  std::map<std::string, uint64_t> by_peer;
};

// {"a":1,"b":2}; keys are status names and peer addresses (no quotes in them).
std::string JsonCounts(const std::map<std::string, uint64_t>& counts) {
  std::string out = "{";
  for (const auto& [key, n] : counts) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", "\"", key, "\":", n);
  }
  return out + "}";
}

// JSON string contents: quotes, backslashes and control characters escaped.
std::string JsonEscape(absl::string_view in) {
  std::string out;
  for (char c : in) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

double Micros(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

int Run() {
  absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs({});
  if (!codecs.ok()) {
    absl::FPrintF(stderr, "%s\n", codecs.status().ToString());
    return 1;
  }
  WorkloadOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.candidates = absl::GetFlag(FLAGS_candidates);
  options.top_n = absl::GetFlag(FLAGS_top_n);
  options.accept_codecs = absl::StrSplit(absl::GetFlag(FLAGS_codec), ',', absl::SkipEmpty());
  const std::string mode = absl::GetFlag(FLAGS_log_mode);
  absl::StatusOr<rank::v1::LogMode> log_mode = ParseLogMode(mode);
  if (!log_mode.ok()) {
    absl::FPrintF(stderr, "--log_mode: %s\n", log_mode.status().message());
    return 1;
  }
  options.log_mode = *log_mode;
  WorkloadGenerator generator(options);
  std::vector<rank::v1::RankRequest> requests;
  for (uint32_t i = 0; i < std::max(1u, absl::GetFlag(FLAGS_distinct_requests)); ++i) {
    requests.push_back(generator.Make(i));
  }

  absl::StatusOr<ChannelOptions> channel_options = ChannelOptionsFromFlags();
  if (!channel_options.ok()) {
    absl::FPrintF(stderr, "%s\n", channel_options.status().ToString());
    return 1;
  }
  auto make_channel = [&]() { return MakeChannel(absl::GetFlag(FLAGS_target), *channel_options); };
  absl::StatusOr<std::shared_ptr<grpc::Channel>> shared = make_channel();
  if (!shared.ok()) {
    absl::FPrintF(stderr, "%s\n", shared.status().ToString());
    return 1;
  }
  const bool share = absl::GetFlag(FLAGS_shared_channel);

  const int concurrency = std::max(1, absl::GetFlag(FLAGS_concurrency));
  const double qps = absl::GetFlag(FLAGS_qps);
  const auto start = Clock::now();
  const auto measure_from = start + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(absl::GetFlag(FLAGS_warmup_s)));
  const auto end = measure_from + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(absl::GetFlag(FLAGS_duration_s)));
  CallOptions call;
  call.deadline = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  const size_t top_n = absl::GetFlag(FLAGS_top_n);

  std::vector<Worker> workers(concurrency);
  std::vector<std::thread> threads;
  for (int w = 0; w < concurrency; ++w) {
    threads.emplace_back([&, w] {
      RankClient client(share ? *shared : *make_channel(), &*codecs);
      Worker& me = workers[w];
      // Open loop: this thread's share of the rate, phase-shifted.
      const double interval_s = qps > 0 ? concurrency / qps : 0;
      auto next = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(interval_s * w / concurrency));
      for (uint64_t n = 0;; ++n) {
        Clock::time_point sent = Clock::now();
        if (qps > 0) {
          std::this_thread::sleep_until(next);
          sent = next;  // Latency counts from when the call was due.
          next += std::chrono::duration_cast<Clock::duration>(
              std::chrono::duration<double>(interval_s));
        }
        if (sent >= end) break;
        const rank::v1::RankRequest& request = requests[(n * concurrency + w) % requests.size()];
        absl::StatusOr<RankReply> reply = client.Rank(request, call);
        const Clock::time_point top_start = Clock::now();
        bool ok = reply.ok();
        absl::Status error = reply.status();
        if (ok) {
          // The caller shows the top N: every field of every one of them.
          absl::StatusOr<std::vector<ItemRef>> top = reply->view().TopN(top_n);
          ok = top.ok();
          if (!ok) error = top.status();
          for (size_t i = 0; ok && i < top->size(); ++i) {
            absl::StatusOr<RankedItem> item = (*top)[i].Materialize();
            if (!item.ok()) {
              ok = false;
              error = item.status();
            }
          }
        }
        const Clock::time_point done = Clock::now();
        if (sent < measure_from) continue;
        me.last_done = std::max(me.last_done, done);
        ++me.by_status[ok ? "OK" : absl::StatusCodeToString(error.code())];
        if (!ok) {
          if (me.errors++ == 0) me.first_error = error.ToString();
          continue;
        }
        ++me.by_peer[reply->call().peer];
        const ClientTimings& t = reply->timings();
        const rank::v1::ServerTimings& st = reply->header().timings();
        // Client decode: envelope + open (in Rank) + reading the top N.
        me.samples.push_back(Sample{
            Micros(done - sent),
            static_cast<double>(t.envelope_us + t.open_us) + Micros(done - top_start),
            static_cast<double>(st.total_us()), static_cast<double>(st.response_serialize_us()),
            static_cast<double>(st.rank_us()), reply->response_bytes()});
      }
    });
  }
  for (std::thread& t : threads) t.join();

  std::vector<double> latency, decode, server_total, server_ser, server_rank;
  double bytes = 0;
  uint64_t errors = 0;
  std::string first_error;
  std::map<std::string, uint64_t> by_status, by_peer;
  for (const Worker& w : workers) {
    for (const auto& [k, v] : w.by_status) by_status[k] += v;
    for (const auto& [k, v] : w.by_peer) by_peer[k] += v;
    for (const Sample& s : w.samples) {
      latency.push_back(s.latency_us);
      decode.push_back(s.decode_us);
      server_total.push_back(s.server_total_us);
      server_ser.push_back(s.server_serialize_us);
      server_rank.push_back(s.server_rank_us);
      bytes += s.response_bytes;
    }
    errors += w.errors;
    if (first_error.empty()) first_error = w.first_error;
  }
  // Achieved rate over the wall time the measured calls took: a server that
  // cannot keep up stretches it past --duration_s.
  Clock::time_point last = measure_from;
  for (const Worker& w : workers) last = std::max(last, w.last_done);
  const double seconds =
      std::max(absl::GetFlag(FLAGS_duration_s), Micros(last - measure_from) * 1e-6);
  const size_t n = latency.size();
  const double achieved = n / seconds;
  const double mean_bytes = n ? bytes / n : 0;
  if (absl::GetFlag(FLAGS_json)) {
    absl::PrintF(
        "{\"label\":\"%s\",\"codec\":\"%s\",\"log_mode\":\"%s\",\"concurrency\":%d,"
        "\"target_qps\":%.1f,\"qps\":%.1f,\"requests\":%d,\"errors\":%d,"
        "\"p50_us\":%.0f,\"p90_us\":%.0f,\"p99_us\":%.0f,\"p999_us\":%.0f,\"max_us\":%.0f,"
        "\"client_decode_p50_us\":%.1f,\"server_total_p50_us\":%.0f,"
        "\"server_serialize_p50_us\":%.0f,\"server_rank_p50_us\":%.0f,"
        "\"response_bytes\":%.0f,\"wire_mbps\":%.1f,\"by_status\":%s,"
        "\"by_peer\":%s,\"first_error\":\"%s\"}\n",
        absl::GetFlag(FLAGS_label), absl::GetFlag(FLAGS_codec), mode, concurrency, qps, achieved,
        n, errors, Percentile(latency, 0.5), Percentile(latency, 0.9), Percentile(latency, 0.99),
        Percentile(latency, 0.999), Percentile(latency, 1.0), Percentile(decode, 0.5),
        Percentile(server_total, 0.5), Percentile(server_ser, 0.5), Percentile(server_rank, 0.5),
        mean_bytes, achieved * mean_bytes * 8 / 1e6, JsonCounts(by_status),
        JsonCounts(by_peer), JsonEscape(first_error));
  } else {
    absl::PrintF("%s codec=%s log_mode=%s concurrency=%d %s\n", absl::GetFlag(FLAGS_label),
                 absl::GetFlag(FLAGS_codec).empty() ? "(server default)" : absl::GetFlag(FLAGS_codec),
                 mode, concurrency,
                 qps > 0 ? absl::StrFormat("open loop at %.0f qps", qps) : "closed loop");
    absl::PrintF("  %d requests in %.1f s: %.1f qps, %d errors%s\n", n, seconds, achieved, errors,
                 first_error.empty() ? "" : " (first: " + first_error + ")");
    absl::PrintF("  latency us: p50 %.0f  p90 %.0f  p99 %.0f  p99.9 %.0f  max %.0f\n",
                 Percentile(latency, 0.5), Percentile(latency, 0.9), Percentile(latency, 0.99),
                 Percentile(latency, 0.999), Percentile(latency, 1.0));
    absl::PrintF("  server us (p50): total %.0f  rank %.0f  response_serialize %.0f\n",
                 Percentile(server_total, 0.5), Percentile(server_rank, 0.5),
                 Percentile(server_ser, 0.5));
    absl::PrintF("  client decode us (p50, envelope + open + top-%d): %.1f\n", top_n,
                 Percentile(decode, 0.5));
    absl::PrintF("  response bytes: %.0f  (%.1f Mbit/s on the wire)\n", mean_bytes,
                 achieved * mean_bytes * 8 / 1e6);
    for (const auto& [status, count] : by_status) absl::PrintF("  status %s: %d\n", status, count);
    for (const auto& [peer, count] : by_peer) {
      absl::PrintF("  replica %s: %d calls (%.1f%%)\n", peer, count, n ? 100.0 * count / n : 0);
    }
  }
  return errors == 0 ? 0 : 2;
}

}  // namespace
}  // namespace rankwire::client

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "End-to-end load: rankwire-loadgen --target=localhost:50051 --concurrency=4 "
      "--duration_s=10 [--qps=200] [--codec=rankbin]");
  absl::ParseCommandLine(argc, argv);
  return rankwire::client::Run();
}
