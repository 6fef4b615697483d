"""The differential tester's own rules (scripts/difftest): when a mismatch is
explained by the graph's conditioning, when a check that cannot run fails,
that every output is compared, and that ORT as the reference differs from ORT
only by onnx-fuse's documented NaN semantics. Run by ctest as difftest.rules:
    /usr/bin/python3 -m pytest tests/difftest/test_rules.py
ONNXFUSE_BIN names the onnx-fuse binary for the replay of a refused case."""
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from onnx import helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from difftest import cases, near_tie, runner, trial  # noqa: E402


def two_output_model():
    """x [4] -> a = Relu(x), b = Neg(x): two outputs to mismatch one at a time."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])
    outs = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [4]) for n in ("a", "b")]
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"])],
                          "g", [x], outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


class Built:
    """A graph as the trial sees it: MODEL (default two_output_model) saved
    in FOLDER, its outputs NAMES."""

    def __init__(self, folder, model=None, names=("a", "b")):
        self.model, self.folder = model or two_output_model(), folder
        self.path = os.path.join(folder, "model.onnx")
        onnx.save(self.model, self.path)
        self.names = list(names)


class FakeRunner:
    """The unfused plan's outputs: BASE, or BASE + MOVE[name] once the inputs are
    perturbed (a model under a cond_b* folder); ORT's answer is ORT."""

    def __init__(self, base, move=None, ort=None, ort_move=None):
        self.base, self.move, self.ort_answer, self.ort_move = base, move or {}, ort, ort_move or {}

    def outputs(self, model, strategy, threads, fuse, inputs_dir, out_dir):
        perturbed = "cond_b" in model
        arrays = [self.base[n] + (self.move.get(n, 0.0) if perturbed else 0.0) for n in ("a", "b")]
        return runner.Outcome("ok"), [a.astype(np.float32) for a in arrays]

    def ort(self, model, inputs, optimize=True, onnx_fuse_nan=False):
        if self.ort_answer is None or "cond_b" not in model:
            return self.ort_answer
        return {n: v + self.ort_move.get(n, 0.0) for n, v in self.ort_answer.items()}


def ort_failure(output, max_abs, max_rel):
    return {"kind": "ort-vs-fused", "check": "ORT vs run", "output": output, "max_abs": max_abs,
            "max_rel": max_rel, "via": ["ort", "pattern", 1]}


BASE = {"a": np.array([1.0, 0.5, 0.25, 2.0]), "b": np.array([-1.0, -0.5, -0.25, -2.0])}


def test_a_shared_error_is_not_explained_by_its_size_or_by_ort():
    # Both of our plans 5e-3 off ORT, and nothing moves when the inputs move:
    # a lowering bug, whatever its size and however far ORT is from us.
    with tempfile.TemporaryDirectory() as d:
        b = Built(d)
        ort = {"a": BASE["a"] * 1.005, "b": BASE["b"]}
        res = {"explained": {}}
        f = ort_failure("a", 1e-2, 5e-3)
        assert trial.keep_real(FakeRunner(BASE, ort=ort), b, [f], res) == [f]
        assert res["explained"] == {}


def test_tiny_outputs_are_checked():
    # An output whose values are all under 1e-3, off by half of them.
    with tempfile.TemporaryDirectory() as d:
        b = Built(d)
        tiny = {"a": BASE["a"] * 1e-4, "b": BASE["b"]}
        f = ort_failure("a", 1e-4, 0.5)
        assert trial.keep_real(FakeRunner(tiny, ort={"a": tiny["a"] * 1.5, "b": tiny["b"]}), b, [f]) == [f]


def test_conditioning_is_judged_per_output():
    # Output a flips under 1e-6 of input noise; that excuses no mismatch of b.
    with tempfile.TemporaryDirectory() as d:
        b = Built(d)
        f = ort_failure("b", 2e-2, 1e-2)
        kept = trial.keep_real(FakeRunner(BASE, move={"a": 1.0}), b, [f])
        assert kept == [f]


def test_a_mismatch_its_output_moves_by_is_explained_and_counted():
    with tempfile.TemporaryDirectory() as d:
        b = Built(d)
        res = {"explained": {}}
        f = ort_failure("b", 2e-2, 1e-2)
        assert trial.keep_real(FakeRunner(BASE, move={"b": 0.01}), b, [f], res) == []
        assert res["explained"] == {trial.RULE_PERTURBED: 1}


class SessionRunner(FakeRunner):
    """The unfused plan's outputs move under perturbation only when it runs at
    a batch of 2 (the model's x pinned to [2]): a near-tie that only the
    session check's inputs at N=2 have."""

    def outputs(self, model, strategy, threads, fuse, inputs_dir, out_dir):
        batch = onnx.load(model).graph.input[0].type.tensor_type.shape.dim[0].dim_value
        perturbed = "cond_b" in model and batch == 2
        arrays = [self.base[n] + (self.move.get(n, 0.0) if perturbed else 0.0) for n in ("a", "b")]
        return runner.Outcome("ok"), [a.astype(np.float32) for a in arrays]


def session_failure(output, max_abs, max_rel, shape):
    return {"kind": "session-vs-ort", "check": "ORT vs InferenceSession in passes, N=%d" % shape[0],
            "output": output, "max_abs": max_abs, "max_rel": max_rel, "via": ["session", "pattern", 1],
            "shape": shape}


def test_a_session_mismatch_is_judged_at_the_session_inputs():
    # Seed 2876037: a TopK near-tie in the second sample of the session
    # check's inputs at N=2; the graph's own inputs (x [4] here) have none.
    with tempfile.TemporaryDirectory() as d:
        b = Built(d)
        b.seed = 0
        res = {"explained": {}}
        f = session_failure("a", 2e-2, 1e-2, [2, None])
        assert trial.keep_real(SessionRunner(BASE, move={"a": 0.02}), b, [f], res) == []
        assert res["explained"] == {trial.RULE_PERTURBED: 1}
        # and only there: the same mismatch at the graph's own inputs stays
        g = ort_failure("a", 2e-2, 1e-2)
        assert trial.keep_real(SessionRunner(BASE, move={"a": 0.02}), b, [g]) == [g]
        # a session mismatch at a batch whose inputs hold no near-tie stays too
        h = session_failure("a", 2e-2, 1e-2, [3, None])
        assert trial.keep_real(SessionRunner(BASE, move={"a": 0.02}), b, [h]) == [h]


def topk_model(dims, axis, k, before=()):
    """x (dims) -> [BEFORE nodes] -> TopK(axis, k) of t: the shape ONNX Runtime dies at or not."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, dims)
    nodes = list(before) or [helper.make_node("Identity", ["x"], ["t"])]
    nodes.append(helper.make_node("TopK", ["t", "k"], ["v", "i"], axis=axis))
    inits = [onnx.numpy_helper.from_array(np.array([k], np.int64), "k")]
    for name, value in (("s0", [0]), ("e0", [-2]), ("a0", [1]), ("st", [-1])):
        inits.append(onnx.numpy_helper.from_array(np.array(value, np.int64), name))
    g = helper.make_graph(nodes, "g", [x], [helper.make_value_info(n, onnx.TypeProto()) for n in ("v", "i")], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def dies(model, dims):
    """session_check.ort_dies_at for MODEL at an input x of DIMS, with ONNX Runtime."""
    from difftest import session_check
    ort = runner.Runner(os.environ.get("ONNXFUSE_BIN", ""), os.path.join(ROOT, "scripts", "ort"))
    try:
        with tempfile.TemporaryDirectory() as d:
            return session_check.ort_dies_at(ort, model, {"x": np.zeros(dims, np.float32)}, d)
    finally:
        ort.close()


def test_ort_is_known_to_die_only_on_topk_over_no_rows():
    # seed 2875872: x [N, 1] -> Transpose -> Slice(axis 1, 0 to -2, step -1)
    # -> Transpose is [0, 1] at N >= 2, and ORT's TopK over it dies (SIGFPE)
    slice_rows = [helper.make_node("Transpose", ["x"], ["x1"], perm=[1, 0]),
                  helper.make_node("Slice", ["x1", "s0", "e0", "a0", "st"], ["x2"]),
                  helper.make_node("Transpose", ["x2"], ["t"], perm=[1, 0])]
    assert dies(topk_model(["N", 1], -1, 1, slice_rows), [3, 1])
    assert dies(topk_model(["N", 1], -1, 1, slice_rows), [1, 1]) is None   # [1, 1] runs
    assert dies(topk_model([0, 3], -1, 1), [0, 3])
    assert dies(topk_model([2, 0, 3], 2, 1), [2, 0, 3])
    # ORT runs these: empty after the axis, k above the axis (an error it reports), k 0
    assert dies(topk_model([2, 3, 0], 1, 1), [2, 3, 0]) is None
    assert dies(topk_model([2, 0], 0, 1), [2, 0]) is None
    assert dies(topk_model([1, 0], -1, 1), [1, 0]) is None
    assert dies(topk_model([0, 3], -1, 0), [0, 3]) is None


def test_ort_death_is_recognized_through_a_loop():
    # seed 28091054: the TopK input is a Loop's output, whose shape ONNX shape
    # inference does not give; the values ORT computes for it do.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cin"], ["cout"]), helper.make_node("Neg", ["xin"], ["xout"])], "body",
        [helper.make_tensor_value_info("it", onnx.TensorProto.INT64, []),
         helper.make_tensor_value_info("cin", onnx.TensorProto.BOOL, []),
         helper.make_tensor_value_info("xin", onnx.TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("cout", onnx.TensorProto.BOOL, []),
         helper.make_tensor_value_info("xout", onnx.TensorProto.FLOAT, None)])
    loop = [helper.make_node("Loop", ["trips", "", "x"], ["t"], body=body)]
    model = topk_model(["N", 3], -1, 1, loop)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array(2, np.int64), "trips"))
    assert dies(model, [0, 3])
    assert dies(model, [2, 3]) is None


def einsum_model(equation, dims, second=None):
    """x (dims) -> Slice(axis 1, 1 to -3, step -1) -> Einsum(equation) of
    (t, t) or (t, w): seed 95929626, empty along axis 1 at dims[1] = 4."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, dims)
    inits = [onnx.numpy_helper.from_array(np.array(v, np.int64), n)
             for n, v in (("s0", [1]), ("e0", [-3]), ("a0", [1]), ("st", [-1]))]
    operands = ["t", "t"]
    if second is not None:
        inits.append(onnx.numpy_helper.from_array(np.ones(second, np.float32), "w"))
        operands = ["t", "w"]
    nodes = [helper.make_node("Slice", ["x", "s0", "e0", "a0", "st"], ["t"]),
             helper.make_node("Einsum", operands, ["y"], equation=equation)]
    g = helper.make_graph(nodes, "g", [x], [helper.make_value_info("y", onnx.TypeProto())], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_ort_is_known_to_die_on_einsum_over_an_empty_batch():
    model = einsum_model("pqik,pqjk->pqij", [1, "N", 2, 2])
    assert dies(model, [1, 4, 2, 2])            # q is 0: ORT dies
    assert dies(model, [1, 2, 2, 2]) is None    # q is 2: ORT runs
    # an empty letter that is no batch letter (j of t [4, 0] and w [0, 3]) runs
    assert dies(einsum_model("ij,jk->ik", ["N", 4], (0, 3)), [4, 4]) is None


def test_compare_fails_an_output_not_written():
    ref = [np.zeros(2, np.float32), np.ones(2, np.float32)]
    f = runner.compare(ref, ref[:1], ["a", "b"], "ort-vs-fused", "-")
    assert f is not None and f["output"] == "b" and f["message"] == "output missing"
    assert runner.compare(ref, ref, ["a", "b"], "-", "-") is None


def test_ort_missing_is_a_failure():
    with tempfile.TemporaryDirectory() as d:   # no node_modules here
        with pytest.raises(runner.ToolMissing):
            runner.require_tools(sys.executable, d)
        r = runner.Runner("unused", d)
        # serve.js is not there, so the worker dies at once: as a crash on the
        # model twice (a failure of that graph), then as the missing tool.
        for _ in range(2):
            with pytest.raises(runner.OrtCrashed):
                r.ort(os.path.join(d, "m.onnx"), {})
        with pytest.raises(runner.ToolMissing):
            r.ort(os.path.join(d, "m.onnx"), {})
        r.close()


def test_an_ort_crash_is_a_failure_of_the_graph():
    def crashing():
        raise runner.OrtCrashed("ONNX Runtime died on m.onnx")
    fails, note = trial.guarded(crashing, ["ort", "pattern", 1], (None,))
    assert fails == [{"kind": "ort-crash", "check": "ONNX Runtime", "message": "ONNX Runtime died on m.onnx",
                      "via": ["ort", "pattern", 1]}] and note is None


def test_an_empty_case_folder_fails():
    with tempfile.TemporaryDirectory() as d:
        assert cases.replay("unused", d, d, log=lambda *_: None) == 1


# A case whose op no backend of ours will ever run: an op of a domain of its own.
REFUSED_CASE = """# a case whose op the backend refuses
<ir_version: 8, opset_import: ["" : 17, "com.example" : 1]>
g (float[4] x) => (float[4] y) {
  y = com.example.Unknown (x)
}
"""


def test_a_refused_case_fails():
    binary = os.environ.get("ONNXFUSE_BIN")
    assert binary, "set ONNXFUSE_BIN to the onnx-fuse binary"
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "refused.onnxtxt")
        with open(path, "w") as fh:
            fh.write(REFUSED_CASE)
        lines = []
        assert cases.replay(binary, os.path.join(ROOT, "scripts", "ort"), path, log=lines.append) == 1
        assert any(line.startswith("FAIL refused.onnxtxt: refused now") for line in lines), lines


def test_a_mismatch_within_orts_own_rounding_noise_is_explained():
    # Output a is exactly 0 in our plans; ORT's answer is rounding noise of
    # 1e-8 that moves by as much when the inputs move by 1e-6.
    with tempfile.TemporaryDirectory() as d:
        b = Built(d)
        zero = {"a": np.zeros(4), "b": BASE["b"]}
        ort = {"a": np.array([1e-8, 0, 0, 0]), "b": BASE["b"]}
        res = {"explained": {}}
        f = ort_failure("a", 1e-8, 1.0)
        fake = FakeRunner(zero, ort=ort, ort_move={"a": np.array([-1e-8, 0, 0, 0])})
        assert trial.keep_real(fake, b, [f], res) == []
        assert res["explained"] == {trial.RULE_REFERENCE_NOISE: 1}


def test_orts_noise_excuses_no_more_than_twice_itself_nor_our_plans_disagreeing():
    with tempfile.TemporaryDirectory() as d:
        b = Built(d)
        ort = {"a": BASE["a"], "b": BASE["b"]}
        # ORT moves by 1e-3 of max|a| under perturbation: a mismatch of 1e-2 stays real.
        fake = FakeRunner(BASE, ort=ort, ort_move={"a": np.array([2e-3, 0, 0, 0])})
        f = ort_failure("a", 2e-2, 1e-2)
        assert trial.keep_real(fake, b, [f]) == [f]
        # Fused against unfused is never judged by ORT's noise.
        g = dict(ort_failure("a", 1e-3, 5e-4), kind="fused-vs-unfused", via=["check", "pattern", 1])
        assert trial.keep_real(fake, b, [g]) == [g]


class FakeRun:
    """A runner whose `onnx-fuse run` exits with RC, recording its arguments."""

    def __init__(self, rc):
        self.rc, self.args = rc, None

    def _exec(self, args):
        self.args = args
        return self.rc, "", ""


def test_a_shape_the_session_refuses_fails_when_run_accepts_it():
    from difftest import session_check
    feed = {"x": np.zeros((3, 4), np.float32)}
    accepts = FakeRun(0)
    failure, note = session_check.refusal(accepts, "m.onnx", feed, "pattern", "UnsupportedError: no", ["session"], "3")
    assert failure["kind"] == "session-refused" and note is None
    assert accepts.args[accepts.args.index("--input-shape") + 1] == "x=3x4"
    failure, note = session_check.refusal(FakeRun(4), "m.onnx", feed, "pattern", "UnsupportedError: no", [], "3")
    assert failure is None and "refused by run and the session" in note


def nan_clamp_model():
    """Relu, Clip (both bounds; the upper one only), HardSigmoid and, as a
    control, LeakyRelu of x [6], which holds NaN."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [6])
    names = ["relu", "clip", "clip_hi", "hsig", "leaky"]
    outs = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, [6]) for n in names]
    inits = [onnx.numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("lo", -1.0), ("hi", 2.0))]
    nodes = [helper.make_node("Relu", ["x"], ["relu"]), helper.make_node("Clip", ["x", "lo", "hi"], ["clip"]),
             helper.make_node("Clip", ["x", "", "hi"], ["clip_hi"]),
             helper.make_node("HardSigmoid", ["x"], ["hsig"], alpha=0.5, beta=0.25),
             helper.make_node("LeakyRelu", ["x"], ["leaky"])]
    g = helper.make_graph(nodes, "g", [x], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), names


def test_ort_as_reference_gives_nan_clamps_onnx_fuses_values_and_nothing_else():
    binary = os.environ.get("ONNXFUSE_BIN")
    assert binary, "set ONNXFUSE_BIN to the onnx-fuse binary"
    model, names = nan_clamp_model()
    x = np.array([np.nan, -3.0, -0.5, 0.75, 5.0, np.nan], np.float32)
    r = runner.Runner(binary, os.path.join(ROOT, "scripts", "ort"))
    try:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            onnx.save(model, path)
            plain, ours_ref = r.ort(path, {"x": x}), r.ort(path, {"x": x}, onnx_fuse_nan=True)
            ind, outd = os.path.join(d, "in"), os.path.join(d, "out")
            os.makedirs(ind)
            with open(os.path.join(ind, "input_0.pb"), "wb") as fh:
                fh.write(onnx.numpy_helper.from_array(x, "x").SerializeToString())
            outcome, ours = r.outputs(path, "pattern", 1, True, ind, outd)
    finally:
        r.close()
    assert outcome.status == "ok", outcome.message
    nan = np.isnan(x)
    for name, got in zip(names, ours):
        # ORT keeps NaN in all five; onnx-fuse gives a number in all but LeakyRelu.
        assert np.isnan(plain[name][nan]).all(), name
        assert np.array_equal(ours_ref[name][~nan], plain[name][~nan]), name
        assert np.array_equal(got, ours_ref[name], equal_nan=True), (name, got, ours_ref[name])
    assert (ours_ref["relu"][nan] == 0).all() and (ours_ref["hsig"][nan] == 0).all()
    assert (ours_ref["clip"][nan] == -1).all()
    assert (ours_ref["clip_hi"][nan] == np.finfo(np.float32).min).all()
    assert np.isnan(ours_ref["leaky"][nan]).all()


def test_a_failure_without_figures_is_saved_as_a_case(tmp_path):
    # An output not written compares with max_rel None; saving it must not
    # stop the campaign (seed 39122124's campaign died there).
    from difftest import generator
    recipe = generator.make_recipe(39122124)
    b_dir = str(tmp_path)
    built = trial.Built(recipe, os.path.join(b_dir, "g"))
    failure = {"kind": "fusepath-vs-original", "check": "ORT: fuse -o output", "output": "v1", "max_abs": None,
               "max_rel": None, "via": ["fuse", "pattern", 1]}
    path = cases.save(os.path.join(b_dir, "cases"), recipe, failure, 39122124, built.graph, 1.0)
    with open(path) as fh:
        text = fh.read()
    assert "# differs: fusepath-vs-original, output v1\n" in text


def norm_model():
    """x [1, 2, 8] -> y = InstanceNormalization(x) -> z = Neg(y); output z."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 8])
    z = helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1, 2, 8])
    consts = [helper.make_tensor("s", onnx.TensorProto.FLOAT, [2], [1.0, 2.0]),
              helper.make_tensor("c", onnx.TensorProto.FLOAT, [2], [0.5, -0.5])]
    nodes = [helper.make_node("InstanceNormalization", ["x", "s", "c"], ["y"]), helper.make_node("Neg", ["y"], ["z"])]
    g = helper.make_graph(nodes, "g", [x], [z], initializer=consts)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def exact_norm(x):
    x = x.astype(np.float64)
    y = (x - x.mean(axis=2, keepdims=True)) / np.sqrt(x.var(axis=2, keepdims=True) + 1e-5)
    return y * np.array([1.0, 2.0]).reshape(1, 2, 1) + np.array([0.5, -0.5]).reshape(1, 2, 1)


class OffRunner:
    """Both sides' values from the model's input x (values(x, off, extra)):
    ours with OURS_OFF and EXTRA, ORT's with ORT_OFF."""

    def __init__(self, ours_off=0.0, ort_off=0.0, extra=0.0):
        self.ours_off, self.ort_off, self.extra = ours_off, ort_off, extra

    def outputs(self, model, strategy, threads, fuse, inputs_dir, out_dir):
        t = onnx.TensorProto()
        with open(os.path.join(inputs_dir, "input_0.pb"), "rb") as fh:
            t.ParseFromString(fh.read())
        v = self.values(onnx.numpy_helper.to_array(t), self.ours_off, self.extra)
        return runner.Outcome("ok"), [v[o.name] for o in onnx.load(model).graph.output]

    def ort(self, model, inputs, optimize=True, onnx_fuse_nan=False):
        v = self.values(inputs["x"], self.ort_off)
        return {o.name: v[o.name] for o in onnx.load(model).graph.output}


class NormRunner(OffRunner):
    """Both sides compute y exactly, then add OURS_OFF / ORT_OFF (relative to
    max|y|) to its first element; our z is -y times (1 + NEG_OFF)."""

    def __init__(self, ours_off=0.0, ort_off=0.0, neg_off=0.0):
        super().__init__(ours_off, ort_off, neg_off)

    def values(self, x, off, neg_off=0.0):
        y = exact_norm(x)
        y.flat[0] += off * np.abs(y).max()
        return {"y": y.astype(np.float32), "z": (-y * (1 + neg_off)).astype(np.float32)}


def test_a_mismatch_born_of_orts_rounding_at_a_normalization_is_explained():
    # ORT's InstanceNormalization 1e-4 off the float64 value, ours on it.
    with tempfile.TemporaryDirectory() as d:
        b = Built(d, norm_model(), ["z"])
        res = {"explained": {}}
        f = ort_failure("z", 1e-4, 1e-4)
        assert trial.keep_real(NormRunner(ort_off=1e-4), b, [f], res) == []
        assert res["explained"] == {trial.RULE_ORT_ROUNDING: 1}


def test_a_normalization_of_ours_off_the_float64_value_stays_a_failure():
    with tempfile.TemporaryDirectory() as d:
        b = Built(d, norm_model(), ["z"])
        f = ort_failure("z", 1e-4, 1e-4)
        assert trial.keep_real(NormRunner(ours_off=1e-4), b, [f]) == [f]
        # Both off, ORT less than ten times further: not ORT's rounding either.
        assert trial.keep_real(NormRunner(ours_off=2e-5, ort_off=1.2e-4), b, [f]) == [f]


def test_orts_rounding_upstream_excuses_no_error_of_ours_after_it():
    # ORT off at the normalization, and our Neg off by ten times more: a
    # second birth, at an op without a float64 reference.
    with tempfile.TemporaryDirectory() as d:
        b = Built(d, norm_model(), ["z"])
        f = ort_failure("z", 2e-3, 2e-3)
        assert trial.keep_real(NormRunner(ort_off=1e-4, neg_off=2e-3), b, [f]) == [f]


def argmax_model():
    """x [2, 3] -> s = Mul(x, x) -> i = ArgMax(s, axis 1) -> y = Cast(i) + s:
    an index of computed values added back, as the tester's intmix steps do."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])
    g = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["s"]),
                           helper.make_node("ArgMax", ["s"], ["i"], axis=1, keepdims=1),
                           helper.make_node("Cast", ["i"], ["f"], to=onnx.TensorProto.FLOAT),
                           helper.make_node("Add", ["s", "f"], ["y"])], "g", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


# The unfused plan's s at the graph's own inputs; the fused plan's rounds
# row 0's first element 2e-7 up, past its neighbour.
S_UNFUSED = np.array([[0.5, 0.5000001, 0.1], [0.2, 0.9, 0.3]], np.float32)
S_FUSED = np.array([[0.5000002, 0.5000001, 0.1], [0.2, 0.9, 0.3]], np.float32)


class TieRunner:
    """Each side's values of the model it is given (its outputs by name): at
    the graph's own inputs (a folder under near_tie/own) the side's S (its
    index the argmax of it unless INDEX overrides it), elsewhere both sides'
    S_UNFUSED, the fused one's y moved by DRAW_MOVE."""

    def __init__(self, s_fused=S_FUSED, index=None, draw_move=0.0):
        self.s_fused, self.index, self.draw_move = s_fused, index, draw_move

    def values(self, fused, own):
        s = (self.s_fused if fused else S_UNFUSED) if own else S_UNFUSED
        i = np.argmax(s, axis=1).reshape(2, 1).astype(np.int64)
        if fused and own and self.index is not None:
            i = self.index
        y = s + i.astype(np.float32) + (self.draw_move if fused and not own else 0.0)
        return {"s": s, "i": i, "f": i.astype(np.float32), "y": y.astype(np.float32)}

    def outputs(self, model, strategy, threads, fuse, inputs_dir, out_dir):
        got = self.values(fuse, os.sep + "own" + os.sep in model)
        return runner.Outcome("ok"), [got[o.name] for o in onnx.load(model).graph.output]

    def ort(self, model, inputs, optimize=True, onnx_fuse_nan=False):
        return self.values(False, os.sep + "own" + os.sep in model)


def tie_failure():
    return {"kind": "fused-vs-unfused", "check": "run --check", "output": "y", "max_abs": 1.0, "max_rel": 1.0,
            "via": ["check", "greedy", 1]}


def test_an_argmax_near_tie_each_plan_decides_its_own_way_is_explained():
    with tempfile.TemporaryDirectory() as d:
        res = {"explained": {}}
        assert trial.keep_real(TieRunner(), Built(d, argmax_model(), ["y"]), [tie_failure()], res) == []
        assert res["explained"] == {trial.RULE_NEAR_TIE: 1}
        # Against ONNX Runtime (the reference computing as the unfused plan does), likewise.
        f = dict(tie_failure(), kind="ort-vs-fused", via=["ort", "greedy", 1])
        assert near_tie.selection_near_tie(TieRunner(), Built(d, argmax_model(), ["y"]), f)


def test_a_near_tie_excuses_no_wrong_index_no_upstream_error_and_no_error_elsewhere():
    with tempfile.TemporaryDirectory() as d:
        f = tie_failure()
        # The fused plan's index is not the argmax of its own values.
        wrong = np.array([[2], [1]], np.int64)
        assert not near_tie.selection_near_tie(TieRunner(index=wrong), Built(d, argmax_model(), ["y"]), f)
        # The plans differ by 1e-2 before the ArgMax: no near-tie, an error upstream.
        far = S_UNFUSED.copy()
        far[0, 0] = 0.51
        assert not near_tie.selection_near_tie(TieRunner(s_fused=far), Built(d, argmax_model(), ["y"]), f)
        # At other inputs the fused plan is off after the ArgMax: a bug the tie would hide.
        assert not near_tie.selection_near_tie(TieRunner(draw_move=1e-2), Built(d, argmax_model(), ["y"]), f)
        # The same indices: nothing flipped, nothing to explain by a tie.
        assert not near_tie.selection_near_tie(TieRunner(s_fused=S_UNFUSED), Built(d, argmax_model(), ["y"]), f)


def loop_celu_model():
    """x [1, 4] -> l = Loop(1){xin * 1} -> c = Celu(l, alpha 100) -> z = l - c;
    output z. l - c nearly cancels (Celu(x) ~ x - x^2 / 200): a difference in
    c is magnified in z."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])
    z = helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [1, 4])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond"], ["cond_out"]), helper.make_node("Mul", ["xin", "one"], ["xout"])],
        "body",
        [helper.make_tensor_value_info("it", onnx.TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, []),
         helper.make_tensor_value_info("xin", onnx.TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("cond_out", onnx.TensorProto.BOOL, []),
         helper.make_tensor_value_info("xout", onnx.TensorProto.FLOAT, [1, 4])])
    consts = [helper.make_tensor("trips", onnx.TensorProto.INT64, [], [1]),
              helper.make_tensor("one", onnx.TensorProto.FLOAT, [], [1.0])]
    nodes = [helper.make_node("Loop", ["trips", "", "x"], ["l"], body=body),
             helper.make_node("Celu", ["l"], ["c"], alpha=100.0), helper.make_node("Sub", ["l", "c"], ["z"])]
    g = helper.make_graph(nodes, "g", [x], [z], initializer=consts)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


class LoopCeluRunner(OffRunner):
    """Both sides: l = x, c = Celu(l) in float64 times (1 + OFF) for the
    side's OFF, z = l - c computed from that c, ours then moved by SUB_OFF."""

    def __init__(self, ours_off=0.0, ort_off=0.0, sub_off=0.0):
        super().__init__(ours_off, ort_off, sub_off)

    def values(self, x, off, sub_off=0.0):
        l = x.astype(np.float64)
        c = (np.maximum(l, 0) + np.minimum(0, 100 * np.expm1(l / 100))) * (1 + off)
        z = (l - c.astype(np.float32).astype(np.float64)) * (1 + sub_off)
        return {"l": l.astype(np.float32), "c": c.astype(np.float32), "z": z.astype(np.float32)}


def test_orts_rounding_after_a_loop_and_magnified_by_a_cancelling_sub_is_explained():
    # ORT's Celu 1e-4 off the float64 value behind a Loop (whose output ONNX's
    # inference leaves without a shape); l - c then magnifies the difference.
    with tempfile.TemporaryDirectory() as d:
        b = Built(d, loop_celu_model(), ["z"])
        os.makedirs(os.path.join(d, "drawn"))
        x = runner.make_inputs(b.model, os.path.join(d, "drawn"))["x"]  # the inputs the checks draw
        mismatch = runner.max_rel(LoopCeluRunner().values(x, 0.0)["z"], LoopCeluRunner().values(x, 1e-4)["z"])[1]
        assert mismatch > 1e-2  # the Sub magnifies 1e-4 a hundredfold
        res = {"explained": {}}
        f = ort_failure("z", 1e-3, mismatch)
        assert trial.keep_real(LoopCeluRunner(ort_off=1e-4), b, [f], res) == []
        assert res["explained"] == {trial.RULE_ORT_ROUNDING: 1}


def test_a_cancelling_sub_of_ours_off_its_own_inputs_stays_a_failure():
    with tempfile.TemporaryDirectory() as d:
        b = Built(d, loop_celu_model(), ["z"])
        f = ort_failure("z", 1e-3, 1e-2)
        # ORT's Celu off as above, and our Sub 1e-3 off what its own inputs give.
        assert trial.keep_real(LoopCeluRunner(ort_off=1e-4, sub_off=1e-3), b, [f]) == [f]
        # Our Celu off, ORT's right: ours is the farther side.
        assert trial.keep_real(LoopCeluRunner(ours_off=1e-4), b, [f]) == [f]


def test_a_quantized_activation_beyond_the_step_rule_fails_with_no_figure_to_explain_it():
    """`run --check` failing only on a quantized activation: a failure of its own kind, carrying
    steps, not max_rel, so that keep_real's conditioning rules never see it."""
    out = ('{"check": {"ok": false, "outputs": [{"output": "y", "max_abs": 0, "max_rel": 0, "ok": true}], '
           '"quantized": [{"value": "aq", "elements": 800, "max_steps": 3, "share_over_one_step": 0.5, "ok": false}]}}')
    o = runner.Runner._classify(None, 1, "error: --check: the plans differ", "run --check", out=out)
    assert o.status == "fail"
    assert o.failure["kind"] == "quantized-steps"
    assert o.failure["output"] == "aq" and o.failure["max_steps"] == 3
    assert o.failure.get("max_rel") is None
    with tempfile.TemporaryDirectory() as d:
        b = Built(d)
        f = dict(o.failure, via=["check", "pattern", 1])
        assert trial.keep_real(None, b, [f]) == [f]   # never explained: no runner is even asked


def test_the_float_twin_of_a_quantized_graph_takes_each_pair_out():
    """quantized.without_fake_quantization: each QuantizeLinear read by DequantizeLinear nodes
    alone is the identity (what run --check compares first); a pair whose integers are an
    output stays."""
    from difftest import quantized
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])
    q2 = helper.make_tensor_value_info("q2", onnx.TensorProto.UINT8, [4])
    s = helper.make_tensor("s", onnx.TensorProto.FLOAT, [], [0.1])
    z = helper.make_tensor("z", onnx.TensorProto.UINT8, [], [128])
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
             helper.make_node("Relu", ["d"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s", "z"], ["q2"]),
             helper.make_node("DequantizeLinear", ["q2", "s", "z"], ["y"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y, q2], [s, z]),
                              opset_imports=[helper.make_opsetid("", 13)])
    assert quantized.is_quantized(model)
    twin = quantized.without_fake_quantization(model)
    ops = [(n.op_type, list(n.input)) for n in twin.graph.node]
    assert ops == [("Identity", ["x"]), ("Relu", ["d"]), ("QuantizeLinear", ["r", "s", "z"]),
                   ("DequantizeLinear", ["q2", "s", "z"])]
    onnx.checker.check_model(twin)


def test_quantized_recipes_render_the_int8_convolution_chain():
    """add_quantized draws, in a quarter of the recipes, the chain onnx-fuse runs as one int8
    convolution (QuantizeLinear, DequantizeLinear, Conv of int8 weights through
    DequantizeLinear with an int32 bias, QuantizeLinear, DequantizeLinear), and such recipes
    render to valid models."""
    from difftest import generator, renderer, quantized
    drawn, chains = 0, 0
    for seed in range(1000, 1200):
        model = renderer.to_model(renderer.render(generator.make_recipe(seed))[0])
        renderer.check(model)
        if not quantized.is_quantized(model):
            continue
        drawn += 1
        producer = {o: n for n in model.graph.node for o in n.output}
        for n in model.graph.node:
            if n.op_type != "Conv" or n.input[0] not in producer:
                continue
            ins = [producer.get(i) for i in n.input]
            if all(p is not None and p.op_type == "DequantizeLinear" for p in ins) and len(ins) == 3:
                chains += 1
    assert 30 <= drawn <= 70      # a quarter of 200
    assert chains >= 10


def test_quantized_recipes_draw_int8_matmuls_ops_between_pairs_and_dynamic_quantization():
    """add_quantized also draws the chain onnx-fuse runs as one int8 matmul (QuantizeLinear,
    DequantizeLinear, MatMul of int8 weights per column or per tensor through
    DequantizeLinear, [Add bias], QuantizeLinear, DequantizeLinear), a residual Add, a
    MaxPool or AveragePool and a Concat between QDQ pairs, and, in recipes of its own
    (never with the QDQ format), ONNX Runtime's dynamic quantization of a MatMul; such
    recipes render to valid models."""
    import collections
    from difftest import generator, renderer, quantized
    graphs = collections.Counter()
    for seed in range(1000, 1400):
        model = renderer.to_model(renderer.render(generator.make_recipe(seed))[0])
        renderer.check(model)
        kinds = set(quantized.census(model))
        graphs.update(kinds)
        if "dynamic matmul" in kinds:
            assert quantized.is_dynamic(model) and not quantized.is_quantized(model)
    assert graphs["int8 matmul"] + graphs["int8 matmul+bias"] >= 10
    assert graphs["int8 matmul+bias"] >= 5
    assert graphs["dynamic matmul"] >= 10
    assert graphs["qdq Add"] >= 5 and graphs["qdq Concat"] >= 5
    assert graphs["qdq MaxPool"] + graphs["qdq AveragePool"] >= 4


def dynamic_model(wz_per_column):
    """x [3, 8] -> DynamicQuantizeLinear -> MatMulInteger(W int8 [8, 4], w zero point 0) -> Cast ->
    Mul(., Mul(x_scale, w_scale)): ONNX Runtime's quantize_dynamic form."""
    rng = np.random.default_rng(5)
    w = rng.integers(-63, 64, [8, 4]).astype(np.int8)
    inits = [onnx.numpy_helper.from_array(w, "w"),
             onnx.numpy_helper.from_array(np.zeros(4 if wz_per_column else [], np.int8), "wz"),
             onnx.numpy_helper.from_array(np.array(0.02, np.float32), "ws")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xz", "wz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=onnx.TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 8])],
                          [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3, 4])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), w


def test_the_float_twin_of_dynamic_quantization_is_the_unrounded_product():
    """without_fake_quantization of a dynamically quantized MatMul: the MatMul of x / x_scale
    by the weights minus their zero point, as float (what run --check compares first), so a
    float mismatch is judged on a graph without the rounding; the model is dynamic, not QDQ,
    and compared with ONNX Runtime at RTOL_DYNAMIC."""
    from difftest import quantized
    for per_column in (False, True):
        model, w = dynamic_model(per_column)
        assert quantized.is_dynamic(model) and not quantized.is_quantized(model)
        twin = quantized.without_fake_quantization(model)
        onnx.checker.check_model(twin, full_check=True)
        ops = [n.op_type for n in twin.graph.node]
        assert ops == ["DynamicQuantizeLinear", "Div", "MatMul", "Cast", "Mul", "Mul"]
        div, mm = twin.graph.node[1], twin.graph.node[2]
        assert list(div.input) == ["x", "xs"] and mm.input[0] == div.output[0] and mm.output[0] == "acc"
        weights = {i.name: onnx.numpy_helper.to_array(i) for i in twin.graph.initializer}
        assert weights[mm.input[1]].dtype == np.float32
        assert np.array_equal(weights[mm.input[1]], w.astype(np.float32))


def test_a_dynamically_quantized_recipe_is_compared_at_the_loose_rule():
    """A recipe with a dynq step renders ONNX Runtime's quantize_dynamic chain; trial.Built
    gives it quantized.RTOL_DYNAMIC (bench_dynamic.py's rule), under which a 5e-3 mismatch
    passes and a 1e-2 one fails; a float recipe keeps runner.RTOL."""
    from difftest import quantized
    recipe = {"seed": 1, "input": [2, 3, 8],
              "steps": [{"op": "dynq", "s": 7, "out": 5, "qw": 8, "wper": "col", "wzcol": 1, "bias": True}]}
    with tempfile.TemporaryDirectory() as d:
        b = trial.Built(recipe, d)
        ops = [n.op_type for n in b.model.graph.node]
        assert ops == ["DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Mul", "Add"]
        assert b.rtol == quantized.RTOL_DYNAMIC
        plain = trial.Built({"seed": 1, "input": [2, 3, 8], "steps": [{"op": "unary", "f": "Relu"}]},
                            os.path.join(d, "plain"))
        assert plain.rtol == runner.RTOL
    ref = [np.array([1.0, -2.0, 0.5], np.float32)]
    assert runner.compare(ref, [ref[0] * 1.005], ["y"], "ort-vs-fused", "-", quantized.RTOL_DYNAMIC) is None
    assert runner.compare(ref, [ref[0] * 1.005], ["y"], "ort-vs-fused", "-") is not None
    assert runner.compare(ref, [ref[0] * 1.01], ["y"], "ort-vs-fused", "-", quantized.RTOL_DYNAMIC) is not None


def test_a_plan_with_a_slow_step_is_reported_and_not_clean(tmp_path):
    """`run --check --json`'s slow_steps reach the trial (and a campaign with
    any exits 1: campaign.main); a plan without is clean."""
    fake = tmp_path / "onnx-fuse"
    out = {"check": {"ok": True, "outputs": []},
           "slow_steps": [{"kind": "binary", "impl": "ref:any", "label": "Add_3"}]}
    fake.write_text("#!/bin/sh\necho '%s'\n" % json.dumps(out))
    fake.chmod(0o755)

    class B:
        path = str(tmp_path / "m.onnx")
        model = helper.make_model(helper.make_graph([], "g", [], []))
    slow = set()
    fails, refused, invalid = trial.run_checks(runner.Runner(str(fake), str(tmp_path)), B(), "pattern", slow=slow)
    assert (fails, refused, invalid) == ([], [], None)
    assert slow == {"binary ref:any (Add_3)"}
    out["slow_steps"] = []
    fake.write_text("#!/bin/sh\necho '%s'\n" % json.dumps(out))
    slow.clear()
    trial.run_checks(runner.Runner(str(fake), str(tmp_path)), B(), "pattern", slow=slow)
    assert slow == set()
