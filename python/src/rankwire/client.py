"""Client: rank.v1.RankService/Rank and LogService/FetchLogs over grpcio.

    with rankwire.Client("dns:///rankwire.prod.svc.cluster.local:50051") as client:
        result = client.rank(request, timeout=0.2)
        top = result.top(10)
        logs = client.fetch_logs(request.request_id, [i.id for i in top], timeout=0.1)

The default channel is what docs/CLIENTS.md advises against a fleet, the
same as the C++ client's MakeChannel: round_robin over every address the
target resolves to, a retry of UNAVAILABLE on both (idempotent) methods,
client-side health checking of rank.v1.RankService, reconnection to a
replica that went away at least every 2 s. Rank's response is received as
bytes and opened lazily (rankwire.Result): nothing is decoded beyond the
header until read.

Thread safety: a Client may be shared by threads (grpcio channels are).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import grpc

from . import rank_pb2
from ._model import Limits
from .errors import RpcError
from ._result import Result, open_response

__all__ = ["Client", "service_config", "DEFAULT_SERVICE_CONFIG"]

RANK_METHOD = "/rank.v1.RankService/Rank"
FETCH_LOGS_METHOD = "/rank.v1.LogService/FetchLogs"
_ACCEPT_CODECS_TAG = b"\x52"  # RankRequest field 10, length-delimited.


def service_config(*, lb_policy: str = "round_robin", max_attempts: int = 4,
                   health_service: str = "rank.v1.RankService") -> Dict[str, Any]:
    """A gRPC service config (as a dict) with these settings; the defaults
    are DEFAULT_SERVICE_CONFIG. `max_attempts` 1 turns retries off (gRPC
    allows at most 5); an empty `health_service` turns client-side health
    checking off (pick_first ignores it anyway). Only UNAVAILABLE is
    retried: RESOURCE_EXHAUSTED is a replica shedding load, and retrying it
    at once would add the load it sheds."""
    if lb_policy not in ("round_robin", "pick_first"):
        raise ValueError(f"lb policy {lb_policy!r}: expected round_robin or pick_first")
    if not 1 <= max_attempts <= 5:
        raise ValueError(f"max attempts {max_attempts}: expected 1 to 5 (gRPC's limit)")
    config: Dict[str, Any] = {"loadBalancingConfig": [{lb_policy: {}}]}
    if max_attempts > 1:
        config["methodConfig"] = [{
            "name": [{"service": "rank.v1.RankService", "method": "Rank"},
                     {"service": "rank.v1.LogService", "method": "FetchLogs"}],
            "retryPolicy": {"maxAttempts": max_attempts, "initialBackoff": "0.005s",
                            "maxBackoff": "0.1s", "backoffMultiplier": 2,
                            "retryableStatusCodes": ["UNAVAILABLE"]},
        }]
    if health_service:
        config["healthCheckConfig"] = {"serviceName": health_service}
    return config


#: round_robin, up to 4 attempts on UNAVAILABLE, health checking of
#: rank.v1.RankService: the C++ client's defaults (client/rank_client.h).
DEFAULT_SERVICE_CONFIG: Dict[str, Any] = service_config()


def _encode_accept_codecs(codecs: Sequence[str]) -> bytes:
    out = bytearray()
    for name in codecs:
        data = name.encode("utf-8")
        out += _ACCEPT_CODECS_TAG
        n = len(data)
        while n >= 0x80:
            out.append((n & 0x7F) | 0x80)
            n >>= 7
        out.append(n)
        out += data
    return bytes(out)


class Client:
    """A channel to a rankwire fleet and the two calls a caller makes."""

    def __init__(self, target: str, *,
                 credentials: Optional[grpc.ChannelCredentials] = None,
                 service_config: Optional[Union[str, Dict[str, Any]]] = DEFAULT_SERVICE_CONFIG,
                 ssl_target_name: Optional[str] = None,
                 max_message_bytes: int = 64 << 20,
                 max_reconnect_backoff_ms: int = 2000,
                 retry_buffer_bytes: int = 4 << 20,
                 options: Sequence[Tuple[str, Any]] = (),
                 limits: Optional[Limits] = None) -> None:
        """A channel to `target`: "host:port", "dns:///name:port" (every
        address is a replica) or "ipv4:a:p,b:p" (a fixed list).

        credentials: None for plaintext, else e.g.
            grpc.ssl_channel_credentials(root_certificates=ca_pem) (TLS), with
            private_key and certificate_chain for mutual TLS.
        service_config: DEFAULT_SERVICE_CONFIG, one from service_config(),
            any gRPC service config (JSON text or dict), or None for gRPC's
            defaults (pick_first, no retries). It is the channel's own: a
            service config published in DNS is ignored.
        ssl_target_name: the name checked against the server's certificate
            instead of the target's host.
        options: further gRPC channel arguments, appended last (they win).
        limits: caps on what one response may make the reader build.
        """
        args: List[Tuple[str, Any]] = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            # gRPC's default (256 KiB) is below a 1000-candidate request.
            ("grpc.per_rpc_retry_buffer_size", retry_buffer_bytes),
            # gRPC's default grows to 120 s, which leaves a replica restarted
            # on the same address without traffic for minutes.
            ("grpc.initial_reconnect_backoff_ms", min(1000, max_reconnect_backoff_ms)),
            ("grpc.max_reconnect_backoff_ms", max_reconnect_backoff_ms),
        ]
        if service_config is not None:
            text = service_config if isinstance(service_config, str) else json.dumps(service_config)
            args += [("grpc.service_config", text),
                     ("grpc.service_config_disable_resolution", 1)]
        if ssl_target_name:
            args.append(("grpc.ssl_target_name_override", ssl_target_name))
        args += list(options)
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options=args)
        else:
            self._channel = grpc.secure_channel(target, credentials, options=args)
        self._limits = limits or Limits()
        # Requests go out serialized by us and responses come back as bytes,
        # so a Rank response is never parsed as a protobuf message here.
        self._rank = self._channel.unary_unary(RANK_METHOD)
        self._fetch_logs = self._channel.unary_unary(
            FETCH_LOGS_METHOD,
            request_serializer=rank_pb2.FetchLogsRequest.SerializeToString,
            response_deserializer=rank_pb2.FetchLogsResponse.FromString)

    @property
    def channel(self) -> grpc.Channel:
        """The underlying grpcio channel (for health checks, other services)."""
        return self._channel

    def rank(self, request: rank_pb2.RankRequest, *, timeout: float,
             accept_codecs: Optional[Sequence[str]] = None,
             metadata: Optional[Sequence[Tuple[str, str]]] = None) -> Result:
        """Ranks `request`, with a deadline `timeout` seconds from now.

        accept_codecs: the codecs to ask for, most preferred first, in place
            of the request's own accept_codecs (the request is not
            modified). None keeps the request's; an empty list in both lets
            the server's default (--codec) decide, which is how an operator
            switches a fleet's codec. Every codec the server has is readable
            here.

        Raises RpcError when the call fails (.code: INVALID_ARGUMENT,
        RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, UNAVAILABLE...: see
        docs/CLIENTS.md), FormatError for a malformed response,
        UnknownCodecError for a codec this package cannot read.
        """
        data = request.SerializeToString()
        if accept_codecs is not None:
            if len(request.accept_codecs):
                copy = rank_pb2.RankRequest()
                copy.CopyFrom(request)
                del copy.accept_codecs[:]
                data = copy.SerializeToString()
            # A repeated field's entries may follow the rest of the message.
            data += _encode_accept_codecs(accept_codecs)
        try:
            response = self._rank(data, timeout=timeout, metadata=metadata)
        except grpc.RpcError as e:
            raise RpcError("Rank", e.code(), e.details()) from e  # type: ignore[attr-defined]
        return open_response(response, limits=self._limits)

    def fetch_logs(self, request_id: str, item_ids: Sequence[str], *,
                   timeout: float) -> Dict[str, Optional[str]]:
        """The stored logs of `item_ids` of a ranked request, through the
        server (any log store): item id -> log line, None for an item
        the store has no log of (expired after the TTL, or dropped). In the
        order asked. At most 1000 ids, none repeated."""
        request = rank_pb2.FetchLogsRequest(request_id=request_id, item_ids=list(item_ids))
        try:
            response = self._fetch_logs(request, timeout=timeout)
        except grpc.RpcError as e:
            raise RpcError("FetchLogs", e.code(), e.details()) from e  # type: ignore[attr-defined]
        found = {e.item_id: (e.log if e.found else None) for e in response.logs}
        return {item_id: found.get(item_id) for item_id in item_ids}

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
