"""`python -m rankwire.logs` (and tools/log_decoder.py, which runs it): reads
a request's stored per-item logs straight from Redis and prints each item's
line, decoded per docs/LOGS.md by the package's decoder (rankwire.logs).

    python -m rankwire.logs --redis 127.0.0.1:6379 --request REQ
    python -m rankwire.logs --redis 127.0.0.1:6379 --request REQ --items sku-1,sku-2
    python -m rankwire.logs --redis 127.0.0.1:6379 --key 'rank:log:REQ' --item 'a,b' --item c

Without items it reads the whole hash (HGETALL) and prints every item the
key holds, in rank order for columns and blocks. With items (--items,
comma-separated, and/or --item, repeatable, for ids that hold a comma) it
reads them the way LOGS.md's "Reading" says: one HMGET of the layout, "#0"
(the top items, or block 0 of older servers) and the ids, and a second
HMGET ("#1", or the other blocks) only if some ids are not in "#0".

Output, one item per line, in the order read or asked:

  --format=json (default)  {"item_id": "...", "log": "..."}: JSON strings, so
                           newlines, NULs and other control characters in
                           ids and lines are escaped; "log" is null for an
                           item the store has no log of (never written,
                           dropped, or expired).
  --format=tsv             item_id TAB line, each with backslash, tab,
                           newline, carriage return and the other control
                           characters (U+0000..U+001F, U+007F) escaped as
                           \\\\, \\t, \\n, \\r and \\xHH; items without a log are
                           left out and named on stderr.

Bytes that are not UTF-8 (servers never write them) are printed, in either
format, as \\udcXX for the byte 0xXX (JSON's escape of a lone surrogate).

Exit status: 0 when read and decoded (missing logs included), 1 when the
stored bytes are corrupt or over a reader cap (a rankwire.Error) or Redis
fails, 2 on a usage error. Uses /usr/bin/python3 with Debian's
python3-zstandard (for 'Z' values) and no Redis client library: the few
RESP2 commands are spoken here. Follows a -MOVED redirect (Redis Cluster);
--password/--user send AUTH first.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import logs
from .errors import Error as RankwireError


class RedisError(Exception):
    """Redis answered with an error reply, or the connection failed."""


class Resp:
    """A blocking RESP2 connection: send a command, read its reply. Bulk
    strings come back as bytes, nil as None, errors raise RedisError."""

    def __init__(self, host: str, port: int, timeout: float = 10.0) -> None:
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise RedisError(f"cannot connect to {host}:{port}: {e}") from e
        self._buf = bytearray()

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> "Resp":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fill(self) -> None:
        try:
            chunk = self._sock.recv(1 << 16)
        except OSError as e:
            raise RedisError(f"redis read failed: {e}") from e
        if not chunk:
            raise RedisError("redis closed the connection")
        self._buf += chunk

    def _line(self) -> bytes:
        while True:
            i = self._buf.find(b"\r\n")
            if i >= 0:
                line = bytes(self._buf[:i])
                del self._buf[:i + 2]
                return line
            self._fill()

    def _exact(self, n: int) -> bytes:
        while len(self._buf) < n + 2:
            self._fill()
        data = bytes(self._buf[:n])
        del self._buf[:n + 2]
        return data

    def _reply(self) -> object:
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b":":
            return int(rest)
        if kind == b"-":
            raise RedisError(rest.decode("utf-8", "replace"))
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise RedisError(f"unexpected redis reply {line[:80]!r}")

    def command(self, *args: object) -> object:
        out = bytearray(b"*%d\r\n" % len(args))
        for a in args:
            b = a if isinstance(a, (bytes, bytearray)) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(b), b)
        try:
            self._sock.sendall(out)
        except OSError as e:
            raise RedisError(f"redis write failed: {e}") from e
        return self._reply()


def parse_address(text: str) -> Tuple[str, int]:
    """(host, port) of "host:port" ("[::1]:port" for IPv6); host may be ""."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"not host:port: {text!r}")
    return host.strip("[]"), int(port)


class Reader:
    """Runs commands on one key's node: a connection to --redis, replaced
    by the node a -MOVED reply names (once per command; an empty host in
    the redirect means the node that answered)."""

    def __init__(self, address: Tuple[str, int], auth: Sequence[str]) -> None:
        self._auth = list(auth)
        self._address = address
        self._conn = self._connect(address)

    def _connect(self, address: Tuple[str, int]) -> Resp:
        conn = Resp(*address)
        if self._auth:
            conn.command("AUTH", *self._auth)
        return conn

    def close(self) -> None:
        self._conn.close()

    def command(self, *args: object) -> object:
        try:
            return self._conn.command(*args)
        except RedisError as e:
            words = str(e).split()
            if len(words) != 3 or words[0] != "MOVED":
                raise
            host, port = parse_address(words[2])
            self._conn.close()
            self._address = (host or self._address[0], port)
            self._conn = self._connect(self._address)
            return self._conn.command(*args)


def read_lines(reader: Reader, key: bytes, item_ids: Optional[List[str]]
               ) -> Dict[str, Optional[str]]:
    """{item id: line or None}: every item of the key, or the ones asked."""
    if item_ids is None:
        flat = reader.command("HGETALL", key)
        assert isinstance(flat, list)
        return dict(logs.decode_key(dict(zip(flat[0::2], flat[1::2]))))

    def hmget(fields: List[bytes]) -> List[Optional[bytes]]:
        reply = reader.command("HMGET", key, *fields)
        assert isinstance(reply, list)
        return reply

    return logs.fetch(hmget, item_ids)


def _escape_tsv(text: str) -> str:
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\x%02x" % ord(ch))
        else:
            out.append(ch)
    return "".join(out)


def render(lines: Dict[str, Optional[str]], fmt: str) -> Tuple[List[str], List[str]]:
    """(output lines, item ids without a log)."""
    out: List[str] = []
    missing: List[str] = []
    for item_id, line in lines.items():
        if fmt == "json":
            out.append(json.dumps({"item_id": item_id, "log": line}, ensure_ascii=False))
        elif line is None:
            missing.append(item_id)
        else:
            out.append(_escape_tsv(item_id) + "\t" + _escape_tsv(line))
    return out, missing


class _AppendIds(argparse.Action):
    """Appends one id, or with `sep` the non-empty parts of a list, to dest."""

    def __init__(self, *args: Any, sep: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sep = sep

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: Optional[str] = None) -> None:
        ids = getattr(namespace, self.dest, None) or []
        ids.extend([i for i in values.split(self.sep) if i] if self.sep else [values])
        setattr(namespace, self.dest, ids)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Print a request's stored per-item logs, read from Redis (docs/LOGS.md).")
    parser.add_argument("--redis", default="127.0.0.1:6379", help="host:port (default %(default)s)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--request", help="the request id (key rank:log:<request id>)")
    which.add_argument("--key", help="the Redis key itself")
    # Both append to one list, so ids keep their order on the command line.
    parser.add_argument("--items", dest="ids", action=_AppendIds, sep=",",
                        help="comma-separated item ids (default: every item of the key)")
    parser.add_argument("--item", dest="ids", action=_AppendIds,
                        help="one item id, which may hold a comma (repeatable)")
    parser.add_argument("--format", choices=("json", "tsv"), default="json")
    parser.add_argument("--user", help="AUTH user (with --password)")
    parser.add_argument("--password", default=os.environ.get("REDISCLI_AUTH"),
                        help="AUTH password (default: $REDISCLI_AUTH)")
    args = parser.parse_args(argv)

    try:
        host, port = parse_address(args.redis)
    except ValueError as e:
        parser.error(str(e))
    address = (host or "127.0.0.1", port)
    key = logs.key(args.request) if args.request is not None else args.key.encode(
        "utf-8", "surrogateescape")
    item_ids: Optional[List[str]] = args.ids
    auth = [a for a in (args.user, args.password) if a is not None] if args.password else []

    try:
        reader = Reader(address, auth)
        try:
            lines = read_lines(reader, key, item_ids)
        finally:
            reader.close()
    except RankwireError as e:
        print(f"log_decoder: {key!r}: {e}", file=sys.stderr)
        return 1
    except RedisError as e:
        print(f"log_decoder: redis {args.redis}: {e}", file=sys.stderr)
        return 1
    out, missing = render(lines, args.format)
    stdout = sys.stdout.buffer
    for line in out:
        # backslashreplace turns a lone surrogate (a byte that was not
        # UTF-8) into \udcXX, which is JSON's own escape for it.
        stdout.write(line.encode("utf-8", "backslashreplace") + b"\n")
    stdout.flush()
    for item_id in missing:
        print(f"log_decoder: no log for item {item_id!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
