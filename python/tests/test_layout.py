"""The package's shape: no import cycle between its modules, the stored log
decoder importable (and runnable, `python -m rankwire.logs`) without grpc or
protobuf (docs/LOGS.md: the standard library and zstandard), private
modules named with a leading underscore (docs/CLIENTS.md)."""

import ast
import os
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Dict, List, Set

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "rankwire"

# Run first in a child interpreter: any import of grpc or google.protobuf
# raises, as where neither is installed.
HIDE = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "grpc" or name.startswith("google.protobuf"):
            raise ImportError(f"{name} is hidden for this test")
        return None
sys.meta_path.insert(0, Hide())
"""


def run_hidden(code: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-c", HIDE + code, *args], env=env,
                          capture_output=True, text=True, timeout=60)


def imports_of(path: Path) -> Set[str]:
    """The package modules `path` imports, at run time or for type checking
    (not in its `if __name__ == "__main__":` block: that runs only as a
    program, when the module itself was not imported)."""
    out: Set[str] = set()
    tree = ast.parse(path.read_text())
    tree.body = [n for n in tree.body if not (isinstance(n, ast.If) and
                                              "__main__" in ast.dump(n.test))]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 or (node.module or "").startswith("rankwire"):
                base = (node.module or "") if node.level == 1 else node.module[len("rankwire"):]
                base = base.lstrip(".")
                if base:
                    out.add(base.split(".")[0])
                else:  # from . import a, b
                    out.update(alias.name for alias in node.names)
    return out


class LayoutTest(unittest.TestCase):
    def test_no_import_cycle(self):
        graph: Dict[str, Set[str]] = {}
        for path in PACKAGE.glob("*.py"):
            if path.stem != "__init__":
                graph[path.stem] = imports_of(path) & {p.stem for p in PACKAGE.glob("*.py")}
        self.assertIn("_view", graph["_result"])  # The walk sees imports at all.
        cycles: List[List[str]] = []

        def visit(module: str, stack: List[str]) -> None:
            if module in stack:
                cycles.append(stack[stack.index(module):] + [module])
                return
            for nxt in sorted(graph.get(module, ())):
                visit(nxt, stack + [module])

        for module in sorted(graph):
            visit(module, [])
        self.assertEqual(cycles, [])

    def test_logs_imports_and_decodes_without_grpc_or_protobuf(self):
        done = run_hidden(
            "import sys\n"
            "import rankwire.logs\n"
            "from rankwire import logs\n"
            "assert logs.key('r1') == b'rank:log:r1', logs.key('r1')\n"
            "bad = [m for m in sys.modules if m.split('.')[0] == 'grpc' or m.startswith('google')]\n"
            "assert not bad, bad\n"
            "print('ok')\n")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout, "ok\n")
        # And the hiding works: the client does need grpc.
        client = run_hidden("import rankwire\nrankwire.Client\n")
        self.assertNotEqual(client.returncode, 0)
        self.assertIn("grpc is hidden", client.stderr)

    def test_python_m_rankwire_logs_runs_without_grpc(self):
        done = run_hidden("import runpy, sys\n"
                          "sys.argv[0] = 'rankwire.logs'\n"
                          "runpy.run_module('rankwire.logs', run_name='__main__', alter_sys=True)\n",
                          "--help")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("--request", done.stdout)
        self.assertEqual(done.stderr, "")  # No runpy warning: logs is not imported twice first.
        # Bad usage: exit status 2, as LOGS.md documents for tools/log_decoder.py.
        env = dict(os.environ, PYTHONPATH=str(SRC), PYTHONDONTWRITEBYTECODE="1")
        usage = subprocess.run([sys.executable, "-m", "rankwire.logs", "--redis", "x"], env=env,
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(usage.returncode, 2, usage.stderr)
        self.assertIn("--request", usage.stderr)

    def test_tools_log_decoder_runs_the_package_command(self):
        tool = PACKAGE.parents[2] / "tools" / "log_decoder.py"
        done = subprocess.run([sys.executable, str(tool), "--help"], capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("--request", done.stdout)

    def test_private_modules_are_underscored(self):
        public = {"__init__", "admin", "client", "errors", "logs", "rank_pb2", "rankbin"}
        for path in PACKAGE.glob("*.py"):
            if path.stem not in public:
                self.assertTrue(path.stem.startswith("_"), f"{path.name}: public, but not "
                                "in the package docstring's public names")


if __name__ == "__main__":
    unittest.main()
