"""The session check: a graph with its batch made symbolic, and
in half the graphs one more dim, through one onnxfuse.InferenceSession at
several shapes, each run in passes of one sample and in one pass
(src/session/batch_passes.h), against ONNX Runtime at each shape. The library
runs in a child process (session_probe.py), so that a crash is a failure
record like the others.

The batch N is the first input's leading dim, and that of every other input
of its rank and leading dim when it is above 1. The shapes are drawn from the
graph's seed (the recipe's, kept by the shrinker; a saved case's "# seed:"
line), so that a failure reproduces: batch 1 and two batches from 2 to 8;
and, when the draw picks one, a later dim D of the first input above 1 (and
the same dim of the inputs that share the batch and that extent) made
symbolic too, run at its own extent and at another at the last batch. A
shape ORT cannot run (a Reshape to a fixed batch, a MatMul whose K changed,
...) is left out, and so is one where ONNX Runtime 1.30 is known to die
(ort_dies_at: TopK over rows of no elements, Einsum over an empty batch); a
shape the session refuses (UnsupportedError, InvalidModelError) is a note
when `onnx-fuse run` refuses it too (--input-shape pinned to it), and a
failure (session-refused) when run accepts it: both prepare a model through
one front door. Anything
else the session raises, a crash, or outputs beyond the tester's tolerance
(runner.RTOL) are failures; a mismatch records the shape it happened at,
where trial.keep_real judges it.
"""
import random
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

from .runner import RTOL, TIMEOUT, OrtCrashed, ToolMissing, compare, draw, module_dir

SYMBOL, DIM_SYMBOL = "N", "D"
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


def subgraphs(attr):
    """The graphs node attribute ATTR holds (If branches, Loop and Scan bodies)."""
    return list(attr.graphs) + ([attr.g] if attr.HasField("g") else [])


def forget_shapes(graph, subgraph=False):
    """Every dim of GRAPH's outputs unknown and its value_info dropped, in its
    subgraphs (If, Loop, Scan bodies) too, and there the inputs' dims as well:
    shapes inferred at the exported batch would contradict another (seed 1649:
    a Loop body declaring its carried input [2, 7, 1], the batch of 2 it was
    generated at, contradicts a batch of 1)."""
    for vo in list(graph.output) + (list(graph.input) if subgraph else []):
        for d in vo.type.tensor_type.shape.dim:
            d.Clear()
    del graph.value_info[:]
    for node in graph.node:
        for attr in node.attribute:
            for sub in subgraphs(attr):
                forget_shapes(sub, True)


# Resize's coordinate maps that divide by length_resized: ONNX's reference
# takes it as in * scale unrounded, ORT 1.30 as the output length, and
# onnx-fuse follows the reference (src/backend/kernels/resize.h). At the
# generated extents in * scale is whole; at another extent of D it may not
# be, and the two differ by design (seed 61129491: align_corners at scale 0.5
# of 11, tests/difftest/open/).
LENGTH_RESIZED_MODES = (b"align_corners", b"pytorch_half_pixel", b"tf_crop_and_resize")


def resizes_by_length(graph):
    """Whether GRAPH (or a subgraph) has a Resize whose coordinates follow length_resized."""
    for node in graph.node:
        for attr in node.attribute:
            if node.op_type == "Resize" and attr.name == "coordinate_transformation_mode" and \
                    attr.s in LENGTH_RESIZED_MODES:
                return True
            if any(resizes_by_length(sub) for sub in subgraphs(attr)):
                return True
    return False


def draw_shapes(model, first, seed):
    """The shapes graph SEED runs at: (axis of D in input FIRST or None,
    [(batch, extent of D or None), ...]). No D for a graph with a Resize
    whose coordinates follow length_resized (LENGTH_RESIZED_MODES)."""
    r = random.Random(seed * 104729 + 31)
    batches = [1] + sorted(r.sample(range(2, 9), 2))
    dims = next(vi for vi in model.graph.input if vi.name == first).type.tensor_type.shape.dim
    later = [a for a in range(1, len(dims)) if dims[a].HasField("dim_value") and dims[a].dim_value > 1]
    if not later or r.random() < 0.5 or resizes_by_length(model.graph):
        return None, [(b, None) for b in batches]
    axis = r.choice(later)
    extent = dims[axis].dim_value
    other = r.choice([e for e in (extent - 1, extent + 1, 2 * extent) if e >= 1 and e != extent])
    return axis, [(b, extent) for b in batches] + [(batches[-1], other)]


def symbolic_copy(model, batched, axis=None):
    """MODEL with dim 0 of its BATCHED inputs (batched_inputs) named N, and
    dim AXIS of those of the first one's extent there named D, its other
    shapes forgotten (forget_shapes)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inputs = {vi.name: vi for vi in m.graph.input}
    extent = inputs[batched[0]].type.tensor_type.shape.dim[axis].dim_value if axis is not None else None
    for name in batched:
        dims = inputs[name].type.tensor_type.shape.dim
        dims[0].dim_param = SYMBOL
        if axis is not None and len(dims) > axis and dims[axis].dim_value == extent:
            dims[axis].dim_param = DIM_SYMBOL
    forget_shapes(m.graph)
    return m


def at_shape(sym, shape):
    """The symbolic copy SYM with N and D pinned to SHAPE: the model `onnx-fuse
    run` takes with shape_inputs(sym, shape)."""
    m = onnx.ModelProto()
    m.CopyFrom(sym)
    sizes = {SYMBOL: shape[0], DIM_SYMBOL: shape[1]}
    for vi in m.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if d.dim_param in sizes:
                d.dim_value = sizes[d.dim_param]
    return m


def inputs_slice(model, node):
    """A copy of MODEL that computes NODE's inputs (as its outputs) and
    nothing after them: the nodes they depend on, in the graph's order."""
    producer = {o: n for n in model.graph.node for o in n.output}
    needed, stack = set(), [i for i in node.input if i]
    while stack:
        v = stack.pop()
        n = producer.get(v)
        if n is not None and id(n) not in needed:
            needed.add(id(n))
            stack += [i for i in n.input if i]
            # a Loop's or If's body reads values of the main graph by name
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    stack += [i for b in [a.g] for m in b.node for i in m.input if i in producer]
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.node[:]
    m.graph.node.extend(n for n in model.graph.node if id(n) in needed)
    del m.graph.output[:]
    m.graph.output.extend(onnx.helper.make_empty_tensor_value_info(i) for i in node.input if i)
    return m


def topk_dies(node, got):
    """ONNX Runtime 1.30's CPU TopK with k >= 1 over an input whose dims
    before the axis hold no elements divides by that count (rows = 0) and dies
    of SIGFPE (seed 81302577, tests/difftest/open/: a [0, 1] TopK input from a
    Slice that is empty at N >= 2); an empty dim after the axis runs, and k
    above the axis' extent is an error it reports."""
    if len(node.input) < 2 or node.input[0] not in got or node.input[1] not in got:
        return None
    dims = list(got[node.input[0]].shape)
    if not dims:
        return None
    axis = next((a.i for a in node.attribute if a.name == "axis"), -1) % len(dims)
    k = int(np.asarray(got[node.input[1]]).reshape(-1)[0])
    if 1 <= k <= dims[axis] and int(np.prod(dims[:axis])) == 0:
        return "ONNX Runtime 1.30's TopK dies (SIGFPE) on %s's input %s of shape %s (no rows before axis %d)" % (
            node.name or "TopK", node.input[0], dims, axis)
    return None


def einsum_dies(node, got):
    """ONNX Runtime 1.30's CPU Einsum dies of SIGFPE when a batch letter (one
    in every operand and in the output) has extent 0: "pqik,pqjk->pqij" over
    [1, 0, 2, 2] (seed 95929626: a Slice of step -1 that is empty at N = 4),
    while an empty letter of one operand ("ij,jk->ik" over [0, 3]) runs."""
    equation = next((a.s.decode() for a in node.attribute if a.name == "equation"), "").replace(" ", "")
    if "->" not in equation or "." in equation or not all(i in got for i in node.input):
        return None
    terms, output = equation.split("->")
    terms = terms.split(",")
    if len(terms) != len(node.input):
        return None
    extent = {}
    for term, name in zip(terms, node.input):
        for letter, d in zip(term, got[name].shape):
            extent[letter] = d
    batch = [c for c in output if all(c in t for t in terms)]
    empty = [c for c in batch if extent.get(c) == 0]
    if empty:
        return "ONNX Runtime 1.30's Einsum dies (SIGFPE) on %s (%s): batch letter %s has extent 0" % (
            node.name or "Einsum", equation, empty[0])
    return None


# The deaths of ONNX Runtime whose cause is known, by op: each takes the
# node and the values ORT computes for its inputs.
KNOWN_DEATHS = {"TopK": topk_dies, "Einsum": einsum_dies}


def ort_dies_at(runner, model, feed, folder):
    """Why ONNX Runtime 1.30 is known to die on MODEL at the inputs FEED, or
    None: a node of the main graph whose inputs are in a configuration of
    KNOWN_DEATHS. The inputs are the values ORT computes for them, in a copy
    of the graph that stops before that node, in order (seed 28091054: a
    Loop's output, whose shape shape inference does not give). Only those
    exact configurations: any other death of ORT stays a failure."""
    for node in model.graph.node:
        dies = KNOWN_DEATHS.get(node.op_type)
        if dies is None:
            continue
        path = os.path.join(folder, "node_inputs.onnx")
        onnx.save(inputs_slice(model, node), path)
        try:
            got = runner.ort(path, feed)
        except OrtCrashed:
            return None     # something before this node dies: not a known cause
        if isinstance(got, str):
            continue
        why = dies(node, got)
        if why:
            return why
    return None


def session_model(b):
    """Graph B's symbolic copy and the shapes it runs at (draw_shapes), or
    (None, []) when it has no batched input."""
    batched = batched_inputs(b.model)
    if not batched:
        return None, []
    axis, shapes = draw_shapes(b.model, batched[0], getattr(b, "seed", 0))
    return symbolic_copy(b.model, batched, axis), shapes


def label(shape):
    batch, extent = shape
    return "%d" % batch if extent is None else "%dxD%d" % (batch, extent)


def shape_inputs(model, shape):
    """Inputs at SHAPE (N and D as given), drawn as compare.js draws them
    (seeded by the shape and position)."""
    batch, extent = shape
    sizes = {SYMBOL: batch, DIM_SYMBOL: extent}
    initializers = {i.name for i in model.graph.initializer}
    feed = {}
    for i, vi in enumerate(v for v in model.graph.input if v.name not in initializers):
        dims = [sizes[d.dim_param] if d.dim_param else d.dim_value for d in vi.type.tensor_type.shape.dim]
        seed = 1000 * batch + 37 * (extent or 0) + i + 1
        feed[vi.name] = draw(seed, int(np.prod(dims)), vi.type.tensor_type.elem_type).reshape(dims)
    return feed


def run_accepts(runner, path, feed, strategy):
    """Whether `onnx-fuse run` runs the model at PATH with every input pinned
    to FEED's shape (--input-shape) and STRATEGY: what the session, which
    prepares a model through the same front door, must then run too."""
    args = ["run", path, "--iterations", "1", "--warmup", "0", "--threads", "1", "--strategy", strategy]
    for name, value in feed.items():
        args += ["--input-shape", "%s=%s" % (name, "x".join(str(d) for d in value.shape))]
    rc, _, _ = runner._exec(args)
    return rc == 0


def refusal(runner, path, feed, strategy, message, via, at):
    """A shape the session refused (MESSAGE): a note when `run` refuses it
    too, a failure when `run` accepts it."""
    kind = message.split(":")[0]
    if run_accepts(runner, path, feed, strategy):
        return {"kind": "session-refused", "check": "InferenceSession at N=%s" % at,
                "message": "the session refuses what run accepts: " + message[:300], "via": via}, None
    return None, "session check: a shape refused by run and the session (%s)" % kind


def run_session(runner, b, strategy):
    """The session check of built graph B (B.seed: its recipe's seed, drawing
    its shapes). Returns (failures, note, shapes checked)."""
    sym, shapes = session_model(b)
    if sym is None:
        return [], None, 0
    path = os.path.join(b.folder, "symbolic.onnx")
    onnx.save(sym, path)
    feeds, refs, drawn, dying = {}, {}, {}, []
    for shape in shapes:
        feed = shape_inputs(sym, shape)
        try:
            ref = runner.ort(path, feed, onnx_fuse_nan=True)
        except OrtCrashed:
            dies = ort_dies_at(runner, sym, feed, b.folder)  # only a death of known cause is left out
            if not dies:
                raise
            runner.ort_deaths = 0  # a death of known cause is not the worker failing as a tool
            dying.append((label(shape), dies))
            continue
        if not isinstance(ref, str):
            feeds[label(shape)], refs[label(shape)] = feed, [ref.get(n) for n in b.names]
            drawn[label(shape)] = list(shape)
    left_out = "session check: N=%s left out: %s" % (", ".join(at for at, _ in dying), dying[0][1]) if dying else None
    if not feeds:
        return [], left_out, 0
    given, got = os.path.join(b.folder, "session_in.npz"), os.path.join(b.folder, "session_out.npz")
    np.savez(given, **{"%s|%s" % (at, k): v for at, feed in feeds.items() for k, v in feed.items()})
    env = dict(os.environ, PYTHONPATH=module_dir(runner.bin) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    via = ["session", strategy, 1]
    try:
        p = subprocess.run([sys.executable, PROBE, path, strategy, given, got], capture_output=True, text=True,
                           env=env, timeout=2 * TIMEOUT)
    except subprocess.TimeoutExpired:
        return [{"kind": "session-error", "check": "InferenceSession", "message": "timed out", "via": via}], None, 0
    err = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    if p.returncode == 3 and err.startswith(("ModuleNotFoundError", "ImportError")):
        raise ToolMissing("the session check cannot import onnxfuse: " + err[:200])
    if p.returncode == 3 and err.startswith(REFUSALS):
        at = next(iter(feeds))
        failure, note = refusal(runner, path, feeds[at], strategy, err, via, at)
        return ([failure] if failure else []), note, 0
    if p.returncode != 0:
        return [{"kind": "session-crash" if p.returncode < 0 else "session-error", "check": "InferenceSession",
                 "message": err[:300] or "exit %d" % p.returncode, "via": via}], None, 0
    out = np.load(got)
    fails, note, checked = [], left_out, 0
    for at in feeds:
        if "%s|error" % at in out.files:
            message = str(out["%s|error" % at])
            if message.startswith(REFUSALS):
                failure, refused = refusal(runner, path, feeds[at], strategy, message, via, at)
                if failure:
                    fails.append(failure)
                else:
                    note = refused
                continue
            fails.append({"kind": "session-error", "check": "InferenceSession at N=%s" % at,
                          "message": message, "via": via})
            continue
        runs = {mode: [out["%s|%s|%d" % (at, mode, i)] for i in range(len(b.names))] for mode in ("passes", "whole")}
        rtol = getattr(b, "rtol", RTOL)
        if compare(refs[at], runs["passes"], b.names, "-", "-", rtol):
            # As run_ort does: ORT without its graph optimizations agreeing with
            # both of ours means ORT's optimizer changed the result (seed
            # 91129247: Transpose then MatMul by a 1-D constant, wrong in ORT 1.30
            # optimized, right with its kernels alone).
            from .trial import OPTIMIZER_NOTE, ort_optimizer_differs  # trial imports this module
            plain = runner.ort(path, feeds[at], optimize=False, onnx_fuse_nan=True)
            if not isinstance(plain, str) and ort_optimizer_differs(b, refs[at], plain,
                                                                    [runs["passes"], runs["whole"]]):
                note = OPTIMIZER_NOTE
                refs[at] = [plain.get(n) for n in b.names]
        for kind, ref, cand, check in (
                ("session-vs-ort", refs[at], runs["passes"], "ORT vs InferenceSession in passes, N=%s" % at),
                ("session-passes-vs-whole", runs["whole"], runs["passes"],
                 "InferenceSession in one pass vs in passes, N=%s" % at)):
            shapes = [(r.shape if r is not None else None, c.shape) for r, c in zip(ref, cand)]
            if any(r != c for r, c in shapes):
                fails.append({"kind": kind, "check": check, "message": "shapes %s" % shapes, "via": via})
                continue
            f = compare(ref, cand, b.names, kind, check, rtol)
            if f:
                f["via"] = via
                f["shape"] = drawn[at]   # the inputs it happened at (trial.sensitivity)
                fails.append(f)
        checked += 1
    return fails, note, checked
