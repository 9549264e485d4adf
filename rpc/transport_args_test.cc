#include "rpc/transport_args.h"

#include <grpcpp/support/channel_arguments.h>

#include "gtest/gtest.h"

namespace rankwire::rpc {
namespace {

TEST(TransportArgs, ParsesAList) {
  absl::StatusOr<TransportArgs> args =
      ParseTransportArgs(" grpc.http2.max_frame_size=1048576 ,grpc.http2.bdp_probe=0");
  ASSERT_TRUE(args.ok()) << args.status();
  ASSERT_EQ(args->size(), 2u);
  EXPECT_EQ((*args)[0], std::make_pair(std::string("grpc.http2.max_frame_size"), 1048576));
  EXPECT_EQ((*args)[1], std::make_pair(std::string("grpc.http2.bdp_probe"), 0));
}

TEST(TransportArgs, EmptyIsGrpcsDefaults) {
  absl::StatusOr<TransportArgs> args = ParseTransportArgs("");
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(args->empty());
}

TEST(TransportArgs, RefusesWhatIsNotAnIntegerGrpcArgument) {
  for (const char* bad : {"grpc.http2.max_frame_size", "max_frame_size=1",
                          "grpc.http2.max_frame_size=big", "grpc.x=1,oops"}) {
    absl::StatusOr<TransportArgs> args = ParseTransportArgs(bad);
    EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(TransportArgs, TheDefaultsParse) {
  const TransportArgs args = DefaultTransportArgs();
  EXPECT_EQ(args.size(), 3u);
  grpc::ChannelArguments channel;
  ApplyTransportArgs(args, &channel);  // Applies without complaint.
}

}  // namespace
}  // namespace rankwire::rpc
