#!/usr/bin/python3
"""Writes Glint's example network: a small MLP classifier as ONNX.

    /usr/bin/python3 client/example/make_example.py --out /tmp/glint_example

writes, under --out:
  mlp.onnx            x: float32[2, 16] -> Gemm(32) -> Relu -> MatMul(10)
                      -> Add -> Softmax -> probs: float32[2, 10]
  input_x.npy         the input batch
  expected_probs.npy  the output computed with numpy, for check_output.py

Weights and input come from a fixed seed, so every run writes the same
files. Needs Debian's python3-onnx and python3-numpy (hence /usr/bin/python3).
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 20240611
BATCH, IN, HIDDEN, OUT = 2, 16, 32, 10


def make_weights():
    rng = np.random.default_rng(SEED)
    w1 = rng.standard_normal((HIDDEN, IN), dtype=np.float32) * 0.5
    b1 = rng.standard_normal(HIDDEN, dtype=np.float32) * 0.1
    w2 = rng.standard_normal((HIDDEN, OUT), dtype=np.float32) * 0.5
    b2 = rng.standard_normal(OUT, dtype=np.float32) * 0.1
    x = rng.standard_normal((BATCH, IN), dtype=np.float32)
    return w1, b1, w2, b2, x


def make_model(w1, b1, w2, b2):
    nodes = [
        # Gemm with transB=1: W1 is stored [out, in] as in PyTorch's Linear.
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1",
                         transB=1),
        helper.make_node("Relu", ["h"], ["h_relu"], name="relu1"),
        helper.make_node("MatMul", ["h_relu", "w2"], ["logits_nobias"],
                         name="fc2"),
        helper.make_node("Add", ["logits_nobias", "b2"], ["logits"],
                         name="fc2_bias"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax",
                         axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "glint_example_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, IN])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT,
                                       [BATCH, OUT])],
        initializer=[
            numpy_helper.from_array(w1, "w1"),
            numpy_helper.from_array(b1, "b1"),
            numpy_helper.from_array(w2, "w2"),
            numpy_helper.from_array(b2, "b2"),
        ],
    )
    model = helper.make_model(
        graph, producer_name="glint-example",
        opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


def reference(w1, b1, w2, b2, x):
    h = np.maximum(x @ w1.T + b1, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    w1, b1, w2, b2, x = make_weights()
    model = make_model(w1, b1, w2, b2)
    onnx.save(model, os.path.join(args.out, "mlp.onnx"))
    np.save(os.path.join(args.out, "input_x.npy"), x)
    np.save(os.path.join(args.out, "expected_probs.npy"),
            reference(w1, b1, w2, b2, x))
    print(f"wrote mlp.onnx, input_x.npy, expected_probs.npy to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
