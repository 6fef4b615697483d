#!/usr/bin/python3
"""Quantized models (scripts/export_quantized.py: ResNet-18, MobileNet-V2 and
EfficientNet-B0 in the two formats ONNX Runtime's static quantizer writes,
QDQ and QOperator with its com.microsoft ops, with 8-bit and with 7-bit
weights) through `onnx-fuse run`, fused and unfused, and through
onnxfuse.InferenceSession, against ONNX Runtime.

    tests/e2e/quantized.py BIN MODELS_DIR WORK_DIR [--models NAME,...] [--require-vnni]

--models limits the check to some of the three models (ctest's
e2e.quantized.AVX2 and e2e.quantized.VNNI run ResNet-18 only: the two int8
paths, whichever the CPU runs natively in e2e.quantized). --require-vnni
reports the test as skipped (exit 77) where oneDNN runs without VNNI (the
CPU has none, or ONEDNN_MAX_CPU_ISA caps it).

Each plan is compared with the ONNX Runtime run that does its arithmetic:
  - a plan whose convolutions run in float (the unfused plan; the fused one
    where int8 is not used) with ONNX Runtime with graph optimizations
    disabled (scripts/ort/infer.js --optimization disabled) on the QDQ
    model: every QuantizeLinear and DequantizeLinear as the model states
    it, around float convolutions. The QOperator twin computes the same
    quantization (each QLinearConv is its QDQ form), so the QDQ model's run
    is its reference too;
  - a plan whose convolutions run int8 (integer sums, then one float
    requantization) with ONNX Runtime with all optimizations on the model
    itself, which runs its int8 kernels (QLinearConv) the same way. Its
    kernels on AVX2 without VNNI may saturate 16-bit pair sums with 8-bit
    weights, as its documentation warns; onnx-fuse takes int8 there only
    with 7-bit weights, which do not.
Where two runs sum a convolution in another order, an output near a
rounding boundary of the next QuantizeLinear can land one step apart, and a
deep network carries such steps on (a random-weight MobileNet-V2's top two
classes can then trade places between ONNX Runtime's own two runs); so the
checks are, per model:
  - the fused plan runs every quantization (a QuantizeLinear, or the output
    of a QLinearConv, which runs as its QDQ form) in one step, and has no
    host step (`run --json`'s steps): a quantize_dequantize step (float in,
    float out), a quantize step (the integer tensor an int8 convolution
    reads), the int8 convolution that writes it, a lookup step (an
    elementwise function of another quantized tensor, int8_lookup.h) or a
    quantized_add step (an Add of two quantized tensors, int8_add.h);
  - every convolution runs on oneDNN's int8 kernel (its step's `data_type` u8
    or s8, whatever the implementation is called) where the
    CPU sums u8 x s8 products without saturating (VNNI) or the weights are
    7-bit, and none otherwise (backend/lower/fused/int8_conv.h);
  - `run --check` holds, and compares at least one quantized activation per
    convolution, each layer on the same integers in the fused and unfused
    plans (backend/runtime/verify.h);
  - the model's plan file holds every prepacked constant (int8 weights with
    oneDNN's compensation data too), used as stored when it is loaded here;
  - the session's outputs, and those of the model's plan file, equal `run`'s
    fused ones, bit for bit;
  - fused, unfused and session outputs have their reference's top-1 class,
    and their difference from it (compare.js's max rel) is below what
    quantizing the model changed in ONNX Runtime's own output (its float
    model's against its QDQ model's): the runtimes differ by less than the
    quantization does.
The difference from the other ONNX Runtime run is printed, not checked. A
missing model, module or tool fails.

Exit status: 0 every check holds; 1 otherwise; 77 skipped (--require-vnni).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from zoo_check import max_rel  # noqa: E402

INFER_JS = os.path.join(ROOT, "scripts", "ort", "infer.js")
MODELS = ["resnet18", "mobilenet_v2", "efficientnet_b0"]
FORMS = ["qdq", "qoperator", "qdq7", "qoperator7"]


def read(path):
    return numpy_helper.to_array(onnx.load_tensor(path))


def ort(model, inputs, folder, level):
    os.makedirs(folder, exist_ok=True)
    subprocess.run(["cp", os.path.join(inputs, "input_0.pb"), folder], check=True)
    subprocess.run(["node", INFER_JS, model, folder, "--threads", "1", "--optimization", level], check=True,
                   capture_output=True)
    return read(os.path.join(folder, "output_0.pb"))


def run(binary, model, inputs, folder, fuse, check=False):
    args = [binary, "run", model, "--inputs", inputs, "--outputs", folder, "--threads", "1", "--iterations", "1",
            "--warmup", "0", "--json"] + ([] if fuse else ["--no-fuse"]) + (["--check"] if check else [])
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args), p.stderr.strip()[-400:]))
    return read(os.path.join(folder, "output_0.pb")), json.loads(p.stdout.strip().splitlines()[-1])


def check_model(binary, models, work, base, form, failures):
    name = "%s-%s" % (base, form)
    model = os.path.join(models, name, "model.onnx")
    data = os.path.join(models, name, "test_data_set_0")
    x = read(os.path.join(data, "input_0.pb"))
    folder = os.path.join(work, name)
    reference = ort(os.path.join(models, base, "model.onnx"), data, os.path.join(folder, "ort_float"), "disabled")
    # The QOperator twin is the QDQ model's quantization with each convolution
    # as one QLinearConv (and Add, GlobalAveragePool, Gemm as QLinearAdd,
    # QLinearGlobalAveragePool, QGemm), which ONNX Runtime runs on its int8
    # kernels at every optimization level: the QDQ model's nodes as they are
    # stand for both.
    bits = "7" if form.endswith("7") else ""
    qdq = os.path.join(models, base + "-qdq" + bits, "model.onnx")
    expected = ort(qdq, data, os.path.join(folder, "ort_disabled"), "disabled")
    # The model itself in ONNX Runtime, all optimizations on: its int8 kernels
    # (QLinearConv, QLinearAdd, QGemm, ...), or its QDQ fusions.
    optimized = ort(model, data, os.path.join(folder, "ort_all"), "all")
    quantization = max_rel(reference, expected)

    fused, report = run(binary, model, data, os.path.join(folder, "fused"), True, check=True)
    unfused, _ = run(binary, model, data, os.path.join(folder, "unfused"), False)
    import onnxfuse  # build/python, on PYTHONPATH
    session = onnxfuse.InferenceSession(model, threads=1)
    served = session.run(None, {session.get_inputs()[0].name: x})[0]
    # Its plan file (int8 weights are packed again from the model when it is loaded).
    plan = os.path.join(folder, "model.plan")
    # Written at the one thread it runs at: oneDNN's int8 kernels for VNNI
    # pick their weight layout by thread count.
    subprocess.run([binary, model, "-o", plan], check=True, capture_output=True,
                   env=dict(os.environ, OMP_NUM_THREADS="1"))
    planned, plan_report = run(binary, plan, data, os.path.join(folder, "plan"), True)

    nodes = onnx.load(model).graph.node
    # Every op whose output is quantized: QuantizeLinear, and the QOperators that end in one.
    pairs = sum(1 for n in nodes if n.op_type in ("QuantizeLinear", "QLinearConv", "QLinearAdd",
                                                  "QLinearGlobalAveragePool"))
    convs = sum(1 for n in nodes if n.op_type in ("Conv", "QLinearConv"))
    steps = report["steps"]
    kinds = [step["kind"] for step in steps]
    int8 = [s for s in steps if s["kind"] == "conv" and s["data_type"] in ("u8", "s8")]
    writers = kinds.count("quantize_dequantize") + kinds.count("quantize") + kinds.count("lookup") + \
        kinds.count("quantized_add") + \
        sum(1 for s in int8 if s["label"].endswith("QuantizeLinear"))
    print("%s (oneDNN at %s): %d quantizations, %d steps write them, %d of %d convolutions int8, %d host steps; "
          "quantization changed ORT's output by max rel %.3g" % (name, report["cpu_isa"], pairs, writers, len(int8),
                                                                 convs, kinds.count("host"), quantization))
    if writers != pairs or "host" in kinds:
        failures.append("%s: the fused plan does not run every quantization as one step" % name)
    want_int8 = convs if bits or has_vnni(report["cpu_isa"]) else 0
    if len(int8) != want_int8:
        failures.append("%s: %d convolutions run int8, expected %d" % (name, len(int8), want_int8))
    quantized = report["check"].get("quantized", [])
    print("  --check: %s; %d quantized activations, at most %g steps apart" %
          ("ok" if report["check"]["ok"] else "FAILED", len(quantized), max([q["max_steps"] for q in quantized] or [0])))
    if not report["check"]["ok"] or len(quantized) < convs or not all(q["ok"] for q in quantized):
        failures.append("%s: run --check fails or compares fewer quantized activations (%d) than convolutions (%d)" %
                        (name, len(quantized), convs))
    if not np.array_equal(served, fused):
        failures.append("%s: the session's output differs from run's fused output" % name)
    use = plan_report["plan_file_use"]
    if use["constants_repacked"] or use["constants_relaid"]:
        failures.append("%s: its plan file's constants were not used as stored (%d repacked, %d reordered)" %
                        (name, use["constants_repacked"], use["constants_relaid"]))
    if not np.array_equal(planned, fused):
        failures.append("%s: its plan file's output differs from run's fused output" % name)
    for label, actual, int8_plan in (("fused", fused, bool(int8)), ("unfused", unfused, False),
                                     ("session", served, bool(int8))):
        reference_run, other_run = (optimized, expected) if int8_plan else (expected, optimized)
        rel = max_rel(reference_run, actual)
        same_class = int(actual.argmax()) == int(reference_run.argmax())
        print("  %-8s max rel %.3g against ORT (%s, its reference), %.3g against ORT (%s); top-1 %s" %
              (label, rel, "all" if int8_plan else "disabled", max_rel(other_run, actual),
               "disabled" if int8_plan else "all", "same" if same_class else "DIFFERS"))
        if not same_class or not rel < quantization:
            failures.append("%s %s: max rel %.3g against ORT, top-1 %s (quantization: %.3g)" %
                            (name, label, rel, "same" if same_class else "differs", quantization))
    return report["cpu_isa"]


def has_vnni(isa):
    """Whether oneDNN's ISA (`run --json`'s cpu_isa, capped by ONEDNN_MAX_CPU_ISA) has VNNI."""
    return isa in ("avx2_vnni", "avx512_core_vnni", "avx512_core_bf16", "avx512_core_amx")


def main():
    parser = argparse.ArgumentParser(usage=__doc__.strip().splitlines()[3].strip())
    parser.add_argument("binary")
    parser.add_argument("models")
    parser.add_argument("work")
    parser.add_argument("--models", dest="names", default=",".join(MODELS))
    parser.add_argument("--require-vnni", action="store_true")
    args = parser.parse_args()
    names = args.names.split(",")
    if any(n not in MODELS for n in names):
        parser.error("--models takes some of " + ",".join(MODELS))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(args.binary)), "python"))
    failures = []
    for name in names:
        for form in FORMS:
            try:
                isa = check_model(args.binary, args.models, args.work, name, form, failures)
            except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
                failures.append("%s-%s: %s" % (name, form, e))
                continue
            if args.require_vnni and not has_vnni(isa):
                print("SKIPPED: oneDNN runs at %s here, without VNNI: the VNNI int8 path cannot run" % isa)
                return 77
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
