"""Rendering of typed steps: integer, bool, float16 and float64
values in the middle of float graphs, and graph inputs of those types.

Each typed step takes the current float value and gives a float value of the
same dims back, so every float step before and after it renders as it would
without it; its integer or bool intermediates may also leave as graph outputs
(compared exactly). Run-time integers stay small (graph inputs are 0..3, as
RandomInputs and scripts/ort/compare.js draw them), divisors are non-zero
constants, and Gather indices are in range by construction.

Thresholds (comparisons, ArgMax/ArgMin/TopK, Cast to bool) on values that
plans round differently can flip where a value sits within an ulp of the
threshold: trial.keep_real explains such a mismatch by moving the inputs by
1e-6. Rounding to float16 or truncation to integers, which would flip at every
grid point, is applied to exact values only (graph.V.exact); on other values
the step falls back to float64, which every plan rounds alike.

Ops in GATED are drawn only when the binary under test runs them (probe(),
at the start of a campaign): a build that refuses them refuses every graph
containing one, and those graphs would test nothing.
"""
import os
import subprocess
import tempfile

import numpy as np
import onnx
import onnx.parser

from .elementwise import const_shape
from .graph import V, Skip, broadcast

# ONNX TensorProto.DataType of the text syntax's type names (the Cast `to` attribute).
TYPE_CODE = {"float": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float16": 10, "double": 11}
INT_TYPES = ("int64", "int32", "int8", "uint8")

# Ops the host evaluator may not know yet, with a one-node model to probe for them.
GATED = {
    "ArgMax": ("float[2,4] x", "int64[2,1] y", "y = ArgMax <axis = 1> (x)"),
    "ArgMin": ("float[2,4] x", "int64[2,1] y", "y = ArgMin <axis = 1> (x)"),
    "TopK": ("float[2,4] x", "float[2,2] y, int64[2,2] i", "k = Constant <value = int64[1] {2}> ()\n"
             "  y, i = TopK <axis = 1> (x, k)"),
    "Xor": ("float[2,4] x", "bool[2,4] y", "a = Less (x, x)\n  b = Not (a)\n  y = Xor (a, b)"),
    "Mod": ("int64[2,4] x", "int64[2,4] y", "c = Constant <value = int64 {3}> ()\n  y = Mod (x, c)"),
    "GatherElements": ("float[2,4] x", "float[2,1] y", "i = ArgMax <axis = 1> (x)\n"
                       "  y = GatherElements <axis = 1> (x, i)"),
}
AVAILABLE = set()   # set by probe(); none of GATED until then


def probe(binary):
    """The GATED ops `binary` runs (a one-node model each: exit 4, refused, leaves
    the op out; any other outcome keeps it, so a crash is found by the campaign)."""
    AVAILABLE.clear()
    with tempfile.TemporaryDirectory(prefix="difftest-probe-") as d:
        for op, (ins, outs, body) in GATED.items():
            path = os.path.join(d, op + ".onnx")
            text = '<ir_version: 8, opset_import: ["" : 13]>\nprobe (%s) => (%s) {\n  %s\n}\n' % (ins, outs, body)
            onnx.save(onnx.parser.parse_model(text), path)
            try:
                rc = subprocess.run([binary, "run", path, "--iterations", "1", "--warmup", "0"],
                                    capture_output=True, timeout=60).returncode
            except (OSError, subprocess.TimeoutExpired):
                rc = 1
            if rc != 4:
                AVAILABLE.add(op)
    return sorted(AVAILABLE)


def has(op):
    return op not in GATED or op in AVAILABLE


def new_input(g, dtype, dims):
    name = "in%d" % (len(g.inputs) + 1)
    g.inputs.append("%s%s %s" % (dtype, "[%s]" % ",".join(map(str, dims)) if dims else "", name))
    return name


def cast(g, name, to):
    return g.node("Cast", [name], {"to": TYPE_CODE[to]})


def threshold(g, v, rng, form):
    """A comparison's constant: within half the value's magnitude, so both sides are drawn."""
    shape = const_shape(form, v.dims) if v.rank else []
    return g.const(rng.uniform(-0.5, 0.5, shape) * min(v.mag, 2.0))


def compare(g, v, cmp, rng, form="scalar"):
    """A bool of v's dims: v CMP c. Equal on floats only where it can hold:
    Relu(v) == 0 on an exact value (elsewhere it is LessOrEqual)."""
    if cmp == "Equal" and v.exact:
        return g.node("Equal", [g.node("Relu", [v.name]), g.const(np.array(0.0))])
    return g.node("LessOrEqual" if cmp == "Equal" else cmp, [v.name, threshold(g, v, rng, form)])


def xor(g, a, b):
    """Xor, or And(Or(a, b), Not(And(a, b))) when the build does not run Xor."""
    if has("Xor"):
        return g.node("Xor", [a, b])
    return g.node("And", [g.node("Or", [a, b]), g.node("Not", [g.node("And", [a, b])])])


def mask(g, st, v, rng):
    """Where(v CMP c [logic ...], v, other): a mask of a float activation selecting floats."""
    if not v.rank:
        raise Skip()
    m = compare(g, v, st.get("cmp", "Less"), rng, st.get("form", "scalar"))
    logic = st.get("logic", "none")
    if logic == "Not":
        m = g.node("Not", [m])
    elif logic in ("And", "Or", "Xor"):
        if st.get("with_input"):   # a bool graph input in a broadcast form
            m2 = new_input(g, "bool", const_shape(st.get("bform", "full"), v.dims))
        else:
            m2 = compare(g, v, st.get("cmp2", "Greater"), rng, st.get("form", "scalar"))
        m = xor(g, m, m2) if logic == "Xor" else g.node(logic, [m, m2])
    if st.get("tout"):
        g.outputs.append(V(m, v.dims, dtype="bool"))
    other = st.get("other", "const")
    if other == "neg":
        o = g.node("Neg", [v.name])
    elif other == "half":
        o = g.node("Mul", [v.name, g.const(np.array(0.5))])
    elif other == "zero":
        o = g.const(np.array(0.0))
    else:
        o = g.const(rng.uniform(-1, 1, const_shape(st.get("form", "scalar"), v.dims)) * min(v.mag, 2.0))
    ins = [m, o, v.name] if st.get("swap") else [m, v.name, o]
    return V(g.node("Where", ins), v.dims, v.mag, None, exact=v.exact)


def int_source(g, st, v, rng, it):
    """An integer value for intmix: (name, dims, lo, hi)."""
    src = st.get("src", "input")
    if src == "argmax" and has(st.get("argf", "ArgMax")) and v.rank and v.dims[-1] > 1:
        a = g.node(st.get("argf", "ArgMax"), [v.name], {"axis": -1, "keepdims": 1})
        return (cast(g, a, it) if it != "int64" else a), v.dims[:-1] + [1], 0, v.dims[-1] - 1
    if src == "input":
        dims = const_shape(st.get("form", "full"), v.dims) if v.rank else []
        return new_input(g, it, dims), dims, 0, 3
    if src == "cast" and v.exact:      # x in [-1, 1) through exact ops: truncation is the same everywhere
        k = int(np.ceil(4 * v.mag))
        return cast(g, g.node("Mul", [v.name, g.const(np.array(4.0))]), it), v.dims, -k, k
    return cast(g, compare(g, v, "Less", rng), it), v.dims, 0, 1


def int_ops(g, st, a, dims, lo, hi, rng, it):
    """Integer arithmetic on a: Add/Sub/Mul/Min/Max with small constants, Div
    by a non-zero constant (truncation toward 0), Neg, Abs, Mod, Equal, Cast
    to the other integer type. Returns (name, lo, hi, type)."""
    for f in st.get("ops", []):
        shape = const_shape(st.get("cform", "scalar"), dims) if dims else []
        if f in ("Add", "Sub", "Min", "Max"):
            c = rng.integers(-3, 4, shape)
        elif f in ("Mul", "Div"):
            c = rng.choice([-3, -2, 2, 3], shape)
        elif f == "Mod":
            if not has("Mod"):
                continue
            c = rng.choice([-3, 2, 3], shape)
        else:
            c = None
        if f in ("Neg", "Abs"):
            a = g.node(f, [a])
            lo, hi = (-hi, -lo) if f == "Neg" else (0 if lo < 0 < hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))
        elif f == "Equal":
            a = cast(g, g.node("Equal", [a, g.const(np.array(int(rng.integers(0, 2))), "k", it)]), it)
            lo, hi = 0, 1
        elif f == "Cast":
            it = "int32" if it == "int64" else "int64"
            a = cast(g, a, it)
        elif c is not None:
            a = g.node(f, [a, g.const(np.asarray(c), "k", it)])
            m = int(np.max(np.abs(c))) if np.size(c) else 1
            b = max(abs(lo), abs(hi))
            lo, hi = {"Add": (lo - m, hi + m), "Sub": (lo - m, hi + m), "Mul": (-b * m, b * m),
                      "Div": (-b, b), "Mod": (-m, m), "Min": (min(lo, -m), hi), "Max": (lo, max(hi, m))}[f]
    return a, lo, hi, it


def intmix(g, st, v, rng):
    """Integers at run time: from a graph input, a mask, a truncated exact value
    or ArgMax/ArgMin; integer arithmetic; ReduceSum/ReduceMax of the last axis,
    Expand or Tile back; mixed into v (v + c * Cast(i)) or selecting (Where)."""
    it = st.get("itype", "int64")
    a, dims, lo, hi = int_source(g, st, v, rng, it)
    a, lo, hi, it = int_ops(g, st, a, dims, lo, hi, rng, it)
    red = st.get("reduce")
    if red and dims and dims[-1] > 1:
        n = dims[-1]
        if red == "ReduceSum":
            r = g.node("ReduceSum", [a, g.ints([-1])], {"keepdims": 1})
            lo, hi = min(0, lo * n), max(0, hi * n)
        else:
            r = g.node("ReduceMax", [a], {"axes": [-1], "keepdims": 1})
        restore = st.get("restore", "expand")
        if restore == "expand":
            a = g.node("Expand", [r, g.ints(dims)])
        elif restore == "tile":
            a = g.node("Tile", [r, g.ints([1] * (len(dims) - 1) + [n])])
        else:
            a, dims = r, dims[:-1] + [1]
    if broadcast(v.dims, dims) != v.dims:
        raise Skip()
    if st.get("tout"):
        g.outputs.append(V(a, dims, dtype=it))
    if st.get("back") == "where":
        y = g.node("Where", [cast(g, a, "bool"), v.name, g.node("Neg", [v.name])])
        return V(y, v.dims, v.mag, None, exact=v.exact)
    b = max(abs(lo), abs(hi), 1)
    s = 2.0 ** -int(np.ceil(np.log2(b)))      # a power of two: |c * i| <= 1, exactly scaled
    f = g.node("Mul", [cast(g, a, "float"), g.const(np.array(s))])
    return V(g.node("Add", [v.name, f]), v.dims, v.mag + 1)


def gather(g, st, v, rng):
    """Gather along an axis with run-time int64 (or int32) indices of that axis's
    length (the dims stay): from a graph input (0..3, on axes of >= 4), its
    negative (-4..-1), 3 - it, Min(it, n - 1), a bool input cast to 0/1; or
    GatherElements of ArgMax (x - its maximum, along the axis)."""
    if not v.rank:
        raise Skip()
    axis = st.get("axis", 1) % v.rank
    n = v.dims[axis]
    idx = st.get("idx", "input")
    if idx == "elements" and has("ArgMax") and has("GatherElements"):
        i = g.node("ArgMax", [v.name], {"axis": axis, "keepdims": 1})
        top = g.node("GatherElements", [v.name, i], {"axis": axis})
        return V(g.node("Sub", [v.name, top]), v.dims, 2 * v.mag)
    if idx in ("input", "neg", "flip", "i32") and n < 4 or idx == "bool" and n < 2 or idx == "elements":
        idx = "clamp"
    if idx == "bool":
        i = cast(g, new_input(g, "bool", [n]), "int64")
    else:
        i = new_input(g, "int32" if idx == "i32" else "int64", [n])
        if idx == "neg":
            i = g.node("Sub", [i, g.ints(4)])
        elif idx == "flip":
            i = g.node("Sub", [g.ints(3), i])
        elif idx == "clamp":
            i = g.node("Min", [i, g.ints(n - 1)])
    return V(g.node("Gather", [v.name, i], {"axis": axis}), v.dims, v.mag, v.lo, exact=v.exact)


def topk(g, st, v, rng):
    """TopK of the last axis: v + mean(top k values) / 2 + max(indices) scaled,
    the indices possibly a graph output."""
    if not has("TopK") or not v.rank:
        raise Skip()
    n = v.dims[-1]
    k = min(st.get("k", 1), n)
    vals, idx = g.node("TopK", [v.name, g.ints([k])], {"axis": -1, "largest": st.get("largest", 1)}, nout=2)
    if st.get("tout"):
        g.outputs.append(V(idx, v.dims[:-1] + [k], dtype="int64"))
    s = g.node("ReduceMean", [vals], {"axes": [-1], "keepdims": 1})
    y = g.node("Add", [v.name, g.node("Mul", [s, g.const(np.array(0.5))])])
    top = g.node("ReduceMax", [cast(g, idx, "float")], {"axes": [-1], "keepdims": 1})
    scale = 2.0 ** -int(np.ceil(np.log2(max(n, 2))))
    y = g.node("Add", [y, g.node("Mul", [top, g.const(np.array(scale))])])
    return V(y, v.dims, v.mag * 1.5 + 1)


def cast_step(g, st, v, rng):
    """v through another type and back: float16 or an integer (4v truncated,
    then / 4) on exact values; float64 with an exact constant added (every
    plan rounds the double sum once); bool selecting v or a constant."""
    to = st.get("to", "double")
    if to in ("float16",) + INT_TYPES and not v.exact:
        to = "double"
    if to == "bool":
        y = g.node("Where", [cast(g, v.name, "bool"), v.name, g.const(np.array(0.5))])
        return V(y, v.dims, max(v.mag, 0.5), exact=v.exact)
    if to == "double":
        d = cast(g, v.name, "double")
        d = g.node("Add", [d, g.const(np.array(0.25), "c", "double")])
        if st.get("tout"):
            g.outputs.append(V(d, v.dims, dtype="double"))
        return V(cast(g, d, "float"), v.dims, v.mag + 0.25)
    if to == "float16":
        h = cast(g, v.name, "float16")
        if st.get("tout"):
            g.outputs.append(V(h, v.dims, dtype="float16"))
        return V(cast(g, h, "float"), v.dims, v.mag, v.lo, exact=True)
    i = cast(g, g.node("Mul", [v.name, g.const(np.array(4.0))]), to)
    if st.get("tout"):
        g.outputs.append(V(i, v.dims, dtype=to))
    y = g.node("Mul", [cast(g, i, "float"), g.const(np.array(0.25))])
    return V(y, v.dims, v.mag, None, exact=True)


def typed_input(g, st, v, rng):
    """A graph input of another type in a broadcast form, mixed into v: bool
    selects v or -v; numbers are cast to float and added (or multiplied)."""
    it = st.get("itype", "bool")
    dims = const_shape(st.get("form", "full"), v.dims) if v.rank else []
    name = new_input(g, it, dims)
    out = broadcast(v.dims, dims)
    if it == "bool":
        return V(g.node("Where", [name, v.name, g.node("Neg", [v.name])]), out, v.mag, exact=v.exact)
    f = cast(g, name, "float")
    if st.get("join") == "mul":
        if it in INT_TYPES:     # 0..3: 1 + i keeps v's sign and magnitude order
            f = g.node("Add", [f, g.const(np.array(1.0))])
        return V(g.node("Mul", [v.name, f]), out, v.mag * (4 if it in INT_TYPES else 1))
    if it in INT_TYPES:
        f = g.node("Mul", [f, g.const(np.array(0.25))])
    return V(g.node("Add", [v.name, f]), out, v.mag + 1)


RENDER = {"mask": mask, "intmix": intmix, "gather": gather, "topk": topk, "cast": cast_step,
          "typed_in": typed_input}
