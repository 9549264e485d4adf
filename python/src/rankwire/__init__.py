"""rankwire: the Python client of the rankwire ranking service.

    import rankwire
    from rankwire import rank_pb2

    with rankwire.Client("dns:///rankwire.prod.svc.cluster.local:50051") as client:
        request = rank_pb2.RankRequest(request_id="req-1", ...)
        result = client.rank(request, timeout=0.2, accept_codecs=["rankbin"])
        for item in result.top(10):                  # lazy: ten records read
            print(item.position, item.id, item.score, item.metric("score.ctr"))
        logs = client.fetch_logs("req-1", [i.id for i in result.top(10)], timeout=0.1)

Reads every codec the server sends (protobuf, rankbin, rankbin-zstd); the
rankbin reader decodes only what is read. docs/CLIENTS.md is the caller's
guide (service config, deadlines, TLS, errors, compatibility); FORMAT.md the
payload specification.

Public names: Client, service_config, DEFAULT_SERVICE_CONFIG; Result, Item,
DecodedResult, DecodedItem, MetricType, Value, Limits; open_response,
open_payload, CODECS; the exceptions (rankwire.errors); the modules
rank_pb2 (the rank.v1 messages), logs (stored log values), rankbin, and
admin (rank.v1.ModelService: get_models, reload_models).
"""

import importlib
from typing import Any

from . import rankbin
from ._model import DecodedItem, DecodedResult, Item, Limits, MetricType, Value
from .errors import (ChecksumError, Error, FormatError, LimitError, RpcError, TruncatedError,
                     UnknownCodecError, UnsupportedVersionError)

# Imported on first use, so `import rankwire.logs` (the stored log decoder)
# needs neither grpc nor protobuf (docs/LOGS.md): name -> (module, attribute;
# None for the module itself).
_LAZY = {
    "Client": ("client", "Client"),
    "service_config": ("client", "service_config"),
    "DEFAULT_SERVICE_CONFIG": ("client", "DEFAULT_SERVICE_CONFIG"),
    "Result": ("_result", "Result"),
    "open_response": ("_result", "open_response"),
    "open_payload": ("_result", "open_payload"),
    "CODECS": ("_result", "CODECS"),
    "rank_pb2": ("rank_pb2", None),
    "admin": ("admin", None),
    "client": ("client", None),
    # Lazy too, so `python -m rankwire.logs` runs it once, as __main__.
    "logs": ("logs", None),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'rankwire' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(f".{module_name}", __name__)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> Any:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "Client", "service_config", "DEFAULT_SERVICE_CONFIG",
    "Result", "Item", "DecodedResult", "DecodedItem", "MetricType", "Value", "Limits",
    "open_response", "open_payload", "CODECS",
    "Error", "FormatError", "TruncatedError", "ChecksumError", "UnsupportedVersionError",
    "LimitError", "UnknownCodecError", "RpcError",
    "rank_pb2", "logs", "rankbin", "admin",
]
