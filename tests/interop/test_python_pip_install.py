"""`pip install ./python` works offline on Debian's packages alone, and the
installed package ranks against the real server.

As docs/CLIENTS.md says to install it: a venv made by Debian's
/usr/bin/python3 with --system-site-packages (so it sees python3-grpcio,
-protobuf, -zstandard, -setuptools and -wheel), then
`pip install --no-build-isolation --no-index`. --no-index makes pip fail
rather than reach PyPI, so passing here means no network was needed. The
package is installed from a copy of python/, as a wheel build writes into
the source folder; the installed one is then used with no PYTHONPATH, from
a directory outside the checkout.

Environment: RANKWIRE_SERVER_BIN, RANKWIRE_MODEL_PATH (as test_interop.py).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_interop import ServerFixture  # noqa: E402

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")

# Run by the venv's python: imports the installed package and ranks.
CALLER = textwrap.dedent("""
    import sys
    import rankwire
    from rankwire import rank_pb2

    print(rankwire.__file__)
    request = rank_pb2.RankRequest(request_id="pip-1", scene=rank_pb2.SCENE_SEARCH, top_n=2,
                                   item_feature_names=["price"])
    for i in range(3):
        request.candidates.add(item_id=f"sku-{i}", recall_source="text_bm25",
                               recall_rank=i + 1, features=[10.0 * (i + 1)])
    with rankwire.Client(sys.argv[1]) as client:
        for codec in rankwire.CODECS:
            result = client.rank(request, timeout=10, accept_codecs=[codec])
            assert result.codec == codec and len(result) == 3, result
            top = result.top(2)
            assert [i.position for i in top] == [1, 2], top
            assert isinstance(top[0].metric("score.ctr"), float)
    print("ranked")
""")


class PipInstallTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="rankwire-py-pip-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_checked(self, *args, **kw):
        done = subprocess.run(args, capture_output=True, text=True, **kw)
        self.assertEqual(done.returncode, 0, f"{args}\n{done.stdout}\n{done.stderr}")
        return done.stdout

    def test_offline_install_into_a_venv_then_rank(self):
        source = os.path.join(self.dir, "python")
        shutil.copytree(PYTHON_DIR, source,
                        ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
        venv = os.path.join(self.dir, "venv")
        # No PYTHONPATH (ctest's points at the source tree), no user pip config.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_"))}
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
        self.run_checked("/usr/bin/python3", "-m", "venv", "--system-site-packages", venv, env=env)
        python = os.path.join(venv, "bin", "python")
        self.run_checked(python, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                         source, env=env, cwd=self.dir)

        listing = self.run_checked(python, "-m", "pip", "show", "-f", "rankwire", env=env)
        for name in ("rankwire/rank_pb2.py", "rankwire/rankbin.py", "rankwire/logs.py",
                     "rankwire/py.typed"):
            self.assertIn(name, listing)

        server = ServerFixture()
        try:
            out = self.run_checked(python, "-c", CALLER, f"127.0.0.1:{server.port}", env=env,
                                   cwd=self.dir).split()
        finally:
            server.close()
        self.assertTrue(out[0].startswith(os.path.join(venv, "lib")), out[0])
        self.assertEqual(out[-1], "ranked")


if __name__ == "__main__":
    unittest.main()
