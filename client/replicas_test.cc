#include "client/replicas.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rankwire::client {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Field;

std::vector<std::string> Addresses(const std::string& target) {
  absl::StatusOr<std::vector<Replica>> r = ReplicasOf(target);
  EXPECT_TRUE(r.ok()) << r.status();
  std::vector<std::string> out;
  if (r.ok()) {
    for (const Replica& replica : *r) out.push_back(replica.address + " " + replica.target);
  }
  return out;
}

TEST(ReplicasTest, AnIpListIsEachAddress) {
  EXPECT_THAT(
      Addresses("ipv4:10.0.0.1:50051,10.0.0.2:50052"),
      ElementsAre("10.0.0.1:50051 ipv4:10.0.0.1:50051", "10.0.0.2:50052 ipv4:10.0.0.2:50052"));
  EXPECT_THAT(Addresses("ipv6:[::1]:50051"), ElementsAre("[::1]:50051 ipv6:[::1]:50051"));
}

TEST(ReplicasTest, ACommaListIsEachTargetAsWritten) {
  EXPECT_THAT(Addresses("a.example:1,b.example:2"),
              ElementsAre("a.example:1 a.example:1", "b.example:2 b.example:2"));
}

// A comma list, which gRPC would take for one DNS name, becomes one ipv4:
// list for a balancing channel; other targets are left as they are.
TEST(ReplicasTest, ACommaListIsResolvedForOneChannel) {
  absl::StatusOr<std::string> t = ChannelTargetOf("127.0.0.1:1,127.0.0.2:2");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, "ipv4:127.0.0.1:1,127.0.0.2:2");
  for (const std::string same : {"localhost:50051", "ipv4:10.0.0.1:1,10.0.0.2:2",
                                 "dns:///rankwire.default.svc.cluster.local:50051"}) {
    EXPECT_EQ(ChannelTargetOf(same).value_or("error"), same);
  }
  EXPECT_EQ(ChannelTargetOf("127.0.0.1:1,[::1]:2").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ChannelTargetOf("127.0.0.1:1,no-such-host.invalid:2").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(ReplicasTest, OneTargetIsOneReplica) {
  EXPECT_THAT(Addresses("localhost:50051"), ElementsAre("localhost:50051 localhost:50051"));
  EXPECT_THAT(Addresses("unix:/tmp/s"), ElementsAre("unix:/tmp/s unix:/tmp/s"));
}

TEST(ReplicasTest, ADnsTargetIsEveryAddressTheNameHasNow) {
  // /etc/hosts: localhost is at least 127.0.0.1.
  for (const std::string target :
       {"dns:///localhost:7", "dns:localhost:7", "dns://8.8.8.8/localhost:7"}) {
    absl::StatusOr<std::vector<Replica>> r = ReplicasOf(target);
    ASSERT_TRUE(r.ok()) << target << ": " << r.status();
    EXPECT_THAT(*r, Contains(Field(&Replica::target, "ipv4:127.0.0.1:7"))) << target;
  }
  absl::StatusOr<std::vector<Replica>> literal = ReplicasOf("dns:///[::1]:9");
  ASSERT_TRUE(literal.ok()) << literal.status();
  EXPECT_THAT(*literal, ElementsAre(Field(&Replica::address, "[::1]:9")));
}

TEST(ReplicasTest, MalformedTargetsAreRefused) {
  EXPECT_EQ(ReplicasOf("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReplicasOf("ipv4:10.0.0.1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReplicasOf("ipv4:").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReplicasOf("a:1,b").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReplicasOf("dns:///no-such-host.invalid:1").status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace rankwire::client
