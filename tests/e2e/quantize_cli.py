#!/usr/bin/python3
"""`onnx-fuse quantize` (calibrate a float model on sample inputs, write it as
a QDQ model, report its accuracy) on ResNet-18 and on the BERT-shaped encoder
of scripts/export_dynamic.py, against ONNX Runtime and against its own report.

    tests/e2e/quantize_cli.py BIN MODELS_DIR WORK_DIR

ResNet-18 (MODELS_DIR/resnet18/model.onnx) is calibrated on a folder made in
WORK_DIR: set_0 holds the model's test_data_set_0 input, set_1..set_3
standard normal inputs (fixed seed). Checks:
  1. `quantize` exits 0 and writes a QDQ model: every Conv and Gemm reads its
     weight (input 1) from a DequantizeLinear of an INT8 initializer with
     per-channel scales (scale length = output channels, `axis` the output
     channel axis) and its bias, where it has one, from a DequantizeLinear of
     an INT32 initializer; every Conv's input 0 is a DequantizeLinear output;
     every QuantizeLinear's zero point is uint8; onnx.checker passes.
  2. ONNX Runtime (scripts/ort/infer.js, graph optimizations disabled: the
     QDQ model's nodes as they are written) runs the float and the written
     model on each sample; `onnx-fuse run OUT.onnx` differs from ONNX
     Runtime's run of OUT.onnx (max abs) by less than quantizing changes
     ONNX Runtime's own output (its float model's against its QDQ model's,
     max abs), on every sample, and has ONNX Runtime's top-1 class on the
     test image (set_0).
  3. The report is right: max_abs_error, mean_abs_error, max_abs_float and
     top1_agreement recomputed from `onnx-fuse run` of the float and the
     written model on every sample equal the report's (rtol 1e-5); rows is
     the number of rows over all samples; quantized_layers is the number of
     Conv+Gemm of the written model reading DequantizeLinear weights, and
     quantized_activations its number of QuantizeLinear nodes; every
     entry of `layers` names a node of the input model (and every Conv/Gemm
     of the input model has one); calibration.samples is 4, method minmax,
     max_error null, weight_bits 8.
  4. `--max-error E`, E between two middle relative_rms_error values of run 1
     (so strictly between its smallest and largest): the report gives
     exactly the layers over E quantized:false with a reason, the others
     quantized:true without; in the written model exactly those nodes read
     a float weight initializer (no DequantizeLinear on input 1) and every
     other Conv/Gemm reads DequantizeLinear weights; quantized_layers counts
     the latter; max_error is E.
  5. `--method percentile` exits 0; calibration.method is "percentile" (and
     calibration.percentile 99.999); every activation QuantizeLinear's scale
     is <= the minmax model's scale for the same activation (QuantizeLinear
     nodes matched by their input name; the same set of activations) up to
     float rounding, and at least one is strictly smaller.
  6. `--weight-bits 7` exits 0, weight_bits is 7 in the report, every int8
     weight value is within [-63, 63] and at least one is +-63.
  7. Bad input, each leaving no output file: -o naming the input model (a
     copy in WORK_DIR, by the same path and by another spelling of it) exits
     2 and leaves its bytes unchanged; a calibration folder that does not
     exist exits 5; an empty calibration folder exits 5; --weight-bits 6
     exits 2.
BERT-shaped encoder (MODELS_DIR/dynamic/bert_encoder/model.onnx, int64
input_ids and attention_mask [1, S], token ids below the vocabulary of 1000):
  8. calibrated on 3 samples of lengths 16, 32 and 48 (sub-folders),
     `quantize` exits 0; the written model has MatMul nodes reading
     DequantizeLinear weights of INT8 initializers; at length 24 `onnx-fuse
     run` of the written model differs from ONNX Runtime's run of it (max
     abs, every output) by less than quantizing changes ONNX Runtime's output
     there (float model against QDQ model, max abs).
A missing model or tool fails; nothing is skipped.

Exit status: 0 every check holds; 1 otherwise; 2 usage.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INFER_JS = os.path.join(ROOT, "scripts", "ort", "infer.js")
SEED = 20261101
SAMPLES = 4  # set_0 (the test image) and set_1..set_3 (standard normal)
RTOL = 1e-5
BERT_LENGTHS = [16, 32, 48]
BERT_CHECK_LENGTH = 24
BERT_VOCAB = 1000
PRODUCTS = ("Conv", "Gemm")


def read_tensor(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def write_dir(folder, tensors):
    os.makedirs(folder, exist_ok=True)
    for i, (name, value) in enumerate(tensors):
        with open(os.path.join(folder, "input_%d.pb" % i), "wb") as f:
            f.write(numpy_helper.from_array(value, name).SerializeToString())


def read_outputs(folder, count):
    return [read_tensor(os.path.join(folder, "output_%d.pb" % i)) for i in range(count)]


def max_abs(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0


class Check:
    def __init__(self, binary, work):
        self.bin, self.work, self.failures = binary, work, []

    def expect(self, ok, what):
        print("%-4s %s" % ("ok" if ok else "FAIL", what))
        if not ok:
            self.failures.append(what)
        return ok

    def quantize(self, model, out, calibration, *extra, report=None):
        args = [self.bin, "quantize", model, "-o", out, "--calibration", calibration] + list(extra)
        if report:
            args += ["--report", report]
        return subprocess.run(args, capture_output=True, text=True)

    def quantize_ok(self, what, model, out, calibration, *extra):
        """Runs quantize with a report; the report (dict) or None."""
        report = out + ".json"
        for f in (out, report):
            if os.path.exists(f):
                os.remove(f)
        p = self.quantize(model, out, calibration, *extra, report=report)
        if not self.expect(p.returncode == 0 and os.path.exists(out) and os.path.exists(report),
                           "%s: quantize exits %d%s" % (what, p.returncode,
                                                        ": " + p.stderr.strip()[-400:] if p.returncode else "")):
            return None
        with open(report) as f:
            return json.load(f)

    def ort(self, model, sample, tag, outputs):
        """ONNX Runtime's outputs of MODEL at SAMPLE (a folder of input_N.pb), in
        a scratch copy of it (infer.js writes its outputs into the folder it reads)."""
        folder = os.path.join(self.work, "ort", tag)
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(sample, folder, ignore=shutil.ignore_patterns("output_*"))
        p = subprocess.run(["node", INFER_JS, model, folder, "--threads", "1", "--optimization", "disabled"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("ONNX Runtime failed on %s: %s" % (model, p.stderr.strip()[-400:]))
        return read_outputs(folder, outputs)

    def run(self, model, sample, tag, outputs, shapes=None):
        """`onnx-fuse run MODEL --inputs SAMPLE`'s outputs (fused, the default)."""
        folder = os.path.join(self.work, "run", tag)
        shutil.rmtree(folder, ignore_errors=True)
        args = [self.bin, "run", model, "--inputs", sample, "--outputs", folder, "--iterations", "1",
                "--warmup", "0"]
        for name, shape in (shapes or {}).items():
            args += ["--input-shape", "%s=%s" % (name, "x".join(str(d) for d in shape))]
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(args), p.stderr.strip()[-400:]))
        return read_outputs(folder, outputs)


# --- the written model -----------------------------------------------------------


class Graph:
    def __init__(self, path):
        self.model = onnx.load(path)
        g = self.model.graph
        self.inits = {t.name: t for t in g.initializer}
        self.producer = {o: n for n in g.node for o in n.output}
        self.nodes = list(g.node)

    def array(self, name):
        return numpy_helper.to_array(self.inits[name])

    def dequantized(self, value):
        """The DequantizeLinear node writing VALUE, or None."""
        n = self.producer.get(value)
        return n if n is not None and n.op_type == "DequantizeLinear" else None

    def products(self):
        return [n for n in self.nodes if n.op_type in PRODUCTS]

    def reads_dq_weight(self, node):
        return len(node.input) > 1 and self.dequantized(node.input[1]) is not None

    def activation_scales(self):
        """QuantizeLinear's input name -> its scale."""
        return {n.input[0]: float(self.array(n.input[1])) for n in self.nodes if n.op_type == "QuantizeLinear"}

    def int8_weights(self):
        """(node, int8 weight array) of every Conv/Gemm/MatMul reading DequantizeLinear weights."""
        out = []
        for n in self.nodes:
            if n.op_type in PRODUCTS + ("MatMul",) and len(n.input) > 1:
                dq = self.dequantized(n.input[1])
                if dq is not None and dq.input[0] in self.inits:
                    out.append((n, self.inits[dq.input[0]]))
        return out


def attribute(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def check_qdq(check, path):
    """Check 1's structure of the written model."""
    g = Graph(path)
    problems = []
    for n in g.products():
        dq = g.dequantized(n.input[1])
        if dq is None or dq.input[0] not in g.inits:
            problems.append("%s %s: weight not read through a DequantizeLinear of an initializer" % (n.op_type, n.name))
            continue
        w = g.inits[dq.input[0]]
        axis = attribute(dq, "axis", 1)
        out_axis = 0 if n.op_type == "Conv" or attribute(n, "transB", 0) else 1
        scale = g.array(dq.input[1])
        if w.data_type != onnx.TensorProto.INT8:
            problems.append("%s: weight %s is %s, not INT8" % (n.name, w.name, onnx.TensorProto.DataType.Name(w.data_type)))
        if scale.ndim != 1 or scale.size != w.dims[out_axis] or axis != out_axis:
            problems.append("%s: weight scale of shape %s along axis %s, expected %d along axis %d" %
                            (n.name, scale.shape, axis, w.dims[out_axis], out_axis))
        if len(dq.input) > 2 and dq.input[2]:
            zero = g.array(dq.input[2])
            if zero.dtype != np.int8 or zero.any():
                problems.append("%s: weight zero point %s %s, expected int8 zeros" % (n.name, zero.dtype, zero.ravel()[:4]))
        if len(n.input) > 2 and n.input[2]:
            bq = g.dequantized(n.input[2])
            if bq is None or bq.input[0] not in g.inits or g.inits[bq.input[0]].data_type != onnx.TensorProto.INT32:
                problems.append("%s: bias not read through a DequantizeLinear of an INT32 initializer" % n.name)
        if n.op_type == "Conv" and g.dequantized(n.input[0]) is None:
            problems.append("Conv %s: input %s is not a DequantizeLinear output" % (n.name, n.input[0]))
    quantizes = [n for n in g.nodes if n.op_type == "QuantizeLinear"]
    for n in quantizes:
        if len(n.input) < 3 or n.input[2] not in g.inits or g.inits[n.input[2]].data_type != onnx.TensorProto.UINT8:
            problems.append("QuantizeLinear %s: zero point is not a uint8 initializer" % n.name)
    for p in problems[:10]:
        print("     " + p)
    check.expect(not problems and g.products() and quantizes,
                 "1: %s is QDQ: %d Conv/Gemm with int8 per-channel weights and int32 biases, every Conv reading a "
                 "DequantizeLinear, %d QuantizeLinear with uint8 zero points (%d problems)" %
                 (os.path.basename(path), len(g.products()), len(quantizes), len(problems)))
    try:
        onnx.checker.check_model(g.model, full_check=True)
        check.expect(True, "1: onnx.checker passes on %s" % os.path.basename(path))
    except onnx.checker.ValidationError as e:
        check.expect(False, "1: onnx.checker fails on %s: %s" % (os.path.basename(path), str(e)[:300]))
    return g


# --- ResNet-18 -------------------------------------------------------------------


def make_calibration(model, test_data, folder):
    shutil.rmtree(folder, ignore_errors=True)
    name = model.graph.input[0].name
    first = read_tensor(os.path.join(test_data, "input_0.pb"))
    rng = np.random.default_rng(SEED)
    samples = [first] + [rng.standard_normal(first.shape).astype(np.float32) for _ in range(SAMPLES - 1)]
    dirs = []
    for i, x in enumerate(samples):
        d = os.path.join(folder, "set_%d" % i)
        write_dir(d, [(name, x)])
        dirs.append(d)
    return dirs


def check_report_accuracy(check, report, floats, quants, names):
    """Check 3: the report's output accuracy from run's outputs (one list per sample)."""
    by_name = {o["name"]: o for o in report.get("outputs", [])}
    check.expect(sorted(by_name) == sorted(names), "3: report outputs %s, model outputs %s" % (sorted(by_name), names))
    for k, name in enumerate(names):
        f = [s[k].astype(np.float64) for s in floats]
        q = [s[k].astype(np.float64) for s in quants]
        diff = np.concatenate([np.abs(a - b).ravel() for a, b in zip(f, q)])
        want = {"max_abs_error": float(diff.max()), "mean_abs_error": float(diff.mean()),
                "max_abs_float": float(max(np.abs(a).max() for a in f))}
        if f[0].ndim == 2 and f[0].shape[1] > 1:
            agree = [int(np.argmax(a[r]) == np.argmax(b[r])) for a, b in zip(f, q) for r in range(a.shape[0])]
            want["top1_agreement"] = sum(agree) / len(agree)
            want["rows"] = len(agree)
        got = by_name.get(name, {})
        for key, value in want.items():
            have = got.get(key)
            ok = have is not None and np.isclose(have, value, rtol=RTOL, atol=1e-12)
            check.expect(ok, "3: report %s.%s = %s, recomputed from `run` %s" % (name, key, have, value))
        extra = {"top1_agreement", "rows"} & set(got) - set(want)
        check.expect(not extra, "3: report %s has no %s (not a [N, C] output)" % (name, sorted(extra)) if extra else
                     "3: report %s carries top1_agreement/rows exactly when [N, C>1]" % name)


def resnet(check, models):
    model_path = os.path.join(models, "resnet18", "model.onnx")
    test_data = os.path.join(models, "resnet18", "test_data_set_0")
    float_model = onnx.load(model_path, load_external_data=False)
    names = [o.name for o in float_model.graph.output]
    input_nodes = {n.name for n in float_model.graph.node}
    input_products = [n.name for n in float_model.graph.node if n.op_type in PRODUCTS]
    work = os.path.join(check.work, "resnet18")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    calibration = os.path.join(work, "calibration")
    samples = make_calibration(float_model, test_data, calibration)

    # 1. minmax
    q8 = os.path.join(work, "q8.onnx")
    report = check.quantize_ok("1: minmax", model_path, q8, calibration)
    if report is None:
        return
    g = check_qdq(check, q8)

    # 2. against ONNX Runtime; 3. the report against `run`
    floats, quants = [], []
    for i, s in enumerate(samples):
        ort_f = check.ort(model_path, s, "resnet18_float_%d" % i, len(names))
        ort_q = check.ort(q8, s, "resnet18_q8_%d" % i, len(names))
        ours = check.run(q8, s, "resnet18_q8_%d" % i, len(names))
        floats.append(check.run(model_path, s, "resnet18_float_%d" % i, len(names)))
        quants.append(ours)
        for k, name in enumerate(names):
            quantization, runtimes = max_abs(ort_f[k], ort_q[k]), max_abs(ort_q[k], ours[k])
            check.expect(runtimes < quantization,
                         "2: set_%d %s: run vs ORT on the QDQ model max abs %.4g < quantization's change in ORT %.4g" %
                         (i, name, runtimes, quantization))
        if i == 0:
            check.expect(int(np.argmax(ours[0])) == int(np.argmax(ort_q[0])),
                         "2: set_0 top-1: run %d, ORT %d (ORT float model %d)" %
                         (int(np.argmax(ours[0])), int(np.argmax(ort_q[0])), int(np.argmax(ort_f[0]))))

    check_report_accuracy(check, report, floats, quants, names)
    dq_products = [n.name for n in g.products() if g.reads_dq_weight(n)]
    check.expect(report.get("quantized_layers") == len(dq_products),
                 "3: quantized_layers %s = Conv+Gemm reading DequantizeLinear weights in the model (%d)" %
                 (report.get("quantized_layers"), len(dq_products)))
    quantize_nodes = sum(1 for n in onnx.load(q8).graph.node if n.op_type == "QuantizeLinear")
    check.expect(report.get("quantized_activations") == quantize_nodes,
                 "3: quantized_activations %s = QuantizeLinear nodes in the model (%d)" %
                 (report.get("quantized_activations"), quantize_nodes))
    layers = report.get("layers", [])
    layer_names = [l.get("node") for l in layers]
    unknown = [n for n in layer_names if n not in input_nodes]
    check.expect(layers and not unknown, "3: every one of %d report layers names a node of the input model%s" %
                 (len(layers), " (not: %s)" % unknown[:5] if unknown else ""))
    check.expect(sorted(layer_names) == sorted(input_products),
                 "3: report layers are the input model's %d Conv/Gemm (report has %d)" %
                 (len(input_products), len(layers)))
    check.expect(all(l.get("quantized") is True and "reason" not in l for l in layers),
                 "3: without --max-error every layer is quantized:true without a reason")
    cal = report.get("calibration", {})
    check.expect(cal.get("samples") == SAMPLES and cal.get("method") == "minmax" and "percentile" not in cal and
                 report.get("max_error", "missing") is None and report.get("weight_bits") == 8,
                 "3: calibration %s, max_error %s, weight_bits %s" %
                 (cal, report.get("max_error", "missing"), report.get("weight_bits")))

    # 4. --max-error
    errors = {l["node"]: l["relative_rms_error"] for l in layers}
    ordered = sorted(errors.values())
    middle = len(ordered) // 2
    limit = (ordered[middle - 1] + ordered[middle]) / 2
    over = {n for n, e in errors.items() if e > limit}
    qe = os.path.join(work, "qmax_error.onnx")
    report_e = check.quantize_ok("4: --max-error %.6g" % limit, model_path, qe, calibration, "--max-error", repr(limit))
    if report_e is not None:
        ge = Graph(qe)
        reported_float = {l["node"] for l in report_e["layers"] if l.get("quantized") is False}
        reasons = all(bool(l.get("reason")) == (l.get("quantized") is False) for l in report_e["layers"])
        check.expect(reported_float == over and reasons and 0 < len(over) < len(errors),
                     "4: --max-error %.6g: report keeps float exactly the %d layers over it (%d reported false), "
                     "a reason exactly on those" % (limit, len(over), len(reported_float)))
        same = {l["node"]: l["relative_rms_error"] for l in report_e["layers"]}
        check.expect(same.keys() == errors.keys() and all(np.isclose(same[n], errors[n], rtol=RTOL) for n in same),
                     "4: layer errors equal the first run's")
        float_nodes = {n.name for n in ge.products() if not ge.reads_dq_weight(n)}
        float_weights = all(n.input[1] in ge.inits and ge.inits[n.input[1]].data_type == onnx.TensorProto.FLOAT
                            for n in ge.products() if n.name in float_nodes)
        check.expect(float_nodes == over and float_weights,
                     "4: the written model's Conv/Gemm reading float weight initializers are exactly those %d "
                     "(%d read float%s)" % (len(over), len(float_nodes), "" if float_weights else ", not all initializers"))
        check.expect(report_e.get("quantized_layers") == len(ge.products()) - len(float_nodes) and
                     report_e.get("max_error") is not None and np.isclose(report_e["max_error"], limit, rtol=1e-12),
                     "4: quantized_layers %s (model: %d), max_error %s" %
                     (report_e.get("quantized_layers"), len(ge.products()) - len(float_nodes), report_e.get("max_error")))

    # 5. percentile
    qp = os.path.join(work, "qpercentile.onnx")
    report_p = check.quantize_ok("5: --method percentile", model_path, qp, calibration, "--method", "percentile")
    if report_p is not None:
        cal = report_p.get("calibration", {})
        check.expect(cal.get("method") == "percentile" and cal.get("percentile") is not None and
                     np.isclose(cal["percentile"], 99.999),
                     "5: report calibration %s" % cal)
        minmax, pct = g.activation_scales(), Graph(qp).activation_scales()
        check.expect(minmax.keys() == pct.keys(), "5: the same %d activations quantized (percentile: %d)" %
                     (len(minmax), len(pct)))
        common = [a for a in minmax if a in pct]
        larger = [a for a in common if pct[a] > minmax[a] * (1 + 1e-6)]
        smaller = [a for a in common if pct[a] < minmax[a] * (1 - 1e-6)]
        check.expect(not larger, "5: no percentile scale above the minmax one%s" %
                     ("" if not larger else " (%s: %g > %g)" % (larger[0], pct[larger[0]], minmax[larger[0]])))
        check.expect(bool(smaller), "5: %d of %d percentile scales strictly smaller than minmax (smallest ratio %.4g)" %
                     (len(smaller), len(common), min([pct[a] / minmax[a] for a in common] or [1])))

    # 6. 7-bit weights
    q7 = os.path.join(work, "q7.onnx")
    report_7 = check.quantize_ok("6: --weight-bits 7", model_path, q7, calibration, "--weight-bits", "7")
    if report_7 is not None:
        weights = Graph(q7).int8_weights()
        values = [numpy_helper.to_array(t) for _, t in weights]
        low = min(int(v.min()) for v in values) if values else None
        high = max(int(v.max()) for v in values) if values else None
        check.expect(len(weights) == len(input_products) and report_7.get("weight_bits") == 7 and
                     values and low >= -63 and high <= 63 and (low == -63 or high == 63),
                     "6: %d int8 weights within [%s, %s] (want within [-63, 63], touching +-63), weight_bits %s" %
                     (len(weights), low, high, report_7.get("weight_bits")))

    # 7. bad input
    bad_input(check, model_path, calibration, work)


def bad_input(check, model_path, calibration, work):
    copy_dir = os.path.join(work, "copy")
    os.makedirs(copy_dir)
    copy = os.path.join(copy_dir, "model.onnx")
    shutil.copyfile(model_path, copy)
    with open(copy, "rb") as f:
        before = f.read()
    for spelling in (copy, os.path.join(work, "calibration", "..", "copy", ".", "model.onnx")):
        p = check.quantize(copy, spelling, calibration)
        with open(copy, "rb") as f:
            unchanged = f.read() == before
        check.expect(p.returncode == 2 and unchanged,
                     "7: -o %s (the input model) exits %d (want 2), input model %s" %
                     (spelling, p.returncode, "unchanged" if unchanged else "CHANGED"))
    out = os.path.join(work, "bad.onnx")
    empty = os.path.join(work, "empty_calibration")
    os.makedirs(empty)
    for what, calib, extra, want in (("a calibration folder that does not exist", os.path.join(work, "missing"), [], 5),
                                     ("an empty calibration folder", empty, [], 5),
                                     ("--weight-bits 6", calibration, ["--weight-bits", "6"], 2)):
        report = out + ".json"
        p = check.quantize(copy, out, calib, *extra, report=report)
        written = [f for f in (out, report) if os.path.exists(f)]
        check.expect(p.returncode == want and not written, "7: %s exits %d (want %d), %s" %
                     (what, p.returncode, want, "writes %s" % written if written else "writes nothing"))
        for f in written:
            os.remove(f)


# --- BERT-shaped encoder -----------------------------------------------------------


def bert_sample(rng, length):
    ids = rng.integers(0, BERT_VOCAB, (1, length), dtype=np.int64)
    mask = np.ones((1, length), np.int64)
    mask[0, length - length // 8:] = 0
    return [("input_ids", ids), ("attention_mask", mask)]


def bert(check, models):
    model_path = os.path.join(models, "dynamic", "bert_encoder", "model.onnx")
    model = onnx.load(model_path, load_external_data=False)
    inputs = [i.name for i in model.graph.input]
    names = [o.name for o in model.graph.output]
    if not check.expect(inputs == ["input_ids", "attention_mask"], "8: bert_encoder inputs %s" % inputs):
        return
    work = os.path.join(check.work, "bert_encoder")
    shutil.rmtree(work, ignore_errors=True)
    calibration = os.path.join(work, "calibration")
    rng = np.random.default_rng(SEED + 1)
    for i, length in enumerate(BERT_LENGTHS):
        write_dir(os.path.join(calibration, "set_%d" % i), bert_sample(rng, length))
    q8 = os.path.join(work, "q8.onnx")
    report = check.quantize_ok("8: bert_encoder lengths %s" % BERT_LENGTHS, model_path, q8, calibration)
    if report is None:
        return
    g = Graph(q8)
    matmuls = [n for n, t in g.int8_weights() if n.op_type == "MatMul" and t.data_type == onnx.TensorProto.INT8]
    all_matmuls = [n for n in g.nodes if n.op_type == "MatMul"]
    check.expect(len(matmuls) > 0, "8: %d of %d MatMul read DequantizeLinear int8 weights; report: %s samples, "
                 "%s quantized layers" % (len(matmuls), len(all_matmuls), report.get("calibration", {}).get("samples"),
                                          report.get("quantized_layers")))
    sample = os.path.join(work, "check_%d" % BERT_CHECK_LENGTH)
    feed = bert_sample(rng, BERT_CHECK_LENGTH)
    write_dir(sample, feed)
    ort_f = check.ort(model_path, sample, "bert_float", len(names))
    ort_q = check.ort(q8, sample, "bert_q8", len(names))
    ours = check.run(q8, sample, "bert_q8", len(names), {n: v.shape for n, v in feed})
    for k, name in enumerate(names):
        quantization, runtimes = max_abs(ort_f[k], ort_q[k]), max_abs(ort_q[k], ours[k])
        check.expect(runtimes < quantization,
                     "8: S=%d %s: run vs ORT on the QDQ model max abs %.4g < quantization's change in ORT %.4g" %
                     (BERT_CHECK_LENGTH, name, runtimes, quantization))


def main():
    if len(sys.argv) != 4:
        print("usage: " + __doc__.strip().splitlines()[4].strip(), file=sys.stderr)
        return 2
    binary, models, work = sys.argv[1:]
    check = Check(os.path.abspath(binary), os.path.abspath(work))
    os.makedirs(check.work, exist_ok=True)
    for what, path in (("onnx-fuse", binary), ("ResNet-18", os.path.join(models, "resnet18", "model.onnx")),
                       ("its test input", os.path.join(models, "resnet18", "test_data_set_0", "input_0.pb")),
                       ("bert_encoder", os.path.join(models, "dynamic", "bert_encoder", "model.onnx")),
                       ("infer.js", INFER_JS)):
        check.expect(os.path.isfile(path), "%s at %s" % (what, path))
    if shutil.which("node") is None:
        check.expect(False, "node (ONNX Runtime) on PATH")
    if not check.failures:
        for part in (resnet, bert):
            try:
                part(check, models)
            except (OSError, RuntimeError, ValueError, KeyError, subprocess.SubprocessError) as e:
                check.expect(False, "%s: %s: %s" % (part.__name__, type(e).__name__, e))
    for f in check.failures:
        print("FAIL " + f)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
