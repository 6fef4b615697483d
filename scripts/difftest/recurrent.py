"""Rendering of recurrent steps: LSTM, GRU and RNN over the current
value read as a sequence, forward, reverse or bidirectional, layout 0 or 1,
with or without bias, initial states and a constant sequence_lens equal to
the sequence length (the form onnx-fuse lowers); the weights are initializers
(uniform with variance 1/fan-in, so the gates stay in their active range).

The value [d0, d1, rest...] is read as [seq, batch, input] (layout 0) or
[batch, seq, input] (layout 1) through a Reshape that merges `rest` (a rank-2
value gets a batch of 1). The step gives back Y ([seq, dirs, batch, hidden],
or its layout-1 form), Y as [seq, batch, dirs * hidden], or Y_h / Y_c; the
other outputs may leave as graph outputs. Gate outputs are bounded by 1
(Tanh), so magnitudes stay near 1 whatever the sequence length.
"""
import numpy as np

from .elementwise import bounded
from .graph import V, Skip, weights

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def recurrent(g, st, v, rng):
    cell = st.get("cell", "LSTM")
    if v.rank < 2 or cell not in GATES:
        raise Skip()
    layout = st.get("layout", 0)
    dims = v.dims if v.rank >= 3 else [v.dims[0], 1, v.dims[1]]
    a, b, inp = dims[0], dims[1], int(np.prod(dims[2:]))
    if inp > 256 or a * b > 64:
        raise Skip()        # a sequence that long only costs time
    seq, batch = (b, a) if layout else (a, b)
    v = bounded(g, v, 4.0)
    x = g.node("Reshape", [v.name, g.ints([a, b, inp])])
    dirs = 2 if st.get("dir") == "bidirectional" else 1
    h, gates = st.get("hidden", 8), GATES[cell]
    ins = [x, g.const(weights(rng, [dirs, gates * h, inp], inp)), g.const(weights(rng, [dirs, gates * h, h], h))]
    ins.append(g.const(rng.uniform(-0.3, 0.3, [dirs, 2 * gates * h])) if st.get("bias") else "")
    ins.append(g.const(np.full([batch], seq), "k", "int32") if st.get("seqlens") else "")
    state = [batch, dirs, h] if layout else [dirs, batch, h]
    if st.get("init"):
        ins.append(g.const(rng.uniform(-0.5, 0.5, state)))
        if cell == "LSTM":
            ins.append(g.const(rng.uniform(-0.5, 0.5, state)))
    while ins[-1] == "":
        ins.pop()
    attrs = {"hidden_size": h}
    if st.get("dir", "forward") != "forward":
        attrs["direction"] = st["dir"]
    if layout:
        attrs["layout"] = 1
        g.opset = max(g.opset, 14)
    if cell == "GRU" and st.get("lbr"):
        attrs["linear_before_reset"] = 1
    if cell == "RNN" and st.get("act", "Tanh") != "Tanh":
        attrs["activations"] = [st["act"]] * dirs
    nout = 3 if cell == "LSTM" else 2
    outs = g.node(cell, ins, attrs, nout=nout)
    ydims = [batch, seq, dirs, h] if layout else [seq, dirs, batch, h]
    # Relu cells are unbounded: recurrent products of weights of variance 1/h keep them near 1.
    mag = 1.0 if st.get("act", "Tanh") != "Relu" or cell != "RNN" else 4.0
    vals = [V(outs[0], ydims, mag), V(outs[1], state, mag)] + ([V(outs[2], state, 4.0)] if nout == 3 else [])
    pick = st.get("pick", "Y")
    if pick == "Yc" and nout == 2:
        pick = "Yh"
    if st.get("tout"):      # the outputs the step does not continue with
        g.outputs.extend(o for o, name in zip(vals, ["Y", "Yh", "Yc"]) if name != pick)
    if pick == "Yh":
        return vals[1]
    if pick == "Yc":
        return vals[2]
    if pick == "Yflat" and not layout:    # [seq, batch, dirs * hidden], as exporters write it
        t = g.node("Transpose", [outs[0]], {"perm": [0, 2, 1, 3]})
        return V(g.node("Reshape", [t, g.ints([seq, batch, dirs * h])]), [seq, batch, dirs * h], mag)
    return vals[0]


RENDER = {"rnn": recurrent}
