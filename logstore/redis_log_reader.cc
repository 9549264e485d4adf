#include "logstore/redis_log_reader.h"

#include <hiredis/hiredis.h>

#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "logstore/redis_commands.h"

namespace rankwire::logstore {

absl::StatusOr<std::unique_ptr<RedisLogReader>> RedisLogReader::Create(
    const LogStoreConfig& config) {
  ASSIGN_OR_RETURN(RedisConnectOptions options, ConnectOptionsFrom(config));
  return std::make_unique<RedisLogReader>(std::move(options), config.key_prefix);
}

absl::StatusOr<std::vector<std::optional<std::string>>> RedisLogReader::ReadFields(
    absl::string_view request_id, absl::Span<const std::string> fields, absl::Time deadline) {
  if (fields.empty()) return std::vector<std::optional<std::string>>();
  const std::string address = options_.address.ToString();
  auto deadline_passed = [&](absl::string_view when) {
    return absl::DeadlineExceededError(
        absl::StrCat("redis ", address, ": the log read's deadline passed ", when));
  };
  // Calls share the connection and queue for it behind a slow store: one
  // whose deadline passes while it waits gives up then. The lock is held
  // only to take and give back the connection, never across I/O.
  std::optional<RedisConnection> connection;
  {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithDeadline(absl::Condition(&idle_), deadline) || absl::Now() >= deadline) {
      return deadline_passed("while it waited for the connection");
    }
    idle_ = false;
    connection.swap(connection_);
  }
  absl::Cleanup give_back = [&] {
    absl::MutexLock lock(&mu_);
    connection_.swap(connection);
    idle_ = true;
  };

  const std::string key = absl::StrCat(key_prefix_, request_id);
  ScopedSigpipeBlock no_sigpipe;
  RedisCommandWriter commands;
  RedisReplyPtr reply;
  // Two tries: a connection kept from an earlier call may have died with a
  // server restart. A fresh connection's failure, or a timeout (the server
  // is slow, not gone), is reported at once.
  for (int attempt = 0; attempt < 2 && reply == nullptr; ++attempt) {
    const bool fresh = !connection.has_value();
    if (fresh) {
      if (attempt > 0 && absl::Now() >= deadline) {
        return deadline_passed("before it could reconnect");
      }
      ASSIGN_OR_RETURN(RedisConnection made, RedisConnection::Connect(options_));
      connection.emplace(std::move(made));
      if (absl::Now() >= deadline) return deadline_passed("while it connected");
    }
    absl::StatusOr<RedisReplyPtr> read =
        commands.AppendRead(connection->get(), key, fields)
            ? connection->ReplyWithin(options_.io_timeout, "HMGET")
            : absl::StatusOr<RedisReplyPtr>(connection->IoError("HMGET"));
    if (read.ok()) {
      reply = *std::move(read);
    } else {
      const bool timed_out = connection->TimedOut();
      connection.reset();
      if (fresh || timed_out) return read.status();
    }
  }
  std::optional<RedisRedirect> redirect;
  absl::StatusOr<std::vector<std::optional<std::string>>> values =
      ReadOutcome(*reply, address, fields.size(), &redirect);
  if (values.ok() && redirect.has_value()) {
    return absl::InternalError(absl::StrCat("redis ", address, " is a cluster node (redirects to ",
                                            redirect->address, "); use redis-cluster"));
  }
  return values;
}

}  // namespace rankwire::logstore
