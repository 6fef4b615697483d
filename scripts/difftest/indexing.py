"""Rendering of index steps: ScatterND, ScatterElements, OneHot,
GatherElements, GatherND, TopK as a sort (values and indices), ArgMax and
ArgMin along any axis; NonZero, whose count follows the values (the graph
then runs in stages). Each gives back a float value of the incoming dims.

Indices are constants in range by construction, or graph inputs (0..3, as
RandomInputs draws them) clamped by Min or offset into the negative range the
op allows. Scatter indices never repeat where the spec leaves the order of
writes open (reduction none): the rows of a permutation. Integer results leave
as graph outputs, compared exactly, only where their values are defined on
exact values (graph.V.exact), where no two plans can see a tie differently.
"""
import numpy as np

from .graph import V, Skip
from .typed import new_input


def _axis(st, v):
    if not v.rank:
        raise Skip()
    return st.get("axis", 0) % v.rank


def scatter_nd(g, st, v, rng):
    """ScatterND of k = 1 or 2 leading index dims: m distinct rows of v
    replaced (or added to, multiplied by) by a constant or a run-time input."""
    kd = min(st.get("kd", 1), v.rank)
    lead = v.dims[:kd]
    total = int(np.prod(lead))
    m = max(1, min(st.get("m", 2), total))
    rows = rng.permutation(total)[:m]
    idx = np.stack(np.unravel_index(rows, lead), axis=-1)
    upd_dims = [m] + v.dims[kd:]
    red = st.get("red", "none")
    upd = new_input(g, "float", upd_dims) if st.get("rt") else g.const(rng.uniform(-1, 1, upd_dims))
    if red == "mul":
        upd = g.node("Add", [upd, g.const(np.array(1.0))])      # factors in [0, 2)
    attrs = None
    if red != "none":
        attrs = {"reduction": red}
        g.opset = max(g.opset, 16)
    y = g.node("ScatterND", [v.name, g.ints(idx), upd], attrs)
    return V(y, v.dims, v.mag * 2 + 1)


def scatter_elements(g, st, v, rng):
    """ScatterElements along an axis: indices of the data's dims but k <= n
    along the axis, each line k distinct positions (some written negative)."""
    axis = _axis(st, v)
    n = v.dims[axis]
    k = max(1, min(st.get("k", 2), n))
    shape = list(v.dims)
    shape[axis] = k
    lines = np.moveaxis(np.zeros(shape, dtype=np.int64), axis, -1)
    flat = lines.reshape(-1, k)
    for i in range(flat.shape[0]):
        flat[i] = rng.permutation(n)[:k]
    if st.get("neg"):
        flat -= n * (rng.random(flat.shape) < 0.5)
    idx = np.moveaxis(flat.reshape(lines.shape), -1, axis)
    red = st.get("red", "none")
    upd = new_input(g, "float", shape) if st.get("rt") else g.const(rng.uniform(-1, 1, shape))
    attrs = {"axis": axis}
    if red != "none":
        attrs["reduction"] = red
        g.opset = max(g.opset, 16)
    return V(g.node("ScatterElements", [v.name, g.ints(idx), upd], attrs), v.dims, v.mag * 2 + 1)


def one_hot(g, st, v, rng):
    """v + 0.5 * OneHot(ArgMax(v, axis)) (or of a run-time index input, -4..-1
    when negative), on the same axis: the incoming dims again."""
    if v.rank < 2:
        raise Skip()        # OneHot's indices have a rank of at least 1
    axis = _axis(st, v)
    n = v.dims[axis]
    idims = v.dims[:axis] + v.dims[axis + 1:]
    dtype = st.get("dtype", "int64")
    if st.get("src") == "input" and n >= 4:
        i = new_input(g, st.get("itype", "int64"), idims)
        if st.get("neg"):
            i = g.node("Sub", [i, g.const(np.array(4), "k", st.get("itype", "int64"))])
        if st.get("itype") == "int32" and dtype == "int64":
            dtype = "int32"     # ORT 1.30 has no OneHot kernel of int32 indices and an int64 depth
    else:
        i = g.node(st.get("argf", "ArgMax"), [v.name], {"axis": axis, "keepdims": 0})
    depth = g.const(np.array(n), "k", dtype)
    vals = g.const(np.array([st.get("off", 0.0), 1.0]))
    oh = g.node("OneHot", [i, depth, vals], {"axis": axis})
    return V(g.node("Add", [v.name, g.node("Mul", [oh, g.const(np.array(0.5))])]), v.dims, v.mag + 0.5)


def gather_elements(g, st, v, rng):
    """GatherElements with constant indices (k <= n along the axis, some negative,
    repeats allowed), added back to v broadcast along the axis when k is 1."""
    axis = _axis(st, v)
    n = v.dims[axis]
    k = n if st.get("full", 1) else 1
    shape = list(v.dims)
    shape[axis] = k
    idx = rng.integers(0, n, shape)
    if st.get("neg"):
        idx -= n * (rng.random(shape) < 0.5)
    y = g.node("GatherElements", [v.name, g.ints(idx)], {"axis": axis})
    if k == n:
        return V(y, v.dims, v.mag, v.lo, exact=v.exact)
    return V(g.node("Add", [v.name, y]), v.dims, 2 * v.mag)


def gather_nd(g, st, v, rng):
    """GatherND giving the incoming dims back: rows of axis 0 (batch_dims 0,
    k = 1), elements of the first two axes (k = 2, indices [d0, d1, 2]), or
    rows of axis 1 within each batch (batch_dims 1); constant indices or a
    run-time input clamped to the axis by Min."""
    form = st.get("form", "rows")
    if v.rank < 2 and form != "rows":
        form = "rows"
    d0 = v.dims[0]
    if form == "rows":
        shape, bounds, attrs = [d0, 1], [d0], None
    elif form == "pairs":
        shape, bounds, attrs = v.dims[:2] + [2], v.dims[:2], None
    else:
        shape, bounds, attrs = v.dims[:2] + [1], v.dims[1:2], {"batch_dims": 1}
    if st.get("rt"):
        i = new_input(g, "int64", shape)
        i = g.node("Min", [i, g.ints(np.broadcast_to(np.array(bounds) - 1, shape))])
    else:
        i = g.ints(np.stack([rng.integers(0, b, shape[:-1]) for b in bounds], axis=-1))
    return V(g.node("GatherND", [v.name, i], attrs), v.dims, v.mag, v.lo, exact=v.exact)


def sort(g, st, v, rng):
    """TopK with k = the whole axis: v sorted along it (largest or smallest
    first); the indices a graph output on exact values, else their largest
    scaled into the values."""
    axis = _axis(st, v)
    n = v.dims[axis]
    k = n if st.get("full", 1) else max(1, n // 2)
    attrs = {"axis": axis, "largest": st.get("largest", 1)}
    vals, idx = g.node("TopK", [v.name, g.ints([k])], attrs, nout=2)
    dims = list(v.dims)
    dims[axis] = k
    if v.exact:
        g.outputs.append(V(idx, dims, dtype="int64"))
        y = V(vals, dims, v.mag, v.lo, exact=True)
    else:
        top = g.node("ReduceMax", [g.node("Cast", [idx], {"to": 1})], {"axes": [axis], "keepdims": 1})
        y = V(g.node("Add", [vals, g.node("Mul", [top, g.const(np.array(1.0 / n))])]), dims, v.mag + 1)
    return y


def arg(g, st, v, rng):
    """ArgMax/ArgMin along an axis (keepdims 0 or 1, select_last_index), the
    result a graph output on exact values and always mixed back as a float."""
    axis = _axis(st, v)
    attrs = {"axis": axis, "keepdims": st.get("keepdims", 1)}
    if st.get("last"):
        attrs["select_last_index"] = 1
    a = g.node(st.get("f", "ArgMax"), [v.name], attrs)
    dims = list(v.dims)
    dims[axis] = 1
    if v.exact:
        g.outputs.append(V(a, dims if attrs["keepdims"] else v.dims[:axis] + v.dims[axis + 1:], dtype="int64"))
    if not attrs["keepdims"]:
        a = g.node("Unsqueeze", [a, g.ints([axis])])
    f = g.node("Mul", [g.node("Cast", [a], {"to": 1}), g.const(np.array(1.0 / max(1, v.dims[axis])))])
    return V(g.node("Add", [v.name, f]), v.dims, v.mag + 1)


def nonzero(g, st, v, rng):
    """v + the mean over v's n elements of those above t, picked by
    NonZero (a count only the values decide: `run` and the session run the
    graph in stages) and Gather; none above t adds 0."""
    n = int(np.prod(v.dims)) if v.dims else 1
    flat = g.node("Reshape", [v.name, g.ints([-1])])
    above = g.node("Greater", [flat, g.const(np.array(st.get("t", 0.0)))])
    picked = g.node("Gather", [flat, g.node("Squeeze", [g.node("NonZero", [above]), g.ints([0])])])
    total = g.node("ReduceSum", [picked, g.ints([0])], {"keepdims": 0})
    y = g.node("Add", [v.name, g.node("Mul", [total, g.const(np.array(1.0 / n))])])
    return V(y, v.dims, v.mag * 2)


def unique(g, st, v, rng):
    """v + q / 2 + s, q = Round(2 v) flattened: its distinct values Y by
    Unique (sorted or in first-occurrence order: how many follows the
    values), q rebuilt as Gather(Y, inverse_indices), and s = the sum of
    v's element at each value's first occurrence (indices) times its
    count, over v's n elements."""
    n = int(np.prod(v.dims)) if v.dims else 1
    flat = g.node("Reshape", [v.name, g.ints([-1])])
    q = g.node("Round", [g.node("Mul", [flat, g.const(np.array(2.0))])])
    y, first, inverse, counts = g.node("Unique", [q], {"sorted": st.get("sorted", 1)}, nout=4)
    rebuilt = g.node("Reshape", [g.node("Gather", [y, inverse]), g.node("Shape", [v.name])])
    weighted = g.node("Mul", [g.node("Gather", [flat, first]), g.node("Cast", [counts], {"to": 1})])
    s = g.node("Mul", [g.node("ReduceSum", [weighted, g.ints([0])], {"keepdims": 0}), g.const(np.array(1.0 / n))])
    y = g.node("Add", [g.node("Add", [v.name, g.node("Mul", [rebuilt, g.const(np.array(0.5))])]), s])
    return V(y, v.dims, v.mag * 3 + 1)


RENDER = {"nonzero": nonzero, "unique": unique, "scatter_nd": scatter_nd, "scatter_el": scatter_elements, "one_hot": one_hot,
          "gather_el": gather_elements, "gather_nd": gather_nd, "sort": sort, "arg": arg}
