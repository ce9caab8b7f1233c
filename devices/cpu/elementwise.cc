// Elementwise kernels: Add, Sub, Mul, Div with numpy broadcasting; Relu,
// Sigmoid, Tanh.
//
// Integer arithmetic wraps around (two's complement) instead of being
// undefined on overflow; integer Div truncates toward zero (as C++ and
// onnxruntime do) and a zero divisor is INVALID_ARGUMENT. Float division
// by zero follows IEEE 754 (inf/nan).
#include <cmath>
#include <memory>
#include <type_traits>
#include <vector>

#include "devices/cpu/broadcast.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"
#include "runtime/status_macros.h"

namespace glint::cpu {
namespace {

// The type integer arithmetic is done in so that overflow wraps: unsigned,
// and at least as wide as unsigned int so that promotion cannot bring back
// signed (undefined) overflow for the narrow types.
template <typename T, bool kIntegral = std::is_integral_v<T>>
struct WrapType {
  using type = T;
};
template <typename T>
struct WrapType<T, true> {
  using type = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                                  std::make_unsigned_t<T>>;
};

template <typename T>
using W = typename WrapType<T>::type;

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<W<T>>(a) + static_cast<W<T>>(b));
  }
};
struct SubOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<W<T>>(a) - static_cast<W<T>>(b));
  }
};
struct MulOp {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<W<T>>(a) * static_cast<W<T>>(b));
  }
};
// Integer divisors are checked to be non-zero before this runs.
struct DivOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      // min / -1 overflows; negate with wrap-around instead.
      if (b == -1) return static_cast<T>(W<T>(0) - static_cast<W<T>>(a));
    }
    return static_cast<T>(a / b);
  }
};

// One row: the common contiguous / scalar cases get their own loops so the
// compiler can vectorise them.
template <typename T, typename Op>
void BinaryRow(const T* a, int64_t sa, const T* b, int64_t sb, T* out,
               int64_t n, Op op) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], b[i]);
  } else if (sa == 0 && sb == 1) {
    const T x = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = op(x, b[i]);
  } else if (sa == 1 && sb == 0) {
    const T y = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i], y);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = op(a[i * sa], b[i * sb]);
  }
}

template <typename Op>
class BinaryKernel final : public KernelBase {
 public:
  BinaryKernel(const KernelSpec& spec, DType dtype)
      : KernelBase(spec), dtype_(dtype) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* a,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* b,
                           GetInput(ctx, 1, dtype_, node()));
    absl::StatusOr<Shape> out_shape = BroadcastShapes({a->shape, b->shape});
    if (!out_shape.ok()) {
      return InvalidArgument(node(), out_shape.status().message());
    }
    GLINT_ASSIGN_OR_RETURN(TensorView out, AllocateOutput(ctx, 0, *out_shape,
                                                          dtype_, node()));
    if (out.num_elements() == 0) return absl::OkStatus();
    return VisitNumeric(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* pa = a->as<const T>();
      const T* pb = b->as<const T>();
      if constexpr (std::is_same_v<Op, DivOp> && std::is_integral_v<T>) {
        for (int64_t i = 0; i < b->num_elements(); ++i) {
          if (pb[i] == 0) {
            return InvalidArgument(node(), "integer division by zero");
          }
        }
      }
      T* po = out.as<T>();
      const BroadcastPlan plan = MakeBroadcastPlan(out.shape,
                                                   {a->shape, b->shape});
      const int64_t sa = plan.strides[0].back();
      const int64_t sb = plan.strides[1].back();
      ForEachBroadcastRow(plan, [&](int64_t o,
                                    const std::vector<int64_t>& in) {
        BinaryRow(pa + in[0], sa, pb + in[1], sb, po + o, plan.inner(), Op());
      });
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
};

template <typename Op>
absl::StatusOr<std::unique_ptr<Kernel>> MakeBinary(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 2));
  GLINT_ASSIGN_OR_RETURN(DType dtype,
                         SpecInputDType(spec, 0, kNumericDTypes));
  if (!spec.has_input(1) || spec.inputs[1].dtype != dtype) {
    return InvalidArgument(spec.node->Describe(),
                           "both inputs must have dtype ", DTypeName(dtype));
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new BinaryKernel<Op>(spec, dtype));
}

struct ReluOp {
  template <typename T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;  // Written so that NaN propagates.
  }
};
struct SigmoidOp {
  template <typename T>
  T operator()(T x) const {
    // Split by sign so that exp never overflows.
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
};
struct TanhOp {
  template <typename T>
  T operator()(T x) const {
    return std::tanh(x);
  }
};

template <typename Op>
class UnaryKernel final : public KernelBase {
 public:
  UnaryKernel(const KernelSpec& spec, DType dtype)
      : KernelBase(spec), dtype_(dtype) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    return VisitNumeric(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* px = x->as<const T>();
      T* py = y.as<T>();
      const int64_t n = x->num_elements();
      Op op;
      for (int64_t i = 0; i < n; ++i) py[i] = op(px[i]);
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
};

template <typename Op>
KernelFactory UnaryFactory(std::initializer_list<DType> allowed) {
  return [allowed](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
    GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, allowed));
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
    return std::unique_ptr<Kernel>(new UnaryKernel<Op>(spec, dtype));
  };
}

}  // namespace

void RegisterElementwiseKernels(KernelRegistry* registry) {
  registry->Register("Add", MakeBinary<AddOp>);
  registry->Register("Sub", MakeBinary<SubOp>);
  registry->Register("Mul", MakeBinary<MulOp>);
  registry->Register("Div", MakeBinary<DivOp>);
  registry->Register("Relu", UnaryFactory<ReluOp>(kSignedDTypes));
  registry->Register("Sigmoid", UnaryFactory<SigmoidOp>(kFloatDTypes));
  registry->Register("Tanh", UnaryFactory<TanhOp>(kFloatDTypes));
}

}  // namespace glint::cpu
