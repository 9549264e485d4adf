#!/usr/bin/python3
"""The procedures of docs/MODELS.md, docs/OPERATING.md and docs/CLIENTS.md,
run as written against the real binaries (ctest -L docs), so that a step of
the docs cannot drift from what the code does.

A fenced block is marked by an HTML comment on the line before it (invisible
when the Markdown is rendered):

  <!-- doc-test: NAME -->            a step of procedure NAME; the blocks of
                                     one NAME run in order, in one bash
                                     session (variables, `cd`, background
                                     servers carry over), as ctest
                                     docs.<doc>.<NAME>
  <!-- doc-test: NAME save=FILE -->  a step that saves the block as FILE (a
                                     script or config the doc says to save)
  <!-- doc-test: NAME clean=DIR -->  also: the checkout's DIR must not change
  <!-- doc-test: skip: REASON -->    not run: it cannot run on one machine
                                     (a Kubernetes cluster, a registry)
  <!-- doc-test: covered: WHERE -->  run as it is by another part of CI
  <!-- doc-test: same-as: PATH -->   the block is the file PATH, to the byte

Blocks:
  ```console   `$ ` starts a command (a line ending in `\\` continues it, a
               here-document's lines belong to it); the lines up to the next
               command are output the command must print, in order
               (others may come between them), each found within a line
               of the output, `...` matching anything. A command must exit
               0, unless its line ends with `# exit status N`.
  ```sh        a script; every command must succeed (`set -e`).

Every ```sh, ```console and ```bash block, and every block with a `$ `
command, must be marked: `--inventory` (ctest docs.inventory) fails on one
that is not, and lists what is skipped or covered and why.

As a newcomer runs them from a checkout with a build in build/, with these
substitutions (the docs say so where they first apply):
  - the working directory is a fresh directory holding links to the
    checkout's top-level entries (build/ is the build directory), so
    relative paths (build/..., python/, examples/) resolve and anything a
    procedure writes stays out of the checkout;
  - paths under /tmp/ are under a fresh temporary directory;
  - ports 50051-50099 and 9464-9469 are free ports (the same port for the
    same number within a procedure);
  - rankwire-server, rankwire-cli and rankwire-loadgen are on PATH (the
    build's, as `cmake --install` would put them in <prefix>/bin);
  - at the end, every process the procedure left running is stopped.

    tests/docs/run_doc_procedures.py --list
    tests/docs/run_doc_procedures.py --run operating:canary
    tests/docs/run_doc_procedures.py --inventory

Environment: RANKWIRE_BINARY_DIR (the build), RANKWIRE_SOURCE_DIR (default:
this checkout).
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.realpath(os.environ.get(
    "RANKWIRE_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")))
DOCS = ["MODELS.md", "OPERATING.md", "CLIENTS.md"]
RUN_LANGS = {"sh", "console", "bash", "shell"}
MARK = re.compile(r"^<!-- doc-test: (.*?) -->\s*$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
PORT = re.compile(r"(?<![\d.])(500[5-9]\d|946[4-9])(?!\d)")
EXIT = re.compile(r"#\s*exit status (\d+)\s*$")


class Block:
    def __init__(self, doc, line, lang, text, mark):
        self.doc, self.line, self.lang, self.text, self.mark = doc, line, lang, text, mark
        self.kind, self.name, self.options, self.reason = None, None, {}, None
        if mark is None:
            return
        for kind in ("skip", "covered", "same-as"):
            if mark.startswith(kind + ":"):
                self.kind, self.reason = kind, mark[len(kind) + 1:].strip()
                return
        words = mark.split()
        self.kind, self.name = "run", words[0]
        for word in words[1:]:
            key, _, value = word.partition("=")
            self.options[key] = value

    def where(self):
        return f"docs/{self.doc}:{self.line}"

    def needs_mark(self):
        return self.lang in RUN_LANGS or any(l.startswith("$ ") for l in self.text.splitlines())


def read_blocks(doc):
    """Every fenced block of docs/<doc>, with the mark on the line before."""
    lines = open(os.path.join(SOURCE, "docs", doc), encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        mark = None
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0 and MARK.match(lines[j].strip()):
            mark = MARK.match(lines[j].strip()).group(1)
        blocks.append(Block(doc, start + 1, lang, "\n".join(body) + "\n", mark))
        i += 1
    return blocks


def procedures():
    """{"models:export": [blocks...]} in doc order."""
    out = {}
    for doc in DOCS:
        for b in read_blocks(doc):
            if b.kind == "run":
                out.setdefault(f"{doc[:-3].lower()}:{b.name}", []).append(b)
    return out


# ---------------------------------------------------------------------------
# Turning blocks into steps.

class Step:
    def __init__(self, block, command, expected=(), exit_code=0, script=False, save=None):
        self.block, self.command, self.expected = block, command, list(expected)
        self.exit_code, self.script, self.save = exit_code, script, save


def console_steps(block):
    steps, lines, i = [], block.text.rstrip("\n").split("\n"), 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            if lines[i].strip():
                raise ValueError(f"{block.where()}: output before any command: {lines[i]!r}")
            i += 1
            continue
        command = [lines[i][2:]]
        i += 1
        while command[-1].endswith("\\") and i < len(lines):
            command.append(lines[i])
            i += 1
        heredoc = re.search(r"<<-?\s*'?\"?(\w+)", "\n".join(command))
        if heredoc:
            while i < len(lines):
                command.append(lines[i])
                i += 1
                if command[-1].strip() == heredoc.group(1):
                    break
        expected = []
        while i < len(lines) and not lines[i].startswith("$ "):
            if lines[i].strip() and lines[i].strip() != "...":
                expected.append(lines[i].rstrip())
            i += 1
        m = EXIT.search(command[0] if heredoc else command[-1])
        steps.append(Step(block, "\n".join(command), expected, int(m.group(1)) if m else 0))
    return steps


def steps_of(blocks):
    steps = []
    for b in blocks:
        if "save" in b.options:
            steps.append(Step(b, None, save=b.options["save"]))
        elif b.lang == "console":
            steps.extend(console_steps(b))
        elif b.lang in RUN_LANGS:
            steps.append(Step(b, b.text, script=True))
        else:
            raise ValueError(f"{b.where()}: a ```{b.lang} block runs only with save=FILE")
    return steps


# ---------------------------------------------------------------------------
# Running a procedure.

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Substitutions:
    """What changes between the doc and the test run, as the docs state."""

    def __init__(self, tmp):
        self.tmp, self.ports = tmp, {}

    def __call__(self, text):
        text = re.sub(r"(?<![\w.-])/tmp/", self.tmp + "/", text)
        return PORT.sub(lambda m: str(self.ports.setdefault(m.group(1), free_port())), text)


def make_tree(work, binary_dir):
    """A directory holding links to the checkout's top-level entries, with
    build/ the build directory."""
    tree = os.path.join(work, "tree")
    os.makedirs(tree)
    for name in os.listdir(SOURCE):
        if name in ("build", ".git") or name.startswith("build-"):
            continue
        os.symlink(os.path.join(SOURCE, name), os.path.join(tree, name))
    os.symlink(binary_dir, os.path.join(tree, "build"))
    return tree


def environment(work, binary_dir):
    path = [os.path.join(binary_dir, "server"), os.path.join(binary_dir, "client"),
            "/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"]
    env = {"PATH": ":".join(path), "HOME": work, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "TMPDIR": os.path.join(work, "tmp"), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONUNBUFFERED": "1", "PIP_CONFIG_FILE": os.devnull,
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1",
           "OMP_NUM_THREADS": "1", "USER": os.environ.get("USER", "rankwire")}
    for name in ("CCACHE_DIR", "RANKWIRE_REDIS_SERVER"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def script_for(steps, tree, state, sub):
    """The bash script that runs every step, recording each one's output
    and exit status in `state`."""
    out = ["set -o pipefail", f"cd {tree}"]
    for n, step in enumerate(steps):
        out.append(f"echo {n} > {state}/current; echo $EPOCHREALTIME > {state}/t.{n}")
        if step.save is not None:
            path = os.path.join(state, f"save.{n}")
            with open(path, "w") as f:
                f.write(sub(step.block.text))
            target = sub(step.save)
            out.append(f"mkdir -p \"$(dirname {target})\" && cp {path} {target}")
            continue
        body = sub(step.command)
        if step.script:
            body = "set -e\n" + body + "\nset +e"
        out.append("{\n" + body + "\n} > " + f"{state}/out.{n} 2>&1 < /dev/null")
        out.append(f"echo $? > {state}/rc.{n}")
        out.append(f'[ "$(cat {state}/rc.{n})" = "{step.exit_code}" ] || exit 3')
    out.append(f"echo done > {state}/current; echo $EPOCHREALTIME > {state}/t.{len(steps)}")
    return "\n".join(out) + "\n"


def stop_group(pgid):
    """Stops what the procedure left running: SIGTERM (servers drain and
    flush), then SIGKILL after 15 s."""
    for sig, patience in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + patience
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def matches(expected, actual_lines, sub):
    """The first expected line not found in order, or None."""
    at = 0
    for line in expected:
        pattern = re.compile(".*".join(re.escape(part) for part in sub(line).split("...")))
        while at < len(actual_lines) and not pattern.search(actual_lines[at]):
            at += 1
        if at == len(actual_lines):
            return line
        at += 1
    return None


def snapshot(directory):
    found = set()
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        found.update(os.path.relpath(os.path.join(root, f), directory) for f in files + dirs)
    return found


def run(name, blocks, binary_dir, timeout):
    steps = steps_of(blocks)
    work = tempfile.mkdtemp(prefix="rankwire-doc-")
    try:
        os.makedirs(os.path.join(work, "tmp"))
        state = os.path.join(work, "state")
        os.makedirs(state)
        tree = make_tree(work, binary_dir)
        sub = Substitutions(os.path.join(work, "tmp"))
        script = os.path.join(state, "script.sh")
        with open(script, "w") as f:
            f.write(script_for(steps, tree, state, sub))
        clean = [b.options["clean"] for b in blocks if b.options.get("clean")]
        before = {d: snapshot(os.path.join(SOURCE, d)) for d in clean}
        t0 = time.monotonic()
        proc = subprocess.Popen(["/bin/bash", script], cwd=tree, env=environment(work, binary_dir),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            shell_out, _ = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            shell_out = ""
        stop_group(proc.pid)
        proc.wait()
        seconds = time.monotonic() - t0
        return report(name, steps, state, sub, timed_out, shell_out, seconds, clean, before)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(name, steps, state, sub, timed_out, shell_out, seconds, clean, before):
    def read(path):
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return None

    current = (read(os.path.join(state, "current")) or "0").strip()
    failed = []
    for n, step in enumerate(steps):
        if step.save is not None:
            continue
        out, rc = read(os.path.join(state, f"out.{n}")), read(os.path.join(state, f"rc.{n}"))
        head = f"{step.block.where()} step {n}: {step.command.splitlines()[0][:100]}"
        if out is None:
            break
        if rc is None:
            why = "timed out" if timed_out and current == str(n) else "did not finish"
            failed.append(f"{head}\n  {why}; output:\n{indent(out)}")
            break
        if int(rc) != step.exit_code:
            failed.append(f"{head}\n  exit status {rc.strip()}, expected {step.exit_code}; "
                          f"output:\n{indent(out)}")
            break
        missing = matches(step.expected, out.rstrip("\n").split("\n"), sub)
        if missing is not None:
            failed.append(f"{head}\n  the output lacks (in order): {missing}\n  output:\n"
                          f"{indent(out)}")
    for d in clean:
        changed = snapshot(os.path.join(SOURCE, d)) ^ before[d]
        if changed:
            failed.append(f"the procedure changed the checkout's {d}/: {sorted(changed)[:10]}")
    if shell_out.strip():
        print(shell_out)
    if failed:
        print(f"FAIL {name} ({seconds:.1f} s)\n" + "\n".join(failed))
        return 1
    print(f"ok {name}: {len(steps)} steps from "
          f"{', '.join(sorted({s.block.where().split(':')[0] for s in steps}))} in {seconds:.1f} s")
    times = [read(os.path.join(state, f"t.{n}")) for n in range(len(steps) + 1)]
    if all(times):
        took = [(float(times[n + 1]) - float(times[n]), n) for n in range(len(steps))]
        print("slowest steps: " + "; ".join(
            f"{t:.1f} s {steps[n].block.where()} {(steps[n].command or 'save').splitlines()[0][:60]}"
            for t, n in sorted(took, reverse=True)[:3]))
    return 0


def indent(text):
    lines = text.rstrip("\n").split("\n")
    if len(lines) > 60:
        lines = lines[:20] + [f"... ({len(lines) - 40} lines)"] + lines[-20:]
    return "\n".join("    | " + l for l in lines)


# ---------------------------------------------------------------------------
# The inventory: every block that looks runnable is marked.

def inventory():
    problems, skipped, covered, ran = [], [], [], 0
    for doc in DOCS:
        for b in read_blocks(doc):
            if b.mark is None:
                if b.needs_mark():
                    problems.append(f"{b.where()}: a ```{b.lang} block with no doc-test mark")
                continue
            if b.kind in ("skip", "covered") and not b.reason:
                problems.append(f"{b.where()}: {b.kind} without a reason")
            if b.kind == "skip":
                skipped.append(f"  {b.where()}: {b.reason}")
            elif b.kind == "covered":
                covered.append(f"  {b.where()}: {b.reason}")
            elif b.kind == "same-as":
                path = os.path.join(SOURCE, b.reason)
                if not os.path.isfile(path) or open(path).read() != b.text:
                    problems.append(f"{b.where()}: not the file {b.reason} as it is")
            else:
                ran += 1
                try:
                    steps_of([b])
                except ValueError as e:
                    problems.append(str(e))
    print(f"{len(procedures())} procedures ({ran} blocks) run as tests: "
          + ", ".join(sorted(procedures())))
    print(f"run elsewhere in CI ({len(covered)}):\n" + "\n".join(covered))
    print(f"not run, and why ({len(skipped)}):\n" + "\n".join(skipped))
    if problems:
        print("FAIL\n" + "\n".join(problems))
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="procedure names, one a line")
    parser.add_argument("--run", metavar="DOC:NAME", help="run one procedure")
    parser.add_argument("--inventory", action="store_true")
    parser.add_argument("--timeout", type=float, default=240)
    args = parser.parse_args()
    if args.list:
        print("\n".join(procedures()))
        return 0
    if args.inventory:
        return inventory()
    if args.run:
        blocks = procedures().get(args.run)
        if blocks is None:
            print(f"no procedure {args.run}; --list names them")
            return 2
        binary_dir = os.path.realpath(os.environ.get("RANKWIRE_BINARY_DIR",
                                                     os.path.join(SOURCE, "build")))
        return run(args.run, blocks, binary_dir, args.timeout)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
