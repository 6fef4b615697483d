"""One graph's trial: render the recipe, save it, run every check drawn for
it, and collect failures, refusals and coverage. `reproduce` re-runs only the
check that failed, which is what the shrinker calls hundreds of times."""
import copy
import json
import os
import random
import shutil

import numpy as np
import onnx
from onnx import numpy_helper

from . import blame, near_tie, quantized, renderer
from .runner import RTOL, OrtCrashed, compare, exact_outputs, make_inputs, max_rel, mulberry32, ort_crash
from .session_check import at_shape, run_session, session_model, shape_inputs

STRATEGIES = [("pattern", 6), ("postdom", 2), ("greedy", 2)]


def config(seed, ort_every=4, fuse_every=3, session_every=4):
    """What graph SEED goes through: its own RNG, so it reproduces alone (the
    session draw comes last: the earlier draws of a seed are what they were)."""
    r = random.Random(seed * 7919 + 17)
    items, weights = zip(*STRATEGIES)
    cfg = {"strategy": r.choices(items, weights)[0],
           "ort": r.randrange(ort_every) == 0 if ort_every else False,
           "fuse": r.randrange(fuse_every) == 0 if fuse_every else False}
    cfg["session"] = r.randrange(session_every) == 0 if session_every else False
    return cfg


class Built:
    def __init__(self, recipe, folder, header=()):
        self.text, self.graph = renderer.render(recipe, header)
        self.model = renderer.to_model(self.text)
        renderer.check(self.model)
        if not self.model.graph.output:
            raise ValueError("no graph outputs")
        os.makedirs(folder, exist_ok=True)
        self.folder = folder
        self.seed = recipe.get("seed", 0)  # the session check draws its shapes from it
        self.path = os.path.join(folder, "model.onnx")
        onnx.save(self.model, self.path)
        self.names = [o.name for o in self.model.graph.output]
        # Against ONNX Runtime and between sessions: a dynamically quantized graph at
        # bench_dynamic.py's rule (quantized.RTOL_DYNAMIC), any other at runner.RTOL.
        self.rtol = quantized.RTOL_DYNAMIC if quantized.is_dynamic(self.model) else RTOL


def run_checks(runner, b, strategy, threads=(1, 2), slow=None):
    """`run --check` at each thread count. Returns (failures, refusals, invalid);
    the fused plans' slow steps are added to the set SLOW when given."""
    fails, refused, invalid = [], [], None
    for t, o in zip(threads, runner.check_all(b.path, strategy, threads, exact_outputs(b.model))):
        if slow is not None:
            slow.update(o.slow)
        if o.status == "fail":
            o.failure["via"] = ["check", strategy, t]
            fails.append(o.failure)
        elif o.status == "refused":
            refused.append((o.refused, o.message))
            break          # the other thread count refuses alike
        elif o.status == "invalid":
            invalid = o.message
            break
    return fails, refused, invalid


def run_ort(runner, b, strategy):
    """ORT's outputs against the fused and the unfused plan's, on the same inputs."""
    ind = os.path.join(b.folder, "inputs")
    os.makedirs(ind, exist_ok=True)
    inputs = make_inputs(b.model, ind)
    ref = ort_reference(runner, b.path, inputs, onnx_fuse_nan=True)
    if isinstance(ref, str):
        return [], "ORT cannot run the model: " + ref
    ref = [ref[n] for n in b.names]
    fails, ours = [], []
    for fuse in (True, False):
        od = os.path.join(b.folder, "out_fused" if fuse else "out_unfused")
        shutil.rmtree(od, ignore_errors=True)
        os.makedirs(od)
        o, arrays = runner.outputs(b.path, strategy, 1, fuse, ind, od)
        if o.status == "fail":
            o.failure["via"] = ["ort", strategy, 1]
            fails.append(o.failure)
            continue
        if o.status != "ok":
            continue
        ours.append(arrays)
        kind = "ort-vs-fused" if fuse else "ort-vs-unfused"
        f = compare(ref, arrays, b.names, kind, "ORT vs onnx-fuse run (%s, 1 thread)" %
                    ("fused " + strategy if fuse else "unfused"), getattr(b, "rtol", RTOL))
        if f:
            f["via"] = ["ort", strategy, 1]
            fails.append(f)
    if fails and len(ours) == 2 and all(f.get("max_rel") is not None for f in fails):
        plain = runner.ort(b.path, inputs, optimize=False, onnx_fuse_nan=True)
        if not isinstance(plain, str) and ort_optimizer_differs(b, ref, plain, ours):
            return [], OPTIMIZER_NOTE
    return fails, None


def ort_reference(runner, path, inputs, onnx_fuse_nan=False):
    """ORT's outputs; with its graph optimizations disabled when the optimized
    session cannot be built (ORT 1.30's LayerNormFusion takes in a Cast from
    double and makes a LayerNormalization of doubles, which has no kernel:
    seed 23100110). onnx_fuse_nan: as Runner.ort's, for the reference of
    onnx-fuse's plans (the fuse path compares ORT with ORT)."""
    ref = runner.ort(path, inputs, onnx_fuse_nan=onnx_fuse_nan)
    if isinstance(ref, str) and "Failed to find kernel" in ref:
        plain = runner.ort(path, inputs, optimize=False, onnx_fuse_nan=onnx_fuse_nan)
        return plain if not isinstance(plain, str) else ref
    return ref


OPTIMIZER_NOTE = "ONNX Runtime's graph optimizer changed the result (its kernels alone agree): not counted"


def ort_optimizer_differs(b, optimized, plain, candidates):
    """True when ORT with its graph optimizations disabled agrees with every
    candidate while ORT optimized does not: ORT's optimizer, not onnx-fuse,
    changed the result. Seed 80002682: ORT 1.30 folds Pad (constant 0) into a
    following MaxPool's pads, which MaxPool treats as -inf (the fusion came with
    onnxruntime PR #18136); our plans and ORT's own kernels give max(0, x)."""
    plain = [plain.get(n) for n in b.names]
    if any(p is None for p in plain):
        return False
    rtol = getattr(b, "rtol", RTOL)
    return (compare(plain, optimized, b.names, "-", "-", rtol) is not None and
            all(compare(plain, c, b.names, "-", "-", rtol) is None for c in candidates))


def run_fuse(runner, b, strategy):
    """The fuse path: the rewritten model (groups as functions) against the original, in ORT.
    Returns (failures, report or None, note)."""
    out, rep = os.path.join(b.folder, "fused.onnx"), os.path.join(b.folder, "report.json")
    o = runner.fuse(b.path, strategy, out, rep)
    if o.status == "fail":
        o.failure["via"] = ["fuse", strategy, 1]
        return [o.failure], None, None
    if o.status != "ok":
        return [], None, None
    with open(rep) as fh:
        report = json.load(fh)
    ind = os.path.join(b.folder, "inputs")
    os.makedirs(ind, exist_ok=True)
    inputs = make_inputs(b.model, ind)
    ref = ort_reference(runner, b.path, inputs)
    if isinstance(ref, str):
        return [], report, "ORT cannot run the model: " + ref
    cand = ort_reference(runner, out, inputs)
    via = ["fuse", strategy, 1]
    if isinstance(cand, str):
        return [{"kind": "fusepath-ort-error", "check": "ORT on the fuse path's output (%s)" % strategy,
                 "message": cand[:300], "via": via}], report, None
    f = compare([ref[n] for n in b.names], [cand.get(n) for n in b.names], b.names, "fusepath-vs-original",
                "ORT: fuse -o output (%s) vs original" % strategy, getattr(b, "rtol", RTOL))
    if f:
        f["via"] = via
        plain, plain_fused = runner.ort(b.path, inputs, optimize=False), runner.ort(out, inputs, optimize=False)
        # with ORT's optimizer off, the original and the rewritten model agree:
        # ORT optimizes one of them wrongly (the rewrite is right by ORT's kernels)
        if (not isinstance(plain, str) and not isinstance(plain_fused, str) and
                all(n in plain and n in plain_fused for n in b.names) and compare(
                [plain.get(n) for n in b.names], [plain_fused.get(n) for n in b.names], b.names, "-", "-",
                getattr(b, "rtol", RTOL)) is None):
            return [], report, OPTIMIZER_NOTE
    return ([f] if f else []), report, None


# Ops whose result jumps where an input crosses a threshold: a value one ulp
# apart in two plans can select another element or branch (typed.py).
THRESHOLD_OPS = {"Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal", "ArgMax", "ArgMin", "TopK", "Cast",
                 "Hardmax", "Mod", "MaxPool", "If", "GridSample", "DynamicQuantizeLinear"}


def sensitivity(runner, b, strategy, tries=3, shape=None, peer=False):
    """How far each output of the unfused plan moves (max relative, over
    TRIES draws) when its inputs and float constants move by a relative 1e-6:
    {output name: moved}, or None when the plan does not run. Constants too: a
    padded row of one constant c normalized by a LayerNorm of eps 1e-6 is the
    rounding of its mean times 1000 (seed 60014360), and moving the inputs
    leaves it alone. Several draws, since one may leave a rounding unchanged.
    Measured at the inputs the mismatch happened at: the graph's own inputs,
    or with SHAPE (a session check's [batch, extent of D]) the session
    check's symbolic copy pinned to that shape with the inputs it drew there
    (seed 2876037: a TopK near-tie in the second sample at N=2, which the
    graph's own inputs at N=1 do not have). With PEER, the plan moved is ONNX
    Runtime's instead of our unfused one (reference_noise)."""
    base = os.path.join(b.folder, "cond_a")
    for d in (base, base + "_out"):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    if shape is None:
        model, path = b.model, b.path
        inputs = make_inputs(b.model, base)
    else:
        sym, _ = session_model(b)
        model, path = at_shape(sym, shape), os.path.join(base, "model.onnx")
        onnx.save(model, path)
        inputs = shape_inputs(sym, shape)
        for i, (name, arr) in enumerate(inputs.items()):
            with open(os.path.join(base, "input_%d.pb" % i), "wb") as fh:
                fh.write(numpy_helper.from_array(arr, name).SerializeToString())
    def run(model_path, folder, arrays):
        if peer:
            got = runner.ort(model_path, arrays, onnx_fuse_nan=True)
            return [got[n] for n in b.names] if isinstance(got, dict) and all(n in got for n in b.names) else None
        return runner.outputs(model_path, strategy, 1, False, folder, folder + "_out")[1]
    a = run(path, base, inputs)
    if a is None:
        return None
    moved = {n: 0.0 for n in b.names}
    if any(n.op_type in THRESHOLD_OPS for n in model.graph.node):
        # A value near a threshold flips under some of the draws only: seed
        # 5209050's TopK over two Conv outputs 1 ulp apart (the fused plan
        # rounds them equal) flipped under 1 draw in 30, none of the first 9.
        tries *= 10
    for t in range(tries):
        pert = os.path.join(b.folder, "cond_b%d" % t)
        for d in (pert, pert + "_out"):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        moved_inputs = {}
        for i, (name, arr) in enumerate(inputs.items()):
            if arr.dtype in (np.float32, np.float64):      # integers, bools and float16 stay as drawn
                wiggle = 1 + 1e-6 * mulberry32(1000 + 100 * t + i, arr.size).reshape(arr.shape)
                arr = (arr * wiggle).astype(arr.dtype)
            moved_inputs[name] = arr
            with open(os.path.join(pert, "input_%d.pb" % i), "wb") as fh:
                fh.write(numpy_helper.from_array(arr, name).SerializeToString())
        pmodel = os.path.join(pert, "model.onnx")
        onnx.save(perturbed_constants(model, 5000 + 100 * t), pmodel)
        c = run(pmodel, pert, moved_inputs)
        if c is not None:
            for n, x, y in zip(b.names, a, c):
                moved[n] = max(moved[n], max_rel(x, y)[1])
    return moved


def perturbed_constants(model, seed):
    """A copy of MODEL whose float32 initializers are moved by a relative 1e-6."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for k, init in enumerate(m.graph.initializer):
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        arr = numpy_helper.to_array(init)
        wiggle = 1 + 1e-6 * mulberry32(seed + k, max(arr.size, 1))[:arr.size].reshape(arr.shape)
        init.CopyFrom(numpy_helper.from_array((arr * wiggle).astype(np.float32), init.name))
    return m


def baseline_order_flip(runner, b, failure):
    """A fused-against-unfused mismatch at N > 1 threads that the unfused plan
    makes on its own: a threshold op over an exact tie, which another summation
    order breaks (seed 40124520: a LayerNorm over an axis of size 1 makes every
    batch row the same Conv of a constant; oneDNN's plain Conv at 2 threads
    rounds one element of one row an ulp apart, and ArgMax over the batch picks
    another index). Explained only when the fused plan at N threads agrees with
    the unfused plan at 1 thread (so a fused-path bug cannot hide here) and the
    unfused plan moves by at least half the mismatch between 1 and N threads."""
    how, strategy, threads = failure["via"]
    if how != "check" or threads <= 1 or failure.get("max_rel") is None:
        return False
    if not any(n.op_type in THRESHOLD_OPS for n in b.model.graph.node):
        return False
    ins = os.path.join(b.folder, "flip_in")
    shutil.rmtree(ins, ignore_errors=True)
    os.makedirs(ins)
    make_inputs(b.model, ins)
    runs = {}
    for name, fuse, t in (("fused_n", True, threads), ("unfused_1", False, 1), ("unfused_n", False, threads)):
        out = os.path.join(b.folder, "flip_" + name)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        _, runs[name] = runner.outputs(b.path, strategy, t, fuse, ins, out)
        if runs[name] is None:
            return False
    def apart(x, y):
        return max([0.0] + [max_rel(p, q)[1] for p, q in zip(x, y)])
    if failure.get("output") not in b.names:
        return False
    k = b.names.index(failure["output"])
    return (apart(runs["unfused_1"], runs["fused_n"]) <= 1e-4
            and max_rel(runs["unfused_1"][k], runs["unfused_n"][k])[1] >= failure["max_rel"] / 2)


# The kinds of mismatch whose reference is ONNX Runtime's answer.
ORT_REFERENCE_KINDS = {"ort-vs-fused", "ort-vs-unfused", "session-vs-ort", "fusepath-vs-original"}


def reference_noise(runner, b, failure, at):
    """True when a mismatch against ONNX Runtime is within ORT's own rounding
    noise there: its output moves by at least half the mismatch when inputs
    and constants move by 1e-6, while our unfused plan's does not (else
    keep_real's first rule applies). Seed 5207367: ReduceMean over H and W
    minus GlobalAveragePool of the same tensor is exactly 0 in both of our
    plans, which compute the two means as one step; ORT rounds them apart by
    1.5e-8 and the rounding moves with every draw. Our plans are never judged
    by this rule against each other, and a mismatch above ORT's own noise
    stays real: a lowering error shared by both of our plans still fails."""
    if failure["kind"] not in ORT_REFERENCE_KINDS:
        return False
    moved = sensitivity(runner, b, failure["via"][1], shape=list(at) if at else None, peer=True)
    return moved is not None and moved[failure["output"]] >= failure["max_rel"] / 2


# The rules by which a mismatch is explained, as the summary counts them.
RULE_PERTURBED = "perturbing inputs and constants by 1e-6 moves that output by at least half as much"
RULE_REFERENCE_NOISE = ("ONNX Runtime's own output moves by at least half as much when inputs and constants "
                        "move by 1e-6")
RULE_ORDER_FLIP = "the unfused plan flips a threshold between 1 and N threads"
RULE_NEAR_TIE = ("an ArgMax/ArgMin decides a near-tie each plan rounds its own way: its input agrees, each index is "
                 "right for its plan's values, and the plans agree at three other draws of the inputs")
RULE_ORT_ROUNDING = ("ONNX Runtime's own rounding where the mismatch is born (recomputed in float64 from each "
                     "side's inputs, ours is far closer)")


def ort_rounding(runner, b, failure, at):
    """blame.ort_rounding for a mismatch against ONNX Runtime, at the inputs
    it happened at (AT: a session check's shape, else the graph's own)."""
    if failure["kind"] not in ORT_REFERENCE_KINDS:
        return False
    if at is None:
        folder = os.path.join(b.folder, "blame_in")
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        model, inputs = b.model, make_inputs(b.model, folder)
    else:
        sym, _ = session_model(b)
        model, inputs = at_shape(sym, list(at)), shape_inputs(sym, list(at))
    return blame.ort_rounding(runner, b, failure, model, inputs, failure["via"][1])


def keep_real(runner, b, fails, res=None):
    """Drops the mismatches that the graph's own rounding explains, and counts
    each in res["explained"] under its rule. A mismatch of output O is
    explained when inputs and constants moved by only 1e-6 already move O of
    the unfused plan by at least half the mismatch (seed 70019310: v - (v +
    c), a row of rounding noise, normalized by two InstanceNormalizations in a
    row, differs by 1e-2 between plans and moves by as much under 1e-6 of input
    noise), by baseline_order_flip, by an ArgMax/ArgMin near-tie (near_tie.py), or, against ONNX Runtime, by
    reference_noise or ort_rounding (blame.py). Each mismatch is judged at the inputs
    it happened at (a session check's at its shape: sensitivity). No size
    below which a mismatch is ignored: a lowering error shared by both of our
    plans is a mismatch against ONNX Runtime like any other. A failure without figures (an ORT worker that
    died, an error, a missing output) is never explained away."""
    figured = [f for f in fails if f.get("max_rel") is not None and f.get("output") in b.names]
    if not figured:
        return fails
    moved = {}      # by the inputs a mismatch happened at: the graph's own (None) or a session shape
    explained = {}
    for i, f in enumerate(figured):
        at = tuple(f["shape"]) if f.get("shape") else None
        if at not in moved:
            moved[at] = sensitivity(runner, b, f["via"][1], shape=list(at) if at else None)
        if moved[at] is not None and moved[at][f["output"]] >= f["max_rel"] / 2:
            explained[i] = RULE_PERTURBED
        elif baseline_order_flip(runner, b, f):
            explained[i] = RULE_ORDER_FLIP
        elif near_tie.selection_near_tie(runner, b, f):
            explained[i] = RULE_NEAR_TIE
        elif reference_noise(runner, b, f, at):
            explained[i] = RULE_REFERENCE_NOISE
        elif ort_rounding(runner, b, f, at):
            explained[i] = RULE_ORT_ROUNDING
    if res is not None:
        for rule in explained.values():
            res["explained"][rule] = res["explained"].get(rule, 0) + 1
    gone = [figured[i] for i in explained]
    return [f for f in fails if not any(f is g for g in gone)]


def float_twin(b):
    """B's graph without fake quantization (quantized.without_fake_quantization),
    saved beside it: where a float mismatch of `run --check` (which compares a
    quantized graph's plans without it) meets the graph's conditioning."""
    t = copy.copy(b)
    t.model = quantized.without_fake_quantization(b.model)
    t.folder = os.path.join(b.folder, "float_twin")
    os.makedirs(t.folder, exist_ok=True)
    t.path = os.path.join(t.folder, "model.onnx")
    onnx.save(t.model, t.path)
    return t


def judge(runner, b, fails, res=None):
    """keep_real for graph B: a `run --check` mismatch of a quantized graph (QDQ or
    dynamic), which compares its plans without fake quantization, on its float twin;
    every other mismatch (against ONNX Runtime, between sessions) on B itself, whose
    DynamicQuantizeLinear makes it a threshold op (sensitivity draws ten times)."""
    if not (quantized.is_quantized(b.model) or quantized.is_dynamic(b.model)):
        return keep_real(runner, b, fails, res)
    checks = [f for f in fails if f.get("via", [None])[0] == "check"]
    others = [f for f in fails if f.get("via", [None])[0] != "check"]
    kept = (keep_real(runner, float_twin(b), checks, res) if checks else []) + \
        (keep_real(runner, b, others, res) if others else [])
    return [f for f in fails if any(f is k for k in kept)]


def guarded(check, via, rest):
    """check()'s result (a tuple, failures first), or ONNX Runtime's crash on
    the model as the failure followed by REST."""
    try:
        return check()
    except OrtCrashed as e:
        return ([ort_crash(e, via)],) + rest


def trial(runner, recipe, cfg, folder):
    """All checks for one graph. Returns a dict of what happened."""
    res = {"failures": [], "refused": [], "invalid": None, "note": None, "report": None, "ops": [], "explained": {},
           "session_shapes": 0, "slow": set()}
    try:
        b = Built(recipe, folder)
    except Exception as e:  # a renderer bug: reported, never hidden
        res["invalid"] = "generator: %s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
        return res
    res["ops"] = b.graph.op_types()
    res["built"] = b
    fails, refused, invalid = run_checks(runner, b, cfg["strategy"], slow=res["slow"])
    res["failures"] += fails
    res["refused"], res["invalid"] = refused, invalid
    if refused or invalid:
        return res
    if quantized.is_quantized(b.model):
        # Against ONNX Runtime (and the fuse path and session checks, which compare with it) a
        # QuantizeLinear turns another summation order into a whole step: quantized graphs get
        # `run --check` alone, whose rules are quantization-aware (quantized.py), and are counted apart.
        res["quantized"] = True
        if res["failures"]:
            res["failures"] = judge(runner, b, res["failures"], res)
        return res
    if quantized.is_dynamic(b.model):
        # Dynamic quantization alone: `run --check` compares its float arithmetic only (each
        # DynamicQuantizeLinear unrounded), so the quantized plans are always compared with
        # ONNX Runtime, at quantized.RTOL_DYNAMIC (Built.rtol), as are the fuse path and sessions.
        res["dynamic"] = True
        cfg = dict(cfg, ort=True)
    if cfg["ort"]:
        f, note = guarded(lambda: run_ort(runner, b, cfg["strategy"]), ["ort", cfg["strategy"], 1], (None,))
        res["failures"] += f
        res["note"] = note
    if cfg["fuse"]:
        f, report, note = guarded(lambda: run_fuse(runner, b, "pattern"), ["fuse", "pattern", 1], (None, None))
        res["failures"] += f
        res["report"] = report
        res["note"] = res["note"] or note
    if cfg.get("session"):
        f, note, res["session_shapes"] = guarded(lambda: run_session(runner, b, cfg["strategy"]),
                                                 ["session", cfg["strategy"], 1], (None, 0))
        res["failures"] += f
        res["note"] = res["note"] or note
    if res["failures"]:
        res["failures"] = judge(runner, b, res["failures"], res)
    return res


def reproduce(runner, recipe, failure, folder):
    """Re-runs only the check `failure` came from; returns the new failure of the
    same kind (runner.key), or None."""
    from .runner import key
    try:
        b = Built(recipe, folder)
    except Exception:
        return None
    how, strategy, threads = failure["via"]
    via = [how, strategy, 1]
    if how == "check":
        fails, _, _ = run_checks(runner, b, strategy, (threads,))
    elif how == "ort":
        fails = guarded(lambda: run_ort(runner, b, strategy), via, (None,))[0]
    elif how == "session":
        fails = guarded(lambda: run_session(runner, b, strategy), via, (None, 0))[0]
    else:
        fails = guarded(lambda: run_fuse(runner, b, strategy), via, (None, None))[0]
    fails = judge(runner, b, [f for f in fails if key(f) == key(failure)])
    return fails[0] if fails else None
