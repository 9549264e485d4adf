"""`cmake --install` gives a calling team what docs/CLIENTS.md ("C++") says,
and a project outside the tree builds against it and ranks (issue 38).

InstallTest (ctest install.client) installs this build to a temporary
prefix and checks:
  - the layout: the static libraries, the CMake package, the pkg-config
    file, rankwire-server and its models, rankwire-cli and rankwire-loadgen;
    each component (client, server, tools) alone installs its own files;
  - the public headers are the documented set, closed under #include (every
    rankwire header one includes is installed too), and compile from the
    prefix alone;
  - no installed text file names the build or the source tree;
then copies examples/central_control/ out of the tree and builds it twice
against the prefix, with find_package(rankwire CONFIG) and with one
compiler line from `pkg-config --cflags --libs rankwire-client`, starts the
installed rankwire-server on a free loopback port (its model found under
share/) and runs both builds against it: each ranks, reads the top 10
lazily and fetches their logs; against a port nobody listens on, each
falls back on UNAVAILABLE within its deadline.

DocsTest (ctest install.docs): docs/CLIENTS.md shows
examples/central_control/central_control.cc as it is, and lists as public
headers exactly what cmake/RankwireInstall.cmake installs.

Environment (tests/install/CMakeLists.txt sets it): RANKWIRE_BUILD_DIR,
RANKWIRE_SOURCE_DIR, RANKWIRE_CMAKE, RANKWIRE_CXX (the build's compiler),
RANKWIRE_CXX_LAUNCHER (ccache, or empty), RANKWIRE_SANITIZE.
"""

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

SOURCE = os.environ.get("RANKWIRE_SOURCE_DIR",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
EXAMPLE = os.path.join(SOURCE, "examples", "central_control")
GENERATED = {"rank/v1/rank.pb.h", "rank/v1/rank.grpc.pb.h"}


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def documented_headers():
    """The headers docs/CLIENTS.md's "Public headers" table lists."""
    doc = read(os.path.join(SOURCE, "docs", "CLIENTS.md"))
    section = doc.split("### Public headers", 1)[1].split("\n### ", 1)[0]
    return set(re.findall(r"^\| `([\w/.]+\.h)` \|", section, re.M))


def cmake_public_headers():
    """RANKWIRE_PUBLIC_HEADERS in cmake/RankwireInstall.cmake."""
    text = read(os.path.join(SOURCE, "cmake", "RankwireInstall.cmake"))
    block = re.search(r"set\(RANKWIRE_PUBLIC_HEADERS\n(.*?)\)", text, re.S).group(1)
    return set(block.split())


class DocsTest(unittest.TestCase):
    def test_clients_md_shows_the_example_that_runs(self):
        # install.client builds and runs this file; the doc must show it, not
        # a copy that drifted.
        doc = read(os.path.join(SOURCE, "docs", "CLIENTS.md"))
        example = read(os.path.join(EXAMPLE, "central_control.cc"))
        self.assertIn("```cpp\n" + example + "```\n", doc)

    def test_documented_headers_are_the_installed_list(self):
        self.assertEqual(documented_headers(), cmake_public_headers() | GENERATED)


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.build = os.path.realpath(os.environ["RANKWIRE_BUILD_DIR"])
        cls.dir = tempfile.mkdtemp(prefix="rankwire-install-")
        # Runs even when the rest of setUpClass fails (tearDownClass would not).
        cls.addClassCleanup(shutil.rmtree, cls.dir, ignore_errors=True)
        cls.prefix = os.path.join(cls.dir, "prefix")
        cls.launcher = os.environ.get("RANKWIRE_CXX_LAUNCHER", "")
        cls.cxx = os.environ.get("RANKWIRE_CXX", "c++")
        sanitize = os.environ.get("RANKWIRE_SANITIZE", "")
        cls.extra_flags = [f"-fsanitize={sanitize}"] if sanitize else []
        # ccache keys on absolute paths: relative to the temporary directory,
        # a second run hits the cache.
        cls.env = dict(os.environ, CCACHE_BASEDIR=cls.dir, CCACHE_NOHASHDIR="1",
                       PKG_CONFIG_PATH=os.path.join(cls.prefix, "lib", "pkgconfig"))
        t0 = time.monotonic()
        cls.run_checked(os.environ.get("RANKWIRE_CMAKE", "cmake"), "--install", cls.build,
                        "--prefix", cls.prefix)
        cls.install_seconds = time.monotonic() - t0

    @classmethod
    def run_checked(cls, *args, timeout=300, **kw):
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                              env=cls.env, **kw)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(args)}: exit {done.returncode}\n"
                                 f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
        return done.stdout

    def installed(self, *parts):
        return os.path.join(self.prefix, *parts)

    def public_headers(self):
        root = self.installed("include", "rankwire")
        found = set()
        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith(".h"):
                    found.add(os.path.relpath(os.path.join(dirpath, f), root))
        return found

    # The layout, the headers, the paths.

    def test_layout(self):
        for path in (["bin", "rankwire-server"], ["bin", "rankwire-cli"], ["bin", "rankwire-loadgen"],
                     ["share", "rankwire", "models", "ecom_search_lr.model"],
                     ["include", "rankwire", "rank", "v1", "rank.proto"],
                     ["lib", "cmake", "rankwire", "rankwireConfig.cmake"],
                     ["lib", "cmake", "rankwire", "rankwireConfigVersion.cmake"],
                     ["lib", "cmake", "rankwire", "rankwireTargets.cmake"],
                     ["lib", "pkgconfig", "rankwire-client.pc"]):
            self.assertTrue(os.path.isfile(self.installed(*path)), path)
        libs = sorted(f for f in os.listdir(self.installed("lib")) if f.endswith(".a"))
        self.assertEqual(libs, [f"librankwire_{n}.a" for n in
                                ("base", "client", "codec", "compression", "proto", "rpc")])

    def test_components_install_what_the_docs_say(self):
        # docs/CLIENTS.md ("Installing it") and OPERATING.md ("Trying it on
        # one machine"): client, server and tools, each alone.
        cmake = os.environ.get("RANKWIRE_CMAKE", "cmake")
        expected = {
            "client": {"lib/librankwire_client.a", "lib/pkgconfig/rankwire-client.pc",
                       "include/rankwire/client/rank_client.h"},
            "server": {"bin/rankwire-server", "share/rankwire/models/ecom_search_lr.model"},
            "tools": {"bin/rankwire-cli", "bin/rankwire-loadgen"},
        }
        for component, files in expected.items():
            with self.subTest(component=component):
                prefix = os.path.join(self.dir, "component-" + component)
                self.run_checked(cmake, "--install", self.build, "--component", component,
                                 "--prefix", prefix)
                found = set()
                for dirpath, _, names in os.walk(prefix):
                    found.update(os.path.relpath(os.path.join(dirpath, n), prefix) for n in names)
                self.assertTrue(files <= found, sorted(files - found))
                others = set().union(*(f for c, f in expected.items() if c != component))
                self.assertFalse(others & found, sorted(others & found))
        tools = os.path.join(self.dir, "component-tools", "bin")
        self.run_checked(os.path.join(tools, "rankwire-cli"), "--help")
        self.run_checked(os.path.join(tools, "rankwire-loadgen"), "--help")

    def test_public_headers_are_the_documented_set(self):
        self.assertEqual(self.public_headers(), documented_headers())

    def test_public_headers_are_closed_under_include(self):
        # A quoted include is ours or Abseil's; ours must be installed.
        root = self.installed("include", "rankwire")
        for header in sorted(self.public_headers()):
            for included in re.findall(r'^#include "([^"]+)"', read(os.path.join(root, header)),
                                       re.M):
                if not included.startswith("absl/"):
                    self.assertTrue(os.path.isfile(os.path.join(root, included)),
                                    f"{header} includes {included}, which is not installed")

    def test_public_headers_compile_from_the_prefix(self):
        source = os.path.join(self.dir, "all_headers.cc")
        with open(source, "w") as f:
            f.writelines(f'#include "{h}"\n' for h in sorted(self.public_headers()))
        flags = self.run_checked("pkg-config", "--cflags", "rankwire-client").split()
        self.run_checked(self.cxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Werror", *flags,
                         source)

    def test_nothing_installed_names_the_build_or_source_tree(self):
        trees = {self.build, os.path.realpath(SOURCE)}
        for dirpath, _, files in os.walk(self.prefix):
            for f in files:
                if f.endswith(".a") or os.path.relpath(dirpath, self.prefix) == "bin":
                    continue  # Debug info names the sources; no build reads it.
                text = read(os.path.join(dirpath, f))
                for tree in trees:
                    self.assertNotIn(tree, text, os.path.join(dirpath, f))

    # The consumer, built two ways, against the installed server.

    def test_example_builds_with_cmake_and_pkg_config_and_ranks(self):
        source = os.path.join(self.dir, "central_control")
        shutil.copytree(EXAMPLE, source)  # Outside the tree: nothing of it is reachable.
        t0 = time.monotonic()
        binaries = [self.build_with_cmake(source), self.build_with_pkg_config(source)]
        build_seconds = time.monotonic() - t0
        server = self.start_server()
        try:
            for binary in binaries:
                with self.subTest(binary=os.path.basename(binary)):
                    self.check_run(binary, server[1])
                    self.check_unavailable(binary)
        finally:
            server[0].terminate()
            try:
                server[0].wait(10)
            except subprocess.TimeoutExpired:
                server[0].kill()
            server[0].stdout.close()
        print(f"\ninstall {self.install_seconds:.1f} s, example builds {build_seconds:.1f} s")

    def build_with_cmake(self, source):
        build = os.path.join(self.dir, "build-cmake")
        args = [os.environ.get("RANKWIRE_CMAKE", "cmake"), "-S", source, "-B", build,
                f"-DCMAKE_PREFIX_PATH={self.prefix}", f"-DCMAKE_CXX_COMPILER={self.cxx}",
                # Only the prefix: no package registry, no system rankwire.
                "-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF",
                "-DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF"]
        if self.launcher:
            args.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={self.launcher}")
        if self.extra_flags:
            args.append(f"-DCMAKE_CXX_FLAGS={' '.join(self.extra_flags)}")
        self.run_checked(*args)
        cache = read(os.path.join(build, "CMakeCache.txt"))
        self.assertIn(f"rankwire_DIR:PATH={self.prefix}/lib/cmake/rankwire", cache)
        self.run_checked(os.environ.get("RANKWIRE_CMAKE", "cmake"), "--build", build)
        return os.path.join(build, "central_control")

    def build_with_pkg_config(self, source):
        binary = os.path.join(self.dir, "central_control_pc")
        flags = self.run_checked("pkg-config", "--cflags", "--libs", "rankwire-client").split()
        compiler = [self.launcher, self.cxx] if self.launcher else [self.cxx]
        self.run_checked(*compiler, "-std=c++17", "-O2", *self.extra_flags,
                         os.path.join(source, "central_control.cc"), *flags, "-o", binary)
        return binary

    def start_server(self):
        """The installed server, its model found under share/ (not --model)."""
        proc = subprocess.Popen(
            [self.installed("bin", "rankwire-server"), "--address=127.0.0.1", "--port=0",
             "--metrics_port=-1", "--codec=rankbin-zstd", "--log_writer_nice=0"],
            cwd=self.dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 15
        output = []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            output.append(line)
            m = re.search(r"listening port=(\d+)", line)
            if m:
                return proc, int(m.group(1))
        proc.kill()
        proc.stdout.close()
        raise AssertionError("rankwire-server did not start:\n" + "".join(output))

    def check_unavailable(self, binary):
        # Nobody listening: UNAVAILABLE after the channel's retries, within
        # the deadline; the example falls back (exit 1) instead of hanging.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        t0 = time.monotonic()
        done = subprocess.run([binary, f"127.0.0.1:{port}"], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("ranking unavailable, falling back to recall order: UNAVAILABLE",
                      done.stderr)
        self.assertLess(time.monotonic() - t0, 10)

    def check_run(self, binary, port):
        out = self.run_checked(binary, f"127.0.0.1:{port}", timeout=60)
        lines = out.splitlines()
        self.assertRegex(lines[0], r"^# 500 items, codec rankbin-zstd, \d+ bytes", out)
        top = lines[1:11]
        self.assertEqual([int(line.split()[0]) for line in top], list(range(1, 11)), out)
        for line in top:
            self.assertRegex(line, r" ctr=0\.\d{4} src=text_bm25$")
        ids = [line.split()[1] for line in top]
        logs = lines[11:]
        self.assertEqual([line.split(":")[0] for line in logs], ids, out)
        for line in logs:
            self.assertNotIn("(no log yet)", line, out)
            self.assertIn(" user=u-42 ", line)


if __name__ == "__main__":
    unittest.main()
