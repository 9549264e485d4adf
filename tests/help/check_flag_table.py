"""README.md's flag table of a binary and the binary's `--help` name the same
flags, each once: a flag added, renamed or removed in the code without the
table (or the other way round) fails here, as does a row repeated in the
table or a flag `--help` lists twice.

Usage: check_flag_table.py <README.md> "<section heading>" <binary>

The table is the first Markdown table after the heading (`## Server flags`);
its first column names one or more flags (`--tls_cert_file`, `--tls_key_file`).
`--help` lists the binary's own flags, one entry each ("    --name (help)").
A flag whose help starts "Deprecated" needs no row of its own: it may be
named in another row's text instead (the flag that replaces it).
"""

import collections
import re
import subprocess
import sys
import unittest

README, SECTION, BINARY = sys.argv[1:4]
sys.argv = sys.argv[:1]

_ENTRY = re.compile(r"^    --([A-Za-z0-9_]+) \((\w*)", re.M)
_CELL_FLAG = re.compile(r"`--([A-Za-z0-9_]+)`")


def table_flags(text: str, heading: str):
    """The flags the table's rows are for (with how many rows each), and
    every flag its text names."""
    start = text.index("\n" + heading + "\n")
    rows = collections.Counter()
    named = set()
    in_table = False
    for line in text[start + len(heading) + 2:].splitlines():
        if line.startswith("|"):
            in_table = True
            first = line.split("|")[1]
            rows.update(_CELL_FLAG.findall(first))
            named.update(re.findall(r"`--([A-Za-z0-9_]+)", line))
        elif in_table or line.startswith("#"):
            break
    return rows, named


def help_flags(binary: str):
    """Each flag's entries in --help, and the deprecated ones."""
    r = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 0, f"--help exited {r.returncode}: {r.stderr[-2000:]}"
    entries = _ENTRY.findall(r.stdout)
    return (collections.Counter(name for name, _ in entries),
            {name for name, first in entries if first == "Deprecated"})


class FlagTableTest(unittest.TestCase):
    def setUp(self):
        with open(README, encoding="utf-8") as f:
            self.table, self.named = table_flags(f.read(), SECTION)
        self.help, self.deprecated = help_flags(BINARY)

    def test_the_parsers_find_flags(self):
        self.assertGreater(len(self.table), 10, f"no table under {SECTION!r}")
        self.assertGreater(len(self.help), 10, "no flags in --help")

    def test_each_flag_once(self):
        self.assertEqual(sorted(f for f, n in self.table.items() if n > 1), [],
                         f"flags in more than one row of {SECTION!r}")
        self.assertEqual(sorted(f for f, n in self.help.items() if n > 1), [],
                         "flags --help lists more than once")

    def test_table_and_help_agree(self):
        undocumented = set(self.help) - set(self.table) - (self.deprecated & self.named)
        self.assertEqual(sorted(undocumented), [],
                         f"in --help, not in README's {SECTION!r} table")
        self.assertEqual(sorted(set(self.table) - set(self.help)), [],
                         f"in README's {SECTION!r} table, not in --help")


if __name__ == "__main__":
    unittest.main()
