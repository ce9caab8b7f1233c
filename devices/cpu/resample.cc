// Spatial resampling: ConvTranspose (direct loops over float/double; the
// common CNN path, Conv, goes through oneDNN) and Resize (nearest, linear,
// cubic; every coordinate transformation mode of opset 11-19, opset 18's
// axes, keep_aspect_ratio_policy and antialias) plus its opset-10 form and
// Upsample.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/index_walk.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

// ---------------------------------------------------------- ConvTranspose

class ConvTransposeKernel final : public KernelBase {
 public:
  ConvTransposeKernel(const KernelSpec& spec, DType dtype)
      : KernelBase(spec),
        dtype_(dtype),
        group_(spec.node->GetInt("group", 1)),
        auto_pad_(spec.node->GetString("auto_pad", "NOTSET")),
        strides_(spec.node->GetInts("strides")),
        dilations_(spec.node->GetInts("dilations")),
        pads_(spec.node->GetInts("pads")),
        output_padding_(spec.node->GetInts("output_padding")),
        output_shape_(spec.node->GetInts("output_shape")) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* w,
                           GetInput(ctx, 1, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* b,
                           GetOptionalInput(ctx, 2, dtype_, node()));
    const int rank = x->shape.rank();
    const int sp = rank - 2;
    if (sp < 1 || w->shape.rank() != rank) {
      return InvalidArgument(node(), "X ", x->shape.ToString(), " and W ",
                             w->shape.ToString(), " do not match");
    }
    const int64_t n = x->shape.dim(0), c = x->shape.dim(1);
    if (group_ <= 0 || c % group_ != 0 || w->shape.dim(0) != c) {
      return InvalidArgument(node(), "W's first dimension must be C and C "
                             "divisible by group");
    }
    const int64_t mg = w->shape.dim(1), m = mg * group_, cg = c / group_;
    if (b != nullptr && b->num_elements() != m) {
      return InvalidArgument(node(), "B must have M elements");
    }
    auto attr = [sp](const std::vector<int64_t>& v, int i, int64_t def) {
      return static_cast<int>(v.size()) == sp ? v[i] : def;
    };
    std::vector<int64_t> in(sp), k(sp), s(sp), d(sp), out(sp), begin(sp);
    for (int i = 0; i < sp; ++i) {
      in[i] = x->shape.dim(i + 2);
      k[i] = w->shape.dim(i + 2);
      s[i] = attr(strides_, i, 1);
      d[i] = attr(dilations_, i, 1);
      if (s[i] <= 0 || d[i] <= 0) return InvalidArgument(node(), "bad stride");
      const int64_t op = attr(output_padding_, i, 0);
      const int64_t full = s[i] * (in[i] - 1) + op + (k[i] - 1) * d[i] + 1;
      if (!output_shape_.empty() || auto_pad_ == "SAME_UPPER" ||
          auto_pad_ == "SAME_LOWER") {
        if (!output_shape_.empty()) {
          const int64_t off =
              static_cast<int64_t>(output_shape_.size()) - sp;
          out[i] = output_shape_[std::max<int64_t>(0, off) + i];
        } else {
          out[i] = in[i] * s[i];
        }
        const int64_t total = std::max<int64_t>(0, full - out[i]);
        begin[i] = auto_pad_ == "SAME_UPPER" ? total / 2 : total - total / 2;
      } else {
        const int64_t pb = static_cast<int>(pads_.size()) == 2 * sp ? pads_[i]
                                                                   : 0;
        const int64_t pe = static_cast<int>(pads_.size()) == 2 * sp
                               ? pads_[i + sp]
                               : 0;
        out[i] = full - pb - pe;
        begin[i] = pb;
      }
      if (out[i] < 0) return InvalidArgument(node(), "negative output size");
    }
    std::vector<int64_t> od = {n, m};
    od.insert(od.end(), out.begin(), out.end());
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, Shape(od),
                                                        dtype_, node()));
    const std::vector<double> xs = LoadAsDoubles(*x), ws = LoadAsDoubles(*w);
    std::vector<double> ys(y.num_elements(), 0.0);
    const int64_t in_size = Product(in, 0, sp), k_size = Product(k, 0, sp),
                  out_size = Product(out, 0, sp);
    // Coordinates of each input and kernel position, precomputed.
    auto coords = [sp](int64_t flat, const std::vector<int64_t>& dims) {
      std::vector<int64_t> c(sp);
      for (int i = sp - 1; i >= 0; --i) {
        c[i] = flat % dims[i];
        flat /= dims[i];
      }
      return c;
    };
    std::vector<std::vector<int64_t>> in_c(in_size), k_c(k_size);
    for (int64_t i = 0; i < in_size; ++i) in_c[i] = coords(i, in);
    for (int64_t i = 0; i < k_size; ++i) k_c[i] = coords(i, k);
    for (int64_t bn = 0; bn < n; ++bn)
      for (int64_t g = 0; g < group_; ++g)
        for (int64_t ic = 0; ic < cg; ++ic) {
          const int64_t ch = g * cg + ic;
          const double* xp = xs.data() + (bn * c + ch) * in_size;
          for (int64_t oc = 0; oc < mg; ++oc) {
            const double* wp = ws.data() + (ch * mg + oc) * k_size;
            double* yp = ys.data() + (bn * m + g * mg + oc) * out_size;
            for (int64_t ip = 0; ip < in_size; ++ip) {
              const double xv = xp[ip];
              for (int64_t kp = 0; kp < k_size; ++kp) {
                int64_t at = 0;
                bool inside = true;
                for (int i = 0; i < sp && inside; ++i) {
                  const int64_t o =
                      in_c[ip][i] * s[i] - begin[i] + k_c[kp][i] * d[i];
                  inside = o >= 0 && o < out[i];
                  at = at * out[i] + o;
                }
                if (inside) yp[at] += xv * wp[kp];
              }
            }
          }
        }
    if (b != nullptr) {
      const std::vector<double> bs = LoadAsDoubles(*b);
      for (int64_t bn = 0; bn < n; ++bn)
        for (int64_t oc = 0; oc < m; ++oc)
          for (int64_t i = 0; i < out_size; ++i) {
            ys[(bn * m + oc) * out_size + i] += bs[oc];
          }
    }
    StoreDoubles(ys, y);
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  int64_t group_;
  std::string auto_pad_;
  std::vector<int64_t> strides_, dilations_, pads_, output_padding_,
      output_shape_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeConvTranspose(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 3));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const std::string pad = spec.node->GetString("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "SAME_UPPER" && pad != "SAME_LOWER" &&
      pad != "VALID") {
    return InvalidArgument(spec.node->Describe(), "unknown auto_pad ", pad);
  }
  return std::unique_ptr<Kernel>(new ConvTransposeKernel(spec, dtype));
}

// ----------------------------------------------------------------- Resize
//
// Separable: each resized axis in turn is interpolated along its own taps
// (in double), shrinking axes first so that no intermediate exceeds the
// larger of input and output. That equals the tensor product of the axes'
// taps that ONNX's reference evaluates per output element, extrapolated
// points included (every axis's weights sum to 1).

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

// Resize's outputs come from run-time sizes or scales, so they are capped
// like the generating ops' (layout_ops.cc).
constexpr double kMaxResizeElements = static_cast<double>(int64_t{1} << 31);

class ResizeKernel final : public KernelBase {
 public:
  // `scales_input` is the index of the scales input (1 for opset 10 and
  // Upsample, 2 from 11, where 1 is roi and 3 sizes). `axes` (opset 18)
  // are the axes roi, scales and sizes cover, all when empty.
  ResizeKernel(const KernelSpec& spec, DType dtype, ResizeMode mode,
               int scales_input, std::vector<float> scales_attr,
               std::string coord, std::vector<int64_t> axes,
               AspectPolicy policy, bool antialias)
      : KernelBase(spec),
        dtype_(dtype),
        mode_(mode),
        scales_input_(scales_input),
        scales_attr_(std::move(scales_attr)),
        coord_(std::move(coord)),
        // Upsample's nearest is a plain floor of the scaled coordinate.
        nearest_(spec.node->GetString(
            "nearest_mode",
            spec.node->op_type == "Upsample" ? "floor" : "round_prefer_floor")),
        cubic_a_(spec.node->GetFloat("cubic_coeff_a", -0.75f)),
        exclude_outside_(spec.node->GetInt("exclude_outside", 0) != 0),
        extrapolation_(spec.node->GetFloat("extrapolation_value", 0.0f)),
        axes_(std::move(axes)),
        policy_(policy),
        antialias_(antialias) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
    const std::vector<int64_t>& in = x->shape.dims();
    std::vector<double> scales(scales_attr_.begin(), scales_attr_.end());
    std::vector<int64_t> sizes;
    std::vector<double> roi;
    if (scales_input_ == 2) {
      GLINT_ASSIGN_OR_RETURN(const TensorView* r,
                             GetOptionalInput(ctx, 1, DType::kUndefined,
                                              node()));
      if (r != nullptr && r->num_elements() > 0) roi = LoadAsDoubles(*r);
      GLINT_ASSIGN_OR_RETURN(const TensorView* sz,
                             GetOptionalInput(ctx, 3, DType::kInt64, node()));
      if (sz != nullptr && sz->num_elements() > 0) {
        GLINT_ASSIGN_OR_RETURN(sizes, ReadInt64s(*sz, "sizes", node()));
      }
    }
    if (scales_input_ > 0) {
      GLINT_ASSIGN_OR_RETURN(const TensorView* sc,
                             GetOptionalInput(ctx, scales_input_,
                                              DType::kUndefined, node()));
      if (sc != nullptr && sc->num_elements() > 0) scales = LoadAsDoubles(*sc);
    }
    // The axes roi, scales and sizes name.
    std::vector<int> axes;
    std::vector<bool> named(rank, axes_.empty());
    if (axes_.empty()) {
      for (int a = 0; a < rank; ++a) axes.push_back(a);
    } else {
      for (int64_t v : axes_) {
        GLINT_ASSIGN_OR_RETURN(int a, NormalizeAxis(v, rank, false, node()));
        if (named[a]) return InvalidArgument(node(), "axes repeats ", v);
        named[a] = true;
        axes.push_back(a);
      }
    }
    const size_t k = axes.size();
    std::vector<int64_t> out = in;
    std::vector<double> full_scales(rank, 1.0);
    if (!sizes.empty()) {
      if (sizes.size() != k) {
        return InvalidArgument(node(), "sizes has ", sizes.size(),
                               " values for ", k, " axes");
      }
      for (size_t i = 0; i < k; ++i) {
        if (sizes[i] < 0) {
          return InvalidArgument(node(), "sizes holds ", sizes[i]);
        }
        out[axes[i]] = sizes[i];
        full_scales[axes[i]] =
            in[axes[i]] > 0 ? static_cast<double>(sizes[i]) / in[axes[i]]
                            : 1.0;
      }
      if (policy_ != AspectPolicy::kStretch) {
        // One scale for every named axis, the smallest or largest, and
        // sizes rounded half up from it (ONNX's keep_aspect_ratio_policy).
        double s = full_scales[axes[0]];
        for (int a : axes) {
          s = policy_ == AspectPolicy::kNotLarger ? std::min(s, full_scales[a])
                                                  : std::max(s, full_scales[a]);
        }
        for (int a : axes) {
          full_scales[a] = s;
          const double o = std::floor(s * static_cast<double>(in[a]) + 0.5);
          if (!(o <= kMaxResizeElements)) {
            return InvalidArgument(node(), "output is too large");
          }
          out[a] = static_cast<int64_t>(o);
        }
      }
    } else {
      if (scales.size() != k) {
        return InvalidArgument(node(), "scales has ", scales.size(),
                               " values for ", k, " axes");
      }
      for (size_t i = 0; i < k; ++i) {
        if (!(scales[i] > 0) || scales[i] > 1e6) {
          return InvalidArgument(node(), "scale ", scales[i], " is invalid");
        }
        const int a = axes[i];
        full_scales[a] = scales[i];
        const double o = std::floor(static_cast<double>(in[a]) * scales[i]);
        if (!(o <= kMaxResizeElements)) {
          return InvalidArgument(node(), "output is too large");
        }
        out[a] = static_cast<int64_t>(o);
      }
    }
    double total = 1;
    for (int64_t o : out) total *= static_cast<double>(o);
    if (total > kMaxResizeElements) {
      return InvalidArgument(node(), "output of ", total,
                             " elements exceeds 2^31");
    }
    // roi per axis: [start, end] of the input, default the whole axis.
    std::vector<double> roi_start(rank, 0.0), roi_end(rank, 1.0);
    if (roi.size() == 2 * k) {
      for (size_t i = 0; i < k; ++i) {
        roi_start[axes[i]] = roi[i];
        roi_end[axes[i]] = roi[i + k];
      }
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, Shape(out),
                                                        dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    for (int a = 0; a < rank; ++a) {
      if (in[a] == 0) {
        return InvalidArgument(node(), "cannot resize X ",
                               x->shape.ToString(), " (axis ", a,
                               " is empty) to ", Shape(out).ToString());
      }
    }
    // ONNX scales the length without rounding when the scale is not
    // sizes / input (scales given, or one kept aspect ratio).
    const bool exact_sizes = !sizes.empty() && policy_ == AspectPolicy::kStretch;
    std::vector<std::vector<std::vector<Tap>>> taps(rank);
    for (int a = 0; a < rank; ++a) {
      const double out_len = exact_sizes
                                 ? static_cast<double>(out[a])
                                 : static_cast<double>(in[a]) * full_scales[a];
      taps[a] = AxisTaps(in[a], out[a], full_scales[a], out_len, roi_start[a],
                         roi_end[a]);
    }
    if (dtype_ == DType::kFloat32 && ResizePlanar(*x, taps, y)) {
      return absl::OkStatus();
    }
    // Shrinking axes first, so that intermediates stay small.
    std::vector<int> order;
    for (int a = 0; a < rank; ++a) {
      if (out[a] < in[a]) order.push_back(a);
    }
    for (int a = 0; a < rank; ++a) {
      if (out[a] >= in[a]) order.push_back(a);
    }
    std::vector<double> cur = LoadAsDoubles(*x), next;
    std::vector<int64_t> dims = in;
    for (int a : order) {
      const std::vector<std::vector<Tap>>& axis_taps = taps[a];
      if (axis_taps.empty()) continue;  // The identity.
      const int64_t outer = Product(dims, 0, a);
      const int64_t inner = Product(dims, a + 1, rank);
      next.assign(static_cast<size_t>(outer * out[a] * inner), 0.0);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < out[a]; ++j) {
          double* dst = next.data() + (o * out[a] + j) * inner;
          for (const Tap& t : axis_taps[j]) {
            if (t.index < 0) {
              for (int64_t i = 0; i < inner; ++i) {
                dst[i] += t.weight * extrapolation_;
              }
              continue;
            }
            const double* src = cur.data() + (o * in[a] + t.index) * inner;
            const double w = t.weight;
            for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
          }
        }
      }
      cur.swap(next);
      dims[a] = out[a];
    }
    StoreDoubles(cur, y);
    return absl::OkStatus();
  }

 private:
  // An input index (-1: the extrapolation value) and its weight.
  struct Tap {
    int64_t index;
    double weight;
  };

  // One axis's taps with float weights, flattened: output index j reads
  // index[k] with weight[k] for k in [begin[j], begin[j + 1]).
  struct FlatTaps {
    std::vector<int64_t> begin;
    std::vector<int64_t> index;
    std::vector<float> weight;
  };

  // `taps` of an axis of length `len`, flattened; the identity when empty.
  static FlatTaps Flatten(const std::vector<std::vector<Tap>>& taps,
                          int64_t len) {
    FlatTaps f;
    if (taps.empty()) {
      for (int64_t j = 0; j < len; ++j) {
        f.begin.push_back(j);
        f.index.push_back(j);
        f.weight.push_back(1.0f);
      }
      f.begin.push_back(len);
      return f;
    }
    for (const std::vector<Tap>& t : taps) {
      f.begin.push_back(static_cast<int64_t>(f.index.size()));
      for (const Tap& tap : t) {
        f.index.push_back(tap.index);
        f.weight.push_back(static_cast<float>(tap.weight));
      }
    }
    f.begin.push_back(static_cast<int64_t>(f.index.size()));
    return f;
  }

  // The float32 path of the common case, images: at most two resized
  // axes, adjacent (H and W of NCHW, or of NHWC with the channels inner),
  // no extrapolated point. Each output row [o, j, :, :] is one pass: the
  // rows of X its taps on the first axis read are blended into a row of
  // X's width (in float, as ONNX Runtime computes), then each output
  // element blends that row's taps on the second axis; rows are split
  // over the kernel threads. The general path walks every axis in double
  // and was 1.1-1.4 ms for DeepLabV3's 21 x 160 x 160 outputs. Returns
  // false, writing nothing, where the case does not apply.
  bool ResizePlanar(const TensorView& x,
                    const std::vector<std::vector<std::vector<Tap>>>& taps,
                    const TensorView& y) const {
    const int rank = x.shape.rank();
    int first = -1, last = -1;
    for (int a = 0; a < rank; ++a) {
      if (taps[a].empty()) continue;
      if (first < 0) first = a;
      last = a;
      for (const std::vector<Tap>& t : taps[a]) {
        for (const Tap& tap : t) {
          if (tap.index < 0) return false;
        }
      }
    }
    if (first < 0 || last - first > 1) return false;
    // Axes a (rows) and a + 1 (columns); a lone resized last axis has the
    // identity for rows above it.
    const int a = last == first && first == rank - 1 ? first - 1 : first;
    if (a < 0) return false;
    const std::vector<int64_t>& in = x.shape.dims();
    const std::vector<int64_t>& out = y.shape.dims();
    const FlatTaps rows = Flatten(taps[a], in[a]);
    const FlatTaps cols = Flatten(taps[a + 1], in[a + 1]);
    const int64_t outer = Product(in, 0, a);
    const int64_t inner = Product(in, a + 2, rank);
    const int64_t in_rows = in[a], in_row = in[a + 1] * inner;
    const int64_t out_rows = out[a], out_row = out[a + 1] * inner;
    const float* src = x.as<float>();
    float* dst = y.as<float>();
    ParallelFor(
        outer * out_rows, std::max<int64_t>(1, 16384 / (out_row + in_row)),
        [&](int64_t begin, int64_t end) {
          std::vector<float> blended(static_cast<size_t>(in_row));
          for (int64_t r = begin; r < end; ++r) {
            const int64_t o = r / out_rows, j = r % out_rows;
            const float* plane = src + o * in_rows * in_row;
            const float* row = plane + rows.index[rows.begin[j]] * in_row;
            if (rows.begin[j + 1] - rows.begin[j] != 1 ||
                rows.weight[rows.begin[j]] != 1.0f) {
              std::fill(blended.begin(), blended.end(), 0.0f);
              for (int64_t t = rows.begin[j]; t < rows.begin[j + 1]; ++t) {
                const float w = rows.weight[t];
                const float* s = plane + rows.index[t] * in_row;
                for (int64_t i = 0; i < in_row; ++i) blended[i] += w * s[i];
              }
              row = blended.data();
            }
            float* d = dst + r * out_row;
            for (int64_t k = 0; k < out[a + 1]; ++k) {
              float* dk = d + k * inner;
              const int64_t t0 = cols.begin[k], t1 = cols.begin[k + 1];
              if (inner == 1) {
                float v = 0.0f;
                for (int64_t t = t0; t < t1; ++t) {
                  v += cols.weight[t] * row[cols.index[t]];
                }
                *dk = v;
                continue;
              }
              std::fill(dk, dk + inner, 0.0f);
              for (int64_t t = t0; t < t1; ++t) {
                const float w = cols.weight[t];
                const float* s = row + cols.index[t] * inner;
                for (int64_t i = 0; i < inner; ++i) dk[i] += w * s[i];
              }
            }
          }
        });
    return true;
  }

  // For each output index of an axis of `len` resized to `out`, the taps
  // it reads; empty when the axis is left as it is.
  std::vector<std::vector<Tap>> AxisTaps(int64_t len, int64_t out,
                                         double scale, double out_len,
                                         double roi_start,
                                         double roi_end) const {
    const bool crop = coord_ == "tf_crop_and_resize";
    if (out == len && scale == 1.0 && !crop) return {};
    std::vector<std::vector<Tap>> taps(out);
    // antialias stretches the linear and cubic filters by 1 / scale when
    // downscaling, so that every input element contributes.
    const bool stretch =
        antialias_ && mode_ != ResizeMode::kNearest && scale < 1.0;
    for (int64_t o = 0; o < out; ++o) {
      const double orig =
          Original(o, scale, len, out, out_len, roi_start, roi_end);
      std::vector<Tap>& t = taps[o];
      if (crop && (orig < 0 || orig > len - 1)) {
        t.push_back({-1, 1.0});
        continue;
      }
      if (out == len && scale == 1.0 && !crop) {
        t.push_back({o, 1.0});
        continue;
      }
      if (stretch) {
        StretchedTaps(orig, scale, len, &t);
      } else if (mode_ == ResizeMode::kNearest) {
        t.push_back({std::clamp<int64_t>(Nearest(orig), 0, len - 1), 1.0});
      } else if (mode_ == ResizeMode::kLinear) {
        const double c = std::clamp(orig, 0.0, static_cast<double>(len - 1));
        const int64_t i0 = static_cast<int64_t>(std::floor(c));
        const int64_t i1 = std::min(i0 + 1, len - 1);
        const double f = c - i0;
        t.push_back({i0, 1 - f});
        if (f > 0) t.push_back({i1, f});
      } else {
        const int64_t i0 = static_cast<int64_t>(std::floor(orig));
        const double f = orig - i0;
        double wsum = 0;
        std::vector<Tap> cubic;
        for (int64_t j = -1; j <= 2; ++j) {
          const int64_t idx = i0 + j;
          const double wgt = Cubic(j - f);
          if (exclude_outside_ && (idx < 0 || idx >= len)) continue;
          cubic.push_back({std::clamp<int64_t>(idx, 0, len - 1), wgt});
          wsum += wgt;
        }
        for (Tap& tp : cubic) {
          if (exclude_outside_ && wsum != 0) tp.weight /= wsum;
          t.push_back(tp);
        }
      }
    }
    return taps;
  }

  // ONNX's antialiased linear / cubic taps at `orig` for `scale` < 1:
  // with orig = left + ratio, ratio in (0, 1], the filter stretched by
  // 1 / scale over input indices left + i, i in [start, 1 - start] for
  // start = floor(-support / scale) + 1 (support 1 for linear, 2 for
  // cubic), weights normalised to sum 1; indices outside the axis read its
  // edge, or are dropped with exclude_outside.
  void StretchedTaps(double orig, double scale, int64_t len,
                     std::vector<Tap>* t) const {
    double left = std::floor(orig);
    double ratio = orig - left;
    if (ratio == 0) {
      ratio = 1;
      left -= 1;
    }
    const double support = mode_ == ResizeMode::kLinear ? 1.0 : 2.0;
    const int64_t start =
        static_cast<int64_t>(std::floor(-support / scale)) + 1;
    double wsum = 0;
    const size_t first = t->size();
    for (int64_t i = start; i <= 1 - start; ++i) {
      const double arg = scale * (static_cast<double>(i) - ratio);
      const double w = mode_ == ResizeMode::kLinear
                           ? std::max(0.0, 1.0 - std::fabs(arg))
                           : Cubic(arg);
      const int64_t idx = static_cast<int64_t>(left) + i;
      if (exclude_outside_ && (idx < 0 || idx >= len)) continue;
      if (w == 0) continue;
      t->push_back({std::clamp<int64_t>(idx, 0, len - 1), w});
      wsum += w;
    }
    if (wsum != 0) {
      for (size_t i = first; i < t->size(); ++i) (*t)[i].weight /= wsum;
    }
  }

  double Original(int64_t o, double scale, int64_t len, int64_t out,
                  double out_len, double roi_start, double roi_end) const {
    const double x = static_cast<double>(o);
    if (coord_ == "asymmetric") return x / scale;
    if (coord_ == "pytorch_half_pixel") {
      return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    }
    if (coord_ == "align_corners") {
      return out_len == 1 ? 0.0
                          : x * (len - 1) / (out_len - 1);
    }
    if (coord_ == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
    if (coord_ == "tf_crop_and_resize") {
      return out_len > 1
                 ? roi_start * (len - 1) +
                       x * (roi_end - roi_start) * (len - 1) / (out_len - 1)
                 : 0.5 * (roi_start + roi_end) * (len - 1);
    }
    if (coord_ == "half_pixel_symmetric") {
      // half_pixel about the centre of the input: the rounding of the
      // output length (out vs out_len) is spread over both ends.
      const double adjustment = static_cast<double>(out) / out_len;
      const double offset = 0.5 * static_cast<double>(len) * (1 - adjustment);
      return offset + (x + 0.5) / scale - 0.5;
    }
    return (x + 0.5) / scale - 0.5;  // half_pixel
  }

  int64_t Nearest(double v) const {
    if (nearest_ == "floor") return static_cast<int64_t>(std::floor(v));
    if (nearest_ == "ceil") return static_cast<int64_t>(std::ceil(v));
    if (nearest_ == "round_prefer_ceil") {
      return static_cast<int64_t>(std::floor(v + 0.5));
    }
    // round_prefer_floor: halves go down.
    return static_cast<int64_t>(std::ceil(v - 0.5));
  }

  double Cubic(double t) const {
    const double a = cubic_a_;
    t = std::fabs(t);
    if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
    if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
    return 0;
  }

  DType dtype_;
  ResizeMode mode_;
  int scales_input_;
  std::vector<float> scales_attr_;
  std::string coord_;
  std::string nearest_;
  float cubic_a_;
  bool exclude_outside_;
  float extrapolation_;
  std::vector<int64_t> axes_;
  AspectPolicy policy_;
  bool antialias_;
};

KernelFactory ResizeFactory(bool upsample) {
  return [upsample](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    const int64_t v = spec.opset_version;
    const std::string node = spec.node->Describe();
    const std::string op =
        absl::StrCat(spec.node->op_type, "-", v == 0 ? "latest" : absl::StrCat(v));
    // Upsample before 9 and Resize never: scales attribute; Upsample 9 and
    // Resize 10: scales input 1; Resize 11+: roi, scales, sizes.
    int scales_input = 2;
    if (upsample) {
      scales_input = v > 0 && v < 9 ? 0 : 1;
    } else if (v > 0 && v < 11) {
      scales_input = 1;
    }
    GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 4));
    GLINT_ASSIGN_OR_RETURN(DType dtype,
                           SpecInputDType(spec, 0, kAllNumericDTypes));
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
    const std::string mode = spec.node->GetString("mode", "nearest");
    ResizeMode m;
    if (mode == "nearest") {
      m = ResizeMode::kNearest;
    } else if (mode == "linear" || mode == "bilinear") {
      m = ResizeMode::kLinear;
    } else if (mode == "cubic") {
      m = ResizeMode::kCubic;
    } else {
      return Unimplemented(node, op, " attribute mode='", mode,
                           "' not supported");
    }
    const std::string coord = spec.node->GetString(
        "coordinate_transformation_mode",
        scales_input == 1 ? "asymmetric" : "half_pixel");
    const bool opset19 = !upsample && (v == 0 || v >= 19);
    if (coord == "half_pixel_symmetric" && !opset19) {
      return Unimplemented(node, op, " attribute coordinate_transformation_"
                           "mode='half_pixel_symmetric' not supported (it is "
                           "Resize-19's)");
    }
    if (coord != "half_pixel" && coord != "half_pixel_symmetric" &&
        coord != "pytorch_half_pixel" && coord != "align_corners" &&
        coord != "asymmetric" && coord != "tf_half_pixel_for_nn" &&
        coord != "tf_crop_and_resize") {
      return InvalidArgument(node, "unknown coordinate_transformation_mode '",
                             coord, "'");
    }
    // Opset 18's attributes.
    const bool opset18 = !upsample && (v == 0 || v >= 18);
    std::vector<int64_t> axes;
    AspectPolicy policy = AspectPolicy::kStretch;
    bool antialias = false;
    if (opset18) {
      axes = spec.node->GetInts("axes");
      const std::string p =
          spec.node->GetString("keep_aspect_ratio_policy", "stretch");
      if (p == "not_larger") {
        policy = AspectPolicy::kNotLarger;
      } else if (p == "not_smaller") {
        policy = AspectPolicy::kNotSmaller;
      } else if (p != "stretch") {
        return InvalidArgument(node, "unknown keep_aspect_ratio_policy '", p,
                               "'");
      }
      const int64_t aa = spec.node->GetInt("antialias", 0);
      if (aa != 0 && aa != 1) {
        return InvalidArgument(node, "antialias must be 0 or 1, not ", aa);
      }
      antialias = aa == 1;
      if (antialias && m == ResizeMode::kNearest) {
        // As onnxruntime: the filter is only defined for linear and cubic.
        return Unimplemented(node, op, " attribute antialias=1 not supported "
                             "with mode='nearest'");
      }
    }
    return std::unique_ptr<Kernel>(new ResizeKernel(
        spec, dtype, m, scales_input, spec.node->GetFloats("scales"), coord,
        std::move(axes), policy, antialias));
  };
}

}  // namespace

void RegisterResampleKernels(KernelRegistry* registry) {
  registry->Register("ConvTranspose", MakeConvTranspose);
  registry->Register("Resize", ResizeFactory(false));
  registry->Register("Upsample", ResizeFactory(true));
}

}  // namespace glint::cpu
