// RedisCluster runs a real Redis Cluster for a test: `masters` masters with
// `replicas` replicas each, every node a RedisProcess (redis_process.h) on a
// free loopback port with its cluster bus on another free port, joined with
// `redis-cli --cluster create ... --cluster-yes`. It waits until every node
// reports cluster_state:ok, and stops every node when destroyed.
//
// Example:
//   auto cluster = RedisCluster::Start({.masters = 3, .replicas = 1});
//   ASSERT_TRUE(cluster.ok()) << cluster.status();
//   config.redis_addr = (*cluster)->SeedList();
//   ...
//   ASSERT_TRUE((*cluster)->KillMasterOf(slot).ok());
//   ASSERT_TRUE((*cluster)->WaitForMasterOf(slot, absl::Seconds(20)).ok());
//
// Thread safety: one thread controls a RedisCluster; Command() may be called
// from any thread.
#ifndef RANKWIRE_TESTS_SUPPORT_REDIS_CLUSTER_H_
#define RANKWIRE_TESTS_SUPPORT_REDIS_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/support/redis_process.h"

namespace rankwire::test {

struct RedisClusterOptions {
  int masters = 3;
  int replicas = 0;  // Per master.
  // Small so a failover in a test takes seconds, not the default 15 s.
  absl::Duration node_timeout = absl::Milliseconds(1000);
  absl::Duration start_timeout = absl::Seconds(30);
};

class RedisCluster {
 public:
  static absl::StatusOr<std::unique_ptr<RedisCluster>> Start(RedisClusterOptions options = {});

  // "127.0.0.1:p1,127.0.0.1:p2,..." over every node.
  std::string SeedList() const;
  const std::vector<std::unique_ptr<RedisProcess>>& nodes() const { return nodes_; }

  // The running node serving `slot` as master (from CLUSTER SLOTS of any
  // running node), or NotFound.
  absl::StatusOr<RedisProcess*> MasterOf(int slot) const;
  // The addresses of the current masters.
  absl::StatusOr<std::vector<std::string>> MasterAddresses() const;

  // SIGKILLs the master of `slot`.
  absl::Status KillMasterOf(int slot);
  // Waits until a running node other than `old_master` is master of `slot`
  // and every running node says cluster_state:ok.
  absl::Status WaitForNewMaster(int slot, const std::string& old_master, absl::Duration timeout);

  // Runs one command on the node serving `key` (following one MOVED).
  absl::StatusOr<RedisReply> CommandForKey(const std::string& key,
                                           const std::vector<std::string>& args) const;

 private:
  RedisCluster() = default;
  absl::Status WaitUntilOk(absl::Duration timeout) const;

  std::vector<std::unique_ptr<RedisProcess>> nodes_;
};

}  // namespace rankwire::test

#endif  // RANKWIRE_TESTS_SUPPORT_REDIS_CLUSTER_H_
