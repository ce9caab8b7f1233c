#!/usr/bin/python3
"""Cross-checks ONNX Runtime's reference outputs against the second ones.

    /usr/bin/python3 tests/corpus/check_reference.py MANIFEST_DIR [--models a,b]

For every manifest entry with ort_output_K.npy, compares each with
torch_output_K.npy (PyTorch eager, export_models.py) or numpy_output_K.npy
(the op in numpy, make_opset_graphs.py), in NAME/ and in each NAME/shape_S/
(the other shapes of a model with dynamic axes): same shape and dtype, integers
equal, floats within max|ort - ref| <= ATOL + RTOL * max|ref|. Prints one
line per model ("NAME agree max_abs X" / "NAME DISAGREE ...") and exits 1
when any model disagrees or an entry has neither ORT outputs nor a recorded
reason (export_error / dropped).
"""

import argparse
import json
import os
import sys

import numpy as np

RTOL, ATOL = 1e-3, 1e-5


def compare(ort, ref):
    if ort.shape != ref.shape:
        return False, "shape %s vs %s" % (ort.shape, ref.shape)
    if ort.dtype != ref.dtype:
        return False, "dtype %s vs %s" % (ort.dtype, ref.dtype)
    if ort.size == 0:
        return True, 0.0
    if not np.issubdtype(ref.dtype, np.floating):
        bad = int(np.count_nonzero(ort != ref))
        return bad == 0, ("%d elements differ" % bad) if bad else 0.0
    d = float(np.max(np.abs(ort.astype(np.float64) - ref)))
    bound = ATOL + RTOL * float(np.max(np.abs(ref)))
    return d <= bound, d if d <= bound else "max_abs %.3g > %.3g" % (d, bound)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--models", default="")
    a = ap.parse_args()
    with open(os.path.join(a.dir, "manifest.json")) as f:
        entries = json.load(f)["models"]
    if a.models:
        wanted = set(a.models.split(","))
        entries = [e for e in entries if e["name"] in wanted]
    bad = 0
    for e in entries:
        name = e["name"]
        if e.get("export_error") or e.get("dropped"):
            print("%s skipped: %s" % (name, "export_error" if e.get(
                "export_error") else "dropped"))
            continue
        worst, problems = 0.0, []
        subs = [""] + ["shape_%d" % s
                       for s in range(1, len(e.get("shape_sets", [])) + 1)]
        for sub, k, out in [(sub, k, out) for sub in subs
                            for k, out in enumerate(e["outputs"])]:
            d = os.path.join(a.dir, name, sub)
            where = os.path.join(sub, "ort_output_%d.npy" % k)
            p = os.path.join(d, "ort_output_%d.npy" % k)
            if not os.path.exists(p):
                problems.append("no " + where)
                continue
            ref = None
            for kind in ("torch", "numpy"):
                q = os.path.join(d, "%s_output_%d.npy" % (kind, k))
                if os.path.exists(q):
                    ref = np.load(q)
                    break
            if ref is None:
                problems.append("no second reference for output %d" % k)
                continue
            ok, what = compare(np.load(p), ref)
            if ok:
                worst = max(worst, what)
            else:
                problems.append("%s%s: %s" % (sub + "/" if sub else "", out,
                                              what))
        if problems:
            bad += 1
            print("%s DISAGREE %s" % (name, "; ".join(problems)))
        else:
            print("%s agree max_abs %.3g" % (name, worst))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
