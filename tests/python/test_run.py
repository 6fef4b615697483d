"""InferenceSession.run on resnet18 against `onnx-fuse run` and ONNX Runtime's
reference output; a plan file; a symbolic batch at several sizes."""
import subprocess

import numpy as np
import onnxfuse
from conftest import read_tensor, relative_difference


def run_cli(onnx_fuse_bin, model, inputs_dir, outputs_dir):
    subprocess.run([onnx_fuse_bin, "run", str(model), "--inputs", str(inputs_dir), "--outputs", str(outputs_dir),
                    "--iterations", "1", "--warmup", "0", "--threads", "2"], check=True, capture_output=True)
    return read_tensor(outputs_dir / "output_0.pb")


def test_resnet18_equals_run_and_onnx_runtime(resnet18, onnx_fuse_bin, tmp_path):
    model, data = resnet18
    image = read_tensor(data / "input_0.pb")
    own = onnxfuse.read_tensor(data / "input_0.pb")  # the module's reader, without onnx
    assert own.dtype == np.float32
    np.testing.assert_array_equal(own, image)
    session = onnxfuse.InferenceSession(model, threads=2)
    outputs = session.run(None, {"input": image})
    assert len(outputs) == 1 and outputs[0].dtype == np.float32 and outputs[0].shape == (1, 1000)
    assert relative_difference(run_cli(onnx_fuse_bin, model, data, tmp_path), outputs[0]) <= 1e-5
    assert relative_difference(read_tensor(data / "output_0.pb"), outputs[0]) <= 1e-4
    # By name, and again (a cached schedule): the same values.
    again = session.run(["output"], {"input": image})
    np.testing.assert_array_equal(again[0], outputs[0])
    assert session.stats()["compiles"] == 1


def test_plan_file_runs_as_the_model(resnet18, tmp_path):
    model, data = resnet18
    image = read_tensor(data / "input_0.pb")
    plan = tmp_path / "resnet18.plan"
    onnxfuse.fuse(model, plan)
    from_plan = onnxfuse.InferenceSession(str(plan), threads=2).run(None, {"input": image})[0]
    from_model = onnxfuse.InferenceSession(model, threads=2).run(None, {"input": image})[0]
    assert relative_difference(from_model, from_plan) <= 1e-5


def test_symbolic_batch_at_several_sizes(symbolic_model):
    path, reference = symbolic_model
    session = onnxfuse.InferenceSession(path, threads=1, shape_cache_size=2)
    rng = np.random.default_rng(1)
    for batch in (1, 3, 8, 3):
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        y, = session.run(None, {"x": x})
        assert y.shape == (batch, 3)
        np.testing.assert_allclose(y, reference(x), rtol=1e-5, atol=1e-6)
    # 1, 3 and 8 compiled; 8 evicted 1, the least recently used; the second 3 hit.
    stats = session.stats()
    assert [shape["input_shapes"] for shape in stats.pop("shapes")] == [{"x": [3, 4]}, {"x": [8, 4]}]
    assert stats == {"compiles": 3, "cache_hits": 1, "evictions": 1, "cached_shapes": 2, "plan_instances": 2,
                     "fused_once": True, "staged_runs": 0, "stages_compiled": 0, "stage_hits": 0,
                     "nodes_evaluated": 0}


def test_batch_in_passes_gives_the_one_pass_outputs(symbolic_model):
    path, reference = symbolic_model
    split = onnxfuse.InferenceSession(path, threads=1, max_samples_per_pass=2)
    whole = onnxfuse.InferenceSession(path, threads=1, max_samples_per_pass=-1)
    x = np.random.default_rng(2).standard_normal((6, 4)).astype(np.float32)
    y, = split.run(None, {"x": x})
    assert y.shape == (6, 3)
    np.testing.assert_allclose(y, whole.run(None, {"x": x})[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(y, reference(x), rtol=1e-5, atol=1e-6)
    shape, = split.stats()["shapes"]
    assert (shape["samples_per_pass"], shape["concurrent_passes"]) == (2, 1)
    assert whole.stats()["shapes"][0]["samples_per_pass"] == 0
    # At 2 threads, batch 8 runs two passes of 2 at once, each on one thread.
    two = onnxfuse.InferenceSession(path, threads=2, max_samples_per_pass=2)
    x = np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32)
    np.testing.assert_allclose(two.run(None, {"x": x})[0], reference(x), rtol=1e-5, atol=1e-6)
    shape, = two.stats()["shapes"]
    assert (shape["samples_per_pass"], shape["concurrent_passes"]) == (2, 2)
    assert two.stats()["plan_instances"] == 2


def test_non_contiguous_input_is_copied_not_misread(symbolic_model):
    path, reference = symbolic_model
    session = onnxfuse.InferenceSession(path, threads=1)
    wide = np.arange(5 * 8, dtype=np.float32).reshape(5, 8) / 10
    x = wide[:, ::2]  # a strided view: the runtime must see its values, not the memory under it
    assert not x.flags.c_contiguous
    np.testing.assert_allclose(session.run(None, {"x": x})[0], reference(x), rtol=1e-5, atol=1e-6)
    big_endian = x.astype(">f4")
    np.testing.assert_allclose(session.run(None, {"x": big_endian})[0], reference(x), rtol=1e-5, atol=1e-6)
