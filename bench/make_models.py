#!/usr/bin/python3
"""Writes the benchmark models as ONNX files with random weights (fixed seed).

  /usr/bin/python3 bench/make_models.py OUT_DIR
  /usr/bin/python3 bench/make_models.py --sweep OUT_DIR


mlp.onnx          batch 64, 1024 -> 4096 -> 4096 -> 1000, Gemm + Relu
resnet.onnx       Nx3x112x112 (N symbolic: 1 unless bound, or batched),
                  a ResNet-style CNN: stem conv+BN+Relu,
                  max pool, 4 stages of 2 basic blocks (conv+BN+Relu,
                  conv+BN, identity or 1x1 projection, Add, Relu),
                  global average pool, Gemm classifier
transformer.onnx  1x128x256 tokens through 4 encoder layers: LayerNorm,
                  multi-head self-attention (4 heads: MatMul, Reshape,
                  Transpose, Softmax), residual Adds, GELU MLP (Erf form)
mlp_int8.onnx     the MLP in QDQ form, as quantization tools write it:
resnet_int8.onnx  the ResNet-style CNN (BatchNormalization folded) likewise.
                  Weights int8 per output channel, symmetric; biases int32
                  at scale s_x * s_w; activations uint8 with scales and zero
                  points calibrated (min/max) on a random batch; each
                  consumer has its own DequantizeLinear; a Relu is the
                  uint8 QuantizeLinear with zero point 0 that follows its
                  producer (which clamps at 0), as onnxruntime's quantizer
                  leaves it. The classifier's output stays float32.

--sweep writes instead the models the benches are not tuned for (names
say the shape): CNNs (the ResNet-style one at 32-224 px, widths 16-64,
batch 1/8/64), MLPs (widths 256-4096, depths 2-8, batch 1/8/64) and
transformer encoders (sequence 32-512, width 128-512, batch 1/8), 24
models of 1-64 MB each (about 400 MB in all).

Every input is float32 named "input"; the output is "output". Models are
exported at opset 17 the way frameworks export them (BatchNormalization
nodes kept, MatMul + Add rather than fused forms) so that graph
optimisations are exercised.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
RNG = np.random.default_rng(20240611)


class Builder:
    def __init__(self):
        self.nodes = []
        self.inits = []
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def const(self, array, prefix="w"):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out],
                                           name=out + "_node", **attrs))
        return out

    def model(self, inp_shape, out, out_shape, graph_name):
        self.nodes[-1].output[0] = "output"
        for node in self.nodes:
            for i, v in enumerate(node.input):
                if v == out:
                    node.input[i] = "output"
        graph = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                           inp_shape)],
            [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                           out_shape)],
            self.inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def rand(*shape, scale=None):
    fan_in = np.prod(shape[1:]) if len(shape) > 1 else shape[0]
    s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
    return (RNG.standard_normal(shape) * s).astype(np.float32)


def mlp(batch=64, dims=(1024, 4096, 4096, 1000)):
    b = Builder()
    x = "input"
    layers = len(dims) - 1
    for i in range(layers):
        w = b.const(rand(dims[i], dims[i + 1]).T.copy())  # [out, in]
        bias = b.const(rand(dims[i + 1], scale=0.1))
        x = b.op("Gemm", [x, w, bias], transB=1)
        if i < layers - 1:
            x = b.op("Relu", [x])
    return b.model([batch, dims[0]], x, [batch, dims[-1]], "mlp")


def conv_bn(b, x, cin, cout, k, stride, relu):
    w = b.const(rand(cout, cin, k, k))
    x = b.op("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
             pads=[k // 2] * 4)
    scale = b.const((1 + 0.1 * RNG.standard_normal(cout)).astype(np.float32))
    shift = b.const((0.1 * RNG.standard_normal(cout)).astype(np.float32))
    mean = b.const((0.1 * RNG.standard_normal(cout)).astype(np.float32))
    var = b.const((1 + 0.1 * RNG.random(cout)).astype(np.float32))
    x = b.op("BatchNormalization", [x, scale, shift, mean, var])
    return b.op("Relu", [x]) if relu else x


def resnet(px=112, width=64, batch="N"):
    b = Builder()
    x = conv_bn(b, "input", 3, width, 7, 2, True)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1])
    cin = width
    for stage, cout in enumerate([width, 2 * width, 4 * width, 8 * width]):
        for block in range(2):
            stride = 2 if block == 0 and stage > 0 else 1
            y = conv_bn(b, x, cin, cout, 3, stride, True)
            y = conv_bn(b, y, cout, cout, 3, 1, False)
            skip = x if stride == 1 and cin == cout else conv_bn(
                b, x, cin, cout, 1, stride, False)
            x = b.op("Relu", [b.op("Add", [y, skip])])
            cin = cout
    x = b.op("GlobalAveragePool", [x])
    x = b.op("Flatten", [x])
    w = b.const(rand(1000, cin))
    bias = b.const(rand(1000, scale=0.1))
    x = b.op("Gemm", [x, w, bias], transB=1)
    # The batch dim is symbolic, as frameworks export it: glintd binds it to
    # 1 by default, or to max_batch_size with dynamic batching.
    return b.model([batch, 3, px, px], x, [batch, 1000], "resnet")


def transformer(seq=128, d=256, heads=4, layers=4, batch=1):
    b = Builder()
    ff = 4 * d
    hd = d // heads
    x = "input"

    def layer_norm(x):
        g = b.const((1 + 0.1 * RNG.standard_normal(d)).astype(np.float32))
        be = b.const((0.1 * RNG.standard_normal(d)).astype(np.float32))
        return b.op("LayerNormalization", [x, g, be], axis=-1, epsilon=1e-5)

    def linear(x, n_in, n_out):
        y = b.op("MatMul", [x, b.const(rand(n_in, n_out))])
        return b.op("Add", [y, b.const(rand(n_out, scale=0.1))])

    split_shape = b.const(np.array([batch, seq, heads, hd], np.int64),
                          "shape")
    merge_shape = b.const(np.array([batch, seq, d], np.int64), "shape")
    scale = b.const(np.array(1.0 / np.sqrt(hd), np.float32), "scale")
    half = b.const(np.array(0.5, np.float32), "half")
    one = b.const(np.array(1.0, np.float32), "one")
    rsqrt2 = b.const(np.array(1.0 / np.sqrt(2.0), np.float32), "rsqrt2")
    for _ in range(layers):
        h = layer_norm(x)
        q, k, v = (linear(h, d, d) for _ in range(3))
        q = b.op("Transpose", [b.op("Reshape", [q, split_shape])],
                 perm=[0, 2, 1, 3])
        k = b.op("Transpose", [b.op("Reshape", [k, split_shape])],
                 perm=[0, 2, 3, 1])
        v = b.op("Transpose", [b.op("Reshape", [v, split_shape])],
                 perm=[0, 2, 1, 3])
        att = b.op("Softmax", [b.op("Mul", [b.op("MatMul", [q, k]), scale])],
                   axis=-1)
        o = b.op("Transpose", [b.op("MatMul", [att, v])], perm=[0, 2, 1, 3])
        o = linear(b.op("Reshape", [o, merge_shape]), d, d)
        x = b.op("Add", [x, o])
        h = linear(layer_norm(x), d, ff)
        # GELU, as exporters write it: 0.5 * h * (1 + erf(h / sqrt(2))).
        g = b.op("Erf", [b.op("Mul", [h, rsqrt2])])
        h = b.op("Mul", [b.op("Mul", [h, half]), b.op("Add", [g, one])])
        x = b.op("Add", [x, linear(h, ff, d)])
    x = layer_norm(x)
    return b.model([batch, seq, d], x, [batch, seq, d], "transformer")


def sweep():
    """(name, maker) of the sweep's models: shapes the benches never saw."""
    models = []
    # CNNs: input size, width (the first stage's channels), batch.
    for px, width, batch in [(32, 16, 1), (32, 64, 64), (64, 32, 1),
                             (64, 64, 8), (112, 16, 1), (112, 32, 8),
                             (160, 48, 1), (224, 64, 1), (224, 16, 8)]:
        models.append((f"cnn_{px}px_w{width}_b{batch}",
                       lambda px=px, width=width, batch=batch:
                       resnet(px, width, batch)))
    # MLPs: widths (input, hidden..., output), batch.
    for dims, batch in [((256, 512, 10), 1), ((784, 256, 256, 256, 10), 64),
                        ((1024, 1024, 1024, 1024, 1000), 1),
                        ((2048, 2048, 2048, 1000), 8),
                        ((512,) * 9, 64), ((4096, 4096, 1000), 8),
                        ((1024, 4096, 1024), 64)]:
        depth = len(dims) - 1
        models.append((f"mlp_w{max(dims)}_d{depth}_b{batch}",
                       lambda dims=dims, batch=batch: mlp(batch, dims)))
    # Transformer encoders: sequence, width, heads, layers, batch.
    for seq, d, heads, layers, batch in [(32, 128, 2, 2, 1),
                                         (64, 256, 4, 2, 8),
                                         (128, 512, 8, 2, 1),
                                         (256, 256, 4, 2, 1),
                                         (256, 128, 2, 2, 8),
                                         (384, 384, 6, 2, 1),
                                         (512, 256, 4, 2, 1),
                                         (512, 512, 8, 1, 1)]:
        models.append((f"tf_s{seq}_d{d}_l{layers}_b{batch}",
                       lambda seq=seq, d=d, heads=heads, layers=layers,
                       batch=batch: transformer(seq, d, heads, layers,
                                                batch)))
    return models


# ---------------------------------------------------------------- int8 QDQ

def act_params(t):
    """uint8 scale and zero point covering t's range (and 0)."""
    lo, hi = min(0.0, float(t.min())), max(0.0, float(t.max()))
    scale = max(hi - lo, 1e-8) / 255.0
    zero = int(np.clip(np.rint(-lo / scale), 0, 255))
    return np.float32(scale), np.uint8(zero)


def quant_weights(w, axis=0):
    """Per-channel (along axis) symmetric int8 weights and their scales."""
    red = tuple(i for i in range(w.ndim) if i != axis)
    amax = np.maximum(np.abs(w).max(axis=red), 1e-8)
    scale = (amax / 127.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


class QdqBuilder(Builder):
    """Builder with QDQ helpers. An activation is (value, scale, zero): the
    uint8 value's name and the names of its parameters; self.scale maps the
    value to its float scale."""

    def __init__(self):
        super().__init__()
        self.scale = {}

    def quantize(self, x, scale, zero):
        s = self.const(np.array(scale, np.float32), "s")
        z = self.const(np.array(zero, np.uint8), "z")
        y = self.op("QuantizeLinear", [x, s, z])
        self.scale[y] = np.float32(scale)
        return (y, s, z)

    def requantize(self, x, x_val, relu):
        """QuantizeLinear calibrated on x_val; after a Relu: zero point 0."""
        scale, zero = act_params(x_val)
        if relu:
            scale = np.float32(max(float(x_val.max()), 1e-8) / 255.0)
            zero = np.uint8(0)
        return self.quantize(x, scale, zero)

    def dq(self, act):
        return self.op("DequantizeLinear", list(act))

    def dq_weights(self, w, axis):
        q, scale = quant_weights(w, axis)
        qn, sn = self.const(q, "wq"), self.const(scale, "ws")
        return self.op("DequantizeLinear", [qn, sn], axis=axis), scale

    def dq_bias(self, b, x_scale, w_scale):
        bs = (np.float32(x_scale) * w_scale).astype(np.float32)
        bq = np.rint(b / bs).astype(np.int32)
        return self.op("DequantizeLinear",
                       [self.const(bq, "bq"), self.const(bs, "bs")], axis=0)


def np_conv(x, w, b, stride, pad):
    k = w.shape[2]
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    win = win[:, :, ::stride, ::stride]
    return np.einsum("nchwij,mcij->nmhw", win, w, optimize=True) + \
        b[None, :, None, None]


def np_maxpool(x):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    return win[:, :, ::2, ::2].max(axis=(4, 5))


def calibration_batch(shape):
    # The benches feed values in [-0.5, 0.5); calibrate on that range.
    return RNG.uniform(-0.5, 0.5, size=shape).astype(np.float32)


def folded_conv(cin, cout, k):
    """Conv weights and bias with a BatchNormalization folded in."""
    w = rand(cout, cin, k, k)
    scale = 1 + 0.1 * RNG.standard_normal(cout)
    shift = 0.1 * RNG.standard_normal(cout)
    mean = 0.1 * RNG.standard_normal(cout)
    var = 1 + 0.1 * RNG.random(cout)
    s = scale / np.sqrt(var + 1e-5)
    return ((w * s[:, None, None, None]).astype(np.float32),
            ((0 - mean) * s + shift).astype(np.float32))


def resnet_int8():
    b = QdqBuilder()
    v = calibration_batch((4, 3, 112, 112))
    x = b.quantize("input", *act_params(v))

    def conv(x, x_val, cin, cout, k, stride, relu):
        """QDQ Conv (quantized output); returns the act and its values."""
        w, bias = folded_conv(cin, cout, k)
        wd, ws = b.dq_weights(w, 0)
        bd = b.dq_bias(bias, b.scale[x[0]], ws)
        y = b.op("Conv", [b.dq(x), wd, bd], kernel_shape=[k, k],
                 strides=[stride, stride], pads=[k // 2] * 4)
        y_val = np_conv(x_val, w, bias, stride, k // 2)
        if relu:
            y_val = np.maximum(y_val, 0)
        return b.requantize(y, y_val, relu), y_val

    x, v = conv(x, v, 3, 64, 7, 2, True)
    # MaxPool between a DequantizeLinear and a QuantizeLinear with its
    # input's parameters (its maximum is exactly representable).
    x = b.quantize(b.op("MaxPool", [b.dq(x)], kernel_shape=[3, 3],
                        strides=[2, 2], pads=[1, 1, 1, 1]),
                   b.scale[x[0]], np.uint8(0))
    v = np_maxpool(v)
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
        for block in range(2):
            stride = 2 if block == 0 and stage > 0 else 1
            a1, v1 = conv(x, v, cin, cout, 3, stride, True)
            a2, v2 = conv(a1, v1, cout, cout, 3, 1, False)
            if stride == 1 and cin == cout:
                skip, vs = x, v
            else:
                skip, vs = conv(x, v, cin, cout, 1, stride, False)
            add = b.op("Add", [b.dq(a2), b.dq(skip)])
            v = np.maximum(v2 + vs, 0)
            x = b.requantize(add, v, True)  # The block's Relu.
            cin = cout
    f = b.op("Flatten", [b.op("GlobalAveragePool", [b.dq(x)])])
    v = v.mean(axis=(2, 3))
    fq = b.requantize(f, v, True)
    w = rand(1000, 512)
    bias = rand(1000, scale=0.1)
    wd, ws = b.dq_weights(w, 0)
    bd = b.dq_bias(bias, b.scale[fq[0]], ws)
    y = b.op("Gemm", [b.dq(fq), wd, bd], transB=1)
    return b.model(["N", 3, 112, 112], y, ["N", 1000], "resnet_int8")


def mlp_int8():
    b = QdqBuilder()
    dims = [1024, 4096, 4096, 1000]
    v = calibration_batch((64, 1024))
    x = b.quantize("input", *act_params(v))
    for i in range(3):
        w = rand(dims[i], dims[i + 1]).T.copy()  # [out, in]
        bias = rand(dims[i + 1], scale=0.1)
        wd, ws = b.dq_weights(w, 0)
        bd = b.dq_bias(bias, b.scale[x[0]], ws)
        y = b.op("Gemm", [b.dq(x), wd, bd], transB=1)
        v = v @ w.T + bias
        if i < 2:
            v = np.maximum(v, 0)
            x = b.requantize(y, v, True)  # The Relu: zero point 0.
    return b.model([64, 1024], y, [64, 1000], "mlp_int8")


def main():
    args = sys.argv[1:]
    do_sweep = "--sweep" in args
    args = [a for a in args if a != "--sweep"]
    if len(args) != 1:
        sys.exit("usage: make_models.py [--sweep] OUT_DIR")
    out = args[0]
    os.makedirs(out, exist_ok=True)
    models = sweep() if do_sweep else [
        ("mlp", mlp), ("resnet", resnet), ("transformer", transformer),
        ("mlp_int8", mlp_int8), ("resnet_int8", resnet_int8)]
    for name, make in models:
        onnx.save(make(), f"{out}/{name}.onnx")
        print(f"wrote {out}/{name}.onnx")


if __name__ == "__main__":
    main()
