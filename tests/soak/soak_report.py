"""The soak's verdict: every invariant evaluated again over everything the
run recorded, written as a text report, its JSON and a timeline PNG
(qps, p99, errors, log drops, RSS per replica, each fault marked) in --out.
"""

import argparse
import json
import math
import os
import threading
import time

import soak_invariants as inv

FAULT_COLORS = {
    "kill_replica": "#d62728", "drain_replica": "#ff7f0e", "redis_freeze": "#1f77b4",
    "redis_restart": "#17becf", "good_model": "#2ca02c", "bad_model": "#9467bd",
    "restart_in_bad_window": "#e377c2", "hostile_burst": "#7f7f7f", "overload": "#bcbd22",
    "drain_during_reload": "#8c564b", "drain_during_redis_freeze": "#393b79",
}


def _steady(samples, faults, recovery_s, t0, t1):
    """Samples in [t0, t1] outside every fault window."""
    windows = [(f["start"], (f["end"] or math.inf) + recovery_s) for f in faults]
    return [s for s in samples if t0 <= s["t"] <= t1 and not inv.excluded_at(s["t"], windows)]


def resources(soak, faults):
    """Per replica process alive in both the first and the last minute of
    load: flatness of RSS, fds and Redis connections."""
    a = soak.args
    ph = soak.phases
    first = (ph["load_start"] + 10, ph["load_start"] + 70)
    last = (ph["load_stop"] - 60, ph["load_stop"])
    out = []
    by_pid = {}
    for s in soak.rec.samples:
        by_pid.setdefault(s["pid"], []).append(s)
    for pid, samples in sorted(by_pid.items()):
        a0 = _steady(samples, faults, a.recovery_s, *first)
        a1 = _steady(samples, faults, a.recovery_s, *last)
        # Processes alive through both minutes; replica 0 always (it is
        # never restarted: too few samples of it is a failure).
        if samples[0]["replica"] != 0 and (len(a0) < 3 or len(a1) < 3 or
                                           samples[0]["t"] > first[0] + 5 or
                                           samples[-1]["t"] < last[1] - 5):
            continue
        ok, text = inv.flatness([(s["rss"], s["fds"], s["redis_conns"]) for s in a0],
                                [(s["rss"], s["fds"], s["redis_conns"]) for s in a1],
                                1 + a.rss_growth, a.fd_slack, 0)
        heap = inv.heap_text([s.get("heap") for s in a0], [s.get("heap") for s in a1])
        if heap:
            text += "; " + heap
        out.append({"name": "replica%d (pid %d)" % (samples[0]["replica"], pid),
                    "replica": samples[0]["replica"], "ok": ok, "text": text})
    # Redis's side: its clients (the replicas' connections and this
    # monitor's own) the same in both minutes.
    clients = [{"t": t, "n": n} for t, n in soak.rec.redis_clients]
    c0 = [c["n"] for c in _steady(clients, faults, a.recovery_s, *first)]
    c1 = [c["n"] for c in _steady(clients, faults, a.recovery_s, *last)]
    ok = len(c0) >= 3 and len(c1) >= 3 and inv.median(c0) == inv.median(c1)
    out.append({"name": "Redis", "replica": None, "ok": ok,
                "text": "connected_clients %s -> %s (medians, %d and %d samples)" % (
                    inv.median(c0), inv.median(c1), len(c0), len(c1))})
    return out


def log_identities(soak):
    """Per replica process: its final counts (the exit line after SIGTERM,
    else its last scrape) and whether they add up."""
    rec = soak.rec
    out = []
    names = {}
    for s in rec.samples:
        names[s["pid"]] = ("replica%d" % s["replica"], s["start"])
    for pid, (name, start) in sorted(names.items(), key=lambda x: (x[1], x[0])):
        if pid in rec.flushed and rec.flushed[pid]["counts"] is not None:
            ok, text = inv.identity(inv.with_enqueued_min(rec.flushed[pid]["counts"],
                                                          rec.last_counts.get(pid)))
            source = "exit line (SIGTERM)"
        else:
            ok, text = inv.identity(rec.last_counts.get(pid), soak.in_flight_bound)
            source = "last scrape"
        out.append({"name": name, "start": start, "pid": pid, "source": source, "ok": ok,
                    "text": text})
    return out


def log_losses(soak, faults):
    """Lines lost with Redis up and room in the queue, per replica process,
    from its scrapes (from 3 s into the load: the peak measurement before
    it overloads on purpose) and its exit line."""
    rec = soak.rec
    readings = {}
    start = soak.phases["load_start"] + 3
    for s in rec.samples:
        if s.get("counts") and s["t"] >= start:
            readings.setdefault(s["pid"], []).append((s["t"], s["counts"]))
    for pid, f in rec.flushed.items():
        if f["counts"] is not None and f.get("t") and pid in readings:
            readings[pid].append((f["t"], f["counts"]))
    out = []
    for pid, rs in sorted(readings.items()):
        for x in inv.log_loss(rs, faults):
            out.append(dict(x, pid=pid))
    return out


def evaluate(soak):
    a = soak.args
    rec = soak.rec
    with rec.lock:
        calls = list(rec.calls)
        faults = [dict(f) for f in rec.faults]
        exits = list(rec.exits.values())
    baseline = (soak.phases["load_start"] + 3, soak.phases["nemesis_start"])
    failures = inv.call_failures(calls, faults)
    versions = inv.version_violations(calls, soak.published(), a.stale_s)
    latency = inv.latency_report(calls, faults, baseline, a.p99_factor, a.recovery_s,
                                 a.window_s, floor_us=1e3 * getattr(a, "p99_floor_ms", 0.0))
    res = resources(soak, faults)
    logs = log_identities(soak)
    losses = log_losses(soak, faults)
    exit_problems = inv.exit_violations([dict(e, expected=set(e["expected"])) for e in exits])
    fault_problems = ["#%d %s: %s" % (f["id"], f["kind"], text)
                      for f in faults for ok, text in f["checks"] if not ok]
    kinds = {}
    for f in faults:
        kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    import soak_nemesis
    missing = [k for k in soak_nemesis.KINDS if kinds.get(k, 0) < (a.per_kind if a.short else 1)]
    replica0 = [r for r in res if r["replica"] == 0]
    final = soak.final_counts
    invariants = [
        ("calls: no failed call outside overload bursts", not failures,
         "%d calls, %d failed outside what is allowed" % (len(calls), len(failures))),
        ("versions: every answer from a loaded, good version", not versions,
         "%d violations" % len(versions)),
        ("logs: every replica's counts add up", all(x["ok"] for x in logs) and
         all(x["ok"] for x in final.values()),
         "%d processes; after the final drain: %s" % (len(logs), "; ".join(
             "%s %s" % (k, v["text"]) for k, v in sorted(final.items())))),
        ("logs: none lost while Redis is up and the queue has room", not losses,
         "%d times lines were dropped or unknown with no Redis fault or overload in force%s" % (
             len(losses), "".join("; pid %d %+.1f s..%+.1f s: %s (in force: %s)" % (
                 x["pid"], x["from"] - rec.t0, x["to"] - rec.t0, x["lost"], x["in_force"])
                 for x in losses[:10]))),
        ("exits: no crash, every exit requested with its status", not exit_problems,
         "%d exits" % len(exits)),
        ("faults: each fault's expectations", not fault_problems,
         "%d faults, %d checks" % (len(faults), sum(len(f["checks"]) for f in faults))),
        ("faults: every kind covered", not missing, "by kind: %s%s" % (
            kinds, "" if not missing else "; missing " + ", ".join(missing))),
        ("resources: RSS, fds, Redis connections flat", bool(replica0) and
         all(r["ok"] for r in res), "%d processes compared (replica 0: %s) and Redis's clients" % (
             len(res) - 1, "yes" if replica0 else "NOT COMPARED")),
        ("latency: p99 outside faults <= %.1fx baseline%s" % (
            a.p99_factor, " (not under %g ms)" % a.p99_floor_ms
            if getattr(a, "p99_floor_ms", 0) else ""), latency["outside_ok"],
         "baseline p99 %.1f ms (%d calls), outside faults %.1f ms (%d calls), bound %.1f ms" % (
             latency["baseline_p99_ms"], latency["baseline_calls"], latency["outside_p99_ms"],
             latency["outside_calls"], latency["bound_ms"])),
        ("latency: p99 back within %.0f s after each fault (no more calls over the bound "
         "than 1 %% allows at p <= %g)" % (a.recovery_s, latency["alpha"]),
         all(r["ok"] for r in latency["recoveries"]),
         "%d of %d faults recovered in time" % (
             sum(r["ok"] for r in latency["recoveries"]), len(latency["recoveries"]))),
    ]
    return {"invariants": invariants, "failures": failures, "versions": versions,
            "latency": latency, "resources": res, "logs": logs, "exits": exits,
            "exit_problems": exit_problems, "fault_problems": fault_problems, "faults": faults,
            "losses": losses,
            "calls": len(calls)}


def _t(soak, t):
    return "+%7.1f s" % (t - soak.rec.t0)


def text_report(soak, v):
    a = soak.args
    ph = soak.phases
    lines = []
    ok = all(x[1] for x in v["invariants"])
    lines.append("rankwire soak (issue 49): %s" % ("PASSED" if ok else "FAILED"))
    lines.append("mode %s, seed %d, Redis %s, %.1f min wall, started %s" % (
        "short (CI)" if a.short else "%g min" % a.minutes, a.seed,
        "Cluster (3 masters)" if a.cluster else "one node",
        (ph["end"] - soak.rec.t0) / 60, time.strftime("%Y-%m-%d %H:%M:%S",
                                                      time.localtime(soak.rec.t0))))
    lines.append("peak %.0f calls/s (closed loop); load %.1f calls/s open loop (%.0f %% of the "
                 "peak%s), %d candidates; load %.0f s, nemesis %.0f s; %d calls" % (
                     soak.peak["qps"], soak.qps, 100 * soak.qps / soak.peak["qps"],
                     ", capped by --max_qps" if a.max_qps and soak.qps >= a.max_qps else "",
                     a.candidates, ph["load_stop"] - ph["load_start"],
                     ph["nemesis_end"] - ph["nemesis_start"], v["calls"]))
    lines.append("machine: load average %s on %d CPUs at the end" % (
        " ".join("%.1f" % x for x in ph["loadavg"]), ph["cpus"]))
    lines.append("")
    lines.append("Invariants")
    for name, good, detail in v["invariants"]:
        lines.append("  %-4s %s: %s" % ("ok" if good else "FAIL", name, detail))
    lines.append("")
    lines.append("Faults (time from start, length, p99 of the %.0f s after its end, recovery)" %
                 a.window_s)
    rec_by_id = {r["id"]: r for r in v["latency"]["recoveries"]}
    for f in v["faults"]:
        r = rec_by_id.get(f["id"], {})
        back = r.get("back_after_s")
        lines.append("  #%-3d %s %5.1f s %-22s p99 %6.1f ms, back %s: %s" % (
            f["id"], _t(soak, f["start"]), (f["end"] or f["start"]) - f["start"], f["kind"],
            r.get("p99_at_end_ms", float("nan")), "never" if back is None else "%.1f s" % back,
            f["detail"]))
        if r and not r.get("ok", True):
            lines.append("         FAIL p99 not back under %.1f ms: calls over it per %.0f s window "
                         "from its end, every 0.5 s: %s" % (
                             r["bound_ms"], a.window_s, ", ".join(
                                 "%d of %d (%d allowed)" % tuple(o) for o in r.get("over_bound", []))
                             or "too few calls"))
        for good, text in f["checks"]:
            if not good:
                lines.append("         FAIL %s" % text)
    lines.append("")
    lines.append("Failed calls (%d)" % len(v["failures"]))
    for f in v["failures"][:100]:
        lines.append("  %s %s %s after %.1f ms; in force: %s" % (
            _t(soak, f["due"]), f["source"], f["code"], f["latency_ms"], f["in_force"]))
    if v["versions"]:
        lines.append("Version violations (%d)" % len(v["versions"]))
        for x in v["versions"][:50]:
            lines.append("  %s %s: %s" % (_t(soak, x["due"]), x["version"], x["why"]))
    lines.append("")
    lines.append("Log counts per replica process")
    for x in v["logs"]:
        lines.append("  %-4s %s start %d (pid %d), %s: %s" % (
            "ok" if x["ok"] else "FAIL", x["name"], x["start"], x["pid"], x["source"], x["text"]))
    lines.append("")
    lines.append("Resources, first minute -> last minute (processes alive in both)")
    for x in v["resources"]:
        lines.append("  %-4s %s: %s" % ("ok" if x["ok"] else "FAIL", x["name"], x["text"]))
    lines.append("")
    lines.append("Exits")
    for e in sorted(v["exits"], key=lambda e: e["t"]):
        lines.append("  %s %-16s pid %-7d status %-4s requested %s" % (
            _t(soak, e["t"]), e["name"], e["pid"], e["status"], e["requested"]))
    for p in v["exit_problems"]:
        lines.append("  FAIL %s" % p)
    lines.append("")
    lines.append("Violations as seen during the run (%d)" % len(soak.rec.live))
    for t, text in soak.rec.live[:100]:
        lines.append("  %s %s" % (_t(soak, t), text))
    hostile = soak.rec.hostile
    if hostile:
        by = {}
        for _, _, kind, outcome, _ in hostile:
            by.setdefault(kind, {}).setdefault(outcome, 0)
            by[kind][outcome] += 1
        lines.append("")
        lines.append("Hostile requests by kind and outcome: %s" % json.dumps(by, sort_keys=True))
    lines.append("")
    lines.append("Settings: %s" % " ".join("--%s=%s" % (k, getattr(a, k, None)) for k in (
        "candidates", "load_fraction", "max_qps", "baseline_s", "gap_s", "p99_factor",
        "p99_floor_ms", "recovery_s", "window_s", "stale_s", "rss_growth", "fd_slack", "max_concurrent_rank",
        "poll_ms")))
    return "\n".join(lines) + "\n"


def timeline(soak, v, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t0 = soak.rec.t0
    with soak.rec.lock:
        calls = list(soak.rec.calls)
        samples = list(soak.rec.samples)
    seconds = {}
    for due, lat, code, _, source in calls:
        b = seconds.setdefault(int(due - t0), {"ok": 0, "lat": [], "bad": 0, "refused": 0,
                                               "over": 0})
        if source == "overload":
            b["over"] += 1
        if code == "OK":
            if source == "main":
                b["ok"] += 1
                b["lat"].append(lat)
        elif code == "RESOURCE_EXHAUSTED":
            b["refused"] += 1
        else:
            b["bad"] += 1
    xs = sorted(seconds)
    fig, axes = plt.subplots(5, 1, figsize=(14, 13), sharex=True)
    ax = axes[0]
    ax.plot(xs, [seconds[x]["ok"] for x in xs], lw=0.8, label="main load, OK calls/s")
    ax.plot(xs, [seconds[x]["over"] for x in xs], lw=0.8, label="overload burst calls/s")
    ax.set_ylabel("calls/s")
    ax.legend(loc="upper right", fontsize=7)
    ax = axes[1]
    ax.plot(xs, [inv.percentile(seconds[x]["lat"], 0.99) / 1e3 if seconds[x]["lat"] else
                 float("nan") for x in xs], lw=0.8, label="p99 per second (main, OK)")
    ax.axhline(v["latency"]["bound_ms"], color="r", ls="--", lw=0.8,
               label="bound %.1fx baseline p99" % v["latency"]["factor"])
    ax.axhline(v["latency"]["baseline_p99_ms"], color="g", ls=":", lw=0.8,
               label="baseline p99")
    ax.set_yscale("log")
    ax.set_ylabel("latency ms")
    ax.legend(loc="upper right", fontsize=7)
    ax = axes[2]
    ax.bar(xs, [seconds[x]["refused"] for x in xs], width=1, color="#bcbd22",
           label="RESOURCE_EXHAUSTED")
    ax.bar(xs, [seconds[x]["bad"] for x in xs], width=1, color="r", label="other failures")
    ax.set_ylabel("failed calls/s")
    ax.legend(loc="upper right", fontsize=7)
    ax = axes[3]
    drops = {}
    prev = {}
    for s in samples:
        c = s.get("counts")
        if not c:
            continue
        d = sum(c.get(k, 0) for k in inv.DROPPED) + c.get("unknown", 0)
        if s["pid"] in prev:
            key = int(s["t"] - t0)
            drops[key] = drops.get(key, 0) + max(0, d - prev[s["pid"]])
        prev[s["pid"]] = d
    dx = sorted(drops)
    ax.bar(dx, [drops[x] for x in dx], width=1, color="#9467bd",
           label="log lines dropped or unknown /s (all replicas)")
    ax.set_ylabel("log lines/s")
    ax.legend(loc="upper right", fontsize=7)
    ax = axes[4]
    for i in range(3):
        pts = [(s["t"] - t0, s["rss"] / 2**20, s["pid"]) for s in samples if s["replica"] == i]
        # A break in the line at each restart.
        xs_r, ys_r, last_pid = [], [], None
        for x, y, pid in pts:
            if last_pid is not None and pid != last_pid:
                xs_r.append(float("nan"))
                ys_r.append(float("nan"))
            xs_r.append(x)
            ys_r.append(y)
            last_pid = pid
        ax.plot(xs_r, ys_r, lw=0.8, label="replica %d RSS" % i)
    ax.set_ylabel("RSS MB")
    ax.set_xlabel("seconds from start")
    ax.legend(loc="upper right", fontsize=7)
    for f in v["faults"]:
        color = FAULT_COLORS.get(f["kind"], "k")
        for axis in axes:
            axis.axvspan(f["start"] - t0, (f["end"] or f["start"]) - t0, color=color, alpha=0.2,
                         lw=0)
        axes[0].text(f["start"] - t0, 1.0, f["kind"], transform=axes[0].get_xaxis_transform(),
                     rotation=90, fontsize=6, va="bottom", color=color)
    ok = all(x[1] for x in v["invariants"])
    fig.suptitle("rankwire soak, seed %d: %s" % (soak.args.seed, "passed" if ok else "FAILED"),
                 y=0.995)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


RECORD_FIELDS = ("faults", "samples", "exits", "flushed", "last_counts", "live", "hostile",
                 "redis_clients")


def save_record(soak):
    """Everything the verdict is computed from, so `soak.py --reanalyze DIR`
    can compute it again (other bounds, a fixed check) without a new run:
    record.json and calls.tsv (due, latency us, code, version, source)."""
    rec = soak.rec
    with rec.lock:
        data = {k: getattr(rec, k) for k in RECORD_FIELDS}
        calls = list(rec.calls)
    data.update(args=vars(soak.args), t0=rec.t0, phases=soak.phases, peak=soak.peak,
                qps=soak.qps, in_flight_bound=soak.in_flight_bound,
                final_counts=soak.final_counts, published=soak.published(), work=soak.work)
    with open(os.path.join(soak.args.out, "record.json"), "w") as f:
        json.dump(data, f, default=lambda x: sorted(x) if isinstance(x, set) else str(x))
    with open(os.path.join(soak.args.out, "calls.tsv"), "w") as f:
        for c in calls:
            f.write("%.6f\t%.1f\t%s\t%s\t%s\n" % c)


class Replay:
    """A finished run read back from its --out directory, with the
    attributes the verdict reads (soak.Soak's)."""

    def __init__(self, out, overrides):
        with open(os.path.join(out, "record.json")) as f:
            data = json.load(f)
        args = dict(data["args"], out=out)
        args.update({k: v for k, v in overrides.items() if v is not None})
        self.args = argparse.Namespace(**args)
        self.rec = argparse.Namespace(lock=threading.Lock(), t0=data["t0"], calls=[])
        for k in RECORD_FIELDS:
            setattr(self.rec, k, data[k])
        for k in ("exits", "flushed", "last_counts"):  # JSON made the pids strings.
            setattr(self.rec, k, {int(pid): v for pid, v in getattr(self.rec, k).items()})
        self.rec.faults = [dict(f, checks=[tuple(c) for c in f["checks"]])
                           for f in self.rec.faults]
        self.rec.hostile = [tuple(h) for h in self.rec.hostile]
        with open(os.path.join(out, "calls.tsv")) as f:
            for line in f:
                due, lat, code, version, source = line.rstrip("\n").split("\t")
                self.rec.calls.append((float(due), float(lat), code, version, source))
        for k in ("phases", "peak", "qps", "in_flight_bound", "final_counts", "work"):
            setattr(self, k, data[k])
        self._published = [tuple(p) for p in data["published"]]

    def published(self):
        return self._published


def write(soak, save=True):
    if save:
        save_record(soak)
    v = evaluate(soak)
    out = soak.args.out
    text = text_report(soak, v)
    with open(os.path.join(out, "report.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"invariants": [{"name": n, "ok": ok, "detail": d}
                                  for n, ok, d in v["invariants"]],
                   "faults": v["faults"], "failures": v["failures"], "versions": v["versions"],
                   "latency": v["latency"], "resources": v["resources"], "logs": v["logs"],
                   "exits": v["exits"], "peak": soak.peak, "qps": soak.qps,
                   "phases": soak.phases, "seed": soak.args.seed,
                   "live_violations": soak.rec.live}, f, indent=1, default=str)
    png = os.path.join(out, "timeline.png")
    try:
        timeline(soak, v, png)
    except ImportError as e:
        text += "no timeline: %s\n" % e
    print(text, flush=True)
    print("soak: report %s, timeline %s, logs in %s" % (
        os.path.join(out, "report.txt"), png, soak.work), flush=True)
    return 0 if all(x[1] for x in v["invariants"]) else 1
