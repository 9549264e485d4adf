// Central-control's side of rankwire, in C++: rank 500 candidates with a
// deadline, show the top 10 (read lazily), fetch their logs, and handle the
// two errors a caller must expect (docs/CLIENTS.md, "Errors and what to do
// with each").
//
//   central_control dns:///rankwire.prod.svc.cluster.local:50051
//
// Built outside the rankwire tree, against an installed rankwire: with the
// CMakeLists.txt beside it (find_package(rankwire CONFIG)), or in one line
// with pkg-config:
//   c++ -std=c++17 -O2 central_control.cc $(pkg-config --cflags --libs rankwire-client)
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/rank_client.h"
#include "codec/builtin_codecs.h"
#include "rank/v1/rank.pb.h"

namespace {

using rankwire::ItemRef;
using rankwire::client::CallOptions;
using rankwire::client::RankClient;
using rankwire::client::RankReply;

rank::v1::RankRequest MakeRequest(const std::string& request_id) {
  rank::v1::RankRequest request;
  request.set_request_id(request_id);
  request.set_scene(rank::v1::SCENE_SEARCH);
  request.set_user_id("u-42");
  request.set_request_time_ms(absl::ToUnixMillis(absl::Now()));
  request.set_top_n(10);
  request.set_log_mode(rank::v1::LOG_MODE_STORE);  // Logs to the store, not the response.
  // No accept_codecs: this client reads every codec, so the operators'
  // --codec decides (docs/CLIENTS.md, "Codec negotiation").
  for (const char* name : {"price", "ctr_7d", "text_match"}) request.add_item_feature_names(name);
  for (int i = 0; i < 500; ++i) {
    rank::v1::Candidate* candidate = request.add_candidates();
    candidate->set_item_id("sku-" + std::to_string(i));
    candidate->set_recall_source("text_bm25");
    candidate->set_recall_rank(i + 1);
    for (float feature : {20.0f + i, 0.01f * (i % 7), 0.5f}) candidate->add_features(feature);
  }
  return request;
}

// The ranked reply, or the status of the last attempt.
absl::StatusOr<RankReply> RankWithBackoff(const RankClient& client,
                                          const rank::v1::RankRequest& request) {
  CallOptions options;
  // The deadline covers the channel's own retries of UNAVAILABLE: with
  // MakeChannel's defaults a replica that is down or draining is retried
  // on another one, up to 4 attempts, before UNAVAILABLE reaches us.
  options.deadline = absl::Milliseconds(250);
  absl::StatusOr<RankReply> reply = client.Rank(request, options);
  for (int attempt = 1; attempt < 3 && absl::IsResourceExhausted(reply.status()); ++attempt) {
    // A replica shedding load: back off (20 ms, 40 ms), never retry at once.
    // round_robin sends the next attempt to the next replica.
    std::this_thread::sleep_for(std::chrono::milliseconds(10 << attempt));
    reply = client.Rank(request, options);
  }
  return reply;
}

// A metric of a top item, decoded now (and only now) from the payload.
std::string Show(const ItemRef& item, const char* name) {
  absl::StatusOr<std::optional<rankwire::MetricRef>> metric = item.Metric(name);
  if (!metric.ok()) return "<" + metric.status().ToString() + ">";  // DATA_LOSS: report it.
  if (!metric->has_value()) return "-";
  if (std::optional<double> number = (*metric)->AsDouble()) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.4f", *number);
    return text;
  }
  return std::string((*metric)->string_value());
}

// The logs of the items shown, one per id in order (nullopt: not in the
// store). They reach the store a few milliseconds after the response, so
// what was not found is asked for again once, a little later; never in a
// loop.
absl::StatusOr<std::vector<rankwire::client::ItemLogResult>> FetchLogsOfShown(
    const RankClient& client, const std::string& request_id, const std::vector<std::string>& ids) {
  CallOptions options;
  options.deadline = absl::Milliseconds(100);  // Shorter than Rank's.
  auto logs = client.FetchLogs(request_id, ids, options);
  if (!logs.ok()) return logs;
  std::vector<std::string> missing;
  for (const auto& entry : *logs) {
    if (!entry.log) missing.push_back(entry.item_id);
  }
  if (missing.empty()) return logs;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto again = client.FetchLogs(request_id, missing, options);
  if (!again.ok()) return logs;  // What the first call found.
  size_t next = 0;               // FetchLogs answers in request order.
  for (auto& entry : *logs) {
    if (!entry.log && next < again->size()) entry.log = (*again)[next++].log;
  }
  return logs;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string target = argc > 1 ? argv[1] : "localhost:50051";
  absl::StatusOr<rankwire::CodecRegistry> codecs = rankwire::MakeBuiltinCodecs({});
  if (!codecs.ok()) {
    std::fprintf(stderr, "codecs: %s\n", codecs.status().ToString().c_str());
    return 2;
  }
  // round_robin over every address of the target, client-side health
  // checking, retry of UNAVAILABLE (docs/CLIENTS.md, "The channel").
  RankClient client(rankwire::client::MakeChannel(target), &*codecs);

  const rank::v1::RankRequest request =
      MakeRequest("cc-" + std::to_string(absl::ToUnixMicros(absl::Now())));
  absl::StatusOr<RankReply> reply = RankWithBackoff(client, request);
  if (!reply.ok()) {
    const absl::Status& status = reply.status();
    if (absl::IsResourceExhausted(status) || absl::IsUnavailable(status) ||
        absl::IsDeadlineExceeded(status)) {
      std::fprintf(stderr, "ranking unavailable, falling back to recall order: %s\n",
                   status.ToString().c_str());
    } else {  // INVALID_ARGUMENT and the like: a bug in the request; do not retry.
      std::fprintf(stderr, "rank failed: %s\n", status.ToString().c_str());
    }
    return 1;
  }
  std::printf("# %u items, codec %s, %zu bytes, server %u us\n", reply->header().item_count(),
              reply->header().codec().c_str(), reply->response_bytes(),
              reply->header().timings().total_us());

  // Ten item records read, nothing else; each metric is decoded when asked.
  absl::StatusOr<std::vector<ItemRef>> top = reply->view().TopN(10);
  if (!top.ok()) {
    std::fprintf(stderr, "malformed response: %s\n", top.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> ids;
  for (const ItemRef& item : *top) {
    std::printf("%2u %-8s %.4f ctr=%s src=%s\n", item.position(), std::string(item.id()).c_str(),
                item.score(), Show(item, "score.ctr").c_str(), Show(item, "recall.source").c_str());
    ids.emplace_back(item.id());
  }

  // Logs are for debugging: without them, ranking still succeeded.
  auto logs = FetchLogsOfShown(client, request.request_id(), ids);
  if (!logs.ok()) {  // RESOURCE_EXHAUSTED: the server's log-read pool is full.
    std::fprintf(stderr, "logs unavailable: %s\n", logs.status().ToString().c_str());
    return 0;
  }
  for (const auto& entry : *logs) {
    std::printf("%s: %.100s\n", entry.item_id.c_str(),
                entry.log ? entry.log->c_str() : "(no log yet)");
  }
  return 0;
}
