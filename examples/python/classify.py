#!/usr/bin/env python3
"""Classifies one image with an onnxfuse InferenceSession and prints the top 5.

    classify.py MODEL(.onnx|.plan) [IMAGE.pb]

IMAGE.pb: a serialized TensorProto float[1,3,H,W], normalized as the model
expects (the models' test_data_set_0/input_0.pb); without it, a gray image,
as examples/cpp/classify.cc does, whose output this one's equals.
"""
import sys

import numpy as np
import onnxfuse


def main(argv):
    if len(argv) < 2:
        print("usage: classify.py MODEL [IMAGE.pb]", file=sys.stderr)
        return 2
    try:
        session = onnxfuse.InferenceSession(argv[1], threads=1)
        model_input = session.get_inputs()[0]
        if len(argv) > 2:
            image = onnxfuse.read_tensor(argv[2])
        else:  # a symbolic dim (the batch): 1
            image = np.zeros([d if isinstance(d, int) else 1 for d in model_input.shape], np.float32)
        scores = session.run(None, {model_input.name: image})[0].reshape(-1)
    except onnxfuse.Error as e:
        print(f"classify.py: {e}", file=sys.stderr)
        return e.exit_code
    for c in np.argsort(-scores, kind="stable")[:5]:
        print(f"class {c}: {scores[c]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
