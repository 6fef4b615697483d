"""Inputs and outputs that are not float32: int64 ids, a bool mask, a float16
scalar in; float, int64 and double out, each as its ONNX type's numpy dtype."""
import numpy as np
import onnxfuse
from conftest import save
from onnx import TensorProto, helper


def test_int64_bool_float16_inputs(typed_model):
    session = onnxfuse.InferenceSession(typed_model, threads=1)
    table = np.arange(20, dtype=np.float32).reshape(10, 2)
    for batch, seq in ((1, 5), (3, 2)):
        ids = (np.arange(batch * seq, dtype=np.int64).reshape(batch, seq) * 7) % 10
        mask = (ids % 3) == 0
        scale = np.array([1.5], np.float16)
        emb, count, wide = session.run(None, {"ids": ids, "mask": mask, "scale": scale})
        assert (emb.dtype, count.dtype, wide.dtype) == (np.float32, np.int64, np.float64)
        np.testing.assert_array_equal(emb, table[ids])
        np.testing.assert_array_equal(count, ids + mask)
        np.testing.assert_array_equal(wide, [1.5])


def test_int64_exact_and_int32_uint8(tmp_path):
    # s = a + a on int64 past float32's 24-bit mantissa; p = b * b on int32; n = Not(c > 3) from uint8.
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "a"], ["s"]), helper.make_node("Mul", ["b", "b"], ["p"]),
         helper.make_node("Greater", ["c", "three"], ["gt"]), helper.make_node("Not", ["gt"], ["n"])],
        "ints",
        [helper.make_tensor_value_info("a", TensorProto.INT64, ["N"]),
         helper.make_tensor_value_info("b", TensorProto.INT32, ["N"]),
         helper.make_tensor_value_info("c", TensorProto.UINT8, ["N"])],
        [helper.make_tensor_value_info("s", TensorProto.INT64, ["N"]),
         helper.make_tensor_value_info("p", TensorProto.INT32, ["N"]),
         helper.make_tensor_value_info("n", TensorProto.BOOL, ["N"])],
        [helper.make_tensor("three", TensorProto.UINT8, [], [3])])
    path = save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "ints.onnx")
    session = onnxfuse.InferenceSession(path, threads=1)
    a = np.array([2**40 + 1, -(2**33) - 3, 7], np.int64)
    b = np.array([-46340, 3, 0], np.int32)
    c = np.array([0, 4, 255], np.uint8)
    s, p, n = session.run(None, {"a": a, "b": b, "c": c})
    assert (s.dtype, p.dtype, n.dtype) == (np.int64, np.int32, np.bool_)
    np.testing.assert_array_equal(s, a + a)
    np.testing.assert_array_equal(p, b * b)
    np.testing.assert_array_equal(n, ~(c > 3))
