// ServerMetrics: the series the server records, registered once on a
// MetricsRegistry. The per-phase histograms are the costs of the design
// brief's table (request deserialize, rank, log enqueue, response
// serialize), labelled by phase; response sizes are labelled by codec.
//
// Thread safety: recording is lock-free; build before serving.
#ifndef RANKWIRE_METRICS_SERVER_METRICS_H_
#define RANKWIRE_METRICS_SERVER_METRICS_H_

#include <atomic>
#include <memory>
#include <string>
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

// rankwire_server_info{default_codec=...,log_mode=...,...} 1: which
// configuration a replica runs, so a dashboard shows a codec switch rolling
// through the fleet. `labels` are (name, value) pairs.
void ExportServerInfo(MetricsRegistry* registry,
                      const std::vector<std::pair<std::string, std::string>>& labels);

}  // namespace rankwire

#endif  // RANKWIRE_METRICS_SERVER_METRICS_H_
