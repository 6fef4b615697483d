#!/usr/bin/python3
"""Writes synthetic ONNX graphs for the fuser benchmark (scripts/bench_fuser.sh).

    gen_graphs.py KIND NODES OUT.onnx      KIND: chain | ladder | diamond

Tensors are tiny ([1,16]) so the time measured is the fuser's, not the data's.
- chain:   x -> Relu -> Neg -> Sigmoid -> ...             (one long elementwise chain)
- ladder:  residual blocks  y = Relu(Add(x, Mul(Relu(x), c)))  (fork + join every 4 nodes)
- diamond: x forks into 8 branches of Relu->Neg, joined by Sum, repeated (width-8 diamonds)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPE = [1, 16]


def chain(n):
    ops, nodes, prev = ["Relu", "Neg", "Sigmoid"], [], "x"
    for i in range(n):
        nodes.append(helper.make_node(ops[i % 3], [prev], [f"v{i}"]))
        prev = f"v{i}"
    return nodes, prev, []


def ladder(n):
    nodes, prev = [], "x"
    c = numpy_helper.from_array(np.full(SHAPE, 0.5, np.float32), "c")
    for b in range(max(1, n // 4)):
        r, m, a, y = (f"b{b}_{s}" for s in ("relu", "mul", "add", "out"))
        nodes += [helper.make_node("Relu", [prev], [r]), helper.make_node("Mul", [r, "c"], [m]),
                  helper.make_node("Add", [prev, m], [a]), helper.make_node("Relu", [a], [y])]
        prev = y
    return nodes, prev, [c]


def diamond(n, width=8):
    nodes, prev = [], "x"
    per_diamond = 2 * width + 1
    for d in range(max(1, n // per_diamond)):
        ends = []
        for w in range(width):
            r, g = f"d{d}_{w}_relu", f"d{d}_{w}_neg"
            nodes += [helper.make_node("Relu", [prev], [r]), helper.make_node("Neg", [r], [g])]
            ends.append(g)
        nodes.append(helper.make_node("Sum", ends, [f"d{d}_sum"]))
        prev = f"d{d}_sum"
    return nodes, prev, []


def main():
    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    nodes, last, initializers = {"chain": chain, "ladder": ladder, "diamond": diamond}[kind](n)
    graph = helper.make_graph(nodes, f"{kind}_{n}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info(last, TensorProto.FLOAT, SHAPE)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, out)


if __name__ == "__main__":
    main()
