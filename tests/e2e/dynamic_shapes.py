#!/usr/bin/python3
"""Run-time shapes against ONNX Runtime: the two transformer workloads of
scripts/export_dynamic.py (models/dynamic/), each through one
onnxfuse.InferenceSession at changing shapes and through `onnx-fuse run
--input-shape` at two of them, every output against ONNX Runtime's at the
same inputs (scripts/ort/infer.js) within 1e-4 relative (zoo_check.max_rel,
compare.js's measure).

    tests/e2e/dynamic_shapes.py BIN MODELS_DIR WORK_DIR

bert_encoder: sequence lengths 8, 37, 128 and 37 again (a cached shape);
bert_encoder-dynamic (scripts/export_quantized.py: ONNX Runtime's
quantize_dynamic form) the same, within what the quantization changed ONNX
Runtime's output (encoder()).
gpt2_decoder_step: 5 tokens after a 16-token cache, each call's present_*
fed back as the next call's past_*. The encoder's session must have fused
once (stats()["fused_once"]) and compiled once per distinct shape. The
decoder's must have compiled its first shape only, then run every
later call in stages around the cache's attention, compiling no stage after
its third call. A missing model, module or tool fails; nothing is skipped.

Exit status: 0 every output within tolerance; 1 otherwise.
"""
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from zoo_check import max_rel  # noqa: E402

RTOL = 1e-4
INFER_JS = os.path.join(ROOT, "scripts", "ort", "infer.js")


def write_dir(folder, tensors, prefix):
    os.makedirs(folder, exist_ok=True)
    for i, (name, value) in enumerate(tensors):
        with open(os.path.join(folder, "%s_%d.pb" % (prefix, i)), "wb") as f:
            f.write(numpy_helper.from_array(value, name).SerializeToString())


def read_dir(folder, prefix, count):
    return [numpy_helper.to_array(onnx.load_tensor(os.path.join(folder, "%s_%d.pb" % (prefix, i))))
            for i in range(count)]


class Check:
    def __init__(self, binary, work):
        self.bin, self.work, self.failures, self.calls = binary, work, [], 0

    def ort(self, model, feed, outputs):
        """ONNX Runtime's outputs of MODEL at FEED (input order)."""
        folder = os.path.join(self.work, "ort_%d" % self.calls)
        self.calls += 1
        shutil.rmtree(folder, ignore_errors=True)  # an earlier run's files must not be read as inputs
        write_dir(folder, feed, "input")
        p = subprocess.run(["node", INFER_JS, model, folder, "--threads", "1"], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError("ONNX Runtime failed on %s: %s" % (model, p.stderr.strip()[-300:]))
        return read_dir(folder, "output", outputs)

    def compare(self, what, ref, ours, names, rtol=RTOL):
        for name, r, o in zip(names, ref, ours):
            rel = max_rel(np.asarray(r), np.asarray(o))
            ok = rel is not None and rel <= rtol
            print("%-4s %-48s %-20s max rel %s" % ("ok" if ok else "FAIL", what, name, rel))
            if not ok:
                self.failures.append("%s %s: max rel %s" % (what, name, rel))

    def run_cli(self, model, feed, names, tag):
        """`onnx-fuse run` with every input pinned to FEED's shape."""
        inputs, outputs = os.path.join(self.work, tag + "_in"), os.path.join(self.work, tag + "_out")
        write_dir(inputs, feed, "input")
        args = [self.bin, "run", model, "--inputs", inputs, "--outputs", outputs, "--iterations", "1",
                "--warmup", "0", "--threads", "1"]
        for name, value in feed:
            args += ["--input-shape", "%s=%s" % (name, "x".join(str(d) for d in value.shape))]
        p = subprocess.run(args, capture_output=True, text=True)
        if p.returncode != 0:
            self.failures.append("run %s: exit %d: %s" % (tag, p.returncode, p.stderr.strip()[-300:]))
            return None
        return read_dir(outputs, "output", len(names))


def encoder(check, onnxfuse, models, name="bert_encoder"):
    """The encoder, or its dynamically quantized form (NAME-dynamic), whose
    tolerance is what quantizing changed ONNX Runtime's own output at the same
    inputs (its float model's against its quantized one's), as
    tests/e2e/quantized.py bounds the quantized image models: an activation
    within float rounding of a half step, computed in another order, rounds
    to the other integer in DynamicQuantizeLinear, and a step there is as
    large as the quantization's own error on what it feeds."""
    model = os.path.join(models, name, "model.onnx")
    quantized = name.endswith("-dynamic")
    session = onnxfuse.InferenceSession(model, threads=1)
    names = [o.name for o in session.get_outputs()]
    rng = np.random.default_rng(7)
    lengths = [8, 37, 128, 37]
    for i, length in enumerate(lengths):
        ids = rng.integers(0, 1000, (1, length), dtype=np.int64)
        mask = np.ones((1, length), np.int64)
        mask[0, length - length // 8:] = 0
        feed = [("input_ids", ids), ("attention_mask", mask)]
        ref = check.ort(model, feed, len(names))
        rtol = RTOL
        if quantized:
            float_ref = check.ort(model.replace("-dynamic", ""), feed, len(names))
            rtol = min(max_rel(np.asarray(f), np.asarray(q)) for f, q in zip(float_ref, ref))
        check.compare("%s session S=%d" % (name, length), ref, session.run(None, dict(feed)), names, rtol)
        if i < 2:
            ours = check.run_cli(model, feed, names, "%s_%d" % (name, length))
            if ours is not None:
                check.compare("%s run S=%d" % (name, length), ref, ours, names, rtol)
    stats = session.stats()
    if not stats["fused_once"] or stats["compiles"] != len(set(lengths)):
        check.failures.append("%s session: fused_once %s, %d compiles for %d shapes" % (
            name, stats["fused_once"], stats["compiles"], len(set(lengths))))


def decoder(check, onnxfuse, models):
    model = os.path.join(models, "gpt2_decoder_step", "model.onnx")
    session = onnxfuse.InferenceSession(model, threads=1)
    inputs = [i.name for i in session.get_inputs()]
    names = [o.name for o in session.get_outputs()]
    rng = np.random.default_rng(11)
    past = {n: rng.standard_normal((1, 4, 16, 64)).astype(np.float32) for n in inputs if n.startswith("past")}
    tokens = 5
    stages_after_third = None
    for t in range(tokens):
        feed = [(n, np.array([[17 + 31 * t]], np.int64) if n == "input_ids" else past[n]) for n in inputs]
        ref = check.ort(model, feed, len(names))
        ours = session.run(None, dict(feed))
        length = 16 + t
        check.compare("decoder session past=%d" % length, ref, ours, names)
        if t in (0, tokens - 1):
            cli = check.run_cli(model, feed, names, "decoder_%d" % length)
            if cli is not None:
                check.compare("decoder run past=%d" % length, ref, cli, names)
        past = {n: ref[names.index(n.replace("past", "present"))] for n in past}  # ORT's cache feeds both
        if t == 2:
            stages_after_third = session.stats()["stages_compiled"]
    stats = session.stats()
    if (not stats["fused_once"] or stats["compiles"] != 1 or stats["staged_runs"] != tokens - 1
            or stats["stages_compiled"] != stages_after_third):
        check.failures.append("decoder session: fused_once %s, %d compiles, %d staged runs for %d tokens, "
                              "%d stages compiled (%s after the third call)" % (
                                  stats["fused_once"], stats["compiles"], stats["staged_runs"], tokens,
                                  stats["stages_compiled"], stages_after_third))


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().splitlines()[7].strip(), file=sys.stderr)
        return 2
    binary, models, work = sys.argv[1:]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(binary)), "python"))
    import onnxfuse
    os.makedirs(work, exist_ok=True)
    check = Check(binary, work)
    encoder(check, onnxfuse, models)
    encoder(check, onnxfuse, models, "bert_encoder-dynamic")
    decoder(check, onnxfuse, models)
    for f in check.failures:
        print("FAIL " + f)
    return 1 if check.failures else 0


if __name__ == "__main__":
    sys.exit(main())
