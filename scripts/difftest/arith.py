"""Rendering of arithmetic steps: CumSum, Trilu, Mod on floats,
Pow with an exponent known only at run time, and Einsum contractions other
than a batched MatMul (anchors.einsum draws those).

Mod on floats needs fmod = 1; C's fmod is exact, and it jumps only where x
crosses a multiple of the divisor, which a plan's rounding moves across with
a chance near 1e-7 per element (trial.keep_real judges a near miss). Pow's
base is kept at or above 0.25 (elementwise.positive) and its exponent in
[-1.5, 1.5], so x^y stays in a well-conditioned range.
"""
import math

import numpy as np

from .elementwise import bounded, const_shape, positive
from .graph import V, Skip, broadcast
from .typed import new_input


def cumsum(g, st, v, rng):
    if not v.rank:
        raise Skip()
    axis = st.get("axis", -1) % v.rank
    attrs = {}
    if st.get("exclusive"):
        attrs["exclusive"] = 1
    if st.get("reverse"):
        attrs["reverse"] = 1
    a = g.const(np.array(axis if st.get("pos", 1) else axis - v.rank), "k", st.get("atype", "int64"))
    y = g.node("CumSum", [v.name, a], attrs or None)
    return V(y, v.dims, v.mag * v.dims[axis])


def trilu(g, st, v, rng):
    if v.rank < 2:
        raise Skip()
    g.opset = max(g.opset, 14)
    ins = [v.name]
    if st.get("diag") is not None:
        ins.append(g.const(np.array(st["diag"]), "k", "int64"))
    y = g.node("Trilu", ins, {"upper": st.get("upper", 1)})
    return V(y, v.dims, v.mag, exact=v.exact)


def fmod(g, st, v, rng):
    d = rng.choice([0.75, -0.5, 1.25, 0.3], const_shape(st.get("form", "scalar"), v.dims) if v.rank else [])
    return V(g.node("Mod", [v.name, g.const(np.asarray(d))], {"fmod": 1}), broadcast(v.dims, np.shape(d)),
             1.25, exact=v.exact)


def pow_runtime(g, st, v, rng):
    """positive(v) ^ e, e a graph input in [-1, 1) of a broadcast form times 1.5,
    or Tanh of v itself (x^tanh(x), an exponent computed in the graph)."""
    base = positive(g, v, rng)
    if st.get("src") == "self":
        e = g.node("Tanh", [bounded(g, v).name])
        out = v.dims
    else:
        dims = const_shape(st.get("form", "full"), v.dims) if v.rank else []
        e = g.node("Mul", [new_input(g, "float", dims), g.const(np.array(1.5))])
        out = broadcast(v.dims, dims)
    ins = [e, base.name] if st.get("swap") else [base.name, e]
    if st.get("swap"):    # e ^ base needs e > 0: 1.25 + e/2 is in [0.5, 2)
        ins[0] = g.node("Add", [g.node("Mul", [e, g.const(np.array(0.5))]), g.const(np.array(1.25))])
        return V(g.node("Pow", ins), out, 2.0 ** min(base.mag, 6.0) + 1, 0.0)
    return V(g.node("Pow", ins), out, max(base.mag, 1 / base.lo) ** 1.5 + 1, 0.0)


def einsum_ext(g, st, v, rng):
    """Einsum beyond a batched MatMul: the elementwise square ("...,...->..."
    with labels), a sum over all but the first two labels, a permutation of labels,
    the diagonal of a square last pair, an outer product of v's last axis with
    a constant, and a three-operand contraction x_i W_ij y_j per batch row."""
    form = st.get("form", "square")
    if not 1 <= v.rank <= 4:
        raise Skip()
    lab = "abcd"[:v.rank]
    if form == "square":
        y = g.node("Einsum", [v.name, v.name], {"equation": "%s,%s->%s" % (lab, lab, lab)})
        return V(y, v.dims, v.mag * v.mag)
    # (never a vector: views and others take rank 2 and more)
    if form == "sum" and v.rank >= 3:
        y = g.node("Einsum", [v.name], {"equation": "%s->ab" % lab})
        n = int(np.prod(v.dims[2:]))
        return V(g.node("Mul", [y, g.const(np.array(1.0 / n))]), v.dims[:2], v.mag)
    if form == "perm" and v.rank >= 3:
        out = lab[0] + lab[2:] + lab[1]         # channels last
        return V(g.node("Einsum", [v.name], {"equation": "%s->%s" % (lab, out)}),
                 v.dims[:1] + v.dims[2:] + v.dims[1:2], v.mag, v.lo, exact=v.exact)
    if form == "diag" and v.rank >= 3 and v.dims[-1] == v.dims[-2]:
        y = g.node("Einsum", [v.name], {"equation": "%s->%s" % (lab[:-2] + "ii", lab[:-2] + "i")})
        return V(y, v.dims[:-1], v.mag, v.lo, exact=v.exact)
    if form == "outer" and v.rank <= 3:
        n = st.get("n", 3)
        w = g.const(rng.uniform(-1, 1, [n]))
        y = g.node("Einsum", [v.name, w], {"equation": "%s,z->%sz" % (lab, lab)})
        return V(y, v.dims + [n], v.mag)
    if form == "bilinear" and v.rank == 2:
        n = v.dims[1]
        w = g.const(rng.uniform(-1, 1, [n, n]) * math.sqrt(3.0 / n))
        y = g.node("Einsum", [v.name, w, v.name], {"equation": "bi,ij,bj->b"})
        return V(g.node("Unsqueeze", [y, g.ints([1])]), [v.dims[0], 1], v.mag * v.mag)
    raise Skip()


RENDER = {"cumsum": cumsum, "trilu": trilu, "fmod": fmod, "pow_rt": pow_runtime, "einsum_x": einsum_ext}
