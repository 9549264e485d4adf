"""Hostile and garbage callers for the soak's nemesis: what a careless or
malicious client sends a replica, from Python (grpcio) and raw TCP.

Each call must get a clean refusal: a status among ALLOWED (never OK,
never INTERNAL/UNKNOWN, never a dropped connection), and a raw-TCP
garbage connection must be closed by the server. The generators mirror
tests/support/hostile_requests.h (the amplification request, a maximal
one) and tests/fuzz (random and truncated bytes).
"""

import os
import random
import subprocess
import sys

import grpc
from google.protobuf import json_format

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python", "src"))
from rankwire import rank_pb2  # noqa: E402  (the committed rank.v1 messages)

from soak_fleet import raw_tcp_garbage  # noqa: E402

RANK = "/rank.v1.RankService/Rank"
# What a refusal may be. UNIMPLEMENTED: a method the server does not have.
ALLOWED = {"INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "UNIMPLEMENTED"}
# Damaged copies of a valid request may still be valid (a flipped bit in a
# float, a cut at a field boundary): ranked (OK) or refused, both clean.
MAY_RANK = {"random_bytes", "truncated", "flipped_bytes"}


class Hostile:
    def __init__(self, cli_binary, work, candidates, max_candidates):
        path = os.path.join(work, "hostile-base.json")
        subprocess.run([cli_binary, "--dump_request=" + path, "--candidates=%d" % candidates,
                        "--codec=rankbin"], check=True, capture_output=True, timeout=60)
        with open(path) as f:
            self.base = json_format.Parse(f.read(), rank_pb2.RankRequest())
        self.max_candidates = max_candidates

    def payloads(self, rng):
        """[(kind, method, bytes)] for one round against one replica."""
        good = self.base.SerializeToString()
        out = [
            ("random_bytes", RANK, bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4096)))),
            ("truncated", RANK, good[:rng.randint(1, len(good) - 1)]),
            ("flipped_bytes", RANK, _flip(good, rng, 16)),
            ("unknown_method", "/rank.v1.RankService/Nope", good),
        ]
        too_many = rank_pb2.RankRequest()
        too_many.CopyFrom(self.base)
        while len(too_many.candidates) <= self.max_candidates:
            too_many.candidates.extend(self.base.candidates)
        out.append(("too_many_candidates", RANK, too_many.SerializeToString()))
        amplify = rank_pb2.RankRequest()
        amplify.CopyFrom(self.base)
        amplify.user_id = "u" * (100 * 1024)
        amplify.log_mode = rank_pb2.LOG_MODE_INLINE
        del amplify.accept_codecs[:]
        amplify.accept_codecs.append("protobuf")
        out.append(("amplification", RANK, amplify.SerializeToString()))
        nan = rank_pb2.RankRequest()
        nan.CopyFrom(self.base)
        nan.candidates[0].features[0] = float("nan")
        out.append(("nan_feature", RANK, nan.SerializeToString()))
        huge = rank_pb2.RankRequest()
        huge.CopyFrom(self.base)
        huge.request_id = "r" * (3 << 20)  # Over --max_request_bytes' default.
        out.append(("oversized", RANK, huge.SerializeToString()))
        return out

    def burst(self, replicas, seconds, rng, clock):
        """Sends rounds of payloads to every replica for `seconds`; returns
        [(unix time, replica, kind, outcome, clean)]."""
        results = []
        channels = {r.name: grpc.insecure_channel(
            r.address, options=[("grpc.max_send_message_length", 8 << 20)]) for r in replicas}
        try:
            end = clock() + seconds
            while clock() < end:
                for r in replicas:
                    ch = channels[r.name]
                    for kind, method, payload in self.payloads(rng):
                        call = ch.unary_unary(method, request_serializer=lambda b: b,
                                              response_deserializer=lambda b: b)
                        try:
                            call(payload, timeout=5)
                            outcome = "OK"
                        except grpc.RpcError as e:
                            outcome = e.code().name
                        clean = outcome in ALLOWED or (outcome == "OK" and kind in MAY_RANK)
                        results.append((clock(), r.name, kind, outcome, clean))
                    for kind, data in (("tcp_garbage", os.urandom(rng.randint(1, 2048))),
                                       ("http1_request", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")):
                        closed = raw_tcp_garbage(r.port, data)
                        results.append((clock(), r.name, kind, "closed" if closed else "open",
                                        closed))
        finally:
            for ch in channels.values():
                ch.close()
        return results


def _flip(data, rng, n):
    b = bytearray(data)
    for _ in range(n):
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


if __name__ == "__main__":  # A quick look against one server: soak_hostile.py CLI PORT
    class _R:
        name = "server"

        def __init__(self, port):
            self.port = port
            self.address = "127.0.0.1:%d" % port

    import time
    h = Hostile(sys.argv[1], "/tmp", 200, 1000)
    for row in h.burst([_R(int(sys.argv[2]))], 0.1, random.Random(1), time.time):
        print(row)
