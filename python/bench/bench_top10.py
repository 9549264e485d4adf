#!/usr/bin/python3
"""Opening the shipped 500-item response and reading its top 10, in Python:
the rankwire package on the rankbin response against python3-protobuf on
the protobuf baseline response. Issue 38's target: >= 20x, in one run.

    /usr/bin/python3 python/bench/bench_top10.py --build build [--rounds 15]

The payload is the one every benchmark here measures (BENCHMARKS.md): the
workload's request 0 (500 candidates, seed 20261129, written by
rankwire_conformance_dump --request) ranked by a real rankwire-server with
the shipped model, logs inline (the targets' setting; --log_mode store for
the other). Each codec's RankResponse bytes are fetched once; then, in
interleaved rounds (their order alternating), the same work is timed from
those bytes:

  rankwire   rankwire.open_response(bytes), then for each of the top 10:
             id, score, position, every metric (Item.metrics()) and the log
  protobuf   rank_pb2.RankResponse.FromString(bytes), then for each of the
             first 10 items: item_id, score, position, dict(metrics), log
             (metric text left as text: the baseline is not charged for
             turning it into numbers)

and, for scale, the hot fields only (id, score, position) and every item
(rankwire: Result.materialize(), a full decode). Each
round's ratio is the protobuf time over the rankwire time; the report gives
the median and range of the rounds. Run it with Debian's /usr/bin/python3
(python3-protobuf's C++ implementation: api_implementation.Type() is printed).
"""

import argparse
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

import grpc  # noqa: E402
from google.protobuf.internal import api_implementation  # noqa: E402

import rankwire  # noqa: E402
from rankwire import rank_pb2  # noqa: E402


def start_server(build):
    proc = subprocess.Popen(
        [os.path.join(build, "server", "rankwire-server"), "--port=0", "--metrics_port=-1",
         "--address=127.0.0.1",
         "--model=" + os.path.join(HERE, "..", "..", "model", "models", "ecom_search_lr.model")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 15
    while time.time() < deadline:
        line = proc.stdout.readline()
        m = re.search(r"listening port=(\d+)", line)
        if m:
            return proc, f"127.0.0.1:{m.group(1)}"
        if not line:
            break
    proc.kill()
    raise RuntimeError("rankwire-server did not start")


def shipped_request(build):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "request.pb")
        subprocess.run([os.path.join(build, "tests", "interop", "rankwire_conformance_dump"),
                        "--request", path], check=True)
        with open(path, "rb") as f:
            return rank_pb2.RankRequest.FromString(f.read())


def fetch_responses(target, request, log_mode):
    """codec -> the RankResponse bytes the server sends for `request`."""
    request.log_mode = log_mode
    out = {}
    with grpc.insecure_channel(target, options=[("grpc.max_receive_message_length",
                                                 64 << 20)]) as channel:
        rank = channel.unary_unary("/rank.v1.RankService/Rank")  # bytes in, bytes out
        for codec in ("protobuf", "rankbin", "rankbin-zstd"):
            del request.accept_codecs[:]
            request.accept_codecs.append(codec)
            out[codec] = rank(request.SerializeToString(), timeout=30)
    return out


def rankwire_top10(data):
    result = rankwire.open_response(data)
    return [(i.id, i.score, i.position, i.metrics(), i.log) for i in result.top(10)]


def protobuf_top10(data):
    response = rank_pb2.RankResponse.FromString(data)
    return [(i.item_id, i.score, i.position, dict(i.metrics), i.log)
            for i in response.result.items[:10]]


def rankwire_hot10(data):
    return [(i.id, i.score, i.position) for i in rankwire.open_response(data).top(10)]


def protobuf_hot10(data):
    return [(i.item_id, i.score, i.position)
            for i in rank_pb2.RankResponse.FromString(data).result.items[:10]]


def rankwire_all(data):
    return rankwire.open_response(data).materialize()


def protobuf_all(data):
    response = rank_pb2.RankResponse.FromString(data)
    return [(i.item_id, i.score, i.position, dict(i.metrics), i.log) for i in response.result.items]


def per_call(fn, data, seconds):
    """Seconds per call of fn(data), over about `seconds`."""
    gc.collect()
    n, start = 0, time.perf_counter()
    while True:
        fn(data)
        n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and n >= 3:
            return elapsed / n


def check_same_top10(responses):
    ours = rankwire_top10(responses["rankbin"])
    zstd = rankwire_top10(responses["rankbin-zstd"])
    base = protobuf_top10(responses["protobuf"])
    assert [t[:3] for t in ours] == [t[:3] for t in base] == [t[:3] for t in zstd]
    assert ours == zstd and all(o[4] == b[4] and o[3].keys() == b[3].keys()
                                for o, b in zip(ours, base))


def summary(values):
    return statistics.median(values), min(values), max(values)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="the CMake build folder")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=0.25,
                        help="time per measurement (one codec, one round)")
    parser.add_argument("--log_mode", choices=("inline", "store"), default="inline")
    parser.add_argument("--json", action="store_true", help="also print one JSON line")
    args = parser.parse_args()

    request = shipped_request(args.build)
    proc, target = start_server(args.build)
    try:
        mode = rank_pb2.LOG_MODE_INLINE if args.log_mode == "inline" else rank_pb2.LOG_MODE_STORE
        responses = fetch_responses(target, request, mode)
    finally:
        proc.terminate()
        proc.wait(10)
    check_same_top10(responses)

    pairs = {
        "top 10, all metrics + log": (("rankbin", rankwire_top10), ("rankbin-zstd", rankwire_top10),
                                      ("protobuf", protobuf_top10)),
        "top 10, id/score/position": (("rankbin", rankwire_hot10),
                                      ("rankbin-zstd", rankwire_hot10),
                                      ("protobuf", protobuf_hot10)),
        # For scale: what a top-10 read does not pay (rankwire: materialize,
        # numbers typed; protobuf: every item as above, metrics as text).
        "all 500 items, all metrics + log": (("rankbin", rankwire_all),
                                             ("rankbin-zstd", rankwire_all),
                                             ("protobuf", protobuf_all)),
    }
    times = {(row, codec): [] for row, runs in pairs.items() for codec, _ in runs}
    for r in range(args.rounds):
        for row, runs in pairs.items():
            for codec, fn in (runs if r % 2 == 0 else runs[::-1]):
                times[(row, codec)].append(per_call(fn, responses[codec], args.seconds))

    print(f"python {sys.version.split()[0]}, protobuf {api_implementation.Type()} "
          f"implementation, {args.rounds} interleaved rounds, logs {args.log_mode}")
    print("bytes: " + ", ".join(f"{c} {len(b):,}" for c, b in responses.items()))
    report = {}
    for row in pairs:
        base = times[(row, "protobuf")]
        print(f"\n{row}")
        print(f"  {'':14} {'median':>10} {'range':>21}   vs protobuf: median [range]")
        for codec in ("protobuf", "rankbin", "rankbin-zstd"):
            mid, lo, hi = summary(times[(row, codec)])
            line = f"  {codec:14} {mid * 1e6:8.1f} us  [{lo * 1e6:7.1f} .. {hi * 1e6:7.1f}] us"
            if codec != "protobuf":
                ratios = [b / t for b, t in zip(base, times[(row, codec)])]
                rmid, rlo, rhi = summary(ratios)
                line += f"   {rmid:6.1f}x [{rlo:.1f} .. {rhi:.1f}]"
                report[f"{row} / {codec}"] = {"ratio_median": rmid, "ratio_min": rlo,
                                              "ratio_max": rhi, "us_median": mid * 1e6}
            print(line)
    target = report["top 10, all metrics + log / rankbin"]["ratio_median"]
    print(f"\ntarget (issue 38): rankbin top 10 >= 20x protobuf: {target:.1f}x "
          f"{'PASS' if target >= 20 else 'MISS'}")
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
