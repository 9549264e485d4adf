#include "client/request_file.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace rankwire::client {
namespace {

// protobuf 3.21's JSON printer writes a negative zero as -0, which its
// parser reads as the integer 0: the sign is lost and a replayed request
// is not the one saved. -0.0 is read back as a negative zero. Outside
// strings an unquoted number in a RankRequest's JSON is a float or double
// (64-bit integers are quoted, top_n cannot be negative), so every bare
// -0 token becomes -0.0.
std::string KeepNegativeZeros(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    out.push_back(c);
    if (in_string) {
      if (c == '\\' && i + 1 < json.size()) {
        out.push_back(json[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '-' && i + 1 < json.size() && json[i + 1] == '0' &&
               (i + 2 == json.size() ||
                absl::string_view(",]} \n\r\t").find(json[i + 2]) != absl::string_view::npos)) {
      out += "0.0";
      ++i;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<rank::v1::RankRequest> ParseRequestBytes(absl::string_view bytes,
                                                        absl::string_view name) {
  rank::v1::RankRequest request;
  const absl::string_view text = absl::StripLeadingAsciiWhitespace(bytes);
  if (!text.empty() && text.front() == '{') {
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    const auto status = google::protobuf::util::JsonStringToMessage(
        google::protobuf::StringPiece(text.data(), text.size()), &request, options);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": not a RankRequest in protobuf JSON: ", status.ToString()));
    }
    return request;
  }
  if (!request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": neither protobuf JSON (it does not start with '{') nor a binary RankRequest"));
  }
  return request;
}

absl::StatusOr<rank::v1::RankRequest> ReadRequestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read request file ", path));
  std::string bytes;
  char buf[1 << 16];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    bytes.append(buf, static_cast<size_t>(in.gcount()));
    if (bytes.size() > kMaxRequestFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": larger than ", kMaxRequestFileBytes, " bytes"));
    }
  }
  return ParseRequestBytes(bytes, path);
}

std::string RequestJson(const rank::v1::RankRequest& request) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  // A message of this process's own descriptor always prints.
  (void)google::protobuf::util::MessageToJsonString(request, &json, options);
  return KeepNegativeZeros(json);
}

absl::Status WriteRequestJson(const rank::v1::RankRequest& request, const std::string& path) {
  return WriteRequestFile(request, path, RequestFileFormat::kJson);
}

RequestFileFormat RequestFileFormatFor(absl::string_view path) {
  return absl::EndsWith(path, ".bin") || absl::EndsWith(path, ".pb") ? RequestFileFormat::kBinary
                                                                     : RequestFileFormat::kJson;
}

absl::Status WriteRequestFile(const rank::v1::RankRequest& request, const std::string& path,
                              RequestFileFormat format) {
  const std::string bytes =
      format == RequestFileFormat::kJson ? RequestJson(request) : request.SerializeAsString();
  if (path == "-") {
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    std::fflush(stdout);
    return absl::OkStatus();
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace rankwire::client
