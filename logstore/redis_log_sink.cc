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
namespace {

// Commands per entry: MULTI, HSET, PEXPIRE, EXEC.
constexpr int kRepliesPerEntry = 4;

absl::string_view ReplyText(const redisReply& reply) {
  return absl::string_view(reply.str == nullptr ? "" : reply.str, reply.len);
}

// The outcome of one entry from its EXEC reply (the three replies before it
// are +OK and +QUEUED unless the server refused a command, which then shows
// up here as EXECABORT).
absl::Status ExecOutcome(const redisReply& exec, absl::string_view address) {
  if (exec.type == REDIS_REPLY_ERROR) {
    return absl::InternalError(
        absl::StrCat("redis ", address, " refused the write: ", ReplyText(exec)));
  }
  if (exec.type != REDIS_REPLY_ARRAY || exec.elements != 2) {
    return absl::InternalError(absl::StrCat(
        "redis ", address, ": unexpected EXEC reply (type ", exec.type, ")"));
  }
  for (size_t i = 0; i < exec.elements; ++i) {
    const redisReply& r = *exec.element[i];
    if (r.type == REDIS_REPLY_ERROR) {
      return absl::InternalError(absl::StrCat("redis ", address, ": ",
                                              i == 0 ? "HSET" : "PEXPIRE",
                                              ": ", ReplyText(r)));
    }
  }
  // PEXPIRE answers 0 when the key does not exist, which right after HSET in
  // the same transaction means something else deleted it.
  if (exec.element[1]->type != REDIS_REPLY_INTEGER || exec.element[1]->integer != 1) {
    return absl::InternalError(
        absl::StrCat("redis ", address, ": PEXPIRE did not set the TTL"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisLogSink>> RedisLogSink::Create(
    const LogStoreConfig& config) {
  ASSIGN_OR_RETURN(RedisConnectOptions connect, ConnectOptionsFrom(config));
  if (config.reconnect_backoff_min <= absl::ZeroDuration() ||
      config.reconnect_backoff_max < config.reconnect_backoff_min) {
    return absl::InvalidArgumentError(
        "reconnect backoff must satisfy 0 < backoff_min <= backoff_max");
  }
  RedisSinkOptions options;
  options.connect = std::move(connect);
  options.backoff_min = config.reconnect_backoff_min;
  options.backoff_max = config.reconnect_backoff_max;
  return std::make_unique<RedisLogSink>(std::move(options));
}

RedisLogSink::RedisLogSink(RedisSinkOptions options)
    : options_(std::move(options)),
      address_(options_.connect.address.ToString()),
      backoff_(options_.backoff_min) {}

bool RedisLogSink::EnsureConnected() {
  if (connection_.has_value()) return true;
  const absl::Time now = absl::Now();
  if (now < next_attempt_) return false;
  absl::StatusOr<RedisConnection> connection = RedisConnection::Connect(options_.connect);
  if (!connection.ok()) {
    last_error_ = connection.status();
    had_failure_ = true;
    up_.store(false, std::memory_order_relaxed);
    next_attempt_ = absl::Now() + backoff_;
    LogError(absl::Status(last_error_.code(),
                          absl::StrCat(last_error_.message(), "; next attempt in ",
                                       absl::FormatDuration(backoff_))),
             0);
    backoff_ = std::min(backoff_ * 2, options_.backoff_max);
    return false;
  }
  connection_.emplace(*std::move(connection));
  last_io_ = absl::Now();
  backoff_ = options_.backoff_min;
  if (had_failure_) reconnects_.fetch_add(1, std::memory_order_relaxed);
  uint64_t suppressed = 0;
  if (connect_throttle_.Allow(&suppressed)) {
    spdlog::info("logstore: connected to redis {}{}", address_,
                 had_failure_ ? " (reconnected)" : "");
  }
  had_failure_ = false;
  up_.store(true, std::memory_order_relaxed);
  return true;
}

void RedisLogSink::Disconnect(const absl::Status& why) {
  connection_.reset();
  last_error_ = why;
  had_failure_ = true;
  up_.store(false, std::memory_order_relaxed);
  // The server may be back already (a restart); try once right away, then
  // back off if that fails.
  next_attempt_ = absl::InfinitePast();
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
    spdlog::error("logstore: {} ({} similar errors suppressed)", message,
                  suppressed);
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
  RedisReplyPtr reply(static_cast<redisReply*>(
      redisCommandArgv(connection_->get(), 1, ping, ping_len)));
  if (reply == nullptr) {
    absl::Status lost = connection_->IoError("PING");
    Disconnect(lost);
    LogError(lost, 0);
    return;
  }
  last_io_ = absl::Now();
}

std::vector<absl::Status> RedisLogSink::Write(absl::Span<SinkEntry> batch,
                                              absl::Duration ttl) {
  ScopedSigpipeBlock no_sigpipe;
  std::vector<absl::Status> results(batch.size());
  const std::string ttl_ms =
      absl::StrCat(std::max<int64_t>(1, absl::ToInt64Milliseconds(ttl)));
  size_t done = 0;  // Entries with a reply (stored or refused).
  bool retried = false;
  while (done < batch.size()) {
    if (!EnsureConnected()) {
      absl::Status down = absl::UnavailableError(
          absl::StrCat("redis ", address_, " is down (", last_error_.message(), ")"));
      std::fill(results.begin() + done, results.end(), down);
      LogError(down, batch.size() - done);
      return results;
    }
    absl::Status lost = WritePipeline(batch.subspan(done), ttl_ms,
                                      absl::MakeSpan(results).subspan(done), &done);
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
      std::fill(results.begin() + done, results.end(), lost);
      LogError(lost, batch.size() - done);
      return results;
    }
    retried = true;
  }
  up_.store(true, std::memory_order_relaxed);
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
                                         absl::Span<absl::Status> results, size_t* done) {
  redisContext* context = connection_->get();
  // Each request's transaction goes to the socket as soon as it is
  // formatted, so Redis executes request i while request i+1 is being
  // formatted, and hiredis's output buffer never holds more than one
  // request. Replies (a few bytes each) are read after the last one.
  for (const SinkEntry& entry : entries) {
    argv_.clear();
    argv_len_.clear();
    argv_.push_back("HSET");
    argv_len_.push_back(4);
    argv_.push_back(entry.key.data());
    argv_len_.push_back(entry.key.size());
    for (const SinkField& field : entry.fields) {
      argv_.push_back(field.name.data());
      argv_len_.push_back(field.name.size());
      argv_.push_back(field.value.data());
      argv_len_.push_back(field.value.size());
    }
    const char* multi[] = {"MULTI"};
    const size_t multi_len[] = {5};
    const char* pexpire[] = {"PEXPIRE", entry.key.data(), ttl_ms.data()};
    const size_t pexpire_len[] = {7, entry.key.size(), ttl_ms.size()};
    const char* exec[] = {"EXEC"};
    const size_t exec_len[] = {4};
    if (redisAppendCommandArgv(context, 1, multi, multi_len) != REDIS_OK ||
        redisAppendCommandArgv(context, static_cast<int>(argv_.size()), argv_.data(),
                               argv_len_.data()) != REDIS_OK ||
        redisAppendCommandArgv(context, 3, pexpire, pexpire_len) != REDIS_OK ||
        redisAppendCommandArgv(context, 1, exec, exec_len) != REDIS_OK) {
      return connection_->IoError("queue commands");
    }
    int written = 0;
    do {
      if (redisBufferWrite(context, &written) != REDIS_OK) {
        return connection_->IoError("write logs");
      }
    } while (!written);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    RedisReplyPtr exec_reply;
    for (int r = 0; r < kRepliesPerEntry; ++r) {
      void* raw = nullptr;
      if (redisGetReply(context, &raw) != REDIS_OK) {
        // Nothing from here on was confirmed. Each unconfirmed transaction
        // either ran whole (its EXEC arrived) or not at all, so no key is
        // left without its TTL.
        return connection_->IoError("write logs");
      }
      RedisReplyPtr reply(static_cast<redisReply*>(raw));
      if (r == kRepliesPerEntry - 1) exec_reply = std::move(reply);
    }
    results[i] = ExecOutcome(*exec_reply, address_);
    ++*done;
  }
  return absl::OkStatus();
}

}  // namespace rankwire::logstore
