"""The rankwire Python package's Client against the real rankwire-server.

Every codec through the server decodes to the same result, lazily and in
full; a lazy top-N needs none of the later blocks; the server's default
codec applies when the caller names none; FetchLogs; each error code
docs/CLIENTS.md tells callers to handle, as rankwire.RpcError; the service
config's health checking is live; mutual TLS.

Environment as test_interop.py (RANKWIRE_SERVER_BIN, RANKWIRE_MODEL_PATH,
PYTHONPATH with python/src).
"""

import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rankwire  # noqa: E402
from rankwire import rank_pb2  # noqa: E402
from test_interop import ServerFixture, make_request, same_value  # noqa: E402


def same_items(test, got, want):
    test.assertEqual(len(got), len(want))
    for a, b in zip(got, want):
        test.assertEqual((a.id, a.position, a.log), (b.id, b.position, b.log))
        test.assertTrue(same_value(a.score, b.score), a.id)
        test.assertEqual(set(a.metrics), set(b.metrics), a.id)
        for name, value in b.metrics.items():
            test.assertTrue(same_value(a.metrics[name], value), f"{a.id} {name}")


def sections(payload):
    """FORMAT.md's section table: id -> (body start, body end)."""
    out, p = {}, 8
    for _ in range(struct.unpack_from("<H", payload, 6)[0]):
        length = struct.unpack_from("<I", payload, p + 1)[0]
        out[payload[p]] = (p + 5, p + 5 + length)
        p += 5 + length
    return out


def block_directory(payload, start):
    """(offset of the entries, block count, offset of the blocks' data) of a
    VALUES or LOGS section starting at `start`."""
    count, shift, p = 0, 0, start
    while True:
        b = payload[p]
        p += 1
        count |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return p, count, p + 9 * count


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ServerFixture()
        cls.client = rankwire.Client(f"127.0.0.1:{cls.server.port}")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        cls.server.close()

    def test_every_codec_decodes_to_the_same_result(self):
        decoded = {}
        for codec in rankwire.CODECS:
            with self.subTest(codec=codec):
                result = self.client.rank(make_request(), timeout=10, accept_codecs=[codec])
                self.assertEqual(result.codec, codec)
                self.assertEqual(result.header.request_id, "py-7")
                self.assertEqual(len(result), 500)
                self.assertEqual(result.header.log_mode, rank_pb2.LOG_MODE_INLINE)
                decoded[codec] = result.materialize()
        for codec in ("rankbin", "rankbin-zstd"):
            self.assertEqual(decoded[codec].keys, decoded["protobuf"].keys)
            same_items(self, decoded[codec].items, decoded["protobuf"].items)
        self.assertEqual([i.position for i in decoded["rankbin"].items], list(range(1, 501)))
        self.assertTrue(decoded["rankbin"].items[0].log.startswith("req=py-7 "))

    def test_top_n_equals_the_full_decode(self):
        for codec in rankwire.CODECS:
            with self.subTest(codec=codec):
                result = self.client.rank(make_request(seed=9), timeout=10, accept_codecs=[codec])
                full = result.materialize().items
                for item in result.top(10):
                    want = full[item.index]
                    self.assertEqual((item.id, item.position, item.log),
                                     (want.id, want.position, want.log))
                    self.assertEqual(item.metrics(), want.metrics)
                    for name, value in want.metrics.items():
                        self.assertEqual(item.metric(name), value)
                    self.assertIsNone(item.metric("no.such.metric"))
                self.assertEqual([i.id for i in result[-3:]], [i.id for i in full[-3:]])

    def test_a_top_n_read_needs_none_of_the_later_blocks(self):
        # The raw response, its last VALUES block given an unknown codec and
        # its last LOGS block a wrong checksum: the top 10 read as if nothing
        # were wrong (they need block 0 only), the last item and a full
        # decode fail, with the exceptions FORMAT.md's errors map to.
        rank = self.server.channel.unary_unary("/rank.v1.RankService/Rank")
        request = make_request(accept=["rankbin-zstd"])
        response = rank_pb2.RankResponse.FromString(rank(request.SerializeToString(), timeout=10))
        payload = bytearray(response.payload)
        spans = sections(payload)
        entries, count, _ = block_directory(payload, spans[4][0])
        payload[entries + 9 * (count - 1)] = 7
        entries, count, data = block_directory(payload, spans[5][0])
        self.assertEqual(payload[entries + 9 * (count - 1)], 1, "logs are zstd blocks")
        payload[spans[5][1] - 1] ^= 0x40  # The last byte of the last frame: its checksum.
        intact = rankwire.open_payload("rankbin-zstd", response.payload).materialize().items
        result = rankwire.open_payload("rankbin-zstd", bytes(payload))
        for item in result.top(10):
            want = intact[item.index]
            self.assertEqual((item.id, item.metrics(), item.log), (want.id, want.metrics, want.log))
        with self.assertRaises(rankwire.FormatError):
            result[499].metrics()
        with self.assertRaises(rankwire.ChecksumError):
            result[499].log
        with self.assertRaises(rankwire.FormatError):
            result.materialize()

    def test_accept_codecs(self):
        request = make_request(candidates=20, accept=["rankbin-zstd"])
        self.assertEqual(self.client.rank(request, timeout=10).codec, "rankbin-zstd")
        result = self.client.rank(request, timeout=10, accept_codecs=["no-such-codec", "rankbin"])
        self.assertEqual(result.codec, "rankbin")
        self.assertEqual(list(request.accept_codecs), ["rankbin-zstd"], "request left as it was")
        # None named: the server's --codec (protobuf by default).
        self.assertEqual(self.client.rank(make_request(candidates=20), timeout=10).codec,
                         "protobuf")

    def test_fetch_logs(self):
        request = make_request(seed=21, log_mode=rank_pb2.LOG_MODE_STORE)
        result = self.client.rank(request, timeout=10, accept_codecs=["rankbin"])
        self.assertEqual(result.header.log_key, "rank:log:py-21")
        self.assertEqual(result[0].log, "")
        ids = [item.id for item in result.top(10)] + ["not-ranked"]
        # Stored just after the response (the log writer formats them).
        deadline = time.time() + 5
        while True:
            logs = self.client.fetch_logs("py-21", ids, timeout=10)
            if all(logs[i] is not None for i in ids[:10]) or time.time() > deadline:
                break
            time.sleep(0.005)
        self.assertEqual(list(logs), ids)
        self.assertIsNone(logs["not-ranked"])
        for item_id in ids[:10]:
            self.assertIn(f"item={item_id} ", logs[item_id])

    def test_errors_carry_their_status_code(self):
        request = make_request(candidates=3)
        request.top_n = 0
        with self.assertRaises(rankwire.RpcError) as caught:
            self.client.rank(request, timeout=10)
        self.assertEqual(caught.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("top_n 0 is out of range", caught.exception.details)
        self.assertIsInstance(caught.exception.__cause__, grpc.RpcError)
        with self.assertRaises(rankwire.RpcError) as caught:
            self.client.rank(make_request(), timeout=1e-5)
        self.assertEqual(caught.exception.code, grpc.StatusCode.DEADLINE_EXCEEDED)
        with self.assertRaises(rankwire.RpcError) as caught:
            self.client.fetch_logs("py-7", ["a", "a"], timeout=10)
        self.assertEqual(caught.exception.code, grpc.StatusCode.INVALID_ARGUMENT)

    def test_the_worked_example_runs(self):
        # docs/CLIENTS.md shows this file (python.unit checks it does).
        example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python",
                               "examples", "central_control.py")
        done = subprocess.run([sys.executable, example, f"127.0.0.1:{self.server.port}"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertEqual([int(line.split()[0]) for line in lines[:10]], list(range(1, 11)))
        self.assertEqual(len(lines), 20)

    def test_unavailable(self):
        with rankwire.Client(f"127.0.0.1:{free_port()}") as nobody:
            with self.assertRaises(rankwire.RpcError) as caught:
                nobody.rank(make_request(candidates=3), timeout=5)
        self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE)

    def test_health_checking_is_on(self):
        # A replica whose health service does not report SERVING for the
        # configured name gets no calls: here none does.
        config = rankwire.service_config(health_service="no.such.Service")
        with rankwire.Client(f"127.0.0.1:{self.server.port}", service_config=config) as client:
            with self.assertRaises(rankwire.RpcError) as caught:
                client.rank(make_request(candidates=3), timeout=5)
            self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE)
        with rankwire.Client(f"127.0.0.1:{self.server.port}", service_config=None) as client:
            self.assertEqual(len(client.rank(make_request(candidates=3), timeout=5)), 3)


class AdminTest(unittest.TestCase):
    """rankwire.admin: GetModels on any port, ReloadModels on the health port."""

    def test_get_and_reload_models(self):
        with tempfile.TemporaryDirectory() as models:
            with open(os.environ["RANKWIRE_MODEL_PATH"]) as f:
                shipped = f.read()
            with open(os.path.join(models, "1.model"), "w") as f:
                f.write(shipped)
            server = ServerFixture("--model=" + models, "--model_poll_interval=0",
                                   "--health_port=0", "--model_admin_rpc", "--log_mode=none")
            try:
                main, health = f"127.0.0.1:{server.port}", f"127.0.0.1:{server.health_port}"
                served = rankwire.admin.get_models(main, timeout=10)
                self.assertEqual(served.generation, 1)
                self.assertEqual([(m.name, m.version) for m in served.models],
                                 [("ecom_search_lr", "2026.11.3")])
                self.assertEqual(rankwire.admin.reload_models(health, timeout=10).generation, 1)
                with open(os.path.join(models, "2.model"), "w") as f:
                    f.write(shipped.replace("\nversion 2026.11.3\n", "\nversion 2026.12.1\n"))
                reloaded = rankwire.admin.reload_models(health, timeout=10)
                self.assertEqual((reloaded.generation, reloaded.models[0].version),
                                 (2, "2026.12.1"))
                with open(os.path.join(models, "3.model"), "w") as f:
                    f.write(shipped[:len(shipped) // 2])
                with self.assertRaises(rankwire.RpcError) as refused:
                    rankwire.admin.reload_models(health, timeout=10)
                self.assertEqual(refused.exception.code, grpc.StatusCode.FAILED_PRECONDITION)
                self.assertIn("reason truncated: ", refused.exception.details)
                self.assertIn("3.model", refused.exception.details)
                kept = rankwire.admin.get_models(health, timeout=10)
                self.assertEqual((kept.generation, kept.last_failure_reason), (2, "truncated"))
                with self.assertRaises(rankwire.RpcError) as denied:
                    rankwire.admin.reload_models(main, timeout=10)
                self.assertEqual(denied.exception.code, grpc.StatusCode.PERMISSION_DENIED)
            finally:
                server.close()


class ServerSettingsTest(unittest.TestCase):
    def test_server_default_codec(self):
        server = ServerFixture("--codec=rankbin-zstd")
        try:
            with rankwire.Client(f"127.0.0.1:{server.port}") as client:
                self.assertEqual(client.rank(make_request(candidates=5), timeout=10).codec,
                                 "rankbin-zstd")
        finally:
            server.close()

    def test_response_over_budget_is_resource_exhausted(self):
        server = ServerFixture("--max_message_bytes=1048576")
        try:
            with rankwire.Client(f"127.0.0.1:{server.port}") as client:
                with self.assertRaises(rankwire.RpcError) as caught:
                    client.rank(make_request(), timeout=10, accept_codecs=["protobuf"])
                self.assertEqual(caught.exception.code, grpc.StatusCode.RESOURCE_EXHAUSTED)
                # What the message advises (logs in the store) fits.
                request = make_request(log_mode=rank_pb2.LOG_MODE_STORE)
                self.assertEqual(len(client.rank(request, timeout=10, accept_codecs=["rankbin"])),
                                 500)
        finally:
            server.close()

    def test_mutual_tls(self):
        with tempfile.TemporaryDirectory(prefix="rankwire-py-tls-") as d:
            def openssl(*args):
                subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

            def leaf(name, ext):
                with open(os.path.join(d, name + ".ext"), "w") as f:
                    f.write(ext + "\n")
                openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-subj", f"/CN={name}", "-keyout", f"{name}.key",
                        "-out", f"{name}.csr")
                openssl("x509", "-req", "-days", "2", "-in", f"{name}.csr", "-CA", "ca.pem",
                        "-CAkey", "ca.key", "-CAcreateserial", "-out", f"{name}.pem",
                        "-extfile", f"{name}.ext")

            openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "2", "-subj", "/CN=rankwire-py-test-ca", "-keyout",
                    "ca.key", "-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign")
            leaf("server", "subjectAltName=DNS:rankwire.test\nextendedKeyUsage=serverAuth")
            leaf("client", "extendedKeyUsage=clientAuth")

            def read(name):
                with open(os.path.join(d, name), "rb") as f:
                    return f.read()

            server = ServerFixture(f"--tls_cert_file={d}/server.pem",
                                   f"--tls_key_file={d}/server.key",
                                   f"--tls_client_ca_file={d}/ca.pem")
            try:
                credentials = grpc.ssl_channel_credentials(
                    root_certificates=read("ca.pem"), private_key=read("client.key"),
                    certificate_chain=read("client.pem"))
                with rankwire.Client(f"127.0.0.1:{server.port}", credentials=credentials,
                                     ssl_target_name="rankwire.test") as client:
                    self.assertEqual(len(client.rank(make_request(candidates=5), timeout=10)), 5)
                with rankwire.Client(f"127.0.0.1:{server.port}") as plaintext:
                    with self.assertRaises(rankwire.RpcError) as caught:
                        plaintext.rank(make_request(candidates=5), timeout=5)
                    self.assertEqual(caught.exception.code, grpc.StatusCode.UNAVAILABLE)
            finally:
                server.close()


if __name__ == "__main__":
    unittest.main()
