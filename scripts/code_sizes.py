#!/usr/bin/env python3
"""Prints the largest source files and functions of the tree.

  scripts/code_sizes.py [--files N] [--functions N] [--over LINES]

A function is a definition that opens at column 0 (or one indent inside a
namespace-level class) and ends at the matching closing brace at the same
indent: Google style, which the tree follows. Kernels (devices/cpu/),
generated code and tests are listed separately, as the architecture issue
counts them apart. Reads files as text; writes nothing.
"""
import argparse
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tracked_sources():
    out = subprocess.run(["git", "ls-files", "*.cc", "*.h"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [p for p in out.split() if p]


def functions(path):
    """Yields (name, first_line, length) of each function body at file or
    namespace level (member functions defined in a class body count with
    their class)."""
    with open(os.path.join(ROOT, path), encoding="utf-8",
              errors="replace") as f:
        text = f.read()
    # Strings, characters and comments do not count as braces.
    text = re.sub(r'//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                  r"'(?:\\.|[^'\\\n])*'",
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    lines = text.split("\n")
    header = []  # Lines since the last statement at namespace level.
    depth = 0
    start = name = None
    for i, line in enumerate(lines):
        if start is None:
            stripped = line.strip()
            if stripped.startswith("#") or not stripped:
                header = [] if not stripped else header
                continue
            if re.match(r"(namespace\b.*|extern \"C\")\s*\{", stripped) or \
                    stripped.startswith("}  // namespace") or stripped == "}":
                header = []
                continue
            header.append((i, line))
            opens = line.count("{") - line.count("}")
            joined = " ".join(l for _, l in header)
            if opens > 0:
                first = joined.split("(")[0]
                if ("(" in joined and not re.search(
                        r"\b(class|struct|enum|union)\b", first)
                        and "=" not in first):
                    m = re.search(r"([A-Za-z_~][\w:~<>]*)\s*\(", joined)
                    name = m.group(1) if m else stripped
                    start = next(j for j, l in header if "(" in l)
                    depth = opens
                    if depth == 0:
                        start = None
                else:
                    # A class or initialiser: skip to its end.
                    depth = opens
                    name = None
                    start = header[0][0]
                header = []
            elif stripped.endswith(";") or stripped.endswith("}"):
                header = []
        else:
            depth += line.count("{") - line.count("}")
            if depth <= 0:
                if name is not None:
                    yield name, start + 1, i - start + 1
                start = None
                depth = 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=15)
    parser.add_argument("--functions", type=int, default=25)
    parser.add_argument("--over", type=int, default=80)
    args = parser.parse_args()
    sources = tracked_sources()
    sizes = []
    for p in sources:
        with open(os.path.join(ROOT, p), encoding="utf-8",
                  errors="replace") as f:
            sizes.append((sum(1 for _ in f), p))
    sizes.sort(reverse=True)

    def kind(p):
        if p.endswith("_test.cc") or p.startswith("tests/"):
            return "test"
        if p.startswith("devices/cpu/"):
            return "kernel"
        if p.endswith(".pb.cc") or p.endswith(".pb.h"):
            return "generated"
        return "source"

    print(f"## Largest source files (not tests, not devices/cpu/)")
    shown = 0
    for n, p in sizes:
        if kind(p) == "source" and shown < args.files:
            print(f"{n:6d}  {p}")
            shown += 1
    print(f"\n## Functions over {args.over} lines (not tests, not "
          f"devices/cpu/)")
    long = []
    for p in sources:
        if kind(p) != "source" or not p.endswith(".cc"):
            continue
        for name, first, length in functions(p):
            if length > args.over:
                long.append((length, f"{p}:{first}", name))
    long.sort(reverse=True)
    for length, where, name in long[:args.functions]:
        print(f"{length:6d}  {where}  {name}")
    print(f"({len(long)} in all)")


if __name__ == "__main__":
    main()
