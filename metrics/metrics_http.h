// MetricsHttpServer serves a MetricsRegistry at GET /metrics in the
// Prometheus text format (civetweb, two worker threads).
//
// The destructor stops it within milliseconds (metrics_http.cc says how:
// civetweb alone waits up to 2 s).
//
// Thread safety: Start/destructor from one thread; serving is internal.
#ifndef RANKWIRE_METRICS_METRICS_HTTP_H_
#define RANKWIRE_METRICS_METRICS_HTTP_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "metrics/metrics.h"

struct mg_context;

namespace rankwire {

class MetricsHttpServer {
 public:
  // Listens on address:port (port 0 picks a free port). `registry` must
  // outlive the server.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const std::string& address,
                                                                  int port,
                                                                  const MetricsRegistry* registry);
  ~MetricsHttpServer();

  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  mg_context* ctx_ = nullptr;
  const MetricsRegistry* registry_ = nullptr;
  std::string address_;
  int port_ = 0;
};

}  // namespace rankwire

#endif  // RANKWIRE_METRICS_METRICS_HTTP_H_
