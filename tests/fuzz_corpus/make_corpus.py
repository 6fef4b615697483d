#!/usr/bin/python3
"""Seed corpora for the libFuzzer targets (fuzz/): tiny valid inputs, one file each.

    /usr/bin/python3 tests/fuzz_corpus/make_corpus.py      # rewrites tests/fuzz_corpus/<target>/

fuzz_model_loader/: small models (a few dozen bytes of weights at most) that
reach every fuser and pattern: Conv+BN+Relu chains, a residual block, SE,
Gelu, LayerNorm, MatMul+Add, HardSwish/SiLU tails, Clip with Constant bounds,
If/Loop subgraphs, an unsorted graph, symbolic dims, opsets 7 and 17, a
model-local function, raw_data and typed-field weights.
fuzz_pattern_parser/: the built-in patterns/*.onnxtxt, one function per file,
plus a few small files with directives.
Deterministic: the same bytes on every run.
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, parser, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

MODELS = {
    "conv_relu": """<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 1.0}) => (float[1,2,4,4] y) {
  c = Conv (x, w)
  y = Relu (c)
}""",
    "basic_block": """<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x, float[2,2,1,1] w1 = {1.0, 0.5, -0.5, 1.0}, float[2,2,1,1] w2 = {0.5, 0.0, 0.0, 0.5},
   float[2] s = {1.0, 2.0}, float[2] b = {0.0, 0.1}, float[2] m = {0.5, 0.0}, float[2] v = {1.0, 4.0}) => (float[1,2,4,4] y) {
  r0 = Relu (x)
  c1 = Conv <pads: ints = [0,0,0,0]> (r0, w1)
  n1 = BatchNormalization <epsilon: float = 0.001> (c1, s, b, m, v)
  r1 = Relu (n1)
  c2 = Conv (r1, w2)
  n2 = BatchNormalization (c2, s, b, m, v)
  a = Add (n2, r0)
  y = Relu (a)
}""",
    "squeeze_excitation": """<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x, float[1,2,1,1] w1 = {1.0, -1.0}, float[1] b1 = {0.5}, float[2,1,1,1] w2 = {1.0, 2.0},
   float[2] b2 = {0.0, 0.1}) => (float[1,2,4,4] y) {
  p = GlobalAveragePool (x)
  c1 = Conv (p, w1, b1)
  r = Relu (c1)
  c2 = Conv (r, w2, b2)
  g = Sigmoid (c2)
  y = Mul (x, g)
}""",
    "gelu_matmul": """<ir_version: 8, opset_import: ["" : 13]>
g (float[2,4] x, float[4,4] k, float[4] kb = {0.0, 1.0, 2.0, 3.0}) => (float[2,4] y) {
  t = MatMul (x, k)
  u = Add (t, kb)
  sqrt2 = Constant <value = float {1.4142135}> ()
  d = Div (u, sqrt2)
  e = Erf (d)
  one = Constant <value = float {1.0}> ()
  a = Add (e, one)
  m = Mul (u, a)
  half = Constant <value = float {0.5}> ()
  y = Mul (m, half)
}""",
    "layer_norm": """<ir_version: 8, opset_import: ["" : 13]>
g (float[2,4] x, float[4] scale = {1.0, 1.0, 1.0, 1.0}, float[4] bias = {0.0, 0.0, 0.0, 0.5}, float eps = {0.00001})
  => (float[2,4] y) {
  mean = ReduceMean <axes: ints = [-1]> (x)
  d = Sub (x, mean)
  two = Constant <value = float {2.0}> ()
  sq = Pow (d, two)
  var = ReduceMean <axes: ints = [-1]> (sq)
  ve = Add (var, eps)
  sd = Sqrt (ve)
  n = Div (d, sd)
  s = Mul (n, scale)
  y = Add (s, bias)
}""",
    "hardswish_silu": """<ir_version: 8, opset_import: ["" : 14]>
g (float[1,2,4,4] x, float[2,1,3,3] w, float[2] s = {1.0, 1.0}, float[2] b = {0.0, 0.0}, float[2] m = {0.0, 0.0},
   float[2] v = {1.0, 1.0}) => (float[1,2,4,4] y, float[1,2,4,4] z) {
  c = Conv <group: int = 2, pads: ints = [1,1,1,1]> (x, w)
  n = BatchNormalization (c, s, b, m, v)
  y = HardSwish (n)
  sg = Sigmoid (y)
  z = Mul (y, sg)
}""",
    "clip_constants": """<ir_version: 7, opset_import: ["" : 12]>
g (float[1,2,4,4] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 1.0}) => (float[1,2,2,2] y) {
  lo = Constant <value = float {0.0}> ()
  hi = Constant <value = float {6.0}> ()
  c = Conv (x, w)
  k = Clip (c, lo, hi)
  i = Identity (k)
  y = MaxPool <kernel_shape: ints = [2,2], strides: ints = [2,2]> (i)
}""",
    "unsorted_symbolic": """<ir_version: 8, opset_import: ["" : 13]>
g (float[N,4] x) => (float[N,4] z) {
  z = Relu (y)
  y = Neg (w)
  w = Add (x, x)
}""",
    "reshape_shape": """<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,3] x) => (float[N,6] y) {
  s = Shape (x)
  i0 = Constant <value = int64[1] {0}> ()
  n = Gather (s, i0)
  k = Constant <value = int64[1] {6}> ()
  t = Concat <axis: int = 0> (n, k)
  r = Reshape (x, t)
  h = Cast <to: int = 10> (r)
  f = Cast <to: int = 1> (h)
  y = Tanh (f)
}""",
    "opset7": """<ir_version: 3, opset_import: ["" : 7]>
g (float[1,2,4,4] x, float[2,2,1,1] w, float[2] s, float[2] b, float[2] m, float[2] v) => (float[1,2,4,4] y) {
  c = Conv (x, w)
  n = BatchNormalization (c, s, b, m, v)
  y = Relu (n)
}""",
    "opset17": """<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4] x, float[4] sc = {1.0, 1.0, 1.0, 1.0}) => (float[1,4] y) {
  l = LayerNormalization (x, sc)
  t = Transpose <perm: ints = [1, 0]> (l)
  u = Softmax <axis: int = 0> (t)
  y = Transpose <perm: ints = [1, 0]> (u)
}""",
    "if_branches": """<ir_version: 8, opset_import: ["" : 13]>
g (bool cond, float[2] x) => (float[2] y) {
  a = Relu (x)
  y = If (cond) <then_branch = t () => (float[2] ty) { ty = Neg (a) },
                 else_branch = e () => (float[2] ey) { ey = Abs (a) }>
}""",
    "loop_body": """<ir_version: 8, opset_import: ["" : 13]>
g (int64 n, bool c, float[2] x) => (float[2] y) {
  a = Relu (x)
  y = Loop (n, c, a) <body = b (int64 i, bool ci, float[2] v) => (bool co, float[2] vo) {
    co = Identity (ci)
    vo = Add (v, a)
  }>
}""",
}


def with_function():
    """A model that calls a model-local function, as onnx-fuse's own output does."""
    f = helper.make_function("ai.onnxfuse", "Conv_Relu", ["x0", "x1"], ["y0"],
                             [helper.make_node("Conv", ["x0", "x1"], ["t0"]), helper.make_node("Relu", ["t0"], ["y0"])],
                             [helper.make_opsetid("", 13)])
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(2, 2, 1, 1), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv_Relu", ["x", "w"], ["c"], domain="ai.onnxfuse", name="fused_0_Conv_0"),
         helper.make_node("Sigmoid", ["c"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnxfuse", 1)],
                             functions=[f], ir_version=8)


def typed_fields():
    """Weights in float_data / int64_data (not raw_data), a BOOL and an fp16 initializer."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 2, 1, 1], [1.0, 0.5, -0.5, 1.0])
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [1, 8])
    h = numpy_helper.from_array(np.array([1.0, 2.0], np.float16), "h")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"]), helper.make_node("Reshape", ["c", "shape"], ["r"]),
         helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),
         helper.make_node("ReduceSum", ["hf"], ["hs"], keepdims=0), helper.make_node("Add", ["r", "hs"], ["y"])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w, shape, h])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def opset_conversion_seeds():
    """Models past both ends of the working range: opset 6 (ONNX's
    version converter), 18 and 21 (our down adapters). Built as protos:
    libonnx 1.12's parser and checker know no op past opset 17."""
    def ints(name, v):
        return numpy_helper.from_array(np.array(v, np.int64), name)

    def floats(name, v):
        return numpy_helper.from_array(np.array(v, np.float32), name)

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 3, 3])
    c = floats("c", np.linspace(-1, 1, 36).reshape(1, 4, 3, 3))
    slope = floats("s", [0.1, 0.2, 0.3, 0.4])
    g6 = helper.make_graph(
        [helper.make_node("Add", ["x", "c"], ["a"]), helper.make_node("PRelu", ["a", "s"], ["p"]),
         helper.make_node("Sigmoid", ["p"], ["y"])], "g",
        [x, helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 4, 3, 3]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 3, 3])], [c, slope])
    m6 = helper.make_model(g6, opset_imports=[helper.make_opsetid("", 6)], ir_version=3)

    g18 = helper.make_graph(
        [helper.make_node("ReduceMean", ["x", "ax"], ["m"], keepdims=1), helper.make_node("Sub", ["x", "m"], ["d"]),
         helper.make_node("Split", ["d"], ["s0", "s1"], axis=1, num_outputs=2),
         helper.make_node("Pad", ["s0", "pads", "", "pax"], ["p"]), helper.make_node("Mish", ["s1"], ["h"]),
         helper.make_node("GroupNormalization", ["h", "gs", "gb"], ["y"], num_groups=2)], "g", [x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3]),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, 2, 5, 3])],
        [ints("ax", [2, 3]), ints("pads", [1, 1]), ints("pax", [2]), floats("gs", [1, 2]), floats("gb", [0, 1])])
    m18 = helper.make_model(g18, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)

    branch = helper.make_graph([helper.make_node("ReduceMax", ["x", "ax"], ["rb"], keepdims=1)], "b", [],
                               [helper.make_tensor_value_info("rb", TensorProto.FLOAT, None)])
    g21 = helper.make_graph(
        [helper.make_node("Gelu", ["x"], ["g"], approximate="tanh"),
         helper.make_node("GroupNormalization", ["g", "gs", "gb"], ["n"], num_groups=2),
         helper.make_node("Resize", ["n", "", "scales"], ["r"], mode="linear", antialias=0),
         helper.make_node("AveragePool", ["r"], ["a"], kernel_shape=[2, 2], dilations=[1, 1]),
         helper.make_node("Cast", ["a"], ["y"], to=TensorProto.FLOAT, saturate=1),
         helper.make_node("If", ["cond"], ["z"], then_branch=branch, else_branch=branch)], "g", [x],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 5, 5]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 1, 3, 3])],
        [ints("ax", [1]), floats("gs", [1, 1, 2, 2]), floats("gb", [0, 0, 1, 1]), floats("scales", [1, 1, 2, 2]),
         numpy_helper.from_array(np.array(True), "cond")])
    m21 = helper.make_model(g21, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    return {"opset6": m6, "opset18": m18, "opset21": m21}


def main():
    out = os.path.join(HERE, "fuzz_model_loader")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    models = {name: parser.parse_model(text) for name, text in MODELS.items()}
    models["model_function"] = with_function()
    models["typed_fields"] = typed_fields()
    unchecked = opset_conversion_seeds()  # ops past opset 17: libonnx 1.12's checker knows none of them
    models.update(unchecked)
    for name, model in sorted(models.items()):
        if name != "unsorted_symbolic" and name not in unchecked:  # unsorted on purpose: onnx-fuse sorts it
            onnx.checker.check_model(model)
        with open(os.path.join(out, name + ".onnx"), "wb") as f:
            f.write(model.SerializeToString())

    out = os.path.join(HERE, "fuzz_pattern_parser")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    patterns = os.path.join(ROOT, "patterns")
    for name in sorted(os.listdir(patterns)):
        if name.endswith(".onnxtxt"):
            shutil.copy(os.path.join(patterns, name), os.path.join(out, name))
    extra = {
        "two_functions.onnxtxt": """# two functions, directives, an optional-input wildcard
#@ benefit: 5
#@ require: constant(W)
<domain: "ai.onnxfuse", opset_import: ["" : 13]>
ConvRelu <pads> (X, W, B) => (Y) {
  c = Conv <pads = @pads> (X, W, B)
  Y = Relu (c)
}
#@ require: same_shape(A, B)
<domain: "ai.onnxfuse", opset_import: ["" : 13]>
MulSigmoid (A, B) => (Y) {
  m = Mul (A, B)
  Y = Sigmoid (m)
}
""",
        "predicates.onnxtxt": """#@ benefit: -3
#@ require: scalar(K)
#@ require: last_axis(axis, X)
<domain: "ai.onnxfuse", opset_import: ["" : 13]>
SoftmaxScale <axis> (X, K) => (Y) {
  s = Mul (X, K)
  Y = Softmax <axis = @axis> (s)
}
#@ require: per_channel(S, X)
<domain: "ai.onnxfuse", opset_import: ["" : 13]>
TanhMul (X, S) => (Y) {
  t = Tanh (X)
  Y = Mul (t, S)
}
""",
    }
    for name, text in extra.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    total = sum(os.path.getsize(os.path.join(d, f)) for d in (os.path.join(HERE, t) for t in
                ("fuzz_model_loader", "fuzz_pattern_parser")) for f in os.listdir(d))
    print(f"wrote {len(models)} models and {len(os.listdir(out))} pattern files ({total} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
