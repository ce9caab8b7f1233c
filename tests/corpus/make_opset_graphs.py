#!/usr/bin/python3
"""Small ONNX graphs at opsets 18-23, for patterns newer exporters write.

    /usr/bin/python3 tests/corpus/make_opset_graphs.py OUTDIR [--models a,b] [--list]

For each case NAME writes OUTDIR/NAME.onnx, OUTDIR/NAME/input_K.npy
(deterministic data, numpy RandomState(seed of NAME)) and
OUTDIR/NAME/numpy_output_K.npy (the op's semantics written in numpy from the
ONNX specification, float64 inside: a second reference beside ORT's), and
merges an entry with exporter "onnx.helper" into OUTDIR/manifest.json (other
entries kept).

Debian's python3-onnx is 1.12, which knows opsets up to 17 only: the graphs
are built with onnx.helper and the opset named in opset_imports, without
onnx.checker or shape inference (both refuse newer opsets). The IR version
is the one each opset came with (18: 8, 19-20: 9, 21-22: 10, 23: 11).

Cases ONNX Runtime 1.30 (the reference, ort_reference.js) refuses are not
written; they are listed in DROPPED and recorded in the manifest as
{"name", "dropped": reason}.
"""

import argparse
import json
import math
import os
import sys
import zlib

import numpy as np
from onnx import TensorProto, helper, numpy_helper

MANIFEST = "manifest.json"
IR_FOR_OPSET = {18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 11}
NP_TO_ONNX = {np.dtype("float32"): TensorProto.FLOAT,
              np.dtype("int64"): TensorProto.INT64,
              np.dtype("int32"): TensorProto.INT32,
              np.dtype("bool"): TensorProto.BOOL,
              np.dtype("uint8"): TensorProto.UINT8}

# Cases ONNX Runtime 1.30.0 (CPU) refuses, with its message: not written.
DROPPED = {
}


def seed_of(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


class Case:
    """One graph: inputs (fed), initializers (constants), nodes, outputs."""

    def __init__(self, name, opset, note):
        self.name, self.opset, self.note = name, opset, note
        self.rng = np.random.RandomState(seed_of(name))
        self.inputs, self.inits, self.nodes, self.outputs = [], [], [], []
        self.ref = None  # numpy reference: f(*input arrays) -> [outputs]

    def normal(self, name, shape, scale=1.0):
        a = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inputs.append((name, a))
        return name

    def uniform(self, name, shape, lo=0.0, hi=1.0):
        a = self.rng.uniform(lo, hi, shape).astype(np.float32)
        self.inputs.append((name, a))
        return name

    def feed(self, name, array):
        self.inputs.append((name, np.asarray(array)))
        return name

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def value(self, name):
        for n, a in self.inputs:
            if n == name:
                return a
        for t in self.inits:
            if t.name == name:
                return numpy_helper.to_array(t)
        raise KeyError(name)

    def node(self, op, ins, outs, **attrs):
        self.nodes.append(helper.make_node(op, ins, outs, name="%s_%d" % (
            op, len(self.nodes)), **attrs))
        return outs[0] if len(outs) == 1 else outs

    def out(self, name, elem=TensorProto.FLOAT):
        self.outputs.append(helper.make_tensor_value_info(name, elem, None))

    def model(self):
        graph = helper.make_graph(
            self.nodes, self.name,
            [helper.make_tensor_value_info(n, NP_TO_ONNX[a.dtype], list(a.shape))
             for n, a in self.inputs],
            self.outputs, initializer=self.inits)
        m = helper.make_model(
            graph, producer_name="glint tests/corpus/make_opset_graphs.py",
            opset_imports=[helper.make_opsetid("", self.opset)])
        m.ir_version = IR_FOR_OPSET[self.opset]
        return m


# ---------------------------------------------------------------- numpy
# References in float64, cast to the output's type at the end.

def f32(*arrays):
    return [np.asarray(a, np.float64).astype(np.float32) for a in arrays]


_erf = np.vectorize(math.erf)


def resize_linear_axis(x, axis, out_size, coord):
    """1-D linear resize along axis; coord(i) gives the source coordinate
    of output index i; clamped to the edge (ONNX's reference)."""
    n = x.shape[axis]
    src = np.clip(np.array([coord(i) for i in range(out_size)], np.float64),
                  0, n - 1)
    lo = np.floor(src).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    w = (src - lo).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
    return np.take(x, lo, axis) * (1 - w) + np.take(x, hi, axis) * w


def layer_norm(x, axis, eps):
    mean = x.mean(axis=axis, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axis, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ---------------------------------------------------------------- the cases

def reduce_case(name, op, axes, keepdims, shape=(2, 3, 4, 5)):
    c = Case(name, 18, "%s-18, axes as an initializer input %s, keepdims %d"
             % (op, axes, keepdims))
    x = c.normal("x", shape)
    c.node(op, [x, c.const("axes", np.array(axes, np.int64))], ["y"],
           keepdims=keepdims)
    c.out("y")
    fn = {"ReduceMean": np.mean, "ReduceSum": np.sum, "ReduceMax": np.max}[op]
    c.ref = lambda x: f32(fn(x.astype(np.float64), axis=tuple(axes),
                             keepdims=bool(keepdims)))
    return c


def split18():
    c = Case("split18_num_outputs_uneven", 18,
             "Split-18 num_outputs=3 on an axis of 7: sizes 3, 3, 1")
    x = c.normal("x", (2, 7, 3))
    c.node("Split", [x], ["y0", "y1", "y2"], axis=1, num_outputs=3)
    for n in ("y0", "y1", "y2"):
        c.out(n)
    c.ref = lambda x: np.split(x, [3, 6], axis=1)
    return c


def pad18(mode):
    c = Case("pad18_axes_" + mode, 18, "Pad-18 with an axes input, " + (
        "axes [1, 3], constant_value 0.5" if mode == "constant"
        else "axes [2, -1], mode reflect"))
    x = c.normal("x", (2, 3, 4, 5))
    if mode == "constant":
        ins = [x, c.const("pads", np.array([1, 2, 0, 1], np.int64)),
               c.const("value", np.array(0.5, np.float32)),
               c.const("axes", np.array([1, 3], np.int64))]
    else:
        ins = [x, c.const("pads", np.array([1, 2, 2, 1], np.int64)), "",
               c.const("axes", np.array([2, -1], np.int64))]
    c.node("Pad", ins, ["y"], mode=mode)
    c.out("y")
    if mode == "constant":
        c.ref = lambda x: [np.pad(x, [(0, 0), (1, 0), (0, 0), (2, 1)],
                                  constant_values=0.5)]
    else:
        c.ref = lambda x: [np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)],
                                  mode="reflect")]
    return c


def resize18():
    c = Case("resize18_linear_axes_not_larger", 18,
             "Resize-18 linear, axes [2, 3], sizes [6, 6] with "
             "keep_aspect_ratio_policy not_larger: [1,3,8,12] -> [1,3,4,6]")
    x = c.uniform("x", (1, 3, 8, 12))
    c.node("Resize", [x, "", "", c.const("sizes", np.array([6, 6], np.int64))],
           ["y"], mode="linear", axes=[2, 3],
           keep_aspect_ratio_policy="not_larger",
           coordinate_transformation_mode="half_pixel")
    c.out("y")

    def ref(x):
        scale = min(6 / 8, 6 / 12)  # not_larger: one scale for both axes
        y = x.astype(np.float64)
        for axis, n in ((2, 8), (3, 12)):
            out = int(round(n * scale))
            y = resize_linear_axis(y, axis, out,
                                   lambda i: (i + 0.5) / scale - 0.5)
        return f32(y)
    c.ref = ref
    return c


def resize19():
    c = Case("resize19_half_pixel_symmetric", 19,
             "Resize-19 linear, coordinate_transformation_mode "
             "half_pixel_symmetric, scales [1, 1, 1.6, 0.6]")
    x = c.uniform("x", (1, 2, 5, 7))
    c.node("Resize", [x, "", c.const("scales", np.array(
        [1, 1, 1.6, 0.6], np.float32))], ["y"], mode="linear",
        coordinate_transformation_mode="half_pixel_symmetric")
    c.out("y")

    def ref(x):
        y = x.astype(np.float64)
        for axis, scale in ((2, 1.6), (3, 0.6)):
            n = x.shape[axis]
            out_f = n * scale
            out = int(math.floor(out_f))
            adj = out / out_f
            offset = n / 2 * (1 - adj)
            y = resize_linear_axis(
                y, axis, out,
                lambda i, s=scale, o=offset: o + (i + 0.5) / s - 0.5)
        return f32(y)
    c.ref = ref
    return c


def gelu20(approx):
    c = Case("gelu20_" + approx, 20, "Gelu-20 approximate=" + approx)
    x = c.normal("x", (3, 17), 2.0)
    c.node("Gelu", [x], ["y"], approximate=approx)
    c.out("y")

    def ref(x):
        x = x.astype(np.float64)
        if approx == "none":
            return f32(0.5 * x * (1 + _erf(x / math.sqrt(2))))
        return f32(0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                          (x + 0.044715 * x ** 3))))
    c.ref = ref
    return c


def groupnorm(opset):
    c = Case("groupnorm%d" % opset, opset,
             "GroupNormalization-%d num_groups 3 over 6 channels; scale/bias "
             "per %s" % (opset, "group (opset 18)" if opset == 18
                         else "channel (opset 21), stash_type 1"))
    x = c.normal("x", (2, 6, 4, 4), 2.0)
    n = 3 if opset == 18 else 6
    rng = np.random.RandomState(1)
    attrs = dict(num_groups=3, epsilon=1e-5)
    if opset >= 21:
        attrs["stash_type"] = 1
    c.node("GroupNormalization", [
        x, c.const("scale", (rng.rand(n) + 0.5).astype(np.float32)),
        c.const("bias", rng.standard_normal(n).astype(np.float32))], ["y"],
        **attrs)
    c.out("y")

    def ref(x):
        g = layer_norm(x.astype(np.float64).reshape(2, 3, -1), -1, 1e-5)
        g = g.reshape(x.shape)
        s, b = c.value("scale"), c.value("bias")
        if opset == 18:  # per group: each group's value on its 2 channels
            s, b = np.repeat(s, 2), np.repeat(b, 2)
        return f32(g * s[None, :, None, None] + b[None, :, None, None])
    c.ref = ref
    return c


def layernorm18():
    c = Case("layernorm18", 18,
             "LayerNormalization (op of opset 17, unchanged) imported at opset 18")
    x = c.normal("x", (2, 5, 16), 3.0)
    rng = np.random.RandomState(2)
    c.node("LayerNormalization", [
        x, c.const("scale", (rng.rand(16) + 0.5).astype(np.float32)),
        c.const("bias", rng.standard_normal(16).astype(np.float32))], ["y"],
        axis=-1, epsilon=1e-5)
    c.out("y")
    c.ref = lambda x: f32(layer_norm(x.astype(np.float64), -1, 1e-5) *
                          c.value("scale") + c.value("bias"))
    return c


def layernorm_composite18():
    c = Case("layernorm_composite18", 18,
             "LayerNorm as older exporters write it, with ReduceMean-18 "
             "(axes input): ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, "
             "Mul, Add")
    x = c.normal("x", (2, 5, 16), 3.0)
    rng = np.random.RandomState(3)
    axes = c.const("axes", np.array([-1], np.int64))
    mean = c.node("ReduceMean", [x, axes], ["mean"], keepdims=1)
    d = c.node("Sub", [x, mean], ["d"])
    sq = c.node("Pow", [d, c.const("two", np.array(2.0, np.float32))], ["sq"])
    var = c.node("ReduceMean", [sq, axes], ["var"], keepdims=1)
    ve = c.node("Add", [var, c.const("eps", np.array(1e-5, np.float32))], ["ve"])
    sd = c.node("Sqrt", [ve], ["sd"])
    n = c.node("Div", [d, sd], ["n"])
    s = c.node("Mul", [n, c.const("gamma", (rng.rand(16) + 0.5).astype(
        np.float32))], ["s"])
    c.node("Add", [s, c.const("beta", rng.standard_normal(16).astype(
        np.float32))], ["y"])
    c.out("y")
    c.ref = lambda x: f32(layer_norm(x.astype(np.float64), -1, 1e-5) *
                          c.value("gamma") + c.value("beta"))
    return c


def cast19():
    c = Case("cast19_saturate_float", 19,
             "Cast-19 float -> float with saturate=1 (an attribute for "
             "float8 targets, ignored otherwise)")
    x = c.normal("x", (4, 6), 100.0)
    c.node("Cast", [x], ["y"], to=TensorProto.FLOAT, saturate=1)
    c.out("y")
    c.ref = lambda x: [x.copy()]
    return c


def col2im18(strided):
    if strided:
        c = Case("col2im18_strided_padded", 18,
                 "Col2Im-18 image [5, 5], block [2, 2], strides 2, pads 1")
        # blocks per dim: (5 + 2 - 2) // 2 + 1 = 3 -> L = 9
        x = c.normal("x", (1, 2 * 4, 9))
        attrs = dict(strides=[2, 2], pads=[1, 1, 1, 1], dilations=[1, 1])
    else:
        c = Case("col2im18", 18, "Col2Im-18 image [5, 5], block [2, 2]")
        x = c.normal("x", (1, 2 * 4, 16))
        attrs = {}
    c.node("Col2Im", [x, c.const("image_shape", np.array([5, 5], np.int64)),
                      c.const("block_shape", np.array([2, 2], np.int64))],
           ["y"], **attrs)
    c.out("y")
    stride = 2 if strided else 1
    pad = 1 if strided else 0

    def ref(x):
        # Scatter-add each column back: block (bi, bj) at output position
        # (oi * stride - pad + ki, oj * stride - pad + kj).
        n_side = (5 + 2 * pad - 2) // stride + 1
        y = np.zeros((1, 2, 5 + 2 * pad, 5 + 2 * pad))
        cols = x.astype(np.float64).reshape(1, 2, 2, 2, n_side, n_side)
        for ki in range(2):
            for kj in range(2):
                for oi in range(n_side):
                    for oj in range(n_side):
                        y[:, :, oi * stride + ki, oj * stride + kj] += \
                            cols[:, :, ki, kj, oi, oj]
        return f32(y[:, :, pad:pad + 5, pad:pad + 5])
    c.ref = ref
    return c


def centercroppad18():
    c = Case("centercroppad18", 18,
             "CenterCropPad-18 [10, 7, 3] to shape [8, 9] on axes [0, 1] "
             "(crop one axis, pad the other)")
    x = c.normal("x", (10, 7, 3))
    c.node("CenterCropPad", [x, c.const("shape", np.array([8, 9], np.int64))],
           ["y"], axes=[0, 1])
    c.out("y")

    def ref(x):
        y = np.zeros((8, 9, 3), np.float32)
        y[:, 1:8, :] = x[1:9, :, :]  # crop (10-8)//2 = 1; pad (9-7)//2 = 1
        return [y]
    c.ref = ref
    return c


def rmsnorm23():
    c = Case("rmsnormalization23", 23, "RMSNormalization-23, axis -1")
    x = c.normal("x", (2, 5, 16), 2.0)
    rng = np.random.RandomState(4)
    c.node("RMSNormalization", [
        x, c.const("scale", (rng.rand(16) + 0.5).astype(np.float32))], ["y"],
        axis=-1, epsilon=1e-5)
    c.out("y")

    def ref(x):
        x = x.astype(np.float64)
        return f32(x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) *
                   c.value("scale"))
    c.ref = ref
    return c


def rotary23():
    c = Case("rotaryembedding23", 23,
             "RotaryEmbedding-23 on [B, H, S, D] = [1, 2, 6, 8], cos/sin "
             "caches [16, 4], position_ids an initializer")
    x = c.normal("x", (1, 2, 6, 8))
    inv = 1.0 / (10000 ** (np.arange(0, 8, 2) / 8.0))
    ang = np.outer(np.arange(16), inv)
    c.node("RotaryEmbedding", [
        x, c.const("cos_cache", np.cos(ang).astype(np.float32)),
        c.const("sin_cache", np.sin(ang).astype(np.float32)),
        c.const("position_ids", np.array([[2, 3, 4, 5, 6, 7]], np.int64))],
        ["y"], interleaved=0)
    c.out("y")

    def ref(x):
        x = x.astype(np.float64)
        pos = c.value("position_ids")[0]
        cos = c.value("cos_cache")[pos][None, None]  # [1, 1, S, D/2]
        sin = c.value("sin_cache")[pos][None, None]
        x1, x2 = x[..., :4], x[..., 4:]
        return f32(np.concatenate([x1 * cos - x2 * sin,
                                   x2 * cos + x1 * sin], -1))
    c.ref = ref
    return c


def attention23(kind):
    notes = {"plain": "no mask", "causal": "is_causal=1",
             "mask": "a float additive attn_mask input [1, 1, 6, 6]"}
    c = Case("attention23_" + kind, 23,
             "Attention-23 with 4-D q, k, v [B, H, S, D] = [2, 4, 6, 8], "
             + notes[kind])
    q = c.normal("q", (2, 4, 6, 8))
    k = c.normal("k", (2, 4, 6, 8))
    v = c.normal("v", (2, 4, 6, 8))
    ins, attrs = [q, k, v], {}
    if kind == "causal":
        attrs["is_causal"] = 1
    elif kind == "mask":
        m = np.where(c.rng.rand(1, 1, 6, 6) < 0.3, -10000.0, 0.0)
        m[..., 0] = 0.0  # every row attends somewhere
        ins.append(c.feed("attn_mask", m.astype(np.float32)))
    c.node("Attention", ins, ["y"], **attrs)
    c.out("y")

    def ref(q, k, v, mask=None):
        q, k, v = (a.astype(np.float64) for a in (q, k, v))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(8)
        if kind == "causal":
            s = s + np.triu(np.full((6, 6), -np.inf), 1)
        if mask is not None:
            s = s + mask
        return f32(softmax(s) @ v)
    c.ref = ref
    return c


def averagepool19():
    c = Case("averagepool19_dilations", 19,
             "AveragePool-19 kernel 3x3, dilations 2, pads 1")
    x = c.normal("x", (1, 2, 9, 9))
    c.node("AveragePool", [x], ["y"], kernel_shape=[3, 3], dilations=[2, 2],
           pads=[1, 1, 1, 1], strides=[1, 1])
    c.out("y")

    def ref(x):
        # count_include_pad 0: the mean of the taps inside the image.
        out = (9 + 2 - (2 * 2 + 1)) + 1
        y = np.zeros((1, 2, out, out))
        for i in range(out):
            for j in range(out):
                taps = [(i - 1 + 2 * a, j - 1 + 2 * b)
                        for a in range(3) for b in range(3)]
                taps = [(r, s) for r, s in taps if 0 <= r < 9 and 0 <= s < 9]
                y[:, :, i, j] = np.mean([x[:, :, r, s] for r, s in taps], 0)
        return f32(y)
    c.ref = ref
    return c


def bitwiseand18():
    c = Case("bitwiseand18_int32", 18, "BitwiseAnd-18 on int32, broadcast")
    a = c.feed("a", c.rng.randint(-2**31, 2**31 - 1, (3, 5)).astype(np.int32))
    b = c.feed("b", c.rng.randint(-2**31, 2**31 - 1, (5,)).astype(np.int32))
    c.node("BitwiseAnd", [a, b], ["y"])
    c.out("y", TensorProto.INT32)
    c.ref = lambda a, b: [np.bitwise_and(a, b)]
    return c


def dft20():
    c = Case("dft20_axis_input", 20,
             "DFT-20 of a real signal [2, 8, 1] with axis as an input (1), "
             "onesided 0")
    x = c.normal("x", (2, 8, 1))
    c.node("DFT", [x, "", c.const("axis", np.array(1, np.int64))], ["y"],
           onesided=0, inverse=0)
    c.out("y")

    def ref(x):
        f = np.fft.fft(x[..., 0].astype(np.float64), axis=1)
        return f32(np.stack([f.real, f.imag], -1))
    c.ref = ref
    return c


CASES = [
    lambda: reduce_case("reducemean18_axes_keepdims1", "ReduceMean", [1, 3], 1),
    lambda: reduce_case("reducemean18_axes_keepdims0", "ReduceMean", [-1], 0),
    lambda: reduce_case("reducesum18_axes", "ReduceSum", [0, 2], 1),
    lambda: reduce_case("reducemax18_axes", "ReduceMax", [1], 0),
    split18,
    lambda: pad18("constant"),
    lambda: pad18("reflect"),
    resize18,
    resize19,
    lambda: gelu20("none"),
    lambda: gelu20("tanh"),
    lambda: groupnorm(18),
    lambda: groupnorm(21),
    layernorm18,
    layernorm_composite18,
    cast19,
    lambda: col2im18(False),
    lambda: col2im18(True),
    centercroppad18,
    rmsnorm23,
    rotary23,
    lambda: attention23("plain"),
    lambda: attention23("causal"),
    lambda: attention23("mask"),
    averagepool19,
    bitwiseand18,
    dft20,
]


def save_manifest(outdir, entries):
    p = os.path.join(outdir, MANIFEST)
    manifest = {"models": []}
    if os.path.exists(p):
        with open(p) as f:
            manifest = json.load(f)
    names = {e["name"] for e in entries}
    manifest["models"] = [e for e in manifest["models"]
                          if e["name"] not in names] + entries
    with open(p + ".tmp", "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(p + ".tmp", p)


def write_case(c, outdir):
    m = c.model()
    path = os.path.join(outdir, c.name + ".onnx")
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    d = os.path.join(outdir, c.name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.endswith(".npy"):
            os.remove(os.path.join(d, f))
    for k, (_, a) in enumerate(c.inputs):
        np.save(os.path.join(d, "input_%d.npy" % k), a)
    refs = c.ref(*[a for _, a in c.inputs])
    assert len(refs) == len(c.outputs), c.name
    for k, r in enumerate(refs):
        np.save(os.path.join(d, "numpy_output_%d.npy" % k), np.asarray(r))
    return {
        "name": c.name, "file": c.name + ".onnx", "exporter": "onnx.helper",
        "opset": c.opset, "ir_version": m.ir_version,
        "nodes": len(m.graph.node),
        "inputs": [{"name": n, "dtype": str(a.dtype), "shape": list(a.shape)}
                   for n, a in c.inputs],
        "outputs": [o.name for o in m.graph.output],
        "dynamic_axes": {}, "file_bytes": os.path.getsize(path),
        "note": c.note,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--list", action="store_true", help="print names, exit")
    ap.add_argument("--models", default="",
                    help="comma-separated names (default: all)")
    ap.add_argument("--all", action="store_true",
                    help="also write the DROPPED cases (to try a newer ORT)")
    a = ap.parse_args()
    cases = [f() for f in CASES]
    if a.list:
        for c in cases:
            print(c.name)
        return 0
    if a.models:
        wanted = [m for m in a.models.split(",") if m]
        known = {c.name: c for c in cases}
        unknown = [m for m in wanted if m not in known]
        if unknown:
            ap.error("unknown cases: %s (see --list)" % ",".join(unknown))
        cases = [known[m] for m in wanted]
    if not a.outdir:
        ap.error("OUTDIR is required")
    os.makedirs(a.outdir, exist_ok=True)
    entries = []
    for c in cases:
        if c.name in DROPPED and not a.all:
            p = os.path.join(a.outdir, c.name + ".onnx")
            if os.path.exists(p):
                os.remove(p)
            entries.append({"name": c.name, "exporter": "onnx.helper",
                            "opset": c.opset, "note": c.note,
                            "dropped": DROPPED[c.name]})
            print("%-36s dropped: %s" % (c.name, DROPPED[c.name]))
            continue
        e = write_case(c, a.outdir)
        entries.append(e)
        print("%-36s ok  opset %d  ir %d  %d nodes" % (
            c.name, c.opset, e["ir_version"], e["nodes"]))
    save_manifest(a.outdir, entries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
