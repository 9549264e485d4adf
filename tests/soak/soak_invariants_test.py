"""Unit tests of the soak's checks, on made-up records: each invariant
passes what it should and fails what it should, so the soak itself cannot
pass by construction. Also the schedule, the ConfigMap-style model
directory, the exit line's parser and the calls file follower.

    /usr/bin/python3 -m unittest -v tests/soak/soak_invariants_test.py
"""

import os
import random
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_fleet as fleet  # noqa: E402
import soak_invariants as inv  # noqa: E402
import soak_nemesis  # noqa: E402

MODEL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "model", "models", "ecom_search_lr.model")


def fault(kind, start, end, id_=1):
    return {"id": id_, "kind": kind, "start": start, "end": end}


class CallFailures(unittest.TestCase):
    FAULTS = [fault("overload", 100, 103, 1), fault("kill_replica", 200, 202, 2)]

    def test_resource_exhausted_inside_an_overload_burst_is_allowed(self):
        calls = [(101, 5000, "RESOURCE_EXHAUSTED", "", "main"),
                 (103.5, 100, "RESOURCE_EXHAUSTED", "", "overload"),  # within the grace
                 (150, 100, "OK", "v", "main")]
        self.assertEqual(inv.call_failures(calls, self.FAULTS), [])

    def test_resource_exhausted_outside_a_burst_fails(self):
        out = inv.call_failures([(150, 100, "RESOURCE_EXHAUSTED", "", "main")], self.FAULTS)
        self.assertEqual(len(out), 1)
        self.assertEqual(out[0]["in_force"], "none")

    def test_any_other_failure_fails_naming_the_fault_in_force(self):
        out = inv.call_failures([(201, 3000, "UNAVAILABLE", "", "main"),
                                 (102, 10, "DEADLINE_EXCEEDED", "", "overload")], self.FAULTS)
        self.assertEqual([f["in_force"] for f in out], ["kill_replica#2", "overload#1"])

    def test_a_fault_still_in_force_has_no_end(self):
        out = inv.call_failures([(500, 1, "INTERNAL", "", "main")],
                                [fault("redis_freeze", 499, None)], now=501)
        self.assertEqual(out[0]["in_force"], "redis_freeze#1")


class Versions(unittest.TestCase):
    PUBLISHED = [(10, "m@1", True), (50, "m@2", False), (60, "m@3", True)]

    def check(self, due, version):
        return inv.version_violations([(due, 1000, "OK", version, "main")], self.PUBLISHED,
                                      stale_s=5)

    def test_good_versions_in_their_time_pass(self):
        self.assertEqual(self.check(20, "m@1"), [])
        self.assertEqual(self.check(55, "m@1"), [])  # the broken one did not retire it
        self.assertEqual(self.check(64, "m@1"), [])  # within stale_s of its successor
        self.assertEqual(self.check(61, "m@3"), [])

    def test_a_broken_version_fails(self):
        self.assertEqual(self.check(55, "m@2")[0]["why"], "a broken version")

    def test_a_version_never_published_fails(self):
        self.assertEqual(self.check(20, "m@9")[0]["why"], "never published")

    def test_before_its_publication_fails(self):
        self.assertEqual(self.check(30, "m@3")[0]["why"], "answered before it was published")

    def test_a_superseded_version_fails_after_stale_s(self):
        self.assertIn("superseded", self.check(70, "m@1")[0]["why"])

    def test_failed_calls_are_not_version_checked(self):
        self.assertEqual(inv.version_violations([(1, 1, "UNAVAILABLE", "", "main")],
                                                self.PUBLISHED, 5), [])


class Identity(unittest.TestCase):
    def counts(self, **kw):
        c = {"handed": 100, "stored": 60, "dropped_queue_full": 10, "dropped_store_error": 5,
             "dropped_shutdown": 0, "unknown": 5, "in_flight": 20}
        c.update(kw)
        return c

    def test_counts_that_add_up_pass(self):
        self.assertTrue(inv.identity(self.counts())[0])
        self.assertTrue(inv.identity(self.counts(in_flight=0, stored=80), final=True)[0])

    def test_a_line_missing_fails(self):
        ok, text = inv.identity(self.counts(stored=59))
        self.assertFalse(ok)
        self.assertIn("gap 1", text)

    def test_lines_in_flight_after_the_drain_fail(self):
        self.assertFalse(inv.identity(self.counts(), final=True)[0])

    def test_in_flight_over_the_queue_bound_fails(self):
        self.assertFalse(inv.identity(self.counts(), in_flight_bound=19)[0])

    def test_a_server_without_handed_or_enqueued_fails(self):
        self.assertFalse(inv.identity({"stored": 1})[0])
        self.assertFalse(inv.identity({"handed": 1, "stored": 1})[0])
        self.assertFalse(inv.identity(None)[0])


class EnqueuedBound(unittest.TestCase):
    """A server without handed/unknown (main before the logs-columns
    change): enqueued <= stored + dropped after the queue + queued, and
    stored <= enqueued once drained."""

    def counts(self, **kw):
        c = {"enqueued": 100, "stored": 70, "dropped_queue_full": 40,
             "dropped_store_error": 10, "dropped_shutdown": 0}
        c.update(kw)
        return c

    def test_lines_still_queued_within_the_bound_pass(self):
        self.assertTrue(inv.identity(self.counts(), in_flight_bound=20)[0])
        self.assertTrue(inv.identity(self.counts(stored=90), final=True)[0])

    def test_a_line_lost_fails(self):
        # 100 enqueued, 89 stored + 10 dropped on write: one line gone.
        self.assertFalse(inv.identity(self.counts(stored=89), final=True)[0])
        self.assertFalse(inv.identity(self.counts(), in_flight_bound=19)[0])

    def test_more_stored_than_enqueued_fails_once_drained(self):
        ok, text = inv.identity(self.counts(stored=101), final=True)
        self.assertFalse(ok)
        self.assertIn("stored 101 <= enqueued 100", text)

    def test_an_exit_line_is_bounded_by_the_last_scrape(self):
        line = {"stored": 95, "dropped_queue_full": 5, "dropped_store_error": 3,
                "dropped_shutdown": 2}
        self.assertTrue(inv.identity(inv.with_enqueued_min(line, self.counts()))[0])
        self.assertFalse(inv.identity(inv.with_enqueued_min(line, self.counts(enqueued=101)))[0])
        self.assertFalse(inv.identity(line)[0])

    def test_counts_that_go_down_are_found(self):
        self.assertEqual(inv.monotonic({"stored": 5, "in_flight": 3},
                                       {"stored": 4, "in_flight": 0}), ["stored"])


class LogLoss(unittest.TestCase):
    def test_loss_during_a_redis_fault_or_an_overload_is_allowed(self):
        readings = [(10, {"stored": 100}), (11, {"stored": 150, "dropped_store_error": 5}),
                    (20, {"stored": 200, "dropped_store_error": 5}),
                    (21, {"stored": 250, "dropped_store_error": 5, "dropped_queue_full": 9})]
        faults = [fault("redis_freeze", 10.5, 12, 1), fault("overload", 20.2, 23, 2)]
        self.assertEqual(inv.log_loss(readings, faults), [])

    def test_loss_with_redis_up_and_room_in_the_queue_fails(self):
        readings = [(10, {"stored": 100}), (11, {"stored": 150, "unknown": 1}),
                    (12, {"stored": 160, "unknown": 1, "dropped_shutdown": 3})]
        out = inv.log_loss(readings, [fault("kill_replica", 10.2, 11, 1)])
        self.assertEqual([x["lost"] for x in out], [{"unknown": 1}, {"dropped_shutdown": 3}])
        self.assertEqual(out[0]["in_force"], "kill_replica#1")


class Exits(unittest.TestCase):
    def test_requested_with_the_expected_status_passes(self):
        self.assertEqual(inv.exit_violations([{"name": "r1", "pid": 1, "status": -9,
                                               "requested": "SIGKILL", "expected": {-9}}]), [])

    def test_an_unrequested_exit_is_a_crash(self):
        out = inv.exit_violations([{"name": "r1", "pid": 1, "status": -6, "requested": None,
                                    "expected": set()}])
        self.assertIn("crash", out[0])

    def test_a_drain_that_exits_1_fails(self):
        self.assertEqual(len(inv.exit_violations([{"name": "r1", "pid": 1, "status": 1,
                                                   "requested": "SIGTERM", "expected": {0}}])), 1)


class Flatness(unittest.TestCase):
    FIRST = [(100e6, 30, 1)] * 5

    def test_flat_passes(self):
        self.assertTrue(inv.flatness(self.FIRST, [(105e6, 32, 1)] * 5, 1.10, 4, 0)[0])

    def test_rss_growth_over_the_bound_fails(self):
        self.assertFalse(inv.flatness(self.FIRST, [(111e6, 30, 1)] * 5, 1.10, 4, 0)[0])

    def test_rss_that_swings_with_the_queue_over_a_flat_floor_passes(self):
        # Half the last minute's samples hold a full log queue (+60 MB):
        # the median moves, the floor does not.
        swinging = [(101e6, 30, 1)] * 5 + [(160e6, 30, 1)] * 5
        ok, text = inv.flatness(self.FIRST, swinging, 1.10, 4, 0)
        self.assertTrue(ok, text)
        self.assertIn("median", text)

    def test_a_floor_that_rises_fails_however_the_median_moves(self):
        leaking = [(112e6, 30, 1)] * 9 + [(100e6, 30, 1)]
        self.assertFalse(inv.flatness(self.FIRST, leaking, 1.10, 4, 0)[0])

    def test_the_live_heap_is_reported_by_its_floor_and_only_when_exported(self):
        text = inv.heap_text([8e6] * 5, [8.8e6] * 4 + [30e6])
        self.assertIn("live heap floor 7.6 -> 8.4 MB (+10.0 %)", text)
        self.assertEqual(inv.heap_text([None] * 5, [None] * 5), "")

    def test_leaked_fds_fail(self):
        self.assertFalse(inv.flatness(self.FIRST, [(100e6, 35, 1)] * 5, 1.10, 4, 0)[0])

    def test_leaked_redis_connections_fail(self):
        self.assertFalse(inv.flatness(self.FIRST, [(100e6, 30, 2)] * 5, 1.10, 4, 0)[0])

    def test_too_few_samples_fail(self):
        self.assertFalse(inv.flatness(self.FIRST[:2], self.FIRST, 1.10, 4, 0)[0])


class Latency(unittest.TestCase):
    @staticmethod
    def calls(t0, t1, latency_us, qps=50):
        n = int((t1 - t0) * qps)
        return [(t0 + i / qps, latency_us, "OK", "v", "main") for i in range(n)]

    def test_steady_latency_and_a_quick_recovery_pass(self):
        calls = self.calls(0, 20, 1000) + self.calls(20, 25, 50000) + self.calls(25, 40, 1100)
        r = inv.latency_report(calls, [fault("kill_replica", 20, 24)], (0, 20), 1.5, 3, 2)
        self.assertTrue(r["outside_ok"])
        self.assertEqual(r["recoveries"][0]["back_after_s"], 1.0)

    def test_p99_outside_faults_over_the_bound_fails(self):
        calls = self.calls(0, 20, 1000) + self.calls(20, 40, 2000)
        r = inv.latency_report(calls, [], (0, 20), 1.5, 3, 2)
        self.assertFalse(r["outside_ok"])

    def test_a_p99_that_does_not_come_back_fails(self):
        calls = self.calls(0, 20, 1000) + self.calls(20, 40, 9000)
        r = inv.latency_report(calls, [fault("redis_freeze", 20, 22)], (0, 20), 1.5, 3, 2)
        self.assertFalse(r["recoveries"][0]["ok"])

    def test_a_floor_keeps_a_few_slow_calls_at_a_low_rate_from_deciding(self):
        # Three 8 ms calls every half second after a fault, at 80 calls/s
        # over a 1 ms baseline: 12 of a 2 s window's 160 calls are slow.
        calls = self.calls(0, 20, 1000, qps=80) + self.calls(22, 30, 1000, qps=80)
        calls += [(22.01 + 0.5 * i + 0.1 * j, 8000, "OK", "v", "main")
                  for i in range(12) for j in range(3)]
        freeze = [fault("redis_freeze", 20, 22)]
        self.assertFalse(inv.latency_report(calls, freeze, (0, 20), 3, 3, 2)["recoveries"][0]["ok"])
        r = inv.latency_report(calls, freeze, (0, 20), 3, 3, 2, floor_us=10000)
        self.assertEqual(r["recoveries"][0]["back_after_s"], 0.0)
        self.assertAlmostEqual(r["bound_ms"], 10.0)
        # A tail over the floor still fails.
        slow = self.calls(0, 20, 1000, qps=80) + self.calls(22, 30, 12000, qps=80)
        self.assertFalse(inv.latency_report(slow, freeze, (0, 20), 3, 3, 2,
                                            floor_us=10000)["recoveries"][0]["ok"])

    def test_a_host_slower_since_the_baseline_is_not_a_fault_tail(self):
        # The steady gap before the fault is as slow as after it: recovered.
        calls = self.calls(0, 20, 1000) + self.calls(20, 30, 2000) + \
            self.calls(30, 32, 9000) + self.calls(32, 40, 2500)
        r = inv.latency_report(calls, [fault("bad_model", 30, 32)], (0, 20), 1.5, 3, 2)
        self.assertEqual(r["recoveries"][0]["back_after_s"], 0.0)
        self.assertAlmostEqual(r["recoveries"][0]["bound_ms"], 3.0)

    def test_a_few_slow_calls_in_a_window_are_not_a_tail_and_many_are(self):
        # 80 calls/s, 1 ms baseline, bound 3 ms: 5 slow calls of a 2 s
        # window's 160 are what 1 % over the bound gives with p > 1 %;
        # 6 are evidence of a tail. A fault's real tail (every call slow
        # for 2 s) never comes back within 3 s.
        base = self.calls(0, 20, 1000, qps=80)
        after = self.calls(22, 40, 1000, qps=80)
        freeze = [fault("redis_freeze", 20, 22)]

        def slow(n):
            return [(22.01 + 0.35 * i, 9000, "OK", "v", "main") for i in range(n)]
        r = inv.latency_report(base + after + slow(5), freeze, (0, 20), 3, 3, 2)
        self.assertEqual(r["recoveries"][0]["back_after_s"], 0.0)
        self.assertEqual(r["recoveries"][0]["over_bound"], [(5, 165, 5)])
        r = inv.latency_report(base + after + slow(6), freeze, (0, 20), 3, 3, 2)
        self.assertEqual(r["recoveries"][0]["back_after_s"], 0.5)
        tail = base + self.calls(22, 26.5, 20000, qps=80) + self.calls(26.5, 40, 1000, qps=80)
        r = inv.latency_report(tail, [fault("kill_replica", 20, 22)], (0, 20), 3, 3, 2)
        self.assertFalse(r["recoveries"][0]["ok"])
        self.assertEqual([o[0] for o in r["recoveries"][0]["over_bound"]], [160] * 6 + [120])

    def test_allowed_over_is_the_binomial_critical_count(self):
        self.assertEqual([inv.allowed_over(n) for n in (0, 20, 160, 400, 2000)], [0, 2, 5, 9, 31])

    def test_windows_are_excluded_by_one_sweep(self):
        spans = [(0, 1), (5, 6), (9, 12), (20, 21)]
        self.assertEqual(inv.outside_windows(spans, [(4, 5.5), (11, 15)]), [0, 3])


class Schedule(unittest.TestCase):
    def test_short_covers_every_kind_per_kind_times_and_follows_the_seed(self):
        a = soak_nemesis.short_schedule(random.Random(3), 2)
        self.assertEqual(sorted(a), sorted(soak_nemesis.KINDS * 2))
        self.assertEqual(a, soak_nemesis.short_schedule(random.Random(3), 2))
        self.assertNotEqual(a, soak_nemesis.short_schedule(random.Random(4), 2))

    def test_long_rounds_cover_every_kind(self):
        g = soak_nemesis.long_schedule(random.Random(1))
        first = [next(g) for _ in range(2 * len(soak_nemesis.KINDS))]
        self.assertEqual(sorted(first), sorted(soak_nemesis.KINDS * 2))


class ModelDirLayout(unittest.TestCase):
    def test_updates_are_configmap_swaps(self):
        with tempfile.TemporaryDirectory() as tmp:
            d = fleet.ModelDir(os.path.join(tmp, "m"), MODEL)
            d.publish_good()
            d.publish_good()
            three = d.publish_good()
            self.assertEqual(sorted(os.listdir(d.path))[-2:], ["2.model", "3.model"])
            self.assertEqual(os.readlink(os.path.join(d.path, "3.model")), "..data/3.model")
            with open(os.path.join(d.path, "3.model")) as f:
                self.assertIn("\nversion soak-%d\n" % three, f.read())
            n, breakage = d.publish_bad(0, only=True)
            names = sorted(os.listdir(d.path))
            self.assertEqual([x for x in names if not x.startswith("..")], ["%d.model" % n])
            # One timestamped directory, the one ..data names.
            stamps = [x for x in names if x.startswith("..2026")]
            self.assertEqual(stamps, [os.readlink(os.path.join(d.path, "..data"))])
            with open(os.path.join(d.path, "%d.model" % n)) as f:
                self.assertIn("weight ctr 14.50", f.read())
            self.assertEqual(breakage, "weight_arity")
            self.assertEqual(d.newest_good(), three)
            n, _ = d.publish_bad(1, only=False)
            self.assertEqual(sorted(x for x in os.listdir(d.path) if not x.startswith("..")),
                             ["%d.model" % n])  # no good version left to keep beside it


class Parsing(unittest.TestCase):
    def test_the_exit_line(self):
        text = ("[info] log store flushed: handed=1000 stored=900 dropped(queue_full=50 "
                "store_error=30 shutdown=0) unknown=20\n")
        self.assertEqual(fleet.flushed_counts(text), {
            "handed": 1000, "stored": 900, "dropped_queue_full": 50, "dropped_store_error": 30,
            "dropped_shutdown": 0, "unknown": 20})
        self.assertTrue(inv.identity(fleet.flushed_counts(text))[0])
        self.assertIsNone(fleet.flushed_counts("no such line"))

    def test_the_calls_follower_keeps_partial_lines(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "calls.tsv")
            reader = fleet.CallsReader(path)
            self.assertEqual(reader.read(), [])
            with open(path, "w") as f:
                f.write("1000000\t12.5\tOK\tm@1\n2000000\t3")
            self.assertEqual(reader.read(), [(1.0, 12.5, "OK", "m@1")])
            with open(path, "a") as f:
                f.write(".0\tUNAVAILABLE\t\n")
            self.assertEqual(reader.read(), [(2.0, 3.0, "UNAVAILABLE", "")])


if __name__ == "__main__":
    unittest.main()
