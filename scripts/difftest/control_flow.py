"""Rendering of control-flow steps: If with a constant condition
(inlined at build time), If decided at run time (a bool graph input, or the
maximum of the value against a threshold; with "grow", its else branch
gives the value twice along axis 0, so that its output's shape follows the
condition, sliced back after it), Loop with a constant trip count or one
the values decide ("rt_trips": 1 + (max(v) > 0)), and Scan. Control flow
decided at run time with shapes that follow it runs in stages. A step's "branches" hold its sub-step lists (If: then, else; Loop
and Scan: the body), rendered by renderer.apply_steps like fork branches, so
the shrinker drops and simplifies steps inside them as anywhere else.

Bodies read the value from the outer scope (If's branches always; Loop's body
when "outer" is set) and the initializers the steps inside make, which stay
in the main graph. A body's result must keep its input's dims (plans have
static shapes): a sub-step list that changes them skips the whole step.
Loop bodies are scaled back by a power of two (exact) when their magnitude
estimate grows, so a few iterations stay in range.
"""
import math

import numpy as np

from .graph import V, Raw, Skip


def _dims(d):
    return "[%s]" % ",".join(map(str, d)) if d else ""


def _subgraph(g, steps, v, outer=None):
    """Renders steps on v into a node list of their own. Returns (lines, V)."""
    from .renderer import apply_steps       # renderer imports this module
    n, o = len(g.nodes), len(g.outputs)
    y = apply_steps(g, steps, v)
    if outer is not None:      # the body reads an outer-scope value too
        y = V(g.node("Add", [y.name, g.node("Mul", [outer.name, g.const(np.array(0.25))])]), y.dims,
              y.mag + outer.mag / 4)
    if y.name == v.name:
        y = V(g.node("Identity", [v.name]), v.dims, v.mag, v.lo, exact=v.exact)
    lines = _take(g, n)
    del g.outputs[o:]          # a body's inner value cannot be a graph output
    if y.dims != v.dims:
        raise Skip()
    return lines, y


def _take(g, n):
    """The text of the nodes added since there were n, taken out of the main graph."""
    lines = [t for _, t in g.nodes[n:]]
    del g.nodes[n:]
    return lines


def _body_text(name, ins, outs, lines):
    return Raw("%s (%s) => (%s) {\n%s\n  }" % (name, ", ".join(ins), ", ".join(outs), "\n".join(lines)))


def if_step(g, st, v, rng):
    """If(cond) then f(v) else h(v): cond a constant ("const"), a bool graph
    input ("input") or ReduceMax(v) > t ("computed")."""
    if len(st.get("branches", [])) != 2:
        raise Skip()
    then_lines, a = _subgraph(g, st["branches"][0], v)
    else_lines, b = _subgraph(g, st["branches"][1], v)
    grow = st.get("grow") and v.rank and st.get("cond", "const") != "const"
    b_dims = b.dims
    if grow:  # the else branch's output twice as long along axis 0
        n = len(g.nodes)
        b = V(g.node("Concat", [b.name, b.name], {"axis": 0}), b.dims, b.mag, exact=b.exact)
        else_lines += _take(g, n)
        b_dims = [2 * b.dims[0]] + b.dims[1:]
    cond = st.get("cond", "const")
    if cond == "input":
        name = "in%d" % (len(g.inputs) + 1)
        g.inputs.append("bool %s" % name)
        c = name
    elif cond == "computed" and v.rank:
        m = g.node("ReduceMax", [v.name], {"keepdims": 0})
        c = g.node("Greater", [m, g.const(np.array(st.get("t", 0.25)))])
    else:
        c = g.const(np.array(int(st.get("value", 1))), "b", "bool")
    t = _body_text(g.fresh("then"), [], ["float%s %s" % (_dims(a.dims), a.name)], then_lines)
    e = _body_text(g.fresh("else"), [], ["float%s %s" % (_dims(b_dims), b.name)], else_lines)
    y = g.node("If", [c], {"then_branch": t, "else_branch": e})
    if grow:  # the first rows: either branch's value at v's dims
        y = g.node("Slice", [y, g.ints([0]), g.ints([v.dims[0]]), g.ints([0])])
    return V(y, v.dims, max(a.mag, b.mag), exact=a.exact and b.exact)


def loop_step(g, st, v, rng):
    """Loop of a constant trip count M over a carried value (the body's steps,
    plus the iteration number scaled when "iter"), with the carried value per
    iteration stacked as a scan output when "scan" (then a graph output, or
    the step's result: [M] + dims)."""
    if len(st.get("branches", [])) != 1 or v.rank > 4:
        raise Skip()
    trips = st.get("trips", 2)
    it, cin, xin = g.fresh("it"), g.fresh("cin"), g.fresh("xin")
    x = V(xin, v.dims, v.mag, v.lo)
    lines, y = _subgraph(g, st["branches"][0], x, v if st.get("outer") else None)
    n = len(g.nodes)
    if st.get("iter"):
        f = g.node("Mul", [g.node("Cast", [it], {"to": 1}), g.const(np.array(0.125))])
        y = V(g.node("Add", [y.name, f]), y.dims, y.mag + 0.125 * trips)
    if y.mag > max(v.mag, 1.0):       # keep M iterations in range
        k = int(math.ceil(math.log2(y.mag / max(v.mag, 1.0))))
        y = V(g.node("Mul", [y.name, g.const(np.array(2.0 ** -k))]), y.dims, y.mag * 2.0 ** -k)
    extra = _take(g, n)
    cout = g.fresh("cout")
    extra.append("  %s = Identity (%s)" % (cout, cin))
    outs = ["bool %s" % cout, "float%s %s" % (_dims(v.dims), y.name)]
    sname = None
    if st.get("scan"):
        sname = g.fresh("sc")
        extra.append("  %s = Identity (%s)" % (sname, y.name))
        outs.append("float%s %s" % (_dims(v.dims), sname))
    body = _body_text(g.fresh("body"), ["int64 %s" % it, "bool %s" % cin, "float%s %s" % (_dims(v.dims), xin)],
                      outs, lines + extra)
    cond = g.const(np.array(1), "b", "bool") if st.get("cin") else ""
    count = g.ints(trips)
    if st.get("rt_trips") and v.rank and not sname:  # 1 or 2 iterations, as the values say
        positive = g.node("Greater", [g.node("ReduceMax", [v.name], {"keepdims": 0}), g.const(np.array(0.0))])
        count = g.node("Add", [g.node("Cast", [positive], {"to": 7}), g.ints(1)])
    res = g.node("Loop", [count, cond, v.name], {"body": body}, nout=2 if sname else 1)
    final = V(res[0] if sname else res, v.dims, max(v.mag, y.mag))
    if not sname:
        return final
    stacked = V(res[1], [trips] + v.dims, final.mag)
    if st.get("ret_scan"):
        g.outputs.append(final)
        return stacked
    g.outputs.append(stacked)
    return final


def scan_step(g, st, v, rng):
    """Scan over an axis of v (forward or reverse): state s = s / 2 + f(x_t),
    the states stacked along the same axis give v's dims back; the final state
    may leave as a graph output."""
    if len(st.get("branches", [])) != 1 or v.rank < 2:
        raise Skip()
    axis = st.get("axis", 0) % v.rank
    if v.dims[axis] > 32:
        raise Skip()
    sd = v.dims[:axis] + v.dims[axis + 1:]
    sin, xt = g.fresh("sin"), g.fresh("xt")
    lines, y = _subgraph(g, st["branches"][0], V(xt, sd, v.mag, v.lo))
    n = len(g.nodes)
    s_out = g.node("Add", [g.node("Mul", [sin, g.const(np.array(0.5))]), y.name])
    y_t = g.node("Identity", [s_out])
    lines += _take(g, n)
    body = _body_text(g.fresh("body"), ["float%s %s" % (_dims(sd), sin), "float%s %s" % (_dims(sd), xt)],
                      ["float%s %s" % (_dims(sd), s_out), "float%s %s" % (_dims(sd), y_t)], lines)
    init = g.const(rng.uniform(-0.5, 0.5, sd) if st.get("init") else np.zeros(sd))
    attrs = {"body": body, "num_scan_inputs": 1, "scan_input_axes": [axis], "scan_output_axes": [axis]}
    if st.get("reverse"):
        attrs["scan_input_directions"] = [1]
    final, out = g.node("Scan", [init, v.name], attrs, nout=2)
    if st.get("tout"):
        g.outputs.append(V(final, sd, 2 * y.mag + 0.5))
    return V(out, v.dims, 2 * y.mag + 0.5)


RENDER = {"if": if_step, "loop": loop_step, "scan": scan_step}
