#include "client/cli_fleet.h"

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "client/replicas.h"
#include "rank/v1/rank.grpc.pb.h"
#include "rpc/status.h"

namespace rankwire::client {
namespace {

// One round of asking every replica: a line per replica, and whether the
// round found what was asked for (OK) or why not.
struct Round {
  std::vector<std::string> lines;
  absl::Status status;
};

// Runs `round` until it is OK or `wait` has passed (at least once), every
// 100 ms, and prints the last round's lines.
absl::Status Rounds(absl::Duration wait, const std::function<absl::StatusOr<Round>()>& round) {
  const absl::Time deadline = absl::Now() + wait;
  while (true) {
    ASSIGN_OR_RETURN(Round r, round());
    if (r.status.ok() || absl::Now() >= deadline) {
      for (const std::string& line : r.lines) absl::PrintF("%s\n", line);
      return r.status;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

// A channel to one replica alone: no balancing, no client-side health
// checking (it would fail calls to a NOT_SERVING replica), no retries
// elsewhere.
absl::StatusOr<std::shared_ptr<grpc::Channel>> ReplicaChannel(const Replica& replica,
                                                              ChannelOptions options) {
  if (!options.service_config.empty()) {
    return absl::InvalidArgumentError(
        "--health, --models and --reload_models ask each replica on its own and take no "
        "--service_config");
  }
  options.health_service.clear();
  options.lb_policy = "pick_first";
  options.max_attempts = 1;
  return MakeChannel(replica.target, options);
}

void SetDeadline(grpc::ClientContext* context, absl::Duration deadline) {
  context->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(deadline));
}

std::string UnixMsText(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::string FullVersion(const rank::v1::ServedModel& m) {
  return absl::StrCat(m.name(), "@", m.version());
}

// "ecom_search_lr@2026.11.3 (linear) from /m/1.model, loaded in 1 ms", with
// "bucket control 90%: " first for a manifest's bucket.
std::string ModelText(const rank::v1::ServedModel& m) {
  return absl::StrCat(
      m.bucket().empty() ? "" : absl::StrFormat("bucket %s %d%%: ", m.bucket(), m.percent()),
      FullVersion(m), " (", m.kind(), ") from ", m.path(), ", loaded in ", m.load_ms(), " ms");
}

// What a replica serves, on one line: its generation and source, each
// bucket's model, and its last refused load.
std::string ModelsText(const rank::v1::GetModelsResponse& r) {
  std::string text = absl::StrCat("generation ", r.generation(), " from ", r.source(), ": ");
  if (r.models().empty()) {
    absl::StrAppend(&text, "no model loads (rank.v1.RankService NOT_SERVING, Rank UNAVAILABLE)");
  }
  absl::StrAppend(
      &text, absl::StrJoin(r.models(), "; ", [](std::string* out, const rank::v1::ServedModel& m) {
        absl::StrAppend(out, ModelText(m));
      }));
  if (!r.last_failure().empty()) {
    absl::StrAppend(&text, "; last refused ", UnixMsText(r.last_failure_unix_ms()), " (",
                    r.last_failure_reason(), "): ", r.last_failure());
  }
  return text;
}

// Whether the replica serves exactly the models `expect` lists (name@version,
// comma-separated, in any order and bucket).
bool ServesExactly(const rank::v1::GetModelsResponse& r, const std::string& expect) {
  std::set<std::string> want = absl::StrSplit(expect, ',', absl::SkipEmpty());
  std::set<std::string> served;
  for (const rank::v1::ServedModel& m : r.models()) served.insert(FullVersion(m));
  return served == want;
}

absl::StatusOr<rank::v1::GetModelsResponse> GetModels(const std::shared_ptr<grpc::Channel>& channel,
                                                      absl::Duration deadline) {
  auto stub = rank::v1::ModelService::NewStub(channel);
  grpc::ClientContext context;
  SetDeadline(&context, deadline);
  rank::v1::GetModelsResponse response;
  RETURN_IF_ERROR(FromGrpcStatus(stub->GetModels(&context, {}, &response)));
  return response;
}

// One replica's health line, and whether it is SERVING for both names.
std::string HealthLine(const Replica& replica, grpc::Channel* channel, absl::Duration deadline,
                       bool* serving) {
  CallOptions call;
  call.deadline = deadline;
  std::string line = absl::StrCat("health ", replica.address, ":");
  *serving = true;
  for (const std::string service : {"", "rank.v1.RankService"}) {
    absl::StatusOr<HealthStatus> status = CheckHealth(channel, service, call);
    if (!status.ok()) {
      absl::StrAppend(&line, " error ", status.status().ToString());
      *serving = false;
      break;
    }
    absl::StrAppend(&line, " ", service.empty() ? "server" : service, "=",
                    HealthStatusName(*status));
    *serving &= *status == HealthStatus::kServing;
  }
  return line;
}

// One replica's reload line: what ReloadModels answered, against what it
// served before.
std::string ReloadLine(const Replica& replica, const std::shared_ptr<grpc::Channel>& channel,
                       absl::Duration deadline, absl::Status* outcome) {
  const std::string head = absl::StrCat("reload ", replica.address, ": ");
  absl::StatusOr<rank::v1::GetModelsResponse> before = GetModels(channel, deadline);
  if (!before.ok()) {
    *outcome = before.status();
    return absl::StrCat(head, "error ", before.status().ToString());
  }
  auto stub = rank::v1::ModelService::NewStub(channel);
  grpc::ClientContext context;
  SetDeadline(&context, deadline);
  rank::v1::GetModelsResponse after;
  *outcome = FromGrpcStatus(stub->ReloadModels(&context, {}, &after));
  if (absl::IsFailedPrecondition(*outcome)) {
    return absl::StrCat(head, "refused: ", outcome->message(), "; still serving ",
                        ModelsText(*before));
  }
  if (!outcome->ok()) return absl::StrCat(head, "error ", outcome->ToString());
  const bool changed = after.generation() != before->generation();
  return absl::StrCat(head, changed ? "loaded, " : "unchanged, ", ModelsText(after));
}

}  // namespace

absl::Status HealthOfReplicas(const FleetOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Replica> replicas, ReplicasOf(options.target));
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (const Replica& replica : replicas) {
    ASSIGN_OR_RETURN(channels.emplace_back(), ReplicaChannel(replica, options.channel));
  }
  return Rounds(options.wait, [&]() -> absl::StatusOr<Round> {
    Round round;
    size_t serving = 0;
    for (size_t i = 0; i < replicas.size(); ++i) {
      bool ok = false;
      round.lines.push_back(HealthLine(replicas[i], channels[i].get(), options.deadline, &ok));
      serving += ok;
    }
    if (serving < replicas.size()) {
      round.status = absl::UnavailableError(absl::StrCat(replicas.size() - serving, " of ",
                                                         replicas.size(), " replicas not serving"));
    }
    return round;
  });
}

absl::Status ModelsOfReplicas(const FleetOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Replica> replicas, ReplicasOf(options.target));
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (const Replica& replica : replicas) {
    ASSIGN_OR_RETURN(channels.emplace_back(), ReplicaChannel(replica, options.channel));
  }
  const std::string& expect = options.expect_model;
  return Rounds(options.wait, [&]() -> absl::StatusOr<Round> {
    Round round;
    size_t failed = 0, missing = 0;
    for (size_t i = 0; i < replicas.size(); ++i) {
      absl::StatusOr<rank::v1::GetModelsResponse> r = GetModels(channels[i], options.deadline);
      const std::string head = absl::StrCat("models ", replicas[i].address, ": ");
      if (!r.ok()) {
        round.lines.push_back(absl::StrCat(head, "error ", r.status().ToString()));
        ++failed;
        continue;
      }
      round.lines.push_back(absl::StrCat(head, ModelsText(*r)));
      missing += !expect.empty() && !ServesExactly(*r, expect);
    }
    if (failed > 0) {
      round.status = absl::UnavailableError(
          absl::StrCat(failed, " of ", replicas.size(), " replicas did not answer"));
    } else if (missing > 0) {
      round.status = absl::FailedPreconditionError(
          absl::StrCat(missing, " of ", replicas.size(), " replicas do not serve ", expect));
    } else if (!expect.empty()) {
      round.lines.push_back(
          absl::StrCat(replicas.size(), " of ", replicas.size(), " replicas serve ", expect));
    }
    return round;
  });
}

absl::Status ReloadReplicas(const FleetOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Replica> replicas, ReplicasOf(options.target));
  ChannelOptions plaintext = options.channel;  // The health port speaks no TLS.
  plaintext.credentials = grpc::InsecureChannelCredentials();
  plaintext.ssl_target_name.clear();
  size_t refused = 0;
  absl::Status first_error;
  for (const Replica& replica : replicas) {
    ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, ReplicaChannel(replica, plaintext));
    absl::Status outcome;
    absl::PrintF("%s\n", ReloadLine(replica, channel, options.deadline, &outcome));
    refused += absl::IsFailedPrecondition(outcome);
    if (!outcome.ok() && !absl::IsFailedPrecondition(outcome) && first_error.ok()) {
      first_error = outcome;
    }
  }
  if (!first_error.ok()) return first_error;
  if (refused > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(refused, " of ", replicas.size(),
                     " replicas refused the new models (still serving the old)"));
  }
  return absl::OkStatus();
}

}  // namespace rankwire::client
