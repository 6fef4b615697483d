// What oneDNN 2.6.3 (Debian 12's libdnnl) computes wrongly, found by the
// differential tester (scripts/difftest.sh) and pinned by probes of the
// library alone (tests/unit/backend/lower/onednn_limits_test.cc), and the predicates the lowering
// consults to keep out of it. Each holds on AVX-512 and AVX2 alike; the
// reference and gemm implementations are right in every case. When a newer
// oneDNN fixes one, its probe fails and the predicate can go.
//
// 1. Two eltwise post-ops of one algorithm in one primitive: the second runs
//    with the first one's alpha and beta (jit_uni_eltwise_injector, shared by
//    the jit, brgconv and binary jit:uni kernels).
// 2. The binary jit:uni kernel run in place (destination = src0) on a
//    channel-blocked layout whose channels do not fill whole blocks (C = 17 in
//    nChw16c, C = 1 in nChw8c, C = 2 in caB8b, whatever the order of the
//    outer dims) applies its post-ops wrongly, eltwise and binary ones
//    alike. Without post-ops, or out of place, it is right. Out of place
//    too, its post-ops are wrong on a channel block other than its ISA's
//    vector of floats (nChw8c under AVX-512, nChw16c under AVX2), even a
//    full one; without post-ops it is right.
// 3. The binary jit:uni kernel with a per-channel binary post-op ([1,C,1,..])
//    on a destination [N,C,1,..] (N > 1, every spatial dim 1) broadcasts the
//    operand wrongly. Rank 2 ([N,C] with [1,C]) is right.
// 4. The binary jit:uni kernel run in place, reading a channel-blocked src1
//    whose channel dim is 1 and that broadcasts along another dim ([1,1,1,1],
//    [1,1,H,W], [1,1,1,W]), adds nothing right from it. A src1 of src0's
//    dims, and a per-channel [1,C,1,..] with C > 1, are right; so is any
//    src1 out of place. Such operands stay plain (oneDNN's ref:any, slower).
// 5. The binary jit:uni kernel given src0 and src1 of equal dims whose
//    strides differ only in dims of size 1 ([1,2,1,2] as {8,1,8,2} and as
//    {4,1,4,2}: the same elements, and equal to oneDNN's operator==) reads
//    src1 at other offsets. Builder::Use hands every reader the descriptor it
//    asked for, so src1 is described exactly as src0.
// 6. Without VNNI (AVX2, AVX-512 without VNNI), the int8 convolution adds
//    pairs of u8 x s8 products in 16 bits with saturation (vpmaddubsw):
//    weights of +-127 on inputs near 255 came out 1,203 units off. An s8
//    source runs as u8 + 128 with halved weights, which drops their last
//    bit: two quantization steps off. With VNNI the products are summed in
//    32 bits. backend/lower/fused/int8_conv.h keeps to u8 sources and
//    |w| <= 64 without it (pinned by tests/unit/backend/lower/fused/int8_conv_test.cc).
// 7. The gemm-based int8 convolution (x64:gemm_s8u8s32:jit, which oneDNN
//    picks with VNNI for a grouped 1x1 convolution, 8 input channels a group
//    and two outputs) applies a source zero point wrongly: 215 steps off
//    (tests/difftest/cases/, seed 1395). With a zero point of 0 it is right;
//    backend/lower/fused/int8_conv.h runs such a convolution in float.
// 8. The int8 matmul with its rows given at run time (gemm:jit, u8 x s8 with
//    a run-time source zero point) crashes executing binary post-ops (a
//    per-tensor Mul, a per-column Add): backend/lower/fused/int8_matmul.h
//    gives it eltwise post-ops only (pinned by
//    tests/unit/backend/lower/fused/int8_matmul_test.cc, "scale first").

#include <cstddef>
#include <string>

#include "backend/lower/core/chain.h"

namespace onnxfuse::backend {

/// Whether a primitive of `kind` (its step kind: "conv", "binary",
/// "eltwise", ...) with destination `dst_dims` computes post-ops [begin, end)
/// of `chain` right (limits 1 and 3). For a split chain's tail step, `begin`
/// is the step's own operation.
bool PostOpsRight(const Chain& chain, std::size_t begin, std::size_t end, const std::string& kind,
                  const Dims& dst_dims);

/// Whether a binary primitive with post-ops may write its result over src0
/// in layout `md` (limit 2): no channel padding.
bool BinaryPostOpsInPlaceRight(const dnnl::memory::desc& md);

/// Whether a binary primitive with post-ops computes them right on a
/// destination in layout `md` (limit 2): not channel-blocked, or blocked by
/// the effective ISA's vector of floats (16 with AVX-512, else 8).
bool BinaryPostOpsRight(const dnnl::memory::desc& md);

/// Whether a binary primitive on src0 of `src0_dims` reads a src1 of
/// `operand_dims` right in src0's channel-blocked layout (limit 4).
bool BlockedOperandRight(const Dims& operand_dims, const Dims& src0_dims);

/// Whether an int8 convolution of implementation `impl` computes a source
/// zero point `zero_point` right (limit 7): not the gemm-based one
/// (`x64:gemm_s8u8s32:jit`) with a zero point other than 0.
bool Int8ConvZeroPointRight(const std::string& impl, std::int64_t zero_point);

/// Whether oneDNN's effective ISA (capped by ONEDNN_MAX_CPU_ISA) has an int8
/// dot product summing in 32 bits (VNNI: AVX-VNNI, AVX-512 VNNI and later),
/// so that its int8 convolutions are exact for any weights and sources (limit 6).
bool HasInt8DotProduct();

}  // namespace onnxfuse::backend
