// A RankRequest in a file, as an operator replays one: protobuf JSON (the
// canonical JSON mapping: what `rankwire-cli --dump_request` writes, and
// what `MessageToJson` in any language writes) or the binary wire form (a
// caller's captured request bytes). The form is told by the first byte
// that is not white space: '{' is JSON (a binary RankRequest cannot start
// with it: 0x7B would be field 15 as a group).
//
// Example:
//   ASSIGN_OR_RETURN(rank::v1::RankRequest request, ReadRequestFile("req.json"));
//   RETURN_IF_ERROR(WriteRequestJson(request, "copy.json"));
//   RETURN_IF_ERROR(WriteRequestFile(request, "copy.bin", RequestFileFormatFor("copy.bin")));
//
// Thread safety: functions of the file system only.
#ifndef RANKWIRE_CLIENT_REQUEST_FILE_H_
#define RANKWIRE_CLIENT_REQUEST_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rank/v1/rank.pb.h"

namespace rankwire::client {

// Largest request file read (a request at every input-contract limit is
// ~1.8 MB as binary and a few times that as JSON).
inline constexpr size_t kMaxRequestFileBytes = size_t{64} << 20;

// NotFound if the file cannot be read; InvalidArgument (naming the file)
// if it is neither a JSON nor a binary RankRequest, or is larger than
// kMaxRequestFileBytes.
absl::StatusOr<rank::v1::RankRequest> ReadRequestFile(const std::string& path);

// The same from the file's bytes; `name` is used in errors.
absl::StatusOr<rank::v1::RankRequest> ParseRequestBytes(absl::string_view bytes,
                                                        absl::string_view name);

// The request as protobuf JSON (field names as in rank.proto, every field
// written, pretty-printed), which ReadRequestFile reads back to the same
// message: floats and doubles are written with enough digits to round-trip.
std::string RequestJson(const rank::v1::RankRequest& request);

// RequestJson() to `path` ("-": standard output). Internal if it cannot be
// written.
absl::Status WriteRequestJson(const rank::v1::RankRequest& request, const std::string& path);

// The two forms ReadRequestFile reads.
enum class RequestFileFormat {
  kJson,    // RequestJson(): for people, and for editing.
  kBinary,  // The wire bytes, as a caller sends them.
};

// The form a file's name asks for: binary for a name ending in ".bin" or
// ".pb" (a captured request), JSON otherwise.
RequestFileFormat RequestFileFormatFor(absl::string_view path);

// The request in `format` to `path` ("-": standard output). Internal if it
// cannot be written.
absl::Status WriteRequestFile(const rank::v1::RankRequest& request, const std::string& path,
                              RequestFileFormat format);

}  // namespace rankwire::client

#endif  // RANKWIRE_CLIENT_REQUEST_FILE_H_
