"""onnxfuse: fused ONNX models on onnx-fuse's oneDNN CPU runtime, with ONNX
Runtime's Python API::

    import numpy as np
    import onnxfuse                                   # instead of: import onnxruntime
    session = onnxfuse.InferenceSession("resnet18.onnx", threads=2)   # or a .plan file
    name = session.get_inputs()[0].name
    logits, = session.run(None, {name: np.zeros((1, 3, 224, 224), np.float32)})
    report = onnxfuse.fuse("resnet18.onnx", "fused.onnx")             # the report as a dict

InferenceSession: .run(output_names, {name: array}), .get_inputs(),
.get_outputs() (NodeArg: .name, .type, .shape); see its docstring.
fuse(input, output, strategy, report): the ``onnx-fuse`` command as a call.
read_tensor(path): a TensorProto file (test_data_set_0/input_0.pb) as an array.
Errors are raised as subclasses of onnxfuse.Error (onnxfuse.errors): UsageError
(also a ValueError), InvalidModelError, UnsupportedError, IoError (also an
OSError), VerificationError, InternalError (also a RuntimeError).
"""

from . import _core
from .errors import (Error, InternalError, InvalidModelError, IoError, UnsupportedError, UsageError,
                     VerificationError)
from .fuse_job import fuse
from .session import InferenceSession, NodeArg, read_tensor

__version__ = _core.__version__
__all__ = ["InferenceSession", "NodeArg", "fuse", "read_tensor", "Error", "UsageError", "InvalidModelError", "UnsupportedError",
           "IoError", "VerificationError", "InternalError"]
