// The log mode a request asks for (rank.v1.LogMode) by name: the one place
// the names "default", "store", "inline" and "none" are read and written,
// for every binary's --log_mode (the server's default mode, the CLI's and
// the load generator's per-request mode) and the server's start-up line.
//
// Thread safety: pure functions.
#ifndef RANKWIRE_REQUEST_LOG_MODE_H_
#define RANKWIRE_REQUEST_LOG_MODE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rank/v1/rank.pb.h"

namespace rankwire {

// "store", "inline" or "none", and "default" (LOG_MODE_DEFAULT: the server
// chooses) when `allow_default`; InvalidArgument naming what is accepted
// otherwise.
absl::StatusOr<rank::v1::LogMode> ParseLogMode(absl::string_view name, bool allow_default = true);

// The name ParseLogMode reads back as `mode`.
absl::string_view LogModeName(rank::v1::LogMode mode);

}  // namespace rankwire

#endif  // RANKWIRE_REQUEST_LOG_MODE_H_
