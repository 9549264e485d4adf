// The Redis commands of the log store, shared by the single-node and the
// cluster sink and reader: one request's write transaction and one read.
//
//   write: MULTI / DEL key / HSET key field value ... / PEXPIRE key ttl / EXEC
//          (HSET's fields as the entry packed them, packed_fields.h)
//   read:  HMGET key "" item ...   (field "" is the request's layout)
//
// A write is sent at once (SendWrite), a read is queued on a hiredis
// context (AppendRead); reading the replies is the caller's (it pipelines).
// A reply may be a cluster redirection (-MOVED / -ASK slot host:port); the
// parsers return it as a RedisRedirect instead of an error so the cluster
// code can follow it.
//
// Thread safety: a RedisCommandWriter is used by one thread; the rest is pure.
#ifndef RANKWIRE_LOGSTORE_REDIS_COMMANDS_H_
#define RANKWIRE_LOGSTORE_REDIS_COMMANDS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "logstore/log_sink.h"
#include "logstore/redis_connection.h"

struct redisContext;
struct redisReply;

namespace rankwire::logstore {

// Replies per write transaction: MULTI, DEL, HSET, PEXPIRE, EXEC.
inline constexpr int kRepliesPerWrite = 5;

// A cluster redirection found in a reply.
struct RedisRedirect {
  bool ask = false;     // -ASK (one-off) rather than -MOVED (the slot moved).
  int slot = 0;         // The slot the redirect is about.
  std::string address;  // host:port
};

// "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381" -> the redirect.
// An empty host (":6381", what a node configured with
// cluster-preferred-endpoint-type unknown-endpoint sends) means the host of
// the node that answered, `replying` ("host:port").
std::optional<RedisRedirect> ParseRedirect(absl::string_view error,
                                           absl::string_view replying = "");

class RedisCommandWriter {
 public:
  // Sends `entry`'s transaction on `connection` within `budget`; with
  // `asking`, an ASKING first (the reply count grows by one). The commands
  // around HSET's fields are formatted here and the fields are sent from
  // the entry's own memory and its pieces' (RedisConnection::WriteWithin:
  // sendmsg of them all). False on an I/O error (the connection's IoError
  // says which).
  bool SendWrite(RedisConnection& connection, const SinkEntry& entry, absl::string_view ttl_ms,
                 IoBudget* budget, bool asking = false);
  // Queues HMGET key fields... (optionally after ASKING).
  bool AppendRead(redisContext* context, absl::string_view key,
                  absl::Span<const std::string> fields, bool asking = false);

 private:
  std::string head_;  // [ASKING] MULTI, DEL key, HSET's header
  std::string tail_;  // PEXPIRE key ttl, EXEC
  std::vector<absl::string_view> pieces_;
  std::vector<const char*> argv_;
  std::vector<size_t> argv_len_;
};

// The outcome of one write transaction from its replies (MULTI ... EXEC,
// kRepliesPerWrite of them, after any ASKING reply): OK, a redirect (set
// in `*redirect`, status OK), or the server's refusal (kInternal; CLUSTERDOWN
// is kUnavailable). The redirect may come from a queued command or from
// EXEC itself (the slot moved between queueing and EXEC, which then ran
// nothing).
absl::Status WriteOutcome(absl::Span<redisReply* const> replies, absl::string_view address,
                          std::optional<RedisRedirect>* redirect);

// HMGET's reply for `field_count` fields: their values (nullopt for an
// absent field); a redirect is returned in `*redirect` with an empty result.
absl::StatusOr<std::vector<std::optional<std::string>>> ReadOutcome(
    const redisReply& reply, absl::string_view address, size_t field_count,
    std::optional<RedisRedirect>* redirect);

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_REDIS_COMMANDS_H_
