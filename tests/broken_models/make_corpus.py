#!/usr/bin/python3
"""A corpus of broken (and awkward but valid) models for tests/e2e/broken_models.sh.

    /usr/bin/python3 tests/broken_models/make_corpus.py     # rewrites tests/broken_models/*.onnx

Every file is tiny (at most a few hundred bytes) and deterministic. What each
must give (exit code, message) is the table in tests/e2e/broken_models.sh; a
line here says what the file is.
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, parser, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
FLOAT = TensorProto.FLOAT


def text(src):
    return parser.parse_model(src)


def valid():
    """Conv + Relu + Neg: the model the damaged files start from."""
    return text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 1.0}) => (float[1,2,4,4] y) {
  c = Conv (x, w)
  r = Relu (c)
  y = Neg (r)
}""")


def flip_bit(data, offset, bit):
    b = bytearray(data)
    b[offset] ^= 1 << bit
    return bytes(b)


def with_initializer(tensor, extra_nodes_text=None):
    """x[4] + w -> Relu: `tensor` (named w) is the initializer under test."""
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["s"]), helper.make_node("Relu", ["s"], ["y"])],
                              "g", [helper.make_tensor_value_info("x", FLOAT, [4])],
                              [helper.make_tensor_value_info("y", FLOAT, [4])], [tensor])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def external(location, dims=(4,), offset=None, length=None):
    t = TensorProto()
    t.name, t.data_type = "w", FLOAT
    t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
    return with_initializer(t)


def raw_tensor(dims, nbytes):
    t = TensorProto()
    t.name, t.data_type = "w", FLOAT
    t.dims.extend(dims)
    t.raw_data = bytes(range(nbytes))
    return t


def wrong_field():
    """A FLOAT tensor whose values sit in int64_data."""
    t = TensorProto()
    t.name, t.data_type = "w", FLOAT
    t.dims.append(4)
    t.int64_data.extend([1, 2, 3, 4])
    return t


def nested_ifs(depth):
    """If inside If inside If ...: each level costs 3 protobuf nesting levels."""
    def leaf(name):
        return helper.make_graph([helper.make_node("Identity", ["x"], [name])], "leaf", [],
                                 [helper.make_tensor_value_info(name, FLOAT, [2])])
    body = leaf("o0")
    for level in range(1, depth + 1):  # nest in the then branch only: the file grows linearly
        node = helper.make_node("If", ["c"], [f"o{level}"], then_branch=body, else_branch=leaf(f"e{level}"))
        body = helper.make_graph([node], f"b{level}", [], [helper.make_tensor_value_info(f"o{level}", FLOAT, [2])])
    graph = helper.make_graph(list(body.node), "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                                     helper.make_tensor_value_info("x", FLOAT, [2])],
                              [helper.make_tensor_value_info(f"o{depth}", FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def bad_function():
    """A model-local function whose two inputs have one name (found by fuzz_model_loader)."""
    f = helper.make_function("ai.onnxfuse", "Conv_Relu", ["x1", "x1"], ["y0"],
                             [helper.make_node("Conv", ["x1", "x1"], ["t0"]), helper.make_node("Relu", ["t0"], ["y0"])],
                             [helper.make_opsetid("", 13)])
    w = numpy_helper.from_array(np.ones((2, 2, 1, 1), np.float32), "w")
    graph = helper.make_graph([helper.make_node("Conv_Relu", ["x", "w"], ["c"], domain="ai.onnxfuse"),
                               helper.make_node("Sigmoid", ["c"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", FLOAT, [1, 2, 2, 2])],
                              [helper.make_tensor_value_info("y", FLOAT, [1, 2, 2, 2])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("ai.onnxfuse", 1)],
                             functions=[f], ir_version=8)


def undefined_function():
    """An ai.onnxfuse call of a function the model does not define (found by fuzz_model_loader)."""
    model = bad_function()
    model.functions[0].input[:] = ["x0", "x1"]
    model.functions[0].node[0].input[:] = ["x0", "x1"]
    model.functions[0].name = "Conv_Reku"
    return model


def cases():
    good = valid().SerializeToString()
    relu_at = good.index(b"Relu")
    files = {
        # Damaged bytes.
        "empty.onnx": b"",
        "text.onnx": b"this is not an ONNX model\n",
        "truncated.onnx": good[: len(good) // 2],
        "bitflip_tag.onnx": flip_bit(good, 0, 2),             # field 1 (ir_version) becomes wire type 4: no parse
        "bitflip_op_type.onnx": flip_bit(good, relu_at + 1, 0),  # "Relu" -> "Rdlu": an unknown operator
        # Graph structure.
        "cycle.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] z) { a = Add (x, b)  b = Relu (a)  z = Neg (b) }"""),
        "dangling_input.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] z) { z = Add (x, ghost) }"""),
        "duplicate_names.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] z) { z = Relu (x)  z = Neg (x) }"""),
        "wrong_input_count.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] z) { z = Relu (x, x) }"""),
        "opset_too_new.onnx": text("""<ir_version: 8, opset_import: ["" : 99]>
g (float[4] x) => (float[4] z) { z = Relu (x) }"""),
        "ir_version_too_new.onnx": text("""<ir_version: 99, opset_import: ["" : 13]>
g (float[4] x) => (float[4] z) { z = Relu (x) }"""),
        "attribute_wrong_type.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] x) => (float[3,2] z) { z = Transpose <perm: floats = [1.0, 0.0]> (x) }"""),
        "type_mismatch.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x, int64[4] i) => (float[4] z) { z = Add (x, i) }"""),
        "conv_rank_mismatch.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4] x, float[2,2,1,1] w) => (float[1,2,4] y) { y = Conv (x, w) }"""),  # libonnx 1.12 read out of bounds
        "conv_transpose_rank_mismatch.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x, float[2] w) => (float[1,2,4,4] y) { y = ConvTranspose (x, w) }"""),
        "bad_function.onnx": bad_function(),
        "undefined_function.onnx": undefined_function(),
        "deep_nesting.onnx": nested_ifs(40),
        # Tensor data against dims.
        "raw_data_short.onnx": with_initializer(raw_tensor([4], 12)),
        "typed_data_wrong_field.onnx": with_initializer(wrong_field()),
        "negative_dim.onnx": with_initializer(raw_tensor([-4], 16)),
        "huge_dim_initializer.onnx": with_initializer(raw_tensor([1 << 40], 16)),    # 4 TB declared, 16 bytes given
        "huge_dim_overflow.onnx": with_initializer(raw_tensor([1 << 40, 1 << 40], 16)),  # 2^80 elements
        "huge_dim_external.onnx": external("weights.bin", dims=(1 << 40,)),           # 4 TB from a 16-byte file
        "external_outside.onnx": external("../outside.bin"),
        "external_absolute.onnx": external("/etc/passwd"),
        "external_missing.onnx": external("missing.bin"),
        "external_bad_offset.onnx": external("weights.bin", offset="12abc"),
        "external_past_end.onnx": external("weights.bin", offset=8),
        "external_ok.onnx": external("weights.bin", offset=0, length=16),
        # Valid but awkward: must fuse and write.
        "zero_dim.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[0,4] x, float[3] a) => (float[0,4] y, float[3] z) {
  r = Relu (x)
  y = Neg (r)
  e = Constant <value = float[0] {}> ()
  c = Concat <axis: int = 0> (a, e)
  z = Sigmoid (c)
}"""),
        # Add(n, n) after Conv+BN: a residual pattern must not take n as its shortcut (found by fuzz_model_loader).
        "residual_self_add.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x, float[2,2,1,1] w = {1.0, 0.5, -0.5, 1.0}, float[2] s = {1.0, 2.0}, float[2] b = {0.0, 0.1},
   float[2] m = {0.5, 0.0}, float[2] v = {1.0, 4.0}) => (float[1,2,4,4] y) {
  r0 = Relu (x)
  c = Conv (r0, w)
  n = BatchNormalization (c, s, b, m, v)
  a = Add (n, n)
  y = Relu (a)
}"""),
        "huge_dim_input.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[1099511627776,1099511627776] x) => (float[1099511627776,1099511627776] y) { r = Relu (x)  y = Neg (r) }"""),
        "if_subgraph.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[1,2,4,4] x) => (float[1,2,4,4] y) {
  r = Relu (x)
  n = Neg (r)
  s = ReduceSum <keepdims: int = 0> (x)
  zero = Constant <value = float {0.0}> ()
  cond = Greater (s, zero)
  b = If (cond) <then_branch = t () => (float[1,2,4,4] tb) { tm = Mul (n, r)  tb = Sigmoid (tm) },
                 else_branch = e () => (float[1,2,4,4] eb) { eb = Abs (n) }>
  a = Add (b, r)
  y = Tanh (a)
}"""),
        "loop_subgraph.onnx": text("""<ir_version: 8, opset_import: ["" : 13]>
g (float[2,3] x) => (float[2,3] y) {
  r = Relu (x)
  trips = Constant <value = int64 {3}> ()
  go = Constant <value = bool {1}> ()
  l = Loop (trips, go, r) <body = b (int64 i, bool ci, float[2,3] v) => (bool co, float[2,3] vo) {
    co = Identity (ci)
    h = Mul (v, r)
    vo = Tanh (h)
  }>
  n = Neg (l)
  y = Sigmoid (n)
}"""),
    }
    return files


def main():
    for name in os.listdir(HERE):
        if name.endswith(".onnx") or name.endswith(".bin"):
            os.remove(os.path.join(HERE, name))
    for name, content in sorted(cases().items()):
        data = content if isinstance(content, bytes) else content.SerializeToString()
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
    with open(os.path.join(HERE, "weights.bin"), "wb") as f:  # 4 floats for the external-data cases
        f.write(np.array([1.0, -2.0, 3.5, 0.25], np.float32).tobytes())
    sizes = [os.path.getsize(os.path.join(HERE, n)) for n in os.listdir(HERE) if n.endswith((".onnx", ".bin"))]
    print(f"wrote {len(sizes)} files, {sum(sizes)} bytes, largest {max(sizes)}", file=sys.stderr)


if __name__ == "__main__":
    main()
