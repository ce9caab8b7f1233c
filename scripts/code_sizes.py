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
    """Yields (name, first_line, length) of each function body: at file or
    namespace level, in extern "C" blocks and in class bodies (a member
    defined inline counts alone, not with its class)."""
    with open(os.path.join(ROOT, path), encoding="utf-8",
              errors="replace") as f:
        text = f.read()
    # Strings, characters and comments do not count as braces.
    text = re.sub(r'//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                  r"'(?:\\.|[^'\\\n])*'",
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    lines = text.split("\n")
    scopes = []  # Open namespace, extern and class bodies.
    header = []  # Lines since the last statement in the current scope.
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            header = []
            i += 1
            continue
        opens = line.count("{") - line.count("}")
        if opens < 0 or stripped.startswith("}"):
            if scopes:
                scopes.pop()
            header = []
            i += 1
            continue
        header.append((i, line))
        joined = " ".join(l.strip() for _, l in header)
        if opens == 0:
            if stripped.endswith((";", "}", ":")):
                header = []
            i += 1
            continue
        before_paren = joined.split("(")[0]
        if re.match(r"(namespace\b|extern\s*\{)", joined) or re.search(
                r"\b(class|struct|union)\b", before_paren) and \
                "(" not in joined.split("{")[0]:
            scopes.append(i)  # A body whose members are parsed in turn.
            header = []
            i += 1
            continue
        # A function when its header has a parameter list; anything else
        # (an enum, an initialiser) is skipped whole.
        is_function = "(" in joined and "=" not in before_paren and \
            not re.search(r"\benum\b", before_paren)
        first = next((j for j, l in header if "(" in l), header[0][0])
        m = re.search(r"([A-Za-z_~][\w:~<>]*)\s*\(", joined)
        name = m.group(1) if m else stripped
        depth = opens
        j = i
        while depth > 0 and j + 1 < len(lines):
            j += 1
            depth += lines[j].count("{") - lines[j].count("}")
        if is_function:
            yield name, first + 1, j - first + 1
        header = []
        i = j + 1


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
