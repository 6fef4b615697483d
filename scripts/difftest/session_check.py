"""The session check (issue 24): a graph with its batch made symbolic, through
one onnxfuse.InferenceSession at several batch sizes, each batch run in
passes of one sample and in one pass (src/session/batch_passes.h), against
ONNX Runtime at each batch. The library runs in a child process
(session_probe.py), so that a crash is a failure record like the others.

The batch is the first input's leading dim, and that of every other input
of its rank and leading dim when it is above 1; a batch ORT cannot run (a Reshape to a fixed batch, ...) is left out; a batch
the session refuses (UnsupportedError, InvalidModelError) is a note, not a
failure. Anything else the session raises, a crash, or outputs beyond the
tester's tolerance (runner.RTOL) are failures.
"""
import os
import subprocess
import sys

import numpy as np
import onnx

from .runner import TIMEOUT, compare, draw

BATCHES = (1, 3, 4)
SYMBOL = "N"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "session_probe.py")
REFUSALS = ("UnsupportedError", "InvalidModelError")


def batched_inputs(model):
    """The graph inputs (initializers listed as inputs excepted) that carry the
    batch: the first, and when its leading dim is above 1 every other of its
    rank and leading dim (a leading dim of 1 broadcasts, and stays fixed)."""
    initializers = {i.name for i in model.graph.initializer}
    inputs = [vi for vi in model.graph.input if vi.name not in initializers]
    if not inputs:
        return []
    first = inputs[0].type.tensor_type.shape.dim
    if not first or not first[0].HasField("dim_value"):
        return []
    lead, rank = first[0].dim_value, len(first)
    return [vi.name for vi in inputs
            if vi is inputs[0] or (lead > 1 and len(vi.type.tensor_type.shape.dim) == rank
                                   and vi.type.tensor_type.shape.dim[0].dim_value == lead)]


def forget_shapes(graph):
    """Every dim of GRAPH's outputs unknown and its value_info dropped, in its
    subgraphs (If, Loop, Scan bodies) too: shapes inferred at the exported
    batch would contradict another."""
    for vo in graph.output:
        for d in vo.type.tensor_type.shape.dim:
            d.Clear()
    del graph.value_info[:]
    for node in graph.node:
        for attr in node.attribute:
            for sub in list(attr.graphs) + ([attr.g] if attr.HasField("g") else []):
                forget_shapes(sub)


def symbolic_copy(model):
    """MODEL with dim 0 of its batched inputs named N and its other shapes
    forgotten (forget_shapes); None when its first input has no fixed leading
    dim."""
    batched = set(batched_inputs(model))
    if not batched:
        return None
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for vi in m.graph.input:
        if vi.name in batched:
            vi.type.tensor_type.shape.dim[0].dim_param = SYMBOL
    forget_shapes(m.graph)
    return m


def batch_inputs(model, batch):
    """Inputs at BATCH (the leading dim of those named N), drawn as compare.js
    draws them (seeded by batch and position)."""
    initializers = {i.name for i in model.graph.initializer}
    feed = {}
    for i, vi in enumerate(v for v in model.graph.input if v.name not in initializers):
        dims = [batch if d.dim_param == SYMBOL else d.dim_value for d in vi.type.tensor_type.shape.dim]
        feed[vi.name] = draw(1000 * batch + i + 1, int(np.prod(dims)), vi.type.tensor_type.elem_type).reshape(dims)
    return feed


def module_dir(binary):
    """The onnxfuse Python module beside the binary's build tree, else build/python."""
    beside = os.path.join(os.path.dirname(os.path.abspath(binary)), "python")
    return beside if os.path.isdir(os.path.join(beside, "onnxfuse")) else os.path.join(ROOT, "build", "python")


def run_session(runner, b, strategy):
    """The session check of built graph B. Returns (failures, note, batches checked)."""
    sym = symbolic_copy(b.model)
    if sym is None:
        return [], None, 0
    path = os.path.join(b.folder, "symbolic.onnx")
    onnx.save(sym, path)
    feeds, refs = {}, {}
    for batch in BATCHES:
        feed = batch_inputs(sym, batch)
        ref = runner.ort(path, feed)
        if not isinstance(ref, str):
            feeds[batch], refs[batch] = feed, [ref.get(n) for n in b.names]
    if not feeds:
        return [], None, 0
    given, got = os.path.join(b.folder, "session_in.npz"), os.path.join(b.folder, "session_out.npz")
    np.savez(given, **{"%d|%s" % (batch, k): v for batch, feed in feeds.items() for k, v in feed.items()})
    env = dict(os.environ, PYTHONPATH=module_dir(runner.bin) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    via = ["session", strategy, 1]
    try:
        p = subprocess.run([sys.executable, PROBE, path, strategy, given, got], capture_output=True, text=True,
                           env=env, timeout=2 * TIMEOUT)
    except subprocess.TimeoutExpired:
        return [{"kind": "session-error", "check": "InferenceSession", "message": "timed out", "via": via}], None, 0
    err = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    if p.returncode == 3 and (err.startswith(REFUSALS) or err.startswith("ModuleNotFoundError")):
        return [], "session check: " + err.split(":")[0], 0
    if p.returncode != 0:
        return [{"kind": "session-crash" if p.returncode < 0 else "session-error", "check": "InferenceSession",
                 "message": err[:300] or "exit %d" % p.returncode, "via": via}], None, 0
    out = np.load(got)
    fails, note, checked = [], None, 0
    for batch in feeds:
        if "%d|error" % batch in out.files:
            message = str(out["%d|error" % batch])
            if message.startswith(REFUSALS):
                note = "session check: a batch refused (%s)" % message.split(":")[0]
                continue
            fails.append({"kind": "session-error", "check": "InferenceSession at batch %d" % batch,
                          "message": message, "via": via})
            continue
        runs = {mode: [out["%d|%s|%d" % (batch, mode, i)] for i in range(len(b.names))] for mode in ("passes", "whole")}
        if compare(refs[batch], runs["passes"], b.names, "-", "-"):
            # As run_ort does: ORT without its graph optimizations agreeing with
            # both of ours means ORT's optimizer changed the result (seed
            # 91129247: Transpose then MatMul by a 1-D constant, wrong in ORT 1.30
            # optimized, right with its kernels alone).
            from .trial import OPTIMIZER_NOTE, ort_optimizer_differs  # trial imports this module
            plain = runner.ort(path, feeds[batch], optimize=False)
            if not isinstance(plain, str) and ort_optimizer_differs(b, refs[batch], plain,
                                                                    [runs["passes"], runs["whole"]]):
                note = OPTIMIZER_NOTE
                refs[batch] = [plain.get(n) for n in b.names]
        for kind, ref, cand, check in (
                ("session-vs-ort", refs[batch], runs["passes"], "ORT vs InferenceSession in passes, batch %d" % batch),
                ("session-passes-vs-whole", runs["whole"], runs["passes"],
                 "InferenceSession in one pass vs in passes, batch %d" % batch)):
            shapes = [(r.shape if r is not None else None, c.shape) for r, c in zip(ref, cand)]
            if any(r != c for r, c in shapes):
                fails.append({"kind": kind, "check": check, "message": "shapes %s" % shapes, "via": via})
                continue
            f = compare(ref, cand, b.names, kind, check)
            if f:
                f["via"] = via
                fails.append(f)
        checked += 1
    return fails, note, checked
