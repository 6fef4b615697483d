"""Shared fixtures of the onnxfuse module's tests (ctest python.*, tests/CMakeLists.txt).

The module is the build tree's (PYTHONPATH=<build>/python); ONNXFUSE_MODELS_DIR
is the exported models' folder, ONNXFUSE_BIN the onnx-fuse executable.
"""
import os
import pathlib

import numpy as np
import onnx
import onnx.numpy_helper
import pytest
from onnx import TensorProto, helper

MODELS = pathlib.Path(os.environ.get("ONNXFUSE_MODELS_DIR", pathlib.Path(__file__).parents[2] / "models"))


@pytest.fixture(scope="session")
def resnet18():
    """models/resnet18: (model path, test_data_set_0 folder); a missing model fails."""
    model = MODELS / "resnet18" / "model.onnx"
    assert model.exists(), f"{model} is missing: scripts/export_models.py writes it"
    return model, model.parent / "test_data_set_0"


@pytest.fixture(scope="session")
def onnx_fuse_bin():
    path = os.environ.get("ONNXFUSE_BIN")
    assert path and os.access(path, os.X_OK), "ONNXFUSE_BIN names no onnx-fuse executable"
    return path


def read_tensor(path):
    return onnx.numpy_helper.to_array(onnx.load_tensor(str(path)))


def relative_difference(reference, candidate):
    """max |candidate - reference| / max |reference|, as `onnx-fuse run --check` measures."""
    reference = np.asarray(reference, np.float64)
    assert reference.shape == np.shape(candidate)
    return np.abs(np.asarray(candidate, np.float64) - reference).max() / max(np.abs(reference).max(), 1e-30)


def save(model, path):
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return path


def symbolic_float_model(path):
    """y = Relu(x @ w + b), x float[N, 4] with a symbolic batch N, y float[N, 3]."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["xwb"]),
         helper.make_node("Relu", ["xwb"], ["y"])],
        "symbolic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
        [onnx.numpy_helper.from_array(w, "w"), onnx.numpy_helper.from_array(b, "b")])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return w, b


@pytest.fixture
def symbolic_model(tmp_path):
    """(path, reference function) of symbolic_float_model."""
    path = tmp_path / "symbolic.onnx"
    w, b = symbolic_float_model(path)
    return path, lambda x: np.maximum(x.astype(np.float64) @ w + b, 0)


@pytest.fixture
def typed_model(tmp_path):
    """Non-float inputs and outputs: ids int64[batch, seq] gathers rows of a
    float table (emb float[batch, seq, anonymous dim]), mask bool[batch, seq]
    is counted as int64 (count = Cast(mask) + ids), scale float16[1] becomes
    double (wide)."""
    table = np.arange(20, dtype=np.float32).reshape(10, 2)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["emb"]),
         helper.make_node("Cast", ["mask"], ["mask64"], to=TensorProto.INT64),
         helper.make_node("Add", ["mask64", "ids"], ["count"]),
         helper.make_node("Cast", ["scale"], ["wide"], to=TensorProto.DOUBLE)],
        "typed",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("mask", TensorProto.BOOL, ["batch", "seq"]),
         helper.make_tensor_value_info("scale", TensorProto.FLOAT16, [1])],
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["batch", "seq", None]),
         helper.make_tensor_value_info("count", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("wide", TensorProto.DOUBLE, [1])],
        [onnx.numpy_helper.from_array(table, "table")])
    return save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "typed.onnx")
