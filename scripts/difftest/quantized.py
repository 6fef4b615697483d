"""Quantized steps: the QDQ format ONNX Runtime's static quantizer writes.

  qdq    QuantizeLinear then DequantizeLinear of the current value (fake
         quantization), uint8 with a zero point near the middle, uint8 from 0
         for a value known non-negative, or int8 around 0; the scale spreads
         the value's typical magnitude over the 8-bit range.
  conv   with "qw" (7 or 8 bits): a Conv whose weights are int8 per output
         channel through DequantizeLinear (axis 0), and whose bias, when the
         input is a dequantized activation, is int32 at x_scale * w_scale[c]
         (anchors.conv asks dequantized_weights and dequantized_bias).

quantized_block draws the chain onnx-fuse runs as one int8 convolution:
qdq -> conv (qw) -> [Relu | Clip 0..6] -> qdq; add_quantized inserts 1-2 such
blocks, or single qdq steps, into a quarter of the recipes from an RNG of its
own (the float and typed steps of graph SEED stay what they were; a quantized
recipe gets no op steps of generator_ops, which may make a model run in
stages).

A quantized graph is checked by `run --check`, which compares its float
arithmetic without fake quantization and each quantized activation in steps,
every layer on the same integers in both plans (backend/runtime/verify.h). It
is not compared with ONNX Runtime: a QuantizeLinear turns any other summation
order into a whole step, which later layers carry on (trial.py counts such
graphs apart).
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


def dequantized_weights(g, w, bits):
    """Float weights [cout, ...] as int8 per output channel (|w| <= 2^(bits-1) - 1),
    through DequantizeLinear: (name, the scales)."""
    limit = (1 << (bits - 1)) - 1
    flat = w.reshape(w.shape[0], -1)
    scales = np.array([_scale(max(np.abs(row).max(), 1e-3) / limit) for row in flat], dtype=np.float32)
    q = np.clip(np.round(flat / scales[:, None].astype(np.float64)), -limit, limit).reshape(w.shape)
    wq = g.const(q.astype(np.int64), "wq", "int8")
    ws = g.const(scales.astype(np.float64), "ws")
    wz = g.const(np.zeros(w.shape[0], dtype=np.int64), "wz", "int8")
    return g.node("DequantizeLinear", [wq, ws, wz], {"axis": 0}), scales


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


RENDER = {"qdq": qdq}


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


def add_quantized(recipe, seed):
    """1-2 quantized blocks or qdq steps in a quarter of the recipes, at random
    places of the main chain: the recipe, or None when it draws none."""
    r = random.Random(seed * 15485863 + 29)
    if r.random() >= 0.25:
        return None
    target = recipe["steps"]
    for _ in range(r.choice([1, 1, 2])):
        pos = r.randrange(len(target) + 1)
        target[pos:pos] = quantized_block(r) if len(recipe["input"]) == 4 and r.random() < 0.8 else [qdq_step(r)]
    return recipe


def is_quantized(model):
    return any(n.op_type == "QuantizeLinear" for n in model.graph.node)


def without_fake_quantization(model):
    """MODEL with each QuantizeLinear -> DequantizeLinear pair as the identity
    (what `run --check` compares first, CompileOptions::fake_quantize false):
    the float graph whose conditioning explains a float mismatch."""
    import onnx
    m = onnx.ModelProto()
    m.CopyFrom(model)
    outputs = {o.name for o in m.graph.output}
    readers = {}
    for n in m.graph.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    source = {}     # a QuantizeLinear's output -> its float input, where only DequantizeLinear nodes read it
    for n in m.graph.node:
        if n.op_type == "QuantizeLinear" and n.output[0] not in outputs and readers.get(n.output[0]) and \
                all(r.op_type == "DequantizeLinear" and r.input[0] == n.output[0] for r in readers[n.output[0]]):
            source[n.output[0]] = n.input[0]
    nodes = []
    for n in m.graph.node:
        if n.op_type == "QuantizeLinear" and n.output[0] in source:
            continue
        if n.op_type == "DequantizeLinear" and n.input[0] in source:
            n = onnx.helper.make_node("Identity", [source[n.input[0]]], [n.output[0]], name=n.name)
        nodes.append(n)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    return m
