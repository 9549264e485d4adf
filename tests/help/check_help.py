"""`--help` and `--helpfull` of one rankwire binary: each exits 0 and lists
the binary's own flags (`flag`, one it defines), not Abseil's "No flags
matched"; a flag the binary does not define still exits non-zero with an
error naming it. Abseil 20220623 exits 1 after printing help, so scripts and
probes that ask for it saw a failure (base/flags.cc says how it is fixed).

Usage: check_help.py <binary> <flag it defines, e.g. --model>
"""

import os
import subprocess
import sys
import unittest

BINARY, FLAG = sys.argv[1:3]
sys.argv = sys.argv[:1]


def run(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)


class HelpTest(unittest.TestCase):
    def test_help_exits_zero_and_lists_own_flags(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0, f"--help exited {r.returncode}\n{r.stderr[-2000:]}")
        self.assertIn(FLAG, r.stdout)
        self.assertNotIn("No flags matched", r.stdout)

    def test_helpfull_exits_zero_and_lists_every_flag(self):
        r = run("--helpfull")
        self.assertEqual(r.returncode, 0, f"--helpfull exited {r.returncode}")
        self.assertIn(FLAG, r.stdout)
        self.assertIn("--flagfile", r.stdout, "Abseil's own flags are in --helpfull")

    def test_unknown_flag_fails(self):
        r = run("--no_such_flag_anywhere=1")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no_such_flag_anywhere", r.stderr)


if __name__ == "__main__":
    print(f"{os.path.basename(BINARY)}: checking --help, --helpfull, an unknown flag")
    unittest.main()
