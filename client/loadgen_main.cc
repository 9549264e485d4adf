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
// SIGTERM or SIGINT ends the run early; the result is still printed.
//
// --fresh_request_ids gives every call a request id of its own, as
// central-control sends them, so a server's logs fill the log store under
// its TTL instead of rewriting --distinct_requests keys (the log
// benchmarks use it).
#include <grpcpp/support/proto_buffer_writer.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/flags.h"
#include "base/status_macros.h"
#include "base/thread_sched.h"
#include "client/channel_flags.h"
#include "client/rank_client.h"
#include "client/replicas.h"
#include "codec/builtin_codecs.h"
#include "request/log_mode.h"
#include "rpc/status.h"
#include "workload/workload.h"

// --target, --codec, --log_mode, --candidates, --top_n, --seed and
// --deadline_ms are client/channel_flags.cc's (shared with rankwire-cli).
ABSL_FLAG(uint32_t, distinct_requests, 64, "Distinct requests, cycled.");
ABSL_FLAG(bool, fresh_request_ids, false,
          "Give every call a request id of its own (the request's, then the run, the caller "
          "and the call), as real traffic has: each call's logs get a key of their own.");
ABSL_FLAG(int, concurrency, 4, "Caller threads (one channel each).");
ABSL_FLAG(bool, shared_channel, false,
          "All caller threads share one channel (as one central-control process does).");
ABSL_FLAG(double, qps, 0, "Target rate for open-loop load; 0 for closed loop.");
ABSL_FLAG(int, latency_slice_us, 100,
          "Time slice, in us, of every thread of the load generator (Linux >= 6.12; 0: the "
          "kernel's default): a caller that wakes preempts batch work on its CPU at once, so "
          "a Redis or log writer sharing the load generator's core (a 2-core test host) "
          "delays its measurements less. The server's gRPC threads do the same.");
ABSL_FLAG(double, duration_s, 10,
          "Measured seconds (at most: SIGTERM/SIGINT ends the run early and prints the result).");
ABSL_FLAG(double, warmup_s, 2, "Unmeasured seconds first.");
ABSL_FLAG(std::string, label, "", "A label echoed in the output (for scripts).");
ABSL_FLAG(bool, json, false, "Print one JSON object instead of text.");
ABSL_FLAG(std::string, calls_file, "",
          "Write every measured call to this file, one line each: when it was due (Unix "
          "microseconds), its latency (us), its status code name, and the model version "
          "that answered (tab-separated; for latency around events such as a model reload).");
ABSL_FLAG(int, calls_stream_ms, 0,
          "With --calls_file: append the calls completed in each interval of this many ms, "
          "in the order they completed, so another process can follow a long run (a soak); "
          "0: write every call at the end, in the order they were due.");

namespace rankwire::client {
namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  double latency_us;  // Send (or scheduled send) to top-N decoded.
  double decode_us;   // Envelope + open + top-N decode.
  double server_total_us;
  double server_serialize_us;
  double server_rank_us;
  double server_queue_us;  // Admitted, waiting for a ranking worker.
  size_t response_bytes;
};

// One measured call, for --calls_file.
struct CallRecord {
  int64_t due_unix_us;
  double latency_us;
  absl::StatusCode code;
  std::string model_version;
};

struct Worker {
  std::vector<Sample> samples;
  // With --calls_file only; taken by the streaming thread with
  // --calls_stream_ms.
  absl::Mutex calls_mu;
  std::vector<CallRecord> calls ABSL_GUARDED_BY(calls_mu);
  // Calls the server refused with RESOURCE_EXHAUSTED (admission control):
  // not errors; their latency is reported apart.
  std::vector<double> rejected_us;
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
  size_t i = static_cast<size_t>(std::lround(p * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

double Micros(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The distinct requests the callers cycle through, from the flags, serialized
// once: a caller spends no CPU per call on its request, so the load it can
// offer (and what it measures) is the server's, not its own serialization.
absl::StatusOr<std::vector<grpc::ByteBuffer>> MakeRequests() {
  workload::WorkloadOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.candidates = absl::GetFlag(FLAGS_candidates);
  options.top_n = absl::GetFlag(FLAGS_top_n);
  options.accept_codecs = absl::StrSplit(absl::GetFlag(FLAGS_codec), ',', absl::SkipEmpty());
  absl::StatusOr<rank::v1::LogMode> log_mode = ParseLogMode(absl::GetFlag(FLAGS_log_mode));
  if (!log_mode.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--log_mode: ", log_mode.status().message()));
  }
  options.log_mode = *log_mode;
  // What the flags become, said rather than done silently.
  if (options.top_n > options.candidates) {
    absl::FPrintF(stderr,
                  "rankwire-loadgen: --top_n=%d clamped to %d: a request shows at most its "
                  "candidates (--candidates=%d)\n",
                  options.top_n, options.candidates, options.candidates);
  }
  if (absl::GetFlag(FLAGS_distinct_requests) == 0) {
    absl::FPrintF(stderr, "rankwire-loadgen: --distinct_requests=0 clamped to 1\n");
  }
  const workload::WorkloadGenerator generator(options);
  std::vector<grpc::ByteBuffer> requests;
  for (uint32_t i = 0; i < std::max(1u, absl::GetFlag(FLAGS_distinct_requests)); ++i) {
    rank::v1::RankRequest request = generator.Make(i);
    if (absl::GetFlag(FLAGS_fresh_request_ids)) {
      // The id goes in front of each call's bytes (FreshId): here, the rest.
      request.clear_request_id();
    }
    grpc::ByteBuffer bytes;
    bool own = false;
    RETURN_IF_ERROR(FromGrpcStatus(
        grpc::SerializationTraits<rank::v1::RankRequest>::Serialize(request, &bytes, &own)));
    requests.push_back(std::move(bytes));
  }
  return requests;
}

// A request's bytes with a request id of its own in front: field 1
// (request_id) as protobuf writes it, then the request's other fields,
// shared, not copied. Unique to this run (`run`), caller and call.
grpc::ByteBuffer FreshId(const grpc::ByteBuffer& rest, absl::string_view run, int caller,
                         uint64_t call) {
  const std::string id = absl::StrCat("lg-", run, "-", caller, "-", call);
  std::string head(1, '\x0a');                   // Field 1, length-delimited.
  head.push_back(static_cast<char>(id.size()));  // Below 128 bytes: one varint byte.
  head += id;
  std::vector<grpc::Slice> slices;
  (void)rest.Dump(&slices);
  slices.insert(slices.begin(), grpc::Slice(head));
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// Set by SIGTERM/SIGINT: the callers stop and the result is printed, so a
// script can run the load "until done" (--duration_s is then a maximum).
std::atomic<bool> stop_requested{false};

void RequestStop(int) { stop_requested.store(true); }

// What every caller thread shares: the schedule and the call settings.
struct Plan {
  int concurrency = 1;
  double qps = 0;  // 0: closed loop.
  Clock::time_point start, measure_from, end;
  size_t top_n = 10;
  CallOptions call;
  const std::vector<grpc::ByteBuffer>* requests = nullptr;
  bool fresh_ids = false;
  std::string run;  // What makes this run's request ids its own.
  const CodecRegistry* codecs = nullptr;
  ChannelOptions channel_options;
  std::string target;  // --target, a comma list resolved (ChannelTargetOf).
  std::shared_ptr<grpc::Channel> shared_channel;  // nullptr: a channel per thread.
};

Plan PlanFromFlags(const std::vector<grpc::ByteBuffer>* requests, const CodecRegistry* codecs) {
  Plan plan;
  plan.concurrency = std::max(1, absl::GetFlag(FLAGS_concurrency));
  if (plan.concurrency != absl::GetFlag(FLAGS_concurrency)) {
    absl::FPrintF(stderr, "rankwire-loadgen: --concurrency=%d clamped to 1\n",
                  absl::GetFlag(FLAGS_concurrency));
  }
  plan.qps = absl::GetFlag(FLAGS_qps);
  plan.start = Clock::now();
  plan.measure_from = plan.start + Seconds(absl::GetFlag(FLAGS_warmup_s));
  plan.end = plan.measure_from + Seconds(absl::GetFlag(FLAGS_duration_s));
  plan.top_n = absl::GetFlag(FLAGS_top_n);
  plan.call.deadline = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  plan.requests = requests;
  plan.codecs = codecs;
  plan.fresh_ids = absl::GetFlag(FLAGS_fresh_request_ids);
  plan.run = absl::StrCat(absl::Hex(absl::ToUnixMicros(absl::Now())));
  return plan;
}

// What a caller does with a response: read every field of the top N.
absl::Status ReadTopN(const RankReply& reply, size_t top_n) {
  ASSIGN_OR_RETURN(std::vector<ItemRef> top, reply.view().TopN(top_n));
  for (const ItemRef& item : top) RETURN_IF_ERROR(item.Materialize().status());
  return absl::OkStatus();
}

// Caller thread `w`: sends until the plan's end, recording measured calls.
void CallLoop(const Plan& plan, int w, Worker* me) {
  // The options were checked when the shared channel was made.
  RankClient client(plan.shared_channel != nullptr
                        ? plan.shared_channel
                        : *MakeChannel(plan.target, plan.channel_options),
                    plan.codecs);
  const std::vector<grpc::ByteBuffer>& requests = *plan.requests;
  // Open loop: this thread's share of the rate, phase-shifted.
  const double interval_s = plan.qps > 0 ? plan.concurrency / plan.qps : 0;
  Clock::time_point next = plan.start + Seconds(interval_s * w / plan.concurrency);
  const bool record_calls = !absl::GetFlag(FLAGS_calls_file).empty();
  // Steady-clock times as Unix time, for --calls_file.
  const absl::Time unix_at_start = absl::Now();
  const Clock::time_point steady_at_start = Clock::now();
  for (uint64_t n = 0;; ++n) {
    Clock::time_point sent = Clock::now();
    if (plan.qps > 0) {
      std::this_thread::sleep_until(next);
      sent = next;  // Latency counts from when the call was due.
      next += Seconds(interval_s);
    }
    if (sent >= plan.end || stop_requested.load()) break;
    const grpc::ByteBuffer* request = &requests[(n * plan.concurrency + w) % requests.size()];
    grpc::ByteBuffer fresh;
    if (plan.fresh_ids) {
      fresh = FreshId(*request, plan.run, w, n);
      request = &fresh;
    }
    absl::StatusOr<RankReply> reply = client.RankSerialized(*request, plan.call);
    const Clock::time_point top_start = Clock::now();
    const absl::Status status = reply.ok() ? ReadTopN(*reply, plan.top_n) : reply.status();
    const Clock::time_point done = Clock::now();
    if (sent < plan.measure_from) continue;
    me->last_done = std::max(me->last_done, done);
    ++me->by_status[status.ok() ? "OK" : absl::StatusCodeToString(status.code())];
    if (record_calls) {
      const absl::MutexLock lock(&me->calls_mu);
      me->calls.push_back(
          CallRecord{absl::ToUnixMicros(unix_at_start + absl::FromChrono(sent - steady_at_start)),
                     Micros(done - sent), status.code(),
                     reply.ok() ? reply->header().model_version() : std::string()});
    }
    if (status.code() == absl::StatusCode::kResourceExhausted) {
      me->rejected_us.push_back(Micros(done - sent));
      continue;
    }
    if (!status.ok()) {
      if (me->errors++ == 0) me->first_error = status.ToString();
      continue;
    }
    ++me->by_peer[reply->call().peer];
    const ClientTimings& t = reply->timings();
    const rank::v1::ServerTimings& st = reply->header().timings();
    // Client decode: envelope + open (in Rank) + reading the top N.
    me->samples.push_back(
        Sample{Micros(done - sent),
               static_cast<double>(t.envelope_us + t.open_us) + Micros(done - top_start),
               static_cast<double>(st.total_us()), static_cast<double>(st.response_serialize_us()),
               static_cast<double>(st.rank_us()), static_cast<double>(st.queue_us()),
               reply->response_bytes()});
  }
}

void PrintCall(FILE* out, const CallRecord& c) {
  std::fprintf(out, "%lld\t%.1f\t%s\t%s\n", static_cast<long long>(c.due_unix_us), c.latency_us,
               absl::StatusCodeToString(c.code).c_str(), c.model_version.c_str());
}

// --calls_file: every worker's measured calls, in the order they were due.
absl::Status WriteCalls(const std::string& path, std::vector<Worker>& workers) {
  std::vector<CallRecord> calls;
  for (Worker& w : workers) {
    const absl::MutexLock lock(&w.calls_mu);
    calls.insert(calls.end(), w.calls.begin(), w.calls.end());
  }
  std::sort(calls.begin(), calls.end(),
            [](const CallRecord& a, const CallRecord& b) { return a.due_unix_us < b.due_unix_us; });
  FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) {
    return absl::UnavailableError(absl::StrCat("--calls_file ", path, ": ", std::strerror(errno)));
  }
  for (const CallRecord& c : calls) PrintCall(out, c);
  return std::fclose(out) == 0
             ? absl::OkStatus()
             : absl::UnavailableError(absl::StrCat("--calls_file ", path, ": write failed"));
}

// --calls_stream_ms: a thread that appends the calls completed since its
// last pass to --calls_file every interval (flushed, so a reader following
// the file sees them), and the rest when stopped.
class CallsStream {
 public:
  static absl::StatusOr<std::unique_ptr<CallsStream>> Open(const std::string& path,
                                                           absl::Duration every,
                                                           std::vector<Worker>* workers) {
    FILE* out = std::fopen(path.c_str(), "w");
    if (out == nullptr) {
      return absl::UnavailableError(
          absl::StrCat("--calls_file ", path, ": ", std::strerror(errno)));
    }
    return std::unique_ptr<CallsStream>(new CallsStream(out, every, workers));
  }
  ~CallsStream() { Stop(); }

  // Writes what is left; false if a write failed.
  bool Stop() {
    if (out_ == nullptr) return ok_;
    done_.Notify();
    thread_.join();
    Pass();
    ok_ = std::fclose(out_) == 0 && ok_;
    out_ = nullptr;
    return ok_;
  }

 private:
  CallsStream(FILE* out, absl::Duration every, std::vector<Worker>* workers)
      : out_(out), workers_(workers), thread_([this, every] {
          while (!done_.WaitForNotificationWithTimeout(every)) Pass();
        }) {}

  void Pass() {
    std::vector<CallRecord> taken;
    for (Worker& w : *workers_) {
      {
        const absl::MutexLock lock(&w.calls_mu);
        taken.swap(w.calls);
      }
      for (const CallRecord& c : taken) PrintCall(out_, c);
      taken.clear();
    }
    ok_ = std::fflush(out_) == 0 && ok_;
  }

  FILE* out_;
  std::vector<Worker>* workers_;
  absl::Notification done_;
  bool ok_ = true;  // Written by the thread until Stop() has joined it.
  std::thread thread_;
};

// The measured calls of all workers, pooled.
struct Summary {
  std::vector<double> latency, decode, server_total, server_ser, server_rank, server_queue;
  std::vector<double> rejected;  // Latency of RESOURCE_EXHAUSTED answers.
  double mean_bytes = 0;
  uint64_t errors = 0;
  std::string first_error;
  std::map<std::string, uint64_t> by_status, by_peer;
  double seconds = 0;   // Wall time of the measured calls.
  double achieved = 0;  // Calls per second.
};

Summary Summarize(const std::vector<Worker>& workers, const Plan& plan) {
  Summary s;
  double bytes = 0;
  // Achieved rate over the wall time the measured calls took: a server that
  // cannot keep up stretches it past --duration_s.
  Clock::time_point last = plan.measure_from;
  for (const Worker& w : workers) {
    for (const Sample& x : w.samples) {
      s.latency.push_back(x.latency_us);
      s.decode.push_back(x.decode_us);
      s.server_total.push_back(x.server_total_us);
      s.server_ser.push_back(x.server_serialize_us);
      s.server_rank.push_back(x.server_rank_us);
      s.server_queue.push_back(x.server_queue_us);
      bytes += x.response_bytes;
    }
    s.errors += w.errors;
    s.rejected.insert(s.rejected.end(), w.rejected_us.begin(), w.rejected_us.end());
    if (s.first_error.empty()) s.first_error = w.first_error;
    for (const auto& [k, v] : w.by_status) s.by_status[k] += v;
    for (const auto& [k, v] : w.by_peer) s.by_peer[k] += v;
    last = std::max(last, w.last_done);
  }
  const size_t n = s.latency.size();
  // (A run stopped early by a signal is measured over the time it ran.)
  const double planned_s = stop_requested.load() ? 0 : absl::GetFlag(FLAGS_duration_s);
  s.seconds = std::max(planned_s, Micros(last - plan.measure_from) * 1e-6);
  s.achieved = n / s.seconds;
  s.mean_bytes = n ? bytes / n : 0;
  return s;
}

void PrintJson(const Summary& s, const Plan& plan) {
  absl::PrintF(
      "{\"label\":\"%s\",\"codec\":\"%s\",\"log_mode\":\"%s\",\"concurrency\":%d,"
      "\"target_qps\":%.1f,\"qps\":%.1f,\"requests\":%d,\"errors\":%d,"
      "\"p50_us\":%.0f,\"p90_us\":%.0f,\"p99_us\":%.0f,\"p999_us\":%.0f,\"max_us\":%.0f,"
      "\"client_decode_p50_us\":%.1f,\"server_total_p50_us\":%.0f,\"server_total_p99_us\":%.0f,"
      "\"server_serialize_p50_us\":%.0f,\"server_rank_p50_us\":%.0f,"
      "\"server_queue_p50_us\":%.0f,\"server_queue_p99_us\":%.0f,"
      "\"response_bytes\":%.0f,\"wire_mbps\":%.1f,\"rejected\":%d,"
      "\"rejected_p50_us\":%.0f,\"rejected_p99_us\":%.0f,\"by_status\":%s,\"by_peer\":%s,"
      "\"first_error\":\"%s\"}\n",
      absl::GetFlag(FLAGS_label), absl::GetFlag(FLAGS_codec), absl::GetFlag(FLAGS_log_mode),
      plan.concurrency, plan.qps, s.achieved, s.latency.size(), s.errors,
      Percentile(s.latency, 0.5), Percentile(s.latency, 0.9), Percentile(s.latency, 0.99),
      Percentile(s.latency, 0.999), Percentile(s.latency, 1.0), Percentile(s.decode, 0.5),
      Percentile(s.server_total, 0.5), Percentile(s.server_total, 0.99),
      Percentile(s.server_ser, 0.5), Percentile(s.server_rank, 0.5),
      Percentile(s.server_queue, 0.5), Percentile(s.server_queue, 0.99), s.mean_bytes,
      s.achieved * s.mean_bytes * 8 / 1e6, s.rejected.size(), Percentile(s.rejected, 0.5),
      Percentile(s.rejected, 0.99), JsonCounts(s.by_status), JsonCounts(s.by_peer),
      JsonEscape(s.first_error));
}

void PrintText(const Summary& s, const Plan& plan) {
  const std::string codec = absl::GetFlag(FLAGS_codec);
  absl::PrintF("%s codec=%s log_mode=%s concurrency=%d %s\n", absl::GetFlag(FLAGS_label),
               codec.empty() ? "(server default)" : codec, absl::GetFlag(FLAGS_log_mode),
               plan.concurrency,
               plan.qps > 0 ? absl::StrFormat("open loop at %.0f qps", plan.qps) : "closed loop");
  absl::PrintF("  %d requests in %.1f s: %.1f qps, %d errors%s\n", s.latency.size(), s.seconds,
               s.achieved, s.errors,
               s.first_error.empty() ? "" : " (first: " + s.first_error + ")");
  absl::PrintF("  latency us: p50 %.0f  p90 %.0f  p99 %.0f  p99.9 %.0f  max %.0f\n",
               Percentile(s.latency, 0.5), Percentile(s.latency, 0.9), Percentile(s.latency, 0.99),
               Percentile(s.latency, 0.999), Percentile(s.latency, 1.0));
  absl::PrintF(
      "  server us (p50): total %.0f  rank %.0f  response_serialize %.0f  "
      "queued %.0f (p99 %.0f)\n",
      Percentile(s.server_total, 0.5), Percentile(s.server_rank, 0.5),
      Percentile(s.server_ser, 0.5), Percentile(s.server_queue, 0.5),
      Percentile(s.server_queue, 0.99));
  absl::PrintF("  client decode us (p50, envelope + open + top-%d): %.1f\n", plan.top_n,
               Percentile(s.decode, 0.5));
  absl::PrintF("  response bytes: %.0f  (%.1f Mbit/s on the wire)\n", s.mean_bytes,
               s.achieved * s.mean_bytes * 8 / 1e6);
  if (!s.rejected.empty()) {
    absl::PrintF("  refused (RESOURCE_EXHAUSTED): %d, latency us p50 %.0f  p99 %.0f\n",
                 s.rejected.size(), Percentile(s.rejected, 0.5), Percentile(s.rejected, 0.99));
  }
  for (const auto& [status, count] : s.by_status) absl::PrintF("  status %s: %d\n", status, count);
  for (const auto& [peer, count] : s.by_peer) {
    absl::PrintF("  replica %s: %d calls (%.1f%%)\n", peer, count,
                 s.latency.empty() ? 0.0 : 100.0 * count / s.latency.size());
  }
}

int Run() {
  // Before any thread starts, so gRPC's threads and the callers inherit it.
  if (const int slice_us = absl::GetFlag(FLAGS_latency_slice_us); slice_us > 0) {
    if (absl::Status s = SetThreadSlice(absl::Microseconds(slice_us)); !s.ok()) {
      absl::FPrintF(stderr, "rankwire-loadgen: --latency_slice_us not applied: %s\n", s.ToString());
    }
  }
  absl::StatusOr<CodecRegistry> codecs = MakeBuiltinCodecs({});
  absl::StatusOr<std::vector<grpc::ByteBuffer>> requests = MakeRequests();
  for (const absl::Status& s : {codecs.status(), requests.status()}) {
    if (!s.ok()) {
      absl::FPrintF(stderr, "rankwire-loadgen: %s\n", s.ToString());
      return 1;
    }
  }
  Plan plan = PlanFromFlags(&*requests, &*codecs);
  std::signal(SIGTERM, RequestStop);
  std::signal(SIGINT, RequestStop);
  absl::StatusOr<ChannelOptions> channel_options = ChannelOptionsFromFlags();
  absl::StatusOr<std::string> target = ChannelTargetOf(absl::GetFlag(FLAGS_target));
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      !target.ok()           ? target.status()
      : channel_options.ok() ? MakeChannel(*target, *channel_options)
                             : channel_options.status();
  if (!channel.ok()) {
    absl::FPrintF(stderr, "rankwire-loadgen: %s\n", channel.status().ToString());
    return 1;
  }
  plan.channel_options = *channel_options;
  plan.target = *target;
  if (absl::GetFlag(FLAGS_shared_channel)) plan.shared_channel = *channel;
  std::vector<Worker> workers(plan.concurrency);
  const std::string calls_path = absl::GetFlag(FLAGS_calls_file);
  std::unique_ptr<CallsStream> stream;
  if (const int every_ms = absl::GetFlag(FLAGS_calls_stream_ms);
      every_ms > 0 && !calls_path.empty()) {
    absl::StatusOr<std::unique_ptr<CallsStream>> opened =
        CallsStream::Open(calls_path, absl::Milliseconds(every_ms), &workers);
    if (!opened.ok()) {
      absl::FPrintF(stderr, "rankwire-loadgen: %s\n", opened.status().ToString());
      return 1;
    }
    stream = *std::move(opened);
  }
  std::vector<std::thread> threads;
  threads.reserve(plan.concurrency);
  for (int w = 0; w < plan.concurrency; ++w) {
    threads.emplace_back([&plan, &workers, w] { CallLoop(plan, w, &workers[w]); });
  }
  for (std::thread& t : threads) t.join();
  const absl::Status written =
      stream != nullptr    ? (stream->Stop() ? absl::OkStatus()
                                             : absl::UnavailableError(absl::StrCat(
                                                   "--calls_file ", calls_path, ": write failed")))
      : calls_path.empty() ? absl::OkStatus()
                           : WriteCalls(calls_path, workers);
  if (!written.ok()) {
    absl::FPrintF(stderr, "rankwire-loadgen: %s\n", written.ToString());
    return 1;
  }
  const Summary summary = Summarize(workers, plan);
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(summary, plan);
  } else {
    PrintText(summary, plan);
  }
  return summary.errors == 0 ? 0 : 2;
}

}  // namespace
}  // namespace rankwire::client

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv,
                       "End-to-end load: rankwire-loadgen --target=localhost:50051 "
                       "--concurrency=4 --duration_s=10 [--qps=200] [--codec=rankbin]");
  return rankwire::client::Run();
}
