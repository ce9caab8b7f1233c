// Detection heads and ops whose output shape depends on the data:
// NonMaxSuppression, RoiAlign, NonZero, Unique.
//
// NonMaxSuppression and RoiAlign follow onnxruntime's CPU kernels exactly
// (selection order, IoU rule, sampling grid), since ONNX's test data was
// made with them. The data-dependent outputs (NMS's selected indices,
// NonZero, Unique) are sized in Compute; their element counts are bounded
// by the inputs', so no run-time value can make them allocate without
// bound.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <queue>
#include <string>
#include <type_traits>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

// ------------------------------------------------------ NonMaxSuppression

// One box as its corners, ordered (min, max) on each axis.
// A box as corners, with its area computed once: NMS compares each
// candidate with every box kept so far, which is most of its time when
// thousands of boxes survive (SSD's batched NMS over 90 classes).
struct Corners {
  double y_min, x_min, y_max, x_max, area;
};

Corners ToCorners(const double* b, bool center_point_box) {
  Corners c;
  if (center_point_box) {
    // [x_center, y_center, width, height].
    const double hw = b[2] / 2, hh = b[3] / 2;
    c = {b[1] - hh, b[0] - hw, b[1] + hh, b[0] + hw, 0};
  } else {
    // [y1, x1, y2, x2]: any diagonal pair of corners.
    c = {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]),
         std::max(b[1], b[3]), 0};
  }
  c.area = (c.y_max - c.y_min) * (c.x_max - c.x_min);
  return c;
}

// True when `a` and `b` overlap by more than `threshold` (IoU), as
// onnxruntime decides it: empty boxes and empty intersections never
// suppress.
bool SuppressedByIou(const Corners& a, const Corners& b, double threshold) {
  const double ix = std::min(a.x_max, b.x_max) - std::max(a.x_min, b.x_min);
  if (!(ix > 0)) return false;
  const double iy = std::min(a.y_max, b.y_max) - std::max(a.y_min, b.y_min);
  if (!(iy > 0)) return false;
  const double inter = ix * iy;
  if (a.area <= 0 || b.area <= 0) return false;
  const double uni = a.area + b.area - inter;
  if (uni <= 0) return false;
  return inter / uni > threshold;
}

class NonMaxSuppressionKernel final : public KernelBase {
 public:
  NonMaxSuppressionKernel(const KernelSpec& spec, DType dtype,
                          bool center_point_box)
      : KernelBase(spec), dtype_(dtype), center_(center_point_box) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* boxes,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* scores,
                           GetInput(ctx, 1, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(
        std::vector<int64_t> max_out,
        GetOptionalInputInt64s(ctx, 2, DType::kInt64, {0},
                               "max_output_boxes_per_class", node()));
    GLINT_ASSIGN_OR_RETURN(double iou,
                           OptionalScalar(ctx, 3, 0.0, "iou_threshold"));
    GLINT_ASSIGN_OR_RETURN(const TensorView* st,
                           GetOptionalInput(ctx, 4, dtype_, node()));
    double score_threshold = 0;
    const bool has_score_threshold = st != nullptr;
    if (has_score_threshold) {
      GLINT_ASSIGN_OR_RETURN(score_threshold,
                             OptionalScalar(ctx, 4, 0.0, "score_threshold"));
    }
    if (max_out.size() != 1) {
      return InvalidArgument(node(),
                             "max_output_boxes_per_class must hold "
                             "one value, not ",
                             max_out.size());
    }
    if (!(iou >= 0 && iou <= 1)) {
      return InvalidArgument(node(), "iou_threshold ", iou,
                             " is outside [0, 1]");
    }
    const Shape& bs = boxes->shape;
    const Shape& ss = scores->shape;
    if (bs.rank() != 3 || bs.dim(2) != 4 || ss.rank() != 3 ||
        ss.dim(0) != bs.dim(0) || ss.dim(2) != bs.dim(1)) {
      return InvalidArgument(node(), "boxes ", bs.ToString(), " and scores ",
                             ss.ToString(), " must be [B, N, 4] and [B, C, N]");
    }
    const int64_t batches = bs.dim(0), num_boxes = bs.dim(1),
                  classes = ss.dim(1);
    const int64_t per_class =
        std::min(std::max<int64_t>(max_out[0], 0), num_boxes);
    const std::vector<double> box_values = LoadAsDoubles(*boxes);
    const std::vector<double> score_values = LoadAsDoubles(*scores);

    struct Candidate {
      double score;
      int64_t index;
    };
    // Highest score first; among equal scores the lowest index.
    auto lower = [](const Candidate& a, const Candidate& b) {
      return a.score < b.score || (a.score == b.score && a.index > b.index);
    };
    std::vector<int64_t> selected;  // (batch, class, box) triples.
    // Sized only when there are boxes: with no batches num_boxes is a bare
    // dimension of an empty input and bounds nothing.
    std::vector<Corners> corners(batches > 0 ? num_boxes : 0);
    std::vector<int64_t> kept;
    for (int64_t b = 0; b < batches && per_class > 0; ++b) {
      for (int64_t i = 0; i < num_boxes; ++i) {
        corners[i] = ToCorners(&box_values[(b * num_boxes + i) * 4], center_);
      }
      for (int64_t c = 0; c < classes; ++c) {
        const double* s = &score_values[(b * classes + c) * num_boxes];
        std::priority_queue<Candidate, std::vector<Candidate>, decltype(lower)>
            queue(lower);
        for (int64_t i = 0; i < num_boxes; ++i) {
          if (!has_score_threshold || s[i] > score_threshold) {
            queue.push({s[i], i});
          }
        }
        kept.clear();
        while (!queue.empty() &&
               static_cast<int64_t>(kept.size()) < per_class) {
          const Candidate next = queue.top();
          queue.pop();
          bool suppressed = false;
          for (int64_t k : kept) {
            if (SuppressedByIou(corners[k], corners[next.index], iou)) {
              suppressed = true;
              break;
            }
          }
          if (!suppressed) kept.push_back(next.index);
        }
        for (int64_t k : kept) {
          selected.insert(selected.end(), {b, c, k});
        }
      }
    }
    const int64_t n = static_cast<int64_t>(selected.size() / 3);
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, Shape({n, 3}),
                                                        DType::kInt64, node()));
    if (n > 0) {
      std::memcpy(y.data, selected.data(), selected.size() * sizeof(int64_t));
    }
    return absl::OkStatus();
  }

 private:
  // A one-element float input as double, or `fallback` when absent.
  absl::StatusOr<double> OptionalScalar(const KernelContext& ctx, int i,
                                        double fallback,
                                        absl::string_view what) const {
    GLINT_ASSIGN_OR_RETURN(const TensorView* t,
                           GetOptionalInput(ctx, i, dtype_, node()));
    if (t == nullptr) return fallback;
    if (t->num_elements() != 1) {
      return InvalidArgument(node(), what, " must hold one value, not ",
                             t->num_elements());
    }
    return LoadAsDoubles(*t)[0];
  }

  DType dtype_;
  bool center_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeNonMaxSuppression(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 5));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kFloatDTypes));
  GLINT_ASSIGN_OR_RETURN(DType sdtype, SpecInputDType(spec, 1, kFloatDTypes));
  const std::string node = spec.node->Describe();
  if (sdtype != dtype) {
    return InvalidArgument(node, "boxes are ", DTypeName(dtype), " but scores ",
                           DTypeName(sdtype));
  }
  if (spec.has_input(2)) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 2, {DType::kInt64}).status());
  }
  for (int i : {3, 4}) {
    if (spec.has_input(i) && spec.inputs[i].dtype != dtype) {
      return InvalidArgument(node, "input ", i, " is ",
                             DTypeName(spec.inputs[i].dtype), "; expected ",
                             DTypeName(dtype));
    }
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kInt64).status());
  const int64_t center = spec.node->GetInt("center_point_box", 0);
  if (center != 0 && center != 1) {
    return InvalidArgument(node, "center_point_box must be 0 or 1, not ",
                           center);
  }
  return std::unique_ptr<Kernel>(
      new NonMaxSuppressionKernel(spec, dtype, center == 1));
}

// --------------------------------------------------------------- RoiAlign

// One bilinear sample: four source offsets within a channel and weights.
struct RoiSample {
  int64_t pos[4];
  double w[4];
};

class RoiAlignKernel final : public KernelBase {
 public:
  RoiAlignKernel(const KernelSpec& spec, DType dtype, DType index_dtype,
                 bool max_mode, int64_t out_h, int64_t out_w,
                 int64_t sampling_ratio, double spatial_scale, bool half_pixel)
      : KernelBase(spec),
        dtype_(dtype),
        index_dtype_(index_dtype),
        max_(max_mode),
        out_h_(out_h),
        out_w_(out_w),
        sampling_ratio_(sampling_ratio),
        scale_(spatial_scale),
        half_pixel_(half_pixel) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* rois,
                           GetInput(ctx, 1, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(
        std::vector<int64_t> batch_index,
        GetInputInt64s(ctx, 2, index_dtype_, "batch_indices", node()));
    const Shape& xs = x->shape;
    if (xs.rank() != 4) {
      return InvalidArgument(node(), "X must be [N, C, H, W], not ",
                             xs.ToString());
    }
    if (rois->shape.rank() != 2 || rois->shape.dim(1) != 4) {
      return InvalidArgument(node(), "rois must be [num_rois, 4], not ",
                             rois->shape.ToString());
    }
    const int64_t num_rois = rois->shape.dim(0);
    if (static_cast<int64_t>(batch_index.size()) != num_rois) {
      return InvalidArgument(node(), "batch_indices has ", batch_index.size(),
                             " values for ", num_rois, " rois");
    }
    const int64_t n = xs.dim(0), channels = xs.dim(1), height = xs.dim(2),
                  width = xs.dim(3);
    if ((height == 0 || width == 0) && num_rois > 0 && channels > 0) {
      return InvalidArgument(node(), "X ", xs.ToString(),
                             " has no pixels to sample");
    }
    for (int64_t b : batch_index) {
      if (b < 0 || b >= n) {
        return InvalidArgument(node(), "batch index ", b, " is outside [0, ", n,
                               ")");
      }
    }
    // num_rois comes from the data and the bins from attributes: their
    // product is capped as the generating ops cap theirs.
    if (static_cast<double>(num_rois) * channels * out_h_ * out_w_ >
        static_cast<double>(int64_t{1} << 31)) {
      return InvalidArgument(node(), num_rois, " rois of ", channels,
                             " channels and ", out_h_, "x", out_w_,
                             " bins exceed 2^31 output elements");
    }
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, Shape({num_rois, channels, out_h_, out_w_}),
                       dtype_, node()));
    const std::vector<double> roi_values = LoadAsDoubles(*rois);
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      const S* px = x->as<const S>();
      S* py = y.as<S>();
      std::vector<RoiSample> samples;
      for (int64_t r = 0; r < num_rois; ++r) {
        GLINT_ASSIGN_OR_RETURN(RoiGeometry g, Geometry(&roi_values[r * 4]));
        const double count = std::max<int64_t>(g.grid_h * g.grid_w, 1);
        const S* image = px + batch_index[r] * channels * height * width;
        for (int64_t ph = 0; ph < out_h_; ++ph) {
          for (int64_t pw = 0; pw < out_w_; ++pw) {
            BinSamples(g, ph, pw, height, width, &samples);
            for (int64_t c = 0; c < channels; ++c) {
              const S* plane = image + c * height * width;
              double a = 0;
              bool first = true;
              for (const RoiSample& s : samples) {
                double v[4];
                for (int k = 0; k < 4; ++k) {
                  v[k] = s.w[k] * Load<double>(plane[s.pos[k]]);
                }
                if (max_) {
                  const double m =
                      std::max(std::max(v[0], v[1]), std::max(v[2], v[3]));
                  a = first ? m : std::max(a, m);
                  first = false;
                } else {
                  a += v[0] + v[1] + v[2] + v[3];
                }
              }
              py[((r * channels + c) * out_h_ + ph) * out_w_ + pw] =
                  Store<S>(max_ ? a : a / count);
            }
          }
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  // Sampling points per bin, at most: a roi whose adaptive grid needs more
  // is refused (the points are held per bin; real rois need far fewer).
  static constexpr int64_t kMaxBinSamples = int64_t{1} << 20;

  struct RoiGeometry {
    double start_h, start_w, bin_h, bin_w;
    int64_t grid_h, grid_w;
  };

  // The roi's bins and sampling grid, as onnxruntime computes them.
  absl::StatusOr<RoiGeometry> Geometry(const double* roi) const {
    const double offset = half_pixel_ ? 0.5 : 0.0;
    RoiGeometry g;
    g.start_w = roi[0] * scale_ - offset;
    g.start_h = roi[1] * scale_ - offset;
    double roi_w = roi[2] * scale_ - offset - g.start_w;
    double roi_h = roi[3] * scale_ - offset - g.start_h;
    if (!half_pixel_) {  // Before opset 16 rois were at least 1x1.
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    g.bin_h = roi_h / out_h_;
    g.bin_w = roi_w / out_w_;
    if (sampling_ratio_ > 0) {
      g.grid_h = g.grid_w = sampling_ratio_;
    } else {
      const double gh = std::ceil(g.bin_h), gw = std::ceil(g.bin_w);
      if (!(gh >= 0 && gw >= 0 && gh * gw <= kMaxBinSamples)) {
        return InvalidArgument(node(), "roi [", roi[0], ", ", roi[1], ", ",
                               roi[2], ", ", roi[3], "] needs a ", gh, "x", gw,
                               " sampling grid per bin (at most ",
                               kMaxBinSamples, " points)");
      }
      g.grid_h = static_cast<int64_t>(gh);
      g.grid_w = static_cast<int64_t>(gw);
    }
    if (!std::isfinite(g.start_h) || !std::isfinite(g.start_w) ||
        !std::isfinite(g.bin_h) || !std::isfinite(g.bin_w)) {
      return InvalidArgument(node(), "roi [", roi[0], ", ", roi[1], ", ",
                             roi[2], ", ", roi[3], "] is not finite");
    }
    return g;
  }

  // The bilinear samples of bin (ph, pw).
  void BinSamples(const RoiGeometry& g, int64_t ph, int64_t pw, int64_t height,
                  int64_t width, std::vector<RoiSample>* samples) const {
    samples->clear();
    for (int64_t iy = 0; iy < g.grid_h; ++iy) {
      const double y =
          g.start_h + ph * g.bin_h + (iy + 0.5) * g.bin_h / g.grid_h;
      for (int64_t ix = 0; ix < g.grid_w; ++ix) {
        const double x =
            g.start_w + pw * g.bin_w + (ix + 0.5) * g.bin_w / g.grid_w;
        RoiSample s{};
        if (y < -1.0 || y > height || x < -1.0 || x > width) {
          samples->push_back(s);  // Outside the image: contributes 0.
          continue;
        }
        double yy = std::max(y, 0.0), xx = std::max(x, 0.0);
        int64_t y_low = static_cast<int64_t>(yy), y_high;
        int64_t x_low = static_cast<int64_t>(xx), x_high;
        if (y_low >= height - 1) {
          y_high = y_low = height - 1;
          yy = static_cast<double>(y_low);
        } else {
          y_high = y_low + 1;
        }
        if (x_low >= width - 1) {
          x_high = x_low = width - 1;
          xx = static_cast<double>(x_low);
        } else {
          x_high = x_low + 1;
        }
        const double ly = yy - y_low, lx = xx - x_low;
        const double hy = 1 - ly, hx = 1 - lx;
        s.pos[0] = y_low * width + x_low;
        s.pos[1] = y_low * width + x_high;
        s.pos[2] = y_high * width + x_low;
        s.pos[3] = y_high * width + x_high;
        s.w[0] = hy * hx;
        s.w[1] = hy * lx;
        s.w[2] = ly * hx;
        s.w[3] = ly * lx;
        samples->push_back(s);
      }
    }
  }

  DType dtype_;
  DType index_dtype_;
  bool max_;
  int64_t out_h_, out_w_, sampling_ratio_;
  double scale_;
  bool half_pixel_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeRoiAlign(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 3, 3));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  const std::string node = spec.node->Describe();
  if (spec.has_input(1) && spec.inputs[1].dtype != dtype) {
    return InvalidArgument(node, "rois are ", DTypeName(spec.inputs[1].dtype),
                           " but X is ", DTypeName(dtype));
  }
  GLINT_ASSIGN_OR_RETURN(
      DType index_dtype,
      SpecInputDType(spec, 2, {DType::kInt64, DType::kInt32}));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const std::string mode = spec.node->GetString("mode", "avg");
  if (mode != "avg" && mode != "max") {
    return Unimplemented(node, "mode '", mode, "' (avg or max)");
  }
  // Opset 10 had no attribute and behaved as output_half_pixel.
  const std::string ctm = spec.node->GetString(
      "coordinate_transformation_mode",
      spec.opset_version >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return Unimplemented(node, "coordinate_transformation_mode '", ctm,
                         "' (half_pixel or output_half_pixel)");
  }
  const int64_t out_h = spec.node->GetInt("output_height", 1);
  const int64_t out_w = spec.node->GetInt("output_width", 1);
  const int64_t sampling_ratio = spec.node->GetInt("sampling_ratio", 0);
  // Bounded so that a bin's sample list stays small.
  constexpr int64_t kMaxExtent = int64_t{1} << 16;
  if (out_h < 1 || out_w < 1 || out_h > kMaxExtent || out_w > kMaxExtent) {
    return InvalidArgument(node, "output_height/output_width ", out_h, "x",
                           out_w, " must be in [1, 65536]");
  }
  if (sampling_ratio < 0 || sampling_ratio > 1024) {
    return InvalidArgument(node, "sampling_ratio ", sampling_ratio,
                           " must be in [0, 1024]");
  }
  return std::unique_ptr<Kernel>(new RoiAlignKernel(
      spec, dtype, index_dtype, mode == "max", out_h, out_w, sampling_ratio,
      spec.node->GetFloat("spatial_scale", 1.0f), ctm == "half_pixel"));
}

// ---------------------------------------------------------------- NonZero

class NonZeroKernel final : public KernelBase {
 public:
  NonZeroKernel(const KernelSpec& spec, DType dtype)
      : KernelBase(spec), dtype_(dtype) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    std::vector<int64_t> flat;  // Linear offsets of the nonzero elements.
    GLINT_RETURN_IF_ERROR(VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      const S* p = x->as<const S>();
      for (int64_t i = 0; i < x->num_elements(); ++i) {
        if (Load<ComputeType<S>>(p[i]) != ComputeType<S>(0)) {
          flat.push_back(i);
        }
      }
      return absl::OkStatus();
    }));
    const int rank = x->shape.rank();
    const int64_t count = static_cast<int64_t>(flat.size());
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, Shape({rank, count}), DType::kInt64, node()));
    int64_t* py = y.as<int64_t>();
    for (int64_t k = 0; k < count; ++k) {
      int64_t rest = flat[k];
      for (int d = rank - 1; d >= 0; --d) {
        py[d * count + k] = rest % x->shape.dim(d);
        rest /= x->shape.dim(d);
      }
    }
    return absl::OkStatus();
  }

 private:
  DType dtype_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeNonZero(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kEveryDType));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kInt64).status());
  return std::unique_ptr<Kernel>(new NonZeroKernel(spec, dtype));
}

// ----------------------------------------------------------------- Unique

class UniqueKernel final : public KernelBase {
 public:
  UniqueKernel(const KernelSpec& spec, DType dtype, bool has_axis, int64_t axis,
               bool sorted)
      : KernelBase(spec),
        dtype_(dtype),
        has_axis_(has_axis),
        axis_(axis),
        sorted_(sorted) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    // Slices along `axis` of x viewed as [outer, n, inner]; without an
    // axis every element is a slice.
    int axis = 0;
    std::vector<int64_t> dims = {x->num_elements()};
    if (has_axis_) {
      GLINT_ASSIGN_OR_RETURN(
          axis, NormalizeAxis(axis_, x->shape.rank(), false, node()));
      dims = x->shape.dims();
    }
    const int64_t outer = Product(dims, 0, axis), n = dims[axis],
                  inner =
                      Product(dims, axis + 1, static_cast<int>(dims.size()));
    if (x->num_elements() == 0) return EmptySlices(ctx, dims, axis);
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      using C = ComputeType<S>;
      const S* px = x->as<const S>();
      // Element j of slice i (outer-major, as numpy.unique orders it).
      auto at = [&](int64_t i, int64_t j) {
        return Load<C>(px[((j / inner) * n + i) * inner + j % inner]);
      };
      const int64_t len = outer * inner;
      // NaN sorts after every number and equals NaN (numpy's order), which
      // keeps the comparison a strict weak ordering.
      auto lt = [](C a, C b) {
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(a)) return false;
          if (std::isnan(b)) return true;
        }
        return a < b;
      };
      auto less = [&](int64_t a, int64_t b) {
        for (int64_t j = 0; j < len; ++j) {
          const C va = at(a, j), vb = at(b, j);
          if (lt(va, vb)) return true;
          if (lt(vb, va)) return false;
        }
        return false;
      };
      // Slices by value, then by first occurrence (stable sort).
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), less);
      // The unique slices in sorted order: first occurrence and count; and
      // each slice's group.
      std::vector<int64_t> first, counts, group(n);
      for (int64_t k = 0; k < n; ++k) {
        if (k == 0 || less(order[k - 1], order[k])) {
          first.push_back(order[k]);
          counts.push_back(0);
        }
        group[order[k]] = static_cast<int64_t>(first.size()) - 1;
        ++counts.back();
      }
      const int64_t u = static_cast<int64_t>(first.size());
      // Output position of each group: sorted, or by first occurrence.
      std::vector<int64_t> rank(u);
      std::iota(rank.begin(), rank.end(), 0);
      if (!sorted_) {
        std::vector<int64_t> by_first(u);
        std::iota(by_first.begin(), by_first.end(), 0);
        std::sort(by_first.begin(), by_first.end(),
                  [&](int64_t a, int64_t b) { return first[a] < first[b]; });
        for (int64_t p = 0; p < u; ++p) rank[by_first[p]] = p;
      }
      std::vector<int64_t> out_first(u), out_counts(u), inverse(n);
      for (int64_t g = 0; g < u; ++g) {
        out_first[rank[g]] = first[g];
        out_counts[rank[g]] = counts[g];
      }
      for (int64_t i = 0; i < n; ++i) inverse[i] = rank[group[i]];

      std::vector<int64_t> ydims = dims;
      ydims[axis] = u;
      GLINT_ASSIGN_OR_RETURN(
          TensorView y, AllocateOutput(ctx, 0, Shape(ydims), dtype_, node()));
      S* py = y.as<S>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t p = 0; p < u; ++p) {
          std::memcpy(py + (o * u + p) * inner,
                      px + (o * n + out_first[p]) * inner, inner * sizeof(S));
        }
      }
      GLINT_RETURN_IF_ERROR(WriteIndices(ctx, 1, out_first));
      GLINT_RETURN_IF_ERROR(WriteIndices(ctx, 2, inverse));
      return WriteIndices(ctx, 3, out_counts);
    });
  }

 private:
  // Unique of an empty x. Its n = dims[axis] slices are empty and all
  // equal, but n is a bare dimension of an empty tensor (it may be 2^40),
  // so nothing is sized by it except the inverse output, which holds n
  // values and is capped as generating ops cap theirs.
  absl::Status EmptySlices(KernelContext& ctx, std::vector<int64_t> dims,
                           int axis) const {
    const int64_t n = dims[axis];
    const int64_t u = n > 0 ? 1 : 0;
    const bool wants_inverse = 2 < ctx.num_outputs() && ctx.output_used(2);
    if (wants_inverse && n > kMaxInverseElements) {
      return InvalidArgument(node(), "inverse_indices of an empty X with ", n,
                             " slices along the axis would exceed 2^31 "
                             "elements");
    }
    dims[axis] = u;
    GLINT_RETURN_IF_ERROR(
        AllocateOutput(ctx, 0, Shape(dims), dtype_, node()).status());
    const std::vector<int64_t> first(u, 0), counts(u, n);
    GLINT_RETURN_IF_ERROR(WriteIndices(ctx, 1, first));
    if (wants_inverse) {
      GLINT_ASSIGN_OR_RETURN(
          TensorView t,
          AllocateOutput(ctx, 2, Shape({n}), DType::kInt64, node()));
      if (n > 0) std::memset(t.data, 0, n * sizeof(int64_t));
    }
    return WriteIndices(ctx, 3, counts);
  }

  static constexpr int64_t kMaxInverseElements = int64_t{1} << 31;

  absl::Status WriteIndices(KernelContext& ctx, int i,
                            const std::vector<int64_t>& v) const {
    if (i >= ctx.num_outputs() || !ctx.output_used(i)) {
      return absl::OkStatus();
    }
    GLINT_ASSIGN_OR_RETURN(
        TensorView t,
        AllocateOutput(ctx, i, Shape({static_cast<int64_t>(v.size())}),
                       DType::kInt64, node()));
    if (!v.empty()) std::memcpy(t.data, v.data(), v.size() * sizeof(int64_t));
    return absl::OkStatus();
  }

  DType dtype_;
  bool has_axis_;
  int64_t axis_;
  bool sorted_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeUnique(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kEveryDType));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  for (int i = 1; i < 4; ++i) {
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, i, DType::kInt64).status());
  }
  const int64_t sorted = spec.node->GetInt("sorted", 1);
  if (sorted != 0 && sorted != 1) {
    return InvalidArgument(spec.node->Describe(), "sorted must be 0 or 1, not ",
                           sorted);
  }
  return std::unique_ptr<Kernel>(
      new UniqueKernel(spec, dtype, spec.node->HasAttribute("axis"),
                       spec.node->GetInt("axis", 0), sorted == 1));
}

}  // namespace

void RegisterDetectionKernels(KernelRegistry* registry) {
  registry->Register("NonMaxSuppression", MakeNonMaxSuppression);
  registry->Register("RoiAlign", MakeRoiAlign);
  registry->Register("NonZero", MakeNonZero);
  registry->Register("Unique", MakeUnique);
}

}  // namespace glint::cpu
