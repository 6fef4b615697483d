"""Runs one model through onnx-fuse (fused vs unfused, `run --check`), through
ONNX Runtime (a long-lived node worker, scripts/ort/serve.js) and through the
fuse path (`-o out.onnx`), and turns what happened into failure records.

A failure record is a dict: kind (what failed: fused-vs-unfused, internal-error,
crash, ort-vs-fused, ort-vs-unfused, fusepath-vs-original, ...), check (the
configuration: which command, strategy, threads), output/max_abs/max_rel when
numbers differ, message when a process failed. `key(f)` is what the shrinker
keeps constant while it shrinks.
"""
import base64
import json
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

from .nan_semantics import with_onnx_fuse_nan

RTOL = 1e-4
TIMEOUT = 60


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ToolMissing(Exception):
    """A tool a check needs is not there or died: node with onnxruntime-node
    (scripts/ort), or the onnxfuse Python module beside the binary. The run
    fails: a check that cannot run is never a pass."""


class OrtCrashed(Exception):
    """The ORT worker died on one model (ONNX Runtime crashed on it): a failure
    record of that graph, kind "ort-crash", never a pass. Three deaths in a row
    are a missing tool instead (ToolMissing)."""


def ort_crash(error, via):
    """The failure record of an OrtCrashed."""
    return {"kind": "ort-crash", "check": "ONNX Runtime", "message": str(error)[:300], "via": via}


def module_dir(binary):
    """The onnxfuse Python module beside the binary's build tree, else build/python."""
    beside = os.path.join(os.path.dirname(os.path.abspath(binary)), "python")
    return beside if os.path.isdir(os.path.join(beside, "onnxfuse")) else os.path.join(ROOT, "build", "python")


def require_tools(binary, node_dir):
    """Raises ToolMissing unless ONNX Runtime loads in node and the onnxfuse
    module imports (the ORT, fuse-path and session checks need them)."""
    try:
        p = subprocess.run(["node", "-e", "require('onnxruntime-node')"], cwd=node_dir, capture_output=True,
                           text=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ToolMissing("node cannot run: %s (scripts/setup.sh installs it)" % e)
    if p.returncode != 0:
        raise ToolMissing("ONNX Runtime does not load in node from %s: %s (scripts/setup.sh installs it)" %
                          (node_dir, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1][:200]))
    env = dict(os.environ, PYTHONPATH=module_dir(binary) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.run([sys.executable, "-c", "import onnxfuse"], capture_output=True, text=True, env=env,
                       timeout=TIMEOUT)
    if p.returncode != 0:
        raise ToolMissing("the onnxfuse Python module does not import from %s: %s (build the target onnxfuse_python)"
                          % (module_dir(binary), (p.stderr.strip().splitlines() or ["?"])[-1][:200]))


class Outcome:
    """One process run: ok, refused (op), invalid (generator bug) or a failure.
    slow: the fused plan's steps on a slow implementation (`run --json`'s
    slow_steps: oneDNN's reference kernels, gemm convolutions), as
    "kind impl (label)" strings; not a failure, but a campaign with any is not
    clean."""

    def __init__(self, status, failure=None, refused=None, message="", slow=()):
        self.status, self.failure, self.refused, self.message = status, failure, refused, message
        self.slow = list(slow)


def slow_steps(out):
    """`run --json`'s slow_steps from OUT (its last line), as strings."""
    try:
        steps = json.loads(out.strip().splitlines()[-1]).get("slow_steps", [])
    except (ValueError, IndexError, AttributeError):
        return []
    return ["%s %s (%s)" % (s.get("kind", "?"), s.get("impl", "?"), s.get("label", "?")[:80]) for s in steps]


def key(f):
    """Failures of the same kind: same kind, and for process errors the same
    message with names and numbers blanked (another internal error is another bug)."""
    msg = f.get("message", "") if f["kind"] in ("internal-error", "crash", "fuse-error") else ""
    msg = re.sub(r"'[^']*'|\"[^\"]*\"|\S*\.onnx\S*|[A-Za-z]+_\d+|\d+(\.\d+)?", "_", msg)
    return (f["kind"], msg[:120])


def uniform(seed, n):
    """scripts/ort/compare.js's generator, vectorized (its state only adds a constant): u in [0, 1)."""
    M = np.uint64(0xFFFFFFFF)
    s = (np.uint64(seed) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0x6D2B79F5)) & M
    t = ((s ^ (s >> np.uint64(15))) * (s | np.uint64(1))) & M
    t = ((t + (((t ^ (t >> np.uint64(7))) * (t | np.uint64(61))) & M)) & M) ^ t
    u = (t ^ (t >> np.uint64(14))) & M
    return u.astype(np.float64) / 4294967296.0


def mulberry32(seed, n):
    """compare.js's float32 inputs: 2u - 1, in [-1, 1)."""
    return (uniform(seed, n) * 2 - 1).astype(np.float32)


# ONNX element type -> numpy dtype, and how RandomInputs and compare.js draw it from u.
DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16,
          11: np.float64}
ORT_TYPES = {np.dtype(np.float32): "float32", np.dtype(np.uint8): "uint8", np.dtype(np.int8): "int8",
             np.dtype(np.int32): "int32", np.dtype(np.int64): "int64", np.dtype(np.bool_): "bool",
             np.dtype(np.float16): "float16", np.dtype(np.float64): "float64"}


def draw(seed, n, elem_type):
    """Floats 2u - 1 (float16 and float64: that float32 rounded or widened),
    integers floor(4u), bools u < 0.5 (src/ir/tensor_io.h, RandomInputs)."""
    dtype = DTYPES.get(elem_type)
    if dtype is None:
        raise ValueError("no generated inputs of element type %d" % elem_type)
    u = uniform(seed, n)
    if dtype == np.bool_:
        return u < 0.5
    if np.issubdtype(dtype, np.integer):
        return np.floor(u * 4).astype(dtype)
    return (u * 2 - 1).astype(np.float32).astype(dtype)


def exact_kind(a):
    """Integer and bool values are compared exactly."""
    return a.dtype.kind in "iub"


def max_rel(ref, cand):
    """max|ref-cand| / max|ref| (compare.js's measure); NaN must match NaN."""
    if ref.shape != cand.shape:
        return float("inf"), float("inf")
    a, b = ref.astype(np.float64).ravel(), cand.astype(np.float64).ravel()
    na, nb = np.isnan(a), np.isnan(b)
    if (na != nb).any():
        return float("inf"), float("inf")
    a, b = a[~na], b[~na]
    with np.errstate(invalid="ignore"):
        d = np.where(a == b, 0.0, np.abs(a - b))
    d = np.where(np.isnan(d), np.inf, d)
    mabs = float(d.max()) if d.size else 0.0
    fin = a[np.isfinite(a)]
    mref = float(np.abs(fin).max()) if fin.size else 0.0
    rel = 0.0 if mabs == 0 else (float("inf") if mref == 0 else mabs / mref)
    return mabs, rel


def refused_op(stderr):
    # The CLI names the node ("... node Conv_3 (Conv): ..."); take the op type.
    m = re.search(r"\((\w+)\)", stderr) or re.search(r"\b([A-Z][A-Za-z]+)_\d+", stderr)
    return m.group(1) if m else "?"


class Runner:
    def __init__(self, binary, node_dir):
        self.bin, self.node_dir, self.ort_proc, self.ort_deaths = binary, node_dir, None, 0

    def _exec(self, args):
        # The binary is rebuilt by others while campaigns run: while it is
        # missing or being written (ENOENT, EACCES, ETXTBSY), wait and retry.
        for attempt in range(240):
            try:
                p = subprocess.run([self.bin] + args, capture_output=True, text=True, timeout=TIMEOUT)
                return p.returncode, p.stdout, p.stderr.strip()
            except subprocess.TimeoutExpired:
                return "timeout", "", "timed out after %d s" % TIMEOUT
            except OSError:
                if attempt == 239:
                    raise
                time.sleep(0.5)

    def _classify(self, rc, err, check, fail_kind="fused-vs-unfused", out="", exact=()):
        if rc == 0:
            inexact = self._inexact(out, exact, check)
            return Outcome("fail", inexact) if inexact else Outcome("ok", slow=slow_steps(out))
        if rc == 4:
            return Outcome("refused", refused=refused_op(err), message=err)
        if rc == 3:
            return Outcome("invalid", message=err)
        f = {"check": check, "message": err.splitlines()[-1][:300] if err else ""}
        if rc == 1 and fail_kind == "fused-vs-unfused":
            try:
                check_json = json.loads(out.strip().splitlines()[-1])["check"]
                bad = [o for o in check_json["outputs"] if not o["ok"]]
                if bad:
                    worst = max(bad, key=lambda o: o["max_rel"])
                    f.update(kind=fail_kind, output=worst["output"], max_abs=worst["max_abs"],
                             max_rel=worst["max_rel"])
                    return Outcome("fail", f)
                # A quantized activation beyond the quantization rule (verify.h): in steps, no
                # max_rel, so no conditioning rule explains it away.
                steps = [q for q in check_json.get("quantized", []) if not q["ok"]]
                if steps:
                    f.update(kind="quantized-steps", output=steps[0]["value"], max_steps=steps[0]["max_steps"],
                             message="%s: %g steps, %.3g%% of it over one step" % (
                                 steps[0]["value"], steps[0]["max_steps"], 100 * steps[0]["share_over_one_step"]))
                    return Outcome("fail", f)
            except (ValueError, KeyError, IndexError, TypeError):
                pass
        if rc == 70:
            f["kind"] = "internal-error"
        elif rc == "timeout":
            f["kind"] = "timeout"
        elif isinstance(rc, int) and rc < 0:
            f["kind"], f["message"] = "crash", "signal %d: %s" % (-rc, f["message"])
        else:
            f["kind"] = "exit-%s" % rc
        return Outcome("fail", f)

    @staticmethod
    def _inexact(out, exact, check):
        """`run --check` passes outputs within 1e-4 relative; integer and bool
        outputs (names in EXACT) must agree exactly: a failure record, or None."""
        if not exact:
            return None
        try:
            outs = json.loads(out.strip().splitlines()[-1])["check"]["outputs"]
        except (ValueError, KeyError, IndexError, TypeError):
            return None
        bad = [o for o in outs if o.get("output") in exact and o.get("max_abs", 0) != 0]
        if not bad:
            return None
        worst = max(bad, key=lambda o: o["max_abs"])
        return {"check": check, "kind": "fused-vs-unfused", "output": worst["output"], "max_abs": worst["max_abs"],
                "max_rel": worst["max_rel"], "message": "integer output differs"}

    @staticmethod
    def _check_args(model, strategy, threads):
        return ["run", model, "--check", "--iterations", "1", "--warmup", "0", "--threads", str(threads),
                "--strategy", strategy, "--json"]

    def check(self, model, strategy, threads, exact=()):
        """`run --check`: the fused plan against the unfused one."""
        rc, out, err = self._exec(self._check_args(model, strategy, threads))
        return self._classify(rc, err, "run --check --strategy %s --threads %d" % (strategy, threads), out=out,
                              exact=exact)

    def check_all(self, model, strategy, threads, exact=()):
        """`run --check` at several thread counts at once (the runs are short and
        mostly single-threaded set-up: concurrently they take the time of one)."""
        try:
            procs = [subprocess.Popen([self.bin] + self._check_args(model, strategy, t), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for t in threads]
        except OSError:    # the binary is being rebuilt: the retrying path
            return [self.check(model, strategy, t, exact) for t in threads]
        outcomes = []
        for t, p in zip(threads, procs):
            try:
                out, err = p.communicate(timeout=TIMEOUT)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                rc, out, err = "timeout", "", "timed out after %d s" % TIMEOUT
            outcomes.append(self._classify(rc, err.strip(), "run --check --strategy %s --threads %d" % (strategy, t),
                                           out=out, exact=exact))
        return outcomes

    def outputs(self, model, strategy, threads, fuse, inputs_dir, out_dir):
        args = ["run", model, "--inputs", inputs_dir, "--outputs", out_dir, "--iterations", "1", "--warmup", "0",
                "--threads", str(threads), "--strategy", strategy]
        if not fuse:
            args.append("--no-fuse")
        rc, _, err = self._exec(args)
        mode = "fused %s" % strategy if fuse else "unfused"
        o = self._classify(rc, err, "run --outputs (%s, %d threads)" % (mode, threads), fail_kind="run")
        if o.status != "ok":
            return o, None
        arrays = []   # output_0.pb, output_1.pb, ... up to the first one missing (compare fails the rest)
        while os.path.exists(os.path.join(out_dir, "output_%d.pb" % len(arrays))):
            t = onnx.TensorProto()
            with open(os.path.join(out_dir, "output_%d.pb" % len(arrays)), "rb") as fh:
                t.ParseFromString(fh.read())
            arrays.append(numpy_helper.to_array(t))
        return o, arrays

    def fuse(self, model, strategy, out, report):
        rc, _, err = self._exec([model, "-o", out, "--strategy", strategy, "--report", report, "-q"])
        o = self._classify(rc, err, "fuse -o (--strategy %s)" % strategy, fail_kind="fuse")
        if o.failure:
            o.failure["kind"] = "fuse-error"
        return o

    # --- ONNX Runtime ---------------------------------------------------------
    def ort(self, model, inputs, optimize=True, onnx_fuse_nan=False):
        """Runs MODEL in ORT on {name: array}; returns {name: array}, or ORT's
        error string when it refuses the model. optimize=False runs it with
        ORT's graph optimizations disabled (its kernels alone). onnx_fuse_nan:
        as the reference for onnx-fuse's plans, with onnx-fuse's NaN semantics
        for Relu, Clip and HardSigmoid (nan_semantics.py). Raises
        OrtCrashed when the worker dies on the model (it restarts on the next
        call), ToolMissing when it cannot start or dies three times in a row."""
        if onnx_fuse_nan:
            model = with_onnx_fuse_nan(model)
        if self.ort_proc is None or self.ort_proc.poll() is not None:
            js = os.path.join(self.node_dir, "serve.js")
            try:
                self.ort_proc = subprocess.Popen(["node", js], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                 stderr=subprocess.DEVNULL, text=True)
            except OSError as e:
                raise ToolMissing("the ORT worker (node %s) cannot start: %s" % (js, e))
        req = {"model": os.path.abspath(model), "threads": 1, "optimize": optimize,
               "inputs": {k: {"dims": list(v.shape), "type": ORT_TYPES[v.dtype],
                              "data": base64.b64encode(np.ascontiguousarray(v).tobytes()).decode()}
                          for k, v in inputs.items()}}
        try:
            self.ort_proc.stdin.write(json.dumps(req) + "\n")
            self.ort_proc.stdin.flush()
            reply = json.loads(self.ort_proc.stdout.readline())
        except (BrokenPipeError, ValueError) as e:
            self.close()
            self.ort_deaths += 1
            if self.ort_deaths >= 3:
                raise ToolMissing("the ORT worker died %d times in a row, last on %s: %s" % (self.ort_deaths, model, e))
            raise OrtCrashed("ONNX Runtime died on %s: %s" % (model, e))
        self.ort_deaths = 0
        if "error" in reply:
            return reply["error"]
        by_name = {t: d for d, t in ORT_TYPES.items()}
        return {k: np.frombuffer(base64.b64decode(v["data"]), by_name[v.get("type", "float32")]).reshape(v["dims"])
                for k, v in reply["outputs"].items()}

    def close(self):
        if self.ort_proc is not None:
            try:
                self.ort_proc.stdin.close()
                self.ort_proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.ort_proc.kill()
            self.ort_proc = None


def make_inputs(model, folder):
    """compare.js's inputs (input N seeded N+1), also written as input_N.pb."""
    inputs = {}
    for i, vi in enumerate(model.graph.input):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        arr = draw(i + 1, int(np.prod(dims)), vi.type.tensor_type.elem_type).reshape(dims)
        inputs[vi.name] = arr
        with open(os.path.join(folder, "input_%d.pb" % i), "wb") as fh:
            fh.write(numpy_helper.from_array(arr, vi.name).SerializeToString())
    return inputs


def exact_outputs(model):
    """The names of MODEL's integer and bool outputs (compared exactly)."""
    return {o.name for o in model.graph.output
            if o.type.tensor_type.elem_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                                                    onnx.TensorProto.DOUBLE)}


def compare(ref, cand, names, kind, check, rtol=RTOL):
    """The worst output beyond RTOL (or `rtol`: a dynamically quantized graph's,
    quantized.RTOL_DYNAMIC) between two lists of arrays, as a failure
    record; integer and bool outputs must be equal and of the same type. Each
    list holds one array per name: a list that is short (an output not
    written) fails that output."""
    worst = None
    for i, name in enumerate(names):
        a = ref[i] if i < len(ref) else None
        b = cand[i] if i < len(cand) else None
        note = None
        if a is None or b is None:
            mabs, rel, bad, note = float("inf"), float("inf"), True, "output missing"
        elif a.dtype != b.dtype:
            mabs, rel, bad, note = float("inf"), float("inf"), True, "type %s vs %s" % (a.dtype, b.dtype)
        else:
            mabs, rel = max_rel(a, b)
            bad = rel > rtol or exact_kind(a) and mabs != 0
        if bad and (worst is None or rel > worst["max_rel"]):
            worst = {"kind": kind, "check": check, "output": name, "max_abs": mabs, "max_rel": rel}
            if note:
                worst["message"] = note
    return worst
