// Helpers for tests: small models written inline in ONNX text syntax.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnxfuse/error.h"
#include "fuse/fusion_plan.h"
#include "ir/graph.h"
#include "load/loader.h"
#include "ir/tensor_io.h"

namespace onnxfuse::test {

/// The seed's ResNet basic block with BN weights as initializers: the first
/// Relu's output is read by the main path and the residual Add (1x2x8x8).
extern const char* const kBasicBlock;

/// A ResNet block with a strided downsample branch: conv+bn+relu+conv+bn and
/// conv+bn joining at an Add, then Relu (1x8x8x8 -> 1x16x4x4; weights are inputs).
extern const char* const kDownsampleBlock;

/// TVM's diamond (its fusion paper's Figure): Conv feeding Add->Relu and Mul,
/// which meet at a final Add (1x3x16x16 -> 1x3x14x14; c, a, r, m, y).
extern const char* const kTvmDiamond;

/// Relu whose output feeds Exp and Sigmoid, each a graph output: branches that never meet.
extern const char* const kTwoBranchesToOutputs;

/// Four Gelu (erf) decompositions on float[1,8]: y of x; yw of w with every
/// commutative pair swapped; yu of u with 0.25 for the half; yv of v, whose
/// x / sqrt 2 (qv) is also a graph output.
extern const char* const kGeluVariants;

/// Parses a model in ONNX text syntax (onnx/defs/parser.h). Fails the test on a parse error.
onnx::ModelProto ParseModel(const std::string& text);

/// Parses and loads a model through the real loader (sort, checks, shape inference).
Graph GraphFromText(const std::string& text, const LoadOptions& options = {});

/// The ONNX text of x -> ops[0] -> ops[1] -> ... -> y: a chain of 1 to 23
/// one-input ops on float[dims] (`dims` as the text writes them: "1,4"), at
/// `opset` of the default domain and `ir_version`. Node i writes the value
/// named by the i-th letter ("a", "b", ...), the last one "y"; the values of
/// the nodes listed in `also_outputs` are graph outputs too, declared before
/// y. The loader names the nodes <Op>_<i>. Throws std::runtime_error for an
/// empty or longer chain.
std::string ChainText(const std::vector<std::string>& ops, const std::string& dims = "4", int opset = 13,
                      int ir_version = 8, const std::vector<std::size_t>& also_outputs = {});

/// torch's F.layer_norm over the last axis as exported at opset 13, as lines
/// of a graph body in ONNX text: out = (in - mean) / sqrt(var + 1e-5) * gamma
/// + beta (nodes in this order: ReduceMean, Sub, Constant, Pow, ReduceMean,
/// Constant, Add, Sqrt, Div, Mul, Add). It names its values m, d, two, p, v,
/// eps, ve, s, n and a.
std::string LayerNormText(const std::string& in, const std::string& gamma, const std::string& beta,
                          const std::string& out);

/// torch's nn.GELU in its erf form, as lines of a graph body in ONNX text:
/// out = in * (Erf(in / sqrt 2) + 1) * half, the three numbers Constant
/// nodes (nodes in this order: Constant, Div, Erf, Constant, Add, Mul,
/// Constant, Mul). It names its values k, d, e, one, a, m and half, each
/// after `prefix`, so that a model can keep its own names apart.
std::string GeluText(const std::string& in, const std::string& out, const std::string& half = "0.5",
                     const std::string& prefix = "");

/// x -> ops[0] -> ops[1] -> ... : a chain of one-input ops on float [1,4],
/// built as a ModelProto directly (the text parser is slow at 200k nodes and
/// cannot spell every name) and loaded through the real loader. The input is
/// named `input`, node i writes "v<i+1>" and is named names[i] (past the end
/// of `names`, the loader names it).
Graph ChainGraph(const std::string& input, const std::vector<std::string>& ops,
                 const std::vector<std::string>& names = {});

/// The node named `name`; fails the test when absent.
NodeId NodeNamed(const Graph& graph, const std::string& name);

/// A plan (strategy and rules "test") with the nodes named in each inner list
/// as one group, in that order of labels; every other node alone.
FusionPlan PlanGrouping(const Graph& graph, const std::vector<std::vector<std::string>>& groups);

/// The kind and message of the onnxfuse::Error that `f` throws; throws
/// std::runtime_error (failing the test) when it throws none.
struct ThrownError {
  ErrorKind kind;
  std::string message;
};
ThrownError ErrorOf(const std::function<void()>& f);

/// A tensor named `name` of `dims` holding `data`.
Tensor TensorOf(std::string name, std::vector<std::int64_t> dims, std::vector<float> data);
/// An INT64 tensor named `name` of `dims` holding `values` (Tensor::int_data).
Tensor IntTensorOf(std::string name, std::vector<std::int64_t> dims, std::vector<std::int64_t> values);

/// `x` [N, C, H, W] stored channels-last, as the graph input [N, H, W, C]
/// named `name` that a Transpose (perm [0, 3, 1, 2]) makes x again: the
/// layout a convolution's output has.
Tensor ChannelsLast(const Tensor& x, const std::string& name);

/// The 1x1 convolution of NCHW x by w [out, C] (no bias), in double:
/// y[n, o, p] = sum_i w[o, i] x[n, i, p], p a pixel; y [N, out, H, W] flat.
std::vector<double> NaivePointwise(const Tensor& x, const std::vector<float>& w, std::int64_t out);

/// The convolution of one NCHW image x by w [out_channels, C, k, k] (no
/// bias), square stride and pads, in double: y [out_channels, oh, ow] flat.
std::vector<double> NaiveConv2d(const Tensor& x, const std::vector<float>& w, std::int64_t out_channels,
                                std::int64_t k, std::int64_t stride, std::int64_t pad);

/// Layer normalization of x over its last axis (of gamma.size() elements), in
/// double: (x - mean) / sqrt(var + epsilon) * gamma[c] + beta[c], the
/// variance the biased one (ONNX LayerNormalization); x's layout, flat.
std::vector<double> LayerNormLastAxis(const Tensor& x, const std::vector<double>& gamma,
                                      const std::vector<double>& beta, double epsilon);

/// A tensor named `name` of `dims` whose element i (row-major) is f(i).
Tensor TensorFrom(std::vector<std::int64_t> dims, const std::function<float(std::int64_t)>& f, std::string name = "x");

/// A deterministic wave of small values in [-0.625, 0.715] (steps of 1/8,
/// period 44): test data that is neither constant nor symmetric.
float Wave(std::int64_t i);

/// n values scale * Wave(3 i + salt): weights and biases, `salt` telling
/// tensors of one test apart.
std::vector<float> Floats(std::size_t n, float scale, int salt);

/// The 1x1 convolutions of x [n, cin, h, w] by w[i] [couts[i], cin],
/// concatenated along channels, in double: [n, sum couts, h, w] flat.
std::vector<double> ConcatenatedPointwise(const Tensor& x, const std::vector<std::vector<float>>& w,
                                          const std::vector<std::int64_t>& couts);

/// "1,64,7,7": `dims` as the dims of a tensor type in ONNX text syntax.
std::string DimsText(const std::vector<std::int64_t>& dims);

/// "{a, b, c}": `values` as an initializer's data in ONNX text syntax, each
/// with 9 significant digits (a float exactly).
std::string FloatList(const std::vector<float>& values);

}  // namespace onnxfuse::test
