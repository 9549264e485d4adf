"""What every benchmark script here shares: the processes (rankwire-server,
serve_floor, redis-server) on free loopback ports, the load generator, the
median and its spread, and interleaved rounds.

The scripts sit beside this file and import it as `import harness`: Python
puts a script's own folder first on sys.path, so no path edits are needed.

The machine's speed drifts within a minute, so a benchmark runs every
variant once per round, in an order rotated by round (`rotated`), and
compares ratios taken within a round; tables show the median over rounds
and the [min–max] spread (`cell`). The server runs on SERVER_CPU, the load
generator and Redis on LOAD_CPU.
"""

import json
import os
import re
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "model", "models", "ecom_search_lr.model")
SERVER_CPU = "1"
LOAD_CPU = "0"
# What deploy/ gives the logs' Redis beyond no persistence (tests/deploy
# checks that compose.yaml and k8s/redis.yaml say the same): expiry run
# 100 times a second at its highest effort, so that keys past their 1 s TTL
# are reclaimed within milliseconds. With Redis's defaults (`hz 10`, effort
# 1) a key is held ~1.2 s, 20 % more memory at a given rate
# (docs/bench-notes/2026-12-08-redis-expiry.md).
LOG_REDIS_ARGS = ("--hz", "100", "--active-expire-effort", "10")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Process:
    """A server process pinned to `cpus` that prints its port on start-up:
    `match` holds `pattern`'s match in its output."""

    def __init__(self, argv, pattern, cpus=SERVER_CPU, prefix=(), timeout=20):
        self.log = tempfile.NamedTemporaryFile(mode="w+", suffix=".log", delete=False)
        self.proc = subprocess.Popen([*prefix, "taskset", "-c", cpus, *argv],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(pattern, self.log_text())
            if m:
                self.match = m
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        text = self.log_text()
        self.close()
        raise RuntimeError(f"{os.path.basename(argv[0])} did not start: {text}")

    def log_text(self):
        with open(self.log.name) as f:
            return f.read()

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if os.path.exists(self.log.name):
            os.unlink(self.log.name)


class Server(Process):
    """rankwire-server with a metrics port, on `host` (in a network
    namespace when `prefix` enters one)."""

    def __init__(self, build, flags, host="127.0.0.1", prefix=(), binary=None,
                 cpus=SERVER_CPU, model=MODEL):
        self.host = host
        binary = binary or os.path.join(build, "server", "rankwire-server")
        super().__init__([binary, "--port=0", "--metrics_port=0", f"--address={host}",
                          f"--model={model}", *flags],
                         r"listening port=(\d+) metrics_port=(-?\d+)", cpus=cpus, prefix=prefix)
        self.port, self.metrics_port = int(self.match.group(1)), int(self.match.group(2))

    def metrics(self):
        """Every sample of /metrics: {name with labels: value}."""
        url = f"http://{self.host}:{self.metrics_port}/metrics"
        text = urllib.request.urlopen(url, timeout=5).read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out


class Floor(Process):
    """serve_floor (bench/serve_floor.cc): answers recorded bytes of a real
    server's rankbin response and does nothing else, the transport's share
    of a request. Records from `record_port` (a rankwire-server)."""

    metrics_port = -1

    def __init__(self, build, record_port, extra=()):
        super().__init__([os.path.join(build, "bench", "serve_floor"), "--port=0",
                          f"--record_from=127.0.0.1:{record_port}", "--codec=rankbin", *extra],
                         r"listening port=(\d+)")
        self.port = int(self.match.group(1))


class Redis:
    """redis-server on LOAD_CPU (no persistence), which can be stopped and
    started again on the same port."""

    def __init__(self, workdir, extra=LOG_REDIS_ARGS):
        self.workdir = workdir
        self.extra = list(extra)
        self.port = free_port()
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            ["taskset", "-c", LOAD_CPU, "redis-server", "--port", str(self.port),
             "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", self.workdir,
             *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.ping():
                return time.time()
            time.sleep(0.002)
        raise RuntimeError("redis-server did not start")

    def ping(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                s.sendall(b"*1\r\n$4\r\nPING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def cli(self, *args):
        return subprocess.run(["redis-cli", "-p", str(self.port), *args],
                              capture_output=True, text=True).stdout

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()  # Also when stopped (SIGSTOP): no persistence to flush.
        self.proc.wait()


def loadgen(build, port, seconds, qps=0.0, concurrency=4, warmup=0.0, host="127.0.0.1",
            cpu=LOAD_CPU, extra=(), prefix=(), background=False):
    """rankwire-loadgen against host:port; its JSON summary as a dict (a
    Popen when `background`: pass its stdout to parse_loadgen). Exit status
    2 (the run finished, some calls failed) is a result: its JSON counts
    them."""
    cmd = [*prefix, "taskset", "-c", cpu, os.path.join(build, "client", "rankwire-loadgen"),
           f"--target={host}:{port}", f"--concurrency={concurrency}", f"--duration_s={seconds:g}",
           f"--warmup_s={warmup:g}", f"--qps={qps:g}", "--json", *extra]
    if background:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + warmup + 120)
    if done.returncode not in (0, 2):
        raise RuntimeError(f"rankwire-loadgen exited {done.returncode}: {done.stderr.strip()}")
    return parse_loadgen(done.stdout)


def parse_loadgen(stdout):
    try:
        return json.loads(stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError(f"rankwire-loadgen gave no JSON: {stdout!r}")


def failed_calls(result):
    """Calls that did not return OK (RESOURCE_EXHAUSTED refusals included)."""
    return sum(v for k, v in result.get("by_status", {}).items() if k != "OK")


def med(values):
    """The median of the values that are not None (nan when none are)."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def cell(values, fmt=None):
    """'median [min–max]' of the values that are not None ('–' when none
    are); `fmt` formats each number (default: 2 decimals under 10, else 0)."""
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    m = statistics.median(values)
    if fmt is None:
        fmt = "{:.2f}" if abs(m) < 10 else "{:.0f}"
    if len(values) == 1:
        return fmt.format(m)
    return f"{fmt.format(m)} [{fmt.format(min(values))}–{fmt.format(max(values))}]"


def rotated(variants, round_index):
    """The round's order: every variant once, rotated by the round number."""
    k = round_index % len(variants) if variants else 0
    return list(variants[k:]) + list(variants[:k])


def alternate(base, new, rounds, run):
    """Same-run A/B: calls run(binary) for base and new, alternating which
    goes first, and returns {"base": [result, ...], "new": [result, ...]};
    each result is a dict of quantity name -> value."""
    results = {"base": [], "new": []}
    for r in range(rounds):
        for name, binary in rotated([("base", base), ("new", new)], r):
            results[name].append(run(binary))
    return results


def print_ratios(results, label, width, fmt="{:.2f}"):
    """One row per quantity of the first base result: medians of each binary
    and median [min-max] of new/base over the alternations where both
    measured it."""
    print(f"{label:{width}s} {'base':>10s} {'new':>10s}  new/base median [min-max]")
    for key in results["base"][0]:
        pairs = [(b[key], n[key]) for b, n in zip(results["base"], results["new"]) if key in n]
        if not pairs:
            continue
        ratios = [n / b for b, n in pairs]
        base = statistics.median(b for b, _ in pairs)
        new = statistics.median(n for _, n in pairs)
        print(f"{key:{width}s} {fmt.format(base):>10s} {fmt.format(new):>10s}  "
              f"{statistics.median(ratios):.3f} [{min(ratios):.3f}-{max(ratios):.3f}]")
