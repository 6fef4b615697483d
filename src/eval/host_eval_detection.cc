// NonMaxSuppression on host tensors (ONNX Operators.md, NonMaxSuppression-11).
//
// Per batch and class: the boxes whose score is above score_threshold (when
// given), taken by descending score (equal scores: the lower box index
// first), each kept unless its intersection over union with a box already
// kept for that class exceeds iou_threshold, until max_output_boxes_per_class
// are kept. selected_indices lists [batch, class, box] by batch, then class,
// then the order of selection (ONNX leaves the order of equal scores open;
// this is the order of a stable sort). Box geometry and IoU are computed in float,
// as ONNX Runtime's CPU kernel does (onnxruntime/core/providers/cpu/
// object_detection/non_max_suppression.cc), so that a box at the threshold is
// decided the same way: corners are ordered first (any diagonal pair is a box),
// and a box of zero area or a pair with no overlap is never suppressed.
#include <algorithm>
#include <cmath>
#include <vector>

#include "eval/host_eval_ops.h"
#include "eval/host_tensor.h"
#include "ir/attributes.h"

namespace onnxfuse::eval {

namespace {

// The boxes of one batch as corners and areas, in float (ONNX Runtime's order
// of operations).
struct Boxes {
  std::vector<float> x_min, y_min, x_max, y_max, area;

  void Add(const float* d, bool center_point_box) {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    if (center_point_box) {  // [x_center, y_center, width, height]
      const float half_w = d[2] / 2.0f, half_h = d[3] / 2.0f;
      x0 = d[0] - half_w, x1 = d[0] + half_w, y0 = d[1] - half_h, y1 = d[1] + half_h;
    } else {  // [y1, x1, y2, x2], either diagonal
      x0 = std::min(d[1], d[3]), x1 = std::max(d[1], d[3]), y0 = std::min(d[0], d[2]), y1 = std::max(d[0], d[2]);
    }
    x_min.push_back(x0), y_min.push_back(y0), x_max.push_back(x1), y_max.push_back(y1);
    area.push_back((x1 - x0) * (y1 - y0));
  }
  void Copy(const Boxes& from, std::size_t i) {
    x_min.push_back(from.x_min[i]), y_min.push_back(from.y_min[i]), x_max.push_back(from.x_max[i]);
    y_max.push_back(from.y_max[i]), area.push_back(from.area[i]);
  }
  std::size_t size() const { return area.size(); }
};

// IoU(box i of `all`, box j of `kept`) > threshold, in ONNX Runtime's order
// of operations. No overlap, or a box of no area, never suppresses.
bool Overlaps(const Boxes& kept, std::size_t j, const Boxes& all, std::size_t i, float threshold) {
  const float w = std::min(kept.x_max[j], all.x_max[i]) - std::max(kept.x_min[j], all.x_min[i]);
  const float h = std::min(kept.y_max[j], all.y_max[i]) - std::max(kept.y_min[j], all.y_min[i]);
  const float intersection = w * h;
  const float union_area = kept.area[j] + all.area[i] - intersection;
  return w > 0.0f && h > 0.0f && intersection > 0.0f && kept.area[j] > 0.0f && all.area[i] > 0.0f &&
         union_area > 0.0f && intersection / union_area > threshold;
}

// The kept boxes that can suppress (finite, positive area) in buckets of
// their left edge, so that a candidate is tested only against those whose
// x-extent can meet its own: an exact pruning (a box that does not overlap
// never suppresses), and most of the work when a detector offsets each
// class's boxes apart (torchvision's batched_nms) and keeps thousands. The
// buckets span the x-range of all the boxes (`all`), each as wide as the
// widest box (or wider, for at most kBuckets), so a candidate looks into
// the buckets from its left edge minus that width to its right edge.
class KeptByX {
 public:
  explicit KeptByX(const Boxes& all) {
    double lo = 0, hi = 0, widest = 0;
    bool any = false;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const double x0 = all.x_min[i], x1 = all.x_max[i];
      if (!std::isfinite(x0) || !std::isfinite(x1)) continue;
      lo = any ? std::min(lo, x0) : x0, hi = any ? std::max(hi, x1) : x1, any = true;
      widest = std::max(widest, x1 - x0);
    }
    base_ = lo;
    cell_ = std::max({widest, (hi - lo) / kBuckets, 1e-30});
    buckets_.resize(static_cast<std::size_t>(std::min((hi - lo) / cell_, double{kBuckets})) + 1);
  }
  void Add(const Boxes& kept, std::size_t j) {
    const double width = static_cast<double>(kept.x_max[j]) - kept.x_min[j];
    if (!(kept.area[j] > 0.0f) || !std::isfinite(kept.area[j]) || !std::isfinite(width)) return;
    buckets_[Bucket(kept.x_min[j])].push_back(j);
  }
  bool Suppressed(const Boxes& kept, const Boxes& all, std::size_t i, float threshold) const {
    const double x0 = all.x_min[i], x1 = all.x_max[i];
    if (!(x1 > x0) || !std::isfinite(x0) || !std::isfinite(x1)) return false;  // no area can intersect
    // A kept box (no wider than cell_) meets [x0, x1) only if its left edge is in (x0 - cell_, x1).
    for (std::size_t b = Bucket(x0 - cell_), last = Bucket(x1); b <= last; ++b)
      for (std::size_t j : buckets_[b])
        if (Overlaps(kept, j, all, i, threshold)) return true;
    return false;
  }

 private:
  static constexpr int kBuckets = 4096;
  std::size_t Bucket(double x) const {
    const double at = std::floor((x - base_) / cell_);
    return static_cast<std::size_t>(std::clamp(at, 0.0, static_cast<double>(buckets_.size() - 1)));
  }
  double base_ = 0, cell_ = 1;
  std::vector<std::vector<std::size_t>> buckets_;
};

Tensor NonMaxSuppression(const Node& node, const HostInputs& in) {
  const Tensor& boxes = NeedInput(node, in, 0);
  const Tensor& scores = NeedInput(node, in, 1);
  if (IsInt64(boxes) || IsInt64(scores)) InvalidNode(node, "boxes and scores must be float tensors");
  if (boxes.dims.size() != 3 || boxes.dims[2] != 4) InvalidNode(node, "boxes must be [batches, boxes, 4]");
  if (scores.dims.size() != 3 || scores.dims[0] != boxes.dims[0] || scores.dims[2] != boxes.dims[1])
    InvalidNode(node, "scores must be [batches, classes, boxes] for boxes of [batches, boxes, 4]");
  auto present = [&](std::size_t i) { return in.size() > i && in[i] && in[i]->NumElements() > 0; };
  // Read as an integer: exporters pass INT64_MAX for "no limit", beyond a double's exact range.
  const std::int64_t max_per_class = present(2) ? AsInts(*in[2]).at(0) : 0;
  const float iou_threshold = present(3) ? static_cast<float>(ElementAt(*in[3], 0)) : 0.0f;
  const bool has_score_threshold = present(4);
  const float score_threshold = has_score_threshold ? static_cast<float>(ElementAt(*in[4], 0)) : 0.0f;
  if (!(iou_threshold >= 0.0f && iou_threshold <= 1.0f)) InvalidNode(node, "iou_threshold must be in [0, 1]");
  const bool center_point_box = AttrInt(node, "center_point_box", 0) != 0;

  const std::int64_t batches = boxes.dims[0], classes = scores.dims[1], spatial = boxes.dims[1];
  std::vector<std::int64_t> selected;  // [batch, class, box] triples
  for (std::int64_t b = 0; b < batches && max_per_class > 0; ++b) {
    Boxes all;
    for (std::int64_t i = 0; i < spatial; ++i) all.Add(boxes.data.data() + (b * spatial + i) * 4, center_point_box);
    for (std::int64_t c = 0; c < classes; ++c) {
      const float* s = scores.data.data() + (b * classes + c) * spatial;
      std::vector<std::int64_t> order;
      for (std::int64_t i = 0; i < spatial; ++i)
        if (!has_score_threshold || s[i] > score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) { return s[x] > s[y]; });
      Boxes kept;
      KeptByX index(all);
      for (std::int64_t i : order) {
        if (static_cast<std::int64_t>(kept.size()) >= max_per_class) break;
        if (index.Suppressed(kept, all, static_cast<std::size_t>(i), iou_threshold)) continue;
        kept.Copy(all, static_cast<std::size_t>(i));
        index.Add(kept, kept.size() - 1);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  Tensor out;
  out.elem_type = out.data_type = onnx::TensorProto::INT64;
  out.dims = {static_cast<std::int64_t>(selected.size() / 3), 3};
  out.int_data = std::move(selected);
  return out;
}

}  // namespace

HostOutputs EvalDetectionOp(const Node& node, const HostInputs& in, std::int64_t /*opset*/) {
  if (node.op_type == "NonMaxSuppression") return One(NonMaxSuppression(node, in));
  return std::nullopt;
}

}  // namespace onnxfuse::eval
