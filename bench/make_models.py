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


def main():
    args = sys.argv[1:]
    do_sweep = "--sweep" in args
    args = [a for a in args if a != "--sweep"]
    if len(args) != 1:
        sys.exit("usage: make_models.py [--sweep] OUT_DIR")
    out = args[0]
    os.makedirs(out, exist_ok=True)
    models = sweep() if do_sweep else [("mlp", mlp), ("resnet", resnet),
                                       ("transformer", transformer)]
    for name, make in models:
        onnx.save(make(), f"{out}/{name}.onnx")
        print(f"wrote {out}/{name}.onnx")


if __name__ == "__main__":
    main()
