// Elementwise kernels, written once over generic ops:
//   binary with numpy broadcasting: Add, Sub, Mul, Div, Pow, Mod, PRelu,
//     BitShift, Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And,
//     Or, Xor, BitwiseAnd, BitwiseOr, BitwiseXor;
//   variadic: Max, Min, Sum, Mean;  ternary: Where;
//   unary: math functions, activations (with their attributes, Mish), Not,
//     BitwiseNot, IsNaN, IsInf, Clip, Cast, CastLike.
//
// Each op states which storage types it accepts (kOk<S>); float16 and
// bfloat16 are computed in float32 (element_types.h).
//
// Integer arithmetic wraps around (two's complement) instead of being
// undefined on overflow; integer Div truncates toward zero (as C++ and
// onnxruntime do) and a zero divisor, for Div and Mod, is INVALID_ARGUMENT.
// Float division by zero follows IEEE 754 (inf/nan).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "devices/cpu/broadcast.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/cpu_rewrites.h"
#include "devices/cpu/register.h"

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

template <typename S>
inline constexpr bool kIsBool = std::is_same_v<S, bool>;
template <typename S>
inline constexpr bool kIsNumeric = !kIsBool<S>;
template <typename S>
inline constexpr bool kIsSigned =
    kIsFloatStorage<S> || (std::is_integral_v<S> && std::is_signed_v<S>);
template <typename S>
inline constexpr bool kIsInteger = std::is_integral_v<S> && !kIsBool<S>;

// UNIMPLEMENTED unless op accepts the storage type of `dtype`.
template <typename Op>
absl::Status CheckOpDType(const KernelSpec& spec, DType dtype, int input) {
  return VisitDType(dtype, [&](auto tag) -> absl::Status {
    using S = typename decltype(tag)::type;
    if constexpr (Op::template kOk<S>) {
      return absl::OkStatus();
    } else {
      return Unimplemented(spec.node->Describe(), "input ", input,
                           " has dtype ", DTypeName(dtype),
                           ", which the CPU kernel does not support");
    }
  });
}

// ------------------------------------------------------------ binary ops
//
// An op maps two compute values to a compute value or a bool.

struct AddOp {
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C a, C b) const {
    return static_cast<C>(static_cast<W<C>>(a) + static_cast<W<C>>(b));
  }
};
struct SubOp {
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C a, C b) const {
    return static_cast<C>(static_cast<W<C>>(a) - static_cast<W<C>>(b));
  }
};
struct MulOp {
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C a, C b) const {
    return static_cast<C>(static_cast<W<C>>(a) * static_cast<W<C>>(b));
  }
};
// Integer divisors are checked to be non-zero before this runs.
struct DivOp {
  static constexpr bool kNonZeroDivisor = true;
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) {
      // min / -1 overflows; negate with wrap-around instead.
      if (b == -1) return static_cast<C>(W<C>(0) - static_cast<W<C>>(a));
    }
    return static_cast<C>(a / b);
  }
};
// fmod=0 (integers only): the result takes the divisor's sign, as Python's
// %; fmod=1: C's fmod, the dividend's sign.
struct ModOp {
  static constexpr bool kNonZeroDivisor = true;
  bool fmod = false;
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      C r = std::fmod(a, b);
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    } else {
      if constexpr (std::is_signed_v<C>) {
        if (b == -1) return 0;  // Avoids min % -1 overflowing.
      }
      C r = static_cast<C>(a % b);
      if constexpr (std::is_signed_v<C>) {
        if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      }
      return r;
    }
  }
};
struct PReluOp {
  template <typename S> static constexpr bool kOk = kIsSigned<S>;
  template <typename C> C operator()(C x, C slope) const {
    return x < C(0) ? static_cast<C>(slope * x) : x;
  }
};
struct BitShiftOp {
  bool left = true;
  template <typename S> static constexpr bool kOk = std::is_unsigned_v<S> &&
                                                    !kIsBool<S>;
  template <typename C> C operator()(C a, C b) const {
    if (b >= sizeof(C) * 8) return 0;
    return left ? static_cast<C>(a << b) : static_cast<C>(a >> b);
  }
};
struct EqualOp {
  template <typename S> static constexpr bool kOk = true;
  template <typename C> bool operator()(C a, C b) const { return a == b; }
};
struct LessOp {
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> bool operator()(C a, C b) const { return a < b; }
};
struct GreaterOp {
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> bool operator()(C a, C b) const { return a > b; }
};
struct LessOrEqualOp {
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> bool operator()(C a, C b) const { return a <= b; }
};
struct GreaterOrEqualOp {
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> bool operator()(C a, C b) const { return a >= b; }
};
struct AndOp {
  template <typename S> static constexpr bool kOk = kIsBool<S>;
  template <typename C> bool operator()(C a, C b) const { return a && b; }
};
struct OrOp {
  template <typename S> static constexpr bool kOk = kIsBool<S>;
  template <typename C> bool operator()(C a, C b) const { return a || b; }
};
struct XorOp {
  template <typename S> static constexpr bool kOk = kIsBool<S>;
  template <typename C> bool operator()(C a, C b) const { return a != b; }
};
// Opset 18's bitwise ops, on the integer types only.
struct BitwiseAndOp {
  template <typename S> static constexpr bool kOk = kIsInteger<S>;
  template <typename C> C operator()(C a, C b) const {
    return static_cast<C>(a & b);
  }
};
struct BitwiseOrOp {
  template <typename S> static constexpr bool kOk = kIsInteger<S>;
  template <typename C> C operator()(C a, C b) const {
    return static_cast<C>(a | b);
  }
};
struct BitwiseXorOp {
  template <typename S> static constexpr bool kOk = kIsInteger<S>;
  template <typename C> C operator()(C a, C b) const {
    return static_cast<C>(a ^ b);
  }
};
// NaN propagates, as numpy's maximum/minimum and onnxruntime do.
struct MaxOp {
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return a < b ? b : a;
  }
};
struct MinOp {
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      if (std::isnan(a) || std::isnan(b)) return a + b;
    }
    return b < a ? b : a;
  }
};

// One row of a broadcast binary op: the common contiguous / scalar cases
// get their own loops so that the compiler can vectorise them.
template <typename A, typename B, typename O, typename F>
void BinaryRow(const A* a, int64_t sa, const B* b, int64_t sb, O* out,
               int64_t n, const F& f) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
  } else if (sa == 0 && sb == 1) {
    const A x = *a;
    for (int64_t i = 0; i < n; ++i) out[i] = f(x, b[i]);
  } else if (sa == 1 && sb == 0) {
    const B y = *b;
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], y);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = f(a[i * sa], b[i * sb]);
  }
}

// out[i] = f(a[i'], b[i'']) over the broadcast of a and b to out.shape.
template <typename A, typename B, typename O, typename F>
void BroadcastBinary(const TensorView& a, const TensorView& b,
                     const TensorView& out, const F& f) {
  if (out.num_elements() == 0) return;
  const BroadcastPlan plan = MakeBroadcastPlan(out.shape, {a.shape, b.shape});
  const A* pa = a.as<const A>();
  const B* pb = b.as<const B>();
  O* po = out.as<O>();
  const int64_t sa = plan.strides[0].back();
  const int64_t sb = plan.strides[1].back();
  ForEachBroadcastRow(plan, [&](int64_t o, const std::vector<int64_t>& in) {
    BinaryRow(pa + in[0], sa, pb + in[1], sb, po + o, plan.inner(), f);
  });
}

template <typename Op>
class BinaryKernel final : public KernelBase {
 public:
  BinaryKernel(const KernelSpec& spec, DType dtype, DType out_dtype, Op op)
      : KernelBase(spec), dtype_(dtype), out_dtype_(out_dtype), op_(op) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* a,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* b,
                           GetInput(ctx, 1, dtype_, node()));
    absl::StatusOr<Shape> shape = BroadcastShapes({a->shape, b->shape});
    if (!shape.ok()) return InvalidArgument(node(), shape.status().message());
    GLINT_ASSIGN_OR_RETURN(TensorView out, AllocateOutput(ctx, 0, *shape,
                                                          out_dtype_, node()));
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      if constexpr (Op::template kOk<S>) {
        using C = ComputeType<S>;
        using R = decltype(std::declval<const Op&>()(C{}, C{}));
        using O = std::conditional_t<std::is_same_v<R, bool>, bool, S>;
        if constexpr (std::is_integral_v<S> && !kIsBool<S>) {
          if constexpr (HasNonZeroDivisor<Op>(0)) {
            const S* pb = b->as<const S>();
            for (int64_t i = 0; i < b->num_elements(); ++i) {
              if (pb[i] == 0) {
                return InvalidArgument(node(), "integer division by zero");
              }
            }
          }
        }
        const Op op = op_;
        BroadcastBinary<S, S, O>(*a, *b, out, [op](S x, S y) {
          return Store<O>(op(Load<C>(x), Load<C>(y)));
        });
        return absl::OkStatus();
      } else {
        return Unimplemented(node(), "unsupported dtype");
      }
    });
  }

 private:
  template <typename T>
  static constexpr auto HasNonZeroDivisor(int)
      -> decltype(T::kNonZeroDivisor, bool()) {
    return T::kNonZeroDivisor;
  }
  template <typename T>
  static constexpr bool HasNonZeroDivisor(...) {
    return false;
  }

  DType dtype_;
  DType out_dtype_;
  Op op_;
};

// Output dtype of a binary op over storage type of `dtype`.
template <typename Op>
DType BinaryOutDType(DType dtype, const Op& op) {
  DType out = dtype;
  (void)VisitDType(dtype, [&](auto tag) -> absl::Status {
    using S = typename decltype(tag)::type;
    if constexpr (Op::template kOk<S>) {
      using C = ComputeType<S>;
      if (std::is_same_v<decltype(op(C{}, C{})), bool>) out = DType::kBool;
    }
    return absl::OkStatus();
  });
  return out;
}

template <typename Op>
KernelFactory BinaryFactory(std::function<Op(const Node&)> make_op =
                                [](const Node&) { return Op(); }) {
  return [make_op](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 2));
    const std::string node = spec.node->Describe();
    if (!spec.has_input(0) || !spec.has_input(1)) {
      return InvalidArgument(node, "needs two inputs");
    }
    const DType dtype = spec.inputs[0].dtype;
    if (spec.inputs[1].dtype != dtype) {
      return InvalidArgument(node, "both inputs must have dtype ",
                             DTypeName(dtype));
    }
    GLINT_RETURN_IF_ERROR(CheckOpDType<Op>(spec, dtype, 0));
    const Op op = make_op(*spec.node);
    if constexpr (std::is_same_v<Op, ModOp>) {
      if (!op.fmod && DTypeIn(dtype, kAllFloatDTypes)) {
        return InvalidArgument(node, "fmod must be 1 for floating types");
      }
    }
    const DType out = BinaryOutDType(dtype, op);
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, out).status());
    return std::unique_ptr<Kernel>(new BinaryKernel<Op>(spec, dtype, out, op));
  };
}

// ------------------------------------------------------------------- Pow
//
// The exponent may have another dtype than the base (opset 12+); computed
// in double, the result has the base's dtype.

class PowKernel final : public KernelBase {
 public:
  PowKernel(const KernelSpec& spec, DType x, DType y)
      : KernelBase(spec), x_(x), y_(y) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* a, GetInput(ctx, 0, x_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* b, GetInput(ctx, 1, y_, node()));
    absl::StatusOr<Shape> shape = BroadcastShapes({a->shape, b->shape});
    if (!shape.ok()) return InvalidArgument(node(), shape.status().message());
    GLINT_ASSIGN_OR_RETURN(TensorView out,
                           AllocateOutput(ctx, 0, *shape, x_, node()));
    return VisitDType(x_, [&](auto xt) -> absl::Status {
      using X = typename decltype(xt)::type;
      return VisitDType(y_, [&](auto yt) -> absl::Status {
        using Y = typename decltype(yt)::type;
        if constexpr (kIsNumeric<X> && kIsNumeric<Y>) {
          BroadcastBinary<X, Y, X>(*a, *b, out, [](X x, Y y) {
            if constexpr (std::is_same_v<ComputeType<X>, float> &&
                          kIsFloatStorage<Y>) {
              return Store<X>(std::pow(Load<float>(x), Load<float>(y)));
            } else {
              return Store<X>(std::pow(Load<double>(x), Load<double>(y)));
            }
          });
          return absl::OkStatus();
        } else {
          return Unimplemented(node(), "unsupported dtype");
        }
      });
    });
  }

 private:
  DType x_, y_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakePow(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 2));
  GLINT_ASSIGN_OR_RETURN(DType x, SpecInputDType(spec, 0, kAllNumericDTypes));
  GLINT_ASSIGN_OR_RETURN(DType y, SpecInputDType(spec, 1, kAllNumericDTypes));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, x).status());
  return std::unique_ptr<Kernel>(new PowKernel(spec, x, y));
}

// ---------------------------------------------------- variadic and Where

enum class Fold { kMax, kMin, kSum, kMean };

class VariadicKernel final : public KernelBase {
 public:
  VariadicKernel(const KernelSpec& spec, DType dtype, Fold fold)
      : KernelBase(spec), dtype_(dtype), fold_(fold) {}

  absl::Status Compute(KernelContext& ctx) const override {
    std::vector<const TensorView*> ins;
    std::vector<Shape> shapes;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      GLINT_ASSIGN_OR_RETURN(const TensorView* in,
                             GetInput(ctx, i, dtype_, node()));
      ins.push_back(in);
      shapes.push_back(in->shape);
    }
    absl::StatusOr<Shape> shape = BroadcastShapes(shapes);
    if (!shape.ok()) return InvalidArgument(node(), shape.status().message());
    GLINT_ASSIGN_OR_RETURN(TensorView out,
                           AllocateOutput(ctx, 0, *shape, dtype_, node()));
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      if constexpr (kIsNumeric<S>) {
        using C = ComputeType<S>;
        // out = in0 broadcast, then out = f(out, in_k): out and in_k agree
        // element for element, so updating out in place is safe.
        TensorView zero{dtype_, Shape(), nullptr};
        S z = Store<S>(C(0));
        zero.data = &z;
        BroadcastBinary<S, S, S>(*ins[0], zero, out,
                                 [](S x, S) { return x; });
        for (size_t k = 1; k < ins.size(); ++k) {
          switch (fold_) {
            case Fold::kMax:
              Apply<S>(out, *ins[k], MaxOp());
              break;
            case Fold::kMin:
              Apply<S>(out, *ins[k], MinOp());
              break;
            case Fold::kSum:
            case Fold::kMean:
              Apply<S>(out, *ins[k], AddOp());
              break;
          }
        }
        if (fold_ == Fold::kMean && ins.size() > 1) {
          S* p = out.as<S>();
          const C n = static_cast<C>(ins.size());
          for (int64_t i = 0; i < out.num_elements(); ++i) {
            p[i] = Store<S>(static_cast<C>(Load<C>(p[i]) / n));
          }
        }
        return absl::OkStatus();
      } else {
        return Unimplemented(node(), "unsupported dtype");
      }
    });
  }

 private:
  template <typename S, typename Op>
  static void Apply(const TensorView& out, const TensorView& in, Op op) {
    using C = ComputeType<S>;
    BroadcastBinary<S, S, S>(out, in, out, [op](S x, S y) {
      return Store<S>(op(Load<C>(x), Load<C>(y)));
    });
  }

  DType dtype_;
  Fold fold_;
};

KernelFactory VariadicFactory(Fold fold) {
  return [fold](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    const std::string node = spec.node->Describe();
    if (spec.node->num_inputs() < 1) {
      return InvalidArgument(node, "needs at least one input");
    }
    GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, spec.node->num_inputs()));
    GLINT_ASSIGN_OR_RETURN(DType dtype,
                           SpecInputDType(spec, 0, kAllNumericDTypes));
    for (int i = 1; i < spec.node->num_inputs(); ++i) {
      if (!spec.has_input(i) || spec.inputs[i].dtype != dtype) {
        return InvalidArgument(node, "every input must have dtype ",
                               DTypeName(dtype));
      }
    }
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
    return std::unique_ptr<Kernel>(new VariadicKernel(spec, dtype, fold));
  };
}

class WhereKernel final : public KernelBase {
 public:
  WhereKernel(const KernelSpec& spec, DType dtype)
      : KernelBase(spec), dtype_(dtype) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* c,
                           GetInput(ctx, 0, DType::kBool, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 1, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* y,
                           GetInput(ctx, 2, dtype_, node()));
    absl::StatusOr<Shape> shape =
        BroadcastShapes({c->shape, x->shape, y->shape});
    if (!shape.ok()) return InvalidArgument(node(), shape.status().message());
    GLINT_ASSIGN_OR_RETURN(TensorView out,
                           AllocateOutput(ctx, 0, *shape, dtype_, node()));
    if (out.num_elements() == 0) return absl::OkStatus();
    return VisitBySize(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const BroadcastPlan plan =
          MakeBroadcastPlan(out.shape, {c->shape, x->shape, y->shape});
      const bool* pc = c->as<const bool>();
      const T* px = x->as<const T>();
      const T* py = y->as<const T>();
      T* po = out.as<T>();
      const int64_t sc = plan.strides[0].back();
      const int64_t sx = plan.strides[1].back();
      const int64_t sy = plan.strides[2].back();
      ForEachBroadcastRow(plan, [&](int64_t o, const std::vector<int64_t>& in) {
        for (int64_t i = 0; i < plan.inner(); ++i) {
          po[o + i] = pc[in[0] + i * sc] ? px[in[1] + i * sx]
                                         : py[in[2] + i * sy];
        }
      });
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeWhere(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 3, 3));
  GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 0, {DType::kBool}).status());
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 1, kEveryDType));
  if (!spec.has_input(2) || spec.inputs[2].dtype != dtype) {
    return InvalidArgument(spec.node->Describe(),
                           "X and Y must have one dtype");
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new WhereKernel(spec, dtype));
}

// ------------------------------------------------------------- unary ops
//
// An op maps a compute value to a compute value (or a bool); attributes
// are read by its constructor from the node.

#define GLINT_FLOAT_UNARY(Name, expr)                              \
  struct Name {                                                    \
    explicit Name(const Node&) {}                                  \
    template <typename S> static constexpr bool kOk =              \
        kIsFloatStorage<S>;                                        \
    template <typename C> C operator()(C x) const { return expr; } \
  };

GLINT_FLOAT_UNARY(ExpOp, std::exp(x))
GLINT_FLOAT_UNARY(LogOp, std::log(x))
GLINT_FLOAT_UNARY(SqrtOp, std::sqrt(x))
GLINT_FLOAT_UNARY(ErfOp, std::erf(x))
GLINT_FLOAT_UNARY(SinOp, std::sin(x))
GLINT_FLOAT_UNARY(CosOp, std::cos(x))
GLINT_FLOAT_UNARY(TanOp, std::tan(x))
GLINT_FLOAT_UNARY(AsinOp, std::asin(x))
GLINT_FLOAT_UNARY(AcosOp, std::acos(x))
GLINT_FLOAT_UNARY(AtanOp, std::atan(x))
GLINT_FLOAT_UNARY(SinhOp, std::sinh(x))
GLINT_FLOAT_UNARY(CoshOp, std::cosh(x))
GLINT_FLOAT_UNARY(AsinhOp, std::asinh(x))
GLINT_FLOAT_UNARY(AcoshOp, std::acosh(x))
GLINT_FLOAT_UNARY(AtanhOp, std::atanh(x))
GLINT_FLOAT_UNARY(TanhOp, std::tanh(x))
GLINT_FLOAT_UNARY(ReciprocalOp, C(1) / x)
GLINT_FLOAT_UNARY(FloorOp, std::floor(x))
GLINT_FLOAT_UNARY(CeilOp, std::ceil(x))
// Halves round to even, as numpy.round and ONNX's Round.
GLINT_FLOAT_UNARY(RoundOp, std::nearbyint(x))
GLINT_FLOAT_UNARY(SoftsignOp, x / (C(1) + std::fabs(x)))
// log(1 + e^x) without overflow for large x.
GLINT_FLOAT_UNARY(SoftplusOp,
                  x > C(0) ? x + std::log1p(std::exp(-x))
                           : std::log1p(std::exp(x)))
GLINT_FLOAT_UNARY(HardSwishOp,
                  x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5))))
// Mish (opset 18): x * tanh(softplus(x)), softplus as above.
GLINT_FLOAT_UNARY(MishOp,
                  x * std::tanh(x > C(0) ? x + std::log1p(std::exp(-x))
                                         : std::log1p(std::exp(x))))
// Split by sign so that exp never overflows.
GLINT_FLOAT_UNARY(SigmoidOp,
                  x >= C(0) ? C(1) / (C(1) + std::exp(-x))
                            : std::exp(x) / (C(1) + std::exp(x)))
#undef GLINT_FLOAT_UNARY

struct ReluOp {
  explicit ReluOp(const Node&) {}
  template <typename S> static constexpr bool kOk = kIsSigned<S>;
  // Written so that NaN propagates.
  template <typename C> C operator()(C x) const { return x < C(0) ? C(0) : x; }
};
struct NegOp {
  explicit NegOp(const Node&) {}
  template <typename S> static constexpr bool kOk = kIsSigned<S>;
  template <typename C> C operator()(C x) const {
    return static_cast<C>(W<C>(0) - static_cast<W<C>>(x));
  }
};
struct AbsOp {
  explicit AbsOp(const Node&) {}
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else {
      return x < C(0) ? static_cast<C>(W<C>(0) - static_cast<W<C>>(x)) : x;
    }
  }
};
struct SignOp {
  explicit SignOp(const Node&) {}
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C x) const {
    return x > C(0) ? C(1) : (x < C(0) ? static_cast<C>(-1) : x);
  }
};
struct NotOp {
  explicit NotOp(const Node&) {}
  template <typename S> static constexpr bool kOk = kIsBool<S>;
  template <typename C> bool operator()(C x) const { return !x; }
};
struct BitwiseNotOp {
  explicit BitwiseNotOp(const Node&) {}
  template <typename S> static constexpr bool kOk = kIsInteger<S>;
  template <typename C> C operator()(C x) const { return static_cast<C>(~x); }
};
struct IsNaNOp {
  explicit IsNaNOp(const Node&) {}
  template <typename S> static constexpr bool kOk = kIsFloatStorage<S>;
  template <typename C> bool operator()(C x) const { return std::isnan(x); }
};
struct IsInfOp {
  explicit IsInfOp(const Node& n)
      : neg(n.GetInt("detect_negative", 1) != 0),
        pos(n.GetInt("detect_positive", 1) != 0) {}
  bool neg, pos;
  template <typename S> static constexpr bool kOk = kIsFloatStorage<S>;
  template <typename C> bool operator()(C x) const {
    return std::isinf(x) && (x > 0 ? pos : neg);
  }
};
struct LeakyReluOp {
  explicit LeakyReluOp(const Node& n) : alpha(n.GetFloat("alpha", 0.01f)) {}
  float alpha;
  template <typename S> static constexpr bool kOk = kIsFloatStorage<S>;
  template <typename C> C operator()(C x) const {
    return x < C(0) ? static_cast<C>(alpha) * x : x;
  }
};
struct EluOp {
  explicit EluOp(const Node& n) : alpha(n.GetFloat("alpha", 1.0f)) {}
  float alpha;
  template <typename S> static constexpr bool kOk = kIsFloatStorage<S>;
  template <typename C> C operator()(C x) const {
    return x < C(0) ? static_cast<C>(alpha) * (std::exp(x) - C(1)) : x;
  }
};
struct CeluOp {
  explicit CeluOp(const Node& n) : alpha(n.GetFloat("alpha", 1.0f)) {}
  float alpha;
  template <typename S> static constexpr bool kOk = kIsFloatStorage<S>;
  template <typename C> C operator()(C x) const {
    const C a = static_cast<C>(alpha);
    return std::max(C(0), x) + std::min(C(0), a * (std::exp(x / a) - C(1)));
  }
};
struct SeluOp {
  explicit SeluOp(const Node& n)
      : alpha(n.GetFloat("alpha", 1.67326319217681884765625f)),
        gamma(n.GetFloat("gamma", 1.05070102214813232421875f)) {}
  float alpha, gamma;
  template <typename S> static constexpr bool kOk = kIsFloatStorage<S>;
  template <typename C> C operator()(C x) const {
    const C g = static_cast<C>(gamma);
    return x > C(0) ? g * x : g * (static_cast<C>(alpha) * std::exp(x) -
                                   static_cast<C>(alpha));
  }
};
struct HardSigmoidOp {
  explicit HardSigmoidOp(const Node& n)
      : alpha(n.GetFloat("alpha", 0.2f)), beta(n.GetFloat("beta", 0.5f)) {}
  float alpha, beta;
  template <typename S> static constexpr bool kOk = kIsFloatStorage<S>;
  template <typename C> C operator()(C x) const {
    return std::max(C(0), std::min(C(1), static_cast<C>(alpha) * x +
                                             static_cast<C>(beta)));
  }
};
struct ThresholdedReluOp {
  explicit ThresholdedReluOp(const Node& n)
      : alpha(n.GetFloat("alpha", 1.0f)) {}
  float alpha;
  template <typename S> static constexpr bool kOk = kIsFloatStorage<S>;
  template <typename C> C operator()(C x) const {
    return x > static_cast<C>(alpha) ? x : C(0);
  }
};
struct ShrinkOp {
  explicit ShrinkOp(const Node& n)
      : bias(n.GetFloat("bias", 0.0f)), lambd(n.GetFloat("lambd", 0.5f)) {}
  float bias, lambd;
  template <typename S> static constexpr bool kOk = kIsNumeric<S>;
  template <typename C> C operator()(C x) const {
    const double v = static_cast<double>(x);
    if (v < -lambd) return static_cast<C>(v + bias);
    if (v > lambd) return static_cast<C>(v - bias);
    return C(0);
  }
};
// Gelu (opset 20, and what exporters decompose): the exact erf form, or
// tanh's approximation.
struct GeluOp {
  explicit GeluOp(const Node& n)
      : tanh_approx(n.GetString("approximate", "none") == "tanh") {}
  bool tanh_approx;
  template <typename S> static constexpr bool kOk = kIsFloatStorage<S>;
  template <typename C> C operator()(C x) const {
    if (tanh_approx) {
      const C k = static_cast<C>(0.7978845608028654);  // sqrt(2/pi)
      return C(0.5) * x *
             (C(1) + std::tanh(k * (x + static_cast<C>(0.044715) * x * x * x)));
    }
    return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(0.7071067811865476)));
  }
};

template <typename Op>
class UnaryKernel final : public KernelBase {
 public:
  UnaryKernel(const KernelSpec& spec, DType dtype, DType out_dtype, Op op)
      : KernelBase(spec), dtype_(dtype), out_dtype_(out_dtype), op_(op) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        out_dtype_, node()));
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      if constexpr (Op::template kOk<S>) {
        using C = ComputeType<S>;
        using R = decltype(std::declval<const Op&>()(C{}));
        using O = std::conditional_t<std::is_same_v<R, bool>, bool, S>;
        const S* px = x->as<const S>();
        O* py = y.as<O>();
        const int64_t n = x->num_elements();
        for (int64_t i = 0; i < n; ++i) py[i] = Store<O>(op_(Load<C>(px[i])));
        return absl::OkStatus();
      } else {
        return Unimplemented(node(), "unsupported dtype");
      }
    });
  }

 private:
  DType dtype_;
  DType out_dtype_;
  Op op_;
};

template <typename Op>
absl::StatusOr<std::unique_ptr<Kernel>> MakeUnary(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kEveryDType));
  GLINT_RETURN_IF_ERROR(CheckOpDType<Op>(spec, dtype, 0));
  const Op op(*spec.node);
  DType out = dtype;
  (void)VisitDType(dtype, [&](auto tag) -> absl::Status {
    using S = typename decltype(tag)::type;
    if constexpr (Op::template kOk<S>) {
      using C = ComputeType<S>;
      if (std::is_same_v<decltype(op(C{})), bool>) out = DType::kBool;
    }
    return absl::OkStatus();
  });
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, out).status());
  return std::unique_ptr<Kernel>(new UnaryKernel<Op>(spec, dtype, out, op));
}

// ------------------------------------------------------------------ Clip
//
// Bounds are attributes before opset 11 (floats), optional scalar inputs
// from 11 on.

class ClipKernel final : public KernelBase {
 public:
  ClipKernel(const KernelSpec& spec, DType dtype, bool from_inputs, float lo,
             float hi)
      : KernelBase(spec),
        dtype_(dtype),
        from_inputs_(from_inputs),
        lo_(lo),
        hi_(hi) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const TensorView* lo = nullptr;
    const TensorView* hi = nullptr;
    if (from_inputs_) {
      GLINT_ASSIGN_OR_RETURN(lo, GetOptionalInput(ctx, 1, dtype_, node()));
      GLINT_ASSIGN_OR_RETURN(hi, GetOptionalInput(ctx, 2, dtype_, node()));
      for (const TensorView* b : {lo, hi}) {
        if (b != nullptr && b->num_elements() != 1) {
          return InvalidArgument(node(), "min and max must be scalars; got ",
                                 b->shape.ToString());
        }
      }
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      if constexpr (kIsNumeric<S>) {
        using C = ComputeType<S>;
        C l = std::numeric_limits<C>::lowest();
        C h = std::numeric_limits<C>::max();
        if (from_inputs_) {
          if (lo != nullptr) l = Load<C>(*lo->as<const S>());
          if (hi != nullptr) h = Load<C>(*hi->as<const S>());
        } else {
          l = static_cast<C>(std::max<double>(lo_, l));
          h = static_cast<C>(std::min<double>(hi_, h));
        }
        const S* px = x->as<const S>();
        S* py = y.as<S>();
        for (int64_t i = 0; i < x->num_elements(); ++i) {
          const C v = Load<C>(px[i]);
          py[i] = Store<S>(v < l ? l : (v > h ? h : v));
        }
        return absl::OkStatus();
      } else {
        return Unimplemented(node(), "unsupported dtype");
      }
    });
  }

 private:
  DType dtype_;
  bool from_inputs_;
  float lo_, hi_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeClip(const KernelSpec& spec) {
  const bool from_inputs = spec.opset_version == 0 || spec.opset_version >= 11;
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, from_inputs ? 3 : 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype,
                         SpecInputDType(spec, 0, kAllNumericDTypes));
  for (int i = 1; i < 3; ++i) {
    if (spec.has_input(i) && spec.inputs[i].dtype != dtype) {
      return InvalidArgument(spec.node->Describe(), "input ", i,
                             " must have dtype ", DTypeName(dtype));
    }
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new ClipKernel(
      spec, dtype, from_inputs,
      spec.node->GetFloat("min", -std::numeric_limits<float>::infinity()),
      spec.node->GetFloat("max", std::numeric_limits<float>::infinity())));
}

// ------------------------------------------------------- Cast, CastLike

class CastKernel final : public KernelBase {
 public:
  CastKernel(const KernelSpec& spec, DType from, DType to)
      : KernelBase(spec), from_(from), to_(to) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, from_, node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, x->shape, to_, node()));
    const int64_t n = x->num_elements();
    return VisitDType(from_, [&](auto ft) -> absl::Status {
      using F = typename decltype(ft)::type;
      return VisitDType(to_, [&](auto tt) -> absl::Status {
        using T = typename decltype(tt)::type;
        const F* px = x->as<const F>();
        T* py = y.as<T>();
        for (int64_t i = 0; i < n; ++i) py[i] = Convert<T>(px[i]);
        return absl::OkStatus();
      });
    });
  }

 private:
  template <typename T, typename F>
  static T Convert(F f) {
    if constexpr (std::is_same_v<T, F>) {
      return f;
    } else if constexpr (std::is_same_v<T, bool>) {
      return Load<ComputeType<F>>(f) != ComputeType<F>(0);
    } else if constexpr (kIsFloatStorage<F> && std::is_integral_v<T>) {
      // Out-of-range float → int is undefined in C++; saturate instead
      // and map NaN to 0 rather than trap-free garbage.
      const double v = Load<double>(f);
      if (std::isnan(v)) return T(0);
      if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
        return std::numeric_limits<T>::lowest();
      }
      if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
        return std::numeric_limits<T>::max();
      }
      return static_cast<T>(v);
    } else if constexpr (std::is_same_v<F, double> && !std::is_same_v<T, double>) {
      return Store<T>(f);
    } else {
      return Store<T>(Load<ComputeType<F>>(f));
    }
  }

  DType from_, to_;
};

// The ONNX element types Glint has no dtype for (opsets 19-23: float8,
// int4/uint4, float4), by TensorProto.DataType number; null for others.
const char* NarrowOnnxTypeName(int64_t onnx_type) {
  switch (onnx_type) {
    case 17: return "FLOAT8E4M3FN";
    case 18: return "FLOAT8E4M3FNUZ";
    case 19: return "FLOAT8E5M2";
    case 20: return "FLOAT8E5M2FNUZ";
    case 21: return "UINT4";
    case 22: return "INT4";
    case 23: return "FLOAT4E2M1";
    default: return nullptr;
  }
}

// Cast-19's saturate only changes conversions to float8 (out-of-range
// values clamp to its largest finite value instead of becoming inf/NaN),
// and Glint has no float8 dtype: every cast it runs is the same with 0 or
// 1. The value is still checked, as onnxruntime checks it.
absl::Status CheckSaturate(const KernelSpec& spec) {
  if (spec.opset_version > 0 && spec.opset_version < 19) {
    return absl::OkStatus();
  }
  const int64_t saturate = spec.node->GetInt("saturate", 1);
  if (saturate != 0 && saturate != 1) {
    return InvalidArgument(spec.node->Describe(),
                           "saturate must be 0 or 1; got ", saturate);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeCast(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType from, SpecInputDType(spec, 0, kEveryDType));
  GLINT_RETURN_IF_ERROR(CheckSaturate(spec));
  const int64_t to_attr = spec.node->GetInt("to", 0);
  if (const char* name = NarrowOnnxTypeName(to_attr)) {
    return Unimplemented(spec.node->Describe(), "Cast-", spec.opset_version,
                         " attribute to=", to_attr, " (", name,
                         ") not supported: Glint has no ", name, " dtype");
  }
  absl::StatusOr<DType> to = DTypeFromOnnx(static_cast<int32_t>(to_attr));
  if (!to.ok() || !DTypeIn(*to, kEveryDType)) {
    return Unimplemented(spec.node->Describe(), "cannot cast to ONNX type ",
                         to_attr);
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, *to).status());
  return std::unique_ptr<Kernel>(new CastKernel(spec, from, *to));
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeCastLike(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 2));
  GLINT_ASSIGN_OR_RETURN(DType from, SpecInputDType(spec, 0, kEveryDType));
  GLINT_ASSIGN_OR_RETURN(DType to, SpecInputDType(spec, 1, kEveryDType));
  GLINT_RETURN_IF_ERROR(CheckSaturate(spec));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, to).status());
  return std::unique_ptr<Kernel>(new CastKernel(spec, from, to));
}

// ------------------------------------------------------ ElementwiseChain
//
// glint.ElementwiseChain (optimize.h): the input is copied block by block
// into the output, and each step runs over the block while it is in cache.
// Steps reuse the op structs above, so results equal the unfused nodes'.

using ChainStep = std::function<void(float*, int64_t)>;
using ChainStepFactory = std::function<ChainStep(const Node&)>;

template <typename Op>
ChainStepFactory UnaryStep() {
  return [](const Node& node) -> ChainStep {
    const Op op(node);
    return [op](float* b, int64_t n) {
      for (int64_t i = 0; i < n; ++i) b[i] = op(b[i]);
    };
  };
}

template <typename Op>
ChainStep ScalarStep(float c, bool scalar_first) {
  const Op op{};
  if (scalar_first) {
    return [op, c](float* b, int64_t n) {
      for (int64_t i = 0; i < n; ++i) b[i] = op(c, b[i]);
    };
  }
  return [op, c](float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) b[i] = op(b[i], c);
  };
}

const std::map<std::string, ChainStepFactory, std::less<>>& UnarySteps() {
  static const auto* const kSteps =
      new std::map<std::string, ChainStepFactory, std::less<>>{
          {"Abs", UnaryStep<AbsOp>()},
          {"Ceil", UnaryStep<CeilOp>()},
          {"Celu", UnaryStep<CeluOp>()},
          {"Cos", UnaryStep<CosOp>()},
          {"Elu", UnaryStep<EluOp>()},
          {"Erf", UnaryStep<ErfOp>()},
          {"Exp", UnaryStep<ExpOp>()},
          {"Floor", UnaryStep<FloorOp>()},
          {"Gelu", UnaryStep<GeluOp>()},
          {"HardSigmoid", UnaryStep<HardSigmoidOp>()},
          {"HardSwish", UnaryStep<HardSwishOp>()},
          {"LeakyRelu", UnaryStep<LeakyReluOp>()},
          {"Mish", UnaryStep<MishOp>()},
          {"Log", UnaryStep<LogOp>()},
          {"Neg", UnaryStep<NegOp>()},
          {"Reciprocal", UnaryStep<ReciprocalOp>()},
          {"Relu", UnaryStep<ReluOp>()},
          {"Round", UnaryStep<RoundOp>()},
          {"Selu", UnaryStep<SeluOp>()},
          {"Sigmoid", UnaryStep<SigmoidOp>()},
          {"Sin", UnaryStep<SinOp>()},
          {"Softplus", UnaryStep<SoftplusOp>()},
          {"Softsign", UnaryStep<SoftsignOp>()},
          {"Sqrt", UnaryStep<SqrtOp>()},
          {"Tanh", UnaryStep<TanhOp>()},
          {"ThresholdedRelu", UnaryStep<ThresholdedReluOp>()},
      };
  return *kSteps;
}

class ElementwiseChainKernel final : public KernelBase {
 public:
  ElementwiseChainKernel(const KernelSpec& spec, std::vector<ChainStep> steps)
      : KernelBase(spec), steps_(std::move(steps)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, DType::kFloat32, node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, x->shape, DType::kFloat32,
                                          node()));
    const float* px = x->as<const float>();
    float* py = y.as<float>();
    constexpr int64_t kBlock = 1024;
    ParallelFor(x->num_elements(), 16 * kBlock,
                [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; b += kBlock) {
        const int64_t n = std::min(kBlock, end - b);
        std::copy_n(px + b, n, py + b);
        for (const ChainStep& step : steps_) step(py + b, n);
      }
    });
    return absl::OkStatus();
  }

 private:
  std::vector<ChainStep> steps_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeElementwiseChain(
    const KernelSpec& spec) {
  const Node& node = *spec.node;
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_RETURN_IF_ERROR(
      SpecInputDType(spec, 0, {DType::kFloat32}).status());
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kFloat32).status());
  const std::vector<std::string> ops = node.GetStrings("ops");
  const std::vector<float> scalars = node.GetFloats("scalars");
  const std::vector<int64_t> first = node.GetInts("scalar_first");
  if (ops.empty() || scalars.size() != ops.size() ||
      first.size() != ops.size()) {
    return InvalidArgument(node.Describe(),
                           "ops, scalars and scalar_first must have one "
                           "entry per step");
  }
  std::vector<ChainStep> steps;
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string& op = ops[i];
    const bool f = first[i] != 0;
    if (op == "Add") {
      steps.push_back(ScalarStep<AddOp>(scalars[i], f));
    } else if (op == "Sub") {
      steps.push_back(ScalarStep<SubOp>(scalars[i], f));
    } else if (op == "Mul") {
      steps.push_back(ScalarStep<MulOp>(scalars[i], f));
    } else if (op == "Div") {
      steps.push_back(ScalarStep<DivOp>(scalars[i], f));
    } else if (auto it = UnarySteps().find(op); it != UnarySteps().end()) {
      // The step's own attributes, under their ONNX names.
      Node step;
      step.op_type = op;
      const std::string prefix = absl::StrCat(i, ":");
      for (const auto& [name, value] : node.attributes) {
        if (absl::StartsWith(name, prefix)) {
          step.attributes[name.substr(prefix.size())] = value;
        }
      }
      steps.push_back(it->second(step));
    } else {
      return Unimplemented(node.Describe(), "elementwise chain step '", op,
                           "'");
    }
  }
  return std::unique_ptr<Kernel>(
      new ElementwiseChainKernel(spec, std::move(steps)));
}

}  // namespace

bool IsChainableUnaryOp(absl::string_view op) {
  return UnarySteps().count(op) > 0;
}

bool IsChainableScalarOp(absl::string_view op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
}

void RegisterElementwiseKernels(KernelRegistry* registry) {
  registry->Register("Add", BinaryFactory<AddOp>());
  registry->Register("Sub", BinaryFactory<SubOp>());
  registry->Register("Mul", BinaryFactory<MulOp>());
  registry->Register("Div", BinaryFactory<DivOp>());
  registry->Register("Mod", BinaryFactory<ModOp>([](const Node& n) {
                       ModOp op;
                       op.fmod = n.GetInt("fmod", 0) != 0;
                       return op;
                     }));
  registry->Register("PRelu", BinaryFactory<PReluOp>());
  registry->Register("BitShift", BinaryFactory<BitShiftOp>([](const Node& n) {
                       BitShiftOp op;
                       op.left = n.GetString("direction", "") != "RIGHT";
                       return op;
                     }));
  registry->Register("Equal", BinaryFactory<EqualOp>());
  registry->Register("Less", BinaryFactory<LessOp>());
  registry->Register("Greater", BinaryFactory<GreaterOp>());
  registry->Register("LessOrEqual", BinaryFactory<LessOrEqualOp>());
  registry->Register("GreaterOrEqual", BinaryFactory<GreaterOrEqualOp>());
  registry->Register("And", BinaryFactory<AndOp>());
  registry->Register("Or", BinaryFactory<OrOp>());
  registry->Register("Xor", BinaryFactory<XorOp>());
  registry->Register("BitwiseAnd", BinaryFactory<BitwiseAndOp>());
  registry->Register("BitwiseOr", BinaryFactory<BitwiseOrOp>());
  registry->Register("BitwiseXor", BinaryFactory<BitwiseXorOp>());
  registry->Register("Pow", MakePow);
  registry->Register("Max", VariadicFactory(Fold::kMax));
  registry->Register("Min", VariadicFactory(Fold::kMin));
  registry->Register("Sum", VariadicFactory(Fold::kSum));
  registry->Register("Mean", VariadicFactory(Fold::kMean));
  registry->Register("Where", MakeWhere);
  registry->Register("Clip", MakeClip);
  registry->Register("Cast", MakeCast);
  registry->Register("CastLike", MakeCastLike);

  registry->Register("Relu", MakeUnary<ReluOp>);
  registry->Register(kElementwiseChainOp, MakeElementwiseChain);
  registry->Register("Neg", MakeUnary<NegOp>);
  registry->Register("Abs", MakeUnary<AbsOp>);
  registry->Register("Sign", MakeUnary<SignOp>);
  registry->Register("Not", MakeUnary<NotOp>);
  registry->Register("BitwiseNot", MakeUnary<BitwiseNotOp>);
  registry->Register("IsNaN", MakeUnary<IsNaNOp>);
  registry->Register("IsInf", MakeUnary<IsInfOp>);
  registry->Register("Sigmoid", MakeUnary<SigmoidOp>);
  registry->Register("Tanh", MakeUnary<TanhOp>);
  registry->Register("Exp", MakeUnary<ExpOp>);
  registry->Register("Log", MakeUnary<LogOp>);
  registry->Register("Sqrt", MakeUnary<SqrtOp>);
  registry->Register("Erf", MakeUnary<ErfOp>);
  registry->Register("Sin", MakeUnary<SinOp>);
  registry->Register("Cos", MakeUnary<CosOp>);
  registry->Register("Tan", MakeUnary<TanOp>);
  registry->Register("Asin", MakeUnary<AsinOp>);
  registry->Register("Acos", MakeUnary<AcosOp>);
  registry->Register("Atan", MakeUnary<AtanOp>);
  registry->Register("Sinh", MakeUnary<SinhOp>);
  registry->Register("Cosh", MakeUnary<CoshOp>);
  registry->Register("Asinh", MakeUnary<AsinhOp>);
  registry->Register("Acosh", MakeUnary<AcoshOp>);
  registry->Register("Atanh", MakeUnary<AtanhOp>);
  registry->Register("Reciprocal", MakeUnary<ReciprocalOp>);
  registry->Register("Floor", MakeUnary<FloorOp>);
  registry->Register("Ceil", MakeUnary<CeilOp>);
  registry->Register("Round", MakeUnary<RoundOp>);
  registry->Register("Softsign", MakeUnary<SoftsignOp>);
  registry->Register("Softplus", MakeUnary<SoftplusOp>);
  registry->Register("Mish", MakeUnary<MishOp>);
  registry->Register("HardSwish", MakeUnary<HardSwishOp>);
  registry->Register("LeakyRelu", MakeUnary<LeakyReluOp>);
  registry->Register("Elu", MakeUnary<EluOp>);
  registry->Register("Celu", MakeUnary<CeluOp>);
  registry->Register("Selu", MakeUnary<SeluOp>);
  registry->Register("HardSigmoid", MakeUnary<HardSigmoidOp>);
  registry->Register("ThresholdedRelu", MakeUnary<ThresholdedReluOp>);
  registry->Register("Shrink", MakeUnary<ShrinkOp>);
  registry->Register("Gelu", MakeUnary<GeluOp>);
}

}  // namespace glint::cpu
