#include "logstore/redis_commands.h"

#include <hiredis/hiredis.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "logstore/format/log_record.h"
#include "logstore/format/log_value.h"

namespace rankwire::logstore {
namespace {

absl::string_view ReplyText(const redisReply& reply) {
  return absl::string_view(reply.str == nullptr ? "" : reply.str, reply.len);
}

std::optional<RedisRedirect> RedirectOf(const redisReply& reply, absl::string_view address) {
  if (reply.type != REDIS_REPLY_ERROR) return std::nullopt;
  return ParseRedirect(ReplyText(reply), address);
}

}  // namespace

std::optional<RedisRedirect> ParseRedirect(absl::string_view error, absl::string_view replying) {
  const bool moved = absl::StartsWith(error, "MOVED ");
  const bool ask = absl::StartsWith(error, "ASK ");
  if (!moved && !ask) return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(error, ' ', absl::SkipEmpty());
  int slot = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[1], &slot) || slot < 0 || slot >= 16384) {
    return std::nullopt;
  }
  std::string address(parts[2]);
  if (absl::StartsWith(address, ":")) {
    // No host: the replying node's ("[::1]:6379" keeps its brackets).
    const size_t colon = replying.rfind(':');
    if (colon == absl::string_view::npos) return std::nullopt;
    address = absl::StrCat(replying.substr(0, colon), address);
  }
  return RedisRedirect{ask, slot, std::move(address)};
}

namespace {

// A RESP array header and bulk strings ("*2\r\n$3\r\nDEL\r\n$5\r\nkey-1\r\n").
void AppendArray(size_t count, std::string* out) { absl::StrAppend(out, "*", count, "\r\n"); }
void AppendBulk(absl::string_view bytes, std::string* out) {
  absl::StrAppend(out, "$", bytes.size(), "\r\n", bytes, "\r\n");
}

}  // namespace

bool RedisCommandWriter::SendWrite(RedisConnection& connection, const SinkEntry& entry,
                                   absl::string_view ttl_ms, IoBudget* budget, bool asking) {
  head_.clear();
  tail_.clear();
  if (asking) head_.append("*1\r\n$6\r\nASKING\r\n");
  head_.append("*1\r\n$5\r\nMULTI\r\n");
  // DEL first: a request id used again within the TTL replaces the earlier
  // request's logs instead of merging with them.
  AppendArray(2, &head_);
  AppendBulk("DEL", &head_);
  AppendBulk(entry.key, &head_);
  // HSET's header; its fields follow as they were packed.
  AppendArray(2 + 2 * entry.fields.size(), &head_);
  AppendBulk("HSET", &head_);
  AppendBulk(entry.key, &head_);
  AppendArray(3, &tail_);
  AppendBulk("PEXPIRE", &tail_);
  AppendBulk(entry.key, &tail_);
  AppendBulk(ttl_ms, &tail_);
  tail_.append("*1\r\n$4\r\nEXEC\r\n");
  pieces_.clear();
  pieces_.push_back(head_);
  entry.fields.Wire(&pieces_);
  pieces_.push_back(tail_);
  return connection.WriteWithin(pieces_, budget);
}

bool RedisCommandWriter::AppendRead(redisContext* context, absl::string_view key,
                                    absl::Span<const std::string> fields, bool asking) {
  argv_.clear();
  argv_len_.clear();
  argv_.push_back("HMGET");
  argv_len_.push_back(5);
  argv_.push_back(key.data());
  argv_len_.push_back(key.size());
  for (const std::string& field : fields) {
    argv_.push_back(field.data());
    argv_len_.push_back(field.size());
  }
  const char* asking_argv[] = {"ASKING"};
  const size_t asking_len[] = {6};
  return (!asking || redisAppendCommandArgv(context, 1, asking_argv, asking_len) == REDIS_OK) &&
         redisAppendCommandArgv(context, static_cast<int>(argv_.size()), argv_.data(),
                                argv_len_.data()) == REDIS_OK;
}

absl::Status WriteOutcome(absl::Span<redisReply* const> replies, absl::string_view address,
                          std::optional<RedisRedirect>* redirect) {
  redirect->reset();
  if (replies.size() != kRepliesPerWrite) {
    return absl::InternalError(absl::StrCat("redis ", address, ": wrong reply count"));
  }
  // A command refused at queue time (a slot served elsewhere: -MOVED/-ASK;
  // a full server: -OOM) shows up here, and EXEC then answers EXECABORT.
  for (int i = 1; i < kRepliesPerWrite - 1; ++i) {
    if (std::optional<RedisRedirect> r = RedirectOf(*replies[i], address); r.has_value()) {
      *redirect = std::move(r);
      return absl::OkStatus();
    }
  }
  const redisReply& exec = *replies[kRepliesPerWrite - 1];
  // Redis checks the key's slot again at EXEC: a slot that moved after the
  // commands were queued discards the transaction with -MOVED / -ASK.
  if (std::optional<RedisRedirect> r = RedirectOf(exec, address); r.has_value()) {
    *redirect = std::move(r);
    return absl::OkStatus();
  }
  if (exec.type == REDIS_REPLY_ERROR) {
    for (int i = 0; i < kRepliesPerWrite - 1; ++i) {
      if (replies[i]->type == REDIS_REPLY_ERROR) {
        const absl::string_view error = ReplyText(*replies[i]);
        return absl::StartsWith(error, "CLUSTERDOWN")
                   ? absl::UnavailableError(absl::StrCat("redis ", address, ": ", error))
                   : absl::InternalError(
                         absl::StrCat("redis ", address, " refused the write: ", error));
      }
    }
    return absl::InternalError(
        absl::StrCat("redis ", address, " refused the write: ", ReplyText(exec)));
  }
  if (exec.type != REDIS_REPLY_ARRAY || exec.elements != 3) {
    return absl::InternalError(
        absl::StrCat("redis ", address, ": unexpected EXEC reply (type ", exec.type, ")"));
  }
  static constexpr const char* kNames[] = {"DEL", "HSET", "PEXPIRE"};
  for (size_t i = 0; i < exec.elements; ++i) {
    const redisReply& r = *exec.element[i];
    if (r.type == REDIS_REPLY_ERROR) {
      return absl::InternalError(
          absl::StrCat("redis ", address, ": ", kNames[i], ": ", ReplyText(r)));
    }
  }
  // PEXPIRE answers 0 when the key does not exist, which right after HSET in
  // the same transaction means something else deleted it.
  if (exec.element[2]->type != REDIS_REPLY_INTEGER || exec.element[2]->integer != 1) {
    return absl::InternalError(absl::StrCat("redis ", address, ": PEXPIRE did not set the TTL"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::optional<std::string>>> ReadOutcome(
    const redisReply& reply, absl::string_view address, size_t field_count,
    std::optional<RedisRedirect>* redirect) {
  redirect->reset();
  std::vector<std::optional<std::string>> values(field_count);
  if (reply.type == REDIS_REPLY_ERROR) {
    if (std::optional<RedisRedirect> r = RedirectOf(reply, address); r.has_value()) {
      *redirect = std::move(r);
      return values;
    }
    const absl::string_view error = ReplyText(reply);
    if (absl::StartsWith(error, "CLUSTERDOWN")) {
      return absl::UnavailableError(absl::StrCat("redis ", address, ": HMGET: ", error));
    }
    return absl::InternalError(absl::StrCat("redis ", address, ": HMGET: ", error));
  }
  if (reply.type != REDIS_REPLY_ARRAY || reply.elements != field_count) {
    return absl::InternalError(absl::StrCat("redis ", address, ": HMGET returned ", reply.elements,
                                            " values for ", field_count, " fields"));
  }
  for (size_t i = 0; i < field_count; ++i) {
    const redisReply& element = *reply.element[i];
    if (element.type == REDIS_REPLY_NIL) continue;
    if (element.type != REDIS_REPLY_STRING) {
      return absl::InternalError(
          absl::StrCat("redis ", address, ": HMGET value of field ", i, " is not a string"));
    }
    values[i].emplace(element.str, element.len);
  }
  return values;
}

}  // namespace rankwire::logstore
