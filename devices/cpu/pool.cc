// MaxPool, AveragePool, LpPool and GlobalAveragePool, as direct loops (ONNX's
// padding, ceil_mode, count_include_pad and empty-window rules, every dtype
// and MaxPool's Indices are easier to get exactly right here than through
// oneDNN's pooling). Up to 3 spatial axes: shorter ranks are run as 3-D
// with leading size-1 axes.
//
// The channels-last forms (glint.*ChannelsLast, written by the CPU optimiser,
// optimize.h) take X as [N, spatial..., C] and walk each window once for a
// whole row of C contiguous channels, which vectorises.
//
// Float32 channels-last MaxPool runs on oneDNN's pooling primitive (its
// JIT kernel takes ResNet's stem pool from 48 to 31 us on 2 threads) when
// the windows are undilated, each holds an input element and oneDNN has a
// JIT kernel for the geometry; else on the loops.
//
// Windows with no input element (possible only when padding >= kernel):
// MaxPool yields the type's lowest value, AveragePool without
// count_include_pad yields 0/0 = NaN, as onnxruntime does.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/strings/match.h"
#include "core/status_macros.h"
#include "devices/cpu/dnnl_util.h"
#include "devices/cpu/kernel_util.h"
#include "optimizer/fused_ops.h"
#include "devices/cpu/register.h"
#include "devices/cpu/shape_builds.h"
#include "devices/cpu/spatial.h"

namespace glint::cpu {
namespace {

constexpr int kMaxSpatial = 3;

// out[k] = max(out[k], in[k]) / out[k] += in[k] over a row of channels: the
// channels-last pools' inner loops, on float32 (their hot case) built for
// AVX2/AVX-512 too.
GLINT_VECTOR_CLONES
void MaxIntoF32(float* out, const float* in, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] = in[k] > out[k] ? in[k] : out[k];
}
GLINT_VECTOR_CLONES
void AddIntoF32(float* out, const float* in, int64_t n) {
  for (int64_t k = 0; k < n; ++k) out[k] += in[k];
}
template <typename T>
void MaxInto(T* out, const T* in, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    MaxIntoF32(out, in, n);
  } else {
    for (int64_t k = 0; k < n; ++k) out[k] = in[k] > out[k] ? in[k] : out[k];
  }
}
template <typename T>
void AddInto(T* out, const T* in, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    AddIntoF32(out, in, n);
  } else {
    for (int64_t k = 0; k < n; ++k) out[k] += in[k];
  }
}

// For one axis and each output position: the first and one-past-last
// kernel taps that land inside the input, and the window's start.
struct AxisPlan {
  int64_t in = 1, out = 1, dilation = 1;
  std::vector<int64_t> start, lo, hi;
  std::vector<int64_t> padded_count;  // Taps inside input + padding.
};

AxisPlan PlanAxis(int64_t in, int64_t out, int64_t kernel, int64_t stride,
                  int64_t dilation, int64_t pad_begin, int64_t pad_end) {
  AxisPlan p;
  p.in = in;
  p.out = out;
  p.dilation = dilation;
  p.start.resize(out);
  p.lo.resize(out);
  p.hi.resize(out);
  p.padded_count.resize(out);
  for (int64_t o = 0; o < out; ++o) {
    const int64_t start = o * stride - pad_begin;
    p.start[o] = start;
    // First tap k with start + k * dilation >= 0.
    const int64_t lo = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
    // One past the last tap with start + k * dilation < in.
    const int64_t hi =
        in - start <= 0 ? 0 : std::min(kernel, (in - start + dilation - 1) /
                                                   dilation);
    p.lo[o] = std::min(lo, kernel);
    p.hi[o] = std::max(hi, p.lo[o]);
    // onnxruntime's count_include_pad divisor: the taps of the window
    // clipped to the padded extent (AveragePool-19 dilates them).
    const int64_t extent = in + pad_end - start;
    p.padded_count[o] =
        extent <= 0 ? 0
                    : std::min(kernel, (extent + dilation - 1) / dilation);
  }
  return p;
}

struct PoolPlan {
  int64_t planes = 0;  // N * C.
  AxisPlan axes[kMaxSpatial];
  int64_t in_plane() const { return axes[0].in * axes[1].in * axes[2].in; }
  int64_t out_plane() const {
    return axes[0].out * axes[1].out * axes[2].out;
  }
};

enum class PoolKind { kMax, kAverage, kLp };

// A oneDNN max pooling for one input shape; `prim` is empty where oneDNN
// is not used for it.
struct DnnlPoolEntry {
  dnnl::primitive prim;
  dnnl::memory::desc src, dst, scratchpad;
  bool usable = false;
};

class PoolKernel final : public KernelBase {
 public:
  PoolKernel(const KernelSpec& spec, PoolKind kind, DType dtype,
             WindowAttrs attrs, bool count_include_pad, int storage_order,
             bool channels_last, int64_t p = 2)
      : KernelBase(spec),
        channels_last_(channels_last),
        kind_(kind),
        dtype_(dtype),
        attrs_(std::move(attrs)),
        count_include_pad_(count_include_pad),
        storage_order_(storage_order),
        p_(p) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int sd = static_cast<int>(attrs_.kernel.size());
    if (x->shape.rank() != sd + 2) {
      return InvalidArgument(node(), "X has shape ", x->shape.ToString(),
                             "; expected rank ", sd + 2,
                             " for kernel_shape of ", sd, " values");
    }
    const std::vector<int64_t>& xd = x->shape.dims();
    const std::vector<int64_t> in =
        channels_last_ ? std::vector<int64_t>(xd.begin() + 1, xd.end() - 1)
                       : std::vector<int64_t>(xd.begin() + 2, xd.end());
    const int64_t channels = channels_last_ ? xd.back() : xd[1];
    GLINT_ASSIGN_OR_RETURN(WindowGeometry g,
                           ComputeWindowGeometry(in, attrs_, node()));
    std::vector<int64_t> out_dims = {xd[0]};
    if (!channels_last_) out_dims.push_back(channels);
    out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
    if (channels_last_) out_dims.push_back(channels);
    const Shape out_shape(out_dims);
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, out_shape,
                                                        dtype_, node()));
    TensorView indices;
    const bool want_indices =
        kind_ == PoolKind::kMax && ctx.num_outputs() > 1 &&
        ctx.output_used(1);
    if (want_indices) {
      GLINT_ASSIGN_OR_RETURN(indices, AllocateOutput(ctx, 1, out_shape,
                                                     DType::kInt64, node()));
    }
    if (y.num_elements() == 0) return absl::OkStatus();

    if (channels_last_ && kind_ == PoolKind::kMax &&
        dtype_ == DType::kFloat32 && !want_indices) {
      std::shared_ptr<const DnnlPoolEntry> e =
          DnnlEntry(x->shape, channels, in, g);
      if (e != nullptr && e->usable) {
        return CatchDnnl(node(), [&] {
          dnnl::stream stream(engine_);
          ExecuteOnStream(
              stream, e->prim, e->scratchpad,
              {{DNNL_ARG_SRC, dnnl::memory(e->src, engine_, x->data)},
               {DNNL_ARG_DST, dnnl::memory(e->dst, engine_, y.data)}});
          stream.wait();
          return absl::OkStatus();
        });
      }
    }

    PoolPlan plan;
    plan.planes = xd[0] * channels;
    const int lead = kMaxSpatial - sd;  // Leading size-1 axes.
    for (int i = 0; i < sd; ++i) {
      plan.axes[lead + i] =
          PlanAxis(in[i], g.out[i], attrs_.kernel[i], attrs_.strides[i],
                   attrs_.dilations[i], g.pad_begin[i], g.pad_end[i]);
    }
    for (int i = 0; i < lead; ++i) plan.axes[i] = PlanAxis(1, 1, 1, 1, 1, 0, 0);

    return VisitNumeric(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (channels_last_) {
        if (kind_ == PoolKind::kMax || std::is_floating_point_v<T>) {
          ChannelsLastPool(plan, xd[0], channels, x->as<const T>(),
                           y.as<T>());
        }
        return absl::OkStatus();
      }
      if (kind_ == PoolKind::kMax) {
        MaxPool(plan, x->as<const T>(), y.as<T>(),
                want_indices ? indices.as<int64_t>() : nullptr);
      } else if constexpr (std::is_floating_point_v<T>) {
        if (kind_ == PoolKind::kLp) {
          LpPool(plan, x->as<const T>(), y.as<T>());
        } else {
          AveragePool(plan, x->as<const T>(), y.as<T>());
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  // The flat index ONNX reports for input element (plane, d, h, w).
  int64_t FlatIndex(const PoolPlan& p, int64_t plane, int64_t d, int64_t h,
                    int64_t w) const {
    const int64_t D = p.axes[0].in, H = p.axes[1].in, W = p.axes[2].in;
    if (storage_order_ == 1) {  // Column-major within the plane.
      return plane * D * H * W + (w * H + h) * D + d;
    }
    return plane * D * H * W + (d * H + h) * W + w;
  }

  template <typename T>
  void MaxPool(const PoolPlan& p, const T* x, T* y, int64_t* indices) const {
    const AxisPlan &ad = p.axes[0], &ah = p.axes[1], &aw = p.axes[2];
    const int64_t H = ah.in, W = aw.in;
    for (int64_t plane = 0; plane < p.planes; ++plane) {
      const T* xp = x + plane * p.in_plane();
      int64_t o = plane * p.out_plane();
      for (int64_t od = 0; od < ad.out; ++od) {
        for (int64_t oh = 0; oh < ah.out; ++oh) {
          for (int64_t ow = 0; ow < aw.out; ++ow, ++o) {
            T best = std::numeric_limits<T>::lowest();
            int64_t bd = -1, bh = -1, bw = -1;
            for (int64_t kd = ad.lo[od]; kd < ad.hi[od]; ++kd) {
              const int64_t id = ad.start[od] + kd * ad.dilation;
              for (int64_t kh = ah.lo[oh]; kh < ah.hi[oh]; ++kh) {
                const int64_t ih = ah.start[oh] + kh * ah.dilation;
                const T* row = xp + (id * H + ih) * W;
                for (int64_t kw = aw.lo[ow]; kw < aw.hi[ow]; ++kw) {
                  const int64_t iw = aw.start[ow] + kw * aw.dilation;
                  if (bd < 0 || row[iw] > best) {
                    best = row[iw];
                    bd = id;
                    bh = ih;
                    bw = iw;
                  }
                }
              }
            }
            y[o] = best;
            if (indices != nullptr) {
              indices[o] = bd < 0 ? -1 : FlatIndex(p, plane, bd, bh, bw);
            }
          }
        }
      }
    }
  }

  // AveragePool's divisor for one output position: the taps inside the
  // input, or with count_include_pad those inside input + padding.
  int64_t AverageDivisor(const PoolPlan& p, int64_t od, int64_t oh,
                         int64_t ow) const {
    const AxisPlan &ad = p.axes[0], &ah = p.axes[1], &aw = p.axes[2];
    if (count_include_pad_) {
      return ad.padded_count[od] * ah.padded_count[oh] * aw.padded_count[ow];
    }
    return (ad.hi[od] - ad.lo[od]) * (ah.hi[oh] - ah.lo[oh]) *
           (aw.hi[ow] - aw.lo[ow]);
  }

  // The oneDNN pooling for X of `x_shape`, created on first use; an entry
  // that is not usable when oneDNN refuses the geometry, has no JIT kernel
  // for it, the windows are dilated, or a window could hold no input
  // element (ONNX's value for those is the loops' business).
  std::shared_ptr<const DnnlPoolEntry> DnnlEntry(
      const Shape& x_shape, int64_t channels, const std::vector<int64_t>& in,
      const WindowGeometry& g) const {
    std::vector<int64_t> key = ShapeKey({&x_shape});
    if (auto e = dnnl_cache_.Find(key)) return e;
    ShapeBuildTimer timing;  // A shape first met: counted at run time.
    auto entry = std::make_shared<DnnlPoolEntry>();
    // oneDNN sizes the output as floor((in + pl + pr - kernel) / stride) + 1;
    // the right padding that yields ONNX's size (ceil_mode included, a
    // window starting in the end padding dropped) is where the last window
    // ends. Negative would mean the floor drops a tail: 0 gives that too.
    std::vector<int64_t> pad_right(in.size());
    bool fits = true;
    for (size_t i = 0; i < in.size(); ++i) {
      const int64_t kernel = attrs_.kernel[i];
      pad_right[i] = std::max<int64_t>(
          0, (g.out[i] - 1) * attrs_.strides[i] + kernel - in[i] -
                 g.pad_begin[i]);
      // Undilated windows that start before the input's end and end past
      // its start hold an input element (dilated ones may not, and oneDNN
      // has only its reference kernel for them).
      fits = fits && attrs_.dilations[i] == 1 &&
             g.pad_begin[i] < kernel && pad_right[i] < kernel;
    }
    if (fits) {
      // A refusal leaves the entry unusable; the loops handle that shape.
      (void)CatchDnnl(node(), [&] {
        dnnl::memory::dims src_dims = {x_shape.dim(0), channels};
        dnnl::memory::dims dst_dims = src_dims;
        src_dims.insert(src_dims.end(), in.begin(), in.end());
        dst_dims.insert(dst_dims.end(), g.out.begin(), g.out.end());
        const dnnl::memory::dims dilation(in.size(), 0);  // 0: undilated.
        entry->src = ChannelsLastF32(src_dims);
        entry->dst = ChannelsLastF32(dst_dims);
        const dnnl::pooling_v2_forward::desc desc(
            dnnl::prop_kind::forward_inference,
            dnnl::algorithm::pooling_max, entry->src, entry->dst,
            ToDnnlDims(attrs_.strides), ToDnnlDims(attrs_.kernel), dilation,
            ToDnnlDims(g.pad_begin), ToDnnlDims(pad_right));
        const dnnl::pooling_v2_forward::primitive_desc pd(
            desc, UserScratchpadAttr(), engine_);
        // Only a JIT kernel beats the loops; oneDNN's C++ fallbacks
        // (simple_nhwc, ref) do not.
        if (!absl::StartsWith(pd.impl_info_str(), "jit")) {
          return absl::OkStatus();
        }
        entry->prim = dnnl::pooling_v2_forward(pd);
        entry->scratchpad = pd.scratchpad_desc();
        entry->usable = true;
        return absl::OkStatus();
      });
    }
    return dnnl_cache_.Insert(std::move(key), std::move(entry));
  }

  // Both kinds over [N, D, H, W, C] (leading spatial sizes 1 as planned),
  // output rows of C in parallel.
  template <typename T>
  void ChannelsLastPool(const PoolPlan& p, int64_t n, int64_t c, const T* x,
                        T* y) const {
    const AxisPlan &ad = p.axes[0], &ah = p.axes[1], &aw = p.axes[2];
    const int64_t D = ad.in, H = ah.in, W = aw.in;
    const int64_t rows = n * p.out_plane();
    ParallelFor(rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(c, 1)),
                [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t ow = r % aw.out;
        const int64_t oh = (r / aw.out) % ah.out;
        const int64_t od = (r / (aw.out * ah.out)) % ad.out;
        const int64_t b = r / p.out_plane();
        T* out = y + r * c;
        if (kind_ == PoolKind::kMax) {
          std::fill_n(out, c, std::numeric_limits<T>::lowest());
        } else {
          std::fill_n(out, c, T(0));
        }
        for (int64_t kd = ad.lo[od]; kd < ad.hi[od]; ++kd) {
          const int64_t id = ad.start[od] + kd * ad.dilation;
          for (int64_t kh = ah.lo[oh]; kh < ah.hi[oh]; ++kh) {
            const int64_t ih = ah.start[oh] + kh * ah.dilation;
            for (int64_t kw = aw.lo[ow]; kw < aw.hi[ow]; ++kw) {
              const int64_t iw = aw.start[ow] + kw * aw.dilation;
              const T* in = x + (((b * D + id) * H + ih) * W + iw) * c;
              if (kind_ == PoolKind::kMax) {
                MaxInto(out, in, c);
              } else {
                AddInto(out, in, c);
              }
            }
          }
        }
        if (kind_ == PoolKind::kAverage) {
          const T inv = T(1) / static_cast<T>(AverageDivisor(p, od, oh, ow));
          for (int64_t k = 0; k < c; ++k) out[k] *= inv;
        }
      }
    });
  }

  template <typename T>
  void AveragePool(const PoolPlan& p, const T* x, T* y) const {
    const AxisPlan &ad = p.axes[0], &ah = p.axes[1], &aw = p.axes[2];
    const int64_t H = ah.in, W = aw.in;
    for (int64_t plane = 0; plane < p.planes; ++plane) {
      const T* xp = x + plane * p.in_plane();
      int64_t o = plane * p.out_plane();
      for (int64_t od = 0; od < ad.out; ++od) {
        for (int64_t oh = 0; oh < ah.out; ++oh) {
          for (int64_t ow = 0; ow < aw.out; ++ow, ++o) {
            T sum = 0;
            for (int64_t kd = ad.lo[od]; kd < ad.hi[od]; ++kd) {
              const int64_t id = ad.start[od] + kd * ad.dilation;
              for (int64_t kh = ah.lo[oh]; kh < ah.hi[oh]; ++kh) {
                const T* row =
                    xp + (id * H + ah.start[oh] + kh * ah.dilation) * W;
                if (aw.dilation == 1) {
                  const T* in = row + aw.start[ow];
                  for (int64_t kw = aw.lo[ow]; kw < aw.hi[ow]; ++kw) {
                    sum += in[kw];
                  }
                } else {
                  for (int64_t kw = aw.lo[ow]; kw < aw.hi[ow]; ++kw) {
                    sum += row[aw.start[ow] + kw * aw.dilation];
                  }
                }
              }
            }
            y[o] = sum / static_cast<T>(AverageDivisor(p, od, oh, ow));
          }
        }
      }
    }
  }

  // (sum of |x|^p over the window's input elements)^(1/p): padding adds
  // nothing. Accumulated in double; p = 1 and 2 skip pow.
  template <typename T>
  void LpPool(const PoolPlan& p, const T* x, T* y) const {
    const AxisPlan &ad = p.axes[0], &ah = p.axes[1], &aw = p.axes[2];
    const int64_t H = ah.in, W = aw.in;
    const double exponent = static_cast<double>(p_);
    auto power = [&](double v) {
      v = std::fabs(v);
      return p_ == 1 ? v : p_ == 2 ? v * v : std::pow(v, exponent);
    };
    for (int64_t plane = 0; plane < p.planes; ++plane) {
      const T* xp = x + plane * p.in_plane();
      int64_t o = plane * p.out_plane();
      for (int64_t od = 0; od < ad.out; ++od) {
        for (int64_t oh = 0; oh < ah.out; ++oh) {
          for (int64_t ow = 0; ow < aw.out; ++ow, ++o) {
            double sum = 0;
            for (int64_t kd = ad.lo[od]; kd < ad.hi[od]; ++kd) {
              const int64_t id = ad.start[od] + kd * ad.dilation;
              for (int64_t kh = ah.lo[oh]; kh < ah.hi[oh]; ++kh) {
                const T* row =
                    xp + (id * H + ah.start[oh] + kh * ah.dilation) * W;
                for (int64_t kw = aw.lo[ow]; kw < aw.hi[ow]; ++kw) {
                  sum += power(row[aw.start[ow] + kw * aw.dilation]);
                }
              }
            }
            y[o] = static_cast<T>(p_ == 1   ? sum
                                  : p_ == 2 ? std::sqrt(sum)
                                            : std::pow(sum, 1.0 / exponent));
          }
        }
      }
    }
  }

  bool channels_last_;
  PoolKind kind_;
  DType dtype_;
  WindowAttrs attrs_;
  bool count_include_pad_;
  int storage_order_;
  int64_t p_;  // LpPool's p.
  const dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  mutable ShapeKeyedCache<DnnlPoolEntry> dnnl_cache_;
};

template <PoolKind kKind>
absl::StatusOr<std::unique_ptr<Kernel>> MakePool(const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  const std::initializer_list<DType> kMaxDTypes = {
      DType::kFloat32, DType::kFloat64, DType::kInt8, DType::kUInt8};
  GLINT_ASSIGN_OR_RETURN(
      DType dtype,
      SpecInputDType(spec, 0,
                     kKind == PoolKind::kMax ? kMaxDTypes : kFloatDTypes));
  const int64_t opset = spec.opset_version;
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const std::vector<int64_t> kernel = spec.node->GetInts("kernel_shape");
  if (kernel.empty()) {
    return InvalidArgument(node, "kernel_shape is required");
  }
  const int sd = static_cast<int>(kernel.size());
  if (sd > kMaxSpatial) {
    return Unimplemented(node, "pooling over ", sd,
                         " spatial axes (at most ", kMaxSpatial, ")");
  }
  GLINT_ASSIGN_OR_RETURN(WindowAttrs attrs, ParseWindowAttrs(*spec.node, sd));
  int storage_order = 0;
  if (kKind == PoolKind::kMax) {
    storage_order = static_cast<int>(spec.node->GetInt("storage_order", 0));
    if (storage_order != 0 && storage_order != 1) {
      return InvalidArgument(node, "storage_order must be 0 or 1");
    }
    if (spec.node->outputs.size() > 1 && !spec.node->outputs[1].empty()) {
      GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 1, DType::kInt64).status());
    }
  } else if (kKind == PoolKind::kAverage && opset > 0 && opset < 19) {
    for (int64_t d : attrs.dilations) {
      if (d != 1) {
        return Unimplemented(node, "AveragePool-", opset, " attribute "
                             "dilations not supported (it is AveragePool-"
                             "19's)");
      }
    }
  }
  int64_t p = 2;
  if (kKind == PoolKind::kLp) {
    // LpPool-1 had a float p; from opset 2 it is an int.
    p = spec.node->GetInt("p", static_cast<int64_t>(
                                   spec.node->GetFloat("p", 2.0f)));
    if (p < 1) return InvalidArgument(node, "p must be >= 1; got ", p);
    if (opset > 0 && opset < 18 &&
        (attrs.ceil_mode ||
         std::any_of(attrs.dilations.begin(), attrs.dilations.end(),
                     [](int64_t d) { return d != 1; }))) {
      return Unimplemented(node, "LpPool-", opset, " attributes ceil_mode "
                           "and dilations not supported (they are "
                           "LpPool-18's)");
    }
  }
  const bool count_include_pad =
      spec.node->GetInt("count_include_pad", 0) != 0;
  const bool channels_last =
      spec.node->op_type == kChannelsLastMaxPoolOp ||
      spec.node->op_type == kChannelsLastAveragePoolOp;
  if (channels_last && spec.node->outputs.size() > 1 &&
      !spec.node->outputs[1].empty()) {
    return Unimplemented(node, "channels-last MaxPool with Indices");
  }
  return std::unique_ptr<Kernel>(
      new PoolKernel(spec, kKind, dtype, std::move(attrs), count_include_pad,
                     storage_order, channels_last, p));
}

// GlobalAveragePool / GlobalMaxPool: the mean or maximum over every axis
// after the first two.
class GlobalAveragePoolKernel final : public KernelBase {
 public:
  GlobalAveragePoolKernel(const KernelSpec& spec, DType dtype, bool max,
                          bool channels_last)
      : KernelBase(spec),
        dtype_(dtype),
        max_(max),
        channels_last_(channels_last) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    if (x->shape.rank() < 2) {
      return InvalidArgument(node(), "X has shape ", x->shape.ToString(),
                             "; expected rank >= 2");
    }
    std::vector<int64_t> out = x->shape.dims();
    const int rank = x->shape.rank();
    if (channels_last_) {
      std::fill(out.begin() + 1, out.end() - 1, 1);
    } else {
      std::fill(out.begin() + 2, out.end(), 1);
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, Shape(out),
                                                        dtype_, node()));
    const int64_t planes = out[0] * (channels_last_ ? out.back() : out[1]);
    const int64_t size = channels_last_
                             ? Product(x->shape.dims(), 1, rank - 1)
                             : Product(x->shape.dims(), 2, rank);
    return VisitNumeric(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* px = x->as<const T>();
      T* py = y.as<T>();
      if constexpr (!std::is_floating_point_v<T>) return absl::OkStatus();
      if (channels_last_) {
        // [N, size, C] reduced over size.
        const int64_t c = out.back();
        for (int64_t b = 0; b < out[0]; ++b) {
          T* row = py + b * c;
          std::fill_n(row, c, max_ ? -std::numeric_limits<T>::infinity()
                                   : T(0));
          for (int64_t i = 0; i < size; ++i) {
            const T* in = px + (b * size + i) * c;
            for (int64_t k = 0; k < c; ++k) {
              row[k] = max_ ? std::max(row[k], in[k]) : row[k] + in[k];
            }
          }
          if (!max_) {
            for (int64_t k = 0; k < c; ++k) row[k] /= static_cast<T>(size);
          }
        }
        return absl::OkStatus();
      }
      for (int64_t p = 0; p < planes; ++p) {
        if (max_) {
          T m = -std::numeric_limits<T>::infinity();
          for (int64_t i = 0; i < size; ++i) m = std::max(m, px[p * size + i]);
          py[p] = m;
          continue;
        }
        T sum = 0;
        for (int64_t i = 0; i < size; ++i) sum += px[p * size + i];
        py[p] = sum / static_cast<T>(size);  // size 0: NaN, as numpy.
      }
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
  bool max_;
  bool channels_last_;
};

template <bool kMax>
absl::StatusOr<std::unique_ptr<Kernel>> MakeGlobalPool(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kFloatDTypes));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new GlobalAveragePoolKernel(
      spec, dtype, kMax,
      spec.node->op_type == kChannelsLastGlobalAveragePoolOp));
}

}  // namespace

void RegisterPoolKernels(KernelRegistry* registry) {
  registry->Register("MaxPool", MakePool<PoolKind::kMax>);
  registry->Register("AveragePool", MakePool<PoolKind::kAverage>);
  registry->Register("LpPool", MakePool<PoolKind::kLp>);
  registry->Register("GlobalAveragePool", MakeGlobalPool<false>);
  registry->Register("GlobalMaxPool", MakeGlobalPool<true>);
  registry->Register(kChannelsLastMaxPoolOp, MakePool<PoolKind::kMax>);
  registry->Register(kChannelsLastAveragePoolOp,
                     MakePool<PoolKind::kAverage>);
  registry->Register(kChannelsLastGlobalAveragePoolOp, MakeGlobalPool<false>);
}

}  // namespace glint::cpu
