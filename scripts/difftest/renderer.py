"""Recipe -> ONNX text syntax -> ModelProto.

A recipe is {"seed", "input": dims, "steps": [step, ...]}; a step is a dict
with "op" and its parameters, and "s", the seed of its constant values. "fork"
steps hold branches (lists of steps) joined by Add/Mul/Sub/Max/Concat or left
as extra graph outputs. Steps are applied to the current value in order; a step
that does not fit the current shape is rolled back and skipped, so any subset
of a recipe renders to a valid graph (what the shrinker relies on).
"""
import numpy as np
import onnx
import onnx.parser

from . import anchors, arith, control_flow, elementwise as ew, indexing, normalize, quantized, recurrent, sampling, \
    shaping, typed, views
from .graph import V, Graph, Skip, broadcast, broadcast_ok

RENDER = {
    "conv": anchors.conv, "convT": lambda g, st, v, r: anchors.conv(g, st, v, r, transpose=True),
    "gemm": anchors.gemm, "matmul": anchors.matmul, "ir": anchors.inverted_residual, "bn": anchors.batchnorm, "einsum": anchors.einsum,
    "unary": ew.unary, "domain": ew.domain, "bin": ew.binary, "clip": ew.clip,
    "swish": ew.swish, "hswish": ew.hswish, "gelu": ew.gelu,
    "ln_dec": ew.layernorm_dec, "ln": ew.layernorm,
    "reshape": views.reshape, "flatten": views.flatten, "transpose": views.transpose,
    "unsqueeze": views.unsqueeze, "squeeze": views.squeeze, "slice": views.slice_,
    "split": views.split, "pool": views.pool, "softmax": views.softmax,
    "reduce": views.reduce_mean, "se": views.squeeze_excite, "prelu": ew.prelu,
    "pad": views.pad, "inorm": views.instance_norm, "identity": views.identity, "bin_in": ew.binary_input,
    **typed.RENDER, **recurrent.RENDER, **sampling.RENDER, **indexing.RENDER, **normalize.RENDER,
    **arith.RENDER, **shaping.RENDER, **control_flow.RENDER, **quantized.RENDER,
}

# Steps that give every plan's result bit for bit alike when their input is
# (graph.V.exact): moves, Relu/Abs/Neg, MaxPool, Clip.
EXACT_STEPS = {"reshape", "flatten", "transpose", "unsqueeze", "squeeze", "slice", "split", "identity", "pad", "clip"}


def keeps_exact(st):
    op = st["op"]
    return (op in EXACT_STEPS or op == "unary" and st.get("f") in ("Relu", "Abs", "Neg") or
            op == "pool" and st.get("f") == "MaxPool")

# Values beyond this typical magnitude are scaled down by a power of two (exact
# in float, and relative rounding errors stay as they were). Squashing them with
# Tanh would keep the absolute rounding error of large sums next to outputs
# near 0, where a 1e-4 relative difference could come from rounding alone.
MAG_LIMIT = 16.0


def apply_steps(g, steps, v):
    for st in steps:
        m = g.mark()
        try:
            v = apply_step(g, st, v)
        except Skip:
            g.rollback(m)
    return v


def apply_step(g, st, v):
    op = st["op"]
    rng = np.random.default_rng(st.get("s", 0))
    if op == "output":
        g.outputs.append(v)
        return v
    if op == "fork":
        return fork(g, st, v)
    if op not in RENDER:
        raise Skip()
    out = RENDER[op](g, st, v, rng)
    exact = out.exact or v.exact and keeps_exact(st)
    if out.mag > MAG_LIMIT:
        out = ew.scale_down(g, out)      # a power of two: exact stays exact
    out.exact = exact
    return out


def fork(g, st, v):
    outs = [apply_steps(g, b, v) for b in st["branches"]]
    join = st.get("join", "add")
    # Branches may differ in shape where one broadcasts (x * ReduceMean(x)):
    # binary post-ops whose second operand is an activation of another shape.
    # onnx-fuse refuses a binary op where neither input has the output's shape
    # ([N,C,1,1] + [N,1,H,W]): the first branch carries the full shape and the
    # others broadcast to it, so every partial result of the join has it too.
    dims = outs[0].dims
    fits = all(broadcast_ok(o.dims, dims) and broadcast(dims, o.dims) == dims for o in outs)
    names = [o.name for o in outs]
    if len(set(names)) < len(names) and join in ("concat", "outputs", "sub", "div"):
        # Two empty branches: x + x. Never x listed twice as an output, and never
        # x - x or x / x: exact zeros and ones make any later rounding "infinitely"
        # relative (a LayerNorm of the constant row differed from ORT by 5e-5).
        join = "add"
    if join in ("add", "mul", "sub", "div", "max", "sum") and fits and len(outs) >= 2:
        if join == "div":     # divisors away from 0
            names = names[:1] + [ew.positive(g, o, np.random.default_rng(1)).name for o in outs[1:]]
        if join == "sum" or join == "max":
            y = g.node("Sum" if join == "sum" else "Max", names)
        else:
            y = names[0]
            for n in names[1:]:
                y = g.node({"add": "Add", "mul": "Mul", "sub": "Sub", "div": "Div"}[join], [y, n])
        mag = max(o.mag for o in outs)
        mag = mag * mag if join == "mul" else mag * 4 if join == "div" else mag * len(outs)
        return V(y, dims, mag)
    if join == "concat" and len(outs) >= 2 and all(o.rank == outs[0].rank for o in outs):
        diff = [i for i in range(outs[0].rank) if len({o.dims[i] for o in outs}) > 1]
        if len(diff) <= 1:
            axis = diff[0] if diff else st.get("axis", 1) % outs[0].rank
            dims = list(outs[0].dims)
            dims[axis] = sum(o.dims[axis] for o in outs)
            return V(g.node("Concat", names, {"axis": axis}), dims, max(o.mag for o in outs))
    # A join that does not fit (or "outputs"): every branch but the last is a graph output.
    for o in outs[:-1]:
        if o.name != v.name:
            g.outputs.append(o)
    return outs[-1]


def render(recipe, header=()):
    """Returns (ONNX text, Graph)."""
    g = Graph()
    x = V("x", recipe["input"], exact=True)
    g.inputs.append("float[%s] x" % ",".join(map(str, x.dims)))
    y = apply_steps(g, recipe["steps"], x)
    if y.name == "x" or not g.nodes:
        y = V(g.node("Relu", ["x"]), x.dims)
    g.outputs = [o for o in g.outputs if o.name not in ("x", y.name)] + [y]
    return g.text(header), g


def to_model(text):
    """Parses ONNX text; initializers leave the input list (the parser keeps them
    there, and ORT and onnx-fuse would then treat them as graph inputs)."""
    model = onnx.parser.parse_model(text)
    inits = {i.name for i in model.graph.initializer}
    keep = [i for i in model.graph.input if i.name not in inits]
    del model.graph.input[:]
    model.graph.input.extend(keep)
    model.producer_name = "difftest"
    return model


def check(model):
    """Strict shape inference: a shape the renderer got wrong is a generator bug."""
    onnx.checker.check_model(model, full_check=True)


def signature(g):
    """The op sequence, the key under which failures are deduplicated."""
    return ",".join(g.op_types())
