"""The public API: its names, the package version, and Client's channel
settings (no server: grpcio connects lazily). Calls against a live server:
tests/interop/test_python_client.py."""

import json
import re
import unittest
from pathlib import Path

import grpc

import rankwire

ROOT = Path(__file__).resolve().parents[2]


class PublicApiTest(unittest.TestCase):
    def test_names(self):
        for name in rankwire.__all__:
            self.assertTrue(hasattr(rankwire, name), name)
        for exc in (rankwire.TruncatedError, rankwire.ChecksumError,
                    rankwire.UnsupportedVersionError):
            self.assertTrue(issubclass(exc, rankwire.FormatError))
        for exc in (rankwire.FormatError, rankwire.LimitError, rankwire.UnknownCodecError,
                    rankwire.RpcError):
            self.assertTrue(issubclass(exc, rankwire.Error))
        self.assertTrue(issubclass(rankwire.FormatError, ValueError))
        self.assertEqual([t.value for t in rankwire.MetricType],
                         [rankwire.rank_pb2.METRIC_TYPE_INT, rankwire.rank_pb2.METRIC_TYPE_FLOAT,
                          rankwire.rank_pb2.METRIC_TYPE_DOUBLE,
                          rankwire.rank_pb2.METRIC_TYPE_STRING])

    def test_version_is_the_projects(self):
        cmake = (ROOT / "CMakeLists.txt").read_text()
        project = re.search(r"project\(rankwire VERSION ([0-9.]+)", cmake).group(1)
        pyproject = (ROOT / "python" / "pyproject.toml").read_text()
        self.assertEqual(re.search(r'^version = "([0-9.]+)"', pyproject, re.M).group(1), project)
        self.assertEqual(rankwire.__version__, project)


class DocsTest(unittest.TestCase):
    def test_clients_md_shows_the_example_that_runs(self):
        # interop.python_client runs python/examples/central_control.py;
        # docs/CLIENTS.md must show that file, not a copy that drifted.
        doc = (ROOT / "docs" / "CLIENTS.md").read_text()
        example = (ROOT / "python" / "examples" / "central_control.py").read_text()
        self.assertIn("```python\n" + example + "```\n", doc)


class ServiceConfigTest(unittest.TestCase):
    def test_default_is_the_cpp_clients(self):
        # client/rank_client.cc ServiceConfigJson() with default ChannelOptions.
        cpp = ('{"loadBalancingConfig":[{"round_robin":{}}],"methodConfig":[{"name":['
               '{"service":"rank.v1.RankService","method":"Rank"},'
               '{"service":"rank.v1.LogService","method":"FetchLogs"}],'
               '"retryPolicy":{"maxAttempts":4,"initialBackoff":"0.005s","maxBackoff":"0.1s",'
               '"backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}],'
               '"healthCheckConfig":{"serviceName":"rank.v1.RankService"}}')
        self.assertEqual(rankwire.DEFAULT_SERVICE_CONFIG, json.loads(cpp))
        source = (ROOT / "client" / "rank_client.cc").read_text()
        for fragment in ('"initialBackoff":"0.005s","maxBackoff":"0.1s"',
                         '"retryableStatusCodes":["UNAVAILABLE"]', "int max_attempts = 4;"):
            self.assertIn(fragment, source + (ROOT / "client" / "rank_client.h").read_text())

    def test_variants(self):
        config = rankwire.service_config(lb_policy="pick_first", max_attempts=1, health_service="")
        self.assertEqual(config, {"loadBalancingConfig": [{"pick_first": {}}]})
        for bad in ({"lb_policy": "grpclb"}, {"max_attempts": 6}, {"max_attempts": 0}):
            with self.subTest(bad), self.assertRaises(ValueError):
                rankwire.service_config(**bad)

    def test_client_builds_channels_lazily(self):
        with rankwire.Client("127.0.0.1:1", service_config=None) as plain:
            self.assertIsInstance(plain.channel, grpc.Channel)
        credentials = grpc.ssl_channel_credentials()
        with rankwire.Client("127.0.0.1:1", credentials=credentials,
                             ssl_target_name="rankwire.test",
                             service_config=json.dumps(rankwire.service_config())):
            pass


if __name__ == "__main__":
    unittest.main()
