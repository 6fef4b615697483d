"""ONNX Runtime's reference with onnx-fuse's documented NaN semantics.

onnx-fuse's Relu, Clip and HardSigmoid turn NaN into a number, as oneDNN's
max-based kernels do (docs/correctness.md, NaN): Relu and HardSigmoid give
0, Clip its lower bound (the lowest float without one), clipped by its upper
one. ONNX Runtime keeps NaN there. So that a NaN reaching one of those ops
is compared, not excused, the reference ORT runs gets each such node's
output replaced where its input is NaN:

    Y = Op(X, ...)  ->  Y = Where(IsNaN(X), value at NaN, Op(X, ...))

Every other op, and every value that is not NaN, is ORT's own. Nodes of an
input type other than float16/32/64 are left alone (IsNaN takes floats).
"""
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

CLAMPS = ("Relu", "Clip", "HardSigmoid")
FLOATS = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
          onnx.TensorProto.FLOAT16: np.float16}


def _graphs(graph):
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graphs(attr.g)
            for g in attr.graphs:
                yield from _graphs(g)


def _elem_types(graph, known):
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        if vi.type.HasField("tensor_type"):
            known[vi.name] = vi.type.tensor_type.elem_type
    for init in graph.initializer:
        known[init.name] = init.data_type


def _constant(name, value, dtype):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(value, dtype), name))


def _rewrite(graph, types, fresh):
    nodes = []
    for node in graph.node:
        dtype = FLOATS.get(types.get(node.input[0] if node.input else "", 0))
        if node.op_type not in CLAMPS or node.domain not in ("", "ai.onnx") or dtype is None:
            nodes.append(node)
            continue
        x, y = node.input[0], node.output[0]
        raw, isnan, at_nan = fresh("raw"), fresh("isnan"), fresh("at_nan")
        node.output[0] = raw
        nodes.append(node)
        nodes.append(helper.make_node("IsNaN", [x], [isnan]))
        if node.op_type == "Clip":  # Clip(low, min, max): low is min, or the lowest float
            bounds = list(node.input[1:])
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}  # Clip-6's min and max
            low = fresh("low")
            if bounds and bounds[0]:
                nodes.append(helper.make_node("Identity", [bounds[0]], [low]))
            else:
                nodes.append(_constant(low, attrs.get("min", float(np.finfo(dtype).min)), dtype))
            inputs = [low] + bounds
            while inputs[-1] == "":
                inputs.pop()
            nodes.append(helper.make_node("Clip", inputs, [at_nan], **attrs))
        else:
            nodes.append(_constant(at_nan, 0, dtype))
        nodes.append(helper.make_node("Where", [isnan, at_nan, raw], [y]))
    del graph.node[:]
    graph.node.extend(nodes)


def with_onnx_fuse_nan(path):
    """The model at `path` with onnx-fuse's NaN semantics (module doc), saved
    beside it as NAME.nan.onnx; `path` itself when it has no such node."""
    model = onnx.load(path)
    if not any(n.op_type in CLAMPS for g in _graphs(model.graph) for n in g.node):
        return path
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 -- types from the declared values only
        inferred = model
    types = {}
    for g in _graphs(inferred.graph):
        _elem_types(g, types)
    count = [0]

    def fresh(what):
        count[0] += 1
        return "__onnxfuse_nan_%s_%d" % (what, count[0])

    for g in _graphs(model.graph):
        _rewrite(g, types, fresh)
    out = os.path.splitext(path)[0] + ".nan.onnx"
    onnx.save(model, out)
    return out
