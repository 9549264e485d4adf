#include "server/metrics_http.h"

#include <civetweb.h>

#include "absl/strings/str_cat.h"

namespace rankwire::server {
namespace {

int HandleMetrics(mg_connection* conn, void* data) {
  const auto* registry = static_cast<const MetricsRegistry*>(data);
  std::string body = registry->RenderPrometheus();
  mg_printf(conn,
            "HTTP/1.1 200 OK\r\n"
            "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
            "Content-Length: %zu\r\n"
            "Connection: close\r\n\r\n",
            body.size());
  mg_write(conn, body.data(), body.size());
  return 200;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& address, int port, const MetricsRegistry* registry) {
  mg_init_library(0);
  std::string listen = absl::StrCat(address, ":", port);
  const char* options[] = {"listening_ports", listen.c_str(), "num_threads", "2",
                           nullptr};
  mg_callbacks callbacks = {};
  auto server = std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer());
  server->registry_ = registry;
  server->ctx_ = mg_start(&callbacks, nullptr, options);
  if (server->ctx_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("metrics endpoint: cannot listen on ", listen));
  }
  mg_set_request_handler(server->ctx_, "/metrics", &HandleMetrics,
                         const_cast<MetricsRegistry*>(registry));
  mg_server_port ports[1];
  if (mg_get_server_ports(server->ctx_, 1, ports) >= 1) {
    server->port_ = ports[0].port;
  }
  return server;
}

MetricsHttpServer::~MetricsHttpServer() {
  if (ctx_ != nullptr) mg_stop(ctx_);
}

}  // namespace rankwire::server
