#include "server/protobuf_log.h"

#include <google/protobuf/stubs/logging.h>

#include <string>

#include "logstore/log_throttle.h"
#include "spdlog/spdlog.h"

namespace rankwire {
namespace {

// Set once by InstallProtobufLogHandler; protobuf's handler is a plain
// function pointer, so the throttle it uses has to be reachable from one.
logstore::LogThrottle* throttle = nullptr;

void Handle(google::protobuf::LogLevel level, const char* filename, int line,
            const std::string& message) {
  if (level == google::protobuf::LOGLEVEL_FATAL) {
    spdlog::critical("libprotobuf {}:{}: {}", filename, line, message);
    return;
  }
  if (level == google::protobuf::LOGLEVEL_INFO) {
    spdlog::debug("libprotobuf {}:{}: {}", filename, line, message);
    return;
  }
  uint64_t suppressed = 0;
  if (!throttle->Allow(&suppressed)) return;
  spdlog::warn("libprotobuf {}:{}: {} ({} similar lines suppressed since the last one)", filename,
               line, message, suppressed);
}

}  // namespace

void InstallProtobufLogHandler(absl::Duration interval) {
  static logstore::LogThrottle* const kThrottle = new logstore::LogThrottle(interval);
  throttle = kThrottle;
  google::protobuf::SetLogHandler(&Handle);
}

}  // namespace rankwire
