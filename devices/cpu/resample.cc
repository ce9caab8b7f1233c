// Spatial resampling: ConvTranspose (direct loops over float/double; the
// common CNN path, Conv, goes through oneDNN) and Resize (nearest, linear,
// cubic; every coordinate transformation mode of opset 11-17) plus its
// opset-10 form and Upsample.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

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

enum class ResizeMode { kNearest, kLinear, kCubic };

class ResizeKernel final : public KernelBase {
 public:
  // `scales_input` is the index of the scales input (1 for opset 10 and
  // Upsample, 2 from 11, where 1 is roi and 3 sizes).
  ResizeKernel(const KernelSpec& spec, DType dtype, ResizeMode mode,
               int scales_input, std::vector<float> scales_attr)
      : KernelBase(spec),
        dtype_(dtype),
        mode_(mode),
        scales_input_(scales_input),
        scales_attr_(std::move(scales_attr)),
        coord_(spec.node->GetString(
            "coordinate_transformation_mode",
            scales_input == 1 ? "asymmetric" : "half_pixel")),
        // Upsample's nearest is a plain floor of the scaled coordinate.
        nearest_(spec.node->GetString(
            "nearest_mode",
            spec.node->op_type == "Upsample" ? "floor" : "round_prefer_floor")),
        cubic_a_(spec.node->GetFloat("cubic_coeff_a", -0.75f)),
        exclude_outside_(spec.node->GetInt("exclude_outside", 0) != 0),
        extrapolation_(spec.node->GetFloat("extrapolation_value", 0.0f)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
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
    std::vector<int64_t> out(rank);
    if (!sizes.empty()) {
      if (static_cast<int>(sizes.size()) != rank) {
        return InvalidArgument(node(), "sizes must have one value per axis");
      }
      out = sizes;
      scales.resize(rank);
      for (int i = 0; i < rank; ++i) {
        scales[i] = static_cast<double>(out[i]) / x->shape.dim(i);
      }
    } else {
      if (static_cast<int>(scales.size()) != rank) {
        return InvalidArgument(node(), "scales must have one value per axis");
      }
      for (int i = 0; i < rank; ++i) {
        if (!(scales[i] > 0) || scales[i] > 1e6) {
          return InvalidArgument(node(), "scale ", scales[i], " is invalid");
        }
        out[i] = static_cast<int64_t>(std::floor(x->shape.dim(i) * scales[i]));
      }
    }
    if (!roi.empty() && static_cast<int>(roi.size()) != 2 * rank) roi.clear();
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, Shape(out),
                                                        dtype_, node()));
    // Per axis and output index: the contributing input indices and weights
    // (index -1: the extrapolation value).
    struct Tap {
      int64_t index;
      double weight;
    };
    std::vector<std::vector<std::vector<Tap>>> taps(rank);
    for (int a = 0; a < rank; ++a) {
      const int64_t len = x->shape.dim(a);
      taps[a].resize(out[a]);
      for (int64_t o = 0; o < out[a]; ++o) {
        // ONNX scales the length without rounding when scales are given.
        const double out_len = sizes.empty() ? len * scales[a]
                                             : static_cast<double>(out[a]);
        const double orig = Original(o, scales[a], len, out_len, roi, a, rank);
        std::vector<Tap>& t = taps[a][o];
        if (coord_ == "tf_crop_and_resize" &&
            (orig < 0 || orig > len - 1)) {
          t.push_back({-1, 1.0});
          continue;
        }
        if (out[a] == len && scales[a] == 1.0 && coord_ != "tf_crop_and_resize") {
          t.push_back({o, 1.0});
          continue;
        }
        if (mode_ == ResizeMode::kNearest) {
          t.push_back({std::clamp<int64_t>(Nearest(orig, scales[a] < 1), 0,
                                           len - 1),
                       1.0});
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
    }
    const std::vector<double> xs = LoadAsDoubles(*x);
    std::vector<double> ys(y.num_elements());
    const std::vector<int64_t> in_stride = RowStrides(x->shape.dims());
    IndexWalk walk(out);
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      // Sum over the tensor product of the axes' taps.
      double sum = 0;
      std::vector<size_t> pick(rank, 0);
      while (true) {
        double wgt = 1;
        int64_t src = 0;
        bool outside = false;
        for (int a = 0; a < rank; ++a) {
          const Tap& tp = taps[a][walk.index(a)][pick[a]];
          if (tp.index < 0) outside = true;
          wgt *= tp.weight;
          src += std::max<int64_t>(tp.index, 0) * in_stride[a];
        }
        sum += wgt * (outside ? extrapolation_ : xs[src]);
        int a = rank - 1;
        for (; a >= 0; --a) {
          if (++pick[a] < taps[a][walk.index(a)].size()) break;
          pick[a] = 0;
        }
        if (a < 0) break;
      }
      ys[i] = sum;
      walk.Next();
    }
    StoreDoubles(ys, y);
    return absl::OkStatus();
  }

 private:
  double Original(int64_t o, double scale, int64_t len, double out_len,
                  const std::vector<double>& roi, int axis, int rank) const {
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
      const double start = roi.empty() ? 0 : roi[axis];
      const double end = roi.empty() ? 1 : roi[axis + rank];
      return out_len > 1
                 ? start * (len - 1) +
                       x * (end - start) * (len - 1) / (out_len - 1)
                 : 0.5 * (start + end) * (len - 1);
    }
    return (x + 0.5) / scale - 0.5;  // half_pixel
  }

  int64_t Nearest(double v, bool downsample) const {
    if (nearest_ == "floor") return static_cast<int64_t>(std::floor(v));
    if (nearest_ == "ceil") return static_cast<int64_t>(std::ceil(v));
    if (nearest_ == "round_prefer_ceil") {
      return static_cast<int64_t>(std::floor(v + 0.5));
    }
    (void)downsample;
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
};

KernelFactory ResizeFactory(bool upsample) {
  return [upsample](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    const int64_t v = spec.opset_version;
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
      return Unimplemented(spec.node->Describe(), "mode '", mode, "'");
    }
    return std::unique_ptr<Kernel>(new ResizeKernel(
        spec, dtype, m, scales_input, spec.node->GetFloats("scales")));
  };
}

}  // namespace

void RegisterResampleKernels(KernelRegistry* registry) {
  registry->Register("ConvTranspose", MakeConvTranspose);
  registry->Register("Resize", ResizeFactory(false));
  registry->Register("Upsample", ResizeFactory(true));
}

}  // namespace glint::cpu
