#include "logstore/redis_log_reader.h"

#include <hiredis/hiredis.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "logstore/log_value.h"

namespace rankwire::logstore {

absl::StatusOr<std::unique_ptr<RedisLogReader>> RedisLogReader::Create(
    const LogStoreConfig& config) {
  ASSIGN_OR_RETURN(RedisConnectOptions options, ConnectOptionsFrom(config));
  return std::make_unique<RedisLogReader>(std::move(options), config.key_prefix);
}

absl::StatusOr<std::vector<std::optional<std::string>>> RedisLogReader::Fetch(
    absl::string_view request_id, absl::Span<const std::string> item_ids) {
  std::vector<std::optional<std::string>> values(item_ids.size());
  if (item_ids.empty()) return values;

  const std::string key = absl::StrCat(key_prefix_, request_id);
  std::vector<const char*> argv;
  std::vector<size_t> argv_len;
  argv.reserve(item_ids.size() + 2);
  argv_len.reserve(item_ids.size() + 2);
  argv.push_back("HMGET");
  argv_len.push_back(5);
  argv.push_back(key.data());
  argv_len.push_back(key.size());
  for (const std::string& id : item_ids) {
    argv.push_back(id.data());
    argv_len.push_back(id.size());
  }

  RedisReplyPtr reply;
  {
    ScopedSigpipeBlock no_sigpipe;
    absl::MutexLock lock(&mu_);
    // Two tries: a connection kept from an earlier call may have died with
    // a server restart; only a fresh connection's failure is reported.
    for (int attempt = 0; attempt < 2 && reply == nullptr; ++attempt) {
      const bool fresh = !connection_.has_value();
      if (fresh) {
        ASSIGN_OR_RETURN(RedisConnection connection, RedisConnection::Connect(options_));
        connection_.emplace(std::move(connection));
      }
      reply.reset(static_cast<redisReply*>(redisCommandArgv(
          connection_->get(), static_cast<int>(argv.size()), argv.data(), argv_len.data())));
      if (reply == nullptr) {
        absl::Status error = connection_->IoError("HMGET");
        connection_.reset();
        if (fresh) return error;
      }
    }
  }
  if (reply->type == REDIS_REPLY_ERROR) {
    return absl::InternalError(absl::StrCat(
        "redis ", options_.address.ToString(), ": HMGET: ",
        absl::string_view(reply->str, reply->len)));
  }
  if (reply->type != REDIS_REPLY_ARRAY || reply->elements != item_ids.size()) {
    return absl::InternalError(absl::StrCat(
        "redis ", options_.address.ToString(), ": HMGET returned ", reply->elements,
        " values for ", item_ids.size(), " fields"));
  }
  for (size_t i = 0; i < item_ids.size(); ++i) {
    const redisReply& element = *reply->element[i];
    if (element.type == REDIS_REPLY_NIL) continue;
    if (element.type != REDIS_REPLY_STRING) {
      return absl::InternalError(absl::StrCat("redis: HMGET value of item '", item_ids[i],
                                              "' is not a string"));
    }
    ASSIGN_OR_RETURN(values[i], DecodeItemLog(absl::string_view(element.str, element.len),
                                              request_id, item_ids[i]));
  }
  return values;
}

}  // namespace rankwire::logstore
