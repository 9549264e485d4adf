#include "logstore/redis_cluster_log_store.h"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace rankwire::logstore {
namespace {

// One entry's place in a round: where it goes, and whether after ASKING.
struct Route {
  size_t entry = 0;
  bool asking = false;
};

// Entries to send to one node in this round.
struct NodeBatch {
  RedisConnection* connection = nullptr;
  bool reused = false;  // The connection was open before this round.
  std::vector<Route> routes;
  size_t sent = 0;       // Routes whose commands reached the socket.
  size_t confirmed = 0;  // Routes whose replies were read.
  // What the round may still wait on this node's socket, sending and
  // reading together (RedisConnection::GetReplyWithin).
  IoBudget budget{absl::ZeroDuration()};
  absl::Status error;
};

// Entries still to send, with the ASK target of an entry redirected by ASK.
using Pending = std::vector<std::pair<size_t, std::string>>;

// What a round found beyond the per-entry results.
struct RoundOutcome {
  bool moved = false;        // A MOVED: reload the map.
  bool node_failed = false;  // A node could not be reached or was lost.
  bool stale = false;        // The map may be out of date.
  // Each MOVED's slot and new master, applied over the reloaded map.
  std::vector<std::pair<uint16_t, std::string>> moved_to;
};

// Connects to `address` and sends `node`'s transactions, each as soon as
// it is formatted; sets node.error on failure.
void SendToNode(RedisClusterRouter& router, RedisCommandWriter& commands,
                const std::string& address, absl::Span<SinkEntry> batch, const std::string& ttl_ms,
                NodeBatch& node) {
  node.reused = router.Connected(address);
  absl::StatusOr<RedisConnection*> connection = router.Connection(address);
  if (!connection.ok()) {
    node.error = connection.status();
    return;
  }
  node.connection = *connection;
  node.budget = IoBudget(router.io_timeout());
  for (const Route& route : node.routes) {
    if (!commands.SendWrite(*node.connection, batch[route.entry], ttl_ms, &node.budget,
                            route.asking)) {
      node.error = node.connection->IoError("write logs");
      return;
    }
    ++node.sent;
  }
}

// Reads `node`'s replies into `results`; redirected entries go to
// `pending`. After a lost connection the node's unconfirmed entries fail
// with its error (each transaction ran whole or not at all), or are resent
// once (a connection closed while it was idle; see below).
void ReadFromNode(RedisClusterRouter& router, const std::string& address, NodeBatch& node,
                  std::vector<absl::Status>& results, Pending& pending, RoundOutcome& outcome,
                  absl::flat_hash_set<std::string>& resent) {
  for (size_t k = 0; k < node.routes.size() && node.error.ok(); ++k) {
    const Route& route = node.routes[k];
    const int count = kRepliesPerWrite + (route.asking ? 1 : 0);
    RedisReplyPtr replies[kRepliesPerWrite + 1];
    redisReply* raw_replies[kRepliesPerWrite + 1];
    for (int r = 0; r < count && node.error.ok(); ++r) {
      void* raw = nullptr;
      if (!node.connection->GetReplyWithin(&node.budget, &raw)) {
        node.error = node.connection->IoError("write logs");
      }
      replies[r].reset(static_cast<redisReply*>(raw));
      raw_replies[r] = replies[r].get();
    }
    if (!node.error.ok()) break;
    std::optional<RedisRedirect> redirect;
    absl::Span<redisReply* const> write_replies(raw_replies + (route.asking ? 1 : 0),
                                                kRepliesPerWrite);
    results[route.entry] = WriteOutcome(write_replies, address, &redirect);
    ++node.confirmed;
    if (redirect.has_value()) {
      if (!redirect->ask) {
        outcome.moved = true;
        outcome.moved_to.emplace_back(static_cast<uint16_t>(redirect->slot), redirect->address);
      }
      pending.emplace_back(route.entry, redirect->ask ? redirect->address : std::string());
      results[route.entry] = absl::UnavailableError(absl::StrCat(
          "redis cluster: still redirected after 3 tries (last to ", redirect->address, ")"));
    } else if (results[route.entry].code() == absl::StatusCode::kUnavailable) {
      outcome.stale = true;  // CLUSTERDOWN: the map may be changing.
    }
  }
  if (node.error.ok()) return;
  // A connection found open may have been closed while idle (Redis's
  // `timeout`, a restart), which shows on first use: resend the
  // unconfirmed entries once on a fresh connection, as the single-node sink
  // does. Safe: a transaction that did run is run again whole (DEL first).
  // Not after a timeout: the node is slow or stalled, and the batch has
  // already waited one I/O timeout.
  if (node.reused && node.connection != nullptr && !node.connection->TimedOut() &&
      resent.insert(address).second) {
    router.Disconnect(address);
    for (size_t k = node.confirmed; k < node.routes.size(); ++k) {
      const Route& route = node.routes[k];
      results[route.entry] = node.error;  // Stands if no round is left.
      pending.emplace_back(route.entry, route.asking ? address : std::string());
    }
    return;
  }
  for (const Route& route : node.routes) {
    if (results[route.entry].ok()) continue;
    const bool redirected = std::any_of(pending.begin(), pending.end(),
                                        [&](const auto& p) { return p.first == route.entry; });
    if (!redirected) results[route.entry] = node.error;
  }
  // A node that timed out is left alone for a while (kStalledNodeBackoff),
  // so the next batches do not each wait out its timeout again.
  if (node.connection != nullptr) {
    if (node.connection->TimedOut()) {
      router.Backoff(address);
    } else {
      router.Disconnect(address);
    }
  }
  outcome.node_failed = true;
  outcome.stale = true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisClusterSink>> RedisClusterSink::Create(
    const LogStoreConfig& config) {
  absl::StatusOr<RedisClusterOptions> options = ClusterOptionsFrom(config);
  if (!options.ok()) return options.status();
  return std::make_unique<RedisClusterSink>(*std::move(options));
}

bool RedisClusterSink::MaybeRefresh(bool force) {
  if (!force && !stale_ && router_.has_map()) return true;
  const absl::Time now = absl::Now();
  if (!force && now - last_refresh_ < kRefreshInterval) return router_.has_map();
  last_refresh_ = now;
  absl::Status refreshed = router_.Refresh();
  reconnects_.store(router_.reconnects(), std::memory_order_relaxed);
  if (!refreshed.ok()) {
    LogError(refreshed, 0);
    return router_.has_map();
  }
  stale_ = false;
  return true;
}

void RedisClusterSink::Poll() {
  if (stale_ || !router_.has_map()) {
    RecordAttempt(MaybeRefresh(false) && !stale_);
  }
}

void RedisClusterSink::LogError(const absl::Status& status, size_t dropped_entries) {
  uint64_t suppressed = 0;
  if (!error_throttle_.Allow(&suppressed)) return;
  const std::string_view message(status.message().data(), status.message().size());
  if (dropped_entries > 0) {
    spdlog::error(
        "logstore: redis cluster: {}; dropped the logs of {} request(s) ({} similar errors "
        "suppressed)",
        message, dropped_entries, suppressed);
  } else {
    spdlog::error("logstore: redis cluster: {} ({} similar errors suppressed)", message,
                  suppressed);
  }
}

std::vector<absl::Status> RedisClusterSink::Write(absl::Span<SinkEntry> batch, absl::Duration ttl) {
  ScopedSigpipeBlock no_sigpipe;
  std::vector<absl::Status> results(batch.size(),
                                    absl::UnavailableError("redis cluster: no slot map"));
  if (!MaybeRefresh(false)) {
    RecordAttempt(false);
    LogError(results.front(), batch.size());
    return results;
  }
  const std::string ttl_ms = absl::StrCat(std::max<int64_t>(1, absl::ToInt64Milliseconds(ttl)));
  Pending pending;
  for (size_t i = 0; i < batch.size(); ++i) pending.emplace_back(i, std::string());
  bool node_failed = false;
  absl::flat_hash_set<std::string> resent;  // Nodes resent to after a lost connection.
  // Entries some round sent whole and got no answer for: they may have
  // run, so unless a later round stores them their outcome is unknown.
  std::vector<bool> unanswered(batch.size(), false);
  for (int round = 0; round < 3 && !pending.empty(); ++round) {
    // Group by node, keeping the batch's order within each node.
    absl::flat_hash_map<std::string, NodeBatch> nodes;
    std::vector<std::string> order;
    for (auto& [entry, ask_target] : pending) {
      const bool asking = !ask_target.empty();
      const std::string& address = asking ? ask_target : router_.NodeFor(KeySlot(batch[entry].key));
      if (address.empty()) {
        results[entry] = absl::UnavailableError(
            absl::StrCat("redis cluster: no master serves slot ", KeySlot(batch[entry].key)));
        stale_ = true;
        continue;
      }
      auto [it, inserted] = nodes.try_emplace(address);
      if (inserted) order.push_back(address);
      it->second.routes.push_back(Route{entry, asking});
    }
    pending.clear();
    // Send to every node first, so the masters execute in parallel, then
    // read every node's replies.
    for (const std::string& address : order) {
      SendToNode(router_, commands_, address, batch, ttl_ms, nodes[address]);
    }
    RoundOutcome outcome;
    for (const std::string& address : order) {
      NodeBatch& node = nodes[address];
      ReadFromNode(router_, address, node, results, pending, outcome, resent);
      for (size_t k = node.confirmed; k < node.sent; ++k) unanswered[node.routes[k].entry] = true;
    }
    node_failed |= outcome.node_failed;
    stale_ |= outcome.stale;
    if (outcome.moved) {
      MaybeRefresh(/*force=*/true);
      // The redirecting node knows; the node the map came from may not yet.
      for (const auto& [slot, address] : outcome.moved_to) router_.SetSlot(slot, address);
    }
  }
  RecordAttempt(!node_failed);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!results[i].ok() && unanswered[i]) results[i] = OutcomeUnknown(results[i]);
  }
  size_t failed = 0;
  const absl::Status* first = nullptr;
  for (const absl::Status& status : results) {
    if (status.ok()) continue;
    if (failed++ == 0) first = &status;
  }
  if (failed > 0) LogError(*first, failed);
  reconnects_.store(router_.reconnects(), std::memory_order_relaxed);
  return results;
}

absl::StatusOr<std::unique_ptr<RedisClusterReader>> RedisClusterReader::Create(
    const LogStoreConfig& config) {
  absl::StatusOr<RedisClusterOptions> options = ClusterOptionsFrom(config);
  if (!options.ok()) return options.status();
  return std::make_unique<RedisClusterReader>(*std::move(options), config.key_prefix);
}

bool RedisClusterReader::MaybeRefresh() {
  uint64_t marks_before = 0;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    if (refreshing_ || (!stale_ && router_.has_map()) ||
        now - last_refresh_ < RedisClusterSink::kRefreshInterval) {
      return false;
    }
    refreshing_ = true;
    last_refresh_ = now;
    marks_before = stale_marks_;
  }
  absl::Status refreshed = absl::InternalError("redis cluster: the slot map reload did not finish");
  // Also when Refresh() throws (std::bad_alloc): waiting calls wake up.
  absl::Cleanup install = [&] {
    absl::MutexLock lock(&mu_);
    refreshing_ = false;
    refresh_status_ = refreshed;
    if (refreshed.ok()) {
      router_.AdoptMap(refresher_);
      // The node the map came from may not have heard of a move yet: a
      // MOVED target wins until a reloaded map agrees with it.
      const absl::Time now = absl::Now();
      for (auto it = moved_.begin(); it != moved_.end();) {
        if (router_.NodeFor(it->first) == it->second.address ||
            now - it->second.recorded > kMovedLifetime) {
          moved_.erase(it++);
        } else {
          router_.SetSlot(it->first, it->second.address);
          ++it;
        }
      }
      stale_ = stale_marks_ != marks_before;
    }
  };
  refreshed = refresher_.Refresh();
  return true;
}

void RedisClusterReader::MarkStale() {
  stale_ = true;
  ++stale_marks_;
}

void RedisClusterReader::NodeFailed(const std::string& address) {
  MarkStale();
  for (auto it = moved_.begin(); it != moved_.end();) {
    if (it->second.address == address) {
      moved_.erase(it++);
    } else {
      ++it;
    }
  }
}

void RedisClusterReader::RecordMoved(uint16_t slot, const std::string& address) {
  absl::MutexLock lock(&mu_);
  router_.SetSlot(slot, address);
  moved_[slot] = Moved{address, absl::Now()};
  MarkStale();
}

void RedisClusterReader::Refused(uint16_t slot, const std::string& address,
                                 const absl::Status& error) {
  absl::MutexLock lock(&mu_);
  // A MOVED target that answers with an error is not serving the slot.
  if (auto it = moved_.find(slot); it != moved_.end() && it->second.address == address) {
    moved_.erase(it);
  }
  // CLUSTERDOWN: the cluster is changing; reload.
  if (error.code() == absl::StatusCode::kUnavailable) MarkStale();
}

RedisClusterReader::IoOutcome RedisClusterReader::AfterIoError(const Target& target,
                                                               bool* pool_dropped) {
  std::vector<RedisConnection> idle;  // Closed after the lock is released.
  absl::MutexLock lock(&mu_);
  Node& node = NodeAt(target.address);
  if (target.connection->TimedOut()) {
    // Stalled: its idle connections would wait out the same timeout, so
    // they go, and it is left alone as after a connect that timed out.
    // The read has waited long enough.
    idle.swap(node.idle);
    node.backoff.Failed(absl::Now(), kStalledNodeBackoff);
    NodeFailed(target.address);
    return IoOutcome::kStop;
  }
  if (!target.pooled) {
    NodeFailed(target.address);  // A fresh connection lost: it may be failing.
    return IoOutcome::kRetry;
  }
  // Its pool went idle with it and is likely closed too: drop it. The
  // first such pool costs no try.
  idle.swap(node.idle);
  if (*pool_dropped) return IoOutcome::kRetry;
  *pool_dropped = true;
  return IoOutcome::kRetryFree;
}

absl::StatusOr<RedisClusterReader::Target> RedisClusterReader::PickTarget(
    uint16_t slot, const std::string& ask_target, bool* may_refresh, absl::Time deadline) {
  if (*may_refresh && MaybeRefresh()) *may_refresh = false;
  absl::MutexLock lock(&mu_);
  // With no map yet (the first reads), wait for the reload in progress
  // rather than fail; with one, use it.
  if (!router_.has_map()) {
    if (!mu_.AwaitWithDeadline(absl::Condition(this, &RedisClusterReader::NotRefreshing),
                               deadline)) {
      return absl::DeadlineExceededError(
          "the log read's deadline passed while the first slot map was loading");
    }
    *may_refresh = false;  // The reload waited for is this read's one reload.
  }
  if (!router_.has_map()) return refresh_status_;
  Target target;
  target.address = ask_target.empty() ? router_.NodeFor(slot) : ask_target;
  if (target.address.empty()) {
    MarkStale();
    return absl::UnavailableError(absl::StrCat("redis cluster: no master serves slot ", slot));
  }
  Node& node = NodeAt(target.address);
  if (!node.idle.empty()) {
    target.connection.emplace(std::move(node.idle.back()));
    target.pooled = true;
    node.idle.pop_back();
  } else if (!node.backoff.Ready(absl::Now())) {
    return absl::UnavailableError(absl::StrCat("redis ", target.address, " is down (backing off)"));
  }
  return target;
}

RedisClusterReader::Node& RedisClusterReader::NodeAt(const std::string& address) {
  auto [it, inserted] = nodes_.try_emplace(address);
  if (inserted) it->second.backoff = ReconnectBackoff(options_.backoff_min, options_.backoff_max);
  return it->second;
}

absl::Status RedisClusterReader::Connect(Target& target) {
  absl::StatusOr<RedisAddress> parsed = ParseRedisAddress(target.address);
  if (!parsed.ok()) return parsed.status();
  RedisConnectOptions connect = options_.connect;
  connect.address = *std::move(parsed);
  absl::StatusOr<RedisConnection> connection = RedisConnection::Connect(connect);
  absl::MutexLock lock(&mu_);
  Node& node = NodeAt(target.address);
  if (!connection.ok()) {
    node.backoff.FailedWith(absl::Now(), connection.status());
    NodeFailed(target.address);  // A failover may have moved its slots.
    return connection.status();
  }
  node.backoff.Succeeded();
  target.connection.emplace(*std::move(connection));
  return absl::OkStatus();
}

void RedisClusterReader::Return(Target target) {
  absl::MutexLock lock(&mu_);
  std::vector<RedisConnection>& idle = NodeAt(target.address).idle;
  if (idle.size() < kMaxIdlePerNode) idle.push_back(*std::move(target.connection));
}

absl::StatusOr<RedisReplyPtr> RedisClusterReader::Exchange(RedisConnection& connection,
                                                           absl::string_view key,
                                                           absl::Span<const std::string> item_ids,
                                                           bool asking, absl::Duration limit) {
  RedisCommandWriter commands;
  if (!commands.AppendRead(connection.get(), key, item_ids, asking)) {
    return connection.IoError("HMGET");
  }
  // One budget for ASKING's reply and the HMGET's.
  IoBudget budget(limit);
  if (asking) {
    absl::StatusOr<RedisReplyPtr> asking_reply = connection.ReplyWithin(&budget, "HMGET");
    if (!asking_reply.ok()) return asking_reply.status();
  }
  return connection.ReplyWithin(&budget, "HMGET");
}

namespace {

// A read's DeadlineExceeded, after `tries` round trips that did not answer
// (the last one's error `last`).
absl::Status DeadlinePassed(int tries, const absl::Status& last) {
  if (tries == 0) {
    return absl::DeadlineExceededError(
        "the log read's deadline passed before its first round trip");
  }
  return absl::DeadlineExceededError(absl::StrCat("the log read's deadline passed after ", tries,
                                                  " tries; last: ", last.message()));
}

}  // namespace

absl::StatusOr<std::vector<std::optional<std::string>>> RedisClusterReader::ReadFields(
    absl::string_view request_id, absl::Span<const std::string> fields, absl::Time deadline) {
  if (fields.empty()) return std::vector<std::optional<std::string>>();
  const std::string key = absl::StrCat(key_prefix_, request_id);
  const uint16_t slot = KeySlot(key);
  ScopedSigpipeBlock no_sigpipe;
  std::string ask_target;
  absl::Status last = absl::UnavailableError("redis cluster: no slot map");
  // Three tries: a stale map (MOVED), a migration (ASK) or a connection
  // lost each cost one more round trip. Idle pooled connections that Redis
  // closed together (its `timeout`) cost one try between them. At most one
  // map reload per call, and no try starts after the deadline.
  bool pool_dropped = false;
  bool may_refresh = true;
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (absl::Now() >= deadline) return DeadlinePassed(attempt, last);
    absl::StatusOr<Target> target = PickTarget(slot, ask_target, &may_refresh, deadline);
    if (!target.ok()) {
      last = target.status();
      ask_target.clear();
      continue;
    }
    // A map reload in PickTarget, or a connect, may have used up the time.
    if (!target->connection.has_value() && absl::Now() < deadline) {
      if (absl::Status connected = Connect(*target); !connected.ok()) {
        last = connected;
        ask_target.clear();
        continue;
      }
    }
    if (absl::Now() >= deadline) {
      if (target->connection.has_value()) Return(*std::move(target));
      return DeadlinePassed(attempt, last);
    }
    absl::StatusOr<RedisReplyPtr> reply = Exchange(
        *target->connection, key, fields, !ask_target.empty(), options_.connect.io_timeout);
    if (!reply.ok()) {
      // The connection is dropped with `target`; a closed connection is
      // worth another try, a timeout is not.
      const IoOutcome outcome = AfterIoError(*target, &pool_dropped);
      if (outcome == IoOutcome::kStop) return reply.status();
      if (outcome == IoOutcome::kRetryFree) --attempt;
      last = reply.status();
      ask_target.clear();
      continue;
    }
    std::optional<RedisRedirect> redirect;
    absl::StatusOr<std::vector<std::optional<std::string>>> values =
        ReadOutcome(**reply, target->address, fields.size(), &redirect);
    if (!values.ok() && (*reply)->type == REDIS_REPLY_ERROR) {
      Refused(slot, target->address, values.status());
    }
    Return(*std::move(target));
    if (!values.ok() || !redirect.has_value()) return values;
    last = absl::UnavailableError(
        absl::StrCat("redis cluster: HMGET still redirected to ", redirect->address));
    ask_target = redirect->ask ? redirect->address : std::string();
    if (!redirect->ask) RecordMoved(static_cast<uint16_t>(redirect->slot), redirect->address);
  }
  return last;
}

}  // namespace rankwire::logstore
