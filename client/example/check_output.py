#!/usr/bin/python3
"""Compares an output .npy with the expected one.

    /usr/bin/python3 client/example/check_output.py ACTUAL.npy EXPECTED.npy

Exit 0 when dtype and shape match and every element satisfies
|actual - expected| <= atol + rtol * |expected| (rtol 1e-4, atol 1e-6);
exit 1 otherwise, saying where they differ; exit 2 on a missing or
unreadable file.
"""

import argparse
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("actual")
    parser.add_argument("expected")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-6)
    args = parser.parse_args()
    try:
        actual = np.load(args.actual, allow_pickle=False)
        expected = np.load(args.expected, allow_pickle=False)
    except (OSError, ValueError) as e:
        print(f"check_output: error: {e}", file=sys.stderr)
        return 2
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        print(f"MISMATCH: got {actual.dtype}{list(actual.shape)}, expected "
              f"{expected.dtype}{list(expected.shape)}")
        return 1
    close = np.isclose(actual, expected, rtol=args.rtol, atol=args.atol)
    if not close.all():
        bad = np.argwhere(~close)
        i = tuple(bad[0])
        print(f"MISMATCH: {len(bad)} of {actual.size} elements differ; first "
              f"at {list(i)}: got {actual[i]}, expected {expected[i]}")
        return 1
    print(f"OK: {args.actual} matches {args.expected} "
          f"({actual.size} elements, rtol {args.rtol})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
