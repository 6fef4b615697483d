"""Saved regression cases (tests/difftest/cases/*.onnxtxt): writing a shrunk
failure with its header, deduplicating by signature, and replaying the folder.

A case is ONNX text preceded by `#` lines (the ONNX parser skips them). Lines
the replay reads: `# strategy: NAME` pins one strategy (default: all three);
`# via: ort|fuse|session STRATEGY` also reruns that check; `# signature:` is the dedup key.
"""
import json
import os
import re
import shutil
import tempfile

import onnx

from . import renderer
from .runner import Runner, key
from .session_check import run_session
from .trial import Built, guarded, run_checks, run_fuse, run_ort

STRATEGY_NAMES = ["pattern", "postdom", "greedy"]


def describe_step(st):
    op = st["op"]
    if op == "conv" or op == "convT":
        name = "Conv" if op == "conv" else "ConvTranspose"
        bits = ["%dx%d" % (st["k"], st["k"])]
        if st.get("stride", 1) != 1:
            bits.append("s%d" % st["stride"])
        if st.get("dil", 1) != 1:
            bits.append("d%d" % st["dil"])
        if st.get("group", "1") != "1":
            bits.append("dw" if st["group"] == "dw" else "grouped")
        if st.get("bias"):
            bits.append("bias")
        if st.get("qw"):
            bits.append("int8 w%d" % st["qw"])
        s = "%s %s" % (name, " ".join(bits))
        return s + (" -> BN" if st.get("bn") else "")
    if op == "bin":
        form = st.get("form", "scalar")
        return "%s(%s%s)" % (st["f"], form, ", const first" if st.get("first") else "")
    if op == "bin_in":
        return "%s(input %s%s)" % (st["f"], st.get("form"), ", input first" if st.get("first") else "")
    if op in ("unary", "domain"):
        return st["f"]
    if op == "fork":
        inner = " | ".join("[%s]" % " -> ".join(describe_step(s) for s in b) if b else "x"
                           for b in st["branches"])
        return "fork{%s}.%s" % (inner, st.get("join", "add"))
    if op == "pool":
        return st["f"]
    if op == "reduce":
        return "ReduceMean(%s%s)" % ("spatial" if st.get("spatial") else "last axis",
                                     "" if st.get("keepdims", 1) else ", keepdims 0")
    if op in TYPED:
        return TYPED[op](st)
    if op in OPS:
        return OPS[op](st)
    if op in ("transpose", "reshape"):
        return "%s(%s)" % (op.capitalize(), st.get("mode"))
    if op == "slice":
        return "Slice(axis %s, step %s)" % (st.get("axis"), st.get("step", 1))
    if op == "split":
        return "Split(axis %s, %s parts, %s)" % (st.get("axis"), st.get("parts"), st.get("join"))
    if op in ("gemm", "matmul"):
        if st.get("qw"):
            return "MatMul(int8 w%d per %s%s)" % (st["qw"], "tensor" if st.get("wper") == "tensor" else "column",
                                                  ", bias" if st.get("bias") else "")
        return op.capitalize() + ("(act)" if st.get("act") else "")
    if op == "qdq":
        return "QDQ(%s)" % ("int8" if st.get("signed") else "uint8")
    if op == "dynq":
        return "DynamicQuantizeLinear->MatMulInteger(w%d per %s%s)" % (
            st.get("qw", 7), "column" if st.get("wper") == "col" else "tensor", ", bias" if st.get("bias") else "")
    return {"bn": "BatchNormalization", "clip": "Clip", "swish": "x*Sigmoid(x)", "hswish": "x*HardSigmoid(x)",
            "gelu": "Gelu(decomposed)", "ln_dec": "LayerNorm(decomposed)", "ln": "LayerNormalization",
            "se": "SqueezeExcite", "output": "(output)", "prelu": "PRelu(%s)" % st.get("form"),
            "pad": "Pad", "inorm": "InstanceNormalization", "identity": st.get("f")}.get(op, op.capitalize())


TYPED = {
    "mask": lambda st: "Where(%s%s)" % (st.get("cmp"), "" if st.get("logic", "none") == "none" else " " + st["logic"]),
    "intmix": lambda st: "%s(%s%s%s)" % (st.get("itype"), st.get("src"), "".join(" " + o for o in st.get("ops", [])),
                                         " " + st["reduce"] if st.get("reduce") else ""),
    "gather": lambda st: "Gather(axis %s, %s)" % (st.get("axis"), st.get("idx")),
    "topk": lambda st: "TopK(k %s)" % st.get("k"),
    "cast": lambda st: "Cast(%s)" % st.get("to"),
    "typed_in": lambda st: "input(%s %s)" % (st.get("itype"), st.get("form")),
}


def _body(st):
    return " | ".join("[%s]" % " -> ".join(describe_step(s) for s in b) for b in st.get("branches", []))


# The op steps of generator_ops.py.
OPS = {
    "rnn": lambda st: "%s(%s, hidden %s%s)" % (st.get("cell"), st.get("dir"), st.get("hidden"),
                                               ", init" if st.get("init") else ""),
    "resize": lambda st: "Resize(%s%s)" % (st.get("mode"), ", sizes" if st.get("sizes") else ""),
    "grid_sample": lambda st: "GridSample(%s, %s)" % (st.get("mode"), st.get("padm")),
    "maxpool_idx": lambda st: "MaxPool+Indices", "sort": lambda st: "TopK(sort, axis %s)" % st.get("axis"),
    "scatter_nd": lambda st: "ScatterND(%s)" % st.get("red"), "scatter_el": lambda st: "ScatterElements(%s)" % st.get("red"),
    "one_hot": lambda st: "OneHot(%s)" % st.get("src"), "gather_el": lambda st: "GatherElements",
    "gather_nd": lambda st: "GatherND(%s)" % st.get("form"), "arg": lambda st: st.get("f", "ArgMax"),
    "cumsum": lambda st: "CumSum", "trilu": lambda st: "Trilu", "fmod": lambda st: "Mod(fmod)",
    "pow_rt": lambda st: "Pow(run-time exponent)", "einsum_x": lambda st: "Einsum(%s)" % st.get("form"),
    "hardmax": lambda st: "Hardmax", "lrn": lambda st: "LRN", "lp_norm": lambda st: "LpNormalization",
    "mvn": lambda st: "MeanVarianceNormalization", "tile": lambda st: "Tile", "expand": lambda st: "Expand",
    "range": lambda st: "Range", "cos": lambda st: "ConstantOfShape", "nonzero": lambda st: "NonZero",
    "unique": lambda st: "Unique(%s)" % ("sorted" if st.get("sorted", 1) else "unsorted"),
    "if": lambda st: "If(%s){%s}" % (st.get("cond"), _body(st)),
    "loop": lambda st: "Loop(%s){%s}" % (st.get("trips"), _body(st)),
    "scan": lambda st: "Scan{%s}" % _body(st),
}


def describe_typed(recipe):
    """The typed steps of a recipe, by kind (the campaign's summary)."""
    def walk(steps):
        for st in steps:
            if st.get("op") in TYPED:
                yield st["op"]
            for b in st.get("branches", []):
                yield from walk(b)
    return list(walk(recipe["steps"]))


def describe(recipe):
    return "x%s: %s" % (recipe["input"], " -> ".join(describe_step(s) for s in recipe["steps"]))


def signatures(failure, graph):
    """Dedup keys: the failure kind with the op sequence; for process errors
    also the error message with names and numbers blanked, within one campaign
    (the LayerNorm decomposition and a lone ReduceMean failing in one oneDNN
    call are one bug)."""
    sigs = ["%s|%s" % (failure["kind"], renderer.signature(graph))] if graph else []
    k, msg = key(failure)
    if msg:
        sigs.append("%s|%s" % (k, msg))
    return sigs


def known_signatures(folder):
    sigs = {}
    if os.path.isdir(folder):
        for f in sorted(os.listdir(folder)):
            if f.endswith(".onnxtxt"):
                with open(os.path.join(folder, f)) as fh:
                    for line in fh:
                        # Not "# error-signature:": a saved case may be fixed by now, and
                        # another graph failing with its message then is another bug.
                        if line.startswith("# signature:"):
                            sigs[line.split(":", 1)[1].strip()] = os.path.join(folder, f)
    return sigs


def short_name(graph, seed, folder):
    ops = []
    for op in graph.op_types():
        o = re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower().replace("_", "")
        if not ops or ops[-1] != o:
            ops.append(o)
    base = "-".join(ops[:5]) + "-s%d" % seed
    return base


def save(folder, recipe, failure, seed, graph, secs):
    os.makedirs(folder, exist_ok=True)
    name = short_name(graph, seed, folder)
    path = os.path.join(folder, name + ".onnxtxt")
    how, strategy, threads = failure["via"]
    diff = failure["kind"]
    if failure.get("max_rel") is not None:  # a failure without figures (an output not written) has None
        diff += ", output %s: max_abs %.3e, max_rel %.3e" % (failure["output"], failure["max_abs"], failure["max_rel"])
    elif failure.get("output"):
        diff += ", output %s" % failure["output"]
    if failure.get("message"):
        diff += ": " + failure["message"]
    header = ["difftest case %s (shrunk in %.0f s)" % (name, secs),
              "seed: %d (the unshrunk graph: scripts/difftest.sh --one %d --print)" % (seed, seed),
              "found with: strategy %s, threads %d (%s)" % (strategy, threads, failure["check"]),
              "differs: " + diff,
              "graph: " + describe(recipe),
              "signature: " + signatures(failure, graph)[0]]
    header += ["error-signature: " + x for x in signatures(failure, graph)[1:]]
    header += ["reproduce: scripts/difftest.sh --replay tests/difftest/cases/%s.onnxtxt" % name]
    if how != "check":
        header.append("via: %s %s" % (how, strategy))
    header.append("recipe: " + json.dumps(recipe, separators=(",", ":")))
    text, _ = renderer.render(recipe, header)
    with open(path, "w") as fh:
        fh.write(text)
    return path


def replay(binary, node_dir, target, log=print):
    """Runs every case of a folder (or one file): fused vs unfused at 1 and 2
    threads, each strategy (or the pinned one), and the check of its `# via:`
    line. Returns the number of failures: a case that fails, that is refused
    now, or no case at all (an empty folder) counts as one."""
    files = [target] if os.path.isfile(target) else (
        sorted(os.path.join(target, f) for f in os.listdir(target) if f.endswith(".onnxtxt"))
        if os.path.isdir(target) else [])
    if not files:
        log("FAIL replay: no cases (*.onnxtxt) at %s" % target)
        return 1
    runner = Runner(binary, node_dir)
    failed = refused = 0
    work = tempfile.mkdtemp(prefix="difftest-replay-")
    try:
        for i, path in enumerate(files):
            with open(path) as fh:
                text = fh.read()
            pinned = re.search(r"^# strategy:\s*(\w+)", text, re.M)
            via = re.search(r"^# via:\s*(\w+)\s+(\w+)", text, re.M)
            strategies = [pinned.group(1)] if pinned else STRATEGY_NAMES
            try:
                b = Built.__new__(Built)
                b.model, b.folder = renderer.to_model(text), os.path.join(work, str(i))
                os.makedirs(b.folder)
                b.path = os.path.join(b.folder, "model.onnx")
                onnx.save(b.model, b.path)
                b.names = [o.name for o in b.model.graph.output]
                seed = re.search(r"^# seed:\s*(\d+)", text, re.M)
                b.seed = int(seed.group(1)) if seed else 0  # the session check's shapes
            except Exception as e:
                log("FAIL %s: cannot parse: %s" % (path, str(e).splitlines()[0]))
                failed += 1
                continue
            bad, ref = [], []
            for s in strategies:
                f, r, inv = run_checks(runner, b, s)
                bad += f
                ref += [op for op, _ in r]
                if inv:
                    bad.append({"kind": "invalid-model", "check": "run --check --strategy %s" % s, "message": inv})
            note = None
            if via and not ref:
                how, strategy = via.group(1), via.group(2)
                check = {"ort": lambda: run_ort(runner, b, strategy),
                         "session": lambda: run_session(runner, b, strategy)[:2]}.get(
                             how, lambda: run_fuse(runner, b, strategy)[::2])
                f, note = guarded(check, [how, strategy, 1], (None,))
                bad += f
            name = os.path.basename(path)
            if bad:
                failed += 1
                f = bad[0]
                what = (("output %s max_rel %.3e" % (f["output"], f["max_rel"])) if f.get("max_rel") is not None
                        else f.get("message", ""))  # a failure without figures has max_rel None
                log("FAIL %s: %s (%s): %s%s" % (name, f["kind"], f["check"], what,
                                              " (+%d more)" % (len(bad) - 1) if len(bad) > 1 else ""))
            elif ref:     # a case exists to be checked: one no longer run checks nothing
                refused += 1
                log("FAIL %s: refused now: unsupported %s" % (name, ", ".join(sorted(set(ref)))))
            else:
                log("ok   %s%s" % (name, " (%s)" % note if note else ""))
    finally:
        runner.close()
        shutil.rmtree(work, ignore_errors=True)
    log("replay: %d case(s) ran, %d failed, %d refused" % (len(files), failed, refused))
    return failed + refused
