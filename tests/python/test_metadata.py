"""get_inputs / get_outputs: names, ONNX Runtime's type strings, shapes with
symbolic dims by name."""
import numpy as np
import onnxfuse
from conftest import save
from onnx import TensorProto, helper


def test_resnet18_metadata(resnet18):
    session = onnxfuse.InferenceSession(resnet18[0], threads=1)
    [x] = session.get_inputs()
    [y] = session.get_outputs()
    assert (x.name, x.type, x.shape) == ("input", "tensor(float)", [1, 3, 224, 224])
    assert (y.name, y.type, y.shape) == ("output", "tensor(float)", [1, 1000])
    assert session.get_providers() == ["CPUExecutionProvider"]


def test_types_and_symbolic_dims(typed_model):
    session = onnxfuse.InferenceSession(typed_model, threads=1)
    assert [(a.name, a.type, a.shape) for a in session.get_inputs()] == [
        ("ids", "tensor(int64)", ["batch", "seq"]), ("mask", "tensor(bool)", ["batch", "seq"]),
        ("scale", "tensor(float16)", [1])]
    # emb's last dim is declared anonymous; loading infers it (the table's width, 2).
    assert [(a.name, a.type, a.shape) for a in session.get_outputs()] == [
        ("emb", "tensor(float)", ["batch", "seq", 2]), ("count", "tensor(int64)", ["batch", "seq"]),
        ("wide", "tensor(double)", [1])]
    assert repr(session.get_inputs()[0]) == "NodeArg(name='ids', type='tensor(int64)', shape=['batch', 'seq'])"


def test_anonymous_dim_is_none(tmp_path):
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "anonymous",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 3])])
    path = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "anonymous.onnx")
    session = onnxfuse.InferenceSession(path, threads=1)
    assert session.get_inputs()[0].shape == [None, 3]
    # The output's anonymous dim gets a name from the loader's shape inference
    # (libonnx's 'unk__N'), as ONNX Runtime's inferred shapes do.
    assert session.get_outputs()[0].shape[1] == 3
    x = np.array([[-1, 2, -3], [4, -5, 6]], np.float32)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0], np.maximum(x, 0))
