#include "metrics/server_metrics.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace rankwire {

ServerMetrics::ServerMetrics(MetricsRegistry* r, const std::vector<std::string>& codec_names) {
  constexpr absl::string_view kRpcs = "rankwire_rank_rpcs_total";
  constexpr absl::string_view kRpcsHelp = "Rank RPCs by outcome.";
  rpcs_ok = r->AddCounter(kRpcs, kRpcsHelp, "outcome=\"ok\"");
  rpcs_invalid_argument = r->AddCounter(kRpcs, kRpcsHelp, "outcome=\"invalid_argument\"");
  rpcs_failed = r->AddCounter(kRpcs, kRpcsHelp, "outcome=\"error\"");
  rpcs_rejected = r->AddCounter(kRpcs, kRpcsHelp, "outcome=\"rejected\"");
  constexpr absl::string_view kRejected = "rankwire_server_rejected_total";
  constexpr absl::string_view kRejectedHelp =
      "Rank calls refused before ranking, by reason (RESOURCE_EXHAUSTED or "
      "DEADLINE_EXCEEDED).";
  rejected.overload = r->AddCounter(kRejected, kRejectedHelp, "reason=\"overload\"");
  rejected.unsent_bytes = r->AddCounter(kRejected, kRejectedHelp, "reason=\"unsent_bytes\"");
  rejected.deadline = r->AddCounter(kRejected, kRejectedHelp, "reason=\"deadline\"");
  rejected.response_budget = r->AddCounter(kRejected, kRejectedHelp, "reason=\"response_budget\"");
  unknown_item_features = r->AddLabeledCounters(
      "rankwire_unknown_item_features_total",
      "Requests naming an item feature the model does not know, by name (the first 64 "
      "names; later ones count as \"_other\").",
      "name", 64);
  constexpr absl::string_view kFetch = "rankwire_fetch_logs_total";
  constexpr absl::string_view kFetchHelp = "FetchLogs calls by outcome.";
  fetch_logs.ok = r->AddCounter(kFetch, kFetchHelp, "outcome=\"ok\"");
  fetch_logs.invalid_argument = r->AddCounter(kFetch, kFetchHelp, "outcome=\"invalid_argument\"");
  fetch_logs.rejected = r->AddCounter(kFetch, kFetchHelp, "outcome=\"rejected\"");
  fetch_logs.deadline = r->AddCounter(kFetch, kFetchHelp, "outcome=\"deadline\"");
  fetch_logs.failed = r->AddCounter(kFetch, kFetchHelp, "outcome=\"error\"");
  rpcs_retried = r->AddCounter("rankwire_rank_rpcs_retried_total",
                               "Rank calls that arrived as a client's retry of a failed attempt.");
  r->AddGauge("rankwire_rank_rpcs_in_flight", "Rank calls being handled now.",
              [this] { return static_cast<double>(in_flight.load(std::memory_order_relaxed)); });
  r->AddGauge("rankwire_serving",
              "1 while the health service reports SERVING, 0 while starting or draining.",
              [this] { return serving.load(std::memory_order_relaxed) ? 1.0 : 0.0; });

  constexpr absl::string_view kPhase = "rankwire_server_phase_seconds";
  constexpr absl::string_view kPhaseHelp = "Server-side cost of each phase of a Rank call.";
  auto phase = [&](absl::string_view name) {
    return r->AddHistogram(kPhase, kPhaseHelp, LatencyBuckets(),
                           internal_metrics::PhaseLabel(name));
  };
  request_deserialize = phase("request_deserialize");
  validate = phase("validate");
  rank = phase("rank");
  log_enqueue = phase("log_enqueue");
  response_serialize = phase("response_serialize");
  total = phase("total");
  queue = phase("queue");

  for (int p = 0; p < kPhaseCount; ++p) {
    const std::string label = internal_metrics::PhaseLabel(PhaseName(static_cast<Phase>(p)));
    phase_cpu_nanos[p] = r->AddCounter(
        "rankwire_phase_cpu_sample_nanoseconds_total",
        "Thread CPU time of the sampled calls in each phase (the mean per call is this over "
        "rankwire_phase_cpu_samples_total).",
        label);
    phase_cpu_samples[p] = r->AddCounter("rankwire_phase_cpu_samples_total",
                                         "Calls whose CPU time was sampled, per phase.", label);
  }

  for (const std::string& name : codec_names) {
    std::string label = absl::StrCat("codec=\"", name, "\"");
    codecs.push_back(PerCodec{
        name, r->AddCounter("rankwire_responses_total", "Rank responses by codec.", label),
        r->AddHistogram("rankwire_response_body_bytes",
                        "Encoded RankResult bytes per response, by codec.", SizeBuckets(), label)});
  }
}

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kParse:
      return "parse";
    case Phase::kValidate:
      return "validate";
    case Phase::kScore:
      return "score";
    case Phase::kBuild:
      return "build";
    case Phase::kLogHandoff:
      return "log_handoff";
    case Phase::kEncode:
      return "encode";
  }
  return "unknown";
}

void ExportServerInfo(MetricsRegistry* registry, const ServerInfo& info) {
  const std::string labels =
      absl::StrCat(MetricsRegistry::Label("default_codec", info.default_codec), ",",
                   MetricsRegistry::Label("log_mode", info.log_mode), ",",
                   MetricsRegistry::Label("logstore", info.logstore));
  registry->AddGauge(
      "rankwire_server_info", "This replica's configuration (always 1).", [] { return 1.0; },
      labels);
}

void ExportAdmission(MetricsRegistry* registry, std::function<double()> unsent_bytes,
                     std::function<double()> admitted) {
  registry->AddGauge("rankwire_unsent_response_bytes",
                     "Response bytes handed to gRPC that clients have not read yet.",
                     std::move(unsent_bytes));
  registry->AddGauge("rankwire_rank_admitted",
                     "Rank calls admitted and not finished: in work on a ranking worker "
                     "(rankwire_rank_rpcs_in_flight) or queued for one.",
                     std::move(admitted));
}

void ExportMallocStats(MetricsRegistry* registry,
                       const std::function<bool(size_t* allocated, size_t* resident)>& read) {
  registry->AddGauge("rankwire_malloc_allocated_bytes",
                     "Bytes the server holds in allocations (jemalloc stats.allocated).", [read] {
                       size_t allocated = 0, resident = 0;
                       return read(&allocated, &resident) ? double(allocated) : -1.0;
                     });
  registry->AddGauge("rankwire_malloc_resident_bytes",
                     "Physical memory jemalloc holds, caches included (stats.resident).", [read] {
                       size_t allocated = 0, resident = 0;
                       return read(&allocated, &resident) ? double(resident) : -1.0;
                     });
}

Counter* ModelMetrics::FailuresFor(absl::string_view reason) const {
  for (const auto& [name, counter] : failures) {
    if (name == reason) return counter;
  }
  return nullptr;
}

namespace {

MetricsRegistry::Collected ServingSeries(const std::vector<ModelSources::Serving>& models) {
  MetricsRegistry::Collected out;
  for (const ModelSources::Serving& m : models) {
    out.emplace_back(absl::StrCat(MetricsRegistry::Label("bucket", m.bucket), ",",
                                  MetricsRegistry::Label("name", m.name), ",",
                                  MetricsRegistry::Label("version", m.version), ",",
                                  MetricsRegistry::Label("kind", m.kind)),
                     1.0);
  }
  return out;
}

MetricsRegistry::Collected RequestSeries(const std::vector<ModelSources::Requests>& requests) {
  MetricsRegistry::Collected out;
  for (const ModelSources::Requests& r : requests) {
    out.emplace_back(absl::StrCat(MetricsRegistry::Label("bucket", r.bucket), ",",
                                  MetricsRegistry::Label("model", r.model)),
                     static_cast<double>(r.count));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::unique_ptr<ModelMetrics> ExportModels(MetricsRegistry* registry,
                                           const std::vector<std::string>& refusal_reasons,
                                           ModelSources sources) {
  auto metrics = std::make_unique<ModelMetrics>();
  metrics->reloads = registry->AddCounter(
      "rankwire_model_reloads_total", "Model sets swapped in since start-up (not the first load).");
  for (const std::string& reason : refusal_reasons) {
    metrics->failures.emplace_back(
        reason, registry->AddCounter("rankwire_model_reload_failures_total",
                                     "Reloads refused (the old models kept serving), by reason.",
                                     MetricsRegistry::Label("reason", reason)));
  }
  registry->AddGauge("rankwire_model_load_seconds",
                     "How long the last successful load took (read, parse, check).",
                     [m = metrics.get()] { return m->load_seconds.load(); });
  registry->AddGauge("rankwire_model_generation", "Model sets swapped in, counting the first.",
                     std::move(sources.generation));
  registry->AddGauge("rankwire_models_live",
                     "Model objects alive: the loaded ones, plus replaced ones that a running "
                     "request or queued log line still holds.",
                     std::move(sources.models_live));
  registry->AddCollector(
      "rankwire_model_info", "The models serving now (always 1), per experiment bucket.", "gauge",
      [serving = std::move(sources.serving)] { return ServingSeries(serving()); });
  registry->AddCollector(
      "rankwire_model_requests_total",
      "Requests ranked, per experiment bucket and model (name@version).", "counter",
      [requests = std::move(sources.requests)] { return RequestSeries(requests()); });
  return metrics;
}

namespace internal_metrics {

std::string PhaseLabel(absl::string_view phase) { return absl::StrCat("phase=\"", phase, "\""); }

MetricsRegistry::Collected LogItemSeries(const uint64_t (&counts)[8]) {
  static constexpr const char* kOutcomes[8] = {
      "handed",           "enqueued", "stored",   "dropped_queue_full", "dropped_store_error",
      "dropped_shutdown", "unknown",  "in_flight"};
  MetricsRegistry::Collected out;
  for (int i = 0; i < 8; ++i) {
    out.emplace_back(MetricsRegistry::Label("outcome", kOutcomes[i]),
                     static_cast<double>(counts[i]));
  }
  return out;
}

}  // namespace internal_metrics

const ServerMetrics::PerCodec* ServerMetrics::ForCodec(absl::string_view name) const {
  for (const PerCodec& c : codecs) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace rankwire
