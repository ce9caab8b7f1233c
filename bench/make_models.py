#!/usr/bin/python3
"""Writes the benchmark models as ONNX files with random weights (fixed seed).

  /usr/bin/python3 bench/make_models.py OUT_DIR

mlp.onnx          batch 64, 1024 -> 4096 -> 4096 -> 1000, Gemm + Relu
resnet.onnx       Nx3x112x112 (N symbolic: 1 unless bound, or batched),
                  a ResNet-style CNN: stem conv+BN+Relu,
                  max pool, 4 stages of 2 basic blocks (conv+BN+Relu,
                  conv+BN, identity or 1x1 projection, Add, Relu),
                  global average pool, Gemm classifier
transformer.onnx  1x128x256 tokens through 4 encoder layers: LayerNorm,
                  multi-head self-attention (4 heads: MatMul, Reshape,
                  Transpose, Softmax), residual Adds, GELU MLP (Erf form)

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


def mlp():
    b = Builder()
    x = "input"
    dims = [1024, 4096, 4096, 1000]
    for i in range(3):
        w = b.const(rand(dims[i], dims[i + 1]).T.copy())  # [out, in]
        bias = b.const(rand(dims[i + 1], scale=0.1))
        x = b.op("Gemm", [x, w, bias], transB=1)
        if i < 2:
            x = b.op("Relu", [x])
    return b.model([64, 1024], x, [64, 1000], "mlp")


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


def resnet():
    b = Builder()
    x = conv_bn(b, "input", 3, 64, 7, 2, True)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate([64, 128, 256, 512]):
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
    w = b.const(rand(1000, 512))
    bias = b.const(rand(1000, scale=0.1))
    x = b.op("Gemm", [x, w, bias], transB=1)
    # The batch dim is symbolic, as frameworks export it: glintd binds it to
    # 1 by default, or to max_batch_size with dynamic batching.
    return b.model(["N", 3, 112, 112], x, ["N", 1000], "resnet")


def transformer():
    b = Builder()
    seq, d, heads, ff, layers = 128, 256, 4, 1024, 4
    hd = d // heads
    x = "input"

    def layer_norm(x):
        g = b.const((1 + 0.1 * RNG.standard_normal(d)).astype(np.float32))
        be = b.const((0.1 * RNG.standard_normal(d)).astype(np.float32))
        return b.op("LayerNormalization", [x, g, be], axis=-1, epsilon=1e-5)

    def linear(x, n_in, n_out):
        y = b.op("MatMul", [x, b.const(rand(n_in, n_out))])
        return b.op("Add", [y, b.const(rand(n_out, scale=0.1))])

    split_shape = b.const(np.array([1, seq, heads, hd], np.int64), "shape")
    merge_shape = b.const(np.array([1, seq, d], np.int64), "shape")
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
    return b.model([1, seq, d], x, [1, seq, d], "transformer")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_models.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, make in [("mlp", mlp), ("resnet", resnet),
                       ("transformer", transformer)]:
        onnx.save(make(), f"{out}/{name}.onnx")
        print(f"wrote {out}/{name}.onnx")


if __name__ == "__main__":
    main()
