#include "logstore/redis_log_sink.h"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"

namespace rankwire::logstore {

absl::StatusOr<std::unique_ptr<RedisLogSink>> RedisLogSink::Create(const LogStoreConfig& config) {
  ASSIGN_OR_RETURN(RedisConnectOptions connect, ConnectOptionsFrom(config));
  RETURN_IF_ERROR(CheckReconnectBackoff(config));
  RedisSinkOptions options;
  options.connect = std::move(connect);
  options.backoff_min = config.reconnect_backoff_min;
  options.backoff_max = config.reconnect_backoff_max;
  return std::make_unique<RedisLogSink>(std::move(options));
}

RedisLogSink::RedisLogSink(RedisSinkOptions options)
    : options_(std::move(options)),
      address_(options_.connect.address.ToString()),
      backoff_(options_.backoff_min, options_.backoff_max) {}

bool RedisLogSink::EnsureConnected() {
  if (connection_.has_value()) return true;
  const absl::Time now = absl::Now();
  if (!backoff_.Ready(now)) return false;
  absl::StatusOr<RedisConnection> connection = RedisConnection::Connect(options_.connect);
  if (!connection.ok()) {
    last_error_ = connection.status();
    had_failure_ = true;
    RecordAttempt(false);
    const absl::Duration wait = backoff_.Failed(absl::Now());
    LogError(
        absl::Status(last_error_.code(), absl::StrCat(last_error_.message(), "; next attempt in ",
                                                      absl::FormatDuration(wait))),
        0);
    return false;
  }
  connection_.emplace(*std::move(connection));
  last_io_ = absl::Now();
  backoff_.Succeeded();
  if (had_failure_) reconnects_.fetch_add(1, std::memory_order_relaxed);
  uint64_t suppressed = 0;
  if (connect_throttle_.Allow(&suppressed)) {
    spdlog::info("logstore: connected to redis {}{}", address_,
                 had_failure_ ? " (reconnected)" : "");
  }
  had_failure_ = false;
  RecordAttempt(true);
  return true;
}

void RedisLogSink::Disconnect(const absl::Status& why) {
  connection_.reset();
  last_error_ = why;
  had_failure_ = true;
  RecordAttempt(false);
  // The server may be back already (a restart); try once right away, then
  // back off if that fails.
  backoff_.RetryNow();
}

void RedisLogSink::LogError(const absl::Status& status, size_t dropped_entries) {
  uint64_t suppressed = 0;
  if (!error_throttle_.Allow(&suppressed)) return;
  // absl::string_view is not std::string_view in every abseil build, and
  // fmt formats only the latter.
  const std::string_view message(status.message().data(), status.message().size());
  if (dropped_entries > 0) {
    spdlog::error("logstore: {}; dropped the logs of {} request(s) ({} similar errors suppressed)",
                  message, dropped_entries, suppressed);
  } else {
    spdlog::error("logstore: {} ({} similar errors suppressed)", message, suppressed);
  }
}

void RedisLogSink::Poll() {
  if (!connection_.has_value()) {
    EnsureConnected();
    return;
  }
  if (absl::Now() - last_io_ < kIdlePingInterval) return;
  ScopedSigpipeBlock no_sigpipe;
  const char* ping[] = {"PING"};
  const size_t ping_len[] = {4};
  absl::StatusOr<RedisReplyPtr> reply =
      connection_->CommandWithin(1, ping, ping_len, options_.connect.io_timeout, "PING");
  if (!reply.ok()) {
    Disconnect(reply.status());
    LogError(reply.status(), 0);
    return;
  }
  last_io_ = absl::Now();
}

std::vector<absl::Status> RedisLogSink::Write(absl::Span<SinkEntry> batch, absl::Duration ttl) {
  ScopedSigpipeBlock no_sigpipe;
  std::vector<absl::Status> results(batch.size());
  const std::string ttl_ms = absl::StrCat(std::max<int64_t>(1, absl::ToInt64Milliseconds(ttl)));
  size_t done = 0;  // Entries with a reply (stored or refused).
  size_t sent = 0;  // Entries whose transaction went out whole, on some connection.
  bool retried = false;
  // Entries from `from` on failed with `why`: those sent whole may have
  // run (their outcome is unknown), the rest did not.
  const auto fail_from = [&](size_t from, const absl::Status& why) {
    for (size_t i = from; i < batch.size(); ++i) {
      results[i] = i < sent ? OutcomeUnknown(why) : why;
    }
    LogError(why, batch.size() - from);
  };
  while (done < batch.size()) {
    if (!EnsureConnected()) {
      fail_from(done, absl::UnavailableError(absl::StrCat("redis ", address_, " is down (",
                                                          last_error_.message(), ")")));
      return results;
    }
    size_t sent_now = done;
    absl::Status lost = WritePipeline(batch.subspan(done), ttl_ms,
                                      absl::MakeSpan(results).subspan(done), &done, &sent_now);
    sent = std::max(sent, sent_now);
    if (lost.ok()) {
      last_io_ = absl::Now();
      break;
    }
    const bool timed_out = connection_->TimedOut();
    Disconnect(lost);
    // A connection that died while idle (Redis restarted, a proxy closed
    // it) fails on first use; retry once on a fresh one. That is safe: a
    // transaction that did run is simply run again (same fields, TTL
    // reset). A timeout is not retried: the server is slow, and the writer
    // has already waited one I/O timeout.
    if (retried || timed_out) {
      fail_from(done, lost);
      return results;
    }
    retried = true;
  }
  RecordAttempt(true);
  // Refusals (OOM, WRONGTYPE): the connection is fine, the entries are not.
  size_t refused = 0;
  const absl::Status* first_refusal = nullptr;
  for (const absl::Status& status : results) {
    if (status.ok()) continue;
    if (refused++ == 0) first_refusal = &status;
  }
  if (refused > 0) LogError(*first_refusal, refused);
  return results;
}

absl::Status RedisLogSink::WritePipeline(absl::Span<const SinkEntry> entries,
                                         const std::string& ttl_ms,
                                         absl::Span<absl::Status> results, size_t* done,
                                         size_t* sent) {
  // What the batch may take on Redis's socket in all, sending and reading
  // (not the formatting between sends): a server that takes the bytes or
  // gives the replies a trickle at a time cannot hold the writer longer
  // (IoBudget).
  IoBudget budget(options_.connect.io_timeout);
  // Each request's transaction goes to the socket from the entry's own
  // memory (one sendmsg of the commands around its fields' pieces), so
  // Redis executes request i while request i+1 is being sent; replies (a
  // few bytes each) are read after the last one.
  for (const SinkEntry& entry : entries) {
    if (!commands_.SendWrite(*connection_, entry, ttl_ms, &budget)) {
      return connection_->IoError("write logs");
    }
    ++*sent;
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    RedisReplyPtr replies[kRepliesPerWrite];
    redisReply* raw_replies[kRepliesPerWrite];
    for (int r = 0; r < kRepliesPerWrite; ++r) {
      void* raw = nullptr;
      if (!connection_->GetReplyWithin(&budget, &raw)) {
        // Nothing from here on was confirmed. Each unconfirmed transaction
        // either ran whole (its EXEC arrived) or not at all, so no key is
        // left without its TTL.
        return connection_->IoError("write logs");
      }
      replies[r].reset(static_cast<redisReply*>(raw));
      raw_replies[r] = replies[r].get();
    }
    std::optional<RedisRedirect> redirect;
    results[i] = WriteOutcome(raw_replies, address_, &redirect);
    if (redirect.has_value()) {
      results[i] =
          absl::InternalError(absl::StrCat("redis ", address_, " is a cluster node (redirects to ",
                                           redirect->address, "); use --logstore=redis-cluster"));
    }
    ++*done;
  }
  return absl::OkStatus();
}

}  // namespace rankwire::logstore
