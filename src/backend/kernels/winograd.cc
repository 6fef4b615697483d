#include "backend/kernels/winograd.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backend/kernels/gemm.h"
#include "backend/kernels/pointwise_avx2.h"

namespace onnxfuse::backend {

namespace {

constexpr int kTile = 4;  // input tile 4x4, output 2x2

// Tiles per block: the block's transformed inputs and products, 16 x tiles x
// (C + K) floats, stay in L2 (512 KB of Zen 3's 1 MB) from the transforms to
// the GEMMs; at least 36 (6 groups of the GEMM's 6 rows). But every block
// reads all the transformed weights, 16 x C x K floats: one block unless they
// are under a quarter of all the transformed inputs and products. At 1 thread,
// ResNet-18's 56x56x64 layers (784 tiles, blocks of 64) 2.12-2.16 -> 1.92-1.94
// ms; its 14x14x256 ones, in two blocks, would go 1.31 -> 1.42-1.47.
std::int64_t TileBlock(const WinogradShape& s) {
  constexpr std::int64_t kL2Floats = 512 * 1024 / 4;
  const std::int64_t tiles = s.Tiles(), c = s.channels, k = s.out_channels;
  if (4 * c * k > tiles * (c + k)) return tiles;
  return std::max<std::int64_t>(36, kL2Floats / (16 * (c + k)));
}

// B^T v for the four vectors of one column (or row) of a tile:
// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
__attribute__((target("avx2,fma"), always_inline)) inline void InputRows(const __m256* d, __m256* r) {
  r[0] = _mm256_sub_ps(d[0], d[2]);
  r[1] = _mm256_add_ps(d[1], d[2]);
  r[2] = _mm256_sub_ps(d[2], d[1]);
  r[3] = _mm256_sub_ps(d[1], d[3]);
}

// A^T v: A^T = [1 1 1 0; 0 1 -1 -1].
__attribute__((target("avx2,fma"), always_inline)) inline void OutputRows(const __m256* m, __m256* r) {
  r[0] = _mm256_add_ps(_mm256_add_ps(m[0], m[1]), m[2]);
  r[1] = _mm256_sub_ps(_mm256_sub_ps(m[1], m[2]), m[3]);
}

// V[e][t - first][c] = (B^T d B)[e] for tiles t in [first, first + tiles) and
// channels c: per e, the rows [tiles, C] of one GEMM.
// Rows [row_begin, row_end) of channel block cb.
__attribute__((target("avx2,fma"))) void TransformInputRows(const float* x, float* v, const WinogradShape& s,
                                                            std::int64_t first, std::int64_t tiles, std::int64_t cb,
                                                            std::int64_t row_begin, std::int64_t row_end) {
  const std::int64_t tiles_w = (s.width + 1) / 2;
  for (std::int64_t row = row_begin; row < row_end; ++row) {
    const std::int64_t t = first + row;
    const float* plane = x + cb * s.height * s.width * 8;
    const std::int64_t top = t / tiles_w * 2 - 1, left = t % tiles_w * 2 - 1;
    __m256 d[kTile][kTile];
    for (int i = 0; i < kTile; ++i)
      for (int j = 0; j < kTile; ++j) {
        const std::int64_t h = top + i, w = left + j;
        d[i][j] = h >= 0 && h < s.height && w >= 0 && w < s.width ? _mm256_loadu_ps(plane + (h * s.width + w) * 8)
                                                                   : _mm256_setzero_ps();
      }
    __m256 rows[kTile][kTile];  // B^T d: per column j
    for (int j = 0; j < kTile; ++j) {
      const __m256 col[kTile] = {d[0][j], d[1][j], d[2][j], d[3][j]};
      __m256 r[kTile];
      InputRows(col, r);
      for (int i = 0; i < kTile; ++i) rows[i][j] = r[i];
    }
    for (int i = 0; i < kTile; ++i) {  // (B^T d) B: per row i
      __m256 r[kTile];
      InputRows(rows[i], r);
      for (int j = 0; j < kTile; ++j)
        _mm256_storeu_ps(v + ((i * kTile + j) * tiles + row) * s.channels + cb * 8, r[j]);
    }
  }
}

// Rows of tiles per call of a transform's row function. The parallel loops
// stay outside the AVX2 functions: clang outlines an OpenMP region without
// its function's target attribute, and then rejects __m256 values in it.
constexpr std::int64_t kRowsPerCall = 8;

// body(i, j) for every i < n and j < m: over the threads, or on the calling
// thread alone inside a parallel region (WinogradConv3x3's loop over blocks).
// A nested region would run on one thread anyway, and libomp loses the team
// it allocates for one when the root is a std::thread.
template <class Body>
void ForEachPair(std::int64_t n, std::int64_t m, const Body& body) {
  if (omp_get_level() > 0) {
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t j = 0; j < m; ++j) body(i, j);
    return;
  }
#pragma omp parallel for schedule(static) collapse(2)
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t j = 0; j < m; ++j) body(i, j);
}

void TransformInput(const float* x, float* v, const WinogradShape& s, std::int64_t first, std::int64_t tiles) {
  const std::int64_t blocks = s.channels / 8, chunks = (tiles + kRowsPerCall - 1) / kRowsPerCall;
  ForEachPair(blocks, chunks, [&](std::int64_t cb, std::int64_t chunk) {
    TransformInputRows(x, v, s, first, tiles, cb, chunk * kRowsPerCall, std::min(tiles, (chunk + 1) * kRowsPerCall));
  });
}

// y = epilogue(bias + A^T m A) for tiles [first, first + tiles), m as
// TransformInput's v, and every 8-channel block of K.
// Rows [row_begin, row_end) of output channel block kb.
__attribute__((target("avx2,fma"))) void TransformOutputRows(const float* m, const float* bias, const float* addend,
                                                             float* y, const WinogradShape& s,
                                                             const std::vector<PointwiseOp>& epilogue,
                                                             std::int64_t first, std::int64_t tiles, std::int64_t kb,
                                                             std::int64_t row_begin, std::int64_t row_end) {
  const std::int64_t tiles_w = (s.width + 1) / 2;
  const bool add_first = !epilogue.empty() && epilogue[0].kind == PointwiseOp::Kind::kAdd;
  for (std::int64_t row = row_begin; row < row_end; ++row) {
    const std::int64_t t = first + row;
    __m256 rows[2][kTile];  // A^T m: per column j
    for (int j = 0; j < kTile; ++j) {
      __m256 col[kTile], r[2];
      for (int i = 0; i < kTile; ++i)
        col[i] = _mm256_loadu_ps(m + ((i * kTile + j) * tiles + row) * s.out_channels + kb * 8);
      OutputRows(col, r);
      rows[0][j] = r[0], rows[1][j] = r[1];
    }
    const __m256 b = bias ? _mm256_loadu_ps(bias + kb * 8) : _mm256_setzero_ps();
    const std::int64_t top = t / tiles_w * 2, left = t % tiles_w * 2;
    for (int i = 0; i < 2; ++i) {
      __m256 r[2];
      OutputRows(rows[i], r);
      for (int j = 0; j < 2; ++j) {
        const std::int64_t h = top + i, w = left + j;
        if (h >= s.height || w >= s.width) continue;
        const std::int64_t at = (kb * s.height + h) * s.width * 8 + w * 8;
        __m256 acc = _mm256_add_ps(r[j], b);
        if (add_first) acc = _mm256_add_ps(acc, _mm256_loadu_ps(addend + at));
        for (std::size_t o = add_first ? 1 : 0; o < epilogue.size(); ++o) acc = ApplyPointwise(acc, epilogue[o]);
        _mm256_storeu_ps(y + at, acc);
      }
    }
  }
}

void TransformOutput(const float* m, const float* bias, const float* addend, float* y, const WinogradShape& s,
                     const std::vector<PointwiseOp>& epilogue, std::int64_t first, std::int64_t tiles) {
  const std::int64_t blocks = s.out_channels / 8, chunks = (tiles + kRowsPerCall - 1) / kRowsPerCall;
  ForEachPair(blocks, chunks, [&](std::int64_t kb, std::int64_t chunk) {
    TransformOutputRows(m, bias, addend, y, s, epilogue, first, tiles, kb, chunk * kRowsPerCall,
                        std::min(tiles, (chunk + 1) * kRowsPerCall));
  });
}

// Floats of scratch for one block of `block` tiles: its 16 x block x C
// transformed inputs, then its 16 x block x K products.
std::int64_t BlockFloats(const WinogradShape& s, std::int64_t block) {
  return 16 * block * (s.channels + s.out_channels);
}

}  // namespace

std::vector<float> PackWinogradWeights(const float* w, std::int64_t out_channels, std::int64_t channels) {
  // G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
  static const double kG[kTile][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  std::vector<float> u(static_cast<std::size_t>(16 * channels * out_channels));
  for (std::int64_t k = 0; k < out_channels; ++k)
    for (std::int64_t c = 0; c < channels; ++c) {
      const float* g = w + (k * channels + c) * 9;
      double gg[kTile][3];  // G g
      for (int i = 0; i < kTile; ++i)
        for (int j = 0; j < 3; ++j) gg[i][j] = kG[i][0] * g[j] + kG[i][1] * g[3 + j] + kG[i][2] * g[6 + j];
      for (int i = 0; i < kTile; ++i)
        for (int j = 0; j < kTile; ++j) {  // (G g) G^T
          const double value = gg[i][0] * kG[j][0] + gg[i][1] * kG[j][1] + gg[i][2] * kG[j][2];
          const std::int64_t e = i * kTile + j, panel = k / kGemmPanel;
          const std::int64_t at = e * channels * out_channels + (panel * channels + c) * kGemmPanel + k % kGemmPanel;
          u[static_cast<std::size_t>(at)] = static_cast<float>(value);
        }
    }
  return u;
}

std::int64_t WinogradScratchBytes(const WinogradShape& s, int threads) {
  const std::int64_t block = TileBlock(s), blocks = (s.Tiles() + block - 1) / block;
  const std::int64_t in_flight = blocks >= threads ? threads : 1;
  return in_flight * BlockFloats(s, block) * static_cast<std::int64_t>(sizeof(float));
}

void WinogradConv3x3(const float* x, const float* u, const float* bias, const float* addend, float* y,
                     const WinogradShape& s, const std::vector<PointwiseOp>& epilogue, float* scratch,
                     std::int64_t scratch_bytes) {
  const std::int64_t tiles = s.Tiles(), block = TileBlock(s), blocks = (tiles + block - 1) / block;
  const std::int64_t block_floats = BlockFloats(s, block);
  const std::int64_t block_bytes = block_floats * static_cast<std::int64_t>(sizeof(float));
  if (scratch_bytes < block_bytes)
    throw std::logic_error("WinogradConv3x3: " + std::to_string(scratch_bytes) + " bytes of scratch, a block needs " +
                           std::to_string(block_bytes));
  // Enough blocks: each thread takes whole blocks (the transforms and GEMMs
  // inside run on it alone, OpenMP not nesting), as many threads as the
  // scratch holds blocks; else the blocks one after another, each spread over
  // the threads.
  const int threads = static_cast<int>(std::min<std::int64_t>(omp_get_max_threads(), scratch_bytes / block_bytes));
  const auto one_block = [&](std::int64_t b) {
    const std::int64_t first = tiles * b / blocks, count = tiles * (b + 1) / blocks - first;
    float* v = scratch + omp_get_thread_num() * block_floats;  // this thread's block
    float* m = v + 16 * block * s.channels;
    TransformInput(x, v, s, first, count);
    for (std::int64_t e = 0; e < 16; ++e)
      Gemm(v + e * count * s.channels, u + e * s.channels * s.out_channels, nullptr, nullptr,
           m + e * count * s.out_channels, {count, s.channels, s.out_channels}, {});
    TransformOutput(m, bias, addend, y, s, epilogue, first, count);
  };
  if (blocks < omp_get_max_threads() || threads < 2) {
    for (std::int64_t b = 0; b < blocks; ++b) one_block(b);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t b = 0; b < blocks; ++b) one_block(b);
}

}  // namespace onnxfuse::backend
