"""Central-control's side of rankwire, in Python: rank 500 candidates with a
deadline, show the top 10 (read lazily), fetch their logs, and handle the
two errors a caller must expect (docs/CLIENTS.md, "Errors").

    python3 central_control.py dns:///rankwire.prod.svc.cluster.local:50051
"""

import sys
import time
from typing import List, Optional

import grpc

import rankwire
from rankwire import rank_pb2


def make_request(request_id: str) -> rank_pb2.RankRequest:
    request = rank_pb2.RankRequest(
        request_id=request_id, scene=rank_pb2.SCENE_SEARCH, user_id="u-42",
        request_time_ms=int(time.time() * 1000), top_n=10,
        log_mode=rank_pb2.LOG_MODE_STORE)       # logs to the store, not the response
    request.item_feature_names.extend(["price", "ctr_7d", "text_match"])
    for i in range(500):
        request.candidates.add(item_id=f"sku-{i}", recall_source="text_bm25",
                               recall_rank=i + 1, features=[20.0 + i, 0.01 * (i % 7), 0.5])
    return request


def rank_with_backoff(client: rankwire.Client,
                      request: rank_pb2.RankRequest) -> Optional[rankwire.Result]:
    """The ranked result, or None when the fleet cannot rank it now."""
    for attempt in range(3):
        try:
            # The deadline covers the channel's own retries of UNAVAILABLE.
            return client.rank(request, timeout=0.25, accept_codecs=["rankbin"])
        except rankwire.RpcError as e:
            if e.code == grpc.StatusCode.RESOURCE_EXHAUSTED and attempt < 2:
                time.sleep(0.02 * 2 ** attempt)  # Shedding load: back off, never retry at once.
                continue
            if e.code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE,
                          grpc.StatusCode.DEADLINE_EXCEEDED):
                print(f"ranking unavailable ({e.code.name}): {e.details}", file=sys.stderr)
                return None  # Fall back (e.g. to recall order).
            raise  # INVALID_ARGUMENT and the like: a bug in the request.
    return None


def main(target: str) -> int:
    with rankwire.Client(target) as client:
        request = make_request(f"cc-{int(time.time() * 1e6)}")
        result = rank_with_backoff(client, request)
        if result is None:
            return 1
        top = result.top(10)                      # ten records read, nothing else
        for item in top:
            print(f"{item.position:2} {item.id:8} {item.score:.4f} "
                  f"ctr={item.metric('score.ctr'):.4f} src={item.metric('recall.source')}")
        ids: List[str] = [item.id for item in top]
        try:
            logs = client.fetch_logs(request.request_id, ids, timeout=0.1)
            missing = [i for i in ids if logs[i] is None]
            if missing:
                # Logs reach the store a few milliseconds after the response:
                # ask once more, a little later; never in a loop.
                time.sleep(0.05)
                logs.update(client.fetch_logs(request.request_id, missing, timeout=0.1))
        except rankwire.RpcError as e:
            print(f"logs unavailable ({e.code.name})", file=sys.stderr)
            return 0  # Logs are for debugging: ranking succeeded.
        for item_id in ids:
            line = logs[item_id]
            print(f"{item_id}: {line[:100] if line is not None else '(no log yet)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "localhost:50051"))
