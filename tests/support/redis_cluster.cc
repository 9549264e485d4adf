#include "tests/support/redis_cluster.h"

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace rankwire::test {
namespace {

// CLUSTER SLOTS of `node`: (start, end, master address) triples.
struct SlotRange {
  int64_t start = 0, end = 0;
  std::string master;
};

absl::StatusOr<std::vector<SlotRange>> ClusterSlots(const RedisProcess& node) {
  absl::StatusOr<RedisReply> reply = node.Command({"CLUSTER", "SLOTS"});
  if (!reply.ok()) return reply.status();
  if (reply->type != RedisReply::Type::kArray) {
    return absl::InternalError(absl::StrCat("CLUSTER SLOTS: ", reply->str));
  }
  std::vector<SlotRange> ranges;
  for (const RedisReply& r : reply->elements) {
    if (r.elements.size() < 3 || r.elements[2].elements.size() < 2) {
      return absl::InternalError("malformed CLUSTER SLOTS");
    }
    ranges.push_back(SlotRange{
        r.elements[0].integer, r.elements[1].integer,
        absl::StrCat(r.elements[2].elements[0].str, ":", r.elements[2].elements[1].integer)});
  }
  return ranges;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisCluster>> RedisCluster::Start(RedisClusterOptions options) {
  std::unique_ptr<RedisCluster> cluster(new RedisCluster());
  const int count = options.masters * (1 + options.replicas);
  for (int i = 0; i < count; ++i) {
    // The bus port must be given: the default (port + 10000) can fall
    // outside 1..65535 for an ephemeral port.
    absl::StatusOr<int> bus = PickFreePort();
    if (!bus.ok()) return bus.status();
    RedisProcessOptions node;
    node.extra_args = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                       "--cluster-node-timeout",
                       absl::StrCat(absl::ToInt64Milliseconds(options.node_timeout)),
                       "--cluster-port", absl::StrCat(*bus),
                       // A replica takes over as soon as it can.
                       "--cluster-replica-validity-factor", "0"};
    absl::StatusOr<std::unique_ptr<RedisProcess>> process = RedisProcess::Start(node);
    if (!process.ok()) return process.status();
    cluster->nodes_.push_back(*std::move(process));
  }
  std::vector<std::string> addresses;
  for (const auto& node : cluster->nodes_) addresses.push_back(node->address());
  const std::string out = absl::StrCat(cluster->nodes_.front()->dir(), "/cluster-create.txt");
  const std::string command = absl::StrCat("timeout 60 ", RANKWIRE_REDIS_CLI, " --cluster create ",
                                           absl::StrJoin(addresses, " "), " --cluster-replicas ",
                                           options.replicas, " --cluster-yes > ", out, " 2>&1");
  const int rc = std::system(command.c_str());
  if (rc != 0) {
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    return absl::InternalError(
        absl::StrCat("redis-cli --cluster create failed (", rc, "): ", text.str()));
  }
  absl::Status ok = cluster->WaitUntilOk(options.start_timeout);
  if (!ok.ok()) return ok;
  return cluster;
}

std::string RedisCluster::SeedList() const {
  std::vector<std::string> addresses;
  for (const auto& node : nodes_) addresses.push_back(node->address());
  return absl::StrJoin(addresses, ",");
}

absl::Status RedisCluster::WaitUntilOk(absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  std::string last;
  while (absl::Now() < deadline) {
    bool all = true;
    for (const auto& node : nodes_) {
      if (!node->running()) continue;
      absl::StatusOr<RedisReply> info = node->Command({"CLUSTER", "INFO"});
      if (!info.ok() || !absl::StrContains(info->str, "cluster_state:ok")) {
        all = false;
        last = absl::StrCat(node->address(), ": ",
                            info.ok() ? info->str.substr(0, 40) : info.status().ToString());
        break;
      }
    }
    // Also every slot served by a running master, as seen by every node.
    if (all) {
      for (const auto& node : nodes_) {
        if (!node->running()) continue;
        absl::StatusOr<std::vector<SlotRange>> ranges = ClusterSlots(*node);
        if (!ranges.ok()) {
          all = false;
          break;
        }
        int64_t covered = 0;
        for (const SlotRange& r : *ranges) {
          bool master_running = false;
          for (const auto& n : nodes_) master_running |= n->running() && n->address() == r.master;
          if (master_running) covered += r.end - r.start + 1;
        }
        if (covered != 16384) {
          all = false;
          last = absl::StrCat(node->address(), " sees ", covered, " slots served");
          break;
        }
      }
    }
    if (all) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat("cluster not ok: ", last));
}

absl::StatusOr<RedisProcess*> RedisCluster::MasterOf(int slot) const {
  for (const auto& node : nodes_) {
    if (!node->running()) continue;
    absl::StatusOr<std::vector<SlotRange>> ranges = ClusterSlots(*node);
    if (!ranges.ok()) continue;
    for (const SlotRange& r : *ranges) {
      if (slot < r.start || slot > r.end) continue;
      for (const auto& n : nodes_) {
        if (n->running() && n->address() == r.master) return n.get();
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("no running master for slot ", slot));
}

absl::StatusOr<std::vector<std::string>> RedisCluster::MasterAddresses() const {
  for (const auto& node : nodes_) {
    if (!node->running()) continue;
    absl::StatusOr<std::vector<SlotRange>> ranges = ClusterSlots(*node);
    if (!ranges.ok()) return ranges.status();
    std::vector<std::string> masters;
    for (const SlotRange& r : *ranges) {
      bool seen = false;
      for (const std::string& m : masters) seen |= m == r.master;
      if (!seen) masters.push_back(r.master);
    }
    return masters;
  }
  return absl::UnavailableError("no running node");
}

absl::Status RedisCluster::KillMasterOf(int slot) {
  absl::StatusOr<RedisProcess*> master = MasterOf(slot);
  if (!master.ok()) return master.status();
  return (*master)->Kill();
}

absl::Status RedisCluster::WaitForNewMaster(int slot, const std::string& old_master,
                                            absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    absl::StatusOr<RedisProcess*> master = MasterOf(slot);
    if (master.ok() && (*master)->address() != old_master) {
      return WaitUntilOk(deadline - absl::Now());
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat("no new master for slot ", slot));
}

absl::StatusOr<RedisReply> RedisCluster::CommandForKey(const std::string& key,
                                                       const std::vector<std::string>& args) const {
  for (const auto& node : nodes_) {
    if (!node->running()) continue;
    absl::StatusOr<RedisReply> reply = node->Command(args);
    if (!reply.ok()) continue;
    if (reply->type == RedisReply::Type::kError && absl::StartsWith(reply->str, "MOVED ")) {
      std::vector<std::string> parts = absl::StrSplit(reply->str, ' ');
      for (const auto& n : nodes_) {
        if (parts.size() == 3 && n->running() && n->address() == parts[2]) return n->Command(args);
      }
      continue;
    }
    return reply;
  }
  return absl::UnavailableError(absl::StrCat("no node answered for ", key));
}

}  // namespace rankwire::test
