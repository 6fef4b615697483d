#!/usr/bin/python3
"""Quantized operators that onnx-fuse runs in another form, one small model
each, through `onnx-fuse run` (fused and unfused) and
onnxfuse.InferenceSession, against ONNX Runtime running its own kernels:
  - ONNX Runtime's quantized com.microsoft operators (QLinearAdd, QLinearMul,
    QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool,
    QLinearAveragePool, QLinearConcat, QGemm, and com.microsoft's
    QLinearConv, QuantizeLinear and DequantizeLinear), run as their QDQ
    form (src/rewrite/contrib_qoperators.h);
  - dynamic quantization's DynamicQuantizeLinear -> MatMulInteger or
    ConvInteger -> Cast -> Mul, the products run as float ones
    (src/rewrite/integer_products_as_float.h).

    tests/e2e/quantized_ops.py BIN WORK_DIR

ONNX Runtime runs its integer kernels. A quantized output must be within
one step of ONNX Runtime's everywhere (the QDQ form rounds a float result
once; ORT's kernels may round a value near a half step the other way); a
float output (QGemm without y_scale, the dynamic products) within 1e-5 of
its largest magnitude.
A form that onnx-fuse cannot rewrite (channels_last) must be refused
(exit 4) with a message naming the node and the reason. Inputs are random
(seed 2026), with zero points and scales that differ between operands, and
weights of 7 bits (see weights()).

Exit status: 0 every check holds; 1 otherwise; 2 usage.
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INFER_JS = os.path.join(ROOT, "scripts", "ort", "infer.js")
RNG = np.random.default_rng(2026)
TYPES = {np.uint8: T.UINT8, np.int8: T.INT8}


def const(name, value, dtype):
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def random_q(shape, dtype):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)


def weights(shape):
    """int8 weights of 7 bits (|w| <= 64): ONNX Runtime's u8 x s8 kernels on
    AVX2 without VNNI saturate 16-bit pair sums of 8-bit ones (its
    documentation's reduce_range advice), onnx-fuse's QDQ form does not."""
    return RNG.integers(-64, 65, size=shape).astype(np.int8)


def model(name, node, inputs, initializers, outputs):
    """A model of `node` at opset 17 with com.microsoft 1; inputs and outputs [(name, dtype, shape)]."""
    value = lambda n, d, s: helper.make_tensor_value_info(n, TYPES.get(d, T.FLOAT), s)
    graph = helper.make_graph([node], name, [value(*i) for i in inputs], [value(*o) for o in outputs], initializers)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m


def unary(op, dtype, shape, out_shape=None, zero_points=True, **attrs):
    """op (X, X_scale, X_zero_point, Y_scale, Y_zero_point) on a random X."""
    zx, zy = (7, 3) if dtype == np.int8 else (131, 120)
    names = ["x", "xs", "xz" if zero_points else "", "ys", "yz" if zero_points else ""]
    inits = [const("xs", 0.05, np.float32), const("ys", 0.02, np.float32)]
    if zero_points:
        inits += [const("xz", zx, dtype), const("yz", zy, dtype)]
    node = helper.make_node(op, names, ["y"], domain="com.microsoft", name=op + "_0", **attrs)
    return (model(op, node, [("x", dtype, shape)], inits, [("y", dtype, out_shape or shape)]),
            {"x": random_q(shape, dtype)})


def binary(op, dtype, a_shape, b_shape, out_shape):
    """op (A, As, Az, B, Bs, Bz, Cs, Cz) on random A and B (broadcasting). ONNX
    Runtime requires the zero points of these two."""
    z = (5, -9, 2) if dtype == np.int8 else (128, 100, 140)
    inits = [const("as", 0.03, np.float32), const("bs", 0.07, np.float32),
             const("cs", 0.11 if op == "QLinearAdd" else 0.2, np.float32)]
    inits += [const(n, v, dtype) for n, v in zip(("az", "bz", "cz"), z)]
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["c"], domain="com.microsoft",
                            name=op + "_0")
    return (model(op, node, [("a", dtype, a_shape), ("b", dtype, b_shape)], inits, [("c", dtype, out_shape)]),
            {"a": random_q(a_shape, dtype), "b": random_q(b_shape, dtype)})


def concat():
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz"], ["y"], axis=1,
                            domain="com.microsoft", name="QLinearConcat_0")
    inits = [const("ys", 0.04, np.float32), const("yz", 128, np.uint8), const("as", 0.03, np.float32),
             const("az", 120, np.uint8), const("bs", 0.05, np.float32), const("bz", 135, np.uint8)]
    return (model("concat", node, [("a", np.uint8, [1, 3, 4, 4]), ("b", np.uint8, [1, 5, 4, 4])], inits,
                  [("y", np.uint8, [1, 8, 4, 4])]),
            {"a": random_q([1, 3, 4, 4], np.uint8), "b": random_q([1, 5, 4, 4], np.uint8)})


def gemm(quantized_output, trans_b, per_column, bias, alpha):
    m, k, n = 3, 16, 8
    b_shape = [n, k] if trans_b else [k, n]
    b_scale = (RNG.uniform(0.01, 0.03, n) if per_column else np.array(0.02)).astype(np.float32)
    inits = [const("as", 0.05, np.float32), const("az", 110, np.uint8), const("b", weights(b_shape), np.int8),
             const("bs", b_scale, np.float32), const("bz", np.zeros(b_scale.shape), np.int8)]
    names = ["a", "as", "az", "b", "bs", "bz"]
    if bias or quantized_output:
        names.append("c" if bias else "")
        if bias:
            inits.append(const("c", RNG.integers(-3000, 3000, n), np.int32))
    if quantized_output:
        names += ["ys", "yz"]
        inits += [const("ys", 0.5, np.float32), const("yz", 125, np.uint8)]
    node = helper.make_node("QGemm", names, ["y"], domain="com.microsoft", name="QGemm_0", alpha=alpha,
                            transB=int(trans_b))
    return (model("qgemm", node, [("a", np.uint8, [m, k])], inits,
                  [("y", np.uint8 if quantized_output else np.float32, [m, n])]),
            {"a": random_q([m, k], np.uint8)})


def qlinearconv():
    w = weights([4, 3, 3, 3])
    inits = [const("xs", 0.02, np.float32), const("xz", 128, np.uint8), const("w", w, np.int8),
             const("ws", [0.01, 0.02, 0.015, 0.03], np.float32), const("wz", [0, 0, 0, 0], np.int8),
             const("ys", 0.3, np.float32), const("yz", 100, np.uint8), const("b", [100, -200, 50, 0], np.int32)]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], pads=[1, 1, 1, 1],
                            domain="com.microsoft", name="QLinearConv_0")
    return (model("qlinearconv", node, [("x", np.uint8, [1, 3, 6, 6])], inits, [("y", np.uint8, [1, 4, 6, 6])]),
            {"x": random_q([1, 3, 6, 6], np.uint8)})


def quantize_dequantize():
    """com.microsoft QuantizeLinear then DequantizeLinear: float in, float out."""
    q = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], domain="com.microsoft", name="QuantizeLinear_0")
    d = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], domain="com.microsoft", name="DequantizeLinear_0")
    graph = helper.make_graph([q, d], "qdq", [helper.make_tensor_value_info("x", T.FLOAT, [2, 50])],
                              [helper.make_tensor_value_info("y", T.FLOAT, [2, 50])],
                              [const("s", 0.05, np.float32), const("z", -3, np.int8)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    m.ir_version = 8
    return m, {"x": RNG.normal(0, 3, [2, 50]).astype(np.float32)}


def dynamic(op, shape, w_shape, out, zero_point, zeros=False, **attrs):
    """DynamicQuantizeLinear (x) -> op (x_q, w, x_zp, w_zp) -> Cast -> Mul by x_scale * w_scale, with int8
    weights of 7 bits, their zero point per tensor or per column of MatMulInteger's (ONNX Runtime's
    ConvInteger takes one per tensor only)."""
    w = weights(w_shape)
    per = w_shape[-1] if op == "MatMulInteger" else w_shape[0]
    wz = RNG.integers(-3, 4, per) if zero_point == "per-axis" else np.array(zero_point)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node(op, ["xq", "w", "xz", "wz"], ["acc"], name=op + "_0", **attrs),
             helper.make_node("Cast", ["acc"], ["accf"], to=T.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y"])]
    inits = [const("w", w, np.int8), const("wz", wz, np.int8), const("ws", 0.01, np.float32)]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, op, [value("x", T.FLOAT, shape)], [value("y", T.FLOAT, out)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    x = np.zeros(shape, np.float32) if zeros else RNG.normal(0.3, 2.0, shape).astype(np.float32)
    return m, {"x": x}


CASES = {
    "QLinearAdd uint8, broadcast": lambda: binary("QLinearAdd", np.uint8, [1, 8, 5, 5], [1, 8, 1, 1], [1, 8, 5, 5]),
    "QLinearAdd int8": lambda: binary("QLinearAdd", np.int8, [2, 6, 7], [2, 6, 7], [2, 6, 7]),
    "QLinearMul uint8, broadcast": lambda: binary("QLinearMul", np.uint8, [2, 3, 4], [4], [2, 3, 4]),
    "QLinearMul int8": lambda: binary("QLinearMul", np.int8, [4, 9], [4, 9], [4, 9]),
    "QLinearSigmoid uint8": lambda: unary("QLinearSigmoid", np.uint8, [1, 16, 4, 4]),
    "QLinearSigmoid int8, no zero points": lambda: unary("QLinearSigmoid", np.int8, [3, 40], zero_points=False),
    "QLinearLeakyRelu int8": lambda: unary("QLinearLeakyRelu", np.int8, [1, 8, 6, 6], alpha=0.1),
    "QLinearLeakyRelu uint8, default alpha": lambda: unary("QLinearLeakyRelu", np.uint8, [2, 30]),
    "QLinearGlobalAveragePool uint8": lambda: unary("QLinearGlobalAveragePool", np.uint8, [1, 16, 7, 7], [1, 16, 1, 1],
                                                    channels_last=0),
    "QLinearGlobalAveragePool int8": lambda: unary("QLinearGlobalAveragePool", np.int8, [2, 5, 3, 3], [2, 5, 1, 1]),
    "QLinearAveragePool uint8, 3x3 stride 2": lambda: unary("QLinearAveragePool", np.uint8, [1, 4, 9, 9], [1, 4, 5, 5],
                                                            kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "QLinearConcat uint8": concat,
    "QGemm, quantized output, per-column b, C, alpha 0.5": lambda: gemm(True, False, True, True, 0.5),
    "QGemm, float output, transB, per-tensor b": lambda: gemm(False, True, False, False, 1.0),
    "QGemm, float output, transB, per-column b, C": lambda: gemm(False, True, True, True, 1.0),
    "com.microsoft QLinearConv": qlinearconv,
    "com.microsoft QuantizeLinear, DequantizeLinear": quantize_dequantize,
    "dynamic MatMulInteger, w zero point 0": lambda: dynamic("MatMulInteger", [5, 64], [64, 24], [5, 24], 0),
    "dynamic MatMulInteger, x all zeros": lambda: dynamic("MatMulInteger", [3, 8], [8, 4], [3, 4], 0,
                                                                   zeros=True),
    "dynamic MatMulInteger, w zero point per column": lambda: dynamic("MatMulInteger", [5, 64], [64, 24], [5, 24],
                                                                               "per-axis"),
    "dynamic ConvInteger, pads, w zero point 2": lambda: dynamic("ConvInteger", [1, 3, 7, 7], [4, 3, 3, 3],
                                                                [1, 4, 7, 7], 2, pads=[1, 1, 1, 1]),
    "dynamic ConvInteger, stride 2, w zero point -1": lambda: dynamic("ConvInteger", [1, 5, 9, 9], [6, 5, 3, 3],
                                                                     [1, 6, 4, 4], -1, strides=[2, 2],
                                                                     pads=[0, 1, 1, 0]),
}


def write_inputs(folder, feeds):
    os.makedirs(folder, exist_ok=True)
    for i, (name, value) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(value, name), os.path.join(folder, "input_%d.pb" % i))


def read_output(folder):
    return numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "output_0.pb")))


def compare(label, expected, actual):
    """None when actual is within one step (integers) or 1e-5 of the largest magnitude (float) of expected."""
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return "%s: %s %s, ONNX Runtime %s %s" % (label, actual.dtype, actual.shape, expected.dtype, expected.shape)
    if expected.dtype == np.float32:
        worst = float(np.max(np.abs(actual - expected)))
        bound = 1e-5 * max(1.0, float(np.max(np.abs(expected))))
        return None if worst <= bound else "%s: max abs difference %.3g > %.3g" % (label, worst, bound)
    steps = int(np.max(np.abs(actual.astype(np.int32) - expected.astype(np.int32))))
    return None if steps <= 1 else "%s: %d steps from ONNX Runtime's output" % (label, steps)


def check_case(binary, work, title, make, failures):
    before = len(failures)
    m, feeds = make()
    folder = os.path.join(work, "".join(c if c.isalnum() else "_" for c in title))
    path = os.path.join(folder, "model.onnx")
    os.makedirs(folder, exist_ok=True)
    onnx.save(m, path)
    ort_dir, inputs = os.path.join(folder, "ort"), os.path.join(folder, "inputs")
    write_inputs(ort_dir, feeds)
    write_inputs(inputs, feeds)
    subprocess.run(["node", INFER_JS, path, ort_dir, "--threads", "1"], check=True, capture_output=True)
    expected = read_output(ort_dir)
    results = []
    for label, extra in (("fused", []), ("unfused", ["--no-fuse"])):
        out = os.path.join(folder, label)
        p = subprocess.run([binary, "run", path, "--inputs", inputs, "--outputs", out, "--iterations", "1",
                            "--warmup", "0", "--threads", "1", "--json"] + extra, capture_output=True, text=True)
        if p.returncode != 0:
            failures.append("%s (%s): exit %d: %s" % (title, label, p.returncode, p.stderr.strip()[-300:]))
            continue
        results.append((label, read_output(out)))
        # An integer product runs on oneDNN's float kernels, not on the host evaluator.
        kinds = [step["kind"] for step in json.loads(p.stdout.strip().splitlines()[-1])["steps"]]
        if title.startswith("dynamic") and not ("matmul" in kinds or "conv" in kinds):
            failures.append("%s (%s): no matmul or conv step: %s" % (title, label, kinds))
    import onnxfuse  # build/python, on sys.path
    session = onnxfuse.InferenceSession(path, threads=1)
    results.append(("session", session.run(None, feeds)[0]))
    for label, actual in results:
        why = compare("%s (%s)" % (title, label), expected, actual)
        if why:
            failures.append(why)
    print("%-55s %s" % (title, "ok" if len(failures) == before else "FAILED"))


def check_refusal(binary, work, failures):
    """channels_last=1 has no QDQ form here: refused, naming the node and why."""
    m, _ = unary("QLinearGlobalAveragePool", np.uint8, [1, 7, 7, 16], [1, 1, 1, 16], channels_last=1)
    path = os.path.join(work, "channels_last.onnx")
    onnx.save(m, path)
    p = subprocess.run([binary, "run", path, "--iterations", "1", "--warmup", "0"], capture_output=True, text=True)
    wanted = ["channels_last.onnx", "QLinearGlobalAveragePool_0", "channels_last (NHWC) is not rewritten"]
    if p.returncode != 4 or not all(w in p.stderr for w in wanted):
        failures.append("channels_last=1: exit %d, %r; expected exit 4 naming %s" % (p.returncode, p.stderr.strip(),
                                                                                   wanted))
    print("%-55s %s" % ("QLinearGlobalAveragePool channels_last=1 refused", "ok" if p.returncode == 4 else "FAILED"))


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[8].strip(), file=sys.stderr)
        return 2
    binary, work = sys.argv[1:]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(binary)), "python"))
    os.makedirs(work, exist_ok=True)
    failures = []
    for title, make in CASES.items():
        try:
            check_case(binary, work, title, make, failures)
        except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
            failures.append("%s: %s" % (title, getattr(e, "stderr", None) or e))
    check_refusal(binary, work, failures)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
