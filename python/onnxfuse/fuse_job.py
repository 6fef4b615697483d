"""fuse(): the ``onnx-fuse INPUT -o OUTPUT`` job as a call."""

import json
import os

from . import _core


def fuse(input, output, strategy="pattern", report=None, *, patterns=(), input_shapes=None):
    """Fuses the ONNX model ``input`` and writes ``output``, as
    ``onnx-fuse INPUT -o OUTPUT --strategy STRATEGY [--report REPORT]`` does:
    fused groups as ai.onnxfuse ops defined by model-local functions (checked
    with onnx.checker), or an executable plan file when ``output`` ends in
    ``.plan``. Returns the fusion report (docs/cli.md "Fusion report") as a dict;
    ``report``: a path to write it to as JSON too.

    ``strategy``: 'pattern' (the default, as the CLI's), 'postdom' or
    'greedy'. ``patterns``: extra pattern directories for 'pattern'.
    ``input_shapes``: {input name: shape} pinned at load, as ``--input-shape``.

    Raises (onnxfuse.errors): UsageError (unknown strategy, ``output`` naming
    the input), IoError (a file that cannot be read or written), InvalidModelError,
    UnsupportedError, VerificationError (a plan file whose fused plan differs).
    Nothing is written when it raises.
    """
    shapes = {name: [int(d) for d in shape] for name, shape in (input_shapes or {}).items()}
    text = _core.fuse(os.fspath(input), os.fspath(output), strategy, os.fspath(report) if report else "",
                      [os.fspath(p) for p in patterns], shapes)
    return json.loads(text)
