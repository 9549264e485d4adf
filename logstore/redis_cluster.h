// Redis Cluster routing for the log store, the part hiredis does not have:
// which master serves a key, and connections to the masters.
//
// What it relies on from Redis Cluster (and nothing else):
//   - key -> slot: CRC16 (XMODEM) of the key, or of its hash tag (the text
//     between the first '{' and the next '}', if not empty), mod 16384;
//   - the slot map from CLUSTER SLOTS (masters only; replicas are ignored);
//   - -MOVED <slot> <host:port>: the slot has a new master; record it and
//     resend there. The sink also reloads the map at once; the reader marks
//     it stale, and a later try or call reloads it (at most once per 100 ms,
//     at most once per Fetch). The MOVED target wins over the reloaded map
//     for that slot (the sink's over its reload; the reader's over every
//     reload until one agrees, a later MOVED replaces it or its node
//     fails): the node asked for the map may not have heard of the move
//     yet (the cluster spreads it by gossip);
//   - CLUSTER SLOTS hosts: a string, or empty, "?" or NIL (the node asked),
//     and a redirect's empty host (":6380") likewise means the node that
//     answered (cluster-preferred-endpoint-type unknown-endpoint);
//   - -ASK <slot> <host:port>: the key is being migrated; send ASKING and
//     the command to that node once, without touching the map;
//   - a transaction (MULTI ... EXEC) on one key runs on that key's master.
// Not used: replica reads, READONLY, pub/sub, cross-slot commands.
//
// The router holds the slot map and one connection per node it talks to,
// made on first use, with a per-node reconnect backoff so a dead master
// costs one failed connect per backoff period, not one per batch. The sink
// writes through these connections; the reader keeps its own pools
// (redis_cluster_log_store.h) and uses routers for the map and CLUSTER
// SLOTS only.
//
// Thread safety: a router is used by one thread at a time: the sink's
// writer thread; in the reader, its map under the reader's lock, and its
// reloading router by the one call that reloads.
#ifndef RANKWIRE_LOGSTORE_REDIS_CLUSTER_H_
#define RANKWIRE_LOGSTORE_REDIS_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "logstore/log_store.h"
#include "logstore/redis_connection.h"

namespace rankwire::logstore {

inline constexpr int kClusterSlots = 16384;

// CRC16/XMODEM, the checksum Redis Cluster uses.
uint16_t Crc16(absl::string_view data);
// The slot of `key`, hash tags respected.
uint16_t KeySlot(absl::string_view key);

struct RedisClusterOptions {
  std::vector<RedisAddress> seeds;
  RedisConnectOptions connect;  // Its address is replaced per node.
  absl::Duration backoff_min = absl::Milliseconds(50);
  absl::Duration backoff_max = absl::Milliseconds(250);
};

// The cluster fields of `config`: redis_addr as a comma-separated seed
// list. InvalidArgument for an empty list or a bad address.
absl::StatusOr<RedisClusterOptions> ClusterOptionsFrom(const LogStoreConfig& config);

class RedisClusterRouter {
 public:
  explicit RedisClusterRouter(RedisClusterOptions options);

  // Loads the slot map from the first node (known masters, then seeds)
  // that answers CLUSTER SLOTS. kUnavailable if none does.
  absl::Status Refresh();
  bool has_map() const { return has_map_; }
  // The master serving `slot` ("host:port"), or "" if no node does.
  const std::string& NodeFor(uint16_t slot) const;
  // The distinct masters of the current map.
  const std::vector<std::string>& masters() const { return nodes_; }
  // Records a -MOVED: `slot` is served by `address` from now on (until a
  // reload says otherwise).
  void SetSlot(uint16_t slot, const std::string& address);
  // Whether a connection to `address` is open (it may still turn out to
  // have been closed by the server).
  bool Connected(const std::string& address) const;

  // The connection to `address`, connecting if needed. kUnavailable while
  // the node's backoff runs after a failed attempt (at least
  // kStalledNodeBackoff after a connect that timed out).
  absl::StatusOr<RedisConnection*> Connection(const std::string& address);
  // Drops the connection after an I/O error; the next attempt is immediate.
  void Disconnect(const std::string& address);
  // What a node may keep one exchange waiting (RedisConnection::GetReplyWithin).
  absl::Duration io_timeout() const { return options_.connect.io_timeout; }
  // Drops the connection and starts the node's backoff (a stalled node),
  // for at least kStalledNodeBackoff.
  void Backoff(const std::string& address);
  // Takes `other`'s slot map (not its connections): a reader reloads the
  // map on a router of its own, outside its lock, and installs it here.
  void AdoptMap(const RedisClusterRouter& other);

  // Connections made after a failure (a node lost, a failover).
  uint64_t reconnects() const { return reconnects_; }

 private:
  struct Node {
    std::optional<RedisConnection> connection;
    ReconnectBackoff backoff;
    bool had_failure = false;
  };
  absl::Status LoadSlots(const std::string& address);
  // CLUSTER SLOTS on `address`: once more on a fresh connection if an open
  // one turns out closed; after a timeout the node backs off.
  absl::StatusOr<RedisReplyPtr> AskSlots(const std::string& address);

  const RedisClusterOptions options_;
  bool has_map_ = false;
  std::vector<uint16_t> slots_;     // Index into nodes_, kNoNode if unserved.
  std::vector<std::string> nodes_;  // Masters.
  // Boxed: Connection() hands out pointers that must survive later inserts.
  absl::flat_hash_map<std::string, std::unique_ptr<Node>> connections_;
  uint64_t reconnects_ = 0;
};

}  // namespace rankwire::logstore

#endif  // RANKWIRE_LOGSTORE_REDIS_CLUSTER_H_
