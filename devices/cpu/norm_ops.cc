// Normalisations over groups of elements: LayerNormalization,
// InstanceNormalization, MeanVarianceNormalization, LRN. Statistics are
// computed in double whatever the storage type (float16 included).
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

}  // namespace

void RegisterMoreNormalizationKernels(KernelRegistry* registry) {
  registry->Register("LayerNormalization", MakeLayerNorm);
  registry->Register("InstanceNormalization", MakeInstanceNorm);
  registry->Register("MeanVarianceNormalization", MakeMvn);
  registry->Register("LRN", MakeLrn);
}

}  // namespace glint::cpu
