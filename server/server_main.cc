// rankwire-server: the ranking service. Flags (also from --flagfile) are
// listed in README.md; `rankwire-server --help` prints them.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/flags.h"
#include "base/status_macros.h"
#include "base/thread_sched.h"
#include "codec/builtin_codecs.h"
#include "logstore/log_number.h"
#include "logstore/log_store.h"
#include "server/linear_model.h"
#include "server/admission.h"
#include "server/metrics_http.h"
#include "server/model_path.h"
#include "server/protobuf_log.h"
#include "server/rank_handler.h"
#include "server/rank_service.h"
#include "server/ranker.h"
#include "server/server_metrics.h"
#include "server/tls.h"
#include "server/worker_pool.h"
#include "spdlog/spdlog.h"
#include "workload/workload.h"
#ifdef RANKWIRE_JEMALLOC_CONF
#include "server/jemalloc_conf.h"
#endif

ABSL_FLAG(std::string, address, "0.0.0.0", "Address to listen on.");
ABSL_FLAG(int, port, 50051, "gRPC port (0 picks a free port and logs it).");
ABSL_FLAG(std::string, codec, "protobuf",
          absl::StrCat("Default response codec, one of: ", rankwire::BuiltinCodecNames(),
                       ". A request may ask for another it accepts."));
ABSL_FLAG(std::string, model, "server/models/ecom_search_lr.model",
          "Ranking model file. A relative path is tried in the working directory, then "
          "by file name in models/ next to the binary, then in ../share/rankwire/models/ "
          "(an installed server).");
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
ABSL_FLAG(std::string, log_format, "blocks",
          "How stored logs are kept: blocks (the values, typed, in blocks of items by "
          "position; rendered to the same text on read; \"record\" is accepted as its older "
          "name) or text ('T' values per item, 'Z' with --log_compress).");
ABSL_FLAG(uint32_t, log_block_items, 16,
          "Items per stored log block after the first, which holds the request's top_n "
          "items (fetching those reads one block).");
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
          "How the log writers code numbers: auto (eight at a time with AVX-512 where the CPU "
          "has it, else four at a time with AVX2, else one at a time), avx2 (never AVX-512: "
          "for CPUs that slow their clock for 512-bit work) or scalar. Every way writes the "
          "same bytes.");
ABSL_FLAG(bool, log_number_avx512, true,
          "Deprecated (kept so existing flagfiles start): false is --log_numbers=avx2.");
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
ABSL_FLAG(int, max_connection_age_ms, 0,
          "Close each client connection (with GOAWAY, after its calls finish) this "
          "long after it opened, so clients re-resolve DNS and spread over replicas "
          "added since (0: never).");
ABSL_FLAG(uint32_t, rankbin_block_items, 16,
          "rankbin: items per block, the unit of lazy decompression.");
ABSL_FLAG(int, zstd_level, 1, "rankbin-zstd: zstd level (negative: fast modes).");
ABSL_FLAG(bool, zstd_values, false,
          "rankbin-zstd: also try to compress metric value blocks (they rarely shrink).");
ABSL_FLAG(bool, zstd_string_values, true,
          "rankbin-zstd: compress metric-value blocks made mostly of long plain strings "
          "(kept per block only where that saves 10 %).");
ABSL_FLAG(bool, zstd_logs, true, "rankbin-zstd: compress inline log blocks.");
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

namespace rankwire::server {
namespace {

// "rank.v1.RankService", the health service name clients watch.
const char* const kRankServiceName = rank::v1::RankService::service_full_name();

// The server's default log mode: any named mode but "default", which only
// a request can say (it means "the server's").
absl::StatusOr<rank::v1::LogMode> ServerLogMode(const std::string& mode) {
  absl::StatusOr<rank::v1::LogMode> parsed = workload::ParseLogMode(mode);
  if (!parsed.ok() || *parsed == rank::v1::LOG_MODE_DEFAULT) {
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

absl::StatusOr<int> RankWorkersFromFlags(const AdmissionOptions& admission, int ranking_cpus) {
  const int workers = absl::GetFlag(FLAGS_rank_workers);
  if (workers < 0) return absl::InvalidArgumentError("--rank_workers must be >= 0");
  if (workers == 0) return DefaultRankWorkers(admission.max_concurrent_rank, ranking_cpus);
  if (workers > admission.max_concurrent_rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rank_workers=", workers, " exceeds --max_concurrent_rank (",
        admission.max_concurrent_rank, "): workers past the admitted calls would never run"));
  }
  return workers;
}

// --max_message_bytes and --max_request_bytes, checked; the request bound
// resolved from `limits` when 0.
struct MessageLimits {
  int max_response_bytes = 0;
  int max_request_bytes = 0;
};
absl::StatusOr<MessageLimits> MessageLimitsFromFlags(const RequestLimits& limits) {
  MessageLimits m{absl::GetFlag(FLAGS_max_message_bytes), absl::GetFlag(FLAGS_max_request_bytes)};
  if (m.max_response_bytes < (1 << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_message_bytes=", m.max_response_bytes, " is below 1 MiB (1048576)"));
  }
  if (m.max_request_bytes < 0 || (m.max_request_bytes > 0 && m.max_request_bytes < 4096)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_request_bytes=", m.max_request_bytes, " must be 0 (derived) or at least 4096"));
  }
  if (m.max_request_bytes == 0) {
    // One receive limit for every method: FetchLogs requests must fit too.
    const size_t bound = std::max(MaxRequestBytes(limits), MaxFetchLogsRequestBytes(limits));
    m.max_request_bytes =
        static_cast<int>(std::min<size_t>(bound, std::numeric_limits<int>::max()));
  }
  return m;
}

absl::StatusOr<AdmissionOptions> AdmissionOptionsFromFlags(int ranking_cpus) {
  AdmissionOptions options;
  const int max_concurrent = absl::GetFlag(FLAGS_max_concurrent_rank);
  if (max_concurrent < 0) return absl::InvalidArgumentError("--max_concurrent_rank must be >= 0");
  options.max_concurrent_rank =
      max_concurrent == 0 ? DefaultMaxConcurrentRank(ranking_cpus) : max_concurrent;
  options.max_unsent_bytes = size_t{absl::GetFlag(FLAGS_max_unsent_response_mb)} << 20;
  options.max_unsent_bytes_per_peer = size_t{absl::GetFlag(FLAGS_max_unsent_response_mb_per_peer)}
                                      << 20;
  if (options.max_unsent_bytes == 0 || options.max_unsent_bytes_per_peer == 0) {
    return absl::InvalidArgumentError("--max_unsent_response_mb* must be at least 1");
  }
  return options;
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

// --log_numbers (and the deprecated --log_number_avx512), applied
// process-wide: how the log writers code numbers (logstore/log_number.h).
absl::Status ApplyLogNumbersFlag() {
  absl::StatusOr<logstore::LogNumberPath> number_path =
      logstore::ParseLogNumberPath(absl::GetFlag(FLAGS_log_numbers));
  if (!number_path.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_numbers: ", number_path.status().message()));
  }
  if (!absl::GetFlag(FLAGS_log_number_avx512)) {
    spdlog::warn("--log_number_avx512=false is deprecated: use --log_numbers=avx2");
    if (*number_path == logstore::LogNumberPath::kAvx512) {
      number_path = logstore::LogNumberPath::kAvx2;
    }
  }
  logstore::LimitLogNumberPath(*number_path);
  return absl::OkStatus();
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
  if (format == "blocks" || format == "record") {
    config.format = logstore::LogStoreConfig::Format::kBlocks;
  } else if (format == "text") {
    config.format = logstore::LogStoreConfig::Format::kText;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--log_format=", format, ": expected blocks or text"));
  }
  config.writers = absl::GetFlag(FLAGS_log_writers);
  config.block_items = absl::GetFlag(FLAGS_log_block_items);
  if (config.block_items == 0) return absl::InvalidArgumentError("--log_block_items must be >= 1");
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

void ExportLogStats(MetricsRegistry* registry, const logstore::LogConsumer* consumer) {
  auto stat = [consumer](auto field) {
    return [consumer, field]() { return static_cast<double>(consumer->stats().*field); };
  };
  using S = logstore::LogStats;
  constexpr absl::string_view kItems = "rankwire_log_items_total";
  constexpr absl::string_view kItemsHelp = "Per-item log lines by outcome.";
  registry->AddGauge(kItems, kItemsHelp, stat(&S::items_enqueued), "outcome=\"enqueued\"");
  registry->AddGauge(kItems, kItemsHelp, stat(&S::items_stored), "outcome=\"stored\"");
  registry->AddGauge(kItems, kItemsHelp, stat(&S::items_dropped_queue_full),
                     "outcome=\"dropped_queue_full\"");
  registry->AddGauge(kItems, kItemsHelp, stat(&S::items_dropped_store_error),
                     "outcome=\"dropped_store_error\"");
  registry->AddGauge(kItems, kItemsHelp, stat(&S::items_dropped_shutdown),
                     "outcome=\"dropped_shutdown\"");
  registry->AddGauge("rankwire_log_bytes_stored_total", "Log value bytes written to the store.",
                     stat(&S::bytes_stored));
  registry->AddGauge("rankwire_log_queue_requests", "Requests waiting in the log queue.",
                     stat(&S::queue_requests));
  registry->AddGauge("rankwire_log_queue_bytes", "Log bytes waiting in the log queue.",
                     stat(&S::queue_bytes));
  registry->AddGauge("rankwire_log_store_reconnects_total", "Reconnects to the log store.",
                     stat(&S::reconnects));
  // The log writers' share of the phase CPU series (ServerMetrics has the
  // ranking thread's).
  for (const auto& [phase, field] :
       {std::pair<const char*, uint64_t S::*>{"log_format", &S::format_cpu_ns},
        std::pair<const char*, uint64_t S::*>{"log_store", &S::store_cpu_ns}}) {
    const std::string label = absl::StrCat("phase=\"", phase, "\"");
    registry->AddGauge("rankwire_phase_cpu_sample_nanoseconds_total",
                       "Thread CPU time of the sampled calls in each phase.", stat(field), label);
    registry->AddGauge("rankwire_phase_cpu_samples_total",
                       "Calls whose CPU time was sampled, per phase.",
                       stat(&S::cpu_sampled_requests), label);
  }
  registry->AddGauge("rankwire_log_store_up",
                     "1 if the last write to the log store succeeded (on every master, for a "
                     "Redis Cluster).",
                     [consumer]() { return consumer->stats().store_up ? 1.0 : 0.0; });
}

// Takes gRPC reflection off one server builder: the plaintext health
// port's, which bypasses mutual TLS. (The reflection plugin registers itself
// for every builder in the process; only the main port should describe the
// services.)
class NoReflectionOption final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const std::unique_ptr<grpc::ServerBuilderPlugin>& p) {
                                    return p->name() == "proto_server_reflection";
                                  }),
                   plugins->end());
  }
};

// Every method the health port does not serve: UNIMPLEMENTED. (Also what
// lets that server start without the reflection plugin: gRPC wants one
// service of its own API registered before the default health service is.)
class UnimplementedMethods final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Refusal final : public grpc::ServerGenericBidiReactor {
     public:
      Refusal() {
        Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                            "this port serves grpc.health.v1.Health only"));
      }
      void OnDone() override { delete this; }
    };
    return new Refusal();
  }
};

// A plaintext gRPC server with only the health service: kubelet's gRPC
// probes cannot speak TLS, so with TLS on the main port they use this one.
// It serves no Rank, LogService or reflection methods.
struct HealthServer {
  std::unique_ptr<UnimplementedMethods> unimplemented;  // Outlives `server`.
  std::unique_ptr<grpc::Server> server;                 // Null when disabled.
  int port = -1;
};

absl::StatusOr<HealthServer> StartHealthServer(const std::string& address, int port) {
  HealthServer health;
  if (port < 0) return health;
  grpc::ServerBuilder builder;
  builder.SetOption(std::make_unique<NoReflectionOption>());
  health.unimplemented = std::make_unique<UnimplementedMethods>();
  builder.RegisterCallbackGenericService(health.unimplemented.get());
  const std::string listen = absl::StrCat(address, ":", port);
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &health.port);
  health.server = builder.BuildAndStart();
  if (health.server == nullptr || health.port == 0) {
    return absl::UnavailableError(absl::StrCat("--health_port: cannot listen on ", listen));
  }
  return health;
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
    spdlog::warn("jemalloc: arena.0.oversize_threshold not set (error {}): freed buffers of 8 MiB "
                 "or more on arena 0 go back to the kernel at once",
                 error);
  }
  if (background_error != 0) {
    spdlog::warn("jemalloc: background threads not started (error {}): an idle server keeps the "
                 "memory of its last large results",
                 background_error);
  }
}
#endif

// Blocks SIGTERM/SIGINT in every thread (call before any thread starts), so
// the main thread can wait for them with sigwait().
sigset_t BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

absl::Status Run() {
  const sigset_t signals = BlockShutdownSignals();
  InstallProtobufLogHandler();
  // Before any thread exists: every thread inherits the short slice; the
  // ranking workers and log writers set theirs back to the default.
  if (const int slice_us = absl::GetFlag(FLAGS_latency_slice_us); slice_us > 0) {
    if (absl::Status s = SetThreadSlice(absl::Microseconds(slice_us)); !s.ok()) {
      spdlog::info("--latency_slice_us not applied (Linux >= 6.12 needed): {}", s.ToString());
    }
  } else if (slice_us < 0) {
    return absl::InvalidArgumentError("--latency_slice_us must be >= 0");
  }
  // Also before any thread exists (SetAsideRankCpus); the CPUs counted for
  // the ranking defaults are taken before the main thread moves.
  const int usable_cpus = UsableCpus();
  ASSIGN_OR_RETURN(const std::vector<int> rank_cpus, SetAsideRankCpus());
#ifdef RANKWIRE_JEMALLOC_CONF
  // Now that the slice and CPUs above are set: jemalloc's threads inherit them.
  const int jemalloc_background_error = StartJemallocBackgroundThreads();
#endif
  const int ranking_cpus = rank_cpus.empty() ? usable_cpus : static_cast<int>(rank_cpus.size());
  RETURN_IF_ERROR(ApplyLogNumbersFlag());

  BuiltinCodecOptions codec_options;
  codec_options.writer.block_items = absl::GetFlag(FLAGS_rankbin_block_items);
  codec_options.writer.zstd_level = absl::GetFlag(FLAGS_zstd_level);
  codec_options.writer.compress_values = absl::GetFlag(FLAGS_zstd_values);
  codec_options.writer.compress_logs = absl::GetFlag(FLAGS_zstd_logs);
  codec_options.writer.compress_string_values = absl::GetFlag(FLAGS_zstd_string_values);
  if (codec_options.writer.block_items == 0) {
    return absl::InvalidArgumentError("--rankbin_block_items must be at least 1");
  }
  ASSIGN_OR_RETURN(CodecRegistry codecs, MakeBuiltinCodecs(codec_options));
  absl::StatusOr<const Codec*> default_codec = codecs.Get(absl::GetFlag(FLAGS_codec));
  if (!default_codec.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--codec: ", default_codec.status().message()));
  }
  ASSIGN_OR_RETURN(rank::v1::LogMode log_mode, ServerLogMode(absl::GetFlag(FLAGS_log_mode)));
  if (absl::GetFlag(FLAGS_max_candidates) == 0) {
    return absl::InvalidArgumentError("--max_candidates must be at least 1");
  }

  ASSIGN_OR_RETURN(std::string model_path,
                   ResolveModelPath(absl::GetFlag(FLAGS_model), ExecutablePath()));
  ASSIGN_OR_RETURN(LinearModel model, LinearModel::LoadFile(model_path));
  Ranker ranker(&model);

  MetricsRegistry registry;
  ServerMetrics metrics(&registry, codecs.Names());
  metrics.cpu_sample_every = absl::GetFlag(FLAGS_phase_cpu_sample_every);
  ExportServerInfo(&registry, {{"default_codec", std::string((*default_codec)->name())},
                               {"log_mode", absl::GetFlag(FLAGS_log_mode)},
                               {"logstore", absl::GetFlag(FLAGS_logstore)},
                               {"model_version", model.full_version()}});

  logstore::LogStore store;
  if (log_mode != rank::v1::LOG_MODE_NONE) {
    ASSIGN_OR_RETURN(logstore::LogStoreConfig config, LogStoreConfigFromFlags());
    ASSIGN_OR_RETURN(logstore::LogStore opened, logstore::OpenLogStore(config));
    store = std::move(opened);
    ExportLogStats(&registry, store.consumer.get());
  }

  ASSIGN_OR_RETURN(UnknownFeaturePolicy unknown_features,
                   ParseUnknownFeatures(absl::GetFlag(FLAGS_unknown_features)));
  ASSIGN_OR_RETURN(AdmissionOptions admission_options, AdmissionOptionsFromFlags(ranking_cpus));
  ASSIGN_OR_RETURN(const int rank_workers,
                   RankWorkersFromFlags(admission_options, ranking_cpus));
  const ServerTlsFiles tls{absl::GetFlag(FLAGS_tls_cert_file), absl::GetFlag(FLAGS_tls_key_file),
                           absl::GetFlag(FLAGS_tls_client_ca_file)};
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   MakeServerCredentials(tls));

  RankHandlerOptions options;
  options.limits.max_candidates = absl::GetFlag(FLAGS_max_candidates);
  ASSIGN_OR_RETURN(const MessageLimits message_limits, MessageLimitsFromFlags(options.limits));
  options.default_codec = *default_codec;
  options.default_log_mode = log_mode;
  options.unknown_features = unknown_features;
  options.max_response_bytes = static_cast<size_t>(message_limits.max_response_bytes);
  options.rankbin_block_items = codec_options.writer.block_items;
  RankHandler handler(&ranker, &codecs, store.consumer.get(), &metrics, options);
  AdmissionControl admission(admission_options);
  registry.AddGauge("rankwire_unsent_response_bytes",
                    "Response bytes handed to gRPC that clients have not read yet.",
                    [&admission] { return static_cast<double>(admission.unsent_bytes()); });
  registry.AddGauge("rankwire_rank_admitted",
                    "Rank calls admitted and not finished: in work on a ranking worker "
                    "(rankwire_rank_rpcs_in_flight) or queued for one.",
                    [&admission] { return static_cast<double>(admission.in_use()); });
  // Inline ranking would run outside --rank_worker_cpus and without
  // --rank_worker_nice: with either, every call goes to the workers.
  const int max_inline_rank =
      absl::GetFlag(FLAGS_rank_inline) && rank_cpus.empty() &&
              absl::GetFlag(FLAGS_rank_worker_nice) == 0
          ? DefaultMaxInlineRank(rank_workers, static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)))
          : 0;
  WorkerPool workers(rank_workers,
                     WorkerPool::Placement{"rankwire-rank", absl::GetFlag(FLAGS_rank_worker_nice),
                                           true, rank_cpus, max_inline_rank});
  RankServiceImpl rank_service(&handler, &metrics, &admission, &workers);
  const int max_fetch = absl::GetFlag(FLAGS_max_concurrent_fetch_logs);
  if (max_fetch < 1) {
    return absl::InvalidArgumentError("--max_concurrent_fetch_logs must be at least 1");
  }
  WorkerPool fetch_workers(max_fetch, WorkerPool::Placement{"rankwire-fetch", 0, false, {}});
  LogServiceImpl log_service(store.reader.get(), &metrics, &admission, &fetch_workers, max_fetch);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int bound_port = 0;
  const std::string listen =
      absl::StrCat(absl::GetFlag(FLAGS_address), ":", absl::GetFlag(FLAGS_port));
  builder.AddListeningPort(listen, credentials, &bound_port);
  builder.SetMaxReceiveMessageSize(message_limits.max_request_bytes);
  builder.SetMaxSendMessageSize(message_limits.max_response_bytes);
  builder.RegisterService(&rank_service);
  builder.RegisterService(&log_service);
  if (int age_ms = absl::GetFlag(FLAGS_max_connection_age_ms); age_ms > 0) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, age_ms);
    // Calls still running when the age is reached get this long to finish.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               absl::GetFlag(FLAGS_shutdown_grace_ms));
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", listen));
  }
  ASSIGN_OR_RETURN(HealthServer health,
                   StartHealthServer(absl::GetFlag(FLAGS_address), absl::GetFlag(FLAGS_health_port)));
  // Health per service as well as for the server (""), on the main port and
  // the plaintext health port: clients' health checking
  // (client/rank_client.h) watches rank.v1.RankService; kubelet probes ask "".
  auto set_serving = [&](bool serving) {
    for (grpc::Server* s : {server.get(), health.server.get()}) {
      if (s == nullptr) continue;
      s->GetHealthCheckService()->SetServingStatus(serving);
      s->GetHealthCheckService()->SetServingStatus(kRankServiceName, serving);
    }
    metrics.serving.store(serving);
  };
  set_serving(true);

  std::unique_ptr<MetricsHttpServer> http;
  if (int metrics_port = absl::GetFlag(FLAGS_metrics_port); metrics_port >= 0) {
    ASSIGN_OR_RETURN(std::unique_ptr<MetricsHttpServer> started,
        MetricsHttpServer::Start(absl::GetFlag(FLAGS_metrics_address).empty()
                                     ? absl::GetFlag(FLAGS_address)
                                     : absl::GetFlag(FLAGS_metrics_address),
                                 metrics_port, &registry));
    http = std::move(started);
  }
  // Scripts and tests read the ports from this line.
  spdlog::info("rankwire-server listening port={} metrics_port={} codec={} log_mode={} logstore={} "
               "model={} health_port={} tls={} max_concurrent_rank={} rank_workers={} "
               "max_request_bytes={} max_inline_rank={}",
               bound_port, http ? http->port() : -1, std::string((*default_codec)->name()),
               absl::GetFlag(FLAGS_log_mode), absl::GetFlag(FLAGS_logstore),
               model.full_version(), health.port,
               !UsesTls(tls) ? "off" : tls.client_ca_file.empty() ? "tls" : "mutual",
               admission_options.max_concurrent_rank, rank_workers,
               message_limits.max_request_bytes, max_inline_rank);
  // The allocator linked in (server/malloc.cmake); benchmarks compare builds by it.
  spdlog::info("allocator={} log_numbers={} rank_worker_cpus={}", RANKWIRE_MALLOC_NAME,
               logstore::LogNumberPathName(logstore::ActiveLogNumberPath()),
               rank_cpus.empty() ? "any" : absl::StrJoin(rank_cpus, ","));
#ifdef RANKWIRE_JEMALLOC_CONF
  LogJemallocOptions(jemalloc_background_error);
#endif

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("signal {}: draining (drain {} ms, grace {} ms)", signal_number,
               absl::GetFlag(FLAGS_drain_ms), absl::GetFlag(FLAGS_shutdown_grace_ms));
  // Both "" and rank.v1.RankService: clients that watch health stop sending
  // new calls here while the calls already sent finish.
  set_serving(false);
  absl::SleepFor(absl::Milliseconds(absl::GetFlag(FLAGS_drain_ms)));
  server->Shutdown(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(absl::GetFlag(FLAGS_shutdown_grace_ms)));
  server->Wait();
  if (health.server) health.server->Shutdown();
  if (store.consumer) {
    store.consumer->Shutdown(absl::Milliseconds(absl::GetFlag(FLAGS_log_flush_ms)));
    logstore::LogStats s = store.consumer->stats();
    spdlog::info("log store flushed: stored={} dropped(queue_full={} store_error={} shutdown={})",
                 s.items_stored, s.items_dropped_queue_full, s.items_dropped_store_error,
                 s.items_dropped_shutdown);
  }
  spdlog::info("rankwire-server stopped");
  return absl::OkStatus();
}

}  // namespace
}  // namespace rankwire::server

int main(int argc, char** argv) {
  rankwire::ParseFlags(argc, argv,
                       "rankwire ranking server. Example:\n"
                       "  rankwire-server --port=50051 --codec=rankbin --logstore=redis "
                       "--redis_addr=127.0.0.1:6379\n"
                       "  rankwire-server --flagfile=deploy/flags/local.flags");
  absl::Status status = rankwire::server::Run();
  if (!status.ok()) {
    spdlog::critical("rankwire-server: {}", status.ToString());
    return 1;
  }
  return 0;
}
