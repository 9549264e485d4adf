#include "rpc/transport_args.h"

#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace rankwire::rpc {

absl::StatusOr<TransportArgs> ParseTransportArgs(absl::string_view text) {
  TransportArgs out;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    entry = absl::StripAsciiWhitespace(entry);
    const size_t eq = entry.find('=');
    int value = 0;
    if (eq == absl::string_view::npos || !absl::StartsWith(entry, "grpc.") ||
        !absl::SimpleAtoi(entry.substr(eq + 1), &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("transport argument \"", entry, "\": expected grpc.<name>=<integer>"));
    }
    out.emplace_back(std::string(entry.substr(0, eq)), value);
  }
  return out;
}

TransportArgs DefaultTransportArgs() { return *ParseTransportArgs(kDefaultTransportArgs); }

void ApplyTransportArgs(const TransportArgs& args, grpc::ServerBuilder* builder) {
  for (const auto& [name, value] : args) builder->AddChannelArgument(name, value);
}

void ApplyTransportArgs(const TransportArgs& args, grpc::ChannelArguments* channel) {
  for (const auto& [name, value] : args) channel->SetInt(name, value);
}

}  // namespace rankwire::rpc
