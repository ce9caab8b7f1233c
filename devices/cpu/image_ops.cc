// Image sampling ops: GridSample (opset 16: bilinear / nearest / bicubic,
// zeros / border / reflection padding, align_corners; opset 20's
// linear/cubic names and 5-D volumes, linear and nearest), MaxUnpool and
// Col2Im (opset 18).
//
// GridSample follows onnxruntime's CPU kernel step for step (the
// out-of-bounds handling of the sampling point, then padding again at each
// pixel fetch), since ONNX's expected outputs agree with it; coordinates
// are computed in double and every float-to-integer conversion happens
// after a bounds check or clamp, so no grid value is undefined behaviour.
#include <algorithm>
#include <cmath>
#include <cstring>
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

// Outputs of generating ops are capped so that a run-time value cannot
// make a node allocate without bound.
constexpr int64_t kMaxGeneratedElements = int64_t{1} << 31;

// ------------------------------------------------------------- GridSample

enum class SampleMode { kBilinear, kNearest, kBicubic };
enum class Padding { kZeros, kBorder, kReflection };

// Folds `x` into [lo, hi] by reflecting at the bounds (onnxruntime's
// GsReflect). The fold is periodic in 2 * range, taken with fmod, which is
// exact: a huge finite x still lands in [lo, hi] (a quotient rounded and
// multiplied back would not).
double Reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (!(range > 0)) return lo;
  if (x < lo) {
    const double m = std::fmod(lo - x, 2 * range);
    return m < range ? lo + m : hi - (m - range);
  }
  if (x > hi) {
    const double m = std::fmod(x - hi, 2 * range);
    return m < range ? hi - m : lo + (m - range);
  }
  return x;
}

// A denormalized sampling coordinate made finite: a finite grid value near
// DBL_MAX overflows the denormalization to +-inf. Beyond 2^52 a double has
// no fraction left, so the bound only changes points that are already
// whole pixels far outside the image (zeros and border padding give the
// same result for them; reflection folds them somewhere in range).
double BoundCoordinate(double v) {
  constexpr double kLimit = 4503599627370496.0;  // 2^52
  if (std::isnan(v)) return 0;
  return std::clamp(v, -kLimit, kLimit);
}

// Cubic convolution weights (A = -0.75) of the four taps around `t`.
void CubicCoefficients(double t, double c[4]) {
  constexpr double a = -0.75;
  const double x = std::abs(t);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

class GridSampleKernel final : public KernelBase {
 public:
  // `volumes`: GridSample-20's 5-D form (X [N, C, D, H, W]) is accepted.
  GridSampleKernel(const KernelSpec& spec, DType dtype, SampleMode mode,
                   Padding padding, bool align_corners, bool volumes)
      : KernelBase(spec),
        dtype_(dtype),
        mode_(mode),
        padding_(padding),
        align_(align_corners),
        volumes_(volumes) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* grid,
                           GetInput(ctx, 1, dtype_, node()));
    const Shape& xs = x->shape;
    const Shape& gs = grid->shape;
    if (xs.rank() == 5 && volumes_) return Compute3D(ctx, *x, *grid);
    if (xs.rank() != 4) {
      return Unimplemented(node(), "X ", xs.ToString(), ": only 4-D [N, C, H, "
                           "W] inputs", volumes_ ? " and 5-D [N, C, D, H, W] "
                           "ones (linear and nearest)" : "",
                           " are supported");
    }
    if (gs.rank() != 4 || gs.dim(0) != xs.dim(0) || gs.dim(3) != 2) {
      return InvalidArgument(node(), "grid ", gs.ToString(),
                             " must be [N, H_out, W_out, 2] for X ",
                             xs.ToString());
    }
    const int64_t n = xs.dim(0), channels = xs.dim(1), h = xs.dim(2),
                  w = xs.dim(3), ho = gs.dim(1), wo = gs.dim(2);
    const std::vector<double> g = LoadAsDoubles(*grid);
    for (double v : g) {
      if (!std::isfinite(v)) {
        return InvalidArgument(node(), "grid holds a non-finite value");
      }
    }
    // Channels come from X and the sampling points from the grid: their
    // product can exceed both inputs, so it is capped.
    if (static_cast<double>(n) * channels * ho * wo >
        static_cast<double>(kMaxGeneratedElements)) {
      return InvalidArgument(node(), "output of ", n, "x", channels, "x", ho,
                             "x", wo, " elements exceeds 2^31");
    }
    if ((h == 0 || w == 0) && n * channels * ho * wo > 0) {
      return InvalidArgument(node(), "X ", xs.ToString(),
                             " has no pixels to sample");
    }
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, Shape({n, channels, ho, wo}), dtype_, node()));
    // The sampling point's bounds: pixel centres with align_corners, else
    // the image's outer edges.
    const double x_min = align_ ? 0 : -0.5, x_max = align_ ? w - 1 : w - 0.5;
    const double y_min = align_ ? 0 : -0.5, y_max = align_ ? h - 1 : h - 0.5;
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      const S* px = x->as<const S>();
      S* py = y.as<S>();
      // The pixel at integral (yy, xx), padded as padding_mode says.
      auto pixel = [&](const S* plane, double yy, double xx) -> double {
        switch (padding_) {
          case Padding::kZeros:
            if (xx < 0 || xx >= w || yy < 0 || yy >= h) return 0.0;
            break;
          case Padding::kBorder:
            xx = std::clamp(xx, 0.0, static_cast<double>(w - 1));
            yy = std::clamp(yy, 0.0, static_cast<double>(h - 1));
            break;
          case Padding::kReflection:
            xx = std::clamp(std::trunc(Reflect(xx, x_min, x_max)), 0.0,
                            static_cast<double>(w - 1));
            yy = std::clamp(std::trunc(Reflect(yy, y_min, y_max)), 0.0,
                            static_cast<double>(h - 1));
            break;
        }
        return Load<double>(
            plane[static_cast<int64_t>(yy) * w + static_cast<int64_t>(xx)]);
      };
      auto denormalize = [&](double v, int64_t length) {
        return align_ ? (v + 1) / 2 * (length - 1) : ((v + 1) * length - 1) / 2;
      };
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t oy = 0; oy < ho; ++oy) {
          for (int64_t ox = 0; ox < wo; ++ox) {
            const double* gp = &g[((b * ho + oy) * wo + ox) * 2];
            double sx = BoundCoordinate(denormalize(gp[0], w));
            double sy = BoundCoordinate(denormalize(gp[1], h));
            if (mode_ == SampleMode::kNearest) {
              sx = std::nearbyint(sx);
              sy = std::nearbyint(sy);
            }
            if (sx < x_min || sx > x_max || sy < y_min || sy > y_max) {
              if (padding_ == Padding::kBorder) {
                sx = std::clamp(sx, 0.0, static_cast<double>(w - 1));
                sy = std::clamp(sy, 0.0, static_cast<double>(h - 1));
              } else if (padding_ == Padding::kReflection) {
                sx = Reflect(sx, x_min, x_max);
                sy = Reflect(sy, y_min, y_max);
              }
            }
            for (int64_t c = 0; c < channels; ++c) {
              const S* plane = px + (b * channels + c) * h * w;
              double v = 0;
              if (mode_ == SampleMode::kNearest) {
                v = pixel(plane, std::trunc(sy), std::trunc(sx));
              } else if (mode_ == SampleMode::kBilinear) {
                const double x1 = std::floor(sx), y1 = std::floor(sy);
                const double x2 = x1 + 1, y2 = y1 + 1;
                const double p11 = pixel(plane, y1, x1);
                const double p12 = pixel(plane, y1, x2);
                const double p21 = pixel(plane, y2, x1);
                const double p22 = pixel(plane, y2, x2);
                const double dx2 = x2 - sx, dx1 = sx - x1;
                const double dy2 = y2 - sy, dy1 = sy - y1;
                v = dy2 * (dx2 * p11 + dx1 * p12) +
                    dy1 * (dx2 * p21 + dx1 * p22);
              } else {
                const double x0 = std::floor(sx) - 1, y0 = std::floor(sy) - 1;
                double cx[4], cy[4];
                CubicCoefficients(sx - x0 - 1, cx);
                CubicCoefficients(sy - y0 - 1, cy);
                for (int i = 0; i < 4; ++i) {
                  double row = 0;
                  for (int j = 0; j < 4; ++j) {
                    row += cx[j] * pixel(plane, y0 + i, x0 + j);
                  }
                  v += cy[i] * row;
                }
              }
              py[((b * channels + c) * ho + oy) * wo + ox] = Store<S>(v);
            }
          }
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  // GridSample-20 on X [N, C, D, H, W] and grid [N, D', H', W', 3] (x, y,
  // z: W, H, D), linear (trilinear) or nearest, with the 4-D path's
  // bounds, padding and align_corners rules applied per axis.
  absl::Status Compute3D(KernelContext& ctx, const TensorView& x,
                         const TensorView& grid) const {
    const Shape& xs = x.shape;
    const Shape& gs = grid.shape;
    if (mode_ == SampleMode::kBicubic) {
      return InvalidArgument(node(), "mode 'cubic' is defined for 4-D X "
                             "only; got ", xs.ToString());
    }
    if (gs.rank() != 5 || gs.dim(0) != xs.dim(0) || gs.dim(4) != 3) {
      return InvalidArgument(node(), "grid ", gs.ToString(),
                             " must be [N, D_out, H_out, W_out, 3] for X ",
                             xs.ToString());
    }
    const int64_t n = xs.dim(0), channels = xs.dim(1);
    // Input sizes in the grid's coordinate order: W, H, D.
    const int64_t size[3] = {xs.dim(4), xs.dim(3), xs.dim(2)};
    const int64_t dout = gs.dim(1), hout = gs.dim(2), wout = gs.dim(3);
    const std::vector<double> g = LoadAsDoubles(grid);
    for (double v : g) {
      if (!std::isfinite(v)) {
        return InvalidArgument(node(), "grid holds a non-finite value");
      }
    }
    const int64_t points = dout * hout * wout;
    if (static_cast<double>(n) * channels * points >
        static_cast<double>(kMaxGeneratedElements)) {
      return InvalidArgument(node(), "output of ", n, "x", channels, "x",
                             points, " elements exceeds 2^31");
    }
    if ((size[0] == 0 || size[1] == 0 || size[2] == 0) &&
        n * channels * points > 0) {
      return InvalidArgument(node(), "X ", xs.ToString(),
                             " has no voxels to sample");
    }
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, Shape({n, channels, dout, hout, wout}), dtype_,
                       node()));
    double lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
      lo[a] = align_ ? 0 : -0.5;
      hi[a] = align_ ? size[a] - 1 : size[a] - 0.5;
    }
    const int64_t volume = size[0] * size[1] * size[2];
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      const S* px = x.as<const S>();
      S* py = y.as<S>();
      // The voxel at integral c (x, y, z), padded as padding_mode says.
      auto voxel = [&](const S* vol, double c[3]) -> double {
        int64_t at[3];
        for (int a = 0; a < 3; ++a) {
          double v = c[a];
          switch (padding_) {
            case Padding::kZeros:
              if (v < 0 || v >= size[a]) return 0.0;
              break;
            case Padding::kBorder:
              v = std::clamp(v, 0.0, static_cast<double>(size[a] - 1));
              break;
            case Padding::kReflection:
              v = std::clamp(std::trunc(Reflect(v, lo[a], hi[a])), 0.0,
                             static_cast<double>(size[a] - 1));
              break;
          }
          at[a] = static_cast<int64_t>(v);
        }
        return Load<double>(vol[(at[2] * size[1] + at[1]) * size[0] + at[0]]);
      };
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t p = 0; p < points; ++p) {
          const double* gp = &g[(b * points + p) * 3];
          double c[3];
          bool outside = false;
          for (int a = 0; a < 3; ++a) {
            const double v = gp[a];
            c[a] = BoundCoordinate(align_ ? (v + 1) / 2 * (size[a] - 1)
                                          : ((v + 1) * size[a] - 1) / 2);
            if (mode_ == SampleMode::kNearest) c[a] = std::nearbyint(c[a]);
            outside = outside || c[a] < lo[a] || c[a] > hi[a];
          }
          if (outside) {
            for (int a = 0; a < 3; ++a) {
              if (padding_ == Padding::kBorder) {
                c[a] = std::clamp(c[a], 0.0, static_cast<double>(size[a] - 1));
              } else if (padding_ == Padding::kReflection) {
                c[a] = Reflect(c[a], lo[a], hi[a]);
              }
            }
          }
          for (int64_t ch = 0; ch < channels; ++ch) {
            const S* vol = px + (b * channels + ch) * volume;
            double v = 0;
            if (mode_ == SampleMode::kNearest) {
              double t[3] = {std::trunc(c[0]), std::trunc(c[1]),
                             std::trunc(c[2])};
              v = voxel(vol, t);
            } else {
              const double f[3] = {std::floor(c[0]), std::floor(c[1]),
                                   std::floor(c[2])};
              for (int corner = 0; corner < 8; ++corner) {
                double t[3], w = 1;
                for (int a = 0; a < 3; ++a) {
                  const bool up = (corner >> a) & 1;
                  t[a] = f[a] + (up ? 1 : 0);
                  w *= up ? c[a] - f[a] : f[a] + 1 - c[a];
                }
                v += w * voxel(vol, t);
              }
            }
            py[(b * channels + ch) * points + p] = Store<S>(v);
          }
        }
      }
      return absl::OkStatus();
    });
  }

  DType dtype_;
  SampleMode mode_;
  Padding padding_;
  bool align_;
  bool volumes_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeGridSample(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 2));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  const std::string node = spec.node->Describe();
  if (spec.inputs[1].dtype != dtype) {
    return Unimplemented(node, "grid is ", DTypeName(spec.inputs[1].dtype),
                         " and X ", DTypeName(dtype),
                         "; the CPU kernel needs them equal");
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  // Opset 20 renamed bilinear/bicubic to linear/cubic.
  const std::string mode = spec.node->GetString("mode", "bilinear");
  SampleMode m;
  if (mode == "bilinear" || mode == "linear") {
    m = SampleMode::kBilinear;
  } else if (mode == "nearest") {
    m = SampleMode::kNearest;
  } else if (mode == "bicubic" || mode == "cubic") {
    m = SampleMode::kBicubic;
  } else {
    return Unimplemented(node, "mode '", mode, "'");
  }
  const std::string padding = spec.node->GetString("padding_mode", "zeros");
  Padding p;
  if (padding == "zeros") {
    p = Padding::kZeros;
  } else if (padding == "border") {
    p = Padding::kBorder;
  } else if (padding == "reflection") {
    p = Padding::kReflection;
  } else {
    return Unimplemented(node, "padding_mode '", padding, "'");
  }
  const int64_t align = spec.node->GetInt("align_corners", 0);
  if (align != 0 && align != 1) {
    return InvalidArgument(node, "align_corners must be 0 or 1, not ", align);
  }
  return std::unique_ptr<Kernel>(new GridSampleKernel(
      spec, dtype, m, p, align == 1,
      spec.opset_version == 0 || spec.opset_version >= 20));
}

// ----------------------------------------------------------------- Col2Im
//
// Opset 18, the inverse of im2col: input [N, C * prod(block_shape), L]
// holds, for each of the L sliding-block positions over the padded image
// (row-major over the block grid) and each block offset k (row-major over
// block_shape, channel-major), one value; those that land inside the
// image are summed into Y [N, C, image_shape...] at position
// grid * stride - pad_begin + k * dilation. image_shape and block_shape are
// run-time inputs: Y is capped at 2^31 elements and the block product at
// the input's second dimension, so neither sizes anything without bound.

class Col2ImKernel final : public KernelBase {
 public:
  Col2ImKernel(const KernelSpec& spec, DType dtype)
      : KernelBase(spec),
        dtype_(dtype),
        strides_(spec.node->GetInts("strides")),
        dilations_(spec.node->GetInts("dilations")),
        pads_(spec.node->GetInts("pads")) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(
        std::vector<int64_t> image,
        GetInputInt64s(ctx, 1, DType::kInt64, "image_shape", node()));
    GLINT_ASSIGN_OR_RETURN(
        std::vector<int64_t> block,
        GetInputInt64s(ctx, 2, DType::kInt64, "block_shape", node()));
    const int sd = static_cast<int>(image.size());
    if (x->shape.rank() != 3) {
      return InvalidArgument(node(), "input ", x->shape.ToString(),
                             " must be [N, C * prod(block_shape), L]");
    }
    if (sd < 1 || block.size() != image.size()) {
      return InvalidArgument(node(), "image_shape and block_shape must have "
                             "one (equal) length >= 1; got ", image.size(),
                             " and ", block.size());
    }
    std::vector<int64_t> strides = strides_, dilations = dilations_,
                         pads = pads_;
    if (strides.empty()) strides.assign(sd, 1);
    if (dilations.empty()) dilations.assign(sd, 1);
    if (pads.empty()) pads.assign(2 * sd, 0);
    if (static_cast<int>(strides.size()) != sd ||
        static_cast<int>(dilations.size()) != sd ||
        static_cast<int>(pads.size()) != 2 * sd) {
      return InvalidArgument(node(), "strides, dilations and pads must have ",
                             sd, ", ", sd, " and ", 2 * sd, " values");
    }
    // Block counts per axis, in double first so that no hostile value
    // overflows int64 arithmetic.
    const int64_t n = x->shape.dim(0), rows = x->shape.dim(1),
                  cols = x->shape.dim(2);
    std::vector<int64_t> grid(sd);
    double kernel_elements = 1, grid_elements = 1, out_elements = 1;
    for (int d = 0; d < sd; ++d) {
      if (image[d] < 1 || block[d] < 1 || strides[d] < 1 ||
          dilations[d] < 1 || pads[d] < 0 || pads[d + sd] < 0) {
        return InvalidArgument(node(), "axis ", d, ": image ", image[d],
                               ", block ", block[d], ", stride ", strides[d],
                               ", dilation ", dilations[d], " and pads ",
                               pads[d], "/", pads[d + sd],
                               " must be positive (pads >= 0)");
      }
      const double span =
          static_cast<double>(dilations[d]) * (block[d] - 1) + 1;
      const double room = static_cast<double>(image[d]) + pads[d] +
                          pads[d + sd] - span;
      if (room < 0 || room > 9e15) {
        return InvalidArgument(node(), "a block of ", block[d],
                               " (dilation ", dilations[d],
                               ") does not fit axis ", d, " of ", image[d],
                               " padded by ", pads[d], "/", pads[d + sd]);
      }
      grid[d] = static_cast<int64_t>(room) / strides[d] + 1;
      kernel_elements *= static_cast<double>(block[d]);
      grid_elements *= static_cast<double>(grid[d]);
      out_elements *= static_cast<double>(image[d]);
    }
    if (kernel_elements > static_cast<double>(rows) ||
        rows % static_cast<int64_t>(kernel_elements) != 0) {
      return InvalidArgument(node(), "input dimension 1 (", rows,
                             ") is not C * prod(block_shape) (",
                             kernel_elements, ")");
    }
    if (grid_elements != static_cast<double>(cols)) {
      return InvalidArgument(node(), "input dimension 2 (", cols,
                             ") is not the number of blocks, ", grid_elements);
    }
    const int64_t k_total = static_cast<int64_t>(kernel_elements);
    const int64_t channels = rows / k_total;
    out_elements *= static_cast<double>(n) * static_cast<double>(channels);
    if (out_elements > static_cast<double>(kMaxGeneratedElements)) {
      return InvalidArgument(node(), "output of ", out_elements,
                             " elements exceeds 2^31");
    }
    std::vector<int64_t> out_dims = {n, channels};
    out_dims.insert(out_dims.end(), image.begin(), image.end());
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape(out_dims), dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    std::memset(y.data, 0, y.num_bytes());
    if (x->num_elements() == 0) return absl::OkStatus();
    const std::vector<int64_t> image_stride = RowStrides(image);
    const int64_t plane = y.num_elements() / (n * channels);
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<S>) {
        const S* px = x->as<const S>();
        S* py = y.as<S>();
        std::vector<int64_t> k(sd, 0), g(sd, 0);
        for (int64_t nc = 0; nc < n * channels; ++nc) {
          S* out = py + nc * plane;
          for (int64_t kk = 0; kk < k_total; ++kk) {
            // Row kk of this (n, c): block offset k, every grid position.
            int64_t rest = kk;
            for (int d = sd - 1; d >= 0; --d) {
              k[d] = rest % block[d];
              rest /= block[d];
            }
            const S* in = px + (nc * k_total + kk) * cols;
            std::fill(g.begin(), g.end(), 0);
            for (int64_t l = 0; l < cols; ++l) {
              int64_t at = 0;
              bool inside = true;
              for (int d = 0; d < sd && inside; ++d) {
                const int64_t p =
                    g[d] * strides[d] - pads[d] + k[d] * dilations[d];
                inside = p >= 0 && p < image[d];
                at += p * image_stride[d];
              }
              if (inside) out[at] += in[l];
              for (int d = sd - 1; d >= 0; --d) {
                if (++g[d] < grid[d]) break;
                g[d] = 0;
              }
            }
          }
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
  std::vector<int64_t> strides_, dilations_, pads_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeCol2Im(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 3, 3));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kFloatDTypes));
  for (int i = 1; i < 3; ++i) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {DType::kInt64}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new Col2ImKernel(spec, dtype));
}

// -------------------------------------------------------------- MaxUnpool

class MaxUnpoolKernel final : public KernelBase {
 public:
  MaxUnpoolKernel(const KernelSpec& spec, DType dtype,
                  std::vector<int64_t> kernel, std::vector<int64_t> strides,
                  std::vector<int64_t> pads)
      : KernelBase(spec),
        dtype_(dtype),
        kernel_(std::move(kernel)),
        strides_(std::move(strides)),
        pads_(std::move(pads)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* ind,
                           GetInput(ctx, 1, DType::kInt64, node()));
    const int spatial = static_cast<int>(kernel_.size());
    const int rank = spatial + 2;
    if (x->shape.rank() != rank) {
      return InvalidArgument(node(), "X ", x->shape.ToString(), " must have ",
                             rank, " dims for a ", spatial, "-D kernel");
    }
    if (ind->shape != x->shape) {
      return InvalidArgument(node(), "indices ", ind->shape.ToString(),
                             " must have X's shape ", x->shape.ToString());
    }
    // The shape the pooling came from; the indices count in it.
    std::vector<int64_t> source = x->shape.dims();
    for (int d = 0; d < spatial; ++d) {
      source[d + 2] = (x->shape.dim(d + 2) - 1) * strides_[d] + kernel_[d] -
                      pads_[d] - pads_[d + spatial];
      if (source[d + 2] < 0) {
        return InvalidArgument(node(), "the unpooled dim ", d, " of X ",
                               x->shape.ToString(), " would be negative");
      }
    }
    double source_count = 1;
    for (int64_t d : source) source_count *= static_cast<double>(d);
    if (source_count > static_cast<double>(int64_t{1} << 62)) {
      return InvalidArgument(node(), "the unpooled shape of X ",
                             x->shape.ToString(), " is too large");
    }
    std::vector<int64_t> out = source;
    if (ctx.input(2) != nullptr) {
      // A larger output pads the source shape at the end: an index keeps
      // its (n, c, spatial) coordinates.
      GLINT_ASSIGN_OR_RETURN(
          out, GetInputInt64s(ctx, 2, DType::kInt64, "output_shape", node()));
      if (static_cast<int>(out.size()) != rank || out[0] != source[0] ||
          out[1] != source[1]) {
        return InvalidArgument(node(), "output_shape must be [", source[0],
                               ", ", source[1], ", ...] with ", rank, " dims");
      }
      for (int64_t d : out) {
        if (d < 0) return InvalidArgument(node(), "output_shape is negative");
      }
    }
    double count = 1;
    for (int64_t d : out) count *= static_cast<double>(d);
    if (count > static_cast<double>(kMaxGeneratedElements)) {
      return InvalidArgument(node(), "output of ", count,
                             " elements exceeds 2^31");
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, Shape(out), dtype_, node()));
    if (y.num_bytes() > 0) std::memset(y.data, 0, y.num_bytes());
    const int64_t source_size = Product(source, 0, rank);
    const int64_t* pi = ind->as<const int64_t>();
    return VisitBySize(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* px = x->as<const T>();
      T* py = y.as<T>();
      for (int64_t i = 0; i < x->num_elements(); ++i) {
        int64_t rest = pi[i];
        if (rest < 0 || rest >= source_size) {
          return InvalidArgument(node(), "index ", rest, " is outside [0, ",
                                 source_size, ")");
        }
        int64_t at = 0, scale = 1;
        for (int d = rank - 1; d >= 0; --d) {
          const int64_t coord = rest % source[d];
          rest /= source[d];
          if (coord >= out[d]) {
            return InvalidArgument(node(), "index ", pi[i],
                                   " falls outside output_shape");
          }
          at += coord * scale;
          scale *= out[d];
        }
        py[at] = px[i];
      }
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
  std::vector<int64_t> kernel_, strides_, pads_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeMaxUnpool(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 3));
  GLINT_ASSIGN_OR_RETURN(DType dtype,
                         SpecInputDType(spec, 0, kAllNumericDTypes));
  GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 1, {DType::kInt64}).status());
  if (spec.has_input(2)) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 2, {DType::kInt64}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const std::string node = spec.node->Describe();
  std::vector<int64_t> kernel = spec.node->GetInts("kernel_shape");
  const size_t k = kernel.size();
  if (k == 0) return InvalidArgument(node, "kernel_shape is required");
  std::vector<int64_t> strides =
      spec.node->GetInts("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads =
      spec.node->GetInts("pads", std::vector<int64_t>(2 * k, 0));
  if (strides.size() != k || pads.size() != 2 * k) {
    return InvalidArgument(node, "strides/pads do not match kernel_shape");
  }
  constexpr int64_t kMaxAttr = int64_t{1} << 20;
  for (size_t d = 0; d < k; ++d) {
    if (kernel[d] < 1 || strides[d] < 1 || kernel[d] > kMaxAttr ||
        strides[d] > kMaxAttr) {
      return InvalidArgument(node,
                             "kernel_shape and strides must be in "
                             "[1, 2^20]");
    }
  }
  for (int64_t p : pads) {
    if (p < 0 || p > kMaxAttr) {
      return InvalidArgument(node, "pads must be in [0, 2^20]");
    }
  }
  return std::unique_ptr<Kernel>(new MaxUnpoolKernel(
      spec, dtype, std::move(kernel), std::move(strides), std::move(pads)));
}

}  // namespace

void RegisterImageKernels(KernelRegistry* registry) {
  registry->Register("GridSample", MakeGridSample);
  registry->Register("MaxUnpool", MakeMaxUnpool);
  registry->Register("Col2Im", MakeCol2Im);
}

}  // namespace glint::cpu
