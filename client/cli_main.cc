// rankwire-cli: the operator's tool. By default it sends a generated
// RankRequest (the workload generator's, so it is the benchmarks' payload),
// prints the top-N items, the codec, model and experiment bucket used, the
// response size and the server's and client's phase timings, and the logs
// of the items shown (fetched from the log store right after the call).
//   --request_file   send a saved request (JSON or binary) instead: replay
//   --dump_request   write the request it would send (JSON, or binary for
//                    a .bin file) and stop
//   --save_response  write the RankResponse as received
//   --compare        one call per codec and log placement, as a table
//   --fetch_logs_for the stored logs of a past request's --items
//   --health         health of every replica behind --target, one line each
//   --models         the models every replica ranks with now, one line each
//   --reload_models  ReloadModels on every replica's health port
//   --model_features the features a model file reads, checked as a server
//                    with the same model flags would
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/flags.h"
#include "base/status_macros.h"
#include "client/channel_flags.h"
#include "client/cli_fleet.h"
#include "client/rank_client.h"
#include "client/replicas.h"
#include "client/request_file.h"
#include "codec/builtin_codecs.h"
#include "model/model_flags.h"
#include "model/model_loader.h"
#include "model/model_path.h"
#include "rank/v1/rank.grpc.pb.h"
#include "ranking/model_check.h"
#include "request/log_mode.h"
#include "rpc/status.h"
#include "workload/workload.h"

// --target, --codec, --log_mode, --candidates, --top_n, --seed and
// --deadline_ms are client/channel_flags.cc's (shared with rankwire-loadgen);
// the model flags (--model_max_bytes, --xgboost_*, --explain_*,
// --allow_unsupplied_features) are model/model_flags.cc's (shared with
// rankwire-server).
ABSL_FLAG(uint64_t, sequence, 0, "Which request of the seeded workload to send.");
ABSL_FLAG(std::string, metrics, "score.ctr,score.cvr,score.rel,recall.source",
          "Metrics to print per item, comma-separated.");
ABSL_FLAG(bool, fetch_logs, true, "Fetch and print the logs of the items shown.");
ABSL_FLAG(int, log_chars, 140, "Characters of each log line to print (0: all).");
ABSL_FLAG(bool, compare, false,
          "Call once per codec and log placement and print a comparison table.");
ABSL_FLAG(int, compare_calls, 15, "Calls per row of --compare (medians are shown).");
ABSL_FLAG(bool, health, false,
          "Only ask grpc.health.v1.Health/Check, for the server (\"\") and "
          "rank.v1.RankService, of every replica behind --target (each address of an ipv4: "
          "list or of a dns: name, or each of a comma list): one line per replica with its "
          "address; fail unless every one is SERVING for both (see --wait_ms).");
ABSL_FLAG(std::string, request_file, "",
          "Send this RankRequest instead of a generated one: protobuf JSON (as --dump_request "
          "writes it) or binary (a caller's captured bytes), to replay a caller's request. "
          "--codec and --log_mode, when given, replace its accept_codecs and log_mode; "
          "--candidates, --seed, --sequence and --top_n shape generated requests only.");
ABSL_FLAG(std::string, dump_request, "",
          "Write the request the call would send to this file (\"-\": standard output), and "
          "exit without calling: protobuf JSON, or the binary wire form for a file ending in "
          ".bin or .pb (see --dump_format).");
ABSL_FLAG(std::string, dump_format, "auto",
          "--dump_request's form: auto (binary for .bin and .pb files, else JSON), json or "
          "binary.");
ABSL_FLAG(std::string, save_response, "",
          "Write the RankResponse as received (a binary rank.v1.RankResponse: header and the "
          "codec's body) to this file.");
ABSL_FLAG(std::string, fetch_logs_for, "",
          "Only read the stored logs of this request id (a past call's, while they live: the "
          "server's --log_ttl_ms, 1 s by default) for the --items given, and print one line "
          "per item. To see a request's logs at once, send it instead (--request_file): the "
          "logs of the items shown are fetched right after the call.");
ABSL_FLAG(std::string, items, "", "Item ids for --fetch_logs_for, comma-separated.");
ABSL_FLAG(std::string, model_features, "",
          "Only load this model (a file, a directory of versions or a bucket manifest's "
          "directory), as rankwire-server --model would with the same model flags "
          "(--model_max_bytes, --xgboost_max_depth, --xgboost_allow_unnamed_features, "
          "--allow_unsupplied_features, --explain_*), with its load checks (a relative path "
          "is also looked up in the shipped models), and print each model's version and what "
          "it reads: the item features callers send in RankRequest.item_feature_names, and "
          "its user.* and ctx.* inputs; or, exit status 1, what such a server would refuse and "
          "why.");
ABSL_FLAG(bool, models, false,
          "Only ask every replica behind --target (as --health does) which models it ranks "
          "with now, one line per replica: generation, each experiment bucket's "
          "name@version, kind, file and load time, and its last refused load (kept until a "
          "newer one) with its time and reason.");
ABSL_FLAG(std::string, expect_model, "",
          "With --models: fail (exit status 1) unless every replica serves exactly these "
          "models: name@version, comma-separated, in any order and bucket (a canary: "
          "old@1,new@2; after it: new@2). With --wait_ms, wait for it: a rollout watched to "
          "its end.");
ABSL_FLAG(int, wait_ms, 0,
          "With --health or --models: ask again every 100 ms, up to this long, until every "
          "replica is SERVING (--health) or answers and serves --expect_model (--models), "
          "then print the last round (0: ask once). For a server still starting, or a model "
          "on its way.");
ABSL_FLAG(bool, reload_models, false,
          "Only call rank.v1.ModelService/ReloadModels on every replica behind --target, "
          "which names their plaintext health ports (--health_port of servers run with "
          "--model_admin_rpc; no TLS there), one line per replica: loaded, unchanged, or "
          "refused with the reason while the old models serve on (exit status 1).");

namespace rankwire::client {
namespace {

std::string MetricText(const absl::StatusOr<std::optional<MetricRef>>& m) {
  if (!m.ok()) return "<error>";
  if (!m->has_value()) return "-";
  const MetricRef& v = **m;
  if (v.type() == MetricType::kString) return std::string(v.string_value());
  if (v.type() == MetricType::kInt) return absl::StrCat(v.int_value());
  return absl::StrFormat("%.6f", v.AsDouble().value_or(0));
}

uint32_t MicrosSince(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint32_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count());
}

// Reads the top n items completely (every metric), as a caller that shows
// them does, and returns how long that took.
absl::StatusOr<uint32_t> DecodeTopN(const ResultView& view, size_t n) {
  auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(std::vector<ItemRef> top, view.TopN(n));
  for (const ItemRef& item : top) RETURN_IF_ERROR(item.Materialize().status());
  return MicrosSince(t0);
}

rank::v1::RankRequest MakeRequest(const std::vector<std::string>& accept,
                                  rank::v1::LogMode log_mode) {
  workload::WorkloadOptions options;
  options.seed = absl::GetFlag(FLAGS_seed);
  options.candidates = absl::GetFlag(FLAGS_candidates);
  options.top_n = absl::GetFlag(FLAGS_top_n);
  options.accept_codecs = accept;
  options.log_mode = log_mode;
  return workload::WorkloadGenerator(options).Make(absl::GetFlag(FLAGS_sequence));
}

// A flag given (on the command line or in a flagfile) with other than its
// default value.
bool FlagGiven(absl::string_view name) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  return flag != nullptr && flag->CurrentValue() != flag->DefaultValue();
}

// A flag's value the CLI did not use as given, said on stderr.
void NoteClamp(absl::string_view flag, absl::string_view given, absl::string_view used,
               absl::string_view why) {
  absl::FPrintF(stderr, "rankwire-cli: --%s=%s clamped to %s: %s\n", flag, given, used, why);
}

// A generated request (the --candidates, --seed, --sequence, --top_n one).
rank::v1::RankRequest GeneratedRequest(const std::vector<std::string>& accept,
                                       rank::v1::LogMode log_mode) {
  rank::v1::RankRequest request = MakeRequest(accept, log_mode);
  const uint32_t top_n = absl::GetFlag(FLAGS_top_n);
  if (request.top_n() != top_n) {
    NoteClamp("top_n", absl::StrCat(top_n), absl::StrCat(request.top_n()),
              absl::StrCat("a request shows at most its candidates (--candidates=",
                           request.candidates_size(), ")"));
  }
  return request;
}

// The request to send: --request_file's, or a generated one.
absl::StatusOr<rank::v1::RankRequest> RequestToSend() {
  std::vector<std::string> accept =
      absl::StrSplit(absl::GetFlag(FLAGS_codec), ',', absl::SkipEmpty());
  ASSIGN_OR_RETURN(rank::v1::LogMode log_mode, ParseLogMode(absl::GetFlag(FLAGS_log_mode)));
  const std::string file = absl::GetFlag(FLAGS_request_file);
  if (file.empty()) return GeneratedRequest(accept, log_mode);
  for (const char* shaping : {"candidates", "seed", "sequence", "top_n"}) {
    if (FlagGiven(shaping)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", shaping, " shapes generated requests; --request_file sends its request as is"));
    }
  }
  ASSIGN_OR_RETURN(rank::v1::RankRequest request, ReadRequestFile(file));
  if (FlagGiven("codec")) {
    request.clear_accept_codecs();
    for (const std::string& codec : accept) request.add_accept_codecs(codec);
    absl::FPrintF(stderr, "rankwire-cli: --codec replaces the accept_codecs of %s\n", file);
  }
  if (FlagGiven("log_mode")) {
    request.set_log_mode(log_mode);
    absl::FPrintF(stderr, "rankwire-cli: --log_mode replaces the log_mode of %s\n", file);
  }
  return request;
}

// The RankResponse as received, to `path`.
absl::Status SaveResponse(const RankReply& reply, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reply.response().data(), static_cast<std::streamsize>(reply.response().size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("--save_response: cannot write ", path));
  return absl::OkStatus();
}

void PrintReply(const RankReply& reply, uint32_t top_n, uint32_t topn_us) {
  const rank::v1::ResponseHeader& h = reply.header();
  absl::PrintF(
      "response: codec=%s format=%d items=%d bytes=%d body_bytes=%d log_mode=%s%s model=%s "
      "bucket=%s\n",
      h.codec(), h.format_version(), h.item_count(), reply.response_bytes(), reply.body_bytes(),
      rank::v1::LogMode_Name(h.log_mode()),
      h.log_key().empty() ? "" : absl::StrCat(" log_key=", h.log_key()), h.model_version(),
      h.experiment_bucket().empty() ? "(none)" : h.experiment_bucket());
  absl::PrintF("call: peer=%s\n", reply.call().peer);
  const rank::v1::ServerTimings& st = h.timings();
  absl::PrintF(
      "server us: request_deserialize=%d validate=%d rank=%d log_enqueue=%d "
      "response_serialize=%d total=%d queued=%d\n",
      st.request_deserialize_us(), st.validate_us(), st.rank_us(), st.log_enqueue_us(),
      st.response_serialize_us(), st.total_us(), st.queue_us());
  const ClientTimings& ct = reply.timings();
  absl::PrintF("client us: request_serialize=%d call=%d envelope=%d open=%d top%d_decode=%d\n",
               ct.request_serialize_us, ct.call_us, ct.envelope_us, ct.open_us, top_n, topn_us);
}

// Prints the top items with the --metrics columns.
void PrintTop(const std::vector<ItemRef>& top) {
  std::vector<std::string> metrics =
      absl::StrSplit(absl::GetFlag(FLAGS_metrics), ',', absl::SkipEmpty());
  absl::PrintF("%4s  %-14s %-10s", "pos", "item", "score");
  for (const std::string& m : metrics) absl::PrintF(" %-14s", m);
  absl::PrintF("\n");
  for (const ItemRef& item : top) {
    absl::PrintF("%4d  %-14s %-10.6f", item.position(), item.id(), item.score());
    for (const std::string& m : metrics) absl::PrintF(" %-14s", MetricText(item.Metric(m)));
    absl::PrintF("\n");
  }
}

// The logs of `ids` from the server's log store. The server stores them
// after answering (its log writer formats them): a caller that asks at once
// may be a few milliseconds early, so this asks a few times.
absl::StatusOr<std::vector<std::optional<std::string>>> FetchStoredLogs(
    const RankClient& client, const std::string& request_id, const std::vector<std::string>& ids,
    const CallOptions& call) {
  std::vector<std::optional<std::string>> logs(ids.size());
  for (int attempt = 0; attempt < 20; ++attempt) {
    ASSIGN_OR_RETURN(std::vector<ItemLogResult> fetched, client.FetchLogs(request_id, ids, call));
    bool all = true;
    for (size_t i = 0; i < fetched.size() && i < logs.size(); ++i) {
      logs[i] = fetched[i].log;
      all &= logs[i].has_value();
    }
    if (all) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return logs;
}

void PrintLogs(const std::vector<std::string>& ids,
               const std::vector<std::optional<std::string>>& logs, absl::string_view title) {
  absl::PrintF("%s:\n", title);
  const int chars = absl::GetFlag(FLAGS_log_chars);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!logs[i]) {
      absl::PrintF("%4d  %s: (not in the store: expired or dropped)\n", i + 1, ids[i]);
      continue;
    }
    std::string shown = chars > 0 && logs[i]->size() > static_cast<size_t>(chars)
                            ? absl::StrCat(logs[i]->substr(0, chars), "...")
                            : *logs[i];
    absl::PrintF("%4d  %s (%d bytes): %s\n", i + 1, ids[i], logs[i]->size(), shown);
  }
}

absl::Status RankOnce(const RankClient& client) {
  ASSIGN_OR_RETURN(rank::v1::RankRequest request, RequestToSend());
  CallOptions call;
  call.deadline = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));

  absl::PrintF("request %s: %d candidates, top_n=%d, accept=[%s], %d bytes\n", request.request_id(),
               request.candidates_size(), request.top_n(),
               absl::StrJoin(request.accept_codecs(), ","), request.ByteSizeLong());
  ASSIGN_OR_RETURN(RankReply reply, client.Rank(request, call));
  if (const std::string path = absl::GetFlag(FLAGS_save_response); !path.empty()) {
    RETURN_IF_ERROR(SaveResponse(reply, path));
  }
  ASSIGN_OR_RETURN(uint32_t topn_us, DecodeTopN(reply.view(), request.top_n()));
  PrintReply(reply, request.top_n(), topn_us);
  ASSIGN_OR_RETURN(std::vector<ItemRef> top, reply.view().TopN(request.top_n()));
  PrintTop(top);

  const rank::v1::ResponseHeader& h = reply.header();
  if (!absl::GetFlag(FLAGS_fetch_logs) || h.log_mode() == rank::v1::LOG_MODE_NONE) {
    return absl::OkStatus();
  }
  std::vector<std::string> ids;
  ids.reserve(top.size());
  for (const ItemRef& item : top) ids.emplace_back(item.id());
  const std::string title = absl::StrCat("logs of the top ", ids.size());
  if (h.log_mode() == rank::v1::LOG_MODE_INLINE) {
    std::vector<std::optional<std::string>> logs;
    for (const ItemRef& item : top) {
      ASSIGN_OR_RETURN(absl::string_view log, item.Log());
      logs.emplace_back(std::string(log));
    }
    PrintLogs(ids, logs, absl::StrCat(title, " (inline in the response)"));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(std::vector<std::optional<std::string>> logs,
                   FetchStoredLogs(client, request.request_id(), ids, call));
  PrintLogs(ids, logs, absl::StrCat(title, " (from the log store, key ", h.log_key(), ")"));
  return absl::OkStatus();
}

// --fetch_logs_for: the stored logs of a past request's --items, read once
// (they may have expired: the server keeps them --log_ttl_ms).
absl::Status FetchLogsFor(const RankClient& client) {
  const std::string request_id = absl::GetFlag(FLAGS_fetch_logs_for);
  std::vector<std::string> ids = absl::StrSplit(absl::GetFlag(FLAGS_items), ',', absl::SkipEmpty());
  if (ids.empty()) {
    return absl::InvalidArgumentError(
        "--fetch_logs_for needs --items: the log store is read by item id (the ids the "
        "response listed)");
  }
  CallOptions call;
  call.deadline = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  ASSIGN_OR_RETURN(std::vector<ItemLogResult> fetched, client.FetchLogs(request_id, ids, call));
  std::vector<std::optional<std::string>> logs(ids.size());
  size_t found = 0;
  for (size_t i = 0; i < fetched.size() && i < ids.size(); ++i) {
    logs[i] = fetched[i].log;
    found += logs[i].has_value();
  }
  PrintLogs(ids, logs, absl::StrCat("logs of request ", request_id, " (from the log store)"));
  if (found == 0) {
    return absl::NotFoundError(
        absl::StrCat("no logs of request ", request_id,
                     " in the store: expired (the server's --log_ttl_ms), "
                     "not stored (the call's log mode), or not this request's items"));
  }
  return absl::OkStatus();
}

template <typename T>
T Median(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? T{} : v[v.size() / 2];
}

// One row per (codec, log placement): medians over --compare_calls calls,
// interleaved round-robin so drift in machine speed hits every row alike.
absl::Status Compare(const RankClient& client, const CodecRegistry& codecs) {
  struct Row {
    std::string codec;
    rank::v1::LogMode log_mode;
    std::vector<uint32_t> call_us, open_us, topn_us, serialize_us;
    size_t bytes = 0;
    std::vector<std::string> top_ids;
  };
  std::vector<Row> rows;
  for (rank::v1::LogMode mode : {rank::v1::LOG_MODE_INLINE, rank::v1::LOG_MODE_STORE}) {
    for (const std::string& name : codecs.Names())
      rows.push_back(Row{name, mode, {}, {}, {}, {}, 0, {}});
  }
  CallOptions call;
  call.deadline = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  const int calls = std::max(1, absl::GetFlag(FLAGS_compare_calls));
  if (calls != absl::GetFlag(FLAGS_compare_calls)) {
    NoteClamp("compare_calls", absl::StrCat(absl::GetFlag(FLAGS_compare_calls)), "1",
              "each row needs a call");
  }
  for (int round = 0; round < calls; ++round) {
    for (Row& row : rows) {
      rank::v1::RankRequest request = MakeRequest({row.codec}, row.log_mode);
      ASSIGN_OR_RETURN(RankReply reply, client.Rank(request, call));
      if (reply.header().codec() != row.codec) {
        return absl::InternalError(
            absl::StrCat("asked for ", row.codec, ", got ", reply.header().codec()));
      }
      ASSIGN_OR_RETURN(uint32_t topn, DecodeTopN(reply.view(), request.top_n()));
      row.call_us.push_back(reply.timings().call_us);
      row.open_us.push_back(reply.timings().open_us);
      row.topn_us.push_back(topn);
      row.serialize_us.push_back(reply.header().timings().response_serialize_us());
      row.bytes = reply.response_bytes();
      if (round == 0) {
        ASSIGN_OR_RETURN(std::vector<ItemRef> top, reply.view().TopN(request.top_n()));
        for (const ItemRef& item : top) row.top_ids.emplace_back(item.id());
      }
    }
  }
  const Row& base = rows.front();  // The baseline codec, logs inline: the source system.
  absl::PrintF(
      "codec comparison: %d candidates, top_n=%d, %d calls per row (medians), "
      "same request every call\n",
      absl::GetFlag(FLAGS_candidates), absl::GetFlag(FLAGS_top_n), calls);
  absl::PrintF("%-14s %-7s %12s %9s %14s %12s %12s %14s  %s\n", "codec", "logs", "bytes", "of base",
               "server_enc_us", "call_us", "open_us", "topN_decode_us", "top-N same as base");
  for (const Row& row : rows) {
    absl::PrintF("%-14s %-7s %12d %8.1f%% %14d %12d %12d %14d  %s\n", row.codec,
                 row.log_mode == rank::v1::LOG_MODE_INLINE ? "inline" : "store", row.bytes,
                 100.0 * row.bytes / base.bytes, Median(row.serialize_us), Median(row.call_us),
                 Median(row.open_us), Median(row.topn_us),
                 row.top_ids == base.top_ids ? "yes" : "NO");
    if (row.top_ids != base.top_ids) {
      return absl::InternalError(absl::StrCat("codec ", row.codec, " shows a different top-N"));
    }
  }
  return absl::OkStatus();
}

// One model's inputs, as --model_features and --models print them.
void PrintInputs(const std::vector<std::string>& item, const std::vector<std::string>& user,
                 const std::vector<std::string>& context, absl::string_view indent) {
  struct Group {
    const std::vector<std::string>* names;
    const char* title;
    const char* field;
  };
  for (const Group& g : {Group{&item, "item features", "RankRequest.item_feature_names, any order"},
                         Group{&user, "user features", "RankRequest.user_features"},
                         Group{&context, "numeric context values", "RankRequest.context"}}) {
    const std::vector<std::string>* names = g.names;
    absl::PrintF("%s%s (%d; %s):\n", indent, g.title, names->size(), g.field);
    for (const std::string& name : *names) absl::PrintF("%s  %s\n", indent, name);
  }
}

// --model_features: what a model (file, version directory or bucket
// manifest) reads, loaded and checked as a server with the same model flags
// loads it; what such a server would refuse, and why, otherwise.
absl::Status ModelFeatures(const std::string& flag) {
  ASSIGN_OR_RETURN(rankwire::ModelLoadOptions load, rankwire::ModelLoadOptionsFromFlags());
  auto refused = [](const std::string& what, const absl::Status& status) {
    return absl::Status(
        status.code(),
        absl::StrCat("a server with these model flags would refuse ", what, " (reason ",
                     rankwire::RefusalReason(status), "): ", status.message()));
  };
  ASSIGN_OR_RETURN(std::string path, rankwire::ResolveModelPath(flag, rankwire::ExecutablePath()));
  absl::StatusOr<rankwire::ModelPlan> plan = rankwire::PlanModels(path);
  if (!plan.ok()) return refused(path, plan.status());
  absl::Status first_refusal;
  for (const rankwire::ModelPlan::Entry& entry : plan->entries) {
    absl::StatusOr<rankwire::LoadedModel> loaded = rankwire::LoadModel(entry, load);
    absl::Status checked = loaded.status();
    if (loaded.ok()) {
      checked =
          rankwire::CheckModel(*loaded->model, plan->supplied, load.allow_unsupplied_features, {});
    }
    if (!checked.ok()) {
      if (plan->entries.size() > 1) {  // One line per refused bucket; the last is the summary.
        absl::FPrintF(stderr, "rankwire-cli: %s\n", refused(entry.path, checked).ToString());
      }
      if (first_refusal.ok()) first_refusal = refused(entry.path, checked);
      continue;
    }
    const rankwire::Model& model = *loaded->model;
    absl::PrintF("model %s (%s) from %s%s\n", model.full_version(), model.kind(), entry.path,
                 entry.bucket.empty()
                     ? ""
                     : absl::StrFormat(", bucket %s (%d%%)", entry.bucket, entry.percent));
    const rankwire::ModelInputs& in = model.inputs();
    PrintInputs(in.item, in.user, in.context, "");
  }
  if (!first_refusal.ok() && plan->entries.size() > 1) {
    return absl::Status(first_refusal.code(),
                        "a server with these model flags would refuse the "
                        "models above");
  }
  return first_refusal;
}

// --dump_request: the request written, no call made.
absl::Status DumpRequest(const std::string& path) {
  const std::string form = absl::GetFlag(FLAGS_dump_format);
  RequestFileFormat format = RequestFileFormatFor(path);
  if (form == "json") {
    format = RequestFileFormat::kJson;
  } else if (form == "binary") {
    format = RequestFileFormat::kBinary;
  } else if (form != "auto") {
    return absl::InvalidArgumentError(
        absl::StrCat("--dump_format=", form, ": expected auto, json or binary"));
  }
  ASSIGN_OR_RETURN(rank::v1::RankRequest request, RequestToSend());
  RETURN_IF_ERROR(WriteRequestFile(request, path, format));
  if (path != "-") {
    absl::FPrintF(stderr, "rankwire-cli: wrote request %s (%d candidates, %s) to %s\n",
                  request.request_id(), request.candidates_size(),
                  format == RequestFileFormat::kJson ? "JSON" : "binary", path);
  }
  return absl::OkStatus();
}

// --health, --models and --reload_models: the fleet's commands.
absl::Status Fleet(ChannelOptions channel_options) {
  FleetOptions fleet;
  fleet.target = absl::GetFlag(FLAGS_target);
  fleet.channel = std::move(channel_options);
  fleet.deadline = absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms));
  fleet.wait = absl::Milliseconds(std::max(0, absl::GetFlag(FLAGS_wait_ms)));
  fleet.expect_model = absl::GetFlag(FLAGS_expect_model);
  if (!fleet.expect_model.empty() && !absl::GetFlag(FLAGS_models)) {
    return absl::InvalidArgumentError("--expect_model goes with --models");
  }
  if (absl::GetFlag(FLAGS_health)) return HealthOfReplicas(fleet);
  if (absl::GetFlag(FLAGS_models)) return ModelsOfReplicas(fleet);
  if (fleet.wait > absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--wait_ms goes with --health or --models (--reload_models answers once the models "
        "are loaded or refused)");
  }
  return ReloadReplicas(fleet);
}

absl::Status Run() {
  if (const std::string model = absl::GetFlag(FLAGS_model_features); !model.empty()) {
    return ModelFeatures(model);
  }
  if (const std::string path = absl::GetFlag(FLAGS_dump_request); !path.empty()) {
    return DumpRequest(path);
  }
  ASSIGN_OR_RETURN(ChannelOptions channel_options, ChannelOptionsFromFlags());
  if (absl::GetFlag(FLAGS_health) || absl::GetFlag(FLAGS_models) ||
      absl::GetFlag(FLAGS_reload_models)) {
    return Fleet(std::move(channel_options));
  }
  if (FlagGiven("wait_ms") || FlagGiven("expect_model")) {
    return absl::InvalidArgumentError("--wait_ms and --expect_model go with --health or --models");
  }
  ASSIGN_OR_RETURN(CodecRegistry codecs, MakeBuiltinCodecs(BuiltinCodecOptions{}));
  ASSIGN_OR_RETURN(std::string target, ChannelTargetOf(absl::GetFlag(FLAGS_target)));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, MakeChannel(target, channel_options));
  RankClient client(std::move(channel), &codecs);
  if (!absl::GetFlag(FLAGS_fetch_logs_for).empty()) return FetchLogsFor(client);
  if (absl::GetFlag(FLAGS_compare)) {
    if (!absl::GetFlag(FLAGS_request_file).empty()) {
      return absl::InvalidArgumentError("--compare sends generated requests, not --request_file");
    }
    return Compare(client, codecs);
  }
  return RankOnce(client);
}

}  // namespace
}  // namespace rankwire::client

int main(int argc, char** argv) {
  // Line by line, also into a pipe or a file: an operator's `| grep` or a
  // log sees each line when it is printed, in order with stderr's.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  rankwire::ParseFlags(
      argc, argv,
      "Sends a generated 500-candidate RankRequest (or a saved one) and prints "
      "the top-N; the operator's tool for a rankwire fleet.\n"
      "  rankwire-cli --target=localhost:50051 --codec=rankbin\n"
      "  rankwire-cli --dump_request=req.json && rankwire-cli --request_file=req.json\n"
      "  rankwire-cli --fetch_logs_for=REQUEST_ID --items=sku-1,sku-2\n"
      "  rankwire-cli --target=dns:///rankwire.default.svc.cluster.local:50051 --health\n"
      "  rankwire-cli --model_features=model/models/ecom_search_lr.model\n"
      "  rankwire-cli --target=ipv4:10.0.0.7:50051,10.0.0.8:50051 --models\n"
      "  rankwire-cli --target=localhost:50061 --reload_models   # the health port\n"
      "  rankwire-cli --compare");
  absl::Status s = rankwire::client::Run();
  if (!s.ok()) {
    absl::FPrintF(stderr, "rankwire-cli: %s\n", s.ToString());
    return 1;
  }
  return 0;
}
