// rankwire-server: the ranking service. Flags (also from --flagfile) are
// listed in README.md; `rankwire-server --help` prints them.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/cpu_budget.h"
#include "base/flags.h"
#include "base/status_macros.h"
#include "base/thread_sched.h"
#include "codec/builtin_codec_flags.h"
#include "codec/builtin_codecs.h"
#include "logstore/log_store.h"
#include "metrics/server_metrics.h"
#include "model/model_flags.h"
#include "model/model_path.h"
#include "model/xgboost/xgboost_model.h"
#include "request/log_mode.h"
#include "server/admission.h"
#include "server/protobuf_log.h"
#include "server/server.h"
#include "server/tls.h"
#include "spdlog/spdlog.h"
#ifdef RANKWIRE_JEMALLOC_CONF
#include "server/jemalloc_conf.h"
#endif

ABSL_FLAG(std::string, address, "0.0.0.0", "Address to listen on.");
ABSL_FLAG(int, port, 50051, "gRPC port (0 picks a free port and logs it).");
ABSL_FLAG(bool, reuse_port, false,
          "Let other processes listen on the same ports (SO_REUSEPORT) and share their calls. "
          "Off: a port already in use is a start-up error naming it.");
ABSL_FLAG(std::string, codec, std::string(rankwire::kDefaultCodecName),
          absl::StrCat("Default response codec, one of: ", rankwire::BuiltinCodecNames(),
                       ". A request may ask for another it accepts."));
ABSL_FLAG(std::string, model, "model/models/ecom_search_lr.model",
          "Ranking model: a file (the linear format or XGBoost JSON), a directory of versions "
          "(<version>.model or <version>.json: the newest serves), or a directory with a "
          "bucket manifest (rankwire.manifest: a model per experiment bucket). A relative "
          "path is tried in the working directory, then by name in models/ next to the "
          "binary, then in ../share/rankwire/models/ (an installed server). Reloaded on "
          "SIGHUP and when it changes (--model_poll_interval).");
ABSL_FLAG(absl::Duration, model_poll_interval, absl::Seconds(2),
          "How often to look for a changed model file, directory or manifest (0: never; "
          "SIGHUP still reloads).");
ABSL_FLAG(bool, model_fail_fast, false,
          "Exit at start-up (status 1) when no model loads. Off: start with "
          "rank.v1.RankService NOT_SERVING (Rank: UNAVAILABLE), keep looking, and serve once a "
          "model loads; a version directory whose newest version is refused starts on the "
          "newest older one that loads.");
ABSL_FLAG(bool, model_admin_rpc, false,
          "Serve ModelService.ReloadModels on the health port (--health_port).");
// The model flags (--model_max_bytes, --xgboost_*, --explain_*,
// --allow_unsupplied_features) are model/model_flags.cc's, shared with
// rankwire-cli --model_features.
ABSL_FLAG(uint32_t, max_candidates, 1000, "Most candidates a request may carry.");
ABSL_FLAG(int, max_message_bytes, 64 << 20,
          "Largest response message, in bytes (1 MiB .. 2 GiB - 1); a request whose response "
          "is estimated larger is refused before ranking.");
ABSL_FLAG(int, max_request_bytes, 0,
          "Largest request message, in bytes; gRPC refuses larger ones (RESOURCE_EXHAUSTED) "
          "before reading them in whole. 0: the largest request the input contract allows "
          "(every field at its limit, --max_candidates candidates; at least a FetchLogs "
          "request at its limits) plus 64 KiB, ~1.7 MB at the defaults.");
ABSL_FLAG(std::string, log_mode, "store",
          "Where per-item logs go unless the request says: store, inline or none.");
ABSL_FLAG(std::string, logstore, "memory",
          "Log store backend: memory (in-process), redis or redis-cluster.");
ABSL_FLAG(std::string, redis_addr, "127.0.0.1:6379",
          "Redis host:port for --logstore=redis; for redis-cluster a comma-separated list "
          "of seed nodes.");
ABSL_FLAG(std::string, log_format, "columns",
          "How stored logs are kept: columns (the values as the ranker holds them, a column "
          "per value slot, and the top_n items' values apart; rendered to the same text on "
          "read; \"blocks\" and \"record\" are accepted as older names) or text ('T' values "
          "per item, 'Z' with --log_compress).");
ABSL_FLAG(uint32_t, log_writers, 0,
          "Log writer threads, each with its own store connection (0: one per two usable "
          "CPUs, 1..8).");
ABSL_FLAG(std::string, redis_password, "", "Redis AUTH password (empty: no AUTH).");
ABSL_FLAG(int, log_ttl_ms, 1000, "TTL of a request's logs in the store, in ms.");
ABSL_FLAG(uint32_t, log_queue_requests, 256,
          "Log queue bound, in requests; logs beyond it are dropped and counted.");
ABSL_FLAG(uint32_t, log_queue_mb, 256, "Log queue bound, in MiB of log text.");
ABSL_FLAG(uint32_t, log_batch_requests, 16,
          "Requests' logs written per pipelined round trip to the store.");
ABSL_FLAG(bool, log_compress, false, "zstd-compress each log value in the store.");
ABSL_FLAG(int, log_linger_us, 2000,
          "After a write, how long a log writer lets the next batch gather (or until it has "
          "--log_batch_requests): one wake-up per batch instead of per request, logs readable "
          "up to this much later (0: no wait).");
ABSL_FLAG(uint32_t, phase_cpu_sample_every, 32,
          "Measure the CPU time of each phase of one Rank call in this many (and of one log "
          "writer batch in a quarter as many): rankwire_phase_cpu_* (0: off). Reading a "
          "thread's CPU clock is a system call.");
ABSL_FLAG(int, log_writer_nice, 10,
          "Nice value of the log writer thread: ranking threads get the CPU first.");
ABSL_FLAG(std::string, log_numbers, "auto",
          "Ignored (kept so flagfiles of earlier versions start): log writers no longer code "
          "numbers, they store them as binary32.");
ABSL_FLAG(bool, log_number_avx512, true, "Ignored (kept so flagfiles of earlier versions start).");
ABSL_FLAG(int, rank_worker_nice, 0,
          "Nice value of the ranking worker threads (0: the process's); above it, gRPC's "
          "threads (admitting, refusing, sending) also get a larger share of the CPU.");
ABSL_FLAG(int, latency_slice_us, 100,
          "Time slice, in us, of the server's latency-critical threads (gRPC's); ranking "
          "workers and log writers keep the kernel's default, so a waking gRPC thread "
          "preempts them at once (Linux >= 6.12; 0 leaves every thread at the default).");
ABSL_FLAG(std::string, log_writer_cpus, "",
          "CPUs the log writer threads run on, as taskset writes them (\"2,3\", \"2-3\"); "
          "empty: wherever the server runs. Writers on their own cores never take CPU "
          "from ranking.");
ABSL_FLAG(int, metrics_port, 9464,
          "Prometheus /metrics HTTP port (0 picks a free port, -1 disables).");
ABSL_FLAG(std::string, metrics_address, "",
          "Address the plaintext /metrics endpoint listens on (empty: --address); e.g. the "
          "pod's monitoring-network address, or 127.0.0.1 behind a local scraper.");
ABSL_FLAG(int, shutdown_grace_ms, 5000,
          "On SIGTERM/SIGINT, how long in-flight RPCs may take to finish.");
ABSL_FLAG(int, drain_ms, 0,
          "On SIGTERM/SIGINT, how long to keep serving while reporting NOT_SERVING "
          "on the health service, so load balancers move traffic away first.");
ABSL_FLAG(int, log_flush_ms, 2000, "On shutdown, how long to flush queued logs.");
ABSL_FLAG(std::string, grpc_transport_args, rankwire::rpc::kDefaultTransportArgs,
          "gRPC HTTP/2 and TCP arguments of the gRPC port, name=value,... (empty: "
          "gRPC's defaults); docs/OPERATING.md says why these.");
ABSL_FLAG(int, max_connection_age_ms, 0,
          "Close each client connection (with GOAWAY, after its calls finish) this "
          "long after it opened, so clients re-resolve DNS and spread over replicas "
          "added since (0: never).");
// Hostile and overloaded callers (docs/ARCHITECTURE.md, "Input contract"
// and "Admission control").
ABSL_FLAG(int, max_concurrent_rank, 0,
          "Rank calls parsed, ranked or encoded at once; past it a call gets "
          "RESOURCE_EXHAUSTED at once (0: twice the CPUs the server may use: its "
          "affinity mask, capped by its cgroup CPU quota).");
ABSL_FLAG(int, max_concurrent_fetch_logs, 4,
          "FetchLogs calls admitted at once (each on a thread of its own pool while it "
          "waits for the log store); past it RESOURCE_EXHAUSTED at once.");
ABSL_FLAG(std::string, rank_worker_cpus, "",
          "CPUs the ranking workers run on, as taskset writes them (\"1\", \"2-7\"); every "
          "other thread of the server (gRPC's, which admit, refuse and send; the log writers "
          "unless --log_writer_cpus; metrics) then runs on the CPUs left. Empty: all threads "
          "wherever the server runs. With it, the defaults of --rank_workers and "
          "--max_concurrent_rank count these CPUs.");
ABSL_FLAG(int, rank_workers, 0,
          "Threads that parse, rank and encode admitted calls (0: one per CPU the server "
          "may use, at most --max_concurrent_rank). Admitted calls past them wait in a "
          "queue (ServerTimings.queue_us); more than --max_concurrent_rank is an error.");
ABSL_FLAG(bool, rank_inline, true,
          "Rank an admitted call on the gRPC thread that received it while a ranking slot is "
          "free (no hand-off to a worker thread: fewer context switches per call); one gRPC "
          "thread always stays free to admit and refuse. Off with --rank_worker_cpus or a "
          "--rank_worker_nice, which only the workers apply.");
ABSL_FLAG(uint32_t, max_unsent_response_mb, 512,
          "Response bytes (MiB) handed to gRPC but not yet read by clients, over all "
          "connections; past it calls get RESOURCE_EXHAUSTED.");
ABSL_FLAG(uint32_t, max_unsent_response_mb_per_peer, 128,
          "The same bound per client connection: a client that does not read its "
          "responses is refused, others are not.");
ABSL_FLAG(std::string, unknown_features, "count",
          "Item feature names the model does not know: count (rank, count them per name, "
          "list them in the response header) or reject (INVALID_ARGUMENT).");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain: serve gRPC over TLS (empty: plaintext).");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA bundle: require client certificates signed by it (mutual TLS).");
ABSL_FLAG(int, health_port, -1,
          "Plaintext port serving only grpc.health.v1.Health (for kubelet gRPC probes, "
          "which cannot speak TLS); 0 picks a free port, -1 disables.");

namespace rankwire {
namespace {

// The server's default log mode: any named mode but "default", which only
// a request can say (it means "the server's").
absl::StatusOr<rank::v1::LogMode> ServerLogMode(const std::string& mode) {
  absl::StatusOr<rank::v1::LogMode> parsed = ParseLogMode(mode, /*allow_default=*/false);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_mode=", mode, ": expected store, inline or none"));
  }
  return parsed;
}

absl::StatusOr<UnknownFeaturePolicy> ParseUnknownFeatures(const std::string& policy) {
  if (policy == "count") return UnknownFeaturePolicy::kCount;
  if (policy == "reject") return UnknownFeaturePolicy::kReject;
  return absl::InvalidArgumentError(
      absl::StrCat("--unknown_features=", policy, ": expected count or reject"));
}

// --max_message_bytes and --max_request_bytes, checked.
absl::Status MessageLimitsFromFlags(ServerOptions* o) {
  const int max_response = absl::GetFlag(FLAGS_max_message_bytes);
  const int max_request = absl::GetFlag(FLAGS_max_request_bytes);
  if (max_response < (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_message_bytes=", max_response, " is below 1 MiB (1048576)"));
  }
  if (max_request < 0 || (max_request > 0 && max_request < 4096)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max_request_bytes=", max_request, " must be 0 (derived) or at least 4096"));
  }
  o->max_response_bytes = static_cast<size_t>(max_response);
  o->max_request_bytes = static_cast<size_t>(max_request);
  return absl::OkStatus();
}

// Admission, workers and their placement.
absl::Status AdmissionFromFlags(ServerOptions* o) {
  o->max_concurrent_rank = absl::GetFlag(FLAGS_max_concurrent_rank);
  if (o->max_concurrent_rank < 0) {
    return absl::InvalidArgumentError("--max_concurrent_rank must be >= 0");
  }
  o->rank_workers = absl::GetFlag(FLAGS_rank_workers);
  if (o->rank_workers < 0) return absl::InvalidArgumentError("--rank_workers must be >= 0");
  const int admitted = o->max_concurrent_rank == 0 ? DefaultMaxConcurrentRank(o->ranking_cpus)
                                                   : o->max_concurrent_rank;
  if (o->rank_workers > admitted) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank_workers=", o->rank_workers, " exceeds --max_concurrent_rank (",
                     admitted, "): workers past the admitted calls would never run"));
  }
  o->rank_inline = absl::GetFlag(FLAGS_rank_inline);
  o->rank_worker_nice = absl::GetFlag(FLAGS_rank_worker_nice);
  o->max_unsent_bytes = size_t{absl::GetFlag(FLAGS_max_unsent_response_mb)} << 20;
  o->max_unsent_bytes_per_peer = size_t{absl::GetFlag(FLAGS_max_unsent_response_mb_per_peer)} << 20;
  if (o->max_unsent_bytes == 0 || o->max_unsent_bytes_per_peer == 0) {
    return absl::InvalidArgumentError("--max_unsent_response_mb* must be at least 1");
  }
  o->max_concurrent_fetch_logs = absl::GetFlag(FLAGS_max_concurrent_fetch_logs);
  if (o->max_concurrent_fetch_logs < 1) {
    return absl::InvalidArgumentError("--max_concurrent_fetch_logs must be at least 1");
  }
  return absl::OkStatus();
}

// A CPU-list flag's value (`name` for the error), as ParseCpuList reads it.
absl::StatusOr<std::vector<int>> CpuListFlag(absl::string_view name, const std::string& value) {
  absl::StatusOr<std::vector<int>> cpus =
      ParseCpuList(value, static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)));
  if (!cpus.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", cpus.status().message()));
  }
  return cpus;
}

// --rank_worker_cpus, checked against the CPUs the process may use. When
// set, the calling thread moves to the other CPUs; called before any other
// thread exists, so every thread created afterwards (gRPC's, the log
// writers unless --log_writer_cpus, the metrics server's) runs there and
// only the ranking workers, which pin themselves, run on these.
absl::StatusOr<std::vector<int>> SetAsideRankCpus() {
  ASSIGN_OR_RETURN(std::vector<int> rank_cpus,
                   CpuListFlag("rank_worker_cpus", absl::GetFlag(FLAGS_rank_worker_cpus)));
  if (rank_cpus.empty()) return rank_cpus;
  ASSIGN_OR_RETURN(const std::vector<int> allowed, ThreadAffinity());
  absl::StatusOr<std::vector<int>> rest = CpusLeftAfter(allowed, rank_cpus);
  if (!rest.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank_worker_cpus: ", rest.status().message()));
  }
  RETURN_IF_ERROR(SetThreadAffinity(*rest));
  return rank_cpus;
}

// --log_numbers and --log_number_avx512 said how log writers coded numbers
// (layout versions 1 and 2); writers now store binary32 as it is. Flagfiles
// of earlier versions (deploy/flags/production.flags set --log_numbers)
// still start, with a warning when they ask for something.
void WarnIgnoredLogNumberFlags() {
  if (absl::GetFlag(FLAGS_log_numbers) != "auto" || !absl::GetFlag(FLAGS_log_number_avx512)) {
    spdlog::warn(
        "--log_numbers and --log_number_avx512 are ignored: log writers store numbers "
        "as binary32");
  }
}

absl::StatusOr<logstore::LogStoreConfig> LogStoreConfigFromFlags() {
  logstore::LogStoreConfig config;
  const std::string backend = absl::GetFlag(FLAGS_logstore);
  if (backend == "memory") {
    config.backend = logstore::LogStoreConfig::Backend::kMemory;
  } else if (backend == "redis") {
    config.backend = logstore::LogStoreConfig::Backend::kRedis;
  } else if (backend == "redis-cluster") {
    config.backend = logstore::LogStoreConfig::Backend::kRedisCluster;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--logstore=", backend, ": expected memory, redis or redis-cluster"));
  }
  const std::string format = absl::GetFlag(FLAGS_log_format);
  if (format == "columns" || format == "blocks" || format == "record") {
    config.format = logstore::LogStoreConfig::Format::kColumns;
  } else if (format == "text") {
    config.format = logstore::LogStoreConfig::Format::kText;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_format=", format, ": expected columns or text"));
  }
  config.writers = absl::GetFlag(FLAGS_log_writers);
  if (absl::GetFlag(FLAGS_log_ttl_ms) <= 0) {
    return absl::InvalidArgumentError("--log_ttl_ms must be positive");
  }
  config.redis_addr = absl::GetFlag(FLAGS_redis_addr);
  config.redis_password = absl::GetFlag(FLAGS_redis_password);
  config.ttl = absl::Milliseconds(absl::GetFlag(FLAGS_log_ttl_ms));
  config.queue_capacity_requests = absl::GetFlag(FLAGS_log_queue_requests);
  config.queue_capacity_bytes = size_t{absl::GetFlag(FLAGS_log_queue_mb)} << 20;
  config.batch_requests = absl::GetFlag(FLAGS_log_batch_requests);
  config.compress = absl::GetFlag(FLAGS_log_compress);
  if (absl::GetFlag(FLAGS_log_linger_us) < 0) {
    return absl::InvalidArgumentError("--log_linger_us must be >= 0");
  }
  config.linger = absl::Microseconds(absl::GetFlag(FLAGS_log_linger_us));
  config.cpu_sample_every = (absl::GetFlag(FLAGS_phase_cpu_sample_every) + 3) / 4;
  config.writer_nice = absl::GetFlag(FLAGS_log_writer_nice);
  ASSIGN_OR_RETURN(config.writer_cpus,
                   CpuListFlag("log_writer_cpus", absl::GetFlag(FLAGS_log_writer_cpus)));
  return config;
}

#ifdef RANKWIRE_JEMALLOC_CONF
// What jemalloc was told (server/jemalloc_conf.cc), and a warning if arena
// 0 kept its purge of large freed extents or the background threads did
// not start (`background_error`, StartJemallocBackgroundThreads's result).
void LogJemallocOptions(int background_error) {
  const char* env = std::getenv("MALLOC_CONF");
  spdlog::info("jemalloc options={} background_thread={} MALLOC_CONF={}", JemallocOptions(),
               JemallocBackgroundThreadsOn(), env ? env : "(unset)");
  if (const int error = JemallocArenaZeroStatus(); error != 0) {
    spdlog::warn(
        "jemalloc: arena.0.oversize_threshold not set (error {}): freed buffers of 8 MiB "
        "or more on arena 0 go back to the kernel at once",
        error);
  }
  if (background_error != 0) {
    spdlog::warn(
        "jemalloc: background threads not started (error {}): an idle server keeps the "
        "memory of its last large results",
        background_error);
  }
}
#endif

// Blocks SIGTERM/SIGINT (shutdown) and SIGHUP (reload the models) in every
// thread (call before any thread starts), so the main thread can wait for
// them with sigwait().
sigset_t BlockServerSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// Codecs, model, logs and the input contract from their flags.
absl::Status WorkFromFlags(ServerOptions* o) {
  ASSIGN_OR_RETURN(o->codecs, BuiltinCodecOptionsFromFlags());
  o->default_codec = absl::GetFlag(FLAGS_codec);
  ASSIGN_OR_RETURN(o->log_mode, ServerLogMode(absl::GetFlag(FLAGS_log_mode)));
  if (o->log_mode == rank::v1::LOG_MODE_NONE) {
    o->log_store.reset();
  } else {
    ASSIGN_OR_RETURN(o->log_store, LogStoreConfigFromFlags());
  }
  o->limits.max_candidates = absl::GetFlag(FLAGS_max_candidates);
  if (o->limits.max_candidates == 0) {
    return absl::InvalidArgumentError("--max_candidates must be at least 1");
  }
  ASSIGN_OR_RETURN(o->unknown_features,
                   ParseUnknownFeatures(absl::GetFlag(FLAGS_unknown_features)));
  o->model_fail_fast = absl::GetFlag(FLAGS_model_fail_fast);
  absl::StatusOr<std::string> model_path =
      ResolveModelPath(absl::GetFlag(FLAGS_model), ExecutablePath());
  if (!model_path.ok() && o->model_fail_fast) return model_path.status();
  if (!model_path.ok()) {
    // Not there yet (an optional ConfigMap, a volume still being filled):
    // the reloader looks for it where it was named, as for a broken model.
    spdlog::error("--model: {}; looking for {} until it appears",
                  std::string(model_path.status().message()), absl::GetFlag(FLAGS_model));
    model_path = absl::GetFlag(FLAGS_model);
  }
  o->model_path = *std::move(model_path);
  o->model_poll_interval = absl::GetFlag(FLAGS_model_poll_interval);
  if (o->model_poll_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--model_poll_interval must be >= 0");
  }
  o->model_admin_rpc = absl::GetFlag(FLAGS_model_admin_rpc);
  ASSIGN_OR_RETURN(o->model_load, ModelLoadOptionsFromFlags());
  o->limits.max_explain_items = o->model_load.explain.max_explain_items;
  return MessageLimitsFromFlags(o);
}

// Ports, TLS, drain and the rest of the server's edges.
absl::Status EdgesFromFlags(ServerOptions* o) {
  o->address = absl::GetFlag(FLAGS_address);
  o->port = absl::GetFlag(FLAGS_port);
  o->reuse_port = absl::GetFlag(FLAGS_reuse_port);
  o->tls = ServerTlsFiles{absl::GetFlag(FLAGS_tls_cert_file), absl::GetFlag(FLAGS_tls_key_file),
                          absl::GetFlag(FLAGS_tls_client_ca_file)};
  o->health_port = absl::GetFlag(FLAGS_health_port);
  o->metrics_port = absl::GetFlag(FLAGS_metrics_port);
  o->metrics_address = absl::GetFlag(FLAGS_metrics_address);
  o->max_connection_age = absl::Milliseconds(absl::GetFlag(FLAGS_max_connection_age_ms));
  ASSIGN_OR_RETURN(o->transport_args,
                   rpc::ParseTransportArgs(absl::GetFlag(FLAGS_grpc_transport_args)));
  o->phase_cpu_sample_every = absl::GetFlag(FLAGS_phase_cpu_sample_every);
  o->drain = absl::Milliseconds(absl::GetFlag(FLAGS_drain_ms));
  o->shutdown_grace = absl::Milliseconds(absl::GetFlag(FLAGS_shutdown_grace_ms));
  o->log_flush = absl::Milliseconds(absl::GetFlag(FLAGS_log_flush_ms));
  return absl::OkStatus();
}

// What must happen before any thread exists: every thread inherits the
// short slice (ranking workers and log writers set theirs back), and the
// main thread moves off --rank_worker_cpus (the CPUs counted for the
// ranking defaults are taken before it moves). Fills the options' CPUs.
absl::Status PlaceProcess(ServerOptions* o) {
  if (const int slice_us = absl::GetFlag(FLAGS_latency_slice_us); slice_us > 0) {
    if (absl::Status s = SetThreadSlice(absl::Microseconds(slice_us)); !s.ok()) {
      spdlog::info("--latency_slice_us not applied (Linux >= 6.12 needed): {}", s.ToString());
    }
  } else if (slice_us < 0) {
    return absl::InvalidArgumentError("--latency_slice_us must be >= 0");
  }
  // Defaults count these (base/cpu_budget.h); the line says which limit set them.
  const CpuBudget cpus = ReadCpuBudget();
  spdlog::info("usable cpus={}", cpus.Describe());
  const int usable_cpus = cpus.cpus;
  ASSIGN_OR_RETURN(o->rank_worker_cpus, SetAsideRankCpus());
  o->ranking_cpus =
      o->rank_worker_cpus.empty() ? usable_cpus : static_cast<int>(o->rank_worker_cpus.size());
  return absl::OkStatus();
}

absl::Status Run() {
  const sigset_t signals = BlockServerSignals();
  InstallProtobufLogHandler();
  ServerOptions options;
  RETURN_IF_ERROR(PlaceProcess(&options));
#ifdef RANKWIRE_JEMALLOC_CONF
  // Now that the slice and CPUs above are set: jemalloc's threads inherit them.
  const int jemalloc_background_error = StartJemallocBackgroundThreads();
#endif
  WarnIgnoredLogNumberFlags();
  RETURN_IF_ERROR(WorkFromFlags(&options));
  RETURN_IF_ERROR(AdmissionFromFlags(&options));
  RETURN_IF_ERROR(EdgesFromFlags(&options));
#ifdef RANKWIRE_JEMALLOC_CONF
  options.register_metrics = [](MetricsRegistry* registry) {
    ExportMallocStats(registry, JemallocStats);
  };
#endif
  ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Start(options));
  // Scripts and tests read the ports from this line.
  spdlog::info(
      "rankwire-server listening port={} metrics_port={} codec={} log_mode={} logstore={} "
      "model={} health_port={} tls={} max_concurrent_rank={} rank_workers={} "
      "max_request_bytes={} max_inline_rank={}",
      server->port(), server->metrics_port(), options.default_codec, absl::GetFlag(FLAGS_log_mode),
      absl::GetFlag(FLAGS_logstore), server->model_version(), server->health_port(),
      !UsesTls(options.tls)                ? "off"
      : options.tls.client_ca_file.empty() ? "tls"
                                           : "mutual",
      server->max_concurrent_rank(), server->rank_workers(), server->max_request_bytes(),
      server->max_inline_rank());
  // The allocator linked in (server/malloc.cmake); benchmarks compare builds by it.
  spdlog::info(
      "allocator={} rank_worker_cpus={}", RANKWIRE_MALLOC_NAME,
      options.rank_worker_cpus.empty() ? "any" : absl::StrJoin(options.rank_worker_cpus, ","));
#ifdef RANKWIRE_JEMALLOC_CONF
  LogJemallocOptions(jemalloc_background_error);
#endif
  int signal_number = 0;
  while (sigwait(&signals, &signal_number) == 0 && signal_number == SIGHUP) {
    spdlog::info("SIGHUP: reloading the models from {}", options.model_path);
    server->RequestModelReload("SIGHUP");
  }
  spdlog::info("signal {}: draining (drain {} ms, grace {} ms)", signal_number,
               absl::GetFlag(FLAGS_drain_ms), absl::GetFlag(FLAGS_shutdown_grace_ms));
  // How long each part took, so a slow exit says where it waited.
  const absl::Time signalled = absl::Now();
  server->Stop();
  const absl::Time drained = absl::Now();
  server.reset();
  spdlog::info(
      "rankwire-server stopped {} ms after the signal (drain, calls and log flush {} ms, "
      "teardown {} ms)",
      absl::ToInt64Milliseconds(absl::Now() - signalled),
      absl::ToInt64Milliseconds(drained - signalled),
      absl::ToInt64Milliseconds(absl::Now() - drained));
  return absl::OkStatus();
}

}  // namespace
}  // namespace rankwire

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv,
                       "rankwire ranking server. Example:\n"
                       "  rankwire-server --port=50051 --codec=rankbin --logstore=redis "
                       "--redis_addr=127.0.0.1:6379\n"
                       "  rankwire-server --flagfile=deploy/flags/local.flags");
  absl::Status status = rankwire::Run();
  if (!status.ok()) {
    spdlog::critical("rankwire-server: {}", status.ToString());
    return 1;
  }
  return 0;
}
