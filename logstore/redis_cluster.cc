#include "logstore/redis_cluster.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rankwire::logstore {
namespace {

constexpr uint16_t kNoNode = 0xffff;

constexpr std::array<uint16_t, 256> MakeCrc16Table() {
  std::array<uint16_t, 256> table{};
  for (int i = 0; i < 256; ++i) {
    uint16_t crc = static_cast<uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    table[i] = crc;
  }
  return table;
}
constexpr std::array<uint16_t, 256> kCrc16Table = MakeCrc16Table();

const std::string& EmptyString() {
  static const std::string* empty = new std::string();
  return *empty;
}

}  // namespace

uint16_t Crc16(absl::string_view data) {
  uint16_t crc = 0;
  for (char c : data) {
    crc = static_cast<uint16_t>((crc << 8) ^
                                kCrc16Table[((crc >> 8) ^ static_cast<uint8_t>(c)) & 0xff]);
  }
  return crc;
}

uint16_t KeySlot(absl::string_view key) {
  const size_t open = key.find('{');
  if (open != absl::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != absl::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return Crc16(key) & (kClusterSlots - 1);
}

absl::StatusOr<RedisClusterOptions> ClusterOptionsFrom(const LogStoreConfig& config) {
  RedisClusterOptions options;
  for (absl::string_view seed : absl::StrSplit(config.redis_addr, ',', absl::SkipWhitespace())) {
    absl::StatusOr<RedisAddress> address = ParseRedisAddress(absl::StripAsciiWhitespace(seed));
    if (!address.ok()) return address.status();
    options.seeds.push_back(*std::move(address));
  }
  if (options.seeds.empty()) {
    return absl::InvalidArgumentError("redis cluster: no seed node in --redis_addr");
  }
  LogStoreConfig first = config;
  first.redis_addr = options.seeds.front().ToString();
  absl::StatusOr<RedisConnectOptions> connect = ConnectOptionsFrom(first);
  if (!connect.ok()) return connect.status();
  if (absl::Status backoff = CheckReconnectBackoff(config); !backoff.ok()) return backoff;
  options.connect = *std::move(connect);
  options.backoff_min = config.reconnect_backoff_min;
  options.backoff_max = config.reconnect_backoff_max;
  return options;
}

RedisClusterRouter::RedisClusterRouter(RedisClusterOptions options)
    : options_(std::move(options)), slots_(kClusterSlots, kNoNode) {}

const std::string& RedisClusterRouter::NodeFor(uint16_t slot) const {
  const uint16_t node = slots_[slot & (kClusterSlots - 1)];
  return node == kNoNode ? EmptyString() : nodes_[node];
}

absl::StatusOr<RedisConnection*> RedisClusterRouter::Connection(const std::string& address) {
  std::unique_ptr<Node>& slot = connections_[address];
  if (slot == nullptr) {
    slot = std::make_unique<Node>();
    slot->backoff = ReconnectBackoff(options_.backoff_min, options_.backoff_max);
  }
  Node& node = *slot;
  if (node.connection.has_value()) return &*node.connection;
  if (!node.backoff.Ready(absl::Now())) {
    return absl::UnavailableError(absl::StrCat("redis ", address, " is down (backing off)"));
  }
  absl::StatusOr<RedisAddress> parsed = ParseRedisAddress(address);
  if (!parsed.ok()) return parsed.status();
  RedisConnectOptions connect = options_.connect;
  connect.address = *std::move(parsed);
  absl::StatusOr<RedisConnection> connection = RedisConnection::Connect(connect);
  if (!connection.ok()) {
    node.had_failure = true;
    // A node that accepts connections but does not answer (stalled) is
    // left alone as long as one that timed out on CLUSTER SLOTS.
    node.backoff.FailedWith(absl::Now(), connection.status());
    return connection.status();
  }
  if (node.had_failure) ++reconnects_;
  node.had_failure = false;
  node.backoff.Succeeded();
  node.connection.emplace(*std::move(connection));
  return &*node.connection;
}

void RedisClusterRouter::SetSlot(uint16_t slot, const std::string& address) {
  auto it = std::find(nodes_.begin(), nodes_.end(), address);
  if (it == nodes_.end()) it = nodes_.insert(nodes_.end(), address);
  slots_[slot & (kClusterSlots - 1)] = static_cast<uint16_t>(it - nodes_.begin());
}

bool RedisClusterRouter::Connected(const std::string& address) const {
  auto it = connections_.find(address);
  return it != connections_.end() && it->second->connection.has_value();
}

void RedisClusterRouter::Disconnect(const std::string& address) {
  auto it = connections_.find(address);
  if (it == connections_.end()) return;
  it->second->connection.reset();
  it->second->had_failure = true;
  it->second->backoff.RetryNow();
}

absl::Status RedisClusterRouter::Refresh() {
  std::vector<std::string> candidates = nodes_;
  for (const RedisAddress& seed : options_.seeds) {
    std::string address = seed.ToString();
    if (std::find(candidates.begin(), candidates.end(), address) == candidates.end()) {
      candidates.push_back(std::move(address));
    }
  }
  absl::Status last = absl::UnavailableError("redis cluster: no node to ask for the slot map");
  for (const std::string& address : candidates) {
    last = LoadSlots(address);
    if (last.ok()) return last;
  }
  return last;
}

absl::StatusOr<RedisReplyPtr> RedisClusterRouter::AskSlots(const std::string& address) {
  ScopedSigpipeBlock no_sigpipe;
  const char* argv[] = {"CLUSTER", "SLOTS"};
  const size_t argv_len[] = {7, 5};
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool reused = Connected(address);
    absl::StatusOr<RedisConnection*> connection = Connection(address);
    if (!connection.ok()) return connection.status();
    absl::StatusOr<RedisReplyPtr> reply =
        (*connection)
            ->CommandWithin(2, argv, argv_len, options_.connect.io_timeout, "CLUSTER SLOTS");
    if (reply.ok()) return reply;
    absl::Status error = reply.status();
    if ((*connection)->TimedOut()) {
      // Stalled: not asked again until its backoff passes, so the next
      // reload goes to another node at once.
      Backoff(address);
      return error;
    }
    Disconnect(address);
    // A connection closed while idle fails on first use: once more on a
    // fresh one.
    if (!reused) return error;
  }
  return absl::UnavailableError(absl::StrCat("redis ", address, ": CLUSTER SLOTS failed"));
}

void RedisClusterRouter::Backoff(const std::string& address) {
  auto it = connections_.find(address);
  if (it == connections_.end()) return;
  Node& node = *it->second;
  node.connection.reset();
  node.had_failure = true;
  node.backoff.Failed(absl::Now(), kStalledNodeBackoff);
}

void RedisClusterRouter::AdoptMap(const RedisClusterRouter& other) {
  has_map_ = other.has_map_;
  slots_ = other.slots_;
  nodes_ = other.nodes_;
}

absl::Status RedisClusterRouter::LoadSlots(const std::string& address) {
  absl::StatusOr<RedisReplyPtr> asked = AskSlots(address);
  if (!asked.ok()) return asked.status();
  const RedisReplyPtr& reply = *asked;
  if (reply->type != REDIS_REPLY_ARRAY) {
    return absl::UnavailableError(absl::StrCat("redis ", address, ": CLUSTER SLOTS: ",
                                               reply->type == REDIS_REPLY_ERROR
                                                   ? absl::string_view(reply->str, reply->len)
                                                   : absl::string_view("not an array")));
  }
  std::vector<uint16_t> slots(kClusterSlots, kNoNode);
  std::vector<std::string> nodes;
  for (size_t i = 0; i < reply->elements; ++i) {
    const redisReply& range = *reply->element[i];
    if (range.type != REDIS_REPLY_ARRAY || range.elements < 3 ||
        range.element[0]->type != REDIS_REPLY_INTEGER ||
        range.element[1]->type != REDIS_REPLY_INTEGER ||
        range.element[2]->type != REDIS_REPLY_ARRAY || range.element[2]->elements < 2 ||
        (range.element[2]->element[0]->type != REDIS_REPLY_STRING &&
         range.element[2]->element[0]->type != REDIS_REPLY_NIL) ||
        range.element[2]->element[1]->type != REDIS_REPLY_INTEGER) {
      return absl::InternalError(absl::StrCat("redis ", address, ": malformed CLUSTER SLOTS"));
    }
    const long long start = range.element[0]->integer;
    const long long end = range.element[1]->integer;
    if (start < 0 || end >= kClusterSlots || start > end) {
      return absl::InternalError(absl::StrCat("redis ", address, ": bad slot range"));
    }
    const redisReply& master = *range.element[2];
    std::string host = master.element[0]->type == REDIS_REPLY_NIL
                           ? std::string()
                           : std::string(master.element[0]->str, master.element[0]->len);
    // An empty, "?" or NIL host means "the node you asked".
    RedisAddress node{host, static_cast<int>(master.element[1]->integer)};
    if (host.empty() || host == "?") {
      absl::StatusOr<RedisAddress> asked = ParseRedisAddress(address);
      if (asked.ok()) node.host = asked->host;
    }
    const std::string node_address = node.ToString();
    auto it = std::find(nodes.begin(), nodes.end(), node_address);
    const uint16_t index = static_cast<uint16_t>(it - nodes.begin());
    if (it == nodes.end()) nodes.push_back(node_address);
    std::fill(slots.begin() + start, slots.begin() + end + 1, index);
  }
  if (nodes.empty()) {
    return absl::UnavailableError(absl::StrCat("redis ", address, ": no slot is served"));
  }
  slots_ = std::move(slots);
  nodes_ = std::move(nodes);
  has_map_ = true;
  return absl::OkStatus();
}

}  // namespace rankwire::logstore
