"""Errors raise the documented onnxfuse exceptions (onnxfuse.errors), each
message naming the culprit."""
import numpy as np
import onnxfuse
import pytest


@pytest.fixture
def session(symbolic_model):
    return onnxfuse.InferenceSession(symbolic_model[0], threads=1)


def test_wrong_input_name(session):
    with pytest.raises(onnxfuse.UsageError, match="'nope'") as raised:
        session.run(None, {"nope": np.zeros((1, 4), np.float32)})
    assert isinstance(raised.value, ValueError) and raised.value.exit_code == 2 and raised.value.kind == "usage"


def test_missing_input(session):
    with pytest.raises(onnxfuse.UsageError, match="'x'"):
        session.run(None, {})


def test_wrong_dtype(session):
    with pytest.raises(onnxfuse.UsageError, match="'x'.*(float64|double)"):
        session.run(None, {"x": np.zeros((1, 4), np.float64)})


def test_dtype_without_onnx_type(session):
    with pytest.raises(onnxfuse.UsageError, match="'x'.*complex"):
        session.run(None, {"x": np.zeros((1, 4), np.complex64)})


def test_wrong_rank(session):
    with pytest.raises(onnxfuse.UsageError, match="'x'.*rank"):
        session.run(None, {"x": np.zeros((1, 4, 1), np.float32)})


def test_wrong_fixed_dim(session):
    with pytest.raises(onnxfuse.UsageError, match="'x'"):
        session.run(None, {"x": np.zeros((2, 5), np.float32)})


def test_unknown_output_name(session):
    with pytest.raises(onnxfuse.UsageError, match="'z'"):
        session.run(["z"], {"x": np.zeros((1, 4), np.float32)})


def test_missing_file(tmp_path):
    missing = tmp_path / "missing.onnx"
    with pytest.raises(onnxfuse.IoError, match="missing.onnx") as raised:
        onnxfuse.InferenceSession(missing)
    assert isinstance(raised.value, OSError) and raised.value.exit_code == 5


def test_not_a_model(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff\x00 not a protobuf \xff" * 8)
    with pytest.raises(onnxfuse.InvalidModelError, match="garbage.onnx"):
        onnxfuse.InferenceSession(garbage)


def test_bad_options(symbolic_model):
    with pytest.raises(onnxfuse.UsageError, match="nostrategy"):
        onnxfuse.InferenceSession(symbolic_model[0], strategy="nostrategy")
    with pytest.raises(onnxfuse.UsageError, match="shape_cache_size"):
        onnxfuse.InferenceSession(symbolic_model[0], shape_cache_size=0)
    with pytest.raises(onnxfuse.UsageError, match="max_samples_per_pass"):
        onnxfuse.InferenceSession(symbolic_model[0], max_samples_per_pass=-2)
    with pytest.raises(onnxfuse.UsageError, match="'q'"):
        onnxfuse.InferenceSession(symbolic_model[0], input_shapes={"q": [1, 4]})

