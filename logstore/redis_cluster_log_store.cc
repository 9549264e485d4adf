#include "logstore/redis_cluster_log_store.h"

#include <hiredis/hiredis.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
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
  std::vector<Route> routes;
  size_t sent = 0;  // Routes whose commands reached the socket.
  absl::Status error;
};

// Entries still to send, with the ASK target of an entry redirected by ASK.
using Pending = std::vector<std::pair<size_t, std::string>>;

// What a round found beyond the per-entry results.
struct RoundOutcome {
  bool moved = false;        // A MOVED: reload the map.
  bool node_failed = false;  // A node could not be reached or was lost.
  bool stale = false;        // The map may be out of date.
};

// Connects to `address` and sends `node`'s transactions, each flushed as
// soon as it is queued; sets node.error on failure.
void SendToNode(RedisClusterRouter& router, RedisCommandWriter& commands,
                const std::string& address, absl::Span<SinkEntry> batch,
                const std::string& ttl_ms, NodeBatch& node) {
  absl::StatusOr<RedisConnection*> connection = router.Connection(address);
  if (!connection.ok()) {
    node.error = connection.status();
    return;
  }
  node.connection = *connection;
  redisContext* context = node.connection->get();
  for (const Route& route : node.routes) {
    if (!commands.AppendWrite(context, batch[route.entry], ttl_ms, route.asking)) {
      node.error = node.connection->IoError("queue commands");
      return;
    }
    int written = 0;
    do {
      if (redisBufferWrite(context, &written) != REDIS_OK) {
        node.error = node.connection->IoError("write logs");
        return;
      }
    } while (!written);
    ++node.sent;
  }
}

// Reads `node`'s replies into `results`; redirected entries go to
// `pending`. After a lost connection the node's unconfirmed entries fail
// with its error (each transaction ran whole or not at all).
void ReadFromNode(RedisClusterRouter& router, const std::string& address, NodeBatch& node,
                  std::vector<absl::Status>& results, Pending& pending, RoundOutcome& outcome) {
  for (size_t k = 0; k < node.routes.size() && node.error.ok(); ++k) {
    const Route& route = node.routes[k];
    const int count = kRepliesPerWrite + (route.asking ? 1 : 0);
    RedisReplyPtr replies[kRepliesPerWrite + 1];
    redisReply* raw_replies[kRepliesPerWrite + 1];
    for (int r = 0; r < count && node.error.ok(); ++r) {
      void* raw = nullptr;
      if (redisGetReply(node.connection->get(), &raw) != REDIS_OK) {
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
    if (redirect.has_value()) {
      outcome.moved |= !redirect->ask;
      pending.emplace_back(route.entry, redirect->ask ? redirect->address : std::string());
      results[route.entry] = absl::UnavailableError(absl::StrCat(
          "redis cluster: still redirected after 3 tries (last to ", redirect->address, ")"));
    } else if (results[route.entry].code() == absl::StatusCode::kUnavailable) {
      outcome.stale = true;  // CLUSTERDOWN: the map may be changing.
    }
  }
  if (node.error.ok()) return;
  for (const Route& route : node.routes) {
    if (results[route.entry].ok()) continue;
    const bool redirected = std::any_of(pending.begin(), pending.end(),
                                        [&](const auto& p) { return p.first == route.entry; });
    if (!redirected) results[route.entry] = node.error;
  }
  if (node.connection != nullptr) router.Disconnect(address);
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
    up_.store(MaybeRefresh(false) && !stale_, std::memory_order_relaxed);
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

std::vector<absl::Status> RedisClusterSink::Write(absl::Span<SinkEntry> batch,
                                                  absl::Duration ttl) {
  ScopedSigpipeBlock no_sigpipe;
  std::vector<absl::Status> results(batch.size(),
                                    absl::UnavailableError("redis cluster: no slot map"));
  if (!MaybeRefresh(false)) {
    up_.store(false, std::memory_order_relaxed);
    LogError(results.front(), batch.size());
    return results;
  }
  const std::string ttl_ms = absl::StrCat(std::max<int64_t>(1, absl::ToInt64Milliseconds(ttl)));
  Pending pending;
  for (size_t i = 0; i < batch.size(); ++i) pending.emplace_back(i, std::string());
  bool node_failed = false;
  for (int round = 0; round < 3 && !pending.empty(); ++round) {
    // Group by node, keeping the batch's order within each node.
    absl::flat_hash_map<std::string, NodeBatch> nodes;
    std::vector<std::string> order;
    for (auto& [entry, ask_target] : pending) {
      const bool asking = !ask_target.empty();
      const std::string& address =
          asking ? ask_target : router_.NodeFor(KeySlot(batch[entry].key));
      if (address.empty()) {
        results[entry] = absl::UnavailableError(absl::StrCat(
            "redis cluster: no master serves slot ", KeySlot(batch[entry].key)));
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
      ReadFromNode(router_, address, nodes[address], results, pending, outcome);
    }
    node_failed |= outcome.node_failed;
    stale_ |= outcome.stale;
    if (outcome.moved) MaybeRefresh(/*force=*/true);
  }
  up_.store(!node_failed, std::memory_order_relaxed);
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

absl::StatusOr<std::vector<std::optional<std::string>>> RedisClusterReader::Fetch(
    absl::string_view request_id, absl::Span<const std::string> item_ids) {
  if (item_ids.empty()) return std::vector<std::optional<std::string>>();
  const std::string key = absl::StrCat(key_prefix_, request_id);
  const uint16_t slot = KeySlot(key);
  ScopedSigpipeBlock no_sigpipe;
  absl::MutexLock lock(&mu_);
  std::string ask_target;
  absl::Status last = absl::UnavailableError("redis cluster: no slot map");
  // Three tries: a stale map (MOVED), a migration (ASK) or a lost
  // connection each cost one more round trip.
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (!router_.has_map() || (attempt > 0 && ask_target.empty())) {
      absl::Status refreshed = router_.Refresh();
      if (!refreshed.ok() && !router_.has_map()) return refreshed;
    }
    const std::string address = ask_target.empty() ? router_.NodeFor(slot) : ask_target;
    if (address.empty()) {
      last = absl::UnavailableError(absl::StrCat("redis cluster: no master serves slot ", slot));
      continue;
    }
    absl::StatusOr<RedisConnection*> connection = router_.Connection(address);
    if (!connection.ok()) {
      last = connection.status();
      ask_target.clear();
      continue;
    }
    void* raw = nullptr;
    if (!commands_.AppendRead((*connection)->get(), key, item_ids, !ask_target.empty()) ||
        (!ask_target.empty() && redisGetReply((*connection)->get(), &raw) != REDIS_OK)) {
      last = (*connection)->IoError("HMGET");
      router_.Disconnect(address);
      ask_target.clear();
      continue;
    }
    RedisReplyPtr asking_reply(static_cast<redisReply*>(raw));
    raw = nullptr;
    if (redisGetReply((*connection)->get(), &raw) != REDIS_OK) {
      last = (*connection)->IoError("HMGET");
      router_.Disconnect(address);
      ask_target.clear();
      continue;
    }
    RedisReplyPtr reply(static_cast<redisReply*>(raw));
    std::optional<RedisRedirect> redirect;
    absl::StatusOr<std::vector<std::optional<std::string>>> values =
        ReadOutcome(*reply, address, request_id, item_ids, &redirect);
    if (!values.ok() || !redirect.has_value()) return values;
    last = absl::UnavailableError(
        absl::StrCat("redis cluster: HMGET still redirected to ", redirect->address));
    ask_target = redirect->ask ? redirect->address : std::string();
  }
  return last;
}

}  // namespace rankwire::logstore
