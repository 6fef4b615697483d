#include "backend/lower/recurrent/lstm.h"

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/kernels/lstm.h"
#include "backend/lower/core/operands.h"
#include "backend/lower/core/unsupported.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;

// A [D, N, H] initial state: its slot when computed, a copy when a constant; nullopt when omitted.
std::optional<Arg> StateArg(Builder& b, const Node& node, ValueId v, const Dims& dims) {
  if (v == kNoValue) return std::nullopt;
  if (b.IsAct(v)) return b.UsePlain(v, node);
  const memory::desc md = PlainDesc(dims);
  return Arg{-1, md, b.HostMemory(md, b.Const(v, node).data.data())};
}

}  // namespace

bool EmitOwnLstm(Builder& b, NodeId id, const RecurrentSpec& s) {
  if (!b.fuse || s.cell != CellKind::kLstm || s.batch_first) return false;
  const Node& node = b.graph.node(id);
  for (std::size_t input : {1, 2, 3, 7})  // W, R, B, P
    if (IsRuntimeInput(b, node, input)) return false;
  const std::int64_t t = s.seq_length, n = s.batch, d = s.sizes.directions, h = s.sizes.hidden, in = s.sizes.input;
  const std::int64_t gates = 4 * h, cols = d * gates;

  // The input projection: [T*N, I] x [I, D*4H] + (Wb + Rb), one matmul.
  if (!b.IsAct(s.x)) b.ConstAsAct(s.x, node);
  const Arg x{b.UsePlain(s.x, node).slot, PlainDesc({t * n, in}), {}};
  std::vector<double> bias(static_cast<std::size_t>(cols), 0.0);
  if (s.b != kNoValue) {  // ONNX B [D, 8H]: Wb then Rb
    const std::vector<float>& onnx = b.Const(s.b, node).data;
    for (std::int64_t j = 0; j < d; ++j)
      for (std::int64_t k = 0; k < gates; ++k)
        bias[static_cast<std::size_t>(j * gates + k)] = double{onnx[static_cast<std::size_t>(j * 2 * gates + k)]} +
                                                        onnx[static_cast<std::size_t>(j * 2 * gates + gates + k)];
  }
  // Constant `v` prepacked into `want` from its ONNX bytes seen as `view`
  // (swapped strides: a transposed operand, as matmul.cc reads transB).
  auto packed = [&](ValueId v, const std::string& argument, const memory::desc& view, const memory::desc& want) {
    const memory m =
        b.PackedConstant(id, argument, want, [&] { return b.HostView(view, b.Const(v, node).data.data()); });
    return Arg{-1, m.get_desc(), m};
  };
  const memory::desc projection_md = PlainDesc({t * n, cols});
  using MatMulPd = dnnl::matmul::primitive_desc;
  const auto pd = MakePd<MatMulPd>(
      b, node,
      dnnl::matmul::desc(x.md, memory::desc({in, cols}, DataType::f32, Tag::any), PlainDesc({1, cols}), projection_md),
      b.Attr());
  const memory bias_mem = BiasMemory(b, id, bias, /*as_row=*/true);
  const Act projection = b.NewAct({t * n, cols}, projection_md);
  // W [D*4H, I] read as W^T [I, D*4H]: column j*4H + k is row k of direction j.
  b.Emit(pd, "matmul", node.name + " (input projection)",
         {{DNNL_ARG_SRC, x},
          {DNNL_ARG_WEIGHTS,
           packed(s.w, "weights_projection", memory::desc({in, cols}, DataType::f32, Dims{1, in}), pd.weights_desc())},
          {DNNL_ARG_BIAS, Arg{-1, bias_mem.get_desc(), bias_mem}},
          {DNNL_ARG_DST, Arg{projection.slot, projection_md, {}}}},
         projection_md);

  // The recurrence. Arguments: the projection, R^T, then those present of
  // peephole, h0, c0, Y, Y_h, Y_c (their positions in `at`), the scratchpad last.
  // R [D, 4H, H] read as R^T [D, H, 4H] and packed plain.
  const memory::desc rt_view({d, h, gates}, DataType::f32, Dims{gates * h, 1, h});
  std::vector<std::pair<int, Arg>> args = {
      {0, Arg{projection.slot, projection_md, {}}},
      {1, packed(s.r, "weights_iter_transposed", rt_view, PlainDesc({d, h, gates}))}};
  const Dims y_dims = {t, d, n, h}, state_dims = {d, n, h};
  const std::optional<Arg> h0 = StateArg(b, node, s.initial_h, state_dims),
                           c0 = StateArg(b, node, s.initial_c, state_dims);
  const Act y = s.y != kNoValue ? b.NewAct(y_dims, PlainDesc(y_dims)) : Act{};
  const Act y_h = s.y_h != kNoValue ? b.NewAct(state_dims, PlainDesc(state_dims)) : Act{};
  const Act y_c = s.y_c != kNoValue ? b.NewAct(state_dims, PlainDesc(state_dims)) : Act{};
  // Position in `args` of: peephole, h0, c0, y, y_h, y_c (-1: absent).
  std::array<int, 6> at{};
  auto add = [&](int position, std::optional<Arg> arg) {
    at[static_cast<std::size_t>(position)] = arg ? static_cast<int>(args.size()) : -1;
    if (arg) args.emplace_back(static_cast<int>(args.size()), *arg);
  };
  const memory::desc p_md = PlainDesc({d, 3 * h});
  add(0, s.p != kNoValue ? std::optional<Arg>(packed(s.p, "weights_peephole_plain", p_md, p_md)) : std::nullopt);
  add(1, h0);
  add(2, c0);
  auto out = [](const Act& a) { return a.slot >= 0 ? std::optional<Arg>(Arg{a.slot, a.md, {}}) : std::nullopt; };
  add(3, out(y));
  add(4, out(y_h));
  add(5, out(y_c));
  LstmShape shape;
  shape.steps = t;
  shape.batch = n;
  shape.directions = d;
  shape.hidden = h;
  shape.reverse = s.direction == dnnl::rnn_direction::unidirectional_right2left;
  CustomKernel kernel = [shape, at](const std::vector<void*>& data) {
    auto ptr = [&](std::size_t k) {
      return at[k] >= 0 ? static_cast<float*>(data[static_cast<std::size_t>(at[k])]) : nullptr;
    };
    LstmRecurrence(shape, static_cast<const float*>(data[0]), static_cast<const float*>(data[1]), ptr(0), ptr(1),
                   ptr(2), ptr(3), ptr(4), ptr(5), static_cast<float*>(data.back()));
  };
  const memory::desc dst_md = y.slot >= 0 ? y.md : PlainDesc(state_dims);
  b.EmitCustom("lstm", node.name, std::move(args), std::move(kernel), dst_md, "onnxfuse:lstm",
               LstmScratchFloats(shape) * static_cast<std::int64_t>(sizeof(float)));
  if (y.slot >= 0) b.SetAct(s.y, y);
  if (y_h.slot >= 0) b.SetAct(s.y_h, y_h);
  if (y_c.slot >= 0) b.SetAct(s.y_c, y_c);
  return true;
}

}  // namespace onnxfuse::backend
