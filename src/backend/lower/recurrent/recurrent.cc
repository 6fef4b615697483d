// LSTM, GRU and RNN as oneDNN RNN primitives (recurrent.h).
#include "backend/lower/recurrent/recurrent.h"

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/lower/recurrent/lstm.h"
#include "backend/lower/recurrent/recurrent_spec.h"
#include "backend/lower/recurrent/recurrent_weights.h"
#include "backend/lower/core/unsupported.h"
#include "common/omp_team.h"

namespace onnxfuse::backend {

namespace {

using dnnl::memory;

memory::desc Md(const Dims& dims, Tag tag) { return memory::desc(dims, DataType::f32, tag); }

// [a, b, c] plain seen with its first two dims swapped: dims [b, a, c].
memory::desc SwappedView(std::int64_t a, std::int64_t b, std::int64_t c) {
  return memory::desc({b, a, c}, DataType::f32, memory::dims{c, b * c, 1});
}

// A state input (initial_h, initial_c) as src_iter: ldnc [1, D, N, H]. A
// batch-first [N, D, H] is transposed: by a reorder step when an activation,
// on the host when a constant. nullopt when omitted.
std::optional<Arg> StateInput(Builder& b, const Node& node, const RecurrentSpec& s, ValueId v) {
  if (v == kNoValue) return std::nullopt;
  const std::int64_t d = s.sizes.directions, n = s.batch, h = s.sizes.hidden;
  const memory::desc ldnc = Md({1, d, n, h}, Tag::ldnc);
  if (b.IsAct(v)) {
    const Arg plain = b.UsePlain(v, node);
    if (!s.batch_first || n == 1) return Arg{plain.slot, ldnc, {}};  // batch 1: [1, D, H] is [D, 1, H]
    const memory::desc from = SwappedView(n, d, h);  // [N, D, H] seen as [D, N, H]
    const Act moved = b.EmitReorder(Arg{plain.slot, from, {}}, {d, n, h}, PlainDesc({d, n, h}), node.name);
    return Arg{moved.slot, ldnc, {}};
  }
  const Tensor& t = b.Const(v, node);
  std::vector<float> data(t.data);
  if (s.batch_first)
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < d; ++j)
        for (std::int64_t k = 0; k < h; ++k)
          data[static_cast<std::size_t>((j * n + i) * h + k)] = t.data[static_cast<std::size_t>((i * d + j) * h + k)];
  return Arg{-1, ldnc, b.HostMemory(ldnc, data.data())};
}

// Zeros in ldnc [1, D, N, H]: LSTM's other initial state when only one is given.
Arg ZeroState(Builder& b, const RecurrentSpec& s) {
  const memory::desc ldnc = Md({1, s.sizes.directions, s.batch, s.sizes.hidden}, Tag::ldnc);
  const std::vector<float> zeros(ldnc.get_size() / sizeof(float), 0.f);
  return Arg{-1, ldnc, b.HostMemory(ldnc, zeros.data())};
}

// ONNX operand `v` converted by `convert` (ONNX buffer -> oneDNN plain
// buffer in `plain`) and given to the primitive in `want`: at build time and
// prepacked when a constant, by a custom step and a reorder when an activation.
using Convert = std::function<void(const float* onnx, float* out)>;
Arg ConvertedOperand(Builder& b, NodeId id, ValueId v, const std::string& argument, const memory::desc& plain,
                     const memory::desc& want, Convert convert) {
  const Node& node = b.graph.node(id);
  if (!b.IsAct(v)) {
    const Tensor& t = b.Const(v, node);
    std::vector<float> buffer(plain.get_size() / sizeof(float));
    const memory m = b.PackedConstant(id, argument, want, [&] {
      convert(t.data.data(), buffer.data());
      return b.HostView(plain, buffer.data());
    });
    return Arg{-1, want, m};
  }
  const Arg src = b.UsePlain(v, node);
  const Act converted = b.NewAct(DimsOf(plain), plain);
  b.EmitCustom("rnn_" + argument, node.name, {{0, src}, {1, Arg{converted.slot, plain, {}}}},
               [convert = std::move(convert)](const std::vector<void*>& data) {
                 convert(static_cast<const float*>(data[0]), static_cast<float*>(data[1]));
               },
               plain, "onnxfuse:gate_order");
  if (want == plain) return Arg{converted.slot, plain, {}};
  const Act packed = b.EmitReorder(Arg{converted.slot, plain, {}}, DimsOf(plain), want, node.name);
  return Arg{packed.slot, want, {}};
}

// The primitive descriptor for the spec's cell.
dnnl::rnn_primitive_desc_base MakeRnnPd(const Builder& b, const Node& node, const RecurrentSpec& s,
                                        const std::vector<memory::desc>& md) {
  // md: src_layer, src_iter, src_iter_c, weights_layer, weights_iter, peephole, bias, dst_layer, dst_iter, dst_iter_c
  const auto prop = dnnl::prop_kind::forward_inference;
  const dnnl::primitive_attr attr = b.Attr();
  switch (s.cell) {
    case CellKind::kLstm:
      return MakePd<dnnl::lstm_forward::primitive_desc>(
          b, node, dnnl::lstm_forward::desc(prop, s.direction, md[0], md[1], md[2], md[3], md[4], md[5], md[6], md[7], md[8], md[9]),
          attr);
    case CellKind::kGru:
      return MakePd<dnnl::gru_forward::primitive_desc>(
          b, node, dnnl::gru_forward::desc(prop, s.direction, md[0], md[1], md[3], md[4], md[6], md[7], md[8]), attr);
    case CellKind::kLbrGru:
      return MakePd<dnnl::lbr_gru_forward::primitive_desc>(
          b, node, dnnl::lbr_gru_forward::desc(prop, s.direction, md[0], md[1], md[3], md[4], md[6], md[7], md[8]), attr);
    case CellKind::kRnn:
      return MakePd<dnnl::vanilla_rnn_forward::primitive_desc>(
          b, node,
          dnnl::vanilla_rnn_forward::desc(prop, s.activation, s.direction, md[0], md[1], md[3], md[4], md[6], md[7], md[8]),
          attr);
  }
  Unsupported(b, node, "unknown recurrent cell");
}

// The primitive as a custom step that runs it on one OpenMP thread. At batch
// 1 every time step is a matrix-vector product per gate, too small to share:
// with two threads the plan paid an OpenMP barrier per step and cell, and on
// a loaded machine (other processes on the second core) each barrier waited
// for a time slice: the 2-layer bidirectional LSTM took a median
// 12-18 ms against 1.1 ms on one thread (scripts/bench.sh --rnn, load 5-10).
void EmitOnOneThread(Builder& b, const dnnl::rnn_primitive_desc_base& pd, const std::string& kind,
                     const std::string& label, std::vector<std::pair<int, Arg>> args, const memory::desc& dst_md) {
  const memory::desc scratch = pd.scratchpad_desc();
  // Made on one thread as its descriptor was: the primitive partitions its
  // scratchpad by the thread count it is created with, and one made on two
  // threads wrote past the one-thread scratchpad the descriptor asked for
  // (AddressSanitizer: heap-buffer-overflow in the plan's scratchpad).
  dnnl::primitive made;
  {
    const OmpTeam one(1);
    made = dnnl::primitive(pd.get());
  }
  CustomKernel kernel = [prim = std::move(made), bound = args, engine = b.engine,
                         stream = dnnl::stream(b.engine), scratch](const std::vector<void*>& data) mutable {
    std::unordered_map<int, memory> memories;
    for (std::size_t i = 0; i < bound.size(); ++i) {
      const Arg& arg = bound[i].second;
      memories[bound[i].first] = arg.slot >= 0 ? memory(arg.md, engine, data[i]) : arg.fixed;
    }
    if (scratch.get_size() > 0) memories[DNNL_ARG_SCRATCHPAD] = memory(scratch, engine, data.back());
    const OmpTeam one(1);
    prim.execute(stream, memories);
    stream.wait();
  };
  // The step's arguments as bytes: the kernel reads them through the
  // primitive's own descriptors (`bound`), which may pad (gemm weights with a
  // padded leading dimension), and EmitCustom admits dense buffers only.
  for (auto& [key, arg] : args)
    if (arg.slot >= 0) arg.md = memory::desc({static_cast<memory::dim>(arg.md.get_size())}, DataType::u8, Tag::a);
  b.EmitCustom(kind, label, std::move(args), std::move(kernel), dst_md, pd.impl_info_str(),
               static_cast<std::int64_t>(scratch.get_size()));
}

const char* KindOf(CellKind cell) {
  switch (cell) {
    case CellKind::kLstm: return "lstm";
    case CellKind::kGru: return "gru";
    case CellKind::kLbrGru: return "lbr_gru";
    case CellKind::kRnn: return "rnn";
  }
  return "rnn";
}

}  // namespace

bool IsRecurrent(const Node& node) {
  return node.domain.empty() && (node.op_type == "LSTM" || node.op_type == "GRU" || node.op_type == "RNN");
}

void EmitRecurrent(Builder& b, NodeId id) {
  const Node& node = b.graph.node(id);
  const RecurrentSpec s = ReadRecurrent(b, node);
  if (EmitOwnLstm(b, id, s)) return;
  const bool lstm = s.cell == CellKind::kLstm;
  const std::int64_t t = s.seq_length, n = s.batch, d = s.sizes.directions, h = s.sizes.hidden, in = s.sizes.input;
  const std::int64_t gates = GateCount(s.cell), bias_gates = BiasGateCount(s.cell);
  const Tag sequence_tag = s.batch_first ? Tag::ntc : Tag::tnc;

  if (!b.IsAct(s.x)) b.ConstAsAct(s.x, node);
  const Arg x{b.UsePlain(s.x, node).slot, Md({t, n, in}, sequence_tag), {}};
  std::optional<Arg> h0 = StateInput(b, node, s, s.initial_h), c0 = StateInput(b, node, s, s.initial_c);
  if (lstm && h0.has_value() != c0.has_value()) (h0 ? c0 : h0) = ZeroState(b, s);  // oneDNN takes both or neither

  // Destinations: Y's slot itself when its bytes are dst_layer's, else a scratch slot.
  const memory::desc dst_layer_md = Md({t, n, d * h}, sequence_tag);
  const Dims y_dims = s.batch_first ? Dims{n, t, d, h} : Dims{t, d, n, h};
  // Batch 1: [T, 1, D*H] holds [T, D, 1, H] as it is.
  const bool y_direct = s.y != kNoValue && (d == 1 || n == 1 || s.batch_first);
  const Act dst_layer = y_direct ? b.NewAct(y_dims, PlainDesc(y_dims)) : b.NewAct({t, n, d * h}, dst_layer_md);
  const memory::desc ldnc = Md({1, d, n, h}, Tag::ldnc);
  const Dims state_dims = s.batch_first ? Dims{n, d, h} : Dims{d, n, h};
  const bool want_iter = s.y_h != kNoValue || s.y_c != kNoValue;  // LSTM: dst_iter and dst_iter_c together
  const bool states_direct = !s.batch_first || n == 1;  // [D, N, H] or, at batch 1, [1, D, H]: ldnc's bytes
  auto state_out = [&](ValueId v) {
    return v != kNoValue && states_direct ? b.NewAct(state_dims, PlainDesc(state_dims)) : b.NewAct({1, d, n, h}, ldnc);
  };
  const Act h_out = want_iter ? state_out(s.y_h) : Act{};  // slot -1: no dst_iter
  const Act c_out = want_iter && lstm ? state_out(s.y_c) : Act{};

  const memory::desc none;
  const memory::desc w_any = Md({1, d, in, gates, h}, Tag::any), r_any = Md({1, d, h, gates, h}, Tag::any);
  // Always a bias: oneDNN 2.6 finds no implementation for a zero bias md,
  // though its documentation allows one; an omitted B is zeros.
  const memory::desc bias_md = Md({1, d, bias_gates, h}, Tag::ldgo);
  const memory::desc peephole_md = s.p != kNoValue ? Md({1, d, 3, h}, Tag::ldgo) : none;
  // Batch 1 runs on one thread (EmitOnOneThread): the primitive is made for
  // one too, since brgemm's RNN splits its work by the thread count it was
  // created with and would open parallel regions of that many threads anyway.
  std::optional<OmpTeam> one_thread;
  if (n == 1) one_thread.emplace(1);
  const auto pd = MakeRnnPd(b, node, s,
                            {x.md, h0 ? h0->md : none, c0 ? c0->md : none, w_any, r_any, peephole_md, bias_md,
                             dst_layer_md, h_out.slot >= 0 ? ldnc : none, c_out.slot >= 0 ? ldnc : none});
  one_thread.reset();

  const CellKind cell = s.cell;
  const RecurrentSizes sizes = s.sizes;
  std::vector<std::pair<int, Arg>> args = {{DNNL_ARG_SRC_LAYER, x}};
  if (h0) args.push_back({DNNL_ARG_SRC_ITER, *h0});
  if (c0) args.push_back({DNNL_ARG_SRC_ITER_C, *c0});
  args.push_back({DNNL_ARG_WEIGHTS_LAYER,
                  ConvertedOperand(b, id, s.w, "weights_layer", Md({1, d, in, gates, h}, Tag::ldgoi),
                                   pd.weights_layer_desc(), [cell, sizes, in](const float* w, float* out) {
                                     WeightsToLdgoi(cell, sizes, in, w, out);
                                   })});
  args.push_back({DNNL_ARG_WEIGHTS_ITER,
                  ConvertedOperand(b, id, s.r, "weights_iter", Md({1, d, h, gates, h}, Tag::ldgoi),
                                   pd.weights_iter_desc(), [cell, sizes, h](const float* r, float* out) {
                                     WeightsToLdgoi(cell, sizes, h, r, out);
                                   })});
  if (s.p != kNoValue)
    args.push_back({DNNL_ARG_WEIGHTS_PEEPHOLE,
                    ConvertedOperand(b, id, s.p, "weights_peephole", peephole_md, pd.weights_peephole_desc(),
                                     [sizes](const float* p, float* out) { PeepholesToLdgo(sizes, p, out); })});
  if (s.b == kNoValue) {
    const std::vector<float> zeros(bias_md.get_size() / sizeof(float), 0.f);
    args.push_back({DNNL_ARG_BIAS, Arg{-1, bias_md, b.HostMemory(bias_md, zeros.data())}});
  } else {
    args.push_back({DNNL_ARG_BIAS, ConvertedOperand(b, id, s.b, "bias", bias_md, pd.bias_desc(),
                                                    [cell, sizes](const float* bias, float* out) {
                                                      BiasToLdgo(cell, sizes, bias, out);
                                                    })});
  }
  args.push_back({DNNL_ARG_DST_LAYER, Arg{dst_layer.slot, dst_layer_md, {}}});
  if (h_out.slot >= 0) args.push_back({DNNL_ARG_DST_ITER, Arg{h_out.slot, ldnc, {}}});
  if (c_out.slot >= 0) args.push_back({DNNL_ARG_DST_ITER_C, Arg{c_out.slot, ldnc, {}}});
  if (n == 1) EmitOnOneThread(b, pd, KindOf(s.cell), node.name, std::move(args), dst_layer_md);
  else b.Emit(pd, KindOf(s.cell), node.name, std::move(args), dst_layer_md);

  // Y: dst_layer [T, N, D*H] itself, or transposed into [T, D, N, H].
  if (y_direct) b.SetAct(s.y, dst_layer);
  else if (s.y != kNoValue) {
    const memory::desc from({t, d, n, h}, DataType::f32, memory::dims{n * d * h, h, d * h, 1});
    b.SetAct(s.y, b.EmitReorder(Arg{dst_layer.slot, from, {}}, y_dims, PlainDesc(y_dims), node.name));
  }
  // Y_h, Y_c: dst_iter itself, or transposed into batch-first [N, D, H].
  auto set_state = [&](ValueId v, const Act& out) {
    if (v == kNoValue || out.slot < 0) return;
    if (states_direct) return b.SetAct(v, out);
    b.SetAct(v, b.EmitReorder(Arg{out.slot, SwappedView(d, n, h), {}}, state_dims, PlainDesc(state_dims), node.name));
  };
  set_state(s.y_h, h_out);
  set_state(s.y_c, c_out);
}

}  // namespace onnxfuse::backend
