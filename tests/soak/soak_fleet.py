"""The soak's processes and how each is observed.

Redis (one node, or a 3-master Redis Cluster), the model directory the
replicas poll (laid out as a Kubernetes ConfigMap volume: `..data` symlink
swaps), the rankwire-server replicas, the load generators; and the views
the soak reads them through: /metrics, /proc (RSS, open fds, TCP
connections to Redis), gRPC health, Redis INFO.

Every process started here is registered in PROCESSES, so the soak can
kill what is left at exit (only its own processes, by pid).
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import grpc

PROCESSES = []  # Every Popen started here; soak.py kills leftovers at exit.


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, step=0.05):
    """The predicate's first truthy value within `timeout` seconds, else None."""
    deadline = time.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.time() >= deadline:
            return None
        time.sleep(step)


# ---------------------------------------------------------------- Redis


def redis_command(port, *args, timeout=0.5):
    """One command over RESP; the reply (str, int, list) or an Exception
    instance for an error reply. Raises OSError when Redis does not answer."""
    payload = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        payload += b"$%d\r\n%s\r\n" % (len(a), a)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        reader = s.makefile("rb")
        return _read_reply(reader)


def _read_reply(reader):
    line = reader.readline()
    if not line:
        raise OSError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        return Exception(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else reader.read(n + 2)[:-2].decode(errors="replace")
    if kind == b"*":
        n = int(rest)
        return [] if n < 0 else [_read_reply(reader) for _ in range(n)]
    raise OSError("bad reply %r" % line)


def redis_info(port, section, timeout=0.5):
    """INFO `section` as a dict, or None if Redis does not answer."""
    try:
        text = redis_command(port, "INFO", section, timeout=timeout)
    except OSError:
        return None
    if not isinstance(text, str):
        return None
    return dict(l.split(":", 1) for l in text.splitlines() if ":" in l and not l.startswith("#"))


class RedisNode:
    """One redis-server on a fixed loopback port; restarts keep the port and
    the directory (a cluster node keeps its nodes.conf, so it rejoins)."""

    def __init__(self, work, name, cluster_bus_port=None, node_timeout_ms=2000):
        self.name = name
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.bus_port = cluster_bus_port
        self.node_timeout_ms = node_timeout_ms
        self.proc = None
        self.starts = 0

    def start(self):
        self.starts += 1
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", self.dir,
                "--logfile", os.path.join(self.dir, "redis.log")]
        if self.bus_port:
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-node-timeout", str(self.node_timeout_ms),
                     "--cluster-port", str(self.bus_port)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        PROCESSES.append(self.proc)
        if not wait_for(self.ping, 10):
            raise RuntimeError("%s did not start (see %s/redis.log)" % (self.name, self.dir))

    def ping(self):
        try:
            return redis_command(self.port, "PING", timeout=0.2) == "PONG"
        except OSError:
            return False


class Redis:
    """The log store: one node, or with `cluster` three masters (no
    replicas) made into a Redis Cluster with redis-cli --cluster create."""

    def __init__(self, work, cluster):
        self.cluster = cluster
        if cluster:
            self.nodes = [RedisNode(work, "redis%d" % i, cluster_bus_port=free_port())
                          for i in range(3)]
        else:
            self.nodes = [RedisNode(work, "redis0")]

    def start(self):
        for n in self.nodes:
            n.start()
        if self.cluster:
            out = subprocess.run(
                ["redis-cli", "--cluster", "create"] +
                ["127.0.0.1:%d" % n.port for n in self.nodes] +
                ["--cluster-replicas", "0", "--cluster-yes"],
                capture_output=True, text=True, timeout=60)
            if out.returncode != 0:
                raise RuntimeError("redis-cli --cluster create failed:\n" + out.stdout + out.stderr)
        if not wait_for(self.healthy, 30, step=0.1):
            raise RuntimeError("the Redis cluster never became ok")

    def healthy(self):
        """Every node answers; a cluster says cluster_state:ok on every node."""
        for n in self.nodes:
            if not self.cluster:
                if not n.ping():
                    return False
                continue
            try:
                info = redis_command(n.port, "CLUSTER", "INFO", timeout=0.3)
            except OSError:
                return False
            if not isinstance(info, str) or "cluster_state:ok" not in info:
                return False
        return True

    @property
    def addresses(self):
        return ",".join("127.0.0.1:%d" % n.port for n in self.nodes)

    @property
    def ports(self):
        return {n.port for n in self.nodes}

    def connected_clients(self):
        """Sum of INFO clients connected_clients over the nodes (None if one
        does not answer)."""
        total = 0
        for n in self.nodes:
            info = redis_info(n.port, "clients", timeout=0.2)
            if info is None:
                return None
            total += int(info.get("connected_clients", 0))
        return total


# ---------------------------------------------------------------- models


class ModelDir:
    """A directory of model versions, written as the kubelet writes a
    ConfigMap volume: each update is a new hidden `..<stamp>` directory,
    `..data` pointing at it through one rename, and a user-visible symlink
    `<key> -> ..data/<key>` per key (new keys linked after the swap, removed
    keys unlinked after it, the old directory removed last), so a poll can
    see every intermediate state a real volume shows.

    The keys are `<N>.model`; the server runs with --model=<this directory>
    (a version directory: the newest version that loads serves)."""

    # Breakages of the shipped linear model, each a refusal reason the
    # server names (docs/OPERATING.md "Models").
    BREAKAGES = [
        ("weight_arity", lambda t: t.replace("weight ctr ctr_7d 14.50", "weight ctr 14.50")),
        ("truncated", lambda t: t[:t.index("\nweight cvr")]),
        ("invalid_number", lambda t: t.replace("head ctr -3.20 1.00", "head ctr nan 1.00")),
        ("unknown_transform", lambda t: t.replace("transform price log1p",
                                                  "transform price sqrt")),
        ("empty", lambda t: ""),
    ]

    def __init__(self, path, template_path):
        self.path = path
        os.makedirs(path)
        with open(template_path) as f:
            self.template = f.read()
        if "\nversion 2026.11.3\n" not in self.template:
            raise RuntimeError("the template model has no 'version 2026.11.3' line")
        self.keys = {}  # key -> text, what the volume holds now.
        self.updates = 0
        self.next_version = 1
        # (unix time, version number, good, breakage): every version published.
        self.published = []

    def model_text(self, n):
        return self.template.replace("\nversion 2026.11.3\n", "\nversion soak-%d\n" % n)

    @staticmethod
    def version_name(n):
        return "ecom_search_lr@soak-%d" % n

    def publish(self, keys):
        """Makes the volume hold exactly `keys` ({name: text})."""
        self.updates += 1
        stamp = "..2026_12_07_%06d.%d" % (self.updates, os.getpid())
        new_dir = os.path.join(self.path, stamp)
        os.mkdir(new_dir)
        for name, text in keys.items():
            with open(os.path.join(new_dir, name), "w") as f:
                f.write(text)
        data = os.path.join(self.path, "..data")
        old_target = os.readlink(data) if os.path.islink(data) else None
        tmp = os.path.join(self.path, "..data_tmp")
        os.symlink(stamp, tmp)
        os.rename(tmp, data)
        for name in keys:
            link = os.path.join(self.path, name)
            if not os.path.islink(link):
                os.symlink(os.path.join("..data", name), link)
        for name in set(self.keys) - set(keys):
            os.unlink(os.path.join(self.path, name))
        if old_target:
            shutil.rmtree(os.path.join(self.path, old_target))
        self.keys = dict(keys)

    def _good_keys(self, keep):
        """The newest `keep` good versions still in the volume."""
        good = [n for (_, n, ok, _) in self.published if ok and "%d.model" % n in self.keys]
        return {"%d.model" % n: self.keys["%d.model" % n] for n in good[-keep:]}

    def publish_good(self, keep=2):
        """A new good version, newest; the volume keeps the `keep` - 1 good
        versions before it. Returns its number."""
        n = self.next_version
        self.next_version += 1
        keys = self._good_keys(keep - 1)
        keys["%d.model" % n] = self.model_text(n)
        self.published.append((time.time(), n, True, None))
        self.publish(keys)
        return n

    def publish_bad(self, breakage_index, only):
        """A new broken version, newest. `only`: the volume then holds the
        broken version alone (a restarting server has nothing that loads);
        otherwise the good versions stay beside it (a restarting server
        starts on the newest of them). Returns (number, breakage)."""
        name, breaker = self.BREAKAGES[breakage_index % len(self.BREAKAGES)]
        n = self.next_version
        self.next_version += 1
        keys = {} if only else self._good_keys(2)
        keys["%d.model" % n] = breaker(self.model_text(n))
        self.published.append((time.time(), n, False, name))
        self.publish(keys)
        return n, name

    def newest_good(self):
        good = [n for (_, n, ok, _) in self.published if ok]
        return good[-1] if good else None


# ---------------------------------------------------------------- replicas


def scrape(metrics_port, timeout=1.0):
    """/metrics as {series: value} ("name{labels}" keys), or None."""
    try:
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port,
                                      timeout=timeout).read().decode()
    except (OSError, ValueError):
        return None
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, value = line.rpartition(" ")
        try:
            out[key] = float(value)
        except ValueError:
            pass
    return out


def log_counts(metrics):
    """rankwire_log_items_total by outcome, from a scrape."""
    out = {}
    for key, value in metrics.items():
        m = re.match(r'rankwire_log_items_total\{outcome="(\w+)"\}$', key)
        if m:
            out[m.group(1)] = int(value)
    return out


def served_versions(metrics):
    """name@version of every model a scrape says is loaded."""
    out = set()
    for key, value in metrics.items():
        if key.startswith("rankwire_model_info{") and value == 1:
            name = re.search(r'name="([^"]*)"', key)
            version = re.search(r'version="([^"]*)"', key)
            if name and version:
                out.add("%s@%s" % (name.group(1), version.group(1)))
    return out


def _health_request(service):
    name = service.encode()
    return b"\x0a" + bytes([len(name)]) + name if name else b""


def health(port, service, timeout=1.0):
    """grpc.health.v1.Health/Check: "SERVING", "NOT_SERVING", or the error."""
    with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check",
                                    request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)
        try:
            reply = check(_health_request(service), timeout=timeout)
        except grpc.RpcError as e:
            return e.code().name
    status = reply[1] if len(reply) >= 2 and reply[0] == 0x08 else 0
    return {1: "SERVING", 2: "NOT_SERVING"}.get(status, "UNKNOWN(%d)" % status)


def proc_stats(pid):
    """(RSS bytes, open fds, socket inodes) of a live process, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            rss = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmRSS:"))
        inodes = set()
        fds = 0
        fd_dir = "/proc/%d/fd" % pid
        for fd in os.listdir(fd_dir):
            fds += 1
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
        return rss, fds, inodes
    except (OSError, StopIteration):
        return None


def tcp_connections():
    """{socket inode: remote port} of every ESTABLISHED TCP socket."""
    out = {}
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "01":
                        out[fields[9]] = int(fields[2].rsplit(":", 1)[1], 16)
        except OSError:
            pass
    return out


class Replica:
    """One rankwire-server; a restart keeps its ports, as a pod restarted
    behind the same address. Each start writes its own log file."""

    def __init__(self, index, work, server_args):
        self.index = index
        self.work = work
        self.server_args = server_args
        self.port = 0
        self.metrics_port = 0
        self.proc = None
        self.starts = 0
        self.log_path = None
        self.previous_log_path = None

    @property
    def name(self):
        return "replica%d" % self.index

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def start(self, timeout=30):
        """Starts it; returns the start-up line's model= value."""
        self.starts += 1
        self.previous_log_path = self.log_path
        self.log_path = os.path.join(self.work, "%s.%d.log" % (self.name, self.starts))
        with open(self.log_path, "w") as out:
            self.proc = subprocess.Popen(
                self.server_args + ["--port=%d" % self.port,
                                    "--metrics_port=%d" % self.metrics_port],
                stdout=out, stderr=subprocess.STDOUT)
        PROCESSES.append(self.proc)
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = re.search(r"listening port=(\d+) metrics_port=(\d+) .*? model=(\S+)", self.output())
            if m:
                self.port, self.metrics_port = int(m.group(1)), int(m.group(2))
                return m.group(3)
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError("%s did not start:\n%s" % (self.name, self.output()[-4000:]))

    def output(self, previous=False):
        """This start's log (`previous`: the start before, one just stopped)."""
        with open(self.previous_log_path if previous else self.log_path, errors="replace") as f:
            return f.read()

    def metrics(self):
        return scrape(self.metrics_port)

    def health(self, service="rank.v1.RankService"):
        return health(self.port, service)


def flushed_counts(log_text):
    """The counts of a replica's exit line "log store flushed: ...", or None.
    {"handed", "stored", "dropped_queue_full", "dropped_store_error",
    "dropped_shutdown", "unknown"}; "handed"/"unknown" absent from a server
    that does not count them."""
    m = re.search(r"log store flushed: (.*)", log_text)
    if not m:
        return None
    out = {}
    for key, value in re.findall(r"(\w+)=(\d+)", m.group(1)):
        out[{"queue_full": "dropped_queue_full", "store_error": "dropped_store_error",
             "shutdown": "dropped_shutdown"}.get(key, key)] = int(value)
    return out


# ---------------------------------------------------------------- load


class Loadgen:
    """rankwire-loadgen in the background, every call streamed to a file
    (--calls_stream_ms) that CallsReader follows."""

    def __init__(self, binary, target, qps, seconds, concurrency, candidates, calls_path,
                 label, deadline_ms=5000):
        self.calls_path = calls_path
        self.label = label
        self.proc = subprocess.Popen(
            [binary, "--target=" + target, "--qps=%g" % qps, "--concurrency=%d" % concurrency,
             "--shared_channel", "--duration_s=%g" % seconds, "--warmup_s=0",
             "--candidates=%d" % candidates, "--codec=rankbin", "--log_mode=store",
             "--deadline_ms=%d" % deadline_ms, "--label=" + label, "--json",
             "--calls_file=" + calls_path, "--calls_stream_ms=200"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        PROCESSES.append(self.proc)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def result(self, timeout=60):
        out, err = self.proc.communicate(timeout=timeout)
        lines = [l for l in out.splitlines() if l.startswith("{")]
        return {"exit": self.proc.returncode, "stderr": err[-2000:],
                "summary": json.loads(lines[-1]) if lines else None}


def peak_qps(binary, target, candidates, seconds=3, concurrency=8):
    """The fleet's closed-loop peak (calls/s) through one shared channel."""
    out = subprocess.run(
        [binary, "--target=" + target, "--qps=0", "--concurrency=%d" % concurrency,
         "--shared_channel", "--duration_s=%g" % seconds, "--warmup_s=1",
         "--candidates=%d" % candidates, "--codec=rankbin", "--log_mode=store", "--json"],
        capture_output=True, text=True, timeout=seconds + 60)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise RuntimeError("peak measurement failed:\n" + out.stderr)
    return json.loads(lines[-1])


class CallsReader:
    """Follows a --calls_file being streamed: each read() returns the calls
    completed since the last one, as (due unix s, latency us, code, version)."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.partial = b""

    def read(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        self.offset += len(data)
        data = self.partial + data
        lines = data.split(b"\n")
        self.partial = lines.pop()
        out = []
        for line in lines:
            fields = line.decode(errors="replace").split("\t")
            if len(fields) >= 4:
                out.append((int(fields[0]) / 1e6, float(fields[1]), fields[2], fields[3]))
        return out


def raw_tcp_garbage(port, payload, timeout=1.0):
    """Sends bytes that are not HTTP/2 to the port; True if the server closed
    the connection (what it should do) within `timeout`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(payload)
            s.settimeout(timeout)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return True
    except socket.timeout:
        return False
    except OSError:
        return True  # Reset by the server: closed too.
