#include "metrics/metrics_http.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace rankwire {
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

// One TCP connection to address:port, closed at once.
void ConnectOnce(const sockaddr_in& addr) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  close(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& address, int port, const MetricsRegistry* registry) {
  mg_init_library(0);
  std::string listen = absl::StrCat(address, ":", port);
  const char* options[] = {"listening_ports", listen.c_str(), "num_threads", "2", nullptr};
  mg_callbacks callbacks = {};
  auto server = std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer());
  server->registry_ = registry;
  server->address_ = address;
  server->ctx_ = mg_start(&callbacks, nullptr, options);
  if (server->ctx_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("metrics endpoint: cannot listen on ", listen));
  }
  mg_set_request_handler(server->ctx_, "/metrics", &HandleMetrics,
                         const_cast<MetricsRegistry*>(registry));
  mg_server_port ports[1];
  if (mg_get_server_ports(server->ctx_, 1, ports) >= 1) {
    server->port_ = ports[0].port;
  }
  return server;
}

// mg_stop() sets civetweb's stop flag and waits for its master thread,
// which looks at the flag only when its poll() of the listening socket
// returns: on a connection, or after civetweb's 2 s quantum
// (SOCKET_TIMEOUT_QUANTUM, fixed when libcivetweb is built). With no
// scrape arriving, every stop of the server (and so every SIGTERM) waited
// 0-2 s here for nothing. A connection of our own, repeated until mg_stop()
// returns (one made just before the flag is set only restarts the poll),
// wakes it at once.
MetricsHttpServer::~MetricsHttpServer() {
  if (ctx_ == nullptr) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  const std::string host =
      address_.empty() || address_ == "0.0.0.0" ? std::string("127.0.0.1") : address_;
  const bool can_wake = port_ > 0 && inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1;
  std::atomic<bool> stopped{false};
  std::thread waker;
  if (can_wake) {
    waker = std::thread([&stopped, addr] {
      while (!stopped.load(std::memory_order_acquire)) {
        ConnectOnce(addr);
        absl::SleepFor(absl::Milliseconds(5));
      }
    });
  }
  mg_stop(ctx_);
  stopped.store(true, std::memory_order_release);
  if (waker.joinable()) waker.join();
}

}  // namespace rankwire
