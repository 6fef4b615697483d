#!/usr/bin/python3
"""Opset conversion (src/load/): small models at opsets 6 and 18-21,
built as protos (libonnx 1.12's text parser knows no op past opset 17), run
through `onnx-fuse run` and the fuse path (`-o`, the written model in ONNX
Runtime), each compared with ONNX Runtime on the original at 1e-4; and the
refusals, each with exit code 4 and a message naming the node and reason.

    /usr/bin/python3 tests/e2e/opset_conversion.py ONNX_FUSE_BINARY

Needs node with scripts/ort/node_modules (onnxruntime-node 1.30 runs opsets up to 23).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INFER = os.path.join(ROOT, "scripts", "ort", "infer.js")
BIN = sys.argv[1]
WORK = tempfile.mkdtemp(prefix="opset-conversion-")
failures = []


def model(nodes, inputs, outputs, opset, inits=(), ir=None, functions=()):
    g = h.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    imports = [h.make_opsetid("", opset)] + ([h.make_opsetid("local", 1)] if functions else [])
    m = h.make_model(g, opset_imports=imports, functions=list(functions))
    m.ir_version = ir or (10 if opset >= 21 else 9 if opset >= 19 else 8 if opset >= 13 else 3)
    return m


def vi(name, dims, elem=T.FLOAT):
    return h.make_tensor_value_info(name, elem, dims)


def ints(name, values):
    return nh.from_array(np.array(values, np.int64), name)


def floats(name, values, shape=None):
    a = np.array(values, np.float32)
    return nh.from_array(a.reshape(shape) if shape else a, name)


def tensors(folder, prefix):
    out = []
    for k in range(100):
        p = os.path.join(folder, "%s_%d.pb" % (prefix, k))
        if not os.path.exists(p):
            return out
        t = onnx.TensorProto()
        with open(p, "rb") as f:
            t.ParseFromString(f.read())
        out.append(nh.to_array(t))


def max_rel(a, b):
    if a.shape != b.shape:
        return float("inf")
    m = float(np.abs(a).max()) if a.size else 0.0
    d = float(np.abs(a.astype(np.float64) - b).max()) if a.size else 0.0
    return 0.0 if d == 0 else d / m if m else float("inf")


def positive(name, m, fuse_path=True, run=True, numpy_reference=None):
    """NUMPY_REFERENCE(inputs) gives the expected outputs where ORT cannot run
    the original (opsets below 7)."""
    folder = os.path.join(WORK, name)
    os.makedirs(folder)
    path = os.path.join(folder, "model.onnx")
    onnx.save(m, path)
    ref = os.path.join(folder, "ref")
    os.makedirs(ref)
    rng = np.random.default_rng(len(name))
    for k, i in enumerate(m.graph.input):
        dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
        arr = (rng.random(dims, dtype=np.float32) * 2 - 1).astype(np.float32)
        with open(os.path.join(ref, "input_%d.pb" % k), "wb") as f:
            f.write(nh.from_array(arr, i.name).SerializeToString())
    if numpy_reference:
        expected = numpy_reference(tensors(ref, "input"))
    else:
        r = subprocess.run(["node", INFER, path, ref], capture_output=True, text=True)
        if r.returncode:
            failures.append("%s: ORT cannot run the original: %s" % (name, r.stderr.strip()[-300:]))
            return
        expected = tensors(ref, "output")
    checks = []
    if run:
        out = os.path.join(folder, "run")
        r = subprocess.run([BIN, "run", path, "--inputs", ref, "--outputs", out, "--iterations", "1"],
                           capture_output=True, text=True)
        checks.append(("run", r, out))
    if fuse_path:
        fused = os.path.join(folder, "fused.onnx")
        r = subprocess.run([BIN, path, "-o", fused, "-q"], capture_output=True, text=True)
        out = os.path.join(folder, "fused_out")
        os.makedirs(out)
        for f in os.listdir(ref):
            if f.startswith("input_"):
                os.link(os.path.join(ref, f), os.path.join(out, f))
        if r.returncode == 0:
            written = onnx.load(fused)
            opset = [o.version for o in written.opset_import if o.domain in ("", "ai.onnx")][0]
            if opset != 17 and m.opset_import[0].version > 17:
                failures.append("%s: the written model is at opset %d, not 17" % (name, opset))
            r = subprocess.run(["node", INFER, fused, out], capture_output=True, text=True)
        checks.append(("fuse path", r, out))
    for what, r, out in checks:
        if r.returncode:
            failures.append("%s (%s): exit %d: %s" % (name, what, r.returncode, r.stderr.strip()[-300:]))
            continue
        got = tensors(out, "output")
        worst = max((max_rel(a, b) for a, b in zip(expected, got)), default=0.0)
        if len(got) != len(expected) or worst > 1e-4:
            failures.append("%s (%s): outputs differ from ONNX Runtime (max rel %.2e)" % (name, what, worst))
        else:
            print("ok   %-28s %-9s max rel %.1e" % (name, what, worst))


def refused(name, m, needle):
    path = os.path.join(WORK, name + ".onnx")
    onnx.save(m, path)
    r = subprocess.run([BIN, "run", path, "--iterations", "1"], capture_output=True, text=True)
    if r.returncode != 4 or needle not in r.stderr:
        failures.append("%s: expected exit 4 with '%s', got exit %d: %s" % (name, needle, r.returncode, r.stderr.strip()[-300:]))
    else:
        print("ok   %-28s refused: %s" % (name, r.stderr.strip().splitlines()[-1][:110]))


x4 = vi("x", [2, 6, 5, 7])

# Reduce*-18: axes input -> attribute; noop_with_empty_axes -> Identity.
positive("reduce_axes_18", model(
    [h.make_node("ReduceMean", ["x", "ax"], ["m"], name="mean", keepdims=1),
     h.make_node("ReduceL2", ["x", "neg"], ["l"], name="l2", keepdims=1),
     h.make_node("ReduceMax", ["x"], ["i"], name="noop", noop_with_empty_axes=1),
     h.make_node("Add", ["m", "l"], ["s"], name="add"), h.make_node("Mul", ["i", "s"], ["y"], name="mul")],
    [x4], [vi("y", [2, 6, 5, 7])], 18, [ints("ax", [2, 3]), ints("neg", [-1])]))
refused("reduce_axes_runtime_18", model(
    [h.make_node("ReduceMean", ["x", "ax"], ["y"], name="mean")], [x4, vi("ax", [1], T.INT64)], [vi("y", None)], 18),
    "axes 'ax' is computed at run time")

# Split-18: num_outputs, even and uneven (7 into 3, 3, 1).
positive("split_num_outputs_18", model(
    [h.make_node("Split", ["x"], ["a", "b", "c"], name="split", axis=1, num_outputs=3),
     h.make_node("Split", ["x"], ["p", "q", "r"], name="uneven", axis=3, num_outputs=3),
     h.make_node("Relu", ["b"], ["y0"], name="relu")],
    [x4], [vi("y0", [2, 2, 5, 7]), vi("a", [2, 2, 5, 7]), vi("r", [2, 6, 5, 1])], 18))

# Pad-18 with axes (the rank of a value only shape inference knows), Pad-19 wrap.
positive("pad_axes_18", model(
    [h.make_node("Relu", ["x"], ["r"], name="relu"), h.make_node("Pad", ["r", "pads", "", "axes"], ["y"], name="pad")],
    [x4], [vi("y", [2, 6, 6, 10])], 18, [ints("pads", [1, 2, 0, 1]), ints("axes", [-2, 3])]))
refused("pad_wrap_19", model([h.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="wrap")], [x4],
                             [vi("y", None)], 19, [ints("pads", [0, 0, 1, 1, 0, 0, 1, 1])]), "mode 'wrap'")

# Resize-18/19 with their defaults; antialias refused.
positive("resize_defaults_19", model(
    [h.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", mode="linear", antialias=0,
                 keep_aspect_ratio_policy="stretch")],
    [x4], [vi("y", [2, 6, 10, 14])], 19, [floats("scales", [1, 1, 2, 2])]))
refused("resize_antialias_18", model(
    [h.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", mode="linear", antialias=1)],
    [x4], [vi("y", None)], 18, [floats("scales", [1, 1, 0.5, 0.5])]), "antialias")

# GroupNormalization-18 (per group) and -21 (per channel).
positive("group_normalization_18", model(
    [h.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=3, epsilon=1e-5)],
    [x4], [vi("y", [2, 6, 5, 7])], 18, [floats("s", [0.5, 1.0, 1.5]), floats("b", [0.1, -0.2, 0.3])]))
positive("group_normalization_21", model(
    [h.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", num_groups=2)],
    [x4], [vi("y", [2, 6, 5, 7])], 21, [floats("s", np.linspace(0.5, 1.5, 6)), floats("b", np.linspace(-0.3, 0.2, 6))]))

# Gelu-20 (erf and tanh) and Mish-18: decomposed.
positive("gelu_mish_20", model(
    [h.make_node("Gelu", ["x"], ["g"], name="gelu"), h.make_node("Gelu", ["x"], ["t"], name="gelu_tanh", approximate="tanh"),
     h.make_node("Mish", ["x"], ["m"], name="mish"), h.make_node("Add", ["g", "t"], ["a"], name="add"),
     h.make_node("Add", ["a", "m"], ["y"], name="add2")],
    [x4], [vi("y", [2, 6, 5, 7])], 20))

# AveragePool-19 with dilations of 1; others refused.
positive("average_pool_19", model(
    [h.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[3, 3], dilations=[1, 1], pads=[1, 1, 1, 1])],
    [x4], [vi("y", [2, 6, 5, 7])], 19))
refused("average_pool_dilated_19", model(
    [h.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], dilations=[2, 2])],
    [x4], [vi("y", None)], 19), "dilations other than 1")

# Ops only typed wider after 17, and IR 10: the opset-17 ops. Cast-19's saturate dropped.
positive("type_only_ops_21", model(
    [h.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"), h.make_node("Cast", ["r"], ["c"], name="cast", to=T.FLOAT, saturate=1),
     h.make_node("Transpose", ["c"], ["t"], name="transpose", perm=[1, 0]), h.make_node("Identity", ["t"], ["y"], name="id")],
    [x4], [vi("y", [35, 12])], 21, [ints("shape", [12, 35])]))

# A model-local function whose body uses ReduceMean-18.
body = [h.make_node("Constant", [], ["axes"], value=ints("", [-1])),
        h.make_node("ReduceMean", ["X", "axes"], ["M"], keepdims=1), h.make_node("Sub", ["X", "M"], ["Y"])]
fn = h.make_function("local", "Center", ["X"], ["Y"], body, [h.make_opsetid("", 18)])
positive("function_body_18", model([h.make_node("Center", ["x"], ["y"], name="center", domain="local")],
                                   [x4], [vi("y", [2, 6, 5, 7])], 18, functions=[fn]),
         run=False)  # `run` does not run model-local functions: the fuse path does

# Chains: each rewrite needing dims reads them inferred through the converted ops before it.
x8 = vi("x", [1, 8, 12, 12])
positive("chain_conv_gn_split_pad_18", model(
    [h.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
     h.make_node("GroupNormalization", ["c", "s", "b"], ["n"], name="gn", num_groups=4),
     h.make_node("Relu", ["n"], ["r"], name="relu"),
     h.make_node("Split", ["r"], ["p", "q"], name="split", axis=1, num_outputs=2),
     h.make_node("Add", ["p", "q"], ["a"], name="add"),
     h.make_node("Pad", ["a", "pads", "", "axes"], ["y"], name="pad", mode="reflect")],
    [x8], [vi("y", [1, 4, 15, 15])], 18,
    [floats("w", np.sin(np.arange(8 * 8 * 3 * 3)) * 0.2, [8, 8, 3, 3]), floats("s", [0.5, 1, 1.5, 2]),
     floats("b", [0.1, -0.2, 0.3, 0]), ints("pads", [1, 2, 2, 1]), ints("axes", [2, 3])]))
positive("chain_resize_split_18", model(
    [h.make_node("Resize", ["x", "", "scales"], ["r"], name="resize", mode="nearest", antialias=0),
     h.make_node("Split", ["r"], ["p", "q"], name="split", axis=2, num_outputs=2),  # 15 rows: 8 and 7
     h.make_node("Relu", ["q"], ["y"], name="relu")],
    [x8], [vi("p", [1, 8, 8, 12]), vi("y", [1, 8, 7, 12])], 18, [floats("scales", [1, 1, 1.25, 1])]))
positive("chain_pad_reduce_pad_18", model(
    [h.make_node("Relu", ["x"], ["r"], name="relu"), h.make_node("Pad", ["r", "pads", "", "axes"], ["p"], name="pad"),
     h.make_node("ReduceMean", ["p", "axes"], ["m"], name="mean", keepdims=0),
     h.make_node("Pad", ["m", "pads", "", "axes"], ["y"], name="pad2", mode="edge")],
    [x8], [vi("y", [1, 8, 14])], 18, [ints("pads", [1, 1]), ints("axes", [-1])]))

# Ops first defined after 17, and types opset 17 lacks.
refused("col2im_18", model([h.make_node("Col2Im", ["x", "a", "b"], ["y"], name="c2i")], [x4], [vi("y", None)], 18,
                           [ints("a", [4, 4]), ints("b", [2, 2])]), "first defined after opset 17")
f8 = onnx.TensorProto(name="w", data_type=17, dims=[1], raw_data=b"\x38")  # FLOAT8E4M3FN (IR 9): 1.0
refused("float8_initializer_19", model([h.make_node("Identity", ["x"], ["y"], name="id")], [x4], [vi("y", None)], 19, [f8]),
        "float8")
refused("bfloat16_input_18", model([h.make_node("Identity", ["x"], ["y"], name="id")], [vi("x", [2], T.BFLOAT16)],
                                   [vi("y", None, T.BFLOAT16)], 18), "bfloat16")

# Opset 6: ONNX's version converter up to 7 (Add-6 of equal shapes, Sigmoid-6).
c6 = np.linspace(-1, 1, 2 * 6 * 5 * 7).astype(np.float32).reshape(2, 6, 5, 7)
positive("add_sigmoid_6", model(
    [h.make_node("Add", ["x", "c"], ["a"], name="add"), h.make_node("Sigmoid", ["a"], ["y"], name="sigmoid")],
    [x4], [vi("y", [2, 6, 5, 7])], 6, [nh.from_array(c6, "c")]), fuse_path=False,
    numpy_reference=lambda ins: [1 / (1 + np.exp(-(ins[0].astype(np.float64) + c6)))])

# More refusals: a ScatterElements reduction opset 17 lacks, Gelu's unknown approximation.
refused("scatter_elements_max_18", model(
    [h.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="scatter", axis=0, reduction="max")],
    [x4], [vi("y", None)], 18, [ints("i", np.zeros((1, 6, 5, 7), np.int64)), floats("u", np.ones((1, 6, 5, 7)))]),
    "reduction 'max'")
refused("gelu_unknown_approximation_20", model([h.make_node("Gelu", ["x"], ["y"], name="gelu", approximate="erf")],
                                               [x4], [vi("y", None)], 20), "approximate 'erf'")

# Opset 17 is not converted: the report says so and the written model keeps opset 17 and its IR version.
m17 = model([h.make_node("Relu", ["x"], ["y"], name="relu")], [x4], [vi("y", [2, 6, 5, 7])], 17)
path17 = os.path.join(WORK, "opset17.onnx")
onnx.save(m17, path17)
r = subprocess.run([BIN, path17, "-o", path17 + ".out.onnx", "--report", path17 + ".json", "-q"], capture_output=True, text=True)
if r.returncode:
    failures.append("opset17: exit %d: %s" % (r.returncode, r.stderr.strip()[-200:]))
else:
    import json
    conversion = json.load(open(path17 + ".json"))["conversion"]
    written = onnx.load(path17 + ".out.onnx")
    opset = [o.version for o in written.opset_import if o.domain in ("", "ai.onnx")][0]
    if conversion["converted"] or conversion["nodes"] or opset != 17 or written.ir_version != m17.ir_version:
        failures.append("opset17: converted %s, written at opset %d IR %d" % (conversion, opset, written.ir_version))
    else:
        print("ok   %-28s not converted (opset 17, IR %d kept)" % ("opset17_untouched", written.ir_version))

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
shutil.rmtree(WORK)
print("opset conversion: all cases pass")
