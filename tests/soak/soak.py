#!/usr/bin/python3
"""A soak with a nemesis (issue 49): every fault the service must survive,
one after another on a seeded schedule, for minutes, under open-loop load,
with every invariant checked as it runs and again at the end.

    tests/soak/soak.py --build build --short            # CI: every fault twice, < 5 min
    tests/soak/soak.py --build build --minutes 60       # a release's soak
    ... [--cluster] [--seed N] [--out DIR]
    tests/soak/soak.py --reanalyze DIR [--p99_factor X ...]   # a run's verdict again

scripts/soak.sh builds what is needed and runs this; docs/OPERATING.md
("Soak") says how to read the report.

The fleet: three rankwire-server replicas on loopback behind one
rankwire-loadgen channel (round_robin over an ipv4: list, client-side
health checking on rank.v1.RankService, retries of UNAVAILABLE), a real
redis-server as the log store (--cluster: a 3-master Redis Cluster), and a
model directory laid out as a Kubernetes ConfigMap volume that the replicas
poll (--model=DIR, a version directory; soak_fleet.ModelDir).

The run: the fleet's closed-loop peak is measured first; then open-loop
load at --load_fraction of it (at most --max_qps) for the whole run: a
fault-free baseline (--baseline_s) after one warm-up overload burst (the
first minute is then measured warm, like the last), then the nemesis (one fault every
few seconds, kinds in soak_nemesis.KINDS), then a quiet tail; then the load
stops, the log queues drain, every process is stopped, and the report,
its JSON and the timeline PNG are written to --out.

Invariants (soak_invariants.py; each violation is printed when seen and
listed in the report with its time and the fault in force):
  calls      no call fails, except RESOURCE_EXHAUSTED while an overload
             burst is in force;
  versions   every answer's model version was published good, and not
             superseded more than --stale_s before the call;
  logs       no log line dropped or unknown while no Redis fault or
             overload burst is in force (Redis up, room in the queue);
             each replica's log counts add up, handed = stored + dropped
             (every reason) + unknown + in flight, in every scrape (in
             flight at most the queue's bound), after the final drain (in
             flight 0), and in the exit line of each SIGTERMed replica
             (a server without handed/unknown: the bounds its enqueued
             count allows, soak_invariants.enqueued_bound);
  exits      no crash: every exit was requested, with its expected status;
  faults     each fault's own expectations (a restarted replica serves
             again; one restarted while the model is broken starts on the
             newest version that loads or NOT_SERVING, then serves once a
             good model is back; bad models are refused everywhere; every
             hostile request is refused cleanly);
  resources  RSS (by its floor, within --rss_growth), open fds
             (+--fd_slack) and Redis connections (+-0) of every replica
             process alive in both the first and the last minute (replica 0
             is never restarted, so there is always one), from the samples
             outside fault windows; the live heap (jemalloc's allocated
             bytes) is reported beside RSS;
  latency    p99 of the calls outside fault windows (a fault's window:
             from its start to --recovery_s after its end) <= --p99_factor
             x the baseline's p99; and after each fault, within
             --recovery_s, the p99 of a --window_s window of calls back
             under --p99_factor x the larger of the baseline's p99 and the
             p99 of the steady gap just before that fault (a host that got
             slower since the baseline is not a fault's tail); neither bound
             under --p99_floor_ms (10 ms in the CI run, whose 80 calls/s
             make a 2 s window's p99 its third-slowest call).
Exit status 0 if every invariant holds, 1 otherwise.
"""

import argparse
import os
import random
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_fleet as fleet  # noqa: E402
import soak_invariants as inv  # noqa: E402
import soak_nemesis  # noqa: E402
import soak_report  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", required=True, help="the build directory")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--short", action="store_true",
                      help="CI: every fault kind --per_kind times, then stop")
    mode.add_argument("--minutes", type=float, help="the whole run's length, start to report")
    p.add_argument("--per_kind", type=int, default=2)
    p.add_argument("--cluster", action="store_true", help="a 3-master Redis Cluster")
    p.add_argument("--seed", type=int, default=49)
    p.add_argument("--out", help="report directory (default build/soak/<short|Nmin>[-cluster])")
    p.add_argument("--candidates", type=int, default=200)
    p.add_argument("--load_fraction", type=float, default=None,
                   help="open-loop rate as a fraction of the measured peak "
                        "(default 0.1 --short, 0.3 otherwise)")
    p.add_argument("--max_qps", type=float, default=None,
                   help="at most this rate (default 80 --short, none otherwise)")
    p.add_argument("--baseline_s", type=float, default=None,
                   help="fault-free stretch first (default 20 --short, 60 otherwise)")
    p.add_argument("--gap_s", default="5,7", help="seconds between faults: min,max")
    p.add_argument("--p99_factor", type=float, default=None,
                   help="p99 bound over the baseline's (default 1.5; 3 --short, for a "
                        "shared CI host)")
    p.add_argument("--p99_floor_ms", type=float, default=None,
                   help="no p99 bound below this (default 0; 10 --short: at its 80 calls/s "
                        "a 2 s window's p99 is its third-slowest call)")
    p.add_argument("--recovery_s", type=float, default=3.0)
    p.add_argument("--window_s", type=float, default=2.0)
    p.add_argument("--stale_s", type=float, default=6.0)
    p.add_argument("--rss_growth", type=float, default=0.10)
    p.add_argument("--fd_slack", type=int, default=4)
    p.add_argument("--max_concurrent_rank", type=int, default=16)
    p.add_argument("--poll_ms", type=int, default=1000, help="--model_poll_interval")
    args = p.parse_args(argv)
    short = args.short
    if args.load_fraction is None:
        args.load_fraction = 0.1 if short else 0.3
    if args.max_qps is None:
        args.max_qps = 80.0 if short else 0.0
    if args.baseline_s is None:
        args.baseline_s = 20.0 if short else 60.0
    if args.p99_factor is None:
        args.p99_factor = 3.0 if short else 1.5
    if args.p99_floor_ms is None:
        args.p99_floor_ms = 10.0 if short else 0.0
    args.gap = tuple(float(x) for x in args.gap_s.split(","))
    if args.out is None:
        label = "short" if short else "%gmin" % args.minutes
        args.out = os.path.join(args.build, "soak", label + ("-cluster" if args.cluster else ""))
    return args


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Recorder:
    """What the run saw, shared by the nemesis (main thread) and the
    monitor thread; every field under `lock`."""

    def __init__(self, t0):
        self.t0 = t0
        self.lock = threading.Lock()
        self.faults = []
        self.calls = []          # (due, latency_us, code, version, source)
        self.samples = []        # dicts, one per replica per tick
        self.redis_clients = []  # (t, connected_clients)
        self.tracked = {}        # pid -> {"name", "proc"}
        self.requested = {}      # pid -> (what, expected statuses)
        self.exits = {}          # pid -> exit record
        self.flushed = {}        # pid -> exit line's counts
        self.last_counts = {}    # pid -> last scrape's log counts
        self.last_counts_at = {}  # pid -> when
        self.live = []           # (t, text): violations as they were seen
        self.hostile = []        # soak_hostile results
        self.seen_identity = set()

    def rel(self, t):
        return t - self.t0

    def violation(self, t, text):
        with self.lock:
            self.live.append((t, text))
        log("VIOLATION at +%.1f s: %s" % (self.rel(t), text))

    def track(self, name, proc):
        with self.lock:
            self.tracked[proc.pid] = {"name": name, "proc": proc}

    def request_exit(self, proc, what, expected):
        with self.lock:
            self.requested[proc.pid] = (what, set(expected))

    def note_exits(self):
        """Records every tracked process that has exited (once each)."""
        new = []
        with self.lock:
            for pid, entry in self.tracked.items():
                if pid in self.exits:
                    continue
                status = entry["proc"].poll()
                if status is None:
                    continue
                what, expected = self.requested.get(pid, (None, set()))
                record = {"name": entry["name"], "pid": pid, "t": time.time(), "status": status,
                          "requested": what, "expected": sorted(expected)}
                self.exits[pid] = record
                new.append(record)
        for record in new:
            for text in inv.exit_violations([dict(record, expected=set(record["expected"]))]):
                self.violation(record["t"], text)


class Monitor(threading.Thread):
    """Every second: new calls (checked at once), exits, and per replica
    RSS, fds, Redis connections and /metrics (log identity checked at once)."""

    def __init__(self, soak):
        super().__init__(daemon=True)
        self.soak = soak
        self.stop_event = threading.Event()
        self.readers = []  # (CallsReader, source)
        self.readers_lock = threading.Lock()

    def add_reader(self, reader, source):
        with self.readers_lock:
            self.readers.append((reader, source))

    def run(self):
        while not self.stop_event.wait(1.0):
            try:
                self.tick()
            except Exception as e:  # A monitor that dies silently checks nothing.
                self.soak.rec.violation(time.time(), "monitor error: %r" % e)

    def read_calls(self):
        rec = self.soak.rec
        with self.readers_lock:
            readers = list(self.readers)
        new = []
        for reader, source in readers:
            new += [c + (source,) for c in reader.read()]
        if not new:
            return
        now = time.time()
        with rec.lock:
            rec.calls.extend(new)
            faults = [dict(f) for f in rec.faults]
        for f in inv.call_failures(new, faults, now=now):
            rec.violation(f["due"], "%s call failed %s after %.1f ms; in force: %s" % (
                f["source"], f["code"], f["latency_ms"], f["in_force"]))
        published = self.soak.published()
        for v in inv.version_violations(new, published, self.soak.args.stale_s):
            rec.violation(v["due"], "answered by %s: %s" % (v["version"], v["why"]))

    def tick(self):
        self.read_calls()
        rec = self.soak.rec
        rec.note_exits()
        now = time.time()
        tcp = fleet.tcp_connections()
        redis_ports = self.soak.redis.ports
        for r in self.soak.replicas:
            proc = r.proc
            if proc is None or proc.poll() is not None:
                continue
            stats = fleet.proc_stats(proc.pid)
            metrics = r.metrics()
            if stats is None:
                continue
            rss, fds, inodes = stats
            conns = sum(1 for i in inodes if tcp.get(i) in redis_ports)
            sample = {"t": now, "replica": r.index, "pid": proc.pid, "start": r.starts,
                      "rss": rss, "fds": fds, "redis_conns": conns}
            if metrics is not None:
                counts = fleet.log_counts(metrics)
                sample.update(counts=counts, serving=metrics.get("rankwire_serving"),
                              heap=metrics.get("rankwire_malloc_allocated_bytes"),
                              ok=metrics.get('rankwire_rank_rpcs_total{outcome="ok"}', 0),
                              store_up=metrics.get("rankwire_log_store_up"),
                              versions=sorted(fleet.served_versions(metrics)))
                self.check_counts(proc.pid, r.name, counts, now)
            with rec.lock:
                rec.samples.append(sample)
        clients = self.soak.redis.connected_clients()
        if clients is not None:
            with rec.lock:
                rec.redis_clients.append((now, clients))

    def check_counts(self, pid, name, counts, now):
        rec = self.soak.rec
        ok, text = inv.identity(counts, self.soak.in_flight_bound)
        with rec.lock:
            before = rec.last_counts.get(pid)
            before_t = rec.last_counts_at.get(pid)
            rec.last_counts[pid] = counts
            rec.last_counts_at[pid] = now
            first = (pid, ok) not in rec.seen_identity
            rec.seen_identity.add((pid, ok))
        if not ok and first:  # Once per process: a broken identity repeats.
            rec.violation(now, "%s (pid %d) log counts: %s" % (name, pid, text))
        shrunk = inv.monotonic(before or {}, counts)
        if shrunk:
            rec.violation(now, "%s (pid %d) log counts went down: %s" % (name, pid, shrunk))
        if before is not None:
            self.soak.check_loss(name, pid, before_t, before, now, counts)


class Soak:
    def __init__(self, args):
        self.args = args
        self.rng = random.Random(args.seed)
        self.bin = {"server": os.path.join(args.build, "server", "rankwire-server"),
                    "loadgen": os.path.join(args.build, "client", "rankwire-loadgen"),
                    "cli": os.path.join(args.build, "client", "rankwire-cli")}
        for path in self.bin.values():
            if not os.access(path, os.X_OK):
                raise SystemExit("soak: %s is not built (scripts/soak.sh builds it)" % path)
        os.makedirs(args.out, exist_ok=True)
        self.work = tempfile.mkdtemp(prefix="work-", dir=args.out)
        self.rec = Recorder(time.time())
        self.monitor = Monitor(self)
        self.redis = fleet.Redis(self.work, args.cluster)
        self.models = fleet.ModelDir(os.path.join(self.work, "models"),
                                     os.path.join(ROOT, "model", "models",
                                                  "ecom_search_lr.model"))
        # Lines handed to the log path but not yet stored or dropped are
        # at most a full queue plus the batches the writers hold.
        self.in_flight_bound = (256 + 8 * 16) * args.candidates
        self.replicas = []
        self.peak = None
        self.qps = None
        self.phases = {}

    def published(self):
        with self.rec.lock:
            return [(t, fleet.ModelDir.version_name(n), good)
                    for t, n, good, _ in self.models.published]

    def server_args(self):
        a = self.args
        return [self.bin["server"], "--model=" + self.models.path,
                "--model_poll_interval=%dms" % a.poll_ms, "--address=127.0.0.1",
                "--codec=rankbin", "--log_mode=store",
                "--logstore=" + ("redis-cluster" if a.cluster else "redis"),
                "--redis_addr=" + self.redis.addresses, "--drain_ms=1000",
                "--shutdown_grace_ms=3000", "--log_flush_ms=2000",
                "--max_connection_age_ms=20000",
                "--max_concurrent_rank=%d" % a.max_concurrent_rank]

    @property
    def target(self):
        return "ipv4:" + ",".join(r.address for r in self.replicas)

    def start_fleet(self):
        self.redis.start()
        for n in self.redis.nodes:
            self.rec.track(n.name, n.proc)
        self.models.publish_good()
        for i in range(3):
            r = fleet.Replica(i, self.work, self.server_args())
            r.start()
            self.rec.track(r.name, r.proc)
            self.replicas.append(r)
        log("fleet: %s; Redis %s%s" % (self.target, self.redis.addresses,
                                        " (cluster)" if self.args.cluster else ""))

    def start_load(self):
        a = self.args
        self.peak = fleet.peak_qps(self.bin["loadgen"], self.target, a.candidates)
        qps = a.load_fraction * self.peak["qps"]
        if a.max_qps > 0:
            qps = min(qps, a.max_qps)
        self.qps = qps
        log("peak %.0f calls/s (closed loop, 8 callers); load %.0f calls/s open loop" % (
            self.peak["qps"], qps))
        self.warm_up()
        self.load = fleet.Loadgen(self.bin["loadgen"], self.target, qps, 24 * 3600, 16,
                                  a.candidates, os.path.join(self.work, "calls-main.tsv"), "main")
        self.rec.track("loadgen-main", self.load.proc)
        self.monitor.add_reader(fleet.CallsReader(self.load.calls_path), "main")
        self.phases["load_start"] = time.time()

    def warm_up(self):
        """One overload burst, as the nemesis sends them, before the load
        and the baseline start. A replica's allocator keeps the pages its
        first burst needed (jemalloc's resident bytes step up once, by ~3 MB,
        while its allocated bytes stay flat, and later bursts add nothing),
        so without it the first minute would be measured cold and the last
        warm: that step is not a creep. The burst's calls are not the main
        load's; the log-loss check starts after the baseline has begun."""
        _, _, callers = self.overload_burst("warmup", os.path.join(self.work, "calls-warmup.tsv"),
                                            follow=False)
        # The log queues drain what the burst left before the baseline.
        for r in self.replicas:
            fleet.wait_for(lambda r=r: self._drained(r), 20, step=0.2)
        self.phases["warmed"] = time.time()
        log("warm-up: one overload burst (%d callers, 3 s), log queues drained" % callers)

    def overload_burst(self, label, path, follow):
        """A second load generator at 2x the measured peak for 3 s, with
        2 x 3 x --max_concurrent_rank callers, its calls to `path` (followed
        by the monitor as `label` if `follow`). Returns (its result, qps,
        callers) once it has exited."""
        qps = 2 * self.peak["qps"]
        callers = 2 * 3 * self.args.max_concurrent_rank
        load = fleet.Loadgen(self.bin["loadgen"], self.target, qps, 3, callers,
                             self.args.candidates, path, label)
        self.rec.track("loadgen-" + label, load.proc)
        self.rec.request_exit(load.proc, "run 3 s", {0, 2})
        if follow:
            self.monitor.add_reader(fleet.CallsReader(path), label)
        result = load.result(timeout=60)
        self.rec.note_exits()
        return result, qps, callers

    def finish(self):
        """Stops the load, drains the log queues, checks the final counts,
        stops every process with SIGTERM."""
        rec = self.rec
        self.phases["load_stop"] = time.time()
        rec.request_exit(self.load.proc, "SIGTERM", {0, 2})
        self.load.stop()
        self.load_result = self.load.result()
        time.sleep(0.5)
        self.monitor.read_calls()
        drained = {}
        for r in self.replicas:
            counts = fleet.wait_for(lambda: self._drained(r), 20, step=0.2)
            ok, text = inv.identity(counts, final=True)
            drained[r.name] = {"pid": r.proc.pid, "ok": ok, "text": text}
            if not ok:
                rec.violation(time.time(), "%s after the drain: %s" % (r.name, text))
        self.final_counts = drained
        for r in self.replicas:
            rec.request_exit(r.proc, "SIGTERM", {0})
            r.proc.send_signal(signal.SIGTERM)
        for r in self.replicas:
            r.proc.wait(timeout=30)
            self.note_flushed(r)
        for n in self.redis.nodes:
            rec.request_exit(n.proc, "SIGTERM", {0})
            n.proc.send_signal(signal.SIGTERM)
            n.proc.wait(timeout=30)
        rec.note_exits()
        self.phases.update(end=time.time(), loadavg=os.getloadavg(), cpus=os.cpu_count())

    def check_loss(self, name, pid, t0, c0, t1, c1):
        """Lines dropped or unknown between two readings of one process
        with no Redis fault or overload in force (from the baseline on:
        the peak measurement overloads on purpose)."""
        if t0 < self.phases.get("load_start", float("inf")) + 3:
            return
        with self.rec.lock:
            faults = [dict(f) for f in self.rec.faults]
        for x in inv.log_loss([(t0, c0), (t1, c1)], faults, now=t1):
            self.rec.violation(t1, "%s (pid %d) lost log lines with Redis up and room in the "
                               "queue: %s; in force: %s" % (name, pid, x["lost"], x["in_force"]))

    def _drained(self, r):
        m = r.metrics()
        if m is None:
            return None
        counts = fleet.log_counts(m)
        if "in_flight" not in counts:  # A server without it: its queue's gauge.
            return counts if m.get("rankwire_log_queue_requests", 1) == 0 else None
        return counts if counts["in_flight"] == 0 else None

    def note_flushed(self, r):
        """The exit line's counts of a replica stopped by SIGTERM."""
        counts = fleet.flushed_counts(r.output())
        pid = r.proc.pid
        now = time.time()
        with self.rec.lock:
            self.rec.flushed[pid] = {"name": r.name, "start": r.starts, "counts": counts,
                                     "t": now}
            before = self.rec.last_counts.get(pid)
            before_t = self.rec.last_counts_at.get(pid)
        if before is not None and counts is not None:
            self.check_loss(r.name, pid, before_t, before, now, counts)
        ok, text = inv.identity(inv.with_enqueued_min(counts, before))
        if not ok:
            self.rec.violation(time.time(), "%s (pid %d) exit line: %s" % (r.name, pid, text))
        if before and counts:
            shrunk = inv.monotonic(before, counts)
            if shrunk:
                self.rec.violation(time.time(), "%s (pid %d) exit line counts below its last "
                                   "scrape: %s" % (r.name, pid, shrunk))

    def run(self):
        a = self.args
        self.start_fleet()
        self.monitor.start()
        self.start_load()
        log("baseline: %g s without faults" % a.baseline_s)
        time.sleep(a.baseline_s)
        self.phases["nemesis_start"] = time.time()
        nemesis = soak_nemesis.Nemesis(self)
        if a.short:
            nemesis.run_schedule(soak_nemesis.short_schedule(self.rng, a.per_kind), None)
        else:
            # The tail, the drain and the report take about a minute.
            deadline = self.rec.t0 + 60 * a.minutes - 60
            nemesis.run_schedule(soak_nemesis.long_schedule(self.rng), deadline)
        self.phases["nemesis_end"] = time.time()
        log("quiet tail: %g s" % (a.recovery_s + a.window_s + 2))
        time.sleep(a.recovery_s + a.window_s + 2)
        self.finish()
        self.monitor.stop_event.set()
        self.monitor.join(timeout=10)
        return soak_report.write(self)


def reanalyze(argv):
    """soak.py --reanalyze DIR [--p99_factor X ...]: the verdict of a
    finished run again, from its record (report.txt, report.json and
    timeline.png rewritten), with other bounds if given."""
    p = argparse.ArgumentParser()
    p.add_argument("--reanalyze", required=True)
    for name in ("p99_factor", "p99_floor_ms", "recovery_s", "window_s", "stale_s",
                 "rss_growth"):
        p.add_argument("--" + name, type=float)
    p.add_argument("--fd_slack", type=int)
    a = p.parse_args(argv)
    return soak_report.write(soak_report.Replay(a.reanalyze, vars(a)), save=False)


def main():
    if any(x.startswith("--reanalyze") for x in sys.argv[1:]):
        return reanalyze(sys.argv[1:])
    args = parse_args()
    soak = None

    def on_signal(signum, _frame):
        raise SystemExit("soak: signal %d" % signum)

    signal.signal(signal.SIGTERM, on_signal)
    try:
        soak = Soak(args)
        return soak.run()
    finally:
        if soak is not None:
            soak.monitor.stop_event.set()
        for proc in fleet.PROCESSES:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    sys.exit(main())
