// onnxfuse._core: the pybind11 extension under the Python package onnxfuse
// (python/onnxfuse/). It exposes InferenceSession (include/onnxfuse/session.h),
// the fuse job (include/onnxfuse/fuse.h) and ReadTensorFile (src/ir/tensor_io.h)
// with plain types; the package
// gives them ONNX Runtime's shape (NodeArg, type strings, output dtypes) and
// the docstrings users read.
//
// Errors: an onnxfuse::Error becomes the exception onnxfuse.errors maps its
// kind to (UsageError, InvalidModelError, ...), raised with its message.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "onnxfuse/error.h"
#include "onnxfuse/fuse.h"
#include "ir/tensor_io.h"
#include "onnxfuse/session.h"
#include "onnxfuse/strategy.h"

namespace py = pybind11;
using onnxfuse::ElementType;

namespace {

// The ONNX element type of a numpy dtype, by kind and width: what the
// session's TensorView calls the same bytes. kUndefined for other dtypes.
ElementType ElementTypeOf(const py::dtype& dtype) {
  const auto size = dtype.itemsize();
  switch (dtype.kind()) {
    case 'f': return size == 2 ? ElementType::kFloat16 : size == 4 ? ElementType::kFloat
                     : size == 8 ? ElementType::kDouble : ElementType::kUndefined;
    case 'i': return size == 1 ? ElementType::kInt8 : size == 2 ? ElementType::kInt16
                     : size == 4 ? ElementType::kInt32 : size == 8 ? ElementType::kInt64 : ElementType::kUndefined;
    case 'u': return size == 1 ? ElementType::kUint8 : size == 2 ? ElementType::kUint16
                     : size == 4 ? ElementType::kUint32 : size == 8 ? ElementType::kUint64 : ElementType::kUndefined;
    case 'b': return ElementType::kBool;
    default: return ElementType::kUndefined;
  }
}

// A view over the array's memory. The package passes C-contiguous arrays of
// native byte order (it copies only arrays that are not); anything else here
// is refused rather than read wrongly.
onnxfuse::TensorView ViewOf(const std::string& name, const py::array& array) {
  const ElementType type = ElementTypeOf(array.dtype());
  if (type == ElementType::kUndefined)
    throw onnxfuse::Error(onnxfuse::ErrorKind::kUsage,
                          "input '" + name + "': numpy dtype " + py::str(array.dtype()).cast<std::string>() +
                              " has no ONNX element type");
  if (!(array.flags() & py::array::c_style) || array.dtype().byteorder() == '>')
    throw onnxfuse::Error(onnxfuse::ErrorKind::kUsage,
                          "input '" + name + "': the array is not C-contiguous in native byte order");
  return {type, std::vector<std::int64_t>(array.shape(), array.shape() + array.ndim()), array.data()};
}

// Moves `values` into a numpy array of shape `dims` without copying: the
// array's base is a capsule that owns the vector.
template <typename T>
py::array OwningArray(std::vector<T>&& values, const std::vector<std::int64_t>& dims) {
  auto* owner = new std::vector<T>(std::move(values));
  py::capsule free_owner(owner, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(std::vector<py::ssize_t>(dims.begin(), dims.end()), owner->data(), free_owner);
}

// Run's outputs as (storage array, ONNX element type): float32 for the float
// types, int64 for the integer and bool types (Tensor's storage); the package
// casts each to its ONNX type's numpy dtype.
py::list OutputsToPython(std::vector<onnxfuse::Tensor>&& outputs) {
  py::list result;
  for (auto& t : outputs) {
    py::array storage = t.elem_type == onnx::TensorProto::INT64 ? OwningArray(std::move(t.int_data), t.dims)
                                                                : OwningArray(std::move(t.data), t.dims);
    result.append(py::make_tuple(storage, t.DataType()));
  }
  return result;
}

py::list Run(onnxfuse::InferenceSession& session, const py::dict& feed, const std::vector<std::string>& names) {
  onnxfuse::NamedInputs inputs;
  for (const auto& [key, value] : feed) {
    const auto name = key.cast<std::string>();
    inputs.emplace(name, ViewOf(name, value.cast<py::array>()));
  }
  std::vector<onnxfuse::Tensor> outputs;
  {
    // The arrays stay referenced by `feed` (the caller's) while other Python
    // threads run; the session is safe to call from several at once.
    py::gil_scoped_release release;
    outputs = session.Run(inputs, names);
  }
  return OutputsToPython(std::move(outputs));
}

onnxfuse::InferenceSession MakeSession(const std::string& path, int threads, const std::string& strategy,
                                       const std::vector<std::string>& pattern_dirs,
                                       const std::map<std::string, std::vector<std::int64_t>>& input_shapes,
                                       int shape_cache_size, int max_samples_per_pass) {
  onnxfuse::SessionOptions options;
  options.threads = threads;
  options.strategy = onnxfuse::ParseStrategy(strategy);
  options.pattern_dirs = pattern_dirs;
  options.input_shapes = input_shapes;
  options.shape_cache_size = shape_cache_size;
  options.max_samples_per_pass = max_samples_per_pass;
  py::gil_scoped_release release;  // loading and compiling take a while
  return onnxfuse::InferenceSession(path, options);
}

// The CLI's fuse job (`onnx-fuse INPUT -o OUTPUT --strategy S [--report R]`)
// through the public Fuse (onnxfuse/fuse.h); returns the report as JSON text.
std::string Fuse(const std::string& input, const std::string& output, const std::string& strategy,
                 const std::string& report, const std::vector<std::string>& pattern_dirs,
                 const std::map<std::string, std::vector<std::int64_t>>& input_shapes) {
  onnxfuse::FuseOptions options;
  options.output_path = output;
  options.report_path = report;
  options.strategy = onnxfuse::ParseStrategy(strategy);
  options.pattern_dirs = pattern_dirs;
  options.input_shapes = input_shapes;
  py::gil_scoped_release release;
  return onnxfuse::Fuse(input, options).report_json;
}

void RaiseAsPython(const onnxfuse::Error& e) {
  py::object exception =
      py::module_::import("onnxfuse.errors").attr("_from_kind")(static_cast<int>(e.kind()), e.what());
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exception.ptr())), exception.ptr());
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "onnx-fuse's C++ runtime; use the package onnxfuse, not this module.";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const onnxfuse::Error& e) {
      RaiseAsPython(e);
    }
  });
  // The library logs through spdlog's default logger (stdout); a Python
  // program's stdout is its own, so warnings and errors go to stderr.
  if (!spdlog::get("onnxfuse")) {
    auto logger = spdlog::stderr_color_mt("onnxfuse");
    logger->set_pattern("onnxfuse %l: %v");
    logger->set_level(spdlog::level::warn);
    spdlog::set_default_logger(logger);
  }

  py::class_<onnxfuse::ValueInfo>(m, "ValueInfo")
      .def_readonly("name", &onnxfuse::ValueInfo::name)
      .def_property_readonly("type", [](const onnxfuse::ValueInfo& v) { return static_cast<int>(v.type); })
      .def_readonly("has_shape", &onnxfuse::ValueInfo::has_shape)
      .def_readonly("dims", &onnxfuse::ValueInfo::dims)
      .def_readonly("symbols", &onnxfuse::ValueInfo::symbols);

  py::class_<onnxfuse::InferenceSession>(m, "Session")
      .def(py::init(&MakeSession), py::arg("path"), py::arg("threads"), py::arg("strategy"),
           py::arg("pattern_dirs"), py::arg("input_shapes"), py::arg("shape_cache_size"),
           py::arg("max_samples_per_pass"))
      .def("inputs", &onnxfuse::InferenceSession::inputs)
      .def("outputs", &onnxfuse::InferenceSession::outputs)
      .def("run", &Run, py::arg("feed"), py::arg("output_names"))
      .def("stats", [](const onnxfuse::InferenceSession& s) {
        const onnxfuse::SessionStats st = s.stats();
        py::list shapes;  // most recently used first
        for (const onnxfuse::CachedShape& shape : st.shapes)
          shapes.append(py::dict(py::arg("input_shapes") = shape.input_shapes, py::arg("load_ms") = shape.load_ms,
                                 py::arg("compile_ms") = shape.compile_ms, py::arg("kernels") = shape.plan.kernels,
                                 py::arg("reorders") = shape.plan.reorders,
                                 py::arg("samples_per_pass") = shape.samples_per_pass,
                                 py::arg("concurrent_passes") = shape.concurrent_passes));
        return py::dict(py::arg("compiles") = st.compiles, py::arg("cache_hits") = st.cache_hits,
                        py::arg("evictions") = st.evictions, py::arg("cached_shapes") = st.cached_shapes,
                        py::arg("plan_instances") = st.plan_instances, py::arg("fused_once") = st.fused_once,
                        py::arg("staged_runs") = st.staged_runs, py::arg("stages_compiled") = st.stages_compiled,
                        py::arg("stage_hits") = st.stage_hits, py::arg("nodes_evaluated") = st.nodes_evaluated,
                        py::arg("shapes") = shapes);
      });

  m.def("read_tensor", [](const std::string& path) {
    std::vector<onnxfuse::Tensor> one;
    one.push_back(onnxfuse::ReadTensorFile(path));
    const py::list tensors = OutputsToPython(std::move(one));
    return py::object(tensors[0]);
  });
  m.def("fuse", &Fuse, py::arg("input"), py::arg("output"), py::arg("strategy"), py::arg("report"),
        py::arg("pattern_dirs"), py::arg("input_shapes"));
  m.attr("__version__") = ONNXFUSE_VERSION;
}
