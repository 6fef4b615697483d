#!/usr/bin/python3
"""Quantize an exported float model to the QDQ format ONNX Runtime's static
quantizer writes, calibrated with ONNX Runtime (through Node), as test
material for onnx-fuse's int8 path.

    /usr/bin/python3 scripts/export_quantized.py [--models models] [--force] [NAME ...]

NAME (default: resnet18 mobilenet_v2 efficientnet_b0) is a float model exported by
scripts/export_models.py, MODELS/NAME/model.onnx with its test_data_set_0.
Writes MODELS/NAME-qdq/ and MODELS/NAME-qoperator/, each a model.onnx and
test_data_set_0/ (the float model's input, and ONNX Runtime's output of that
model for it, scripts/ort/infer.js); and MODELS/NAME-qdq7/ and
MODELS/NAME-qoperator7/, the same with 7-bit weights (|w| <= 64, ONNX
Runtime's reduce_range=True), which CPUs without VNNI run on int8 kernels
without saturating their 16-bit pair sums. Without NAMEs it also writes
MODELS/dynamic/bert_encoder-dynamic/, the BERT-shaped encoder of
scripts/export_dynamic.py in the form ONNX Runtime's quantize_dynamic writes
(quantize_dynamic() below), with 7-bit weights.

The format (onnxruntime.quantization.quantize_static with QuantFormat.QDQ,
its defaults: uint8 activations, int8 weights per channel):
  - every activation a Conv, Gemm, MatMul, Add, Concat, MaxPool, AveragePool
    or GlobalAveragePool reads or writes is quantized where it is made:
    value -> QuantizeLinear -> DequantizeLinear -> every consumer (a graph
    output stays the float value); uint8, per tensor, asymmetric:
    scale = (max - min) / 255 over the calibration range widened to hold 0,
    zero point round(-min / scale);
  - Conv, Gemm and MatMul weights are int8 per output channel, symmetric:
    scale = max|w| / 127, zero point 0, read through a DequantizeLinear
    (axis 0 for Conv and a Gemm with transB, 1 for MatMul and a Gemm without);
  - their biases are int32 with scale input_scale * weight_scale, zero point
    0 (as ONNX Runtime's quantizer writes them).
Calibration: min and max of each activation over the test input and three
more inputs (standard normal, seed 2026), from ONNX Runtime's float run of
the model with every activation as an extra output.

The QOperator twin (QuantFormat.QOperator) is the same quantization with
each convolution as one QLinearConv (x, its scale and zero point, the int8
weights, theirs, the output's, the int32 bias): DequantizeLinear ->
Conv -> QuantizeLinear, and a Relu or Clip between Conv and QuantizeLinear
that the quantized range already clamps (zero point 0, and for Clip an upper
bound of at least the range's top), as ONNX Runtime's quantizer folds it.
Add, GlobalAveragePool and the classifier's Gemm become the com.microsoft
ops ONNX Runtime's quantizer writes for them: QLinearAdd,
QLinearGlobalAveragePool, and QGemm (float output, the model's). MaxPool
stays as QDQ (ONNX Runtime's quantizer would run it on the quantized input
with the input's scale, where this quantization gives its output a range of
its own).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INFER_JS = os.path.join(ROOT, "scripts", "ort", "infer.js")
DEFAULT = ["resnet18", "mobilenet_v2", "efficientnet_b0"]
DYNAMIC = ["bert_encoder"]  # in MODELS/dynamic (scripts/export_dynamic.py)
SEED = 2026
EXTRA_INPUTS = 3
ANCHORS = {"Conv", "Gemm", "MatMul"}
QUANTIZED_OPS = ANCHORS | {"Add", "Concat", "MaxPool", "AveragePool", "GlobalAveragePool"}
MS = "com.microsoft"


def ort_outputs(model, inputs, folder):
    """ONNX Runtime's outputs of `model` (a ModelProto) for `inputs` (arrays in input order)."""
    path = os.path.join(folder, "model.onnx")
    onnx.save(model, path)
    data = os.path.join(folder, "data")
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    for n, array in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(array), os.path.join(data, f"input_{n}.pb"))
    subprocess.run(["node", INFER_JS, path, data], check=True, stdout=subprocess.DEVNULL)
    return [numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"output_{n}.pb")))
            for n in range(len(model.graph.output))]


def fold_batch_norm(model):
    """Conv -> BatchNormalization folded into the Conv's weights and bias
    (W * gamma / sqrt(var + eps), (b - mean) * gamma / sqrt(var + eps) + beta),
    as ONNX Runtime's quantization pre-processing does before it quantizes."""
    graph = model.graph
    tensors = {t.name: t for t in graph.initializer}
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    producer = {name: node for node in graph.node for name in node.output}
    dropped = set()
    for bn in [n for n in graph.node if n.op_type == "BatchNormalization"]:
        conv = producer.get(bn.input[0])
        if conv is None or conv.op_type != "Conv" or len(consumers[bn.input[0]]) != 1 or conv.input[1] not in tensors:
            continue
        if not all(name in tensors for name in bn.input[1:5]):
            continue
        gamma, beta, mean, var = (numpy_helper.to_array(tensors[name]) for name in bn.input[1:5])
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        factor = gamma / np.sqrt(var + eps)
        w = numpy_helper.to_array(tensors[conv.input[1]])
        b = numpy_helper.to_array(tensors[conv.input[2]]) if len(conv.input) > 2 and conv.input[2] else np.zeros_like(mean)
        tensors[conv.input[1]].CopyFrom(numpy_helper.from_array(
            (w * factor.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32), conv.input[1]))
        bias = conv.name + "_folded_bias"
        graph.initializer.append(numpy_helper.from_array(((b - mean) * factor + beta).astype(np.float32), bias))
        tensors[bias] = graph.initializer[-1]
        if len(conv.input) > 2:
            conv.input[2] = bias
        else:
            conv.input.append(bias)
        conv.output[0] = bn.output[0]
        dropped.add(id(bn))
    kept = [n for n in graph.node if id(n) not in dropped]
    del graph.node[:]
    graph.node.extend(kept)
    used = {name for n in graph.node for name in n.input}
    weights = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(weights)
    return model


def activations(model, initializers):
    """The activations to quantize, in graph order: every non-constant input
    and output of a QUANTIZED_OPS node, where the output of a Conv, Gemm or
    MatMul whose one consumer is a Relu or Clip stands for that activation's
    output (the quantizer quantizes after the activation)."""
    consumers = {}
    for node in model.graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    names = []
    for node in model.graph.node:
        if node.op_type not in QUANTIZED_OPS:
            continue
        data_inputs = node.input[:1] if node.op_type in ANCHORS else node.input
        outputs = list(node.output)
        after = consumers.get(outputs[0], [])
        if node.op_type in ANCHORS and len(after) == 1 and after[0].op_type in ("Relu", "Clip"):
            outputs = list(after[0].output)
        for name in list(data_inputs) + outputs:
            if name and name not in initializers and name not in names:
                names.append(name)
    return names


def calibrate(model, names, inputs, folder):
    """name -> (min, max) over the calibration inputs."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    outputs = {o.name for o in probe.graph.output}
    for name in names:
        if name not in outputs:
            probe.graph.output.append(helper.make_empty_tensor_value_info(name))
    probe = shape_inference.infer_shapes(probe)
    known = {v.name: v for v in list(probe.graph.value_info) + list(probe.graph.output)}
    del probe.graph.output[:]
    probe.graph.output.extend(known[name] for name in names)
    ranges = {name: [np.inf, -np.inf] for name in names}
    for sample in inputs:
        for name, value in zip(names, ort_outputs(probe, sample, folder)):
            ranges[name] = [min(ranges[name][0], float(value.min())), max(ranges[name][1], float(value.max()))]
    return ranges


def activation_params(low, high):
    low, high = min(low, 0.0), max(high, 0.0)
    scale = np.float32((high - low) / 255.0) if high > low else np.float32(1.0)
    zero_point = np.uint8(np.clip(np.rint(-low / scale), 0, 255))
    return scale, zero_point


def weight_params(w, axis, qmax):
    """Per-channel symmetric int8 in [-qmax, qmax] along `axis`: (quantized weights, scales)."""
    reduce = tuple(d for d in range(w.ndim) if d != axis)
    scale = (np.abs(w).max(axis=reduce) / float(qmax)).astype(np.float32)
    scale[scale == 0] = 1.0
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(np.rint(w / scale.reshape(shape)), -qmax, qmax).astype(np.int8)
    return q, scale


def weight_axis(node):
    if node.op_type == "Conv":
        return 0, None
    if node.op_type == "MatMul":
        return 1, None
    trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
    return (0 if trans_b else 1), 2  # Gemm: weights B, bias C


def quantize(model, ranges, weight_qmax):
    """The QDQ model: Q/DQ pairs on the calibrated activations, weights and biases quantized."""
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    outputs = {o.name for o in graph.output}
    params = {name: activation_params(*ranges[name]) for name in ranges}
    new_initializers, nodes = [], []

    def const(name, array):
        new_initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    # Activations: each made by a node (or a graph input) is quantized right after it.
    renamed = {name: f"{name}_dq" for name in params}

    def qdq(name):
        scale, zero_point = params[name]
        return [helper.make_node("QuantizeLinear", [name, const(f"{name}_scale", scale), const(f"{name}_zp", zero_point)],
                                 [f"{name}_q"], name=f"{name}_QuantizeLinear"),
                helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_scale", f"{name}_zp"], [renamed[name]],
                                 name=f"{name}_DequantizeLinear")]

    read = {name for n in graph.node for name in n.input}
    for i in graph.input:
        if i.name in params:
            nodes += qdq(i.name)
    for node in graph.node:
        node = onnx.NodeProto.FromString(node.SerializeToString())
        for k, name in enumerate(node.input):
            if name in renamed:
                node.input[k] = renamed[name]
        if node.op_type in ANCHORS and node.input[1] in initializers:
            axis, bias_slot = weight_axis(node)
            bias_slot = 2 if node.op_type == "Conv" else bias_slot
            w = numpy_helper.to_array(initializers[node.input[1]])
            q, w_scale = weight_params(w, axis, weight_qmax)
            wname = node.input[1]
            nodes.append(helper.make_node(
                "DequantizeLinear", [const(f"{wname}_q", q), const(f"{wname}_scale", w_scale),
                                     const(f"{wname}_zp", np.zeros(w_scale.shape, np.int8))],
                [f"{wname}_dq"], name=f"{wname}_DequantizeLinear", axis=axis))
            node.input[1] = f"{wname}_dq"
            x_name = node.input[0][:-3] if node.input[0].endswith("_dq") else None
            if bias_slot and len(node.input) > bias_slot and node.input[bias_slot] in initializers and x_name in params:
                b = numpy_helper.to_array(initializers[node.input[bias_slot]])
                b_scale = (params[x_name][0] * w_scale).astype(np.float32)
                if b.shape == b_scale.shape:
                    bname = node.input[bias_slot]
                    qb = np.rint(b / b_scale).astype(np.int32)
                    nodes.append(helper.make_node(
                        "DequantizeLinear", [const(f"{bname}_q", qb), const(f"{bname}_scale", b_scale),
                                             const(f"{bname}_zp", np.zeros(b_scale.shape, np.int32))],
                        [f"{bname}_dq"], name=f"{bname}_DequantizeLinear", axis=0))
                    node.input[bias_slot] = f"{bname}_dq"
        nodes.append(node)
        for name in node.output:
            if name in params and name in read:  # a graph output nothing reads stays float alone
                nodes += qdq(name)

    used = {name for n in nodes for name in n.input}
    kept = [t for t in graph.initializer if t.name in used]
    qgraph = helper.make_graph(nodes, graph.name + "_qdq", list(graph.input), list(graph.output),
                               kept + new_initializers)
    qmodel = helper.make_model(qgraph, opset_imports=list(model.opset_import), producer_name="onnx-fuse export_quantized")
    qmodel.ir_version = model.ir_version
    onnx.checker.check_model(qmodel)
    return qmodel


def as_qoperator(qmodel):
    """The QOperator twin of a QDQ model written by quantize()."""
    graph = qmodel.graph
    tensors = {t.name: t for t in graph.initializer}
    for n in graph.node:  # Constant nodes' values too (Clip's bounds)
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            tensors[n.output[0]] = n.attribute[0].t
    producer = {o: n for n in graph.node for o in n.output}
    consumers = {}
    for n in graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)

    def dequantized(name):
        node = producer.get(name)
        return node if node is not None and node.op_type == "DequantizeLinear" else None

    def clamps(activation, q):
        """Whether `activation` (a Relu or Clip) changes nothing that q's range keeps."""
        zero_point = numpy_helper.to_array(tensors[q.input[2]])
        if int(zero_point) != 0:
            return False
        if activation.op_type == "Relu":
            return True
        bounds = [numpy_helper.to_array(tensors[i]) if i in tensors else None for i in activation.input[1:3]]
        top = 255 * float(numpy_helper.to_array(tensors[q.input[1]]))
        return len(bounds) == 2 and bounds[0] is not None and float(bounds[0]) <= 0 and bounds[1] is not None \
            and float(bounds[1]) >= top

    replaced, dropped = {}, set()
    for conv in [n for n in graph.node if n.op_type == "Conv"]:
        parts = [dequantized(i) for i in conv.input]
        if len(parts) != 3 or any(p is None for p in parts):
            continue
        after = consumers.get(conv.output[0], [])
        if len(after) != 1:
            continue
        q, activation = after[0], None
        if q.op_type in ("Relu", "Clip"):
            activation = q
            after = consumers.get(activation.output[0], [])
            if len(after) != 1 or after[0].op_type != "QuantizeLinear" or not clamps(activation, after[0]):
                continue
            q = after[0]
        if q.op_type != "QuantizeLinear":
            continue
        x, w, b = parts
        qconv = helper.make_node("QLinearConv", [x.input[0], x.input[1], x.input[2], w.input[0], w.input[1], w.input[2],
                                                 q.input[1], q.input[2], b.input[0]], [q.output[0]],
                                 name=conv.name + "_quant")
        qconv.attribute.extend(conv.attribute)
        replaced[id(q)] = qconv
        dropped.update({id(conv), id(w), id(b)} | ({id(activation)} if activation is not None else set()))
    contrib_ops(graph, tensors, dequantized, consumers, replaced, dropped)
    nodes = [replaced.get(id(n), n) for n in graph.node if id(n) not in dropped]
    # DequantizeLinear and Constant nodes that nothing reads any more (a
    # QLinearConv reads x quantized; a folded Clip's bounds).
    while True:
        read = {i for n in nodes for i in n.input} | {o.name for o in graph.output}
        kept = [n for n in nodes if n.op_type not in ("DequantizeLinear", "Constant") or n.output[0] in read]
        if len(kept) == len(nodes):
            break
        nodes = kept
    read = {i for n in nodes for i in n.input}
    qgraph = helper.make_graph(nodes, graph.name.replace("_qdq", "_qoperator"), list(graph.input), list(graph.output),
                               [t for t in graph.initializer if t.name in read])
    model = helper.make_model(qgraph, opset_imports=list(qmodel.opset_import) + [helper.make_opsetid(MS, 1)],
                              producer_name=qmodel.producer_name)
    model.ir_version = qmodel.ir_version
    onnx.checker.check_model(model)
    return model


def contrib_ops(graph, tensors, dequantized, consumers, replaced, dropped):
    """Add, GlobalAveragePool and Gemm in the com.microsoft ops ONNX Runtime's
    quantizer writes for them (QLinearAdd, QLinearGlobalAveragePool, QGemm):
    each where every float input is a DequantizeLinear and (QGemm aside) its
    only reader a QuantizeLinear. The nodes they replace join `dropped`."""
    def quantized_by(node):
        after = consumers.get(node.output[0], [])
        return after[0] if len(after) == 1 and after[0].op_type == "QuantizeLinear" else None

    for node in graph.node:
        parts = [dequantized(i) for i in node.input]
        if not parts or any(p is None for p in parts):
            continue
        q = quantized_by(node)
        if node.op_type == "Add" and len(parts) == 2 and q is not None:
            (a, b), op = parts, "QLinearAdd"
            inputs = list(a.input) + list(b.input) + [q.input[1], q.input[2]]
        elif node.op_type == "GlobalAveragePool" and q is not None:
            op, inputs = "QLinearGlobalAveragePool", list(parts[0].input) + [q.input[1], q.input[2]]
        elif node.op_type == "Gemm" and len(parts) == 3 and q is None:
            # C's scale is a_scale * b_scale (alpha 1, beta 1: torchvision's Linear), as quantize() wrote it.
            op, inputs = "QGemm", list(parts[0].input) + list(parts[1].input) + [parts[2].input[0]]
        else:
            continue
        out = q.output[0] if q is not None else node.output[0]
        qnode = helper.make_node(op, inputs, [out], name=node.name + "_quant", domain=MS)
        if op == "QLinearGlobalAveragePool":
            qnode.attribute.extend([helper.make_attribute("channels_last", 0)])
        if op == "QGemm":
            qnode.attribute.extend(a for a in node.attribute if a.name in ("transA", "transB", "alpha"))
        replaced[id(q if q is not None else node)] = qnode
        dropped.update({id(node)} if q is not None else set())
        if op == "QGemm":
            dropped.update({id(parts[1]), id(parts[2])})


def write(target, model, inputs, shown=0):
    """TARGET/model.onnx and test_data_set_0 (`inputs`, TensorProtos in input
    order, and ONNX Runtime's output), written whole or not at all; prints the
    op counts above `shown`."""
    staging = target + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(os.path.join(staging, "test_data_set_0"))
    onnx.save(model, os.path.join(staging, "model.onnx"))
    for n, tensor in enumerate(inputs):
        onnx.save_tensor(tensor, os.path.join(staging, "test_data_set_0", f"input_{n}.pb"))
    subprocess.run(["node", INFER_JS, os.path.join(staging, "model.onnx"), os.path.join(staging, "test_data_set_0")],
                   check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(staging, target)
    counts = {}
    for node in model.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    print(f"{target}/model.onnx: " + ", ".join(f"{op} {n}" for op, n in sorted(counts.items()) if n > shown))


def export(name, models, force):
    source = os.path.join(models, name)
    done = all(os.path.exists(os.path.join(models, f"{name}-{form}", "model.onnx"))
               for form in ("qdq", "qoperator", "qdq7", "qoperator7"))
    if done and not force:
        print(f"{models}/{name}-qdq, -qoperator, -qdq7, -qoperator7: exist (--force to write them again)")
        return
    model = fold_batch_norm(onnx.load(os.path.join(source, "model.onnx")))
    test_input = numpy_helper.to_array(onnx.load_tensor(os.path.join(source, "test_data_set_0", "input_0.pb")))
    rng = np.random.default_rng(SEED)
    samples = [[test_input]] + [[rng.standard_normal(test_input.shape).astype(np.float32)]
                                for _ in range(EXTRA_INPUTS)]
    initializers = {t.name for t in model.graph.initializer}
    with tempfile.TemporaryDirectory() as folder:
        ranges = calibrate(model, activations(model, initializers), samples, folder)
    inputs = [numpy_helper.from_array(test_input, model.graph.input[0].name)]
    for suffix, weight_qmax in (("", 127), ("7", 64)):  # 8-bit weights; 7-bit (reduce_range)
        qmodel = quantize(model, ranges, weight_qmax)
        write(os.path.join(models, f"{name}-qdq{suffix}"), qmodel, inputs)
        write(os.path.join(models, f"{name}-qoperator{suffix}"), as_qoperator(qmodel), inputs)


def quantize_dynamic(model, weight_qmax):
    """ONNX Runtime's quantize_dynamic form of `model`: each MatMul with a
    constant weight becomes DynamicQuantizeLinear (the activation, uint8, its
    scale and zero point computed per call) -> MatMulInteger with the weight
    int8 per tensor, symmetric in [-weight_qmax, weight_qmax] -> Cast to float
    -> Mul by x_scale * w_scale."""
    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    nodes, added = [], []
    for k, node in enumerate(graph.node):
        if node.op_type != "MatMul" or node.input[1] not in initializers:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(initializers[node.input[1]])
        scale = np.float32(max(float(np.abs(w).max()), 1e-12) / weight_qmax)
        base = f"matmul{k}"
        added += [numpy_helper.from_array(np.clip(np.rint(w / scale), -weight_qmax, weight_qmax).astype(np.int8),
                                          f"{base}_w_q"),
                  numpy_helper.from_array(np.array(scale, np.float32), f"{base}_w_scale"),
                  numpy_helper.from_array(np.array(0, np.int8), f"{base}_w_zp")]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [node.input[0]], [f"{base}_x_q", f"{base}_x_scale", f"{base}_x_zp"],
                             name=f"{base}_DynamicQuantizeLinear"),
            helper.make_node("MatMulInteger", [f"{base}_x_q", f"{base}_w_q", f"{base}_x_zp", f"{base}_w_zp"],
                             [f"{base}_int32"], name=f"{base}_MatMulInteger"),
            helper.make_node("Cast", [f"{base}_int32"], [f"{base}_float"], to=onnx.TensorProto.FLOAT,
                             name=f"{base}_Cast"),
            helper.make_node("Mul", [f"{base}_x_scale", f"{base}_w_scale"], [f"{base}_scale"], name=f"{base}_scale_Mul"),
            helper.make_node("Mul", [f"{base}_float", f"{base}_scale"], [node.output[0]], name=f"{base}_Mul")]
    used = {i for n in nodes for i in n.input}
    qgraph = helper.make_graph(nodes, graph.name + "_dynamic", list(graph.input), list(graph.output),
                               [t for t in graph.initializer if t.name in used] + added)
    qmodel = helper.make_model(qgraph, opset_imports=list(model.opset_import), producer_name="onnx-fuse export_quantized")
    qmodel.ir_version = model.ir_version
    onnx.checker.check_model(qmodel)
    return qmodel


def export_dynamic(name, folder, force):
    """FOLDER/NAME-dynamic: FOLDER/NAME dynamically quantized with 7-bit weights
    (ONNX Runtime's reduce_range: its u8 x s8 kernels on AVX2 without VNNI
    saturate 8-bit ones), with NAME's test inputs and ONNX Runtime's output."""
    target = os.path.join(folder, f"{name}-dynamic")
    if os.path.exists(os.path.join(target, "model.onnx")) and not force:
        print(f"{target}: exists (--force to write it again)")
        return
    model = quantize_dynamic(onnx.load(os.path.join(folder, name, "model.onnx")), 64)
    source = os.path.join(folder, name, "test_data_set_0")
    inputs = [onnx.load_tensor(os.path.join(source, f"input_{n}.pb")) for n in range(len(model.graph.input))]
    write(target, model, inputs, shown=8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=os.path.join(ROOT, "models"))
    parser.add_argument("--force", action="store_true")
    parser.add_argument("names", nargs="*", default=DEFAULT)
    args = parser.parse_args()
    for name in args.names:
        if not os.path.exists(os.path.join(args.models, name, "model.onnx")):
            print(f"export_quantized: {args.models}/{name}/model.onnx is missing (scripts/export_models.py {name})",
                  file=sys.stderr)
            return 2
        export(name, args.models, args.force)
    if args.names == DEFAULT:
        dynamic = os.path.join(args.models, "dynamic")
        for name in DYNAMIC:
            if not os.path.exists(os.path.join(dynamic, name, "model.onnx")):
                print(f"export_quantized: {dynamic}/{name}/model.onnx is missing (scripts/export_dynamic.py)",
                      file=sys.stderr)
                return 2
            export_dynamic(name, dynamic, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
