// ServerMetrics: the series the server records, registered once on a
// MetricsRegistry. With the Export* functions below, this is the one home
// of /metrics: every series' name, help text, type and labels is written
// here and nowhere else. The per-phase histograms are the costs of the
// design brief's table (request deserialize, rank, log enqueue, response
// serialize), labelled by phase; response sizes are labelled by codec.
//
// Thread safety: recording is lock-free; build before serving.
#ifndef RANKWIRE_METRICS_SERVER_METRICS_H_
#define RANKWIRE_METRICS_SERVER_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "metrics/metrics.h"

namespace rankwire {

// The phases of a Rank call whose CPU time the server samples
// (rankwire_phase_cpu_*{phase=...}): with the log writers' log_format and
// log_store, and the transport (what a server that only reads the request
// and answers bytes costs), they make up a request's CPU.
enum class Phase {
  kParse,       // Prescan and protobuf parse of the request.
  kValidate,    // The input contract, unknown features, the response budget.
  kScore,       // Features gathered, model inputs, heads, scores, order.
  kBuild,       // The result's columns (and inline log lines).
  kLogHandoff,  // Log values moved out and queued for the log writers.
  kEncode,      // The codec, the response header and envelope.
};
inline constexpr int kPhaseCount = 6;
const char* PhaseName(Phase phase);

namespace internal_metrics {
// `phase="<phase>"`.
std::string PhaseLabel(absl::string_view phase);
// rankwire_log_items_total's series from the counts in the order handed,
// enqueued, stored, dropped_queue_full, dropped_store_error,
// dropped_shutdown, unknown, in_flight.
MetricsRegistry::Collected LogItemSeries(const uint64_t (&counts)[8]);
}  // namespace internal_metrics

struct ServerMetrics {
  // `codec_names`: one response series per codec.
  ServerMetrics(MetricsRegistry* registry, const std::vector<std::string>& codec_names);

  // Rank calls inside the handler right now.
  std::atomic<int64_t> in_flight{0};
  // What the health service says (rankwire_serving): false while starting
  // and while draining after SIGTERM.
  std::atomic<bool> serving{false};
  Counter* rpcs_ok;
  Counter* rpcs_invalid_argument;
  Counter* rpcs_failed;
  Counter* rpcs_rejected;  // RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED, not ranked.
  // Calls refused without being ranked (rankwire_server_rejected_total):
  // past --max_concurrent_rank, past the unsent-response byte bounds, past
  // their deadline before ranking, over the response budget.
  struct Rejected {
    Counter* overload;
    Counter* unsent_bytes;
    Counter* deadline;
    Counter* response_budget;
  } rejected;
  // Item feature names the model does not know, per name (bounded).
  LabeledCounters* unknown_item_features;
  // Rank calls that arrived as a client's retry (grpc-previous-rpc-attempts
  // set): their first attempt failed with UNAVAILABLE, e.g. on a replica
  // that died. A lower bound: retries gRPC makes transparently carry no
  // attempt count (seen with the client's reconnect-backoff settings).
  Counter* rpcs_retried;
  // FetchLogs calls by outcome (rankwire_fetch_logs_total): ok, the
  // caller's mistakes, refusals (past --max_concurrent_fetch_logs or the
  // unsent-bytes bounds), calls whose deadline passed (waiting for a
  // worker, or for the store) and store failures.
  struct FetchLogs {
    Counter* ok;
    Counter* invalid_argument;
    Counter* rejected;
    Counter* deadline;
    Counter* failed;
  } fetch_logs;
  Histogram* request_deserialize;
  Histogram* validate;
  Histogram* rank;
  Histogram* log_enqueue;
  Histogram* response_serialize;
  Histogram* total;
  // Admitted calls' wait for a free ranking worker (not part of `total`).
  Histogram* queue;

  struct PerCodec {
    std::string name;
    Counter* responses;
    Histogram* response_bytes;
  };
  std::vector<PerCodec> codecs;

  // Sampled CPU time per phase (one call in cpu_sample_every; the mean per
  // call is nanos / samples), lock-free.
  uint32_t cpu_sample_every = 32;
  Counter* phase_cpu_nanos[kPhaseCount];
  Counter* phase_cpu_samples[kPhaseCount];
  void RecordPhaseCpu(Phase phase, int64_t nanos) {
    phase_cpu_nanos[static_cast<int>(phase)]->Increment(static_cast<uint64_t>(nanos));
    phase_cpu_samples[static_cast<int>(phase)]->Increment();
  }
  // nullptr for a codec that was not registered.
  const PerCodec* ForCodec(absl::string_view name) const;
};

// Every other series the server exports is registered by one of the
// functions below, on the same registry, before the metrics port serves:
// the layer that owns the state hands a callback (or gets a handle) and
// registers nothing itself, so every name, help text and label of
// /metrics is written here (docs/OPERATING.md lists them).

// rankwire_server_info{default_codec=...,log_mode=...,logstore=...} 1:
// which configuration a replica runs, so a dashboard shows a codec switch
// rolling through the fleet.
struct ServerInfo {
  std::string default_codec;
  std::string log_mode;
  std::string logstore;  // "memory", "redis", "redis-cluster" or "none".
};
void ExportServerInfo(MetricsRegistry* registry, const ServerInfo& info);

// Admission (server/admission.h): rankwire_unsent_response_bytes and
// rankwire_rank_admitted, read from the callbacks at each scrape.
void ExportAdmission(MetricsRegistry* registry, std::function<double()> unsent_bytes,
                     std::function<double()> admitted);

// The allocator's rankwire_malloc_allocated_bytes and
// rankwire_malloc_resident_bytes (jemalloc builds), from `read(&allocated,
// &resident)` at each scrape (-1 when it returns false).
void ExportMallocStats(MetricsRegistry* registry,
                       const std::function<bool(size_t* allocated, size_t* resident)>& read);

// The model reloader's series (server/model_reloader.h).
struct ModelMetrics {
  Counter* reloads = nullptr;  // rankwire_model_reloads_total (not the first load)
  // rankwire_model_reload_failures_total{reason}, one per refusal reason.
  std::vector<std::pair<std::string, Counter*>> failures;
  // The last successful load's duration (rankwire_model_load_seconds).
  std::atomic<double> load_seconds{0};
  // nullptr for a reason that was not registered.
  Counter* FailuresFor(absl::string_view reason) const;
};
struct ModelSources {
  // rankwire_model_generation: model sets swapped in, counting the first.
  std::function<double()> generation;
  // rankwire_models_live: Model objects alive.
  std::function<double()> models_live;
  // rankwire_model_info: one row per model serving now.
  struct Serving {
    std::string bucket, name, version, kind;
  };
  std::function<std::vector<Serving>()> serving;
  // rankwire_model_requests_total: requests ranked per (bucket, model).
  struct Requests {
    std::string bucket, model;
    uint64_t count = 0;
  };
  std::function<std::vector<Requests>()> requests;
};
// `refusal_reasons`: the reasons a reload is refused for (model_loader.h's
// kRefusalReasons), one failure series each from start-up.
std::unique_ptr<ModelMetrics> ExportModels(MetricsRegistry* registry,
                                           const std::vector<std::string>& refusal_reasons,
                                           ModelSources sources);

// The log path's series (rankwire_log_*, and the log writers' share of
// rankwire_phase_cpu_*: phases log_format and log_store), each read from
// `stats()` at each scrape. `stats` returns a logstore::LogStats; it is a
// template parameter so that metrics/ depends on no layer above it. Every
// series of rankwire_log_items_total comes from one stats() snapshot, so
// that handed = stored + dropped_* + unknown + in_flight holds in what is
// read (enqueued is how many of handed entered the queue).
template <typename ReadStats>
void ExportLogPath(MetricsRegistry* registry, ReadStats stats) {
  auto gauge = [&](absl::string_view name, absl::string_view help, auto field,
                   absl::string_view labels = "") {
    registry->AddGauge(
        name, help, [stats, field] { return static_cast<double>(stats().*field); }, labels);
  };
  using S = decltype(stats());
  registry->AddCollector(
      "rankwire_log_items_total",
      "Per-item log lines by outcome: handed to the log path, then stored, dropped (by "
      "reason), unknown (sent, no answer) or in flight; enqueued: entered the queue.",
      "gauge", [stats] {
        const S s = stats();
        return internal_metrics::LogItemSeries(
            {s.items_handed, s.items_enqueued, s.items_stored, s.items_dropped_queue_full,
             s.items_dropped_store_error, s.items_dropped_shutdown, s.items_unknown,
             s.items_in_flight});
      });
  gauge("rankwire_log_bytes_stored_total", "Log value bytes written to the store.",
        &S::bytes_stored);
  gauge("rankwire_log_queue_requests", "Requests waiting in the log queue.", &S::queue_requests);
  gauge("rankwire_log_queue_bytes", "Log bytes waiting in the log queue.", &S::queue_bytes);
  gauge("rankwire_log_store_reconnects_total", "Reconnects to the log store.", &S::reconnects);
  // The log writers' share of the phase CPU series (ServerMetrics has the
  // ranking thread's).
  for (const auto& [phase, field] :
       {std::pair<const char*, uint64_t S::*>{"log_format", &S::format_cpu_ns},
        std::pair<const char*, uint64_t S::*>{"log_store", &S::store_cpu_ns}}) {
    const std::string label = internal_metrics::PhaseLabel(phase);
    gauge("rankwire_phase_cpu_sample_nanoseconds_total",
          "Thread CPU time of the sampled calls in each phase.", field, label);
    gauge("rankwire_phase_cpu_samples_total", "Calls whose CPU time was sampled, per phase.",
          &S::cpu_sampled_requests, label);
  }
  gauge("rankwire_log_store_up",
        "1 if the last write to the log store succeeded (on every master, for a Redis "
        "Cluster).",
        &S::store_up);
}

}  // namespace rankwire

#endif  // RANKWIRE_METRICS_SERVER_METRICS_H_
