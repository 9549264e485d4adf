"""The fleet on loopback: three real rankwire-server replicas on free ports,
driven by the real rankwire-loadgen through one `ipv4:` target list with
open-loop load (one shared channel: round_robin, health checking, retries),
while the test restarts and kills replicas.

Phases (each a separate loadgen run, so failures are attributed):
  1. spread:  every replica serves 33 % +- 10 % of the calls (each replica's
              own /metrics counters, cross-checked with the loadgen's peers);
  2. rolling restart: SIGTERM each replica in turn (--drain_ms), restart it
              on the same port, wait until it serves again: 0 failed calls;
  3. crash:   SIGKILL one replica mid-run (its in-flight gauge read just
              before): failed calls <= calls in flight on it; then restart it
              on the same port: it gets its share of the traffic again.

Prints one JSON line per phase with the measured numbers and a summary.

Usage: fleet_test.py --server BIN --loadgen BIN --model PATH [--qps 200]
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

P = argparse.ArgumentParser()
P.add_argument("--server", required=True)
P.add_argument("--loadgen", required=True)
P.add_argument("--model", required=True)
P.add_argument("--qps", type=float, default=200)
P.add_argument("--candidates", type=int, default=200)
P.add_argument("--drain_ms", type=int, default=1000)
ARGS = P.parse_args()

REPLICAS = 3
SHARE_TOLERANCE = 10.0  # percentage points around 100/3
WORK = tempfile.mkdtemp(prefix="rankwire-fleet-")
T0 = time.monotonic()
STARTED = []  # Every process this test started, killed at exit if still running.


def log(msg):
    print(f"[{time.monotonic() - T0:6.2f}s] {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Replica:
    """One rankwire-server process; restarts keep its ports."""

    def __init__(self, index):
        self.index = index
        self.port = 0
        self.metrics_port = 0
        self.proc = None
        self.starts = 0

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        self.starts += 1
        self.log_path = os.path.join(WORK, f"replica{self.index}.{self.starts}.log")
        out = open(self.log_path, "w")
        # The first start picks free ports (--port=0); a restart reuses them,
        # as a pod restarted behind the same address. --max_concurrent_rank:
        # here three replicas and the load generator share 2 cores, where in
        # production each replica has its own; with the per-replica default
        # (2 x cores) a stall caused by a neighbour replica was refused as
        # overload (19 RESOURCE_EXHAUSTED of 1200 calls in one CI run). This
        # test is about balancing and restarts; admission control is tested
        # in tests/integration/hostile_test.cc.
        self.proc = subprocess.Popen(
            [ARGS.server, f"--model={ARGS.model}", "--address=127.0.0.1",
             f"--port={self.port}", f"--metrics_port={self.metrics_port}",
             "--codec=rankbin", "--log_mode=store", "--logstore=memory",
             f"--drain_ms={ARGS.drain_ms}", "--shutdown_grace_ms=3000", "--log_flush_ms=500",
             "--max_concurrent_rank=32"],
            stdout=out, stderr=subprocess.STDOUT)
        STARTED.append(self.proc)
        out.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(self.log_path) as f:
                m = re.search(r"listening port=(\d+) metrics_port=(\d+)", f.read())
            if m:
                self.port, self.metrics_port = int(m.group(1)), int(m.group(2))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"replica {self.index} did not start:\n{self.output()}")

    def output(self):
        with open(self.log_path) as f:
            return f.read()

    def metrics(self):
        """{ok, in_flight, retried} from the replica's /metrics."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=2).read().decode()

        def value(pattern):
            return int(re.search("^" + pattern + r" (\d+)", text, re.M).group(1))
        return {"ok": value(r'rankwire_rank_rpcs_total\{outcome="ok"\}'),
                "in_flight": value("rankwire_rank_rpcs_in_flight"),
                "retried": value("rankwire_rank_rpcs_retried_total")}

    def ok_calls(self):
        return self.metrics()["ok"]

    def stop(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout):
        return self.proc.wait(timeout=timeout)


class Loadgen:
    """rankwire-loadgen in the background; result() is its JSON line."""

    def __init__(self, replicas, duration_s, label):
        target = "ipv4:" + ",".join(r.address for r in replicas)
        self.proc = subprocess.Popen(
            [ARGS.loadgen, f"--target={target}", f"--qps={ARGS.qps}", "--concurrency=16",
             "--shared_channel", f"--duration_s={duration_s}", "--warmup_s=0",
             f"--candidates={ARGS.candidates}", "--codec=rankbin", "--deadline_ms=5000",
             f"--label={label}", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        STARTED.append(self.proc)
        self.started = time.monotonic()
        self.duration_s = duration_s

    def stop(self):
        """Ends the run now (the loadgen prints its result on SIGTERM)."""
        self.proc.send_signal(signal.SIGTERM)

    def until(self, t):
        """Sleeps until t seconds after the load started."""
        time.sleep(max(0.0, self.started + t - time.monotonic()))

    def result(self):
        out, err = self.proc.communicate(timeout=self.duration_s + 60)
        line = [l for l in out.splitlines() if l.startswith("{")]
        if not line:
            raise RuntimeError(f"loadgen printed no result (exit {self.proc.returncode}):\n{out}\n{err}")
        return json.loads(line[-1])


def failed_calls(result):
    return sum(n for status, n in result["by_status"].items() if status != "OK")


def shares(before, after):
    deltas = [a - b for a, b in zip(after, before)]
    total = sum(deltas)
    return deltas, [100.0 * d / total if total else 0.0 for d in deltas]


def wait_serving_again(replica, timeout):
    """Seconds until the restarted replica has answered a call, or None."""
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        if replica.ok_calls() > 0:
            return time.monotonic() - t
        time.sleep(0.05)
    return None


def main():
    failures = []

    def check(cond, what):
        log(("ok    " if cond else "FAIL  ") + what)
        if not cond:
            failures.append(what)

    replicas = [Replica(i) for i in range(REPLICAS)]
    for r in replicas:
        r.start()
    log("replicas: " + ", ".join(f"{r.address} (metrics {r.metrics_port})" for r in replicas))
    report = {"qps": ARGS.qps, "candidates": ARGS.candidates, "drain_ms": ARGS.drain_ms}

    # 1. Spread.
    before = [r.ok_calls() for r in replicas]
    result = Loadgen(replicas, 6, "spread").result()
    after = [r.ok_calls() for r in replicas]
    deltas, pct = shares(before, after)
    report["spread"] = {"calls_per_replica": deltas, "percent": [round(p, 1) for p in pct],
                        "achieved_qps": result["qps"], "failed": failed_calls(result),
                        "loadgen_by_peer": result["by_peer"]}
    log("spread: " + json.dumps(report["spread"]))
    for r, p in zip(replicas, pct):
        check(abs(p - 100 / 3) <= SHARE_TOLERANCE, f"replica {r.index} served {p:.1f}% (33.3 +- 10)")
    check(failed_calls(result) == 0, f"no failed calls while all are up ({failed_calls(result)})")
    for r, d in zip(replicas, deltas):
        check(result["by_peer"].get("ipv4:" + r.address, 0) == d,
              f"loadgen's count for replica {r.index} equals its /metrics ({d})")

    # 2. Rolling restart: each replica in turn, as a Deployment with
    # maxUnavailable 0 does (the next goes only when the last serves again).
    # 60 s at most: stopped when the restarts are done (a loaded machine
    # stretches them).
    load = Loadgen(replicas, 60, "rolling-restart")
    restarts = []
    load.until(1.5)
    for r in replicas:
        t = time.monotonic()
        r.stop(signal.SIGTERM)
        rc = r.wait(timeout=20)
        down_s = time.monotonic() - t
        check(rc == 0, f"replica {r.index} drained and exited {rc} after SIGTERM")
        r.start()
        back_s = wait_serving_again(r, 20)
        restarts.append({"replica": r.index, "drain_and_exit_s": round(down_s, 2),
                         "serving_again_after_s": back_s and round(back_s, 2)})
        check(back_s is not None, f"replica {r.index} serves again after its restart")
    time.sleep(1.0)
    load.stop()
    result = load.result()
    report["rolling_restart"] = {"restarts": restarts, "calls": sum(result["by_status"].values()),
                                 "failed": failed_calls(result), "by_status": result["by_status"],
                                 "achieved_qps": result["qps"]}
    log("rolling restart: " + json.dumps(report["rolling_restart"]))
    check(failed_calls(result) == 0,
          f"rolling restart of {REPLICAS} replicas: 0 failed calls ({failed_calls(result)}; "
          f"first error: {result['first_error']})")

    # 3. SIGKILL one replica mid-run, then restart it on the same port.
    victim = replicas[1]
    survivors = [r for r in replicas if r is not victim]
    load = Loadgen(replicas, 60, "sigkill")
    retried_before = sum(r.metrics()["retried"] for r in survivors)
    load.until(2.0)
    in_flight = victim.metrics()["in_flight"]
    victim.stop(signal.SIGKILL)
    rc = victim.wait(timeout=10)
    check(rc == -signal.SIGKILL, f"victim killed (rc {rc})")
    time.sleep(0.5)  # Down for a moment, as a crashed pod is.
    victim.start()
    back_s = wait_serving_again(victim, 20)
    check(back_s is not None, "killed replica restarted on the same port serves again")
    window_before = [r.ok_calls() for r in replicas]
    time.sleep(3.0)  # Its share once it is back.
    window_after = [r.ok_calls() for r in replicas]
    # Calls that reached a survivor as a retry (their first attempt died with
    # the victim); the restarted victim counts from zero.
    retried = sum(r.metrics()["retried"] for r in survivors) - retried_before + \
        victim.metrics()["retried"]
    load.stop()
    w_deltas, w_pct = shares(window_before, window_after)
    result = load.result()
    failed = failed_calls(result)
    report["sigkill"] = {"in_flight_at_kill": in_flight, "failed": failed,
                         "retried_to_survivors": retried, "by_status": result["by_status"],
                         "calls": sum(result["by_status"].values()),
                         "restarted_serving_after_s": back_s and round(back_s + 0.5, 2),
                         "after_restart_calls_per_replica": w_deltas,
                         "after_restart_percent": [round(p, 1) for p in w_pct],
                         "achieved_qps": result["qps"]}
    log("sigkill: " + json.dumps(report["sigkill"]))
    check(failed <= in_flight,
          f"SIGKILL: failed calls ({failed}) <= calls in flight on the victim ({in_flight})")
    check(failed == 0, f"SIGKILL: 0 failed calls after the retry policy ({failed})")
    check(abs(w_pct[victim.index] - 100 / 3) <= SHARE_TOLERANCE,
          f"restarted replica's share after it is back: {w_pct[victim.index]:.1f}% (33.3 +- 10)")

    for r in replicas:
        r.stop(signal.SIGTERM)
    for r in replicas:
        check(r.wait(timeout=20) == 0, f"replica {r.index} exits 0 at the end")
    report["wall_s"] = round(time.monotonic() - T0, 1)
    print("FLEET " + json.dumps(report), flush=True)
    if failures:
        for r in replicas:
            print(f"--- replica {r.index} ---\n{r.output()}")
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("fleet test passed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        # Never leave a process behind (only the ones this test started).
        for proc in STARTED:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
