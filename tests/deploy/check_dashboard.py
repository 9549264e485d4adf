"""The Grafana dashboard (deploy/grafana/rankwire-dashboard.json) against what
a running server really exports.

Starts the real rankwire-server (in-process log store, free loopback ports),
makes one Rank call with rankwire-cli so every series has data, scrapes
/metrics, and checks that every PromQL expression of the dashboard (panels
and template variables):
  - names only metrics the server exports (histograms by their _bucket,
    _sum and _count series);
  - matches only labels those metrics carry, with values they take
    (`outcome="enqueued"` must be a real outcome);
  - aggregates `by (...)` only labels the metrics carry (or `le` on buckets,
    or the target labels Prometheus adds: job, instance);
  - and that the dashboard covers what an operator needs: calls by codec and
    outcome, phase latency percentiles, response bytes, log items
    stored/dropped, log queue depth, in-flight calls.

Usage: check_dashboard.py <repo root> <rankwire-server> <rankwire-cli>
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

ROOT, SERVER, CLI = sys.argv[1:4]
sys.argv = sys.argv[:1]
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "rankwire-dashboard.json")
TARGET_LABELS = {"job", "instance"}  # Added by Prometheus at scrape time.
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
SELECTOR = re.compile(r"\b(rankwire_[a-z0-9_]+)\b(\{[^}]*\})?")
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"')
BY = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


def scrape_running_server():
    """{metric name: [label dict, ...]} from a real server's /metrics."""
    log = tempfile.NamedTemporaryFile(prefix="rankwire-dashboard-", suffix=".log", delete=False)
    server = subprocess.Popen(
        [SERVER, "--address=127.0.0.1", "--port=0", "--metrics_port=0", "--logstore=memory",
         "--log_mode=store", "--model=" + os.path.join(ROOT, "model", "models",
                                                      "ecom_search_lr.model")],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        ports = None
        deadline = time.monotonic() + 20
        while ports is None and time.monotonic() < deadline and server.poll() is None:
            with open(log.name) as f:
                ports = re.search(r"listening port=(\d+) metrics_port=(\d+)", f.read())
            time.sleep(0.02)
        if ports is None:
            with open(log.name) as f:
                raise RuntimeError("server did not start:\n" + f.read())
        for codec in ("rankbin", "protobuf"):
            subprocess.run([CLI, f"--target=127.0.0.1:{ports.group(1)}", f"--codec={codec}",
                            "--candidates=50"], check=True, capture_output=True, timeout=30)
        text = urllib.request.urlopen(
            f"http://127.0.0.1:{ports.group(2)}/metrics", timeout=5).read().decode()
    finally:
        server.terminate()
        server.wait(timeout=30)
        os.unlink(log.name)
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"unparsable /metrics line: {line!r}"
        series.setdefault(m.group(1), []).append(dict(LABEL.findall(m.group(2) or "")))
    return series


def expressions(dashboard):
    out = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            out.append((panel["title"], target["expr"], target.get("legendFormat", "")))
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            # label_values(metric{...}, label): the label must exist too.
            m = re.match(r"label_values\((.*),\s*(\w+)\)$", var["query"])
            assert m, var["query"]
            out.append((f"variable {var['name']}", m.group(1), "{{%s}}" % m.group(2)))
    return out


class DashboardTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.series = scrape_running_server()
        with open(DASHBOARD) as f:
            cls.dashboard = json.load(f)

    def labels_of(self, name):
        labels = set()
        for s in self.series[name]:
            labels |= set(s)
        if name.endswith("_bucket"):
            labels.add("le")
        return labels | TARGET_LABELS

    def test_every_expression_names_exported_metrics_and_labels(self):
        exprs = expressions(self.dashboard)
        self.assertGreater(len(exprs), 10)
        for title, expr, legend in exprs:
            where = f"{title}: {expr}"
            selectors = SELECTOR.findall(expr)
            self.assertTrue(selectors, f"{where}: names no rankwire metric")
            available = set()
            for name, braces in selectors:
                self.assertIn(name, self.series, f"{where}: {name} is not exported")
                labels = self.labels_of(name)
                available |= labels
                for label, op, value in MATCHER.findall(braces):
                    self.assertIn(label, labels, f"{where}: {name} has no label {label}")
                    if label in TARGET_LABELS or "$" in value:
                        continue
                    values = {s.get(label, "") for s in self.series[name]}
                    if op == "=":
                        self.assertIn(value, values, f"{where}: {label}={value!r} never occurs")
                    elif op == "=~":
                        self.assertTrue(any(re.fullmatch(value, v) for v in values),
                                        f"{where}: {label}=~{value!r} matches nothing")
            for group in BY.findall(expr):
                for label in filter(None, (l.strip() for l in group.split(","))):
                    self.assertIn(label, available, f"{where}: by ({label}) is not a label")
            for label in re.findall(r"\{\{\s*(\w+)\s*\}\}", legend):
                self.assertIn(label, available, f"{where}: legend uses {label}")

    def test_dashboard_covers_what_operators_need(self):
        exprs = " ".join(e for _, e, _ in expressions(self.dashboard))
        for needed in [
            r"by \(outcome\) \(rate\(rankwire_rank_rpcs_total",     # calls by status
            r"by \(codec\) \(rate\(rankwire_responses_total",       # calls by codec
            r"histogram_quantile\(0\.99, sum by \(le, phase\) \(rate\(rankwire_server_phase_seconds_bucket",
            r"histogram_quantile\(0\.5, sum by \(le, phase\)",
            r"rankwire_response_body_bytes_bucket",                 # response bytes
            r"rankwire_log_items_total",                            # stored / dropped
            r'outcome=~"dropped_\.\*\|unknown"',
            r"rankwire_log_queue_requests",                         # queue depth
            r"rankwire_rank_rpcs_in_flight",                        # in flight
            r"rankwire_serving",                                    # draining replicas
        ]:
            self.assertRegex(exprs, needed)

    def test_panels_do_not_overlap(self):
        cells = set()
        for p in self.dashboard["panels"]:
            g = p["gridPos"]
            self.assertLessEqual(g["x"] + g["w"], 24, p["title"])
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    self.assertNotIn((x, y), cells, f"{p['title']} overlaps another panel")
                    cells.add((x, y))
        ids = [p["id"] for p in self.dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)))


if __name__ == "__main__":
    unittest.main()
