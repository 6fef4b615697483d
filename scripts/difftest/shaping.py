"""Rendering of shape-making steps: Tile, Expand of a value
computed at run time, Range and ConstantOfShape. Their shape operands are
constants or come from Shape of the value (folded at build time, as exported
models write them): plans have static shapes, and a shape that follows run-time
values is refused by design (docs/opsets-and-ops.md "Types and ops at run time").
"""
import numpy as np

from .graph import V, Raw, Skip, fmt


def _shape_of(g, v, st):
    """v's dims as an int64 vector: a constant, or Shape(v) (build-time shape arithmetic)."""
    return g.node("Shape", [v.name]) if st.get("shape_of") else g.ints(v.dims)


def tile(g, st, v, rng):
    """Tile with repeats of 1 but on one axis (2 or 3), or 2 on two axes;
    the grown value goes on (later steps adapt to its dims)."""
    if not v.rank:
        raise Skip()
    reps = [1] * v.rank
    axis = st.get("axis", -1) % v.rank
    reps[axis] = st.get("times", 2)
    if st.get("two") and v.rank >= 2:
        reps[(axis + 1) % v.rank] = 2
    dims = [d * r for d, r in zip(v.dims, reps)]
    if int(np.prod(dims)) > 1 << 16:
        raise Skip()
    return V(g.node("Tile", [v.name, g.ints(reps)]), dims, v.mag, v.lo, exact=v.exact)


def expand(g, st, v, rng):
    """x + Expand(ReduceMean(x over an axis, keepdims), dims of x): a value
    computed at run time broadcast back, the target shape a constant or Shape(x);
    or Expand to a larger rank (a new leading axis of 2) and a ReduceMax of it."""
    if not v.rank:
        raise Skip()
    axis = st.get("axis", -1) % v.rank
    if st.get("lead") and v.rank < 5:
        y = g.node("Expand", [v.name, g.ints([2] + [1] * v.rank)])
        y = g.node("ReduceMax", [y], {"axes": [0], "keepdims": 0})
        return V(y, v.dims, v.mag, v.lo, exact=v.exact)
    r = g.node("ReduceMean", [v.name], {"axes": [axis], "keepdims": 1})
    e = g.node("Expand", [r, _shape_of(g, v, st)])
    return V(g.node("Sub" if st.get("sub") else "Add", [v.name, e]), v.dims, 2 * v.mag)


def range_(g, st, v, rng):
    """v + Range along the last axis: float (start, step) constants, or int64
    from Shape(v) (limit = the last dim, folded at build time), cast and scaled."""
    if not v.rank:
        raise Skip()
    n = v.dims[-1]
    if st.get("int"):
        if st.get("shape_of"):
            limit = g.node("Gather", [g.node("Shape", [v.name]), g.ints(v.rank - 1)])
        else:
            limit = g.ints(n)
        r = g.node("Range", [g.ints(0), limit, g.ints(1)])
        r = g.node("Cast", [r], {"to": 1})
        r = g.node("Mul", [r, g.const(np.array(1.0 / n))])
    else:
        start, delta = st.get("start", -0.5), st.get("delta", 0.25)
        # limit halfway into the last step: the count is unambiguous in float and double
        limit = start + delta * (n - 0.5)
        r = g.node("Range", [g.const(np.array(start)), g.const(np.array(limit)), g.const(np.array(delta))])
    return V(g.node("Add", [v.name, r]), v.dims, v.mag + abs(st.get("start", 0.5)) + abs(st.get("delta", 0.25)) * n)


def constant_of_shape(g, st, v, rng):
    """v * ConstantOfShape(dims of v), of value c (float), or + Cast of an int64 one."""
    if not v.rank:
        raise Skip()
    shp = _shape_of(g, v, st)
    if st.get("int"):
        c = g.node("ConstantOfShape", [shp], {"value": _tensor_attr("int64", 2)})
        c = g.node("Cast", [c], {"to": 1})
        return V(g.node("Add", [v.name, c]), v.dims, v.mag + 2)
    c = g.node("ConstantOfShape", [shp], {"value": _tensor_attr("float", st.get("value", 0.5))})
    return V(g.node("Mul", [v.name, c]), v.dims, v.mag * abs(st.get("value", 0.5)), exact=v.exact)


def _tensor_attr(dtype, value):
    return Raw("%s[1] {%s}" % (dtype, fmt(value) if dtype == "float" else int(value)))


RENDER = {"tile": tile, "expand": expand, "range": range_, "cos": constant_of_shape}
