// Normalisations over groups of elements: LayerNormalization,
// InstanceNormalization, MeanVarianceNormalization, LRN,
// GroupNormalization (opsets 18 and 21), RMSNormalization (opset 23).
// Statistics are computed in double whatever the storage type (float16
// included).
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/broadcast.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/index_walk.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

// `t` (any storage type) broadcast to `shape`, as doubles.
std::vector<double> ExpandTo(const TensorView& t, const Shape& shape) {
  std::vector<double> out(shape.NumElements());
  if (out.empty()) return out;
  std::vector<double> src(t.num_elements());
  (void)VisitDType(t.dtype, [&](auto tag) -> absl::Status {
    using S = typename decltype(tag)::type;
    for (size_t i = 0; i < src.size(); ++i) src[i] = Load<double>(t.as<const S>()[i]);
    return absl::OkStatus();
  });
  const BroadcastPlan plan = MakeBroadcastPlan(shape, {t.shape});
  const int64_t s = plan.strides[0].back();
  ForEachBroadcastRow(plan, [&](int64_t o, const std::vector<int64_t>& in) {
    for (int64_t i = 0; i < plan.inner(); ++i) out[o + i] = src[in[0] + i * s];
  });
  return out;
}

// ------------------------------------------------------ LayerNormalization

class LayerNormKernel final : public KernelBase {
 public:
  // Mean and InvStdDev have `stat_dtype` (float32 for stash_type 1).
  LayerNormKernel(const KernelSpec& spec, DType dtype, DType stat_dtype,
                  int64_t axis, float epsilon)
      : KernelBase(spec),
        dtype_(dtype),
        stat_dtype_(stat_dtype),
        axis_(axis),
        epsilon_(epsilon) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* scale,
                           GetInput(ctx, 1, DType::kUndefined, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* bias,
                           GetOptionalInput(ctx, 2, DType::kUndefined, node()));
    const int rank = x->shape.rank();
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, rank, false, node()));
    const std::vector<int64_t>& d = x->shape.dims();
    const Shape suffix(std::vector<int64_t>(d.begin() + axis, d.end()));
    for (const TensorView* p : {scale, bias}) {
      if (p == nullptr) continue;
      absl::StatusOr<Shape> b = BroadcastShapes({p->shape, suffix});
      if (!b.ok() || *b != suffix) {
        return InvalidArgument(node(), "scale/bias ", p->shape.ToString(),
                               " do not broadcast to ", suffix.ToString());
      }
    }
    const int64_t outer = Product(d, 0, axis);
    const int64_t inner = suffix.NumElements();
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    std::vector<int64_t> stat_dims(d.begin(), d.begin() + axis);
    stat_dims.resize(rank, 1);
    TensorView mean_out, inv_out;
    if (ctx.output_used(1)) {
      GLINT_ASSIGN_OR_RETURN(mean_out, AllocateOutput(
          ctx, 1, Shape(stat_dims), stat_dtype_, node()));
    }
    if (ctx.output_used(2)) {
      GLINT_ASSIGN_OR_RETURN(inv_out, AllocateOutput(
          ctx, 2, Shape(stat_dims), stat_dtype_, node()));
    }
    if (dtype_ == DType::kFloat32 && scale->dtype == DType::kFloat32 &&
        scale->num_elements() == inner &&
        (bias == nullptr || (bias->dtype == DType::kFloat32 &&
                             bias->num_elements() == inner)) &&
        mean_out.data == nullptr && inv_out.data == nullptr) {
      // The common case (a transformer's LayerNorm): scale and bias span
      // the normalised axes exactly, no statistics wanted.
      RunFloat(x->as<const float>(), scale->as<const float>(),
               bias != nullptr ? bias->as<const float>() : nullptr,
               y.as<float>(), outer, inner);
      return absl::OkStatus();
    }
    const std::vector<double> xs = LoadAsDoubles(*x);
    const std::vector<double> sc = ExpandTo(*scale, suffix);
    const std::vector<double> bs =
        bias != nullptr ? ExpandTo(*bias, suffix)
                        : std::vector<double>(inner, 0.0);
    std::vector<double> ys(xs.size()), means(outer), invs(outer);
    for (int64_t o = 0; o < outer; ++o) {
      const double* p = xs.data() + o * inner;
      double mean = 0;
      for (int64_t i = 0; i < inner; ++i) mean += p[i];
      mean /= static_cast<double>(inner);
      double var = 0;
      for (int64_t i = 0; i < inner; ++i) var += (p[i] - mean) * (p[i] - mean);
      var /= static_cast<double>(inner);
      const double inv = 1.0 / std::sqrt(var + epsilon_);
      for (int64_t i = 0; i < inner; ++i) {
        ys[o * inner + i] = (p[i] - mean) * inv * sc[i] + bs[i];
      }
      means[o] = mean;
      invs[o] = inv;
    }
    StoreDoubles(ys, y);
    if (mean_out.data != nullptr) StoreDoubles(means, mean_out);
    if (inv_out.data != nullptr) StoreDoubles(invs, inv_out);
    return absl::OkStatus();
  }

 private:
  // Rows in parallel. Sums are float32 SIMD reductions (vector partial
  // sums), accurate to float rounding for the row lengths models use.
  void RunFloat(const float* x, const float* scale, const float* bias,
                float* y, int64_t outer, int64_t inner) const {
    ParallelFor(outer, std::max<int64_t>(1, 65536 / std::max<int64_t>(
                                                   inner, 1)),
                [&](int64_t begin, int64_t end) {
      const float n = static_cast<float>(inner);
      for (int64_t o = begin; o < end; ++o) {
        const float* p = x + o * inner;
        float sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < inner; ++i) sum += p[i];
        const float mean = sum / n;
        float sum_sq = 0;
#pragma omp simd reduction(+ : sum_sq)
        for (int64_t i = 0; i < inner; ++i) {
          sum_sq += (p[i] - mean) * (p[i] - mean);
        }
        const float inv = 1.0f / std::sqrt(sum_sq / n + epsilon_);
        float* q = y + o * inner;
        if (bias != nullptr) {
          for (int64_t i = 0; i < inner; ++i) {
            q[i] = (p[i] - mean) * inv * scale[i] + bias[i];
          }
        } else {
          for (int64_t i = 0; i < inner; ++i) {
            q[i] = (p[i] - mean) * inv * scale[i];
          }
        }
      }
    });
  }

  DType dtype_;
  DType stat_dtype_;
  int64_t axis_;
  float epsilon_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeLayerNorm(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 3));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 1, kAllFloatDTypes).status());
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  DType stat_dtype = DType::kFloat32;
  for (int i = 1; i < 3; ++i) {
    if (i < static_cast<int>(spec.outputs.size()) &&
        spec.outputs[i].dtype != DType::kUndefined) {
      stat_dtype = spec.outputs[i].dtype;
    }
  }
  if (!DTypeIn(stat_dtype, kAllFloatDTypes)) {
    return Unimplemented(spec.node->Describe(), "statistics dtype ",
                         DTypeName(stat_dtype));
  }
  return std::unique_ptr<Kernel>(new LayerNormKernel(
      spec, dtype, stat_dtype, spec.node->GetInt("axis", -1),
      spec.node->GetFloat("epsilon", 1e-5f)));
}

// ------------------------------------- InstanceNorm, MeanVarianceNorm

// Normalises x over the axes in `reduce` (per group of the other axes);
// scale/bias, when given, are per channel (axis 1).
absl::Status NormalizeGroups(const TensorView& x, const std::vector<bool>& reduce,
                             double epsilon, const std::vector<double>* scale,
                             const std::vector<double>* bias,
                             const TensorView& y) {
  const int rank = x.shape.rank();
  int64_t groups = 0;
  const std::vector<int64_t> group_stride =
      KeptStrides(x.shape.dims(), reduce, &groups);
  const std::vector<double> xs = LoadAsDoubles(x);
  std::vector<int64_t> group(xs.size());
  std::vector<int64_t> channel(xs.size(), 0);
  {
    IndexWalk walk(x.shape.dims());
    int64_t g = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      group[i] = g;
      if (rank > 1) channel[i] = walk.index(1);
      walk.Next(group_stride, g);
    }
  }
  std::vector<double> sum(groups, 0), sq(groups, 0), count(groups, 0);
  for (size_t i = 0; i < xs.size(); ++i) {
    sum[group[i]] += xs[i];
    count[group[i]] += 1;
  }
  for (int64_t g = 0; g < groups; ++g) sum[g] /= std::max(1.0, count[g]);
  for (size_t i = 0; i < xs.size(); ++i) {
    const double dv = xs[i] - sum[group[i]];
    sq[group[i]] += dv * dv;
  }
  std::vector<double> ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    const int64_t g = group[i];
    const double var = sq[g] / std::max(1.0, count[g]);
    double v = (xs[i] - sum[g]) / std::sqrt(var + epsilon);
    if (scale != nullptr) v = v * (*scale)[channel[i]] + (*bias)[channel[i]];
    ys[i] = v;
  }
  StoreDoubles(ys, y);
  return absl::OkStatus();
}

class InstanceNormKernel final : public KernelBase {
 public:
  InstanceNormKernel(const KernelSpec& spec, DType dtype, float epsilon)
      : KernelBase(spec), dtype_(dtype), epsilon_(epsilon) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* scale,
                           GetInput(ctx, 1, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* bias,
                           GetInput(ctx, 2, dtype_, node()));
    const int rank = x->shape.rank();
    if (rank < 3) return InvalidArgument(node(), "needs rank >= 3");
    const int64_t c = x->shape.dim(1);
    if (scale->num_elements() != c || bias->num_elements() != c) {
      return InvalidArgument(node(), "scale and B must have C elements");
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    std::vector<bool> reduce(rank, true);
    reduce[0] = reduce[1] = false;
    const std::vector<double> sc = LoadAsDoubles(*scale), bs = LoadAsDoubles(*bias);
    return NormalizeGroups(*x, reduce, epsilon_, &sc, &bs, y);
  }

 private:
  DType dtype_;
  float epsilon_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeInstanceNorm(
    const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 3, 3));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new InstanceNormKernel(
      spec, dtype, spec.node->GetFloat("epsilon", 1e-5f)));
}

class MvnKernel final : public KernelBase {
 public:
  MvnKernel(const KernelSpec& spec, DType dtype, std::vector<int64_t> axes)
      : KernelBase(spec), dtype_(dtype), axes_(std::move(axes)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
    std::vector<bool> reduce(rank, false);
    for (int64_t a : axes_) {
      GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(a, rank, false, node()));
      reduce[axis] = true;
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    // ONNX's function body adds 1e-9 to the variance.
    return NormalizeGroups(*x, reduce, 1e-9, nullptr, nullptr, y);
  }

 private:
  DType dtype_;
  std::vector<int64_t> axes_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeMvn(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(
      new MvnKernel(spec, dtype, spec.node->GetInts("axes", {0, 2, 3})));
}

// -------------------------------------------------------------------- LRN

class LrnKernel final : public KernelBase {
 public:
  LrnKernel(const KernelSpec& spec, DType dtype, int64_t size, float alpha,
            float beta, float bias)
      : KernelBase(spec),
        dtype_(dtype),
        size_(size),
        alpha_(alpha),
        beta_(beta),
        bias_(bias) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    if (x->shape.rank() < 3) return InvalidArgument(node(), "needs rank >= 3");
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    const std::vector<double> xs = LoadAsDoubles(*x);
    std::vector<double> ys(xs.size());
    const int64_t n = x->shape.dim(0), c = x->shape.dim(1);
    const int64_t inner = Product(x->shape.dims(), 2, x->shape.rank());
    const int64_t lo = (size_ - 1) / 2, hi = size_ - 1 - lo;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < inner; ++i) {
          double sq = 0;
          for (int64_t k = std::max<int64_t>(0, ch - lo);
               k <= std::min(c - 1, ch + hi); ++k) {
            const double v = xs[(b * c + k) * inner + i];
            sq += v * v;
          }
          const int64_t at = (b * c + ch) * inner + i;
          ys[at] = xs[at] /
                   std::pow(bias_ + alpha_ / static_cast<double>(size_) * sq,
                            static_cast<double>(beta_));
        }
    StoreDoubles(ys, y);
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  int64_t size_;
  float alpha_, beta_, bias_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeLrn(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const int64_t size = spec.node->GetInt("size", 0);
  if (size <= 0) {
    return InvalidArgument(spec.node->Describe(), "size must be > 0");
  }
  return std::unique_ptr<Kernel>(new LrnKernel(
      spec, dtype, size, spec.node->GetFloat("alpha", 1e-4f),
      spec.node->GetFloat("beta", 0.75f), spec.node->GetFloat("bias", 1.0f)));
}

// ------------------------------------------------------ GroupNormalization
//
// X [N, C, ...]: the C channels form num_groups groups of C / G adjacent
// channels; each (sample, group) block is contiguous in memory, and is
// normalised over all its elements. Opset 18 scales and shifts per group
// (scale, bias [G]); opset 21 per channel ([C]). Statistics accumulate in
// double (stash_type 1 asks for at least float32's precision); the
// normalisation is then one multiply-add per element, y = x * a + b with
// a = scale * inv_std and b = bias - mean * a per channel, and blocks run
// in parallel.

// Mean and 1/sqrt(var + eps) of n contiguous floats (two passes).
GLINT_VECTOR_CLONES
void MeanInvStdF32(const float* p, int64_t n, float epsilon, float* mean,
                   float* inv) {
  double sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) sum += p[i];
  const double m = sum / static_cast<double>(n);
  const float mf = static_cast<float>(m);
  double sq = 0;
#pragma omp simd reduction(+ : sq)
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(p[i] - mf);
    sq += d * d;
  }
  *mean = mf;
  *inv = static_cast<float>(
      1.0 / std::sqrt(sq / static_cast<double>(n) + epsilon));
}

// y[i] = x[i] * a + b over n floats.
GLINT_VECTOR_CLONES
void AffineF32(const float* x, int64_t n, float a, float b, float* y) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

class GroupNormKernel final : public KernelBase {
 public:
  GroupNormKernel(const KernelSpec& spec, DType dtype, int64_t groups,
                  float epsilon, bool per_channel)
      : KernelBase(spec),
        dtype_(dtype),
        groups_(groups),
        epsilon_(epsilon),
        per_channel_(per_channel) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* scale,
                           GetInput(ctx, 1, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* bias,
                           GetInput(ctx, 2, dtype_, node()));
    const Shape& xs = x->shape;
    if (xs.rank() < 2) {
      return InvalidArgument(node(), "X ", xs.ToString(),
                             " must be [N, C, ...]");
    }
    const int64_t n = xs.dim(0), c = xs.dim(1);
    if (c % groups_ != 0) {
      return InvalidArgument(node(), "num_groups=", groups_,
                             " does not divide the ", c, " channels of X ",
                             xs.ToString());
    }
    const int64_t params = per_channel_ ? c : groups_;
    for (const TensorView* t : {scale, bias}) {
      if (t->num_elements() != params || t->shape.rank() != 1) {
        return InvalidArgument(node(), "scale and bias must be [",
                               params, "] (", per_channel_ ? "C" : "num_groups",
                               "); got ", t->shape.ToString());
      }
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, xs, dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    const int64_t per_group = c / groups_;
    const int64_t spatial = Product(xs.dims(), 2, xs.rank());
    const int64_t block = per_group * spatial;
    const int64_t blocks = n * groups_;
    if (dtype_ == DType::kFloat32) {
      const float* px = x->as<const float>();
      const float* ps = scale->as<const float>();
      const float* pb = bias->as<const float>();
      float* py = y.as<float>();
      ParallelFor(blocks, std::max<int64_t>(1, 65536 / block),
                  [&](int64_t begin, int64_t end) {
        for (int64_t k = begin; k < end; ++k) {
          const int64_t g = k % groups_;
          const float* in = px + k * block;
          float* out = py + k * block;
          float mean, inv;
          MeanInvStdF32(in, block, epsilon_, &mean, &inv);
          for (int64_t j = 0; j < per_group; ++j) {
            const int64_t p = per_channel_ ? g * per_group + j : g;
            const float a = ps[p] * inv;
            AffineF32(in + j * spatial, spatial, a, pb[p] - mean * a,
                      out + j * spatial);
          }
        }
      });
      return absl::OkStatus();
    }
    const std::vector<double> xv = LoadAsDoubles(*x);
    const std::vector<double> sv = LoadAsDoubles(*scale);
    const std::vector<double> bv = LoadAsDoubles(*bias);
    std::vector<double> yv(xv.size());
    for (int64_t k = 0; k < blocks; ++k) {
      const int64_t g = k % groups_;
      const double* in = xv.data() + k * block;
      double sum = 0;
      for (int64_t i = 0; i < block; ++i) sum += in[i];
      const double mean = sum / static_cast<double>(block);
      double sq = 0;
      for (int64_t i = 0; i < block; ++i) sq += (in[i] - mean) * (in[i] - mean);
      const double inv =
          1.0 / std::sqrt(sq / static_cast<double>(block) + epsilon_);
      for (int64_t j = 0; j < per_group; ++j) {
        const int64_t p = per_channel_ ? g * per_group + j : g;
        for (int64_t i = 0; i < spatial; ++i) {
          const int64_t at = k * block + j * spatial + i;
          yv[at] = (xv[at] - mean) * inv * sv[p] + bv[p];
        }
      }
    }
    StoreDoubles(yv, y);
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  int64_t groups_;
  float epsilon_;
  bool per_channel_;
};

// stash_type (GroupNormalization-21, RMSNormalization-23): the precision
// of the statistics. These kernels compute them in double (float32 input:
// double sums), at least as precise as float32 and float64 ask; float16
// and bfloat16 statistics are not offered.
absl::Status CheckStashType(const KernelSpec& spec, absl::string_view op) {
  const int64_t stash = spec.node->GetInt("stash_type", 1);
  if (stash != 1 && stash != 11) {
    return Unimplemented(spec.node->Describe(), op, "-",
                         spec.opset_version, " attribute stash_type=", stash,
                         " not supported (1: float32 and 11: float64 are)");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeGroupNorm(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 3, 3));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  for (int i = 1; i < 3; ++i) {
    GLINT_RETURN_IF_ERROR(SpecInputDType(spec, i, {dtype}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const std::string node = spec.node->Describe();
  if (!spec.node->HasAttribute("num_groups")) {
    return InvalidArgument(node, "num_groups is required");
  }
  const int64_t groups = spec.node->GetInt("num_groups", 0);
  if (groups < 1) {
    return InvalidArgument(node, "num_groups must be >= 1; got ", groups);
  }
  const bool per_channel = spec.opset_version == 0 || spec.opset_version >= 21;
  if (per_channel) {
    GLINT_RETURN_IF_ERROR(CheckStashType(spec, "GroupNormalization"));
  }
  return std::unique_ptr<Kernel>(new GroupNormKernel(
      spec, dtype, groups, spec.node->GetFloat("epsilon", 1e-5f),
      per_channel));
}

// ------------------------------------------------------- RMSNormalization
//
// Y = X / sqrt(mean(X^2 over the axes from `axis` on) + epsilon) * scale,
// scale broadcast to those axes. Y has scale's dtype (V). The float32 rows
// with a full-length scale (a transformer's RMSNorm) run in parallel, each
// one vectorised sum of squares (accumulated in double) and one
// vectorised multiply.

GLINT_VECTOR_CLONES
void RmsRowF32(const float* x, const float* scale, int64_t n, float epsilon,
               float* y) {
  double sq = 0;
#pragma omp simd reduction(+ : sq)
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i];
    sq += v * v;
  }
  const float inv = static_cast<float>(
      1.0 / std::sqrt(sq / static_cast<double>(n) + epsilon));
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * inv * scale[i];
}

class RmsNormKernel final : public KernelBase {
 public:
  RmsNormKernel(const KernelSpec& spec, DType dtype, DType out_dtype,
                int64_t axis, float epsilon)
      : KernelBase(spec),
        dtype_(dtype),
        out_dtype_(out_dtype),
        axis_(axis),
        epsilon_(epsilon) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* scale,
                           GetInput(ctx, 1, out_dtype_, node()));
    const int rank = x->shape.rank();
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, rank, false, node()));
    const std::vector<int64_t>& d = x->shape.dims();
    const Shape suffix(std::vector<int64_t>(d.begin() + axis, d.end()));
    absl::StatusOr<Shape> b = BroadcastShapes({scale->shape, suffix});
    if (!b.ok() || *b != suffix) {
      return InvalidArgument(node(), "scale ", scale->shape.ToString(),
                             " does not broadcast to ", suffix.ToString());
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        out_dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    const int64_t outer = Product(d, 0, axis);
    const int64_t inner = suffix.NumElements();
    if (dtype_ == DType::kFloat32 && out_dtype_ == DType::kFloat32 &&
        scale->num_elements() == inner) {
      const float* px = x->as<const float>();
      const float* ps = scale->as<const float>();
      float* py = y.as<float>();
      ParallelFor(outer, std::max<int64_t>(1, 65536 / inner),
                  [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          RmsRowF32(px + o * inner, ps, inner, epsilon_, py + o * inner);
        }
      });
      return absl::OkStatus();
    }
    const std::vector<double> xs = LoadAsDoubles(*x);
    const std::vector<double> sc = ExpandTo(*scale, suffix);
    std::vector<double> ys(xs.size());
    for (int64_t o = 0; o < outer; ++o) {
      const double* p = xs.data() + o * inner;
      double sq = 0;
      for (int64_t i = 0; i < inner; ++i) sq += p[i] * p[i];
      const double inv =
          1.0 / std::sqrt(sq / static_cast<double>(inner) + epsilon_);
      for (int64_t i = 0; i < inner; ++i) {
        ys[o * inner + i] = p[i] * inv * sc[i];
      }
    }
    StoreDoubles(ys, y);
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  DType out_dtype_;
  int64_t axis_;
  float epsilon_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeRmsNorm(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 2));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllFloatDTypes));
  GLINT_ASSIGN_OR_RETURN(DType out, SpecInputDType(spec, 1, kAllFloatDTypes));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, out).status());
  GLINT_RETURN_IF_ERROR(CheckStashType(spec, "RMSNormalization"));
  return std::unique_ptr<Kernel>(new RmsNormKernel(
      spec, dtype, out, spec.node->GetInt("axis", -1),
      spec.node->GetFloat("epsilon", 1e-5f)));
}

}  // namespace

void RegisterMoreNormalizationKernels(KernelRegistry* registry) {
  registry->Register("LayerNormalization", MakeLayerNorm);
  registry->Register("InstanceNormalization", MakeInstanceNorm);
  registry->Register("MeanVarianceNormalization", MakeMvn);
  registry->Register("LRN", MakeLrn);
  registry->Register("GroupNormalization", MakeGroupNorm);
  registry->Register("RMSNormalization", MakeRmsNorm);
}

}  // namespace glint::cpu
