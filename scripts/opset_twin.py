#!/usr/bin/python3
"""Writes the opset-N twin (N in 18-23) of an opset-13..17 model, changing its
ops the way the ONNX spec changed them (onnx/docs/Changelog.md), for testing
onnx-fuse's down-conversion (src/load/) on whole models:
  - Reduce* other than ReduceSum (18): the `axes` attribute becomes an input;
  - Split (18): equal parts become `num_outputs` (the `split` input is dropped);
  - the IR version becomes 9 (opsets 18-20) or 10 (21-23).
Every other op of these models is unchanged from 17 to 23 but for types.

    /usr/bin/python3 scripts/opset_twin.py IN.onnx OPSET OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

REDUCE = ("ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
          "ReduceLogSumExp", "ReduceSumSquare")


def constant_ints(graph, name):
    for t in graph.initializer:
        if t.name == name:
            return numpy_helper.to_array(t).tolist()
    for n in graph.node:
        if n.op_type == "Constant" and n.output[0] == name:
            return numpy_helper.to_array(n.attribute[0].t).tolist()
    return None


def twin(model, opset):
    g = model.graph
    for k, n in enumerate(g.node):
        if n.op_type in REDUCE:
            axes = [a for a in n.attribute if a.name == "axes"]
            if axes:
                name = "%s_axes_%d" % (n.op_type, k)
                g.initializer.append(numpy_helper.from_array(np.array(axes[0].ints, np.int64), name))
                n.attribute.remove(axes[0])
                n.input.append(name)
        if n.op_type == "Split" and len(n.input) > 1:
            sizes = constant_ints(g, n.input[1])
            if sizes and len(set(sizes)) == 1:
                del n.input[1:]
                n.attribute.append(onnx.helper.make_attribute("num_outputs", len(sizes)))
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = opset
    model.ir_version = 10 if opset >= 21 else 9
    return model


if __name__ == "__main__":
    if len(sys.argv) != 4 or not 18 <= int(sys.argv[2]) <= 23:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    onnx.save(twin(onnx.load(sys.argv[1]), int(sys.argv[2])), sys.argv[3])
