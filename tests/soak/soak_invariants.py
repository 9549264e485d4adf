"""The soak's invariants, as pure functions of what the soak recorded (the
calls, the faults, the published models, the scrapes, the exits), so each
one is tested on its own (soak_invariants_test.py) and can fail.

Times are Unix seconds. A fault is a dict with at least "kind", "start"
and "end" (None while it is in force). A call is a tuple (due, latency_us,
code, version, source), source "main" (the steady load) or "overload"
(a burst's own load generator).
"""

import bisect
import math

# How long after a fault ends it is still "in force" for a failed call
# (the call's retries, a channel's reconnect backoff).
IN_FORCE_GRACE_S = 1.0


def percentile(values, p):
    """The loadgen's rule (client/loadgen_main.cc): the value at rank
    round(p * (n - 1)) of the sorted values; NaN when empty."""
    if len(values) == 0:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(math.floor(p * (len(values) - 1) + 0.5)))]


def faults_in_force(faults, t0, t1, grace=IN_FORCE_GRACE_S, now=None):
    """The faults whose window [start - grace, end + grace] meets [t0, t1]."""
    out = []
    for f in faults:
        end = f["end"] if f["end"] is not None else (now if now is not None else math.inf)
        if f["start"] - grace <= t1 and t0 <= end + grace:
            out.append(f)
    return out


def describe(faults):
    return ", ".join("%s#%d" % (f["kind"], f.get("id", 0)) for f in faults) or "none"


def call_failures(calls, faults, now=None):
    """Every failed call that is not allowed, as dicts (time, code, latency,
    source, in force). Allowed: RESOURCE_EXHAUSTED while an overload burst
    is in force (its window plus the grace)."""
    out = []
    for due, latency_us, code, _version, source in calls:
        if code == "OK":
            continue
        done = due + latency_us / 1e6
        in_force = faults_in_force(faults, due, done, now=now)
        if code == "RESOURCE_EXHAUSTED" and any(f["kind"] == "overload" for f in in_force):
            continue
        out.append({"due": due, "code": code, "latency_ms": latency_us / 1e3, "source": source,
                    "in_force": describe(in_force)})
    return out


def version_violations(calls, published, stale_s):
    """OK calls answered by a model version that was not loaded and good at
    that moment: one never published as good, one published after the call
    completed, or one superseded by a newer good version more than `stale_s`
    before the call was due (every replica polls within its interval).

    `published`: [(unix time, version name, good)] in publication order."""
    good_at = {}
    retired_at = {}
    last_good = None
    for t, name, good in published:
        if not good:
            continue
        good_at.setdefault(name, t)
        if last_good is not None and last_good != name:
            retired_at.setdefault(last_good, t)
        last_good = name
    bad = set(name for _, name, good in published if not good)
    out = []
    for due, latency_us, code, version, source in calls:
        if code != "OK":
            continue
        done = due + latency_us / 1e6
        if version not in good_at:
            why = "a broken version" if version in bad else "never published"
        elif done < good_at[version]:
            why = "answered before it was published"
        elif version in retired_at and due > retired_at[version] + stale_s:
            why = "superseded %.1f s before" % (due - retired_at[version])
        else:
            continue
        out.append({"due": due, "version": version, "why": why, "source": source})
    return out


DROPPED = ("dropped_queue_full", "dropped_store_error", "dropped_shutdown")


def identity(counts, in_flight_bound=None, final=False):
    """handed = stored + dropped (every reason) + unknown + in flight, for
    one scrape (in flight: the outcome "in_flight", bounded by the queue)
    or one exit line (no in flight: the log store was flushed). Returns
    (ok, text)."""
    if counts is None:
        return False, "no counts"
    if "handed" not in counts:
        return enqueued_bound(counts, in_flight_bound, final)
    if "unknown" not in counts:
        return False, "the server counts handed lines but not unknown ones: %s" % sorted(counts)
    accounted = counts.get("stored", 0) + sum(counts.get(k, 0) for k in DROPPED) + \
        counts["unknown"]
    in_flight = counts.get("in_flight", 0)
    gap = counts["handed"] - accounted - in_flight
    text = "handed %d = stored %d + dropped %d + unknown %d + in flight %d (gap %d)" % (
        counts["handed"], counts.get("stored", 0), sum(counts.get(k, 0) for k in DROPPED),
        counts["unknown"], in_flight, gap)
    ok = gap == 0
    if final and in_flight != 0:
        ok = False
        text += "; lines still in flight after the drain"
    if in_flight_bound is not None and in_flight > in_flight_bound:
        ok = False
        text += "; in flight over the queue's bound %d" % in_flight_bound
    return ok, text


def enqueued_bound(counts, in_flight_bound=None, final=False):
    """What a server without the handed/unknown outcomes allows (it counts
    lines enqueued, and drops at the queue's door in the same dropped
    counters as drops after it): every enqueued line ends stored, dropped
    on a failed write or at shutdown, or still queued, so
        enqueued <= stored + dropped_store_error + dropped_shutdown + queued
    (queued at most `in_flight_bound`; 0 when `final`), and, once drained
    (`final`: scrapes are not atomic across outcomes, so only then),
        stored <= enqueued.
    An exit line has no enqueued count: "enqueued_min" (the last scrape's)
    stands for it, the first bound only. Returns (ok, text)."""
    enqueued = counts.get("enqueued", counts.get("enqueued_min"))
    if enqueued is None:
        return False, "the server counts neither handed nor enqueued lines: %s" % sorted(counts)
    stored = counts.get("stored", 0)
    ended = stored + counts.get("dropped_store_error", 0) + counts.get("dropped_shutdown", 0)
    queued = 0 if final else (in_flight_bound or 0)
    ok = enqueued <= ended + queued
    text = "enqueued %s%d <= stored %d + dropped after the queue %d + queued <= %d (no " \
        "handed count: bounds, not the exact identity)" % (
            "" if "enqueued" in counts else ">= ", enqueued, stored, ended - stored, queued)
    if final and "enqueued" in counts:
        ok = ok and stored <= enqueued
        text += "; stored %d <= enqueued %d" % (stored, enqueued)
    return ok, text


def with_enqueued_min(exit_counts, last_scrape):
    """An exit line's counts, with the last scrape's enqueued count as a
    lower bound when the server counts no handed lines (see
    enqueued_bound)."""
    if exit_counts is None or "handed" in exit_counts or not last_scrape or \
            "enqueued" not in last_scrape:
        return exit_counts
    return dict(exit_counts, enqueued_min=last_scrape["enqueued"])


# Faults during which log lines may be lost, counted: the log store is
# down or stalled, or the queue is full because the fleet is overloaded.
LOSSY_KINDS = {"redis_freeze", "redis_restart", "drain_during_redis_freeze", "overload"}
LOSS = DROPPED + ("unknown",)


def lost(before, after):
    """Lines dropped (any reason) or unknown between two readings."""
    return {k: after.get(k, 0) - before.get(k, 0) for k in LOSS
            if after.get(k, 0) > before.get(k, 0)}


def log_loss(readings, faults, grace=3.0, now=None):
    """"While Redis is up and the queue has room, no log is lost": every
    pair of consecutive readings of one process ((time, counts), in order)
    whose counts of dropped or unknown lines grew while no lossy fault (a
    Redis fault, an overload burst) was in force. Returns dicts."""
    out = []
    for (t0, c0), (t1, c1) in zip(readings, readings[1:]):
        delta = lost(c0, c1)
        if not delta:
            continue
        in_force = [f for f in faults_in_force(faults, t0, t1, grace, now)
                    if f["kind"] in LOSSY_KINDS]
        if not in_force:
            out.append({"from": t0, "to": t1, "lost": delta,
                        "in_force": describe(faults_in_force(faults, t0, t1, grace, now))})
    return out


def monotonic(before, after):
    """Counts that only grow between two readings of one process; the
    outcomes that shrank."""
    return [k for k in before if k in after and after[k] < before[k] and k != "in_flight"]


def exit_violations(exits):
    """Every exit that was not requested, or not with its expected status.
    `exits`: dicts with name, status, requested (None or what was asked),
    expected (the statuses that request allows)."""
    out = []
    for e in exits:
        if e["requested"] is None:
            out.append("%s (pid %d) exited %s unrequested: a crash" % (e["name"], e["pid"],
                                                                       e["status"]))
        elif e["status"] not in e["expected"]:
            out.append("%s (pid %d) exited %s after %s, expected %s" % (
                e["name"], e["pid"], e["status"], e["requested"], sorted(e["expected"])))
    return out


def median(values):
    values = sorted(values)
    if not values:
        return float("nan")
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2


def flatness(first, last, rss_ratio, fd_slack, conn_slack):
    """RSS, open fds and Redis connections of one process, in the first and
    in the last minute. Returns (ok, text).
    `first`, `last`: [(rss, fds, redis_connections)].

    RSS is compared by its floor, the 10th percentile of the samples: what
    the process holds between requests. Its median also carries what is in
    flight (log lines queued for Redis, up to the queue's bound) and the
    free memory the allocator kept after an overload or a Redis freeze, so it
    swings by tens of MB with the load while nothing leaks. A leak is in
    every sample and raises the floor. The median is reported beside it.
    fds and connections: medians."""
    if len(first) < 3 or len(last) < 3:
        return False, "too few samples (%d first, %d last)" % (len(first), len(last))
    r0, r1 = percentile([s[0] for s in first], 0.10), percentile([s[0] for s in last], 0.10)
    m0, m1 = median([s[0] for s in first]), median([s[0] for s in last])
    f0, f1 = median([s[1] for s in first]), median([s[1] for s in last])
    c0, c1 = median([s[2] for s in first]), median([s[2] for s in last])
    problems = []
    if r1 > r0 * rss_ratio:
        problems.append("RSS floor grew %.1f %% (bound %.0f %%)" % (100 * (r1 / r0 - 1),
                                                                    100 * (rss_ratio - 1)))
    if f1 > f0 + fd_slack:
        problems.append("fds %g -> %g (bound +%d)" % (f0, f1, fd_slack))
    if abs(c1 - c0) > conn_slack:
        problems.append("Redis connections %g -> %g (bound +-%d)" % (c0, c1, conn_slack))
    text = ("RSS floor %.1f -> %.1f MB (%+.1f %%; median %.1f -> %.1f MB), fds %g -> %g, "
            "Redis connections %g -> %g" % (r0 / 2**20, r1 / 2**20, 100 * (r1 / r0 - 1),
                                            m0 / 2**20, m1 / 2**20, f0, f1, c0, c1))
    return not problems, text + ("" if not problems else ": " + "; ".join(problems))


def heap_text(first, last):
    """The live heap (the allocator's allocated bytes, from /metrics) of one
    process in the first and in the last minute, by its floor like RSS:
    reported beside RSS, not judged. RSS also holds the pages the allocator
    keeps for reuse; allocated bytes are what the program holds, so the two
    together tell a leak from the allocator's retention. Not judged because
    it also holds bounded pools that fill at a process's first Redis freeze
    (each ranking thread keeps up to 8 requests' log values for reuse). ""
    for samples without the gauge (a server that does not export it)."""
    first = [x for x in first if x is not None]
    last = [x for x in last if x is not None]
    if len(first) < 3 or len(last) < 3:
        return ""
    h0, h1 = percentile(first, 0.10), percentile(last, 0.10)
    return "live heap floor %.1f -> %.1f MB (%+.1f %%)" % (h0 / 2**20, h1 / 2**20,
                                                           100 * (h1 / h0 - 1))


def excluded_at(t, windows):
    """Whether time t falls in one of the (start, end) windows."""
    return any(a <= t <= b for a, b in windows)


def merge_windows(windows):
    """Sorted, non-overlapping (start, end) windows covering the same time."""
    out = []
    for a, b in sorted(windows):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def outside_windows(spans, windows):
    """The indices of the (t0, t1) spans, sorted by t0, that meet none of
    the windows (one sweep)."""
    merged = merge_windows(windows)
    out = []
    w = 0
    for i, (t0, t1) in enumerate(spans):
        while w < len(merged) and merged[w][1] < t0:
            w += 1
        # merged[w] is the first window that ends at or after t0: the span
        # meets a window iff that one starts by t1.
        if w == len(merged) or merged[w][0] > t1:
            out.append(i)
    return out


def allowed_over(n, alpha=0.01, share=0.01):
    """The most calls of n that may be over a p99 bound before that is
    evidence the window's p99 is over it: the largest c with
    P(X >= c) > alpha for X ~ Binomial(n, share)."""
    if n <= 0:
        return 0
    log_q = math.log1p(-share)
    log_pmf = n * log_q  # P(X = 0)
    cdf = 0.0
    for k in range(n + 1):
        cdf += math.exp(log_pmf)
        if 1.0 - cdf <= alpha:  # P(X >= k + 1) <= alpha: k + 1 is evidence.
            return k
        log_pmf += math.log(n - k) - math.log(k + 1) + math.log(share) - log_q
    return n


def latency_report(calls, faults, baseline, factor, recovery_s, window_s, min_calls=20,
                   floor_us=0.0, alpha=0.01):
    """p99 of the OK main-load calls.

    - the baseline: calls due in the fault-free stretch `baseline` = (t0, t1);
    - outside faults: calls that meet no fault window (a fault's window runs
      from its start to `recovery_s` after its end); their p99 must be
      <= factor x the baseline's;
    - per fault, recovery: the first window of `window_s` seconds of calls,
      starting 0, 0.5, 1, ... s after the fault's end, whose p99 is under
      factor x the larger of the baseline's p99 and the p99 of the calls in
      the steady gap just before the fault (so a host that got slower since
      the baseline, not the fault, does not count as a fault's tail); it
      must start within `recovery_s`. "Under" is a test, not the sample
      p99: a window is still in the tail only if its count of calls over
      the bound is improbable (p <= `alpha`) for calls of which 1 % are over
      it (allowed_over). At 160 calls that is 6 or more, not 2; at 2,000
      calls it is 32 or more, near the sample p99.
    Neither bound is below `floor_us`: at a low call rate a window's p99 is
    its second-slowest call, which one scheduling hiccup of a shared host
    decides (the CI run's 80 calls/s; 0 for a long run at ~1,000/s).
    """
    ok_calls = sorted((due, lat) for due, lat, code, _, source in calls
                      if code == "OK" and source == "main")
    dues = [due for due, _ in ok_calls]

    def between(t0, t1):
        return [lat for _, lat in ok_calls[bisect.bisect_left(dues, t0):
                                           bisect.bisect_left(dues, t1)]]
    base_p99 = percentile(between(*baseline), 0.99)
    bound = max(factor * base_p99, floor_us)
    ended = sorted((f for f in faults if f["end"] is not None), key=lambda f: f["start"])
    windows = [(f["start"], f["end"] + recovery_s) for f in ended]
    after = ok_calls[bisect.bisect_left(dues, baseline[1]):]
    keep = outside_windows([(due, due + lat / 1e6) for due, lat in after], windows)
    outside = [after[i][1] for i in keep]
    outside_p99 = percentile(outside, 0.99)
    recoveries = []
    steady_from = baseline[1]
    for f in ended:
        gap = between(steady_from, f["start"])
        gap_p99 = percentile(gap, 0.99) if len(gap) >= min_calls else float("nan")
        local = max(factor * max(base_p99, 0 if math.isnan(gap_p99) else gap_p99), floor_us)
        steady_from = f["end"] + recovery_s
        back = None
        worst = float("nan")
        over = []  # (calls over the bound, calls, allowed) per window tried
        for step in range(int(recovery_s / 0.5) + 1):
            lats = between(f["end"] + 0.5 * step, f["end"] + 0.5 * step + window_s)
            p = percentile(lats, 0.99) if len(lats) >= min_calls else float("nan")
            if step == 0:
                worst = p
            if len(lats) < min_calls:
                continue
            slow = sum(1 for lat in lats if lat > local)
            over.append((slow, len(lats), allowed_over(len(lats), alpha)))
            if slow <= over[-1][2]:
                back = 0.5 * step
                break
        recoveries.append({"id": f.get("id", 0), "kind": f["kind"], "p99_at_end_ms": worst / 1e3,
                           "gap_before_p99_ms": gap_p99 / 1e3, "bound_ms": local / 1e3,
                           "over_bound": over, "back_after_s": back, "ok": back is not None})
    return {"baseline_calls": len(between(*baseline)), "baseline_p99_ms": base_p99 / 1e3,
            "bound_ms": bound / 1e3, "factor": factor, "floor_ms": floor_us / 1e3, "alpha": alpha,
            "outside_calls": len(outside),
            "outside_p99_ms": outside_p99 / 1e3,
            "outside_ok": len(outside) > 0 and not math.isnan(base_p99) and outside_p99 <= bound,
            "recovery_s": recovery_s, "window_s": window_s, "recoveries": recoveries}
