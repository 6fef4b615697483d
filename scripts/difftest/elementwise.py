"""Rendering of chain steps: unary activations, binary ops with constants of
every broadcast form, domain-restricted ops behind guards, and the motifs the
backend recognizes (swish, hard-swish, Gelu, LayerNorm decomposition)."""
import math

import numpy as np

from .graph import V, Skip, broadcast

# op -> (magnitude after, positive lower bound after or None)
UNARY = {
    "Relu": lambda m: (m, None), "LeakyRelu": lambda m: (m, None),
    "Sigmoid": lambda m: (1.0, None), "Tanh": lambda m: (1.0, None),
    "Elu": lambda m: (m, None), "Abs": lambda m: (m, None), "Neg": lambda m: (m, None),
    "Softplus": lambda m: (m + 0.7, None), "HardSigmoid": lambda m: (1.0, None),
    "HardSwish": lambda m: (m, None), "Erf": lambda m: (1.0, None),
    "Softsign": lambda m: (1.0, None), "Selu": lambda m: (m * 1.1, None),
    "Celu": lambda m: (m, None), "Exp": lambda m: (math.exp(m), math.exp(-m)),
}


def scale_down(g, v, target=2.0):
    """Multiply by a power of two that brings the typical magnitude near target."""
    k = max(1, int(math.ceil(math.log2(v.mag / target))))
    y = g.node("Mul", [v.name, g.const(np.array(2.0 ** -k))])
    return V(y, v.dims, v.mag * 2.0 ** -k, v.lo * 2.0 ** -k if v.lo else None)


def bounded(g, v, limit=2.5):
    """Exp and c^x need bounded inputs: scale down, then Tanh for a hard bound
    (the magnitude is an estimate). Scaling first keeps rounding relative."""
    if v.mag <= limit:
        return v
    v = scale_down(g, v)
    return V(g.node("Tanh", [v.name]), v.dims, 1.0)


def positive(g, v, rng, floor=0.25):
    """Sqrt, Log, Reciprocal and divisors need inputs away from 0: Abs + c."""
    if v.lo is not None and v.lo >= floor:
        return v
    a = g.node("Abs", [v.name])
    c = float(np.round(rng.uniform(0.5, 1.0), 3))
    return V(g.node("Add", [a, g.const(np.array(c))]), v.dims, v.mag + c, c)


def unary(g, st, v, rng):
    f = st["f"]
    attrs = None
    if f == "Exp":
        v = bounded(g, v)
    if f == "HardSwish":
        g.opset = max(g.opset, 14)
    if f in ("LeakyRelu", "Elu", "Celu") and "alpha" in st:
        attrs = {"alpha": float(st["alpha"])}
    if f == "HardSigmoid" and "alpha" in st:
        attrs = {"alpha": float(st["alpha"]), "beta": float(st.get("beta", 0.5))}
    mag, lo = UNARY[f](v.mag)
    if f == "Softplus" or f == "Abs" and v.lo is not None:
        lo = v.lo if f == "Abs" else None
    return V(g.node(f, [v.name], attrs), v.dims, mag, lo)


def domain(g, st, v, rng):
    f = st["f"]
    v = positive(g, v, rng)
    if f == "Sqrt":
        return V(g.node("Sqrt", [v.name]), v.dims, math.sqrt(v.mag), math.sqrt(v.lo))
    if f == "Log":
        return V(g.node("Log", [v.name]), v.dims, max(abs(math.log(v.lo)), math.log(v.mag + 1)))
    if f == "Reciprocal":
        return V(g.node("Reciprocal", [v.name]), v.dims, 1 / v.lo, 1 / (v.mag * 3))
    raise Skip()


def const_shape(form, dims):
    r = len(dims)
    if form == "scalar":
        return []
    if form == "one":
        return [1]
    if form == "chan":
        return [dims[1]] + [1] * (r - 2) if r >= 2 else [dims[-1]]
    if form == "last":
        return [dims[-1]]
    if form == "nobatch":
        return [1] + dims[1:]
    if form == "full":
        return list(dims)
    if form == "row":      # broadcast over the last axis only: [..., 1]
        return list(dims[:-1]) + [1]
    if form == "both":     # both operands broadcast: v's first dim of 1 widened to 2 by [.., 2, 1.., last]
        ones = [i for i, d in enumerate(dims) if d == 1]
        if r < 2 or not ones or ones[0] == r - 1:
            raise Skip()
        shape = [1] * r
        shape[ones[0]], shape[-1] = 2, dims[-1]
        return shape
    raise Skip()


def const_values(st, shape, rng, op, first):
    if st.get("round") is not None and op != "Pow":   # a round exponent could leave the domain
        return np.full(shape, float(st["round"]))
    if op in ("Add", "Sub", "Max", "Min"):
        return rng.uniform(-1, 1, shape)
    if op == "Pow":
        if first:          # base^x: a positive base
            return rng.uniform(0.5, 2.0, shape)
        return np.full(shape, float(st.get("exp", 2.0)))
    # Mul, Div: magnitudes in [0.5, 1.5], either sign, never near 0.
    return rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def binary(g, st, v, rng):
    op, first = st["f"], st.get("first", False)
    shape = const_shape(st.get("form", "scalar"), v.dims)
    if op == "Pow" and not first and st.get("exp", 2.0) not in (1.0, 2.0, 3.0):
        v = positive(g, v, rng)
    if op == "Pow" and first:
        v = bounded(g, v)
    if op == "Div" and first:
        v = positive(g, v, rng)
    key = (op, tuple(shape), first)
    if st.get("share") and key in g.shared:
        c, vals = g.shared[key]
    else:
        vals = const_values(st, shape, rng, op, first)
        c = g.const(vals)
        g.shared[key] = (c, vals)
    cmax = float(np.max(np.abs(vals))) if np.size(vals) else 1.0
    ins = [c, v.name] if first else [v.name, c]
    out = broadcast(v.dims, shape)
    lo = None
    if op == "Add":
        mag = v.mag + cmax
    elif op == "Sub":
        mag = v.mag + cmax
    elif op == "Mul":
        mag = v.mag * cmax
    elif op == "Div":
        mag = cmax / v.lo if first else v.mag / float(np.min(np.abs(vals)))
    elif op in ("Max", "Min"):
        mag = max(v.mag, cmax)
    else:
        mag = cmax ** v.mag if first else v.mag ** float(np.max(vals))
        lo = float(np.min(vals)) ** v.mag if first else None
    return V(g.node(op, ins), out, mag, lo)


def clip(g, st, v, rng):
    lo_name = g.const(np.array(float(st["min"]))) if st.get("min") is not None else ""
    hi_name = g.const(np.array(float(st["max"]))) if st.get("max") is not None else ""
    ins = [v.name, lo_name, hi_name]
    while ins[-1] == "":
        ins.pop()
    lo = st["min"] if st.get("min") is not None and st["min"] > 0 else None
    return V(g.node("Clip", ins), v.dims, v.mag, lo)


def swish(g, st, v, rng):
    s = g.node("Sigmoid", [v.name])
    ins = [s, v.name] if st.get("swap") else [v.name, s]
    return V(g.node("Mul", ins), v.dims, v.mag)


def hswish(g, st, v, rng):
    h = g.node("HardSigmoid", [v.name], {"alpha": 1.0 / 6, "beta": 0.5})
    ins = [h, v.name] if st.get("swap") else [v.name, h]
    return V(g.node("Mul", ins), v.dims, v.mag)


def gelu(g, st, v, rng):
    d = g.node("Div", [v.name, g.const(np.array(1.41421356))])
    e = g.node("Erf", [d])
    a = g.node("Add", [e, g.const(np.array(1.0))])
    m = g.node("Mul", [a, v.name] if st.get("swap") else [v.name, a])
    return V(g.node("Mul", [m, g.const(np.array(0.5))]), v.dims, v.mag)


def layernorm_dec(g, st, v, rng):
    if v.rank < 2:
        raise Skip()
    axes = [v.rank - 1] if st.get("posaxis") else [-1]
    n = v.dims[-1]
    mean = g.node("ReduceMean", [v.name], {"axes": axes})
    d = g.node("Sub", [v.name, mean])
    sq = g.node("Pow", [d, g.const(np.array(2.0))])
    var = g.node("ReduceMean", [sq], {"axes": axes})
    ve = g.node("Add", [var, g.const(np.array(float(st.get("eps", 1e-5))))])
    sd = g.node("Sqrt", [ve])
    nrm = g.node("Div", [d, sd])
    s = g.node("Mul", [nrm, g.const(rng.uniform(0.5, 1.5, [n]))])
    return V(g.node("Add", [s, g.const(rng.uniform(-0.5, 0.5, [n]))]), v.dims, 4.0)


def layernorm(g, st, v, rng):
    if v.rank < 2:
        raise Skip()
    g.opset = max(g.opset, 17)
    axis = -2 if st.get("two") and v.rank > 2 else -1
    shape = v.dims[axis:]
    ins = [v.name, g.const(rng.uniform(0.5, 1.5, shape))]
    if st.get("bias", True):
        ins.append(g.const(rng.uniform(-0.5, 0.5, shape)))
    y = g.node("LayerNormalization", ins, {"axis": axis, "epsilon": float(st.get("eps", 1e-5))})
    return V(y, v.dims, 4.0)


def prelu(g, st, v, rng):
    """PRelu with a constant slope: per channel ([C,1,1]), one value, or full."""
    shape = const_shape(st.get("form", "chan"), v.dims)
    slope = g.const(rng.uniform(0.05, 0.5, shape))
    return V(g.node("PRelu", [v.name, slope]), broadcast(v.dims, shape), v.mag)


def binary_input(g, st, v, rng):
    """A binary op whose other operand is a second graph input (a run-time tensor,
    not a constant) in one of the broadcast forms: binary post-ops read at run time."""
    op, first = st["f"], st.get("first", False)
    shape = const_shape(st.get("form", "full"), v.dims)
    name = "in%d" % (len(g.inputs) + 1)
    g.inputs.append("float%s %s" % ("[%s]" % ",".join(map(str, shape)) if shape else "", name))
    other = V(name, shape, 1.0)
    if op == "Div":
        if first:
            v = positive(g, v, rng)
        else:
            other = positive(g, other, rng)
    ins = [other.name, v.name] if first else [v.name, other.name]
    mag = v.mag * 2 if op in ("Mul", "Div") else v.mag + 1
    return V(g.node(op, ins), broadcast(v.dims, shape), mag)
