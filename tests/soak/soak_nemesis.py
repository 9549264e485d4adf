"""The soak's nemesis: a seeded schedule of faults, one at a time with a
few seconds between them, and what each fault does and expects.

Kinds (each occurrence of a kind takes the next of its variants):
  kill_replica           SIGKILL replica 1 or 2, restart it on its ports
                         after 0.3-1 s; it must serve again.
  drain_replica          SIGTERM (drain, exit 0, log store flushed) and
                         restart; it must serve again.
  redis_freeze           SIGSTOP a Redis node for 1-5 s, then SIGCONT;
                         every replica must store logs again.
  redis_restart          SIGTERM a Redis node (exit 0), start it again on
                         its port (a cluster node with its nodes.conf);
                         every replica must store logs again.
  good_model             a new good version in the ConfigMap; every replica
                         must serve it within the poll interval + 10 s.
  bad_model              a broken newest version (with the good ones kept
                         beside it, or alone); every replica must refuse it
                         and keep serving; then a good version repairs it.
  restart_in_bad_window  a broken version, a replica restarted (SIGTERM or
                         SIGKILL) while it is there: beside good versions it
                         must start on the newest good one; alone, it must
                         start NOT_SERVING on rank.v1.RankService ("" stays
                         SERVING) and stay up; once a good version is
                         published it must serve it.
  drain_during_reload    a new good version published and, within one poll
                         interval, a replica SIGTERMed: its reload races its
                         drain; it must exit 0 with its log counts adding up,
                         and serve the new version once restarted.
  drain_during_redis_freeze
                         a Redis node frozen, then a replica SIGTERMed: its
                         log flush must give up after --log_flush_ms, exit 0
                         with every line counted; Redis thawed once it exits.
  hostile_burst          2 s of garbage and hostile requests to every
                         replica (soak_hostile); each must be refused
                         cleanly and every replica must stay up.
  overload               a second load generator at 2x the measured peak for
                         3 s, with more callers than the fleet admits;
                         RESOURCE_EXHAUSTED is allowed while it runs.

Replica 0 is never restarted: it is the process whose resources are
compared between the first and the last minute.
"""

import signal
import time

import soak_fleet as fleet
from soak_hostile import Hostile

KINDS = ["kill_replica", "drain_replica", "redis_freeze", "redis_restart", "good_model",
         "bad_model", "restart_in_bad_window", "drain_during_reload",
         "drain_during_redis_freeze", "hostile_burst", "overload"]


def short_schedule(rng, per_kind):
    """Every kind `per_kind` times, shuffled by the seed."""
    kinds = KINDS * per_kind
    rng.shuffle(kinds)
    return kinds


def long_schedule(rng):
    """Rounds of every kind once, each round shuffled, without end."""
    while True:
        kinds = list(KINDS)
        rng.shuffle(kinds)
        for k in kinds:
            yield k


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Nemesis:
    def __init__(self, soak):
        self.soak = soak
        self.rec = soak.rec
        self.rng = soak.rng
        self.occurrences = {}
        self.hostile = Hostile(soak.bin["cli"], soak.work, soak.args.candidates, 1000)
        self.poll_s = soak.args.poll_ms / 1000.0

    def run_schedule(self, kinds, deadline):
        for kind in kinds:
            gap = self.rng.uniform(*self.soak.args.gap)
            time.sleep(gap)
            if deadline is not None and time.time() >= deadline:
                return
            occurrence = self.occurrences.get(kind, 0)
            self.occurrences[kind] = occurrence + 1
            fault = {"id": len(self.rec.faults) + 1, "kind": kind, "start": time.time(),
                     "end": None, "detail": "", "checks": []}
            with self.rec.lock:
                self.rec.faults.append(fault)
            try:
                getattr(self, kind)(fault, occurrence)
            except Exception as e:  # A fault that could not be carried out is a failure.
                self.check(fault, False, "the nemesis failed: %r" % e)
            fault["end"] = time.time()
            failed = [text for ok, text in fault["checks"] if not ok]
            log("fault #%d %s (+%.1f s, %.1f s): %s%s" % (
                fault["id"], kind, fault["start"] - self.rec.t0, fault["end"] - fault["start"],
                fault["detail"], "" if not failed else "; FAILED: " + "; ".join(failed)))

    def check(self, fault, ok, text):
        fault["checks"].append((bool(ok), text))
        if not ok:
            self.rec.violation(time.time(), "fault #%d %s: %s" % (fault["id"], fault["kind"],
                                                                  text))
        return ok

    # ------------------------------------------------------------ helpers

    def victim(self, occurrence):
        return self.soak.replicas[1 + occurrence % 2]

    def stop_replica(self, r, sig):
        """SIGTERM (drain) or SIGKILL; waits for the exit. Returns its status."""
        proc = r.proc
        self.rec.request_exit(proc, sig.name, {0} if sig == signal.SIGTERM else {-signal.SIGKILL})
        proc.send_signal(sig)
        status = proc.wait(timeout=30)
        if sig == signal.SIGTERM:
            self.soak.note_flushed(r)
        self.rec.note_exits()
        return status

    def start_replica(self, r):
        model = r.start()
        self.rec.track(r.name, r.proc)
        return model

    def serves_again(self, fault, r, version=None, timeout=30):
        """Waits until `r` says SERVING, (with `version`) serves it, and has
        answered calls since it started."""
        t = time.time()
        serving = fleet.wait_for(lambda: r.health() == "SERVING", timeout, step=0.1)
        self.check(fault, serving, "%s SERVING again" % r.name)
        if version:
            name = fleet.ModelDir.version_name(version)
            got = fleet.wait_for(lambda: name in fleet.served_versions(r.metrics() or {}),
                                 timeout, step=0.1)
            self.check(fault, got, "%s serves %s" % (r.name, name))

        def answered():
            m = r.metrics()
            return m is not None and m.get('rankwire_rank_rpcs_total{outcome="ok"}', 0) > 0
        self.check(fault, fleet.wait_for(answered, timeout, step=0.1),
                   "%s answers calls again" % r.name)
        return time.time() - t

    def everyone_serves(self, fault, version):
        """Every replica serves `version` within the poll interval + 10 s;
        returns the seconds it took."""
        name = fleet.ModelDir.version_name(version)
        t = time.time()
        ok = fleet.wait_for(lambda: all(name in fleet.served_versions(r.metrics() or {})
                                        for r in self.soak.replicas), self.poll_s + 10, step=0.1)
        self.check(fault, ok, "every replica serves %s" % name)
        return time.time() - t

    def refusals(self):
        """Each replica's rankwire_model_reload_failures_total, summed over reasons."""
        out = {}
        for r in self.soak.replicas:
            m = r.metrics() or {}
            out[r.name] = sum(v for k, v in m.items()
                              if k.startswith("rankwire_model_reload_failures_total"))
        return out

    def everyone_refuses(self, fault, before):
        ok = fleet.wait_for(lambda: all(v > before[k] for k, v in self.refusals().items()),
                            self.poll_s + 10, step=0.1)
        return self.check(fault, ok, "every replica refused the broken version")

    def stores_again(self, fault, timeout=30):
        """Seconds until every replica's stored log count grows again."""
        t = time.time()

        def stored():
            return {r.name: fleet.log_counts(r.metrics() or {}).get("stored") for r in
                    self.soak.replicas}
        before = stored()

        def grown():
            now = stored()
            return all(now[k] is not None and before[k] is not None and now[k] > before[k]
                       for k in now)
        ok = fleet.wait_for(grown, timeout, step=0.05)
        self.check(fault, ok, "every replica stores logs again")
        return time.time() - t

    def node_written_again(self, fault, node, timeout=30):
        """Seconds until Redis `node` processes the replicas' writes again
        (its total_commands_processed grows by more than this probe's own)."""
        t = time.time()

        def commands():
            info = fleet.redis_info(node.port, "stats", timeout=0.3)
            return int(info["total_commands_processed"]) if info else None
        c0 = fleet.wait_for(commands, timeout, step=0.05)
        ok = c0 is not None and fleet.wait_for(lambda: (commands() or 0) > c0 + 20, timeout,
                                               step=0.05)
        self.check(fault, ok, "%s written to again" % node.name)
        return time.time() - t

    # ------------------------------------------------------------ faults

    def kill_replica(self, fault, occurrence):
        self._restart(fault, self.victim(occurrence), signal.SIGKILL,
                      self.rng.uniform(0.3, 1.0))

    def drain_replica(self, fault, occurrence):
        self._restart(fault, self.victim(occurrence), signal.SIGTERM, 0.2)

    def _restart(self, fault, r, sig, down_s):
        status = self.stop_replica(r, sig)
        time.sleep(down_s)
        model = self.start_replica(r)
        expected = fleet.ModelDir.version_name(self.soak.models.newest_good())
        self.check(fault, model == expected, "%s started on %s (%s expected)" % (
            r.name, model, expected))
        back = self.serves_again(fault, r)
        fault["detail"] = "%s %s (exit %s), down %.1f s, serving again %.1f s after start" % (
            r.name, sig.name, status, down_s, back)

    def _redis_node(self):
        return self.rng.choice(self.soak.redis.nodes)

    def _redis_recovered(self, fault, node):
        """After a fault on Redis `node`: waits for Redis to be healthy, then
        returns how long until `node` was written to again and, after that,
        until every replica stored logs again (seconds)."""
        self.check(fault, fleet.wait_for(self.soak.redis.healthy, 30, step=0.1),
                   "Redis healthy again")
        written = self.node_written_again(fault, node)
        return written, self.stores_again(fault)

    def redis_freeze(self, fault, occurrence):
        node = self._redis_node()
        seconds = self.rng.uniform(1, 5)
        node.proc.send_signal(signal.SIGSTOP)
        time.sleep(seconds)
        node.proc.send_signal(signal.SIGCONT)
        written, back = self._redis_recovered(fault, node)
        fault["detail"] = ("%s frozen %.1f s; written to again %.0f ms after SIGCONT, every "
                           "replica storing logs %.0f ms after that" % (
                               node.name, seconds, 1e3 * written, 1e3 * back))

    def redis_restart(self, fault, occurrence):
        node = self._redis_node()
        self.rec.request_exit(node.proc, "SIGTERM", {0})
        node.proc.send_signal(signal.SIGTERM)
        status = node.proc.wait(timeout=30)
        self.rec.note_exits()
        node.start()
        self.rec.track(node.name, node.proc)
        written, back = self._redis_recovered(fault, node)
        fault["detail"] = ("%s restarted (exit %s); written to again %.0f ms after it was up, "
                           "every replica storing logs %.0f ms after that" % (
                               node.name, status, 1e3 * written, 1e3 * back))

    def good_model(self, fault, occurrence):
        n = self.soak.models.publish_good()
        took = self.everyone_serves(fault, n)
        fault["detail"] = "soak-%d published; every replica on it after %.1f s" % (n, took)

    def bad_model(self, fault, occurrence):
        only = occurrence % 2 == 1
        before = self.refusals()
        last_good = self.soak.models.newest_good()
        n, breakage = self.soak.models.publish_bad(occurrence, only)
        self.everyone_refuses(fault, before)
        time.sleep(2)
        for r in self.soak.replicas:
            self.check(fault, r.health() == "SERVING", "%s SERVING with soak-%d refused" % (
                r.name, n))
            self.check(fault, fleet.ModelDir.version_name(last_good) in
                       fleet.served_versions(r.metrics() or {}),
                       "%s still serves soak-%d" % (r.name, last_good))
        good = self.soak.models.publish_good()
        took = self.everyone_serves(fault, good)
        fault["detail"] = "soak-%d broken (%s, %s); repaired by soak-%d after %.1f s" % (
            n, breakage, "alone" if only else "beside good versions", good, took)

    def restart_in_bad_window(self, fault, occurrence):
        only = occurrence % 2 == 0
        sig = [signal.SIGTERM, signal.SIGKILL, signal.SIGKILL, signal.SIGTERM][occurrence % 4]
        r = self.victim(occurrence)
        before = self.refusals()
        last_good = self.soak.models.newest_good()
        n, breakage = self.soak.models.publish_bad(occurrence + 1, only)
        self.everyone_refuses(fault, before)
        status = self.stop_replica(r, sig)
        model = self.start_replica(r)
        if only:
            self.check(fault, model == "none", "%s started with no model (start-up model=%s)" % (
                r.name, model))
            for _ in range(2):  # It stays up, not ready, while nothing loads.
                self.check(fault, r.health() == "NOT_SERVING",
                           "%s: rank.v1.RankService NOT_SERVING" % r.name)
                self.check(fault, r.health("") == "SERVING", "%s: \"\" SERVING" % r.name)
                m = r.metrics() or {}
                self.check(fault, m.get("rankwire_serving") == 0, "%s: rankwire_serving 0" %
                           r.name)
                time.sleep(1)
            self.check(fault, r.proc.poll() is None, "%s still running" % r.name)
            outcome = "started NOT_SERVING"
        else:
            expected = fleet.ModelDir.version_name(last_good)
            self.check(fault, model == expected, "%s started on the older %s (start-up "
                       "model=%s)" % (r.name, expected, model))
            self.serves_again(fault, r, last_good)
            outcome = "started on soak-%d" % last_good
        good = self.soak.models.publish_good()
        back = self.serves_again(fault, r, good, timeout=self.poll_s + 10)
        self.everyone_serves(fault, good)
        fault["detail"] = ("soak-%d broken (%s, %s); %s %s (exit %s), %s; soak-%d published, "
                           "%s serving it after %.1f s" % (
                               n, breakage, "alone" if only else "beside good versions", r.name,
                               sig.name, status, outcome, good, r.name, back))

    def drain_during_reload(self, fault, occurrence):
        r = self.victim(occurrence)
        n = self.soak.models.publish_good()
        delay = self.rng.uniform(0, self.poll_s)
        time.sleep(delay)
        status = self.stop_replica(r, signal.SIGTERM)
        reloaded = "ecom_search_lr@soak-%d" % n in r.output()
        model = self.start_replica(r)
        self.check(fault, model == fleet.ModelDir.version_name(n), "%s started on soak-%d "
                   "(start-up model=%s)" % (r.name, n, model))
        back = self.serves_again(fault, r, n)
        took = self.everyone_serves(fault, n)
        fault["detail"] = ("soak-%d published, %s SIGTERMed %.2f s later (exit %s; %s before "
                           "it stopped); serving again %.1f s after start, every replica on "
                           "soak-%d after %.1f s" % (
                               n, r.name, delay, status,
                               "it had loaded soak-%d" % n if reloaded else "no reload",
                               back, n, took))

    def drain_during_redis_freeze(self, fault, occurrence):
        r = self.victim(occurrence)
        node = self._redis_node()
        node.proc.send_signal(signal.SIGSTOP)
        try:
            time.sleep(0.5)
            t = time.time()
            status = self.stop_replica(r, signal.SIGTERM)
            took = time.time() - t
        finally:
            node.proc.send_signal(signal.SIGCONT)
        # Drain 1 s + in-flight calls + the flush's 2 s at most, and slack.
        self.check(fault, took < 1 + 3 + 2 + 3, "%s stopped in %.1f s with Redis frozen" % (
            r.name, took))
        self.check(fault, fleet.wait_for(self.soak.redis.healthy, 30, step=0.1),
                   "Redis healthy again")
        self.start_replica(r)
        back = self.serves_again(fault, r)
        stored = self.stores_again(fault)
        counts = fleet.flushed_counts(r.output(previous=True))
        fault["detail"] = ("%s frozen, %s SIGTERMed: exit %s after %.1f s, exit line %s; "
                           "serving again %.1f s after restart, storing logs after %.1f s" % (
                               node.name, r.name, status, took, counts, back, stored))

    def hostile_burst(self, fault, occurrence):
        results = self.hostile.burst(self.soak.replicas, 2.0, self.rng, time.time)
        with self.rec.lock:
            self.rec.hostile.extend(results)
        unclean = [x for x in results if not x[4]]
        self.check(fault, not unclean, "%d hostile requests, every one refused cleanly%s" % (
            len(results), "" if not unclean else " (not: %s)" % unclean[:5]))
        for r in self.soak.replicas:
            self.check(fault, r.proc.poll() is None and r.health() == "SERVING",
                       "%s up and SERVING after the burst" % r.name)
        fault["detail"] = "%d hostile requests to 3 replicas, %d not refused cleanly" % (
            len(results), len(unclean))

    def overload(self, fault, occurrence):
        soak = self.soak
        path = "%s/calls-overload-%d.tsv" % (soak.work, occurrence)
        result, qps, callers = soak.overload_burst("overload", path, follow=True)
        s = result["summary"] or {}
        refused = s.get("by_status", {}).get("RESOURCE_EXHAUSTED", 0)
        self.check(fault, result["summary"] is not None, "the overload load generator reported")
        fault["detail"] = "%.0f calls/s offered by %d callers for 3 s: %d answered, %d refused " \
            "(RESOURCE_EXHAUSTED)" % (qps, callers, s.get("by_status", {}).get("OK", 0), refused)
