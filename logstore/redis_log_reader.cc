#include "logstore/redis_log_reader.h"

#include <hiredis/hiredis.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "logstore/redis_commands.h"

namespace rankwire::logstore {

absl::StatusOr<std::unique_ptr<RedisLogReader>> RedisLogReader::Create(
    const LogStoreConfig& config) {
  ASSIGN_OR_RETURN(RedisConnectOptions options, ConnectOptionsFrom(config));
  return std::make_unique<RedisLogReader>(std::move(options), config.key_prefix);
}

absl::StatusOr<std::vector<std::optional<std::string>>> RedisLogReader::FetchBefore(
    absl::string_view request_id, absl::Span<const std::string> item_ids,
    absl::Time deadline) {
  if (item_ids.empty()) return std::vector<std::optional<std::string>>();

  const std::string key = absl::StrCat(key_prefix_, request_id);
  RedisReplyPtr reply;
  {
    ScopedSigpipeBlock no_sigpipe;
    absl::MutexLock lock(&mu_);
    // Calls share the connection: one that waited here past its deadline
    // (behind a slow store) does not start a round trip.
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("redis ", options_.address.ToString(),
                       ": the log read's deadline passed while it waited for the connection"));
    }
    // Two tries: a connection kept from an earlier call may have died with
    // a server restart; only a fresh connection's failure is reported.
    for (int attempt = 0; attempt < 2 && reply == nullptr; ++attempt) {
      const bool fresh = !connection_.has_value();
      if (fresh) {
        ASSIGN_OR_RETURN(RedisConnection connection, RedisConnection::Connect(options_));
        connection_.emplace(std::move(connection));
      }
      void* raw = nullptr;
      if (commands_.AppendRead(connection_->get(), key, item_ids) &&
          redisGetReply(connection_->get(), &raw) == REDIS_OK) {
        reply.reset(static_cast<redisReply*>(raw));
      } else {
        absl::Status error = connection_->IoError("HMGET");
        connection_.reset();
        if (fresh) return error;
      }
    }
  }
  std::optional<RedisRedirect> redirect;
  absl::StatusOr<std::vector<std::optional<std::string>>> values = ReadOutcome(
      *reply, options_.address.ToString(), request_id, item_ids, &redirect);
  if (values.ok() && redirect.has_value()) {
    return absl::InternalError(absl::StrCat("redis ", options_.address.ToString(),
                                            " is a cluster node (redirects to ",
                                            redirect->address, "); use redis-cluster"));
  }
  return values;
}

}  // namespace rankwire::logstore
