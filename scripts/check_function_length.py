#!/usr/bin/env python3
"""Fails if a product function is longer than the house limit (80 lines).

    scripts/check_function_length.py [--max 80] [ROOT]

Scans the product folders' .cc and .h files (base, codec, rpc, workload,
server, client, logstore; not tests -- the *_test.cc files that sit beside
their sources -- benchmarks or generated code) for
function bodies: top-level functions and member functions defined in a class
body, lambdas counted with the function that holds them. A body's length is
its lines from the opening brace to the closing one. Mains that only sequence
start-up are exempt: `main` and `Run` in a *_main.cc file.

A brace scanner, not a compiler: comments, string and character literals are
blanked first, and a brace opens a function when the text before it since the
last `;`, `{` or `}` looks like a function head (a name, then a parameter
list), outside any other function.
"""
import argparse
import os
import re
import sys

FOLDERS = ("base", "codec", "rpc", "workload", "metrics", "request", "model", "ranking", "server",
           "client", "logstore")
EXEMPT_IN_MAINS = {"main", "Run"}
# Known exceptions being fixed elsewhere, as (file, function). Keep it empty:
# an entry that no longer matches is reported so it can be removed.
ALLOWED = set()
KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype",
            "alignof", "static_assert", "defined"}


def blank_comments_and_literals(text):
    """Replaces comments and literals by spaces, keeping line breaks."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def function_name(head):
    """The function's name if `head` (text before a brace) is a function head."""
    head = head.strip()
    if not head or head.startswith("#") or "=" in head.split("(")[0]:
        return None
    if re.match(r"^(namespace|class|struct|union|enum|extern)\b", head):
        return None
    # Strip a constructor's initializer list: `X::X(...) : a_(1), b_(2)`.
    m = re.match(r"^(.*?\))\s*(?:const|override|final|noexcept|&&|&|\s)*(?::[^:].*)?$",
                 head, re.S)
    if not m:
        return None
    m = re.search(r"([A-Za-z_~][\w:~]*(?:operator\s*[^\s(]+)?)\s*(?:<[^()]*>)?\s*\(", m.group(1))
    if not m:
        return None
    name = m.group(1).split("::")[-1]
    if name in KEYWORDS or "[" in head.split("(")[0]:
        return None
    return name


def long_functions(path, limit):
    text = blank_comments_and_literals(open(path, encoding="utf-8").read())
    is_main_file = path.endswith("_main.cc")
    stack = []  # (kind, name, start line)
    head_start = 0
    line = 1
    found = []
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[head_start:i]
            inside_function = any(kind in ("func", "other") for kind, _, _ in stack)
            name = None if inside_function else function_name(head)
            if name:
                stack.append(("func", name, line))
            elif re.search(r"\b(namespace|class|struct|union)\b[^(]*$", head) and not inside_function:
                stack.append(("scope", None, line))
            else:
                stack.append(("other", None, line))
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, name, start = stack.pop()
                length = line - start + 1
                if kind == "func" and length > limit and not (is_main_file and name in EXEMPT_IN_MAINS):
                    found.append((path, start, name, length))
            head_start = i + 1
        elif c == ";":
            head_start = i + 1
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=80)
    parser.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(__file__), ".."))
    args = parser.parse_args()
    found = []
    for folder in FOLDERS:
        for dirpath, _, files in os.walk(os.path.join(args.root, folder)):
            for f in sorted(files):
                if f.endswith((".cc", ".h")) and not f.endswith("_test.cc"):
                    found += long_functions(os.path.join(dirpath, f), args.max)
    failed = False
    used = set()
    for path, start, name, length in found:
        rel = os.path.relpath(path, args.root)
        if (rel, name) in ALLOWED:
            used.add((rel, name))
            print(f"{rel}:{start}: {name} is {length} lines (allowed for now)")
            continue
        print(f"{rel}:{start}: {name} is {length} lines (limit {args.max})")
        failed = True
    for rel, name in sorted(ALLOWED - used):
        print(f"note: the exception for {rel} {name} is no longer needed; remove it")
    if failed:
        return 1
    print(f"check_function_length: no product function over {args.max} lines"
          + (" but the listed exceptions" if used else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
