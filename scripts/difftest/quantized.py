"""Quantized steps: the forms ONNX Runtime's quantizers write.

Static quantization (the QDQ format):

  qdq    QuantizeLinear then DequantizeLinear of the current value (fake
         quantization), uint8 with a zero point near the middle, uint8 from 0
         for a value known non-negative, or int8 around 0; the scale spreads
         the value's typical magnitude over the 8-bit range.
  conv   with "qw" (7 or 8 bits): a Conv whose weights are int8 per output
         channel through DequantizeLinear (axis 0), and whose bias, when the
         input is a dequantized activation, is int32 at x_scale * w_scale[c]
         (anchors.conv asks dequantized_weights and dequantized_bias).
  matmul with "qw" (7 or 8 bits), on a value of rank 2 or 3: a MatMul whose
         B [K, N] is int8 through DequantizeLinear, per column (axis 1, the
         last axis of B) or per tensor, zero points 0, then optionally an Add
         of a float bias [N] (anchors.matmul).

quantized_block draws the chain onnx-fuse runs as one int8 convolution:
qdq -> conv (qw) -> [Relu | Clip 0..6] -> qdq; matmul_block the chain it runs
as one int8 matmul: qdq -> matmul (qw) [-> Add bias] -> [Relu] -> qdq, behind a
Reshape of the last two axes into one (or a Flatten) when the recipe's input
has rank 4 or 5. Between QDQ pairs, as the static quantizer leaves the ops it
quantizes through their inputs and output (each reads dequantized values, its
result is quantized again): a residual Add, qdq -> fork{x | quantized layer
keeping the shape -> qdq}.add -> qdq (qdq_residual); qdq -> MaxPool |
AveragePool -> qdq (qdq_pool); a Concat, qdq -> fork{x | quantized layer ->
qdq}.concat -> qdq (qdq_concat). The layer is a Conv of int8 weights on rank
4-5, a MatMul of int8 weights on rank 2-3.

Dynamic quantization (ONNX Runtime's quantize_dynamic, as
scripts/export_quantized.py writes it):

  dynq   x -> DynamicQuantizeLinear -> (y, y_scale, y_zero_point);
         MatMulInteger(y, W int8 [K, N] constant, y_zero_point, W's zero point
         0: a scalar or int8 zeros per column) -> Cast to float -> Mul by
         Mul(y_scale, w_scale) (w_scale a scalar or per column [N]; 1 in 4
         the other order, Mul by y_scale then Mul by w_scale) -> [Add of a
         float bias [N]]; 7-bit or 8-bit weights, on a value of rank 2 or more.

add_quantized gives a quarter of the recipes, from an RNG of its own (the
float and typed steps of graph SEED stay what they were; a quantized recipe
gets no op steps of generator_ops, which may make a model run in stages),
either 1-2 static insertions (the blocks above or single qdq steps) or, 1 in
4, 1-2 dynq steps and nothing of the QDQ format.

A QDQ graph is checked by `run --check`, which compares its float arithmetic
without fake quantization and each quantized activation in steps, every layer
on the same integers in both plans (backend/runtime/verify.h). It is not
compared with ONNX Runtime: a QuantizeLinear turns any other summation order
into a whole step, which later layers carry on (trial.py counts such graphs
apart). A dynamically quantized graph (no QuantizeLinear) is checked by `run
--check` the same way (its float arithmetic: each DynamicQuantizeLinear as x /
y_scale, unrounded) and against ONNX Runtime (and through the fuse path and the
session check) at RTOL_DYNAMIC, the rule scripts/bench_dynamic.py applies to
the dynamically quantized encoder: an input of DynamicQuantizeLinear that the
plans round apart near a half step lands on the other integer.
"""
import random

import numpy as np

from .graph import V, Skip

# Scales and zero points of each dequantized value, by name: what a quantized
# convolution's bias needs (names are never reused, so rollbacks leave only
# unread entries).
_SCALES = {}


def _scale(x):
    return float(np.float32(x))


def qdq(g, st, v, rng):
    if v.dtype != "float" or not v.dims:
        raise Skip()
    spread = float(st.get("spread", 3.0)) * max(v.mag, 1e-2)
    if st.get("signed"):
        dtype, zp, scale = "int8", 0, _scale(spread / 127)
    elif v.lo is not None and v.lo >= 0:
        dtype, zp, scale = "uint8", int(st.get("zp", 0)) % 8, _scale(spread / 255)
    else:
        dtype, zp, scale = "uint8", 128 + int(st.get("zp", 0)) % 16 - 8, _scale(spread / 127)
    s = g.const(np.array(scale), "qs")
    z = g.const(np.array(zp), "qz", dtype)
    q = g.node("QuantizeLinear", [v.name, s, z])
    y = g.node("DequantizeLinear", [q, s, z])
    _SCALES[y] = scale
    lo = v.lo if v.lo is not None and v.lo >= 0 else None
    return V(y, v.dims, v.mag, lo)


def weight_scales(w, bits, axis=0, per_tensor=False):
    """Symmetric int8 scales of float weights W (|w| <= 2^(bits-1) - 1): one per
    index of AXIS, or one for the whole tensor; (the integers, the scales)."""
    limit = (1 << (bits - 1)) - 1
    rows = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    if per_tensor:
        scales = np.full(w.shape[axis], _scale(max(np.abs(w).max(), 1e-3) / limit), dtype=np.float32)
    else:
        scales = np.array([_scale(max(np.abs(row).max(), 1e-3) / limit) for row in rows], dtype=np.float32)
    shape = [1] * w.ndim
    shape[axis] = w.shape[axis]
    q = np.clip(np.round(w / scales.reshape(shape).astype(np.float64)), -limit, limit)
    return q.astype(np.int64), scales


def dequantized_weights(g, w, bits, axis=0, per_tensor=False):
    """Float weights as int8 per index of AXIS (a Conv's output channels, a
    MatMul's columns: axis 1 of B [K, N]), or per tensor, through
    DequantizeLinear with zero points 0: (name, the scales, one per index)."""
    q, scales = weight_scales(w, bits, axis, per_tensor)
    wq = g.const(q, "wq", "int8")
    if per_tensor:
        ws = g.const(np.array(float(scales[0])), "ws")
        wz = g.const(np.array(0), "wz", "int8")
        return g.node("DequantizeLinear", [wq, ws, wz]), scales
    ws = g.const(scales.astype(np.float64), "ws")
    wz = g.const(np.zeros(w.shape[axis], dtype=np.int64), "wz", "int8")
    return g.node("DequantizeLinear", [wq, ws, wz], {"axis": axis}), scales


def dequantized_bias(g, x, w_scales, bias):
    """The bias as ONNX Runtime's quantizer writes it: int32 at x_scale * w_scale[c]
    through DequantizeLinear, when `x` is a dequantized activation; else float."""
    if x.name not in _SCALES:
        return g.const(bias)
    scales = np.array([_scale(_SCALES[x.name] * float(s)) for s in w_scales])
    q = np.round(bias / scales).astype(np.int64)
    bq = g.const(q, "bq", "int32")
    bs = g.const(scales, "bs")
    return g.node("DequantizeLinear", [bq, bs], {"axis": 0})


def dynamic_matmul(g, st, v, rng):
    """ONNX Runtime's quantize_dynamic form of x @ W (+ bias): DynamicQuantizeLinear,
    MatMulInteger with int8 W and its zero point 0, Cast to float, the scales
    multiplied in (export_quantized.quantize_dynamic's node sequence)."""
    from .anchors import _w
    if v.dtype != "float" or v.rank < 2:
        raise Skip()
    k = v.dims[-1]
    n = st.get("out") or k
    w = _w(st, rng, [k, n], k)
    bits, per_col = st.get("qw", 7), st.get("wper", "col") == "col"
    q, scales = weight_scales(w, bits, axis=1, per_tensor=not per_col)
    y, ys, yz = g.node("DynamicQuantizeLinear", [v.name], nout=3)
    wq = g.const(q, "wq", "int8")
    wz = g.const(np.zeros(n, dtype=np.int64), "wz", "int8") if st.get("wzcol") else g.const(np.array(0), "wz", "int8")
    acc = g.node("MatMulInteger", [y, wq, yz, wz])
    f = g.node("Cast", [acc], {"to": 1})
    ws = g.const(scales.astype(np.float64), "ws") if per_col else g.const(np.array(float(scales[0])), "ws")
    if st.get("order") == "chain":      # Mul by y_scale, then by w_scale
        out = g.node("Mul", [g.node("Mul", [f, ys]), ws])
    else:                               # ONNX Runtime's: Mul(cast, Mul(y_scale, w_scale))
        out = g.node("Mul", [f, g.node("Mul", [ys, ws])])
    res = V(out, v.dims[:-1] + [n], v.mag)
    if st.get("bias"):
        b = g.const(rng.uniform(-0.5, 0.5, [n]))
        res = V(g.node("Add", [b, out] if st.get("bias_first") else [out, b]), res.dims, res.mag + 0.5)
    return res


RENDER = {"qdq": qdq, "dynq": dynamic_matmul}

# The output widths of quantized matmuls: around register blocks (4, 8, 16 floats; 64 bytes).
WIDTHS = [3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, None]


def qdq_step(r):
    return {"op": "qdq", "s": r.randrange(1 << 30), "signed": int(r.random() < 0.2),
            "zp": r.randrange(16), "spread": r.choice([2.0, 3.0, 4.0])}


def quantized_block(r):
    """qdq -> Conv (int8 weights) -> [Relu | Clip 0..6] -> qdq: one int8 convolution."""
    from .generator import conv_step, step
    conv = conv_step(r, bn=False, rtw=False, rtb=False, dil=1)
    conv["qw"] = r.choice([7, 7, 8])
    block = [qdq_step(r), conv]
    act = r.choice(["none", "Relu", "Relu", "clip"])
    if act == "Relu":
        block.append(step(r, "unary", f="Relu"))
    elif act == "clip":
        block.append(step(r, "clip", min=0.0, max=6.0))
    block.append(qdq_step(r))
    return block


def matmul_block(r, rank, keep=False, lead=True):
    """[Reshape | Flatten to rank 3 or 2 from RANK] -> qdq -> MatMul (int8 weights per column
    or per tensor) [-> Add bias] -> [Relu] -> qdq: one int8 matmul. KEEP: N = K (a residual
    body); without LEAD, no view and no qdq before the MatMul (it reads a dequantized value
    the caller provides)."""
    from .generator import step
    block = []
    if lead and rank >= 4:
        block.append(step(r, "reshape", mode="merge") if r.random() < 0.6 else step(r, "flatten", axis=1))
    mm = step(r, "matmul", out=None if keep else r.choice(WIDTHS[:-1]), form="2d", bias=r.random() < 0.6,
              bias_first=r.random() < 0.3, rt=False)
    mm["qw"] = r.choice([7, 7, 8])
    mm["wper"] = r.choice(["col", "col", "col", "tensor"])
    block += ([qdq_step(r)] if lead else []) + [mm]
    if r.random() < 0.5:
        block.append(step(r, "unary", f="Relu"))
    block.append(qdq_step(r))
    return block


def _quantized_body(r, rank, keep):
    """A quantized layer reading a dequantized value: Conv (int8 weights, spatial dims kept)
    -> [Relu] -> qdq on rank 4-5, MatMul (int8 weights) -> [Relu] -> qdq on rank 2-3; KEEP:
    channels (columns) kept too."""
    from .generator import conv_step, step
    if rank not in (4, 5):
        return matmul_block(r, rank, keep=keep, lead=False)
    conv = conv_step(r, k=r.choice([1, 3]), stride=1, dil=1, asym=0, group=r.choice(["1", "1", "dw"]), mult=1,
                     bn=False, rtw=False, rtb=False)
    conv["pad"] = conv["k"] // 2
    conv["qw"] = r.choice([7, 7, 8])
    if keep:
        conv["out"] = None
    return [conv] + ([step(r, "unary", f="Relu")] if r.random() < 0.5 else []) + [qdq_step(r)]


def qdq_residual(r, rank):
    """A residual Add between QDQ pairs, as the static quantizer leaves a residual block:
    qdq -> fork{x | quantized layer keeping the shape -> qdq}.add -> qdq (the Add reads two
    dequantized values, its sum is quantized)."""
    from .generator import fork_step
    return [qdq_step(r), fork_step(r, [[], _quantized_body(r, rank, True)], "add"), qdq_step(r)]


def qdq_pool(r):
    """qdq -> MaxPool | AveragePool -> qdq."""
    from .generator import step
    f = r.choice(["MaxPool", "AveragePool"])
    return [qdq_step(r), step(r, "pool", f=f, k=r.choice([2, 3]), stride=r.choice([1, 2]), pad=r.choice([0, 0, 1]),
                              cip=r.randrange(2)), qdq_step(r)]


def qdq_concat(r, rank):
    """A Concat between QDQ pairs: qdq -> fork{x | quantized layer -> qdq}.concat -> qdq, along
    the axis the layer changes (a convolution's channels, a matmul's columns)."""
    from .generator import fork_step
    return [qdq_step(r), fork_step(r, [[], _quantized_body(r, rank, False)], "concat"), qdq_step(r)]


def dynq_step(r):
    from .generator import step
    return step(r, "dynq", out=r.choice(WIDTHS), qw=r.choice([7, 8]), wper=r.choice(["tensor", "tensor", "col"]),
                wzcol=int(r.random() < 0.3), order=r.choice(["joint", "joint", "joint", "chain"]),
                bias=r.random() < 0.5, bias_first=r.random() < 0.3)


def static_insertion(r, rank):
    """One insertion of the QDQ format, drawn for a recipe whose input has rank RANK."""
    if rank in (4, 5):
        k = r.choices(["conv", "matmul", "residual", "pool", "concat", "qdq"], [6, 3, 2, 3, 2, 1])[0]
    else:     # (a pool of rank 3 is 1-D; of rank 2, skipped)
        k = r.choices(["matmul", "residual", "pool", "concat", "qdq"], [6, 2, 2 if rank == 3 else 0, 2, 1])[0]
    if k == "conv":
        return quantized_block(r)
    if k == "matmul":
        return matmul_block(r, rank)
    if k == "residual":
        return qdq_residual(r, rank)
    if k == "pool":
        return qdq_pool(r)
    if k == "concat":
        return qdq_concat(r, rank)
    return [qdq_step(r)]


def add_quantized(recipe, seed):
    """1-2 quantized insertions in a quarter of the recipes, at random places of the
    main chain: of the QDQ format, or (1 in 4) dynq steps alone; the recipe, or None
    when it draws none."""
    r = random.Random(seed * 15485863 + 29)
    if r.random() >= 0.25:
        return None
    target = recipe["steps"]
    rank = len(recipe["input"])
    dynamic = r.random() < 0.25
    for _ in range(r.choice([1, 1, 2])):
        pos = r.randrange(len(target) + 1)
        target[pos:pos] = [dynq_step(r)] if dynamic else static_insertion(r, rank)
    return recipe


def is_quantized(model):
    """The QDQ format: checked by `run --check` alone (trial.py)."""
    return any(n.op_type == "QuantizeLinear" for n in model.graph.node)


def is_dynamic(model):
    """Dynamic quantization without the QDQ format: also compared with ONNX Runtime, at RTOL_DYNAMIC."""
    return not is_quantized(model) and any(n.op_type == "DynamicQuantizeLinear" for n in model.graph.node)


# The rule of scripts/bench_dynamic.py (RTOL_QUANTIZED) for a dynamically quantized model
# against ONNX Runtime: max |ours - ORT| / max |ORT| per output.
RTOL_DYNAMIC = 7e-3


def census(model):
    """The quantized structures a rendered model holds, by kind (the campaign's summary):
    "int8 conv" (a Conv of a dequantized activation and dequantized weights), "int8
    matmul" (the same of a MatMul; "+bias" when an Add of a constant follows), "dynamic
    matmul" (MatMulInteger of a DynamicQuantizeLinear), and "qdq Add", "qdq MaxPool",
    "qdq AveragePool", "qdq Concat": such an op whose inputs are all dequantized
    activations and whose output only QuantizeLinear nodes read."""
    producer = {o: n for n in model.graph.node for o in n.output}
    inits = {i.name for i in model.graph.initializer}
    readers = {}
    for n in model.graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)

    def dq(name, const):
        p = producer.get(name)
        return p is not None and p.op_type == "DequantizeLinear" and (p.input[0] in inits) == const

    found = []
    for n in model.graph.node:
        if n.op_type in ("Conv", "MatMul") and len(n.input) >= 2 and dq(n.input[0], False) and dq(n.input[1], True):
            kind = "int8 conv" if n.op_type == "Conv" else "int8 matmul"
            after = readers.get(n.output[0], [])
            if n.op_type == "MatMul" and len(after) == 1 and after[0].op_type == "Add" and \
                    any(i in inits for i in after[0].input):
                kind += "+bias"
            found.append(kind)
        elif n.op_type == "MatMulInteger" and producer.get(n.input[0]) is not None and \
                producer[n.input[0]].op_type == "DynamicQuantizeLinear":
            found.append("dynamic matmul")
        elif n.op_type in ("Add", "MaxPool", "AveragePool", "Concat") and \
                all(dq(i, False) for i in n.input if i not in inits) and \
                sum(i not in inits for i in n.input) >= (2 if n.op_type in ("Add", "Concat") else 1) and \
                readers.get(n.output[0]) and all(x.op_type == "QuantizeLinear" for x in readers[n.output[0]]):
            found.append("qdq " + n.op_type)
    return found


def without_fake_quantization(model):
    """MODEL with each QuantizeLinear -> DequantizeLinear pair as the identity,
    and each MatMulInteger of a DynamicQuantizeLinear's y and zero point (only
    such MatMulIntegers reading them) and of constant weights as the float
    MatMul of x / y_scale by the weights minus their zero point (what `run
    --check` compares first, CompileOptions::fake_quantize false: the
    DynamicQuantizeLinear as x / y_scale + y_zero_point, unrounded): the
    float graph whose conditioning explains a float mismatch."""
    import onnx
    from onnx import numpy_helper
    m = onnx.ModelProto()
    m.CopyFrom(model)
    outputs = {o.name for o in m.graph.output}
    inits = {i.name: i for i in m.graph.initializer}
    readers = {}
    for n in m.graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    source = {}     # a QuantizeLinear's output -> its float input, where only DequantizeLinear nodes read it
    dynamic = {}    # a DynamicQuantizeLinear's y -> (its float input, its y_scale)
    for n in m.graph.node:
        if n.op_type == "QuantizeLinear" and n.output[0] not in outputs and readers.get(n.output[0]) and \
                all(r.op_type == "DequantizeLinear" and r.input[0] == n.output[0] for r in readers[n.output[0]]):
            source[n.output[0]] = n.input[0]
        if n.op_type == "DynamicQuantizeLinear" and not outputs & {n.output[0], n.output[2]} and \
                readers.get(n.output[0]) and all(
                r.op_type == "MatMulInteger" and list(r.input[:1]) + list(r.input[2:3]) == [n.output[0], n.output[2]]
                and r.input[1] in inits and (len(r.input) < 4 or r.input[3] in inits)
                for r in readers[n.output[0]] + readers.get(n.output[2], [])):
            dynamic[n.output[0]] = (n.input[0], n.output[1])
    nodes, added = [], []
    for n in m.graph.node:
        if n.op_type == "QuantizeLinear" and n.output[0] in source:
            continue
        if n.op_type == "DequantizeLinear" and n.input[0] in source:
            n = onnx.helper.make_node("Identity", [source[n.input[0]]], [n.output[0]], name=n.name)
        if n.op_type == "MatMulInteger" and n.input[0] in dynamic:
            x, scale = dynamic[n.input[0]]
            w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
            if len(n.input) > 3 and n.input[3]:
                w = w - numpy_helper.to_array(inits[n.input[3]]).astype(np.float32)
            wf = n.output[0] + "_float_weights"
            added.append(numpy_helper.from_array(w, wf))
            nodes.append(onnx.helper.make_node("Div", [x, scale], [n.output[0] + "_unrounded"], name=n.name + "_div"))
            n = onnx.helper.make_node("MatMul", [n.output[0] + "_unrounded", wf], [n.output[0]], name=n.name)
        nodes.append(n)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    m.graph.initializer.extend(added)
    return m
