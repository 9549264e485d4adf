"""A client reading Redis directly decodes the stored logs with the rankwire
package's rankwire.logs (written from docs/LOGS.md) to the exact inline
text, for every item.

Runs the real rankwire-server with --logstore=redis against a real
redis-server (RANKWIRE_REDIS_SERVER), ranks one request with its logs inline
and again with its logs in the store, reads the hash with a tiny RESP client
and compares every item. Environment as test_interop.py, plus
RANKWIRE_REDIS_SERVER.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rankwire  # noqa: E402
from rankwire import logs, rank_pb2  # noqa: E402
from test_interop import ServerFixture, make_request  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Resp:
    """Just enough RESP2 to send commands and read their replies."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""

    def close(self):
        self.sock.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b":"):
            return int(rest) if kind == b":" else rest
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            return [self._reply() for _ in range(int(rest))]
        raise RuntimeError(f"unexpected reply {line!r}")

    def command(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self._reply()


class LogDecoderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="rankwire-logdec-")
        cls.redis_port = free_port()
        cls.redis = subprocess.Popen(
            [os.environ["RANKWIRE_REDIS_SERVER"], "--port", str(cls.redis_port),
             "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", cls.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            try:
                cls.resp = Resp(cls.redis_port)
                cls.resp.command("PING")
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)
        cls.server = ServerFixture("--logstore=redis",
                                   f"--redis_addr=127.0.0.1:{cls.redis_port}")

    @classmethod
    def tearDownClass(cls):
        cls.server.close()
        cls.resp.close()
        cls.redis.terminate()
        cls.redis.wait(10)
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_every_item_decodes_to_the_inline_line(self):
        inline = self.server.rank(make_request(seed=11, accept=["protobuf"],
                                               log_mode=rank_pb2.LOG_MODE_INLINE), timeout=10)
        want = {item.item_id: item.log for item in inline.result.items}
        self.assertEqual(len(want), 500)
        stored = self.server.rank(make_request(seed=11, accept=["rankbin"],
                                               log_mode=rank_pb2.LOG_MODE_STORE), timeout=10)
        key = stored.header.log_key.encode()
        self.assertEqual(key, b"rank:log:py-11")
        # The server's log writer stores them just after the response.
        deadline = time.time() + 10
        while self.resp.command("HLEN", key) != 501 and time.time() < deadline:
            time.sleep(0.01)
        flat = self.resp.command("HGETALL", key)
        values = dict(zip(flat[0::2], flat[1::2]))
        self.assertEqual(values[b""][:1], b"L")
        self.assertEqual(len(values), 501)
        for item_id, line in want.items():
            value = values[item_id.encode()]
            self.assertEqual(value[:1], b"R")
            self.assertEqual(logs.decode_value(values[b""], item_id, value), line, item_id)
        # The same through one HMGET-shaped reply.
        ids = list(want)[:10]
        self.assertEqual(logs.decode_values(ids, values[b""], [values[i.encode()] for i in ids]),
                         {i: want[i] for i in ids})
        ttl = self.resp.command("PTTL", key)
        self.assertTrue(0 < ttl <= 1000, ttl)

    def test_corrupt_values_raise_format_errors(self):
        with self.assertRaises(rankwire.FormatError):
            logs.decode_value(None, b"x", b"R\x01")
        with self.assertRaises(rankwire.FormatError):
            logs.Layout(b"L\x01\x05")
        with self.assertRaises(rankwire.FormatError):
            logs.decode_value(None, b"x", b"Q")


if __name__ == "__main__":
    unittest.main()
