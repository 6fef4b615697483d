// GridSample on float32 (ONNX Operators.md, GridSample-16) for 2-D images,
// bilinear and nearest modes with every padding_mode: X [N, C, H, W] and
// grid [N, H_out, W_out, 2] (x then y, normalized to [-1, 1]) dense
// row-major, out [N, C, H_out, W_out]. Each grid point's taps and weights are
// computed once and applied to all C planes. Coordinates in float, as
// PyTorch's grid_sample and ONNX Runtime compute them. RAFT samples its
// correlation pyramid this way (48 GridSample nodes per inference).
#pragma once

#include <cstdint>

namespace onnxfuse::backend {

struct GridSampleShape {
  std::int64_t n = 0, c = 0, h = 0, w = 0;  ///< X's dims
  std::int64_t ho = 0, wo = 0;              ///< the grid's (and the output's) spatial dims
};

enum class GridSampleMode { kBilinear, kNearest };
enum class GridSamplePadding { kZeros, kBorder, kReflection };

/// out = GridSample(x, grid) as the spec defines it: align_corners maps -1 and
/// 1 to the corner pixels' centres, else to their outer edges; zeros reads 0
/// outside the image, border clamps the sample point, reflection reflects it
/// by the borders and then clamps; nearest rounds half to even.
void GridSample2d(const float* x, const float* grid, float* out, const GridSampleShape& shape, GridSampleMode mode,
                  GridSamplePadding padding, bool align_corners);

}  // namespace onnxfuse::backend
