"""Rendering of anchor steps (the ops a fused group starts from): Conv,
ConvTranspose, Gemm, MatMul, BatchNormalization, Einsum. Weights, biases and
Gemm's B and C are constants, or ("rtw", "rtb", "rtc") known only at run
time: a second graph input, weights scaled to their usual magnitude by a Mul
(so computed, not only fed); with "qw", a Conv's or MatMul's weights are int8
through DequantizeLinear (quantized.py). Every parameter is adapted to
the incoming value's shape, or the step is skipped (graph.Skip): a recipe stays
valid whatever the shrinker removed before the step."""
import math

import numpy as np

from . import elementwise as ew
from . import quantized
from .graph import V, Skip, weights


def _group(mode, cin, cout):
    if mode == "dw":
        return cin
    if mode == "g":
        for g in (4, 3, 2):
            if cin % g == 0 and cout % g == 0 and cin > g:
                return g
    return 1


def _bn_consts(g, rng, c):
    scale = g.const(rng.uniform(0.5, 1.5, c))
    bias = g.const(rng.uniform(-0.5, 0.5, c))
    mean = g.const(rng.uniform(-0.5, 0.5, c))
    var = g.const(rng.uniform(0.5, 1.5, c))
    return [scale, bias, mean, var]


def batchnorm(g, st, v, rng):
    if v.rank < 2:
        raise Skip()
    c = v.dims[1]
    attrs = {"epsilon": float(st.get("eps", 1e-5))} if st.get("eps") else None
    y = g.node("BatchNormalization", [v.name] + _bn_consts(g, rng, c), attrs)
    return V(y, v.dims, v.mag * 1.5 + 0.5)


# The most elements one weight may have (16 MB of float32 in the model, twice
# that in numpy's float64 while drawn): a MatMul keeping the width of a value
# that a Flatten made 56320 wide asked for a [56320, 56320] weight, 23.6 GiB
# (seed 81128555, a MemoryError that ended that graph's trial).
MAX_WEIGHT_ELEMENTS = 1 << 22


def _check_size(shape):
    if int(np.prod(shape, dtype=np.int64)) > MAX_WEIGHT_ELEMENTS:
        raise Skip()


def _runtime_input(g, shape, scale=None):
    """A new graph input of `shape` (uniform in [-1, 1) at run time), times
    `scale` when given: an operand the backend sees only at run time."""
    _check_size(shape)
    name = "in%d" % (len(g.inputs) + 1)
    g.inputs.append("float%s %s" % ("[%s]" % ",".join(map(str, shape)) if shape else "", name))
    if scale is None:
        return name
    return g.node("Mul", [name, g.const(np.array(float(scale)))])


def _w(st, rng, shape, fan_in):
    # "round_w" (set by the shrinker): every weight 0.5, so a case reads by hand.
    _check_size(shape)
    return np.full(shape, 0.5) if st.get("round_w") else weights(rng, shape, fan_in)


def conv(g, st, v, rng, transpose=False):
    if v.rank < 3:
        raise Skip()
    ns = v.rank - 2
    cin = v.dims[1]
    k, s, d = st["k"], st.get("stride", 1), st.get("dil", 1)
    pb, pe = st.get("pad", 0), st.get("pad", 0) + st.get("asym", 0)
    if st.get("group") == "dw":
        cout = cin * st.get("mult", 1)
    else:
        cout = st.get("out") or cin      # None: keep the channels (residual bodies)
    grp = _group(st.get("group", "1"), cin, cout)
    eff = d * (k - 1) + 1
    spatial = []
    for n in v.dims[2:]:
        if transpose:
            op = st.get("opad", 0) if st.get("opad", 0) < max(s, d) else 0
            o = (n - 1) * s - pb - pe + eff + op
        else:
            if n + pb + pe < eff or pb >= eff or pe >= eff:
                raise Skip()
            o = (n + pb + pe - eff) // s + 1
        if o < 1:
            raise Skip()
        spatial.append(o)
    attrs = {"kernel_shape": [k] * ns, "strides": [s] * ns, "dilations": [d] * ns,
             "pads": [pb] * ns + [pe] * ns}
    if grp != 1:
        attrs["group"] = grp
    if transpose:
        fan = max(1, cin // grp * k ** ns // s ** ns)
        wshape = [cin, cout // grp] + [k] * ns
        if st.get("opad", 0) and st["opad"] < max(s, d):
            attrs["output_padding"] = [st["opad"]] * ns
    else:
        fan = cin // grp * k ** ns
        wshape = [cout, cin // grp] + [k] * ns
    w_scales = None
    if st.get("qw") and not transpose:     # int8 weights through DequantizeLinear (quantized.py)
        w, w_scales = quantized.dequantized_weights(g, _w(st, rng, wshape, fan), st["qw"])
    elif st.get("rtw"):
        w = _runtime_input(g, wshape, math.sqrt(3.0 / max(1, fan)))
    else:
        w = g.const(_w(st, rng, wshape, fan))
    ins = [v.name, w]
    if st.get("bias"):
        if w_scales is not None:
            ins.append(quantized.dequantized_bias(g, v, w_scales, rng.uniform(-0.5, 0.5, cout)))
        else:
            ins.append(_runtime_input(g, [cout]) if st.get("rtb") else g.const(rng.uniform(-0.5, 0.5, cout)))
    y = g.node("ConvTranspose" if transpose else "Conv", ins, attrs)
    out = V(y, [v.dims[0], cout] + spatial, v.mag + (0.5 if st.get("bias") else 0))
    if st.get("bn"):
        out = batchnorm(g, {}, out, rng)
    return out


def inverted_residual(g, st, v, rng):
    """MobileNetV2/V3's inverted residual block, as the pattern library groups
    it (patterns/inverted_residual.onnxtxt): a 1x1 expand Conv to "e" channels
    + BN + activation, a depthwise "k" x "k" Conv at "stride" + BN + the same
    activation, a 1x1 project Conv + BN, and with "res" (at stride 1) the Add
    of the block's input, so back to its channels; else to "out" channels.
    Activations: Relu, Clip(0, 6), HardSwish, HardSigmoid and Mul ("hsig"),
    or Sigmoid and Mul ("swish": EfficientNet's). With "se" (the gate, Sigmoid
    or HardSigmoid), a squeeze-and-excitation between the depthwise and the
    project Conv: the backend runs the expand and depthwise Convs depth-first
    on large maps, with the SE's GlobalAveragePool."""
    if v.rank != 4:
        raise Skip()
    residual = st.get("res") and st["stride"] == 1

    def act(x):
        a = st["act"]
        if a == "clip":
            return ew.clip(g, {"min": 0.0, "max": 6.0}, x, rng)
        if a == "hsig":
            return ew.hswish(g, {}, x, rng)
        if a == "swish":
            return ew.swish(g, {}, x, rng)
        if a == "HardSwish":      # an op of opset 14
            g.opset = max(g.opset, 14)
        return V(g.node(a, [x.name]), x.dims, x.mag)

    e = act(conv(g, {"k": 1, "out": st["e"], "bn": True, "bias": st.get("bias")}, v, rng))
    d = act(conv(g, {"k": st["k"], "stride": st["stride"], "pad": st["k"] // 2, "group": "dw", "bn": True}, e, rng))
    if st.get("se"):          # MobileNetV3's and EfficientNet's blocks: the kernel runs expand and depthwise
        from .views import squeeze_excite
        d = squeeze_excite(g, {"act": "swish" if st["act"] == "swish" else "Relu", "gate": st["se"]}, d, rng)
    p = conv(g, {"k": 1, "out": v.dims[1] if residual else st["out"], "bn": True}, d, rng)
    if not residual:
        return p
    return V(g.node("Add", [p.name, v.name]), v.dims, p.mag + v.mag)


def gemm(g, st, v, rng):
    if v.rank > 2:
        v = V(g.node("Flatten", [v.name], {"axis": 1}), [v.dims[0], int(np.prod(v.dims[1:]))], v.mag)
    if v.rank != 2:
        raise Skip()
    ta = st.get("transA", 0)
    m, k = (v.dims[1], v.dims[0]) if ta else (v.dims[0], v.dims[1])
    n = st["out"]
    tb = st.get("transB", 0)
    if st.get("rtw"):     # torch.mm of two activations
        ins = [v.name, _runtime_input(g, [n, k] if tb else [k, n], math.sqrt(3.0 / k))]
    else:
        w = _w(st, rng, [k, n], k)
        ins = [v.name, g.const(w.T if tb else w)]
    cform = st.get("c", "none")
    cshape = {"vec": [n], "one": [1], "full": [m, n], "col": [m, 1], "scalar": []}.get(cform)
    if cshape is not None:
        ins.append(_runtime_input(g, cshape) if st.get("rtc") else g.const(rng.uniform(-0.5, 0.5, cshape)))
    attrs = {}
    if ta:
        attrs["transA"] = 1
    if tb:
        attrs["transB"] = 1
    if st.get("alpha", 1.0) != 1.0:
        attrs["alpha"] = float(st["alpha"])
    if st.get("beta", 1.0) != 1.0 and cshape is not None:
        attrs["beta"] = float(st["beta"])
    y = g.node("Gemm", ins, attrs or None)
    return V(y, [m, n], v.mag * st.get("alpha", 1.0) + 1)


def matmul(g, st, v, rng):
    if v.rank < 2:
        raise Skip()
    k = v.dims[-1]
    if st.get("act"):
        # x @ x^T scaled by 1/sqrt(k): attention scores, two activations.
        perm = list(range(v.rank - 2)) + [v.rank - 1, v.rank - 2]
        t = g.node("Transpose", [v.name], {"perm": perm})
        y = g.node("MatMul", [v.name, t])
        s = g.const(np.array(1.0 / math.sqrt(k)))
        y = g.node("Mul", [y, s])
        return V(y, v.dims[:-1] + [v.dims[-2]], v.mag * v.mag)
    n = st.get("out") or k      # None: keep the width (a residual Linear)
    form = st.get("form", "2d")
    if form == "batched" and v.rank > 2:
        bshape = v.dims[:-2] + [k, n]
    elif form == "bcast" and v.rank > 2:
        bshape = [1] * (v.rank - 2) + [k, n]
    elif form == "vec":       # a 1-D B: the result drops its last dim (rank 2 at least: views take no 1-D)
        if v.rank < 3:
            raise Skip()
        bshape = [k]
    else:
        bshape = [k, n]
    if st.get("qw"):
        # int8 B [K, N] through DequantizeLinear, per column or per tensor (quantized.py), on
        # a value of rank 2 or 3 (ONNX Runtime's static quantizer's MatMul).
        if v.rank > 3 or len(bshape) != 2:
            raise Skip()
        w, _ = quantized.dequantized_weights(g, _w(st, rng, bshape, k), st["qw"], axis=1,
                                             per_tensor=st.get("wper") == "tensor")
    # "rt": B a second graph input (two activations), else a constant.
    elif st.get("rt"):
        w = _runtime_input(g, bshape, math.sqrt(3.0 / k))
    else:
        w = g.const(_w(st, rng, bshape, k))
    y = g.node("MatMul", [v.name, w])
    if form == "vec":
        return V(y, v.dims[:-1], v.mag)
    out = V(y, v.dims[:-1] + [n], v.mag)
    if st.get("bias"):
        b = g.const(rng.uniform(-0.5, 0.5, [n]))
        ins = [b, y] if st.get("bias_first") else [y, b]
        out = V(g.node("Add", ins), out.dims, out.mag + 0.5)
    return out


def einsum(g, st, v, rng):
    """Einsum of a batched product with transposes ("pqik,pqkn->pqin" and its
    transposed forms; operand 2 a run-time input of usual weight magnitude),
    of x with itself (attention's scores x x^T, scaled by 1/sqrt(k)), or one
    operand transposed or summed over its last label."""
    if v.rank < 2 or v.rank > 4 or (st.get("form") == "sum" and v.rank < 3):
        raise Skip()          # (a sum of a matrix would leave a vector, which views do not take)
    b, bd = "pq"[:v.rank - 2], v.dims[:-2]
    m, k = v.dims[-2], v.dims[-1]
    form = st.get("form", "mm")
    if form == "t":
        y = g.node("Einsum", [v.name], {"equation": "%sik->%ski" % (b, b)})
        return V(y, bd + [k, m], v.mag)
    if form == "sum":         # the last label summed away
        y = g.node("Einsum", [v.name], {"equation": "%sik->%si" % (b, b)})
        return V(y, bd + [m], v.mag * k)
    if form == "self":
        y = g.node("Einsum", [v.name, v.name], {"equation": "%sik,%sjk->%sij" % (b, b, b)})
        y = g.node("Mul", [y, g.const(np.array(1.0 / math.sqrt(k)))])
        return V(y, bd + [m, m], v.mag * v.mag)
    n = st.get("out") or k
    other = {"mm": "kn", "mmT": "nk", "outT": "kn"}[form]
    out = "ni" if form == "outT" else "in"
    w = _runtime_input(g, bd + ([k, n] if other == "kn" else [n, k]), math.sqrt(3.0 / k))
    y = g.node("Einsum", [v.name, w], {"equation": "%sik,%s%s->%s%s" % (b, b, other, b, out)})
    return V(y, bd + ([n, m] if form == "outT" else [m, n]), v.mag)
