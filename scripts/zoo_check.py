#!/usr/bin/python3
"""The zoo conformance run: every model of scripts/export_zoo.py
through onnx-fuse's two paths, checked against ONNX Runtime.

    scripts/zoo_check.sh [--bin build/onnx-fuse] [--zoo models/zoo] [--work DIR]
                         [--threads 1] [--timeout 600] [--rtol 1e-4] [NAME ...]

Per model:
  run   `onnx-fuse run MODEL --inputs DATA --outputs OUT`, every output
        compared with ONNX Runtime's reference outputs (export_zoo.py wrote
        them) by compare.js's measure: max|ref - ours| / max|ref|, <= rtol.
  fuse  `onnx-fuse MODEL -o fused.onnx`, then fused.onnx in ONNX Runtime
        (scripts/ort/infer.js) on the same inputs, compared with the same
        references by the same measure.
  The detectors' boxes, labels and scores are compared as sets of
  detections, tolerant of near-tied scores ranked the other way
  (compare_detections).

Each path ends as one of:
  pass            ran, every output within rtol
  refused         exit 4 (unsupported), the message naming the node and op
  internal error  exit 70, or killed by a signal
  wrong output    an output beyond rtol, of another shape, or missing; exit 6
                  (verification failed); the fused model failing in ORT
  slow step       (run) outputs right, but the fused plan runs a step on a slow
                  implementation (`run --json`'s slow_steps: oneDNN's reference
                  kernels, gemm convolutions); with --report-slow listed only
  timeout         longer than --timeout seconds
  error (exit N)  any other exit code (3: onnx-fuse calls the model invalid,
                  5: I/O), which ORT's acceptance of the model makes a bug too
The tolerance of a model is max(rtol, min(2 s, 10 s, 1e-3)) (tolerance()),
where s is how far torch and ONNX Runtime, two correct runtimes, already
differ on it (export.json's torch_vs_ort_max_rel, the worst of its outputs):
a difference within twice the references' own spread is not evidence of a
wrong output (fcn_resnet50 with random weights: s = 1.24e-4, and ORT differs
from itself with its optimizations off by 1.25e-4). The widening never goes
beyond 10 s nor beyond 1e-3, so a large spread cannot hide a wrong output;
rtol stays the floor. A NaN or infinite s (e.g. torch and ORT put NaNs in
different places) measures nothing: the model is an error, not given an
unbounded tolerance.
The table shows s and the tolerance used.
A model the exporter could not export (torch 1.13, export.json) is listed as
"not exported"; a model never exported (no folder) as "missing". A model
named by --must-pass is checked even when the NAME list leaves it out, and
fails when it is not exported.

Prints a markdown table on stdout (progress on stderr). Exit status 1 when any
path is an internal error, a wrong output, a slow step, an error or a timeout, a model is
missing (run scripts/export_zoo.py first), or a --must-pass model does not
pass both paths (a refusal or no export included); 0 otherwise (refusals are
clean). 2: bad usage.
"""

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INFER_JS = os.path.join(ROOT, "scripts", "ort", "infer.js")
FAILING = ("internal error", "wrong output", "timeout", "error", "missing", "slow step")

# The tolerance widens to SPREAD_FACTOR x the torch-vs-ORT spread, but never
# beyond SPREAD_CAP_FACTOR x the spread nor beyond TOLERANCE_CAP.
SPREAD_FACTOR = 2.0
SPREAD_CAP_FACTOR = 10.0
TOLERANCE_CAP = 1e-3


def model_spread(manifest):
    """export.json's torch_vs_ort_max_rel as one figure: the worst output's.

    The field is one figure or one per output; absent, null or [] is 0 (no
    spread measured). A NaN or infinite entry is returned as it is, whichever
    output holds it (max() would drop a NaN that is not first)."""
    value = manifest.get("torch_vs_ort_max_rel")
    values = [x for x in (value if isinstance(value, list) else [value]) if x is not None]
    if not values:
        return 0.0
    values = [float(x) for x in values]
    bad = [x for x in values if not math.isfinite(x)]
    return bad[0] if bad else max(values)


def tolerance(rtol, spread):
    """The max rel a model is allowed: max(rtol, min(2 s, 10 s, 1e-3)) for the
    torch-vs-ORT spread s. rtol is the floor, even when it is above the cap.

    Raises ValueError for a NaN, infinite or negative spread: such a figure
    measures nothing, and taken at face value it would allow any output."""
    spread = float(spread)
    if not math.isfinite(spread) or spread < 0:
        raise ValueError(f"torch vs ORT spread is {spread}: no tolerance can be derived from it")
    widened = min(SPREAD_FACTOR * spread, SPREAD_CAP_FACTOR * spread, TOLERANCE_CAP)
    return max(rtol, widened)


def zoo_names():
    """The models of export_zoo.py, in its order, without importing torch."""
    import ast

    source = open(os.path.join(ROOT, "scripts", "export_zoo.py")).read()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "zoo":
            for stmt in ast.walk(node):
                if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Dict):
                    return [k.value for k in stmt.value.keys]
    raise RuntimeError("scripts/export_zoo.py: no zoo() table found")


def read_tensors(folder, prefix):
    arrays = []
    for n in range(1000):
        path = os.path.join(folder, f"{prefix}_{n}.pb")
        if not os.path.exists(path):
            break
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        arrays.append((tensor.name, onnx.numpy_helper.to_array(tensor)))
    return arrays


def max_rel(ref, ours):
    """compare.js's measure; None when the two cannot be compared."""
    if ref.shape != ours.shape:
        return None
    if ref.size == 0:
        return 0.0
    a, b = ref.astype(np.float64), ours.astype(np.float64)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    if (nan_a != nan_b).any():
        return float("inf")
    keep = ~nan_a
    a, b = a[keep], b[keep]
    if a.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):
        d = np.where(a == b, 0.0, np.abs(a - b))
    diff = float(np.nan_to_num(d, nan=np.inf).max())
    finite = a[np.isfinite(a)]
    scale = float(np.abs(finite).max()) if finite.size else 0.0
    return 0.0 if diff == 0 else (float("inf") if scale == 0 else diff / scale)


def compare_outputs(refs, ours, rtol):
    """(worst max rel, problem or "") over the outputs, in order."""
    names = [name for name, _ in refs]
    if names[-3:] == ["boxes", "labels", "scores"] and len(ours) == len(refs):
        return compare_detections([a for _, a in refs], [a for _, a in ours], rtol)
    worst = 0.0
    for n, (name, ref) in enumerate(refs):
        if n >= len(ours):
            return None, f"output {n} ({name}) not written"
        rel = max_rel(ref, ours[n][1])
        if rel is None:
            return None, f"output {name}: shape {list(ours[n][1].shape)}, ORT {list(ref.shape)}"
        worst = max(worst, rel)
    return worst, (f"max rel {worst:.2e} > {rtol:g}" if worst > rtol else "")


def compare_detections(ref, ours, rtol):
    """A detector's boxes, labels and scores as a set of detections.

    With random weights many scores tie to within 1e-7, and the order of tied
    detections (or which of them survives the top-k and NMS) follows the last
    bits of the scores: position by position comparison would fail a correct
    model. Each reference detection is matched with one of ours of the same
    label, box and score (within rtol of the largest |box| and |score|); a
    detection left unmatched on either side passes only when its score is
    within that tolerance of the lowest score kept (at the top-k cut, it
    could have ranked either way). NMS keeping the other of two overlapping
    boxes of near-equal scores would fail: it looks like a wrong box.
    """
    (b0, l0, s0), (b1, l1, s1) = ref, ours
    if b0.ndim != 2 or b1.ndim != 2 or b0.shape[1:] != b1.shape[1:]:
        return None, f"boxes: shape {list(b1.shape)}, ORT {list(b0.shape)}"
    if not (len(b0) == len(l0) == len(s0) and len(b1) == len(l1) == len(s1)):
        return None, "boxes, labels and scores of different lengths"
    box_tol = rtol * max(float(np.abs(b0).max()) if b0.size else 0.0, 1e-30)
    score_tol = rtol * max(float(np.abs(s0).max()) if s0.size else 0.0, 1e-30)
    used = np.zeros(len(b1), dtype=bool)
    unmatched_ref = []
    worst = 0.0
    for i in range(len(b0)):
        box_err = np.abs(b1 - b0[i]).max(axis=1) if len(b1) else np.zeros(0)
        score_err = np.abs(s1.astype(np.float64) - s0[i])
        ok = (~used) & (l1 == l0[i]) & (box_err <= box_tol) & (score_err <= score_tol)
        if not ok.any():
            unmatched_ref.append(i)
            continue
        j = int(np.argmax(ok))
        used[j] = True
        worst = max(worst, float(box_err[j]) / box_tol * rtol, float(score_err[j]) / score_tol * rtol)
    unmatched_ours = np.nonzero(~used)[0]
    cutoff = min([float(s.min()) for s in (s0, s1) if s.size], default=0.0)
    bad = [f"ORT's #{i} (label {l0[i]}, score {s0[i]:.6g})" for i in unmatched_ref if abs(s0[i] - cutoff) > score_tol]
    bad += [f"our #{j} (label {l1[j]}, score {s1[j]:.6g})" for j in unmatched_ours if abs(s1[j] - cutoff) > score_tol]
    if bad:
        return float("inf"), f"{len(bad)} detections unmatched: {', '.join(bad[:3])}"
    return worst, ""


def execute(cmd, timeout):
    """(exit code, stdout, stderr, seconds); exit -SIGNAL when killed, None on timeout."""
    start = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        return None, out, err, time.time() - start
    return proc.returncode, proc.stdout, proc.stderr, time.time() - start


def last_line(text):
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def short_reason(stderr, model_path):
    """The refusal without the model's path: "node 'x' (Op): why"."""
    line = last_line(stderr)
    for prefix in (f"error: {model_path}: ", f"{model_path}: ", "error: "):
        if line.startswith(prefix):
            return line[len(prefix):]
    return line.replace(model_path + ": ", "")


def classify_exit(code, stderr, model_path):
    """A verdict for a non-zero exit, or None when it exited 0."""
    if code == 0:
        return None
    if code is None:
        return ("timeout", "")
    if code < 0:
        return ("internal error", f"signal {signal.Signals(-code).name}: {last_line(stderr)}")
    if code == 4:
        return ("refused", short_reason(stderr, model_path))
    if code == 70:
        return ("internal error", short_reason(stderr, model_path))
    if code == 6:
        return ("wrong output", short_reason(stderr, model_path))
    return (f"error (exit {code})", short_reason(stderr, model_path))


def slow_steps(stdout):
    """`run --json`'s slow_steps (its last line) as "kind impl (label)" strings."""
    try:
        steps = json.loads(last_line(stdout)).get("slow_steps", [])
    except (ValueError, AttributeError):
        return []
    return [f"{s.get('kind')} {s.get('impl')} ({s.get('label')})" for s in steps]


def check_run(args, model_path, data_dir, out_dir):
    code, out, err, secs = execute(
        [args.bin, "run", model_path, "--inputs", data_dir, "--outputs", out_dir,
         "--threads", str(args.threads), "--iterations", "1", "--warmup", "0", "--json"],
        args.timeout,
    )
    verdict = classify_exit(code, err, model_path)
    if verdict:
        return verdict + (None, secs)
    worst, problem = compare_outputs(read_tensors(data_dir, "output"), read_tensors(out_dir, "output"), args.rtol)
    if problem:
        return ("wrong output", problem, worst, secs)
    slow = slow_steps(out)
    if slow:
        return ("slow step", f"{len(slow)} on a slow implementation: {'; '.join(slow[:3])}", worst, secs)
    return ("pass", "", worst, secs)


def check_fuse(args, model_path, data_dir, work):
    fused = os.path.join(work, "fused.onnx")
    code, _, err, secs = execute([args.bin, model_path, "-o", fused, "-q"], args.timeout)
    verdict = classify_exit(code, err, model_path)
    if verdict:
        return verdict + (None, secs)
    # ONNX Runtime on the fused model, its outputs compared with ORT's on the
    # original (the references) by the same measure as `run`'s.
    fused_dir = os.path.join(work, "fused_outputs")
    os.makedirs(fused_dir, exist_ok=True)
    for name in os.listdir(data_dir):
        if name.startswith("input_"):
            shutil.copy(os.path.join(data_dir, name), fused_dir)
    code, out, err, secs2 = execute(["node", INFER_JS, fused, fused_dir], args.timeout)
    secs += secs2
    if code is None:
        return ("timeout", "ONNX Runtime on fused.onnx", None, secs)
    if code != 0:
        return ("wrong output", f"ONNX Runtime on fused.onnx: {last_line(err) or last_line(out)}", None, secs)
    worst, problem = compare_outputs(read_tensors(data_dir, "output"), read_tensors(fused_dir, "output"), args.rtol)
    return ("wrong output" if problem else "pass", f"ORT on fused.onnx: {problem}" if problem else "", worst, secs)


def fmt_rel(rel):
    return "" if rel is None else ("0" if rel == 0 else f"{rel:.1e}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="models to check (default: every zoo model)")
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "onnx-fuse"), help="onnx-fuse binary")
    parser.add_argument("--zoo", default=os.path.join(ROOT, "models", "zoo"), help="exported zoo (export_zoo.py --out)")
    parser.add_argument("--work", default=None, help="folder for outputs and fused models (default: a temporary one, removed)")
    parser.add_argument("--threads", type=int, default=1, help="threads for `run` (default 1)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per command (default 600)")
    parser.add_argument("--rtol", type=float, default=1e-4, help="max |ref - ours| / max |ref| (default 1e-4)")
    parser.add_argument("--report-slow", action="store_true",
                        help="a fused plan's slow steps are listed ('slow step') but do not fail the check")
    parser.add_argument("--must-pass", nargs="+", default=[], metavar="NAME",
                        help="models that must pass both paths: a refusal fails them too")
    args = parser.parse_args()

    names = zoo_names()
    unknown = [n for n in args.names + args.must_pass if n not in names]
    if unknown:
        parser.error(f"unknown model(s): {' '.join(unknown)}")
    if not os.access(args.bin, os.X_OK):
        parser.error(f"no onnx-fuse binary at {args.bin}")
    if not os.path.isdir(args.zoo):
        print(f"zoo_check: no zoo at {args.zoo}: run /usr/bin/python3 scripts/export_zoo.py first", file=sys.stderr)
        return 1
    work_root = args.work or tempfile.mkdtemp(prefix="onnx-fuse-zoo-")
    rows = []
    failed = False
    must_fail = []  # (name, why) of the --must-pass models that do not pass
    # The --must-pass models are checked even when the NAME list leaves them out.
    checked = (args.names or names) + [n for n in args.must_pass if args.names and n not in args.names]
    for name in checked:
        must_pass = name in args.must_pass
        model_dir = os.path.join(args.zoo, name)
        model_path = os.path.join(model_dir, "model.onnx")
        data_dir = os.path.join(model_dir, "test_data_set_0")
        manifest = {}
        if os.path.exists(os.path.join(model_dir, "export.json")):
            with open(os.path.join(model_dir, "export.json")) as f:
                manifest = json.load(f)
        if manifest.get("exported") is False:
            errors = "; ".join(f"{e['opset']}: {e['error']}" for e in manifest.get("failed_opsets", []))
            rows.append((name, "", "not exported", "not exported", None, None, f"torch export: {errors}", None, None))
            print(f"{name}: not exported ({errors})", file=sys.stderr, flush=True)
            # A torch limit is clean for the others; a model that must pass has to exist.
            if must_pass:
                failed = True
                must_fail.append((name, f"not exported ({errors or 'export.json: exported false'})"))
            continue
        if not os.path.exists(model_path) or not os.path.exists(os.path.join(data_dir, "output_0.pb")):
            rows.append((name, "", "missing", "missing", None, None, "run scripts/export_zoo.py first", None, None))
            failed = True
            if must_pass:
                must_fail.append((name, f"missing ({model_path})"))
            print(f"{name}: missing ({model_path})", file=sys.stderr, flush=True)
            continue
        opset = manifest.get("opset") or next(
            (o.version for o in onnx.load(model_path, load_external_data=False).opset_import if o.domain in ("", "ai.onnx")), "")
        spread = model_spread(manifest)
        try:
            tol = tolerance(args.rtol, spread)
        except ValueError as e:
            rows.append((name, opset, "error", "error", None, None, f"export.json: {e}", spread, None))
            failed = True
            if must_pass:
                must_fail.append((name, f"export.json: {e}"))
            print(f"{name}: error: export.json: {e}", file=sys.stderr, flush=True)
            continue
        model_args = argparse.Namespace(**{**vars(args), "rtol": tol})
        work = os.path.join(work_root, name)
        out_dir = os.path.join(work, "outputs")
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(out_dir)
        run_v, run_why, run_rel, run_s = check_run(model_args, model_path, data_dir, out_dir)
        fuse_v, fuse_why, fuse_rel, fuse_s = check_fuse(model_args, model_path, data_dir, work)
        reasons = [f"{label}: {why}" for label, why in (("run", run_why), ("fuse", fuse_why)) if why]
        if run_why and run_why == fuse_why:
            reasons = [run_why]  # one reason when both paths give the same one
        rows.append((name, opset, run_v, fuse_v, run_rel, fuse_rel, "; ".join(reasons), spread, tol))
        failed |= any(v.startswith(FAILING) and not (args.report_slow and v == "slow step") for v in (run_v, fuse_v))
        if must_pass and (run_v, fuse_v) != ("pass", "pass") and not (args.report_slow and run_v == "slow step"):
            failed = True
            must_fail.append((name, f"run {run_v}, fuse path {fuse_v}"))
        print(f"{name}: run {run_v} ({run_s:.1f} s), fuse path {fuse_v} ({fuse_s:.1f} s) {'; '.join(reasons)}",
              file=sys.stderr, flush=True)
    if not args.work:
        shutil.rmtree(work_root, ignore_errors=True)

    print("| model | opset | run | fuse path (ORT) | max rel, run | max rel, fuse path | torch vs ORT | tolerance | reason |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, opset, run_v, fuse_v, run_rel, fuse_rel, why, spread, tol in rows:
        why = why.replace("|", "\\|")
        print(f"| {name} | {opset} | {run_v} | {fuse_v} | {fmt_rel(run_rel)} | {fmt_rel(fuse_rel)} "
              f"| {fmt_rel(spread)} | {fmt_rel(tol)} | {why} |")
    passed = sum(r[2] == "pass" and r[3] == "pass" for r in rows)
    print(f"\n{passed} of {len(rows)} models pass both paths (tolerance max({args.rtol:g}, min(2 x torch vs ORT, "
          f"10 x torch vs ORT, {TOLERANCE_CAP:g})), `run --threads {args.threads}`)")
    for name, why in must_fail:
        print(f"zoo_check: FAIL {name} must pass both paths: {why}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
