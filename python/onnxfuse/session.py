"""InferenceSession: a fused model run by onnx-fuse's oneDNN runtime, with
ONNX Runtime's Python API (``onnxruntime.InferenceSession``)."""

import os

import numpy as np

from . import _core

# ONNX TensorProto.DataType -> (ONNX Runtime's type string, numpy dtype).
_TYPES = {
    1: ("tensor(float)", np.float32),
    2: ("tensor(uint8)", np.uint8),
    3: ("tensor(int8)", np.int8),
    4: ("tensor(uint16)", np.uint16),
    5: ("tensor(int16)", np.int16),
    6: ("tensor(int32)", np.int32),
    7: ("tensor(int64)", np.int64),
    9: ("tensor(bool)", np.bool_),
    10: ("tensor(float16)", np.float16),
    11: ("tensor(double)", np.float64),
    12: ("tensor(uint32)", np.uint32),
    13: ("tensor(uint64)", np.uint64),
}


def _as_numpy(storage, onnx_type):
    """A tensor from _core, (float32 or int64 storage, ONNX type), as the ONNX type's dtype."""
    return storage.astype(_TYPES[onnx_type][1], copy=False)


def read_tensor(path):
    """Reads a serialized onnx.TensorProto (as the ONNX backend tests'
    input_0.pb; what ``onnx-fuse run --inputs`` reads) into a numpy array of
    its type. Raises IoError, InvalidModelError or UnsupportedError."""
    return _as_numpy(*_core.read_tensor(os.fspath(path)))


class NodeArg:
    """A graph input or output, as ONNX Runtime's NodeArg.

    ``name``: the value's name. ``type``: ONNX Runtime's type string, e.g.
    'tensor(float)', 'tensor(int64)'. ``shape``: a list with an int per fixed
    dim, the symbol's name (str) for a named symbolic dim ('batch'), None for
    an anonymous unknown dim; None when the rank itself is unknown.
    """

    def __init__(self, info):
        self.name = info.name
        self.type = _TYPES.get(info.type, ("tensor(undefined)", None))[0]
        if info.has_shape:
            self.shape = [(symbol or None) if dim < 0 else dim for dim, symbol in zip(info.dims, info.symbols)]
        else:
            self.shape = None

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _as_input(value):
    """The array the runtime reads in place: the caller's own when it is
    C-contiguous in native byte order, else a copy that is."""
    array = np.asarray(value)
    if not array.dtype.isnative:
        return array.astype(array.dtype.newbyteorder("="), order="C")
    return array if array.flags.c_contiguous else array.copy(order="C")


class InferenceSession:
    """Loads a model and runs it; several Python threads may call run() at once.

    ``path``: an ONNX model (prepared and fused at load with ``strategy``, as
    ``onnx-fuse run`` does) or a plan file written by ``onnx-fuse MODEL -o model.plan``.

    Keyword options (include/onnxfuse/session.h, SessionOptions):
      ``threads``: OpenMP threads per run (0: all cores or OMP_NUM_THREADS);
      when 0 and ``sess_options`` has ``intra_op_num_threads``, that number.
      ``strategy``: 'pattern' (the default, as the CLI's), 'postdom' or 'greedy'.
      ``patterns``: extra pattern directories for strategy 'pattern'.
      ``input_shapes``: {input name: shape} pinned at load (a plan file of
      format version 2: only the shapes it was built at).
      ``shape_cache_size``: compiled schedules kept, one per input-shape
      signature, least recently used dropped first (default 8).
      ``max_samples_per_pass``: a model that computes each sample of its
      leading symbolic dim on its own runs a large batch as passes of at most
      this many samples (0, the default: chosen from the L3 cache size and
      at least as many as threads; -1: never), so that each step's tensors
      stay in the cache.
    ``sess_options``, ``providers`` and ``provider_options`` are accepted as
    ONNX Runtime's are, so that code written for it runs unchanged; onnx-fuse
    runs on the CPU whatever the providers say.

    Raises (onnxfuse.errors): IoError for a missing or unreadable file,
    InvalidModelError / UnsupportedError for a model it cannot load or compile,
    UsageError for a bad option.
    """

    def __init__(self, path, sess_options=None, providers=None, provider_options=None, *, threads=0,
                 strategy="pattern", patterns=(), input_shapes=None, shape_cache_size=8,
                 max_samples_per_pass=0):
        if not threads and sess_options is not None:
            threads = getattr(sess_options, "intra_op_num_threads", 0) or 0
        shapes = {name: [int(d) for d in shape] for name, shape in (input_shapes or {}).items()}
        self._session = _core.Session(os.fspath(path), int(threads), strategy,
                                      [os.fspath(p) for p in patterns], shapes, int(shape_cache_size),
                                      int(max_samples_per_pass))
        self._inputs = [NodeArg(v) for v in self._session.inputs()]
        self._outputs = [NodeArg(v) for v in self._session.outputs()]

    def get_inputs(self):
        """The graph inputs (initializers excluded), in model order, as NodeArgs."""
        return list(self._inputs)

    def get_outputs(self):
        """The graph outputs, in model order, as NodeArgs."""
        return list(self._outputs)

    def get_providers(self):
        return ["CPUExecutionProvider"]

    def run(self, output_names, input_feed, run_options=None):
        """Runs one inference and returns the outputs named in ``output_names``,
        in that order (all, in model order, when None or empty), as numpy
        arrays of each output's ONNX type.

        ``input_feed``: {input name: numpy array} naming every graph input once.
        An array's dtype must be the input's type (float32 for 'tensor(float)',
        int64 for 'tensor(int64)', bool for 'tensor(bool)', ...), its rank the
        input's and its dims the fixed ones; a symbolic dim takes any size, the
        same wherever its name recurs. Each new shape signature is compiled on
        first use and cached. The array's memory is read in place (a
        C-contiguous copy is made of an array that is not). ``run_options`` is
        accepted for ONNX Runtime's signature and ignored.

        Raises UsageError naming the input or output for an unknown or missing
        name, a wrong dtype, rank or dim; the compiler's errors for a new shape.
        """
        feed = {name: _as_input(value) for name, value in input_feed.items()}
        results = self._session.run(feed, list(output_names or []))
        return [_as_numpy(storage, onnx_type) for storage, onnx_type in results]

    def stats(self):
        """The shape cache's counters: compiles, cache_hits, evictions,
        cached_shapes, plan_instances; fused_once (the model was prepared
        and fused once, so a new shape costs inferring its shapes and
        compiling); and shapes, one dict per cached schedule, most recently
        used first: input_shapes, load_ms and compile_ms (milliseconds: the
        cost of that new shape), kernels and reorders (its compiled
        schedule's), samples_per_pass (0: one pass) and concurrent_passes;
        for runs whose shapes follow values (NonZero, NonMaxSuppression, an
        If decided at run time): staged_runs, stages_compiled, stage_hits
        and nodes_evaluated (session.h, SessionStats and CachedShape)."""
        return self._session.stats()
