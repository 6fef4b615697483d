"""Rendering of shape steps: views (Reshape, Flatten, Transpose, Squeeze,
Unsqueeze, Slice, Split), pooling, Softmax, ReduceMean, squeeze-excitation."""
import numpy as np

from .graph import V, Skip


def reshape(g, st, v, rng):
    d, mode = v.dims, st.get("mode", "flat2")
    if mode == "flat2" and v.rank > 2:
        new, spec = [d[0], int(np.prod(d[1:]))], [d[0], -1]
    elif mode == "merge" and v.rank > 2:
        new = d[:-2] + [d[-2] * d[-1]]
        spec = [0] * (v.rank - 2) + [-1]
    elif mode == "split" and v.rank < 5 and d[1] % 2 == 0 and d[1] > 2:
        new = [d[0], 2, d[1] // 2] + d[2:]
        spec = new
    elif mode == "unmerge" and v.rank < 5 and d[-1] % 2 == 0 and d[-1] > 2:
        new = d[:-1] + [2, d[-1] // 2]
        spec = d[:-1] + [-1, d[-1] // 2]
    else:
        raise Skip()
    return V(g.node("Reshape", [v.name, g.ints(spec)]), new, v.mag, v.lo)


def flatten(g, st, v, rng):
    if v.rank < 3:
        raise Skip()
    axis = min(st.get("axis", 1), v.rank - 1)
    new = [int(np.prod(v.dims[:axis])), int(np.prod(v.dims[axis:]))]
    return V(g.node("Flatten", [v.name], {"axis": axis}), new, v.mag, v.lo)


def transpose(g, st, v, rng):
    r = v.rank
    mode = st.get("mode", "last2")
    if mode == "last2":
        perm = list(range(r - 2)) + [r - 1, r - 2]
    elif mode == "nhwc" and r >= 3:
        perm = [0] + list(range(2, r)) + [1]
    elif mode == "nchw" and r >= 3:
        perm = [0, r - 1] + list(range(1, r - 1))
    else:
        perm = [int(x) for x in np.random.default_rng(st.get("s", 0)).permutation(r)]
    return V(g.node("Transpose", [v.name], {"perm": perm}), [v.dims[p] for p in perm], v.mag, v.lo)


def unsqueeze(g, st, v, rng):
    if v.rank >= 5:
        raise Skip()
    axis = min(st.get("axis", 1), v.rank)
    new = v.dims[:axis] + [1] + v.dims[axis:]
    return V(g.node("Unsqueeze", [v.name, g.ints([axis])]), new, v.mag, v.lo)


def squeeze(g, st, v, rng):
    ones = [i for i, d in enumerate(v.dims) if d == 1]
    if not ones or v.rank <= 2:
        raise Skip()
    axis = ones[-1] if st.get("last") else ones[0]
    new = v.dims[:axis] + v.dims[axis + 1:]
    return V(g.node("Squeeze", [v.name, g.ints([axis])]), new, v.mag, v.lo)


def slice_(g, st, v, rng):
    axis = st.get("axis", 1) % v.rank
    n, step = v.dims[axis], st.get("step", 1)
    start = int(round(st.get("start", 0.0) * n))
    end = int(round(st.get("end", 1.0) * n))
    if step < 0:
        start, end = n - 1 - start, -n - 1 if end >= n else n - 1 - end
    kept = len(range(n)[start:end:step])  # Python's slice clamping is ONNX's
    if kept < 1:
        raise Skip()
    new = list(v.dims)
    new[axis] = kept
    ins = [v.name, g.ints([start]), g.ints([end]), g.ints([axis])]
    if step != 1:
        ins.append(g.ints([step]))
    return V(g.node("Slice", ins), new, v.mag, v.lo)


def split(g, st, v, rng):
    """Split into 2-3 parts; the first continues, the rest join back (Concat in
    reverse order along the same axis) or become graph outputs."""
    axis = st.get("axis", 1) % v.rank
    n, parts = v.dims[axis], st.get("parts", 2)
    if n < parts:
        raise Skip()
    sizes = [n // parts] * parts
    sizes[0] += n - sum(sizes)
    if st.get("uneven") and parts == 2 and n >= 3:
        sizes = [n - 1, 1]
    outs = g.node("Split", [v.name, g.ints(sizes)], {"axis": axis}, nout=parts)
    vals = []
    for o, s in zip(outs, sizes):
        dims = list(v.dims)
        dims[axis] = s
        vals.append(V(o, dims, v.mag, v.lo))
    if st.get("join") == "concat":
        y = g.node("Concat", [x.name for x in reversed(vals)], {"axis": axis})
        return V(y, v.dims, v.mag, v.lo)
    g.outputs.extend(vals[1:])
    return vals[0]


def pool(g, st, v, rng):
    if v.rank < 3:
        raise Skip()
    ns, kind = v.rank - 2, st["f"]
    if kind == "GlobalAveragePool":
        return V(g.node(kind, [v.name]), v.dims[:2] + [1] * ns, v.mag, v.lo)
    k, s, p = st.get("k", 2), st.get("stride", 2), st.get("pad", 0)
    if p >= k:
        p = k - 1
    spatial = []
    for n in v.dims[2:]:
        if n + 2 * p < k:
            raise Skip()
        spatial.append((n + 2 * p - k) // s + 1)
    attrs = {"kernel_shape": [k] * ns, "strides": [s] * ns, "pads": [p] * (2 * ns)}
    if kind == "AveragePool" and st.get("cip"):
        attrs["count_include_pad"] = 1
    return V(g.node(kind, [v.name], attrs), v.dims[:2] + spatial, v.mag)


def softmax(g, st, v, rng):
    axis = st.get("axis", -1)
    if not -v.rank <= axis < v.rank:
        axis = -1
    return V(g.node(st.get("f", "Softmax"), [v.name], {"axis": axis}), v.dims, 1.0)


def reduce_mean(g, st, v, rng):
    if st.get("spatial") and v.rank >= 3:
        axes = list(range(2, v.rank))
    else:
        axes = [-1]
    keep = st.get("keepdims", 1)
    if not keep and v.rank - len(axes) < 2:
        keep = 1
    if keep:
        new = [1 if (i in axes or i - v.rank in axes) else d for i, d in enumerate(v.dims)]
    else:
        new = [d for i, d in enumerate(v.dims) if not (i in axes or i - v.rank in axes)]
    return V(g.node("ReduceMean", [v.name], {"axes": axes, "keepdims": keep}), new, v.mag)


def squeeze_excite(g, st, v, rng):
    """x * Sigmoid(Conv(Relu(Conv(GlobalAveragePool(x))))): MobileNetV3/EfficientNet."""
    from .anchors import conv
    if v.rank != 4:
        raise Skip()
    c = v.dims[1]
    s = V(g.node("GlobalAveragePool", [v.name]), v.dims[:2] + [1, 1], v.mag)
    s = conv(g, {"k": 1, "out": max(1, c // 4), "bias": True}, s, rng)
    act = st.get("act", "Relu")
    if act == "HardSwish":
        g.opset = max(g.opset, 14)
    if act == "swish":
        s = V(g.node("Mul", [s.name, g.node("Sigmoid", [s.name])]), s.dims, s.mag)
    else:
        s = V(g.node(act, [s.name]), s.dims, s.mag)
    s = conv(g, {"k": 1, "out": c, "bias": True}, s, rng)
    gate = g.node(st.get("gate", "Sigmoid"), [s.name])
    return V(g.node("Mul", [v.name, gate]), v.dims, v.mag)


def pad(g, st, v, rng):
    """Constant-mode Pad of the spatial axes (or the last axis)."""
    r = v.rank
    axes = list(range(2, r)) if r >= 3 else [r - 1]
    before = [st.get("before", 1) if i in axes else 0 for i in range(r)]
    after = [st.get("after", 0) if i in axes else 0 for i in range(r)]
    ins = [v.name, g.ints(before + after)]
    if st.get("value"):
        ins.append(g.const(np.array(float(st["value"]))))
    new = [d + b + a for d, b, a in zip(v.dims, before, after)]
    return V(g.node("Pad", ins), new, max(v.mag, abs(st.get("value") or 0)))


def instance_norm(g, st, v, rng):
    if v.rank < 3:
        raise Skip()
    c = v.dims[1]
    ins = [v.name, g.const(rng.uniform(0.5, 1.5, c)), g.const(rng.uniform(-0.5, 0.5, c))]
    return V(g.node("InstanceNormalization", ins, {"epsilon": 1e-5}), v.dims, 4.0)


def identity(g, st, v, rng):
    return V(g.node(st.get("f", "Identity"), [v.name]), v.dims, v.mag, v.lo)
