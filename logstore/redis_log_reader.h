// RedisLogReader fetches the logs of given items of one request from Redis
// with one HMGET, and decodes them (log_value.h). It is the client side of
// the log store: rankwire-cli uses it for the top-N items it shows.
//
// It connects on first use and again after an error; a call that finds its
// kept connection closed (Redis restarted) retries once on a fresh one,
// since HMGET is safe to repeat, unless its deadline has passed. A round
// trip that times out is not retried. It does not back off: each call
// makes at most one new connection attempt, bounded by the connect timeout.
//
// Thread safety: Fetch() is safe from many threads; calls share one
// connection and run one at a time. A call waits for the connection only
// until its deadline.
#ifndef RANKWIRE_LOGSTORE_REDIS_LOG_READER_H_
#define RANKWIRE_LOGSTORE_REDIS_LOG_READER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "logstore/log_store.h"
#include "logstore/redis_commands.h"
#include "logstore/redis_connection.h"

namespace rankwire::logstore {

class RedisLogReader final : public LogReader {
 public:
  // Takes the Redis fields and key_prefix of `config`. InvalidArgument for
  // a bad address or timeouts. Does not connect.
  static absl::StatusOr<std::unique_ptr<RedisLogReader>> Create(const LogStoreConfig& config);

  RedisLogReader(RedisConnectOptions options, std::string key_prefix)
      : options_(std::move(options)), key_prefix_(std::move(key_prefix)) {}

  // kUnavailable when Redis cannot be reached, kUnauthenticated when it
  // refuses the password, kInternal when it answers HMGET with an error
  // (the key is not a hash, say).
  absl::StatusOr<std::vector<std::optional<std::string>>> ReadFields(
      absl::string_view request_id, absl::Span<const std::string> fields,
      absl::Time deadline) override;

 private:
  const RedisConnectOptions options_;
  const std::string key_prefix_;
  absl::Mutex mu_;
  // The kept connection, taken by one call at a time (idle_ false while a
  // call has it, doing its I/O without the lock).
  std::optional<RedisConnection> connection_ ABSL_GUARDED_BY(mu_);
  bool idle_ ABSL_GUARDED_BY(mu_) = true;
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_REDIS_LOG_READER_H_
