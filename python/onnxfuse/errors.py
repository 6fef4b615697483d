"""The exceptions onnxfuse raises.

Every failure of the C++ library (an ``onnxfuse::Error``) is raised as a
subclass of :class:`Error`, chosen by the error's kind, with the library's
one-line message (naming the file, the node, the input or output at fault).
``kind`` and ``exit_code`` are those ``onnx-fuse`` reports on the command line
(docs/cli.md "Exit codes").

- ``UsageError`` (also a ValueError; exit code 2): a bad call: an unknown or
  missing input or output name, a wrong dtype, rank or dim, an unknown
  strategy, a bad option.
- ``InvalidModelError`` (3): a file that is not a valid model or plan.
- ``UnsupportedError`` (4): an op, type or form onnx-fuse does not run.
- ``IoError`` (also an OSError; 5): a file that cannot be read or written,
  e.g. a missing model.
- ``VerificationError`` (6): a fused plan computing other outputs than the
  unfused one (a bug in onnx-fuse; please report it).
- ``InternalError`` (also a RuntimeError; 70): a broken invariant (a bug in
  onnx-fuse; please report it).
"""


class Error(Exception):
    """Base of onnxfuse's exceptions. ``kind``: 'usage', 'invalid_model',
    'unsupported', 'io', 'verification' or 'internal'; ``exit_code``: the
    exit code ``onnx-fuse`` gives the same failure."""

    kind = None
    exit_code = None


class UsageError(Error, ValueError):
    """A bad call or option, e.g. an input name the model does not have."""

    kind, exit_code = "usage", 2


class InvalidModelError(Error):
    """Not a valid ONNX model or plan file (truncated, cycle, schema mismatch, ...)."""

    kind, exit_code = "invalid_model", 3


class UnsupportedError(Error):
    """A construct onnx-fuse does not handle (opset, element type, op form)."""

    kind, exit_code = "unsupported", 4


class IoError(Error, OSError):
    """A file cannot be read or written."""

    kind, exit_code = "io", 5


class VerificationError(Error):
    """The fused plan differs from the unfused one (a bug in onnx-fuse)."""

    kind, exit_code = "verification", 6


class InternalError(Error, RuntimeError):
    """A broken invariant inside onnx-fuse (a bug in onnx-fuse)."""

    kind, exit_code = "internal", 70


_BY_EXIT_CODE = {cls.exit_code: cls for cls in
                 (UsageError, InvalidModelError, UnsupportedError, IoError, VerificationError, InternalError)}


def _from_kind(exit_code, message):
    """The exception for an onnxfuse::Error of this kind (its exit code); the
    extension module raises what this returns."""
    return _BY_EXIT_CODE.get(exit_code, InternalError)(message)
