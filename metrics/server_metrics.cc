#include "metrics/server_metrics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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
                           absl::StrCat("phase=\"", name, "\""));
  };
  request_deserialize = phase("request_deserialize");
  validate = phase("validate");
  rank = phase("rank");
  log_enqueue = phase("log_enqueue");
  response_serialize = phase("response_serialize");
  total = phase("total");
  queue = phase("queue");

  for (int p = 0; p < kPhaseCount; ++p) {
    const std::string label = absl::StrCat("phase=\"", PhaseName(static_cast<Phase>(p)), "\"");
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

void ExportServerInfo(MetricsRegistry* registry,
                      const std::vector<std::pair<std::string, std::string>>& labels) {
  std::vector<std::string> parts;
  parts.reserve(labels.size());
  for (const auto& [name, value] : labels) parts.push_back(MetricsRegistry::Label(name, value));
  registry->AddGauge(
      "rankwire_server_info", "This replica's configuration (always 1).", [] { return 1.0; },
      absl::StrJoin(parts, ","));
}

const ServerMetrics::PerCodec* ServerMetrics::ForCodec(absl::string_view name) const {
  for (const PerCodec& c : codecs) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace rankwire
