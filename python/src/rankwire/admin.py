"""rank.v1.ModelService from Python: what a replica ranks with, and the
reload an operator asks for (docs/OPERATING.md, "Models").

    import rankwire.admin
    served = rankwire.admin.get_models("10.0.0.7:50051", timeout=5)
    print(served.generation, [(m.bucket, m.name, m.version) for m in served.models])
    # On the replica's plaintext health port (--health_port), with --model_admin_rpc:
    rankwire.admin.reload_models("10.0.0.7:50061", timeout=30)

Each call asks one replica on a channel of its own (no balancing, no
client-side health checking: a replica with no model still answers
GetModels). rankwire-cli --models and --reload_models do the same for every
replica of a list.

Thread safety: functions of their arguments.
"""

from __future__ import annotations

from typing import Optional

import grpc

from . import rank_pb2
from .errors import RpcError

__all__ = ["get_models", "reload_models"]

GET_MODELS_METHOD = "/rank.v1.ModelService/GetModels"
RELOAD_MODELS_METHOD = "/rank.v1.ModelService/ReloadModels"


def _call(target: str, method: str, request, timeout: float,
          credentials: Optional[grpc.ChannelCredentials]) -> rank_pb2.GetModelsResponse:
    channel = (grpc.insecure_channel(target) if credentials is None
               else grpc.secure_channel(target, credentials))
    with channel:
        stub = channel.unary_unary(method, request_serializer=type(request).SerializeToString,
                                   response_deserializer=rank_pb2.GetModelsResponse.FromString)
        try:
            return stub(request, timeout=timeout)
        except grpc.RpcError as e:
            name = method.rsplit("/", 1)[1]
            raise RpcError(name, e.code(), e.details()) from e  # type: ignore[attr-defined]


def get_models(target: str, *, timeout: float,
               credentials: Optional[grpc.ChannelCredentials] = None
               ) -> rank_pb2.GetModelsResponse:
    """What the replica at `target` ("host:port", its main port or its
    health port) ranks with now: its generation, each experiment bucket's
    model (name, version, kind, file, load time, features) and its last
    refused load (last_failure, last_failure_reason, last_failure_unix_ms;
    kept until a newer refusal). Raises RpcError."""
    return _call(target, GET_MODELS_METHOD, rank_pb2.GetModelsRequest(), timeout, credentials)


def reload_models(health_target: str, *, timeout: float) -> rank_pb2.GetModelsResponse:
    """Loads the replica's --model again now, as SIGHUP would, and returns
    what it serves once the new models are swapped in (or were unchanged).
    `health_target` is the replica's plaintext health port ("host:port" of
    --health_port; the server must run with --model_admin_rpc).

    Raises RpcError: FAILED_PRECONDITION ("reason <reason>: <file:line:
    problem>") when the new models are refused (the old ones serve on),
    PERMISSION_DENIED on a port that does not serve the admin RPC."""
    return _call(health_target, RELOAD_MODELS_METHOD, rank_pb2.ReloadModelsRequest(), timeout,
                 None)
