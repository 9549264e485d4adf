// Routes libprotobuf's own log lines through spdlog, rate-limited. Without
// this, every request with invalid UTF-8 in a string field printed a
// "[libprotobuf ERROR ...]" line to stderr: a caller decided how much the
// server logged. With it, at most one such line per interval is printed,
// and it says how many were held back.
//
// Thread safety: install once in main() before serving; the handler itself
// is safe from many threads.
#ifndef RANKWIRE_SERVER_PROTOBUF_LOG_H_
#define RANKWIRE_SERVER_PROTOBUF_LOG_H_

#include "absl/time/time.h"

namespace rankwire {

// Replaces libprotobuf's log handler (process-wide). FATAL messages are
// always printed (protobuf aborts after them).
void InstallProtobufLogHandler(absl::Duration interval = absl::Seconds(10));

}  // namespace rankwire

#endif  // RANKWIRE_SERVER_PROTOBUF_LOG_H_
