// A product of two run-time operands whose dims change from one compiled
// shape to the next (attention's Q K^T and P V over a sequence length, in a
// session serving many lengths) as one oneDNN matmul created with those dims
// given at run time (DNNL_RUNTIME_DIM_VAL, oneDNN 2.6 "Matrix Multiplication":
// run-time dims and strides). At every other shape oneDNN's primitive cache
// serves the same primitive; one made for the exact dims is compiled again
// (a brgemm kernel per length: on a Zen 4 at 1 thread, BERT's [4, S, 64] x
// [4, 64, S] took 0.28 ms to create at each S and 0.032 ms to run at S = 65,
// gemm:jit with run-time dims 0.006 ms to take from the cache and 0.042 ms
// to run; /tmp probe against oneDNN 2.6.3, 17 lengths from 9 to 121).
#pragma once

#include <optional>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "backend/lower/core/builder.h"
#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// `md` with the dims `varying` flags given at run time, and then every
/// stride but a unit one as well (they follow those dims); `md` itself when
/// no flag is set. `md` is a blocked descriptor without inner blocks.
dnnl::memory::desc WithRunTimeDims(const dnnl::memory::desc& md, const std::vector<bool>& varying);

/// The primitive and how many of the chain's post-ops it takes.
struct AnyShapeMatMul {
  dnnl::matmul::primitive_desc pd;
  std::size_t count = 0;
};

/// The matmul of run-time operands read as `a_md` [.., M, K] and `b_md`
/// [.., K, N] (one rank, no broadcast batch dim) into plain `out` [.., M, N],
/// with every dim that varies in any of them (Builder::VaryingDimsOf of
/// `a`, `w` and the anchor's output) given at run time, taking the chain's
/// leading eltwise post-ops as far as oneDNN computes them right
/// (RightPrefix; a binary operand of varying dims has no run-time form in
/// oneDNN 2.6). nullopt when no dim varies, when a batch dim
/// broadcasts, or when oneDNN has only its reference kernel for it.
std::optional<AnyShapeMatMul> AnyShapeMatMulPd(Builder& b, const Chain& chain, ValueId a, ValueId w,
                                               const dnnl::memory::desc& a_md, const dnnl::memory::desc& b_md,
                                               const Dims& out);

/// A product of a run-time A [.., M, K] (dims `ae`, a's expanded to the
/// product's rank) and constant weights W [.., K, N] (`we`, batch dims those
/// of `ae`) whose rows change between the shapes a session compiles, on a CPU
/// where our own GEMM is not the kernel of choice (AVX-512: HaveGemm()
/// false): one oneDNN matmul with the varying dims given at run time
/// (AnyShapeMatMulPd), W plain and shared by every shape's schedule
/// (Builder::PackedConstant). Our GEMM is AVX2 (256-bit): on a Zen 5, whose
/// AVX-512 units are 512 bits wide, it took a BERT-shaped encoder's call to
/// 5.3 ms at 77 tokens against 2.9 ms for the same products made for the
/// exact rows. Emits the chain and returns true, or false (nothing emitted)
/// when no dim varies, a batch dim differs between A and W, or oneDNN has
/// only a slow kernel.
bool EmitAnyRowsMatMul(Builder& b, const Chain& chain, ValueId a, ValueId w, const Dims& ae, const Dims& we,
                       const Dims& out);

}  // namespace onnxfuse::backend
