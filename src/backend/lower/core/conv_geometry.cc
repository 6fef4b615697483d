#include "backend/lower/core/conv_geometry.h"

#include <algorithm>
#include <string>

#include "backend/lower/core/unsupported.h"
#include "ir/attributes.h"
#include "ir/node_label.h"
#include "onnxfuse/error.h"

namespace onnxfuse::backend {

ConvGeometry ConvGeometryOf(const Builder& b, const Node& node, const Dims& x, const Dims& w) {
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size()) Unsupported(b, node, "only 1-D to 3-D convolutions");
  const std::size_t spatial = w.size() - 2;
  const std::int64_t group = AttrInt(node, "group", 1), out_channels = w[0];
  if (x[1] != w[1] * group || out_channels % group != 0)
    throw Error(ErrorKind::kInvalidModel, NodeInFile(b.graph, node) + ": channels do not match");
  ConvGeometry g;
  Dims kernel(w.begin() + 2, w.end());
  g.strides = AttrInts(node, "strides", Dims(spatial, 1));
  Dims dilations = AttrInts(node, "dilations", Dims(spatial, 1));
  Dims pads = AttrInts(node, "pads", Dims(2 * spatial, 0));
  std::string auto_pad = AttrString(node, "auto_pad", "NOTSET");
  g.pl.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(spatial));
  g.pr.assign(pads.begin() + static_cast<std::ptrdiff_t>(spatial), pads.end());
  g.out = {x[0], out_channels};
  for (std::size_t i = 0; i < spatial; ++i) {
    std::int64_t in = x[i + 2], extent = (kernel[i] - 1) * dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      std::int64_t o = (in + g.strides[i] - 1) / g.strides[i];
      std::int64_t total = std::max<std::int64_t>(0, (o - 1) * g.strides[i] + extent - in);
      g.pl[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pr[i] = total - g.pl[i];
    } else if (auto_pad == "VALID") {
      g.pl[i] = g.pr[i] = 0;
    }
    g.out.push_back((in + g.pl[i] + g.pr[i] - extent) / g.strides[i] + 1);
    g.dil.push_back(dilations[i] - 1);
  }
  return g;
}

}  // namespace onnxfuse::backend
