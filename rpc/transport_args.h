// gRPC transport arguments for the Rank path, set the same way wherever a
// channel or server is made (rankwire-server, the client's channels, the
// load generator, bench/serve_floor), so that a measurement of the floor
// and of the server sees one transport.
//
// An argument list is text, "name=value,name=value" with integer values
// (every HTTP/2 and TCP argument that matters here is an int), so that a
// benchmark can try gRPC's defaults (an empty list) beside the chosen ones
// in one run, without a rebuild. kDefaultTransportArgs are the ones kept
// (docs/bench-notes/2026-12-07-request-path.md measured each alone and in
// pairs against gRPC's defaults, on serve_floor and rankwire-loadgen):
//   grpc.experimental.tcp_read_chunk_size / tcp_min_read_chunk_size 65536
//       a read takes a 50 KB request or most of an 85 KB response at once
//       (gRPC starts at 8 KB and adapts): fewer recvmsg calls and slices;
//       the floor's CPU per call 0.85-0.90x of the defaults'. It costs up
//       to 64 KB of buffer per connection while a read is under way.
//   grpc.http2.max_frame_size 1048576
//       a peer may send a whole request or response as one DATA frame, so
//       it arrives as one slice (no flattening before the parse) and goes
//       out as one header and one iovec.
// Tried and not kept: grpc.http2.bdp_probe=0 (1.19x the floor's CPU, 6.5
// context switches a call instead of 5.9), the same with
// grpc.http2.lookahead_bytes=4194304 (1.45x), and the lookahead alone and
// grpc.http2.write_buffer_size=0 (within the noise).
//
// Thread safety: pure functions.
#ifndef RANKWIRE_RPC_TRANSPORT_ARGS_H_
#define RANKWIRE_RPC_TRANSPORT_ARGS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace grpc {
class ChannelArguments;
class ServerBuilder;
}  // namespace grpc

namespace rankwire::rpc {

inline constexpr char kDefaultTransportArgs[] =
    "grpc.experimental.tcp_read_chunk_size=65536,grpc.experimental.tcp_min_read_chunk_size=65536,"
    "grpc.http2.max_frame_size=1048576";

using TransportArgs = std::vector<std::pair<std::string, int>>;

// "name=value,..." (empty: none). InvalidArgument naming the bad entry: no
// '=', a name that is not a grpc.* argument, a value that is not an int.
absl::StatusOr<TransportArgs> ParseTransportArgs(absl::string_view text);
// kDefaultTransportArgs, parsed.
TransportArgs DefaultTransportArgs();

void ApplyTransportArgs(const TransportArgs& args, grpc::ServerBuilder* builder);
void ApplyTransportArgs(const TransportArgs& args, grpc::ChannelArguments* channel);

}  // namespace rankwire::rpc

#endif  // RANKWIRE_RPC_TRANSPORT_ARGS_H_
