#include "server/server.h"

#include "request/log_mode.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "metrics/metrics_http.h"
#include "metrics/server_metrics.h"
#include "ranking/ranker.h"
#include "server/model_service.h"
#include "server/rank_service.h"
#include "server/worker_pool.h"
#include "spdlog/spdlog.h"

namespace rankwire {
namespace {

// "rank.v1.RankService", the health service name clients watch.
const char* const kRankServiceName = rank::v1::RankService::service_full_name();

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

std::string BackendName(logstore::LogStoreConfig::Backend backend) {
  switch (backend) {
    case logstore::LogStoreConfig::Backend::kRedis:
      return "redis";
    case logstore::LogStoreConfig::Backend::kRedisCluster:
      return "redis-cluster";
    default:
      return "memory";
  }
}

}  // namespace

// Everything a server holds, in the order it is built (and torn down in
// reverse: the gRPC servers go before what their services use).
struct Server::State {
  ServerOptions options;
  CodecRegistry codecs;
  const Codec* default_codec = nullptr;
  MetricsRegistry registry;
  std::unique_ptr<ModelReloader> models;
  std::unique_ptr<ServerMetrics> metrics;
  logstore::LogStore store;
  std::unique_ptr<RankHandler> handler;
  std::unique_ptr<AdmissionControl> admission;
  std::unique_ptr<WorkerPool> workers;
  std::unique_ptr<WorkerPool> fetch_workers;
  std::unique_ptr<RankServiceImpl> rank_service;
  std::unique_ptr<LogServiceImpl> log_service;
  std::unique_ptr<ModelServiceImpl> model_service;        // Main port: no reload.
  std::unique_ptr<ModelServiceImpl> model_admin_service;  // Health port.
  std::unique_ptr<UnimplementedMethods> unimplemented;
  std::unique_ptr<grpc::Server> grpc_server;
  std::unique_ptr<grpc::Server> health_server;
  std::unique_ptr<MetricsHttpServer> http;
  int port = 0;
  int health_port = -1;
  int max_inline_rank = 0;
  bool stopped = false;
  // Health: SERVING while a model serves and no drain has started.
  absl::Mutex health_mu;
  bool health_started ABSL_GUARDED_BY(health_mu) = false;  // The gRPC servers exist.
  bool draining ABSL_GUARDED_BY(health_mu) = false;

  absl::Status Build();
  absl::Status BuildAdmission();
  absl::Status StartGrpc();
  absl::Status StartHealthPort();
  void SetServing(bool serving) ABSL_EXCLUSIVE_LOCKS_REQUIRED(health_mu);
  // Once the gRPC servers exist: health from whether a model serves.
  void StartHealth();
  // A model serves where none did (the reloader's thread).
  void OnFirstModel();
  void StartDrain();
};

absl::Status Server::State::Build() {
  const ServerOptions& o = options;
  if (!o.make_codecs) {
    return absl::InvalidArgumentError("codecs: ServerOptions::make_codecs is empty");
  }
  ASSIGN_OR_RETURN(codecs, o.make_codecs(o.codecs));
  absl::StatusOr<const Codec*> found = codecs.Get(o.default_codec);
  if (!found.ok())
    return absl::InvalidArgumentError(absl::StrCat("codec: ", found.status().message()));
  default_codec = *found;
  ModelReloadOptions reload;
  reload.source = o.model_path;
  reload.load = o.model_load;
  reload.limits = o.limits;
  reload.poll_interval = o.model_poll_interval;
  reload.fail_fast = o.model_fail_fast;
  reload.on_first_model = [this] { OnFirstModel(); };
  ASSIGN_OR_RETURN(models, ModelReloader::Start(std::move(reload), &registry));
  metrics = std::make_unique<ServerMetrics>(&registry, codecs.Names());
  metrics->cpu_sample_every = o.phase_cpu_sample_every;
  if (o.register_metrics) o.register_metrics(&registry);
  if (o.log_mode != rank::v1::LOG_MODE_NONE && o.log_store.has_value()) {
    ASSIGN_OR_RETURN(store, logstore::OpenLogStore(*o.log_store));
    ExportLogPath(&registry, [consumer = store.consumer.get()] { return consumer->stats(); });
  }
  RankHandlerOptions handler_options;
  handler_options.limits = o.limits;
  handler_options.default_codec = default_codec;
  handler_options.default_log_mode = o.log_mode;
  handler_options.unknown_features = o.unknown_features;
  handler_options.max_response_bytes = o.max_response_bytes;
  handler = std::make_unique<RankHandler>(models->serving(), &codecs, store.consumer.get(),
                                          metrics.get(), handler_options);
  return BuildAdmission();
}

absl::Status Server::State::BuildAdmission() {
  ServerOptions& o = options;
  if (o.max_concurrent_rank < 0 || o.rank_workers < 0) {
    return absl::InvalidArgumentError("max_concurrent_rank and rank_workers must be >= 0");
  }
  AdmissionOptions admission_options;
  admission_options.max_concurrent_rank =
      o.max_concurrent_rank == 0 ? DefaultMaxConcurrentRank(o.ranking_cpus) : o.max_concurrent_rank;
  admission_options.max_unsent_bytes = o.max_unsent_bytes;
  admission_options.max_unsent_bytes_per_peer = o.max_unsent_bytes_per_peer;
  if (o.rank_workers > admission_options.max_concurrent_rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank_workers=", o.rank_workers, " exceeds max_concurrent_rank (",
                     admission_options.max_concurrent_rank,
                     "): workers past the admitted calls would never run"));
  }
  const int workers_count =
      o.rank_workers == 0
          ? DefaultRankWorkers(admission_options.max_concurrent_rank, o.ranking_cpus)
          : o.rank_workers;
  o.max_concurrent_rank = admission_options.max_concurrent_rank;
  o.rank_workers = workers_count;
  if (o.max_concurrent_fetch_logs < 1) {
    return absl::InvalidArgumentError("max_concurrent_fetch_logs must be at least 1");
  }
  admission = std::make_unique<AdmissionControl>(admission_options);
  ExportAdmission(
      &registry, [a = admission.get()] { return static_cast<double>(a->unsent_bytes()); },
      [a = admission.get()] { return static_cast<double>(a->in_use()); });
  // Inline ranking would run outside rank_worker_cpus and without
  // rank_worker_nice: with either, every call goes to the workers.
  max_inline_rank =
      o.rank_inline && o.rank_worker_cpus.empty() && o.rank_worker_nice == 0
          ? DefaultMaxInlineRank(workers_count, static_cast<int>(sysconf(_SC_NPROCESSORS_CONF)))
          : 0;
  workers = std::make_unique<WorkerPool>(
      workers_count, WorkerPool::Placement{"rankwire-rank", o.rank_worker_nice, true,
                                           o.rank_worker_cpus, max_inline_rank});
  fetch_workers = std::make_unique<WorkerPool>(
      o.max_concurrent_fetch_logs, WorkerPool::Placement{"rankwire-fetch", 0, false, {}});
  rank_service = std::make_unique<RankServiceImpl>(handler.get(), metrics.get(), admission.get(),
                                                   workers.get());
  log_service = std::make_unique<LogServiceImpl>(store.reader.get(), metrics.get(), admission.get(),
                                                 fetch_workers.get(), o.max_concurrent_fetch_logs);
  return absl::OkStatus();
}

absl::Status Server::State::StartGrpc() {
  const ServerOptions& o = options;
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   MakeServerCredentials(o.tls));
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string listen = absl::StrCat(o.address, ":", o.port);
  builder.AddListeningPort(listen, credentials, &port);
  // gRPC lets a second process bind a port in use (SO_REUSEPORT) and share
  // its calls; off unless asked for, so a port in use fails start-up.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, o.reuse_port ? 1 : 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(o.max_request_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(o.max_response_bytes));
  rpc::ApplyTransportArgs(o.transport_args, &builder);
  builder.RegisterService(rank_service.get());
  builder.RegisterService(log_service.get());
  model_service = std::make_unique<ModelServiceImpl>(
      models.get(), false,
      "ReloadModels is served on the health port only (--health_port, with "
      "--model_admin_rpc); SIGHUP or a changed model file reloads too");
  builder.RegisterService(model_service.get());
  if (o.max_connection_age > absl::ZeroDuration()) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(o.max_connection_age)));
    // Calls still running when the age is reached get this long to finish.
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(o.shutdown_grace)));
  }
  grpc_server = builder.BuildAndStart();
  if (grpc_server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", listen,
        o.reuse_port ? "" : " (is another process using port " + std::to_string(o.port) + "?)"));
  }
  return StartHealthPort();
}

// A plaintext gRPC server with only the health service: kubelet's gRPC
// probes cannot speak TLS, so with TLS on the main port they use this one.
// It serves no Rank, LogService or reflection methods; ModelService (its
// ReloadModels only with --model_admin_rpc).
absl::Status Server::State::StartHealthPort() {
  const ServerOptions& o = options;
  if (o.health_port < 0) return absl::OkStatus();
  grpc::ServerBuilder builder;
  builder.SetOption(std::make_unique<NoReflectionOption>());
  unimplemented = std::make_unique<UnimplementedMethods>();
  builder.RegisterCallbackGenericService(unimplemented.get());
  model_admin_service = std::make_unique<ModelServiceImpl>(
      models.get(), o.model_admin_rpc,
      "this server runs without --model_admin_rpc; SIGHUP or a changed model file reloads");
  builder.RegisterService(model_admin_service.get());
  const std::string listen = absl::StrCat(o.address, ":", o.health_port);
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &health_port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, o.reuse_port ? 1 : 0);
  health_server = builder.BuildAndStart();
  if (health_server == nullptr || health_port == 0) {
    return absl::UnavailableError(absl::StrCat("health port: cannot listen on ", listen));
  }
  return absl::OkStatus();
}

// Health per service as well as for the server (""), on the main port and
// the plaintext health port: clients' health checking (and readiness
// probes) watch rank.v1.RankService, which is SERVING while a model serves
// and no drain has started; "" (liveness probes) is SERVING until a drain
// starts, also with no model yet: a replica waiting for a loadable model is
// alive, and restarting it would not bring one.
void Server::State::SetServing(bool serving) {
  const bool alive = !draining;
  for (grpc::Server* s : {grpc_server.get(), health_server.get()}) {
    if (s == nullptr) continue;
    s->GetHealthCheckService()->SetServingStatus(alive);
    s->GetHealthCheckService()->SetServingStatus(kRankServiceName, serving);
  }
  if (metrics) metrics->serving.store(serving);
}

void Server::State::StartHealth() {
  absl::MutexLock lock(&health_mu);
  health_started = true;
  if (!draining) SetServing(models->Current() != nullptr);
}

void Server::State::OnFirstModel() {
  absl::MutexLock lock(&health_mu);
  // Before StartHealth, the servers and metrics are still being built; it
  // reads the model state itself.
  if (health_started && !draining) SetServing(true);
}

void Server::State::StartDrain() {
  absl::MutexLock lock(&health_mu);
  draining = true;
  SetServing(false);
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  auto state = std::make_unique<State>();
  state->options = options;
  ServerOptions& o = state->options;
  if (o.max_request_bytes == 0) {
    // One receive limit for every method: FetchLogs requests must fit too.
    o.max_request_bytes =
        std::min<size_t>(std::max(MaxRequestBytes(o.limits), MaxFetchLogsRequestBytes(o.limits)),
                         std::numeric_limits<int>::max());
  }
  if (o.max_response_bytes < (size_t{1} << 20) ||
      o.max_response_bytes > size_t{std::numeric_limits<int>::max()} ||
      o.max_request_bytes > size_t{std::numeric_limits<int>::max()}) {
    return absl::InvalidArgumentError("message limits must be 1 MiB .. 2 GiB - 1");
  }
  RETURN_IF_ERROR(state->Build());
  RETURN_IF_ERROR(state->StartGrpc());
  state->StartHealth();
  // Registration is over before the metrics port serves: a scrape reads the
  // registry without a lock (metrics.h), so a family added after the port
  // opened raced with the scrape that rendered it.
  ExportServerInfo(&state->registry,
                   {std::string(state->default_codec->name()), std::string(LogModeName(o.log_mode)),
                    o.log_store.has_value() && o.log_mode != rank::v1::LOG_MODE_NONE
                        ? BackendName(o.log_store->backend)
                        : "none"});
  if (o.metrics_port >= 0) {
    ASSIGN_OR_RETURN(state->http, MetricsHttpServer::Start(
                                      o.metrics_address.empty() ? o.address : o.metrics_address,
                                      o.metrics_port, &state->registry));
  }
  return std::unique_ptr<Server>(new Server(std::move(state)));
}

Server::Server(std::unique_ptr<State> state) : state_(std::move(state)) {}

Server::~Server() { Stop(); }

int Server::port() const { return state_->port; }
int Server::metrics_port() const { return state_->http ? state_->http->port() : -1; }
int Server::health_port() const { return state_->health_port; }
int Server::max_concurrent_rank() const { return state_->options.max_concurrent_rank; }
int Server::rank_workers() const { return state_->options.rank_workers; }
int Server::max_inline_rank() const { return state_->max_inline_rank; }
size_t Server::max_request_bytes() const { return state_->options.max_request_bytes; }
std::string Server::model_version() const {
  const std::shared_ptr<const ModelSet> set = state_->models->Current();
  return set == nullptr ? "none" : set->Summary();
}
void Server::RequestModelReload(absl::string_view trigger) {
  state_->models->RequestReload(trigger);
}
ModelReloader& Server::models() { return *state_->models; }

void Server::Stop() {
  State& s = *state_;
  if (s.stopped) return;
  s.stopped = true;
  // Clients that watch health stop sending new calls here while the calls
  // already sent finish.
  s.StartDrain();
  absl::SleepFor(s.options.drain);
  s.grpc_server->Shutdown(std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(s.options.shutdown_grace));
  s.grpc_server->Wait();
  if (s.health_server) {
    s.health_server->Shutdown(std::chrono::system_clock::now());
    s.health_server->Wait();
  }
  if (s.store.consumer) {
    s.store.consumer->Shutdown(s.options.log_flush);
    const logstore::LogStats stats = s.store.consumer->stats();
    spdlog::info(
        "log store flushed: handed={} stored={} dropped(queue_full={} store_error={} "
        "shutdown={}) unknown={}",
        stats.items_handed, stats.items_stored, stats.items_dropped_queue_full,
        stats.items_dropped_store_error, stats.items_dropped_shutdown, stats.items_unknown);
  }
}

}  // namespace rankwire
