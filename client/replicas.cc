#include "client/replicas.h"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"

namespace rankwire::client {
namespace {

// "host:port" or "[v6]:port" split at the port's colon.
bool SplitHostPort(absl::string_view hostport, std::string* host, std::string* port) {
  const size_t colon = hostport.rfind(':');
  if (colon == absl::string_view::npos || colon + 1 == hostport.size()) return false;
  absl::string_view h = hostport.substr(0, colon);
  if (absl::StartsWith(h, "[") && absl::EndsWith(h, "]")) h = h.substr(1, h.size() - 2);
  if (h.empty()) return false;
  *host = std::string(h);
  *port = std::string(hostport.substr(colon + 1));
  return true;
}

// Every address `hostport`'s name resolves to, in the resolver's order,
// without repeats.
absl::StatusOr<std::vector<Replica>> Resolve(absl::string_view hostport) {
  std::string host, port;
  if (!SplitHostPort(hostport, &host, &port)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", hostport, "\": expected name:port"));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::NotFoundError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  std::vector<Replica> replicas;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char ip[NI_MAXHOST];
    if (getnameinfo(a->ai_addr, a->ai_addrlen, ip, sizeof(ip), nullptr, 0, NI_NUMERICHOST) != 0) {
      continue;
    }
    const bool v6 = a->ai_family == AF_INET6;
    Replica r;
    r.address = v6 ? absl::StrCat("[", ip, "]:", port) : absl::StrCat(ip, ":", port);
    r.target = absl::StrCat(v6 ? "ipv6:" : "ipv4:", r.address);
    if (std::none_of(replicas.begin(), replicas.end(),
                     [&](const Replica& o) { return o.target == r.target; })) {
      replicas.push_back(std::move(r));
    }
  }
  freeaddrinfo(found);
  if (replicas.empty()) return absl::NotFoundError(absl::StrCat(host, " has no address"));
  return replicas;
}

bool IsCommaList(const std::string& target) {
  for (absl::string_view scheme : {"ipv4:", "ipv6:", "dns:", "unix:"}) {
    if (absl::StartsWith(target, scheme)) return false;
  }
  return absl::StrContains(target, ',');
}

}  // namespace

absl::StatusOr<std::string> ChannelTargetOf(const std::string& target) {
  if (!IsCommaList(target)) return target;
  std::string scheme;
  std::vector<std::string> addresses;
  for (absl::string_view element : absl::StrSplit(target, ',', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(std::vector<Replica> resolved, Resolve(element));
    for (const Replica& r : resolved) {
      const std::string family = r.target.substr(0, r.target.find(':') + 1);
      if (!scheme.empty() && family != scheme) {
        return absl::InvalidArgumentError(absl::StrCat(
            target, ": mixes IPv4 and IPv6 addresses, which one gRPC channel cannot list"));
      }
      scheme = family;
      addresses.push_back(r.address);
    }
  }
  if (addresses.empty()) return absl::InvalidArgumentError(absl::StrCat(target, ": no address"));
  return absl::StrCat(scheme, absl::StrJoin(addresses, ","));
}

absl::StatusOr<std::vector<Replica>> ReplicasOf(const std::string& target) {
  if (target.empty()) return absl::InvalidArgumentError("empty target");
  for (absl::string_view scheme : {"ipv4:", "ipv6:"}) {
    if (!absl::StartsWith(target, scheme)) continue;
    std::vector<Replica> replicas;
    for (absl::string_view a :
         absl::StrSplit(absl::string_view(target).substr(scheme.size()), ',', absl::SkipEmpty())) {
      std::string host, port;
      if (!SplitHostPort(a, &host, &port)) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", a, "\" in ", target, ": expected address:port"));
      }
      replicas.push_back(Replica{std::string(a), absl::StrCat(scheme, a)});
    }
    if (replicas.empty()) return absl::InvalidArgumentError(absl::StrCat(target, ": no address"));
    return replicas;
  }
  if (absl::StartsWith(target, "dns:")) {
    // dns:name:port, dns:///name:port, dns://resolver/name:port (the system
    // resolver answers here).
    absl::string_view rest = absl::StripPrefix(target, "dns:");
    if (absl::ConsumePrefix(&rest, "//")) {
      const size_t slash = rest.find('/');
      rest = slash == absl::string_view::npos ? absl::string_view() : rest.substr(slash + 1);
    }
    return Resolve(rest);
  }
  if (absl::StrContains(target, ',')) {
    std::vector<Replica> replicas;
    for (absl::string_view a : absl::StrSplit(target, ',', absl::SkipEmpty())) {
      std::string host, port;
      if (!SplitHostPort(a, &host, &port)) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", a, "\" in ", target, ": expected host:port"));
      }
      replicas.push_back(Replica{std::string(a), std::string(a)});
    }
    return replicas;
  }
  return std::vector<Replica>{Replica{target, target}};
}

}  // namespace rankwire::client
