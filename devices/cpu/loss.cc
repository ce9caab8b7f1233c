// Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
// (which is log-softmax over axis 1 followed by NLL), with per-class
// weights, ignore_index and reduction none / sum / mean.
#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

enum class Reduction { kNone, kSum, kMean };

class LossKernel final : public KernelBase {
 public:
  LossKernel(const KernelSpec& spec, DType dtype, bool softmax,
             Reduction reduction, std::optional<int64_t> ignore_index)
      : KernelBase(spec),
        dtype_(dtype),
        softmax_(softmax),
        reduction_(reduction),
        ignore_(ignore_index) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* t,
                           GetInput(ctx, 1, DType::kUndefined, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* w,
                           GetOptionalInput(ctx, 2, dtype_, node()));
    const int rank = x->shape.rank();
    if (rank < 2 || t->shape.rank() != rank - 1) {
      return InvalidArgument(node(), "input ", x->shape.ToString(),
                             " and target ", t->shape.ToString(),
                             " do not match");
    }
    const int64_t n = x->shape.dim(0), c = x->shape.dim(1);
    const int64_t inner = Product(x->shape.dims(), 2, rank);
    for (int d = 0; d < rank - 1; ++d) {
      if (t->shape.dim(d) != x->shape.dim(d == 0 ? 0 : d + 1)) {
        return InvalidArgument(node(), "target shape does not match input");
      }
    }
    if (w != nullptr && w->num_elements() != c) {
      return InvalidArgument(node(), "weight must have C elements");
    }
    std::vector<double> xs = LoadAsDoubles(*x);
    if (softmax_) {
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < inner; ++i) {
          double mx = -INFINITY;
          for (int64_t k = 0; k < c; ++k) {
            mx = std::max(mx, xs[(b * c + k) * inner + i]);
          }
          double sum = 0;
          for (int64_t k = 0; k < c; ++k) {
            sum += std::exp(xs[(b * c + k) * inner + i] - mx);
          }
          const double ls = std::log(sum);
          for (int64_t k = 0; k < c; ++k) {
            double& v = xs[(b * c + k) * inner + i];
            v = v - mx - ls;
          }
        }
    }
    const std::vector<double> ws =
        w != nullptr ? LoadAsDoubles(*w) : std::vector<double>(c, 1.0);
    std::vector<double> loss(n * inner);
    double weight_sum = 0;
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = b * inner + i;
        const int64_t k = t->dtype == DType::kInt32
                              ? t->as<const int32_t>()[at]
                              : t->as<const int64_t>()[at];
        if (ignore_.has_value() && k == *ignore_) {
          loss[at] = 0;
          continue;
        }
        if (k < 0 || k >= c) {
          return InvalidArgument(node(), "target ", k, " is outside [0, ",
                                 c, ")");
        }
        loss[at] = -xs[(b * c + k) * inner + i] * ws[k];
        weight_sum += ws[k];
      }
    if (reduction_ == Reduction::kNone) {
      GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
          ctx, 0, t->shape, dtype_, node()));
      StoreDoubles(loss, y);
    } else {
      double total = 0;
      for (double v : loss) total += v;
      if (reduction_ == Reduction::kMean) total /= weight_sum;
      GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
          ctx, 0, Shape(), dtype_, node()));
      StoreDoubles({total}, y);
    }
    if (softmax_ && ctx.output_used(1)) {
      GLINT_ASSIGN_OR_RETURN(TensorView lp, AllocateOutput(
          ctx, 1, x->shape, dtype_, node()));
      StoreDoubles(xs, lp);
    }
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  bool softmax_;
  Reduction reduction_;
  std::optional<int64_t> ignore_;
};

KernelFactory LossFactory(bool softmax) {
  return [softmax](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 3));
    GLINT_ASSIGN_OR_RETURN(DType dtype,
                           SpecInputDType(spec, 0, kAllFloatDTypes));
    GLINT_RETURN_IF_ERROR(
        SpecInputDType(spec, 1, {DType::kInt32, DType::kInt64}).status());
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
    const std::string r = spec.node->GetString("reduction", "mean");
    Reduction reduction;
    if (r == "none") {
      reduction = Reduction::kNone;
    } else if (r == "sum") {
      reduction = Reduction::kSum;
    } else if (r == "mean") {
      reduction = Reduction::kMean;
    } else {
      return InvalidArgument(spec.node->Describe(), "unknown reduction '", r,
                             "'");
    }
    std::optional<int64_t> ignore;
    if (spec.node->HasAttribute("ignore_index")) {
      ignore = spec.node->GetInt("ignore_index", 0);
    }
    return std::unique_ptr<Kernel>(
        new LossKernel(spec, dtype, softmax, reduction, ignore));
  };
}

}  // namespace

void RegisterLossKernels(KernelRegistry* registry) {
  registry->Register("NegativeLogLikelihoodLoss", LossFactory(false));
  registry->Register("SoftmaxCrossEntropyLoss", LossFactory(true));
}

}  // namespace glint::cpu
