// Server: a running rankwire server, started from plain options, so that
// rankwire-server's main and tests start the same thing. It owns the
// codecs, the models (and their reloader), the log store, admission control, the
// ranking workers, the gRPC services (Rank, FetchLogs, health, reflection,
// ModelService), the optional plaintext health port and the Prometheus
// endpoint.
//
// Example:
//   ServerOptions options;
//   options.port = 0;                       // a free port
//   options.model_path = "model/models/ecom_search_lr.model";
//   absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
//   ... call 127.0.0.1:(*server)->port() ...
//   (*server)->Stop();                      // drain, finish calls, flush logs
//
// What happens to the process as a whole is the caller's: signals, the
// threads' time slice and setting CPUs aside for the ranking workers must be
// done before Start() (it creates threads, which inherit them;
// server_main.cc does this).
//
// Thread safety: Start() and Stop() from one thread; the server serves
// from its own threads.
#ifndef RANKWIRE_SERVER_SERVER_H_
#define RANKWIRE_SERVER_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "codec/builtin_codecs.h"
#include "logstore/log_store.h"
#include "metrics/metrics.h"
#include "rank/v1/rank.pb.h"
#include "ranking/rank_handler.h"
#include "request/request_validator.h"
#include "rpc/transport_args.h"
#include "server/admission.h"
#include "server/model_reloader.h"
#include "server/tls.h"

namespace rankwire {

struct ServerOptions {
  // Where to listen (port 0: a free one, port() says which).
  std::string address = "0.0.0.0";
  int port = 50051;
  // Let another process bind the same port (SO_REUSEPORT). Off: a port in
  // use is a start-up error.
  bool reuse_port = false;

  // Codecs: what make_codecs returns for these options (the built-in ones
  // by default; a test adds its own codecs by passing a function that
  // registers them too, as tests/codecs/codecs_under_test.h does), and the
  // default by name.
  BuiltinCodecOptions codecs;
  std::function<absl::StatusOr<CodecRegistry>(const BuiltinCodecOptions&)> make_codecs =
      MakeBuiltinCodecs;
  std::string default_codec = std::string(kDefaultCodecName);

  // The models: a file, a directory of versions, or a directory with a
  // bucket manifest (model/model_loader.h), and how they reload
  // (server/model_reloader.h).
  std::string model_path;
  ModelLoadOptions model_load;
  absl::Duration model_poll_interval = absl::Seconds(2);  // Zero: no polling.
  // No model loads at start-up: fail Start() (true), or start with
  // rank.v1.RankService NOT_SERVING and serve once one loads (false).
  bool model_fail_fast = false;
  // ModelService.ReloadModels on the health port.
  bool model_admin_rpc = false;

  // The input contract and message sizes (max_request_bytes 0: derived from
  // the limits).
  RequestLimits limits;
  size_t max_response_bytes = size_t{64} << 20;
  size_t max_request_bytes = 0;
  UnknownFeaturePolicy unknown_features = UnknownFeaturePolicy::kCount;

  // Logs: where they go by default, and the store (none: LOG_MODE_STORE
  // behaves as NONE).
  rank::v1::LogMode log_mode = rank::v1::LOG_MODE_STORE;
  std::optional<logstore::LogStoreConfig> log_store = logstore::LogStoreConfig{};

  // Admission and the ranking workers. 0: defaults from `ranking_cpus`.
  int ranking_cpus = 1;  // The CPUs ranking may use (the caller's count).
  int max_concurrent_rank = 0;
  int rank_workers = 0;
  bool rank_inline = true;
  int rank_worker_nice = 0;
  std::vector<int> rank_worker_cpus;  // Already set aside by the caller.
  size_t max_unsent_bytes = size_t{512} << 20;
  size_t max_unsent_bytes_per_peer = size_t{128} << 20;
  int max_concurrent_fetch_logs = 4;

  ServerTlsFiles tls;
  int health_port = -1;                                      // -1: off, 0: a free port.
  int metrics_port = 9464;                                   // -1: off, 0: a free port.
  std::string metrics_address;                               // Empty: `address`.
  absl::Duration max_connection_age = absl::ZeroDuration();  // Zero: never.
  // HTTP/2 and TCP arguments of the gRPC port (rpc/transport_args.h).
  rpc::TransportArgs transport_args = rpc::DefaultTransportArgs();
  uint32_t phase_cpu_sample_every = 32;

  // Stop(): serve this long reporting NOT_SERVING, then let calls finish
  // for up to `shutdown_grace`, then flush queued logs for up to
  // `log_flush`.
  absl::Duration drain = absl::ZeroDuration();
  absl::Duration shutdown_grace = absl::Seconds(5);
  absl::Duration log_flush = absl::Seconds(2);

  // Metrics the caller adds (the allocator's, which only the binary knows),
  // registered before serving starts.
  std::function<void(MetricsRegistry*)> register_metrics;
};

class Server {
 public:
  // InvalidArgument for options out of range, NotFound or InvalidArgument
  // for the model, Unavailable when a port cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const;
  int metrics_port() const;  // -1 when off.
  int health_port() const;   // -1 when off.
  // The resolved sizing: admitted calls, ranking workers, inline slots,
  // the receive limit.
  int max_concurrent_rank() const;
  int rank_workers() const;
  int max_inline_rank() const;
  size_t max_request_bytes() const;
  // What serves now: "name@version", or per bucket (ModelSet::Summary()).
  std::string model_version() const;
  // Reloads the models on the reloader's thread soon (SIGHUP); returns at
  // once. Success or refusal is logged and counted.
  void RequestModelReload(absl::string_view trigger);
  // The reloader (tests, tools).
  ModelReloader& models();

  // The drain: health NOT_SERVING on every port, `drain` of serving, then
  // no new calls and `shutdown_grace` for those running, then the log
  // flush. Idempotent; the destructor calls it.
  void Stop();

 private:
  struct State;
  explicit Server(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_SERVER_H_
