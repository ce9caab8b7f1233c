// Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare;
// ArgMax, ArgMin; CumSum; TopK.
//
// ReduceMax and ReduceMin also take bool from opset 20 (any / all).
// Axes are an attribute, or (ReduceSum from opset 13, the others from 18)
// an optional int64 input; with no axes every axis is reduced unless
// noop_with_empty_axes is set. Floating values accumulate in double, so
// results are at least as accurate as numpy's float32 pairwise sums;
// integers accumulate in their own type with wrap-around.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/index_walk.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

enum class Reduce {
  kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare
};

// The axes (sorted, unique, in [0, rank)) a reduction covers, or an empty
// vector meaning "none" when noop is requested.
absl::StatusOr<std::vector<bool>> ReducedAxes(const std::vector<int64_t>& axes,
                                              bool noop_if_empty, int rank,
                                              absl::string_view node) {
  std::vector<bool> reduce(rank, axes.empty() && !noop_if_empty);
  for (int64_t a : axes) {
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(a, rank, false, node));
    reduce[axis] = true;
  }
  return reduce;
}

template <typename C>
using Acc = std::conditional_t<std::is_floating_point_v<C>, double, C>;

class ReduceKernel final : public KernelBase {
 public:
  ReduceKernel(const KernelSpec& spec, DType dtype, Reduce op,
               std::vector<int64_t> axes, bool axes_input, bool keepdims,
               bool noop)
      : KernelBase(spec),
        dtype_(dtype),
        op_(op),
        axes_(std::move(axes)),
        axes_input_(axes_input),
        keepdims_(keepdims),
        noop_(noop) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    std::vector<int64_t> axes = axes_;
    if (axes_input_) {
      GLINT_ASSIGN_OR_RETURN(
          axes, GetOptionalInputInt64s(ctx, 1, DType::kUndefined, axes_, "axes",
                                       node()));
    }
    const int rank = x->shape.rank();
    GLINT_ASSIGN_OR_RETURN(std::vector<bool> reduce,
                           ReducedAxes(axes, noop_, rank, node()));
    std::vector<int64_t> out_dims;
    // Stride in the output of each input axis (0 where reduced).
    std::vector<int64_t> kept;
    for (int d = 0; d < rank; ++d) {
      if (!reduce[d]) {
        out_dims.push_back(x->shape.dim(d));
      } else if (keepdims_) {
        out_dims.push_back(1);
      }
    }
    const std::vector<int64_t> out_stride =
        KeptStrides(x->shape.dims(), reduce);
    int64_t count = 1;
    for (int d = 0; d < rank; ++d) {
      if (reduce[d]) count *= x->shape.dim(d);
    }
    GLINT_ASSIGN_OR_RETURN(
        TensorView y,
        AllocateOutput(ctx, 0, Shape(out_dims), dtype_, node()));
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<S, bool>) {
        Run<S>(*x, y, out_stride, count);
        return absl::OkStatus();
      } else if (op_ == Reduce::kMax || op_ == Reduce::kMin) {
        RunBool(*x, y, out_stride);
        return absl::OkStatus();
      } else {
        return Unimplemented(node(), "bool is not supported");
      }
    });
  }

 private:
  // ReduceMax/ReduceMin-20 on bool: any / all (an empty reduction gives
  // false / true, the identities, as the numeric ones give -inf / inf).
  void RunBool(const TensorView& x, const TensorView& y,
               const std::vector<int64_t>& out_stride) const {
    const bool max = op_ == Reduce::kMax;
    bool* py = y.as<bool>();
    std::fill_n(py, y.num_elements(), !max);
    const bool* px = x.as<const bool>();
    const int64_t n = x.num_elements();
    if (n == 0) return;
    IndexWalk at(x.shape.dims());
    int64_t o = 0;
    for (int64_t i = 0; i < n; ++i) {
      py[o] = max ? (py[o] || px[i]) : (py[o] && px[i]);
      at.Next(out_stride, o);
    }
  }

  template <typename S>
  void Run(const TensorView& x, const TensorView& y,
           const std::vector<int64_t>& out_stride, int64_t count) const {
    using C = ComputeType<S>;
    using A = Acc<C>;
    const int64_t n_out = y.num_elements();
    std::vector<A> acc(n_out, Init<A>());
    std::vector<A> shift(n_out, A(0));
    const S* px = x.as<const S>();
    auto walk = [&](auto&& f) {
      IndexWalk at(x.shape.dims());
      int64_t o = 0;
      const int64_t n = x.num_elements();
      for (int64_t i = 0; i < n; ++i) {
        f(o, static_cast<A>(Load<C>(px[i])));
        at.Next(out_stride, o);
      }
    };
    if (op_ == Reduce::kLogSumExp) {
      // Shift by the maximum so that exp cannot overflow.
      std::fill(shift.begin(), shift.end(),
                -std::numeric_limits<double>::infinity());
      walk([&](int64_t o, A v) { shift[o] = std::max(shift[o], v); });
      for (A& v : shift) {
        if (!std::isfinite(static_cast<double>(v))) v = 0;
      }
    }
    walk([&](int64_t o, A v) {
      A& a = acc[o];
      switch (op_) {
        case Reduce::kSum:
        case Reduce::kMean:
          a = Wrap<A>(a, v, true);
          break;
        case Reduce::kProd:
          a = Wrap<A>(a, v, false);
          break;
        case Reduce::kMax:
          a = (v > a || v != v) ? v : a;
          break;
        case Reduce::kMin:
          a = (v < a || v != v) ? v : a;
          break;
        case Reduce::kL1:
          a += v < A(0) ? static_cast<A>(A(0) - v) : v;
          break;
        case Reduce::kL2:
        case Reduce::kSumSquare:
          a = Wrap<A>(a, static_cast<A>(v * v), true);
          break;
        case Reduce::kLogSum:
          a += v;
          break;
        case Reduce::kLogSumExp:
          a += static_cast<A>(std::exp(static_cast<double>(v - shift[o])));
          break;
      }
    });
    S* py = y.as<S>();
    for (int64_t o = 0; o < n_out; ++o) {
      A a = acc[o];
      switch (op_) {
        case Reduce::kMean:
          a = static_cast<A>(a / static_cast<A>(count));
          break;
        case Reduce::kL2:
          a = static_cast<A>(std::sqrt(static_cast<double>(a)));
          break;
        case Reduce::kLogSum:
          a = static_cast<A>(std::log(static_cast<double>(a)));
          break;
        case Reduce::kLogSumExp:
          a = static_cast<A>(std::log(static_cast<double>(a)) + shift[o]);
          break;
        default:
          break;
      }
      py[o] = Store<S>(static_cast<C>(a));
    }
  }

  template <typename A>
  A Init() const {
    switch (op_) {
      case Reduce::kProd: return A(1);
      case Reduce::kMax:
        return std::numeric_limits<A>::has_infinity
                   ? -std::numeric_limits<A>::infinity()
                   : std::numeric_limits<A>::lowest();
      case Reduce::kMin:
        return std::numeric_limits<A>::has_infinity
                   ? std::numeric_limits<A>::infinity()
                   : std::numeric_limits<A>::max();
      default: return A(0);
    }
  }

  // a + v or a * v, wrapping for integers.
  template <typename A>
  static A Wrap(A a, A v, bool add) {
    if constexpr (std::is_integral_v<A>) {
      using U = std::conditional_t<(sizeof(A) < sizeof(unsigned)), unsigned,
                                   std::make_unsigned_t<A>>;
      return static_cast<A>(add ? static_cast<U>(a) + static_cast<U>(v)
                                : static_cast<U>(a) * static_cast<U>(v));
    } else {
      return add ? a + v : a * v;
    }
  }

  DType dtype_;
  Reduce op_;
  std::vector<int64_t> axes_;
  bool axes_input_;
  bool keepdims_;
  bool noop_;
};

KernelFactory ReduceFactory(Reduce op, int64_t axes_input_since) {
  return [op, axes_input_since](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    const bool axes_input = spec.opset_version == 0 ||
                            spec.opset_version >= axes_input_since;
    GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, axes_input ? 2 : 1));
    // ReduceMax/ReduceMin take bool from opset 20.
    const bool bool_ok =
        (op == Reduce::kMax || op == Reduce::kMin) &&
        (spec.opset_version == 0 || spec.opset_version >= 20);
    GLINT_ASSIGN_OR_RETURN(
        DType dtype,
        SpecInputDType(spec, 0, bool_ok ? kEveryDType : kAllNumericDTypes));
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
    return std::unique_ptr<Kernel>(new ReduceKernel(
        spec, dtype, op, spec.node->GetInts("axes"), axes_input,
        spec.node->GetInt("keepdims", 1) != 0,
        spec.node->GetInt("noop_with_empty_axes", 0) != 0));
  };
}

// --------------------------------------------------------- ArgMax/ArgMin

class ArgKernel final : public KernelBase {
 public:
  ArgKernel(const KernelSpec& spec, DType dtype, bool max, int64_t axis,
            bool keepdims, bool last)
      : KernelBase(spec),
        dtype_(dtype),
        max_(max),
        axis_(axis),
        keepdims_(keepdims),
        last_(last) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
    GLINT_ASSIGN_OR_RETURN(int axis,
                           NormalizeAxis(axis_, std::max(rank, 1), false,
                                         node()));
    if (rank == 0) {
      return InvalidArgument(node(), "needs an input of rank >= 1");
    }
    const std::vector<int64_t>& d = x->shape.dims();
    std::vector<int64_t> out_dims = d;
    if (keepdims_) {
      out_dims[axis] = 1;
    } else {
      out_dims.erase(out_dims.begin() + axis);
    }
    const int64_t n = d[axis];
    if (n == 0) return InvalidArgument(node(), "reduces an empty axis");
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, Shape(out_dims),
                                          DType::kInt64, node()));
    const int64_t outer = Product(d, 0, axis);
    const int64_t inner = Product(d, axis + 1, rank);
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      using C = ComputeType<S>;
      const S* px = x->as<const S>();
      int64_t* py = y.as<int64_t>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const S* p = px + o * n * inner + i;
          C best = Load<C>(p[0]);
          int64_t arg = 0;
          for (int64_t k = 1; k < n; ++k) {
            const C v = Load<C>(p[k * inner]);
            const bool better = max_ ? (last_ ? v >= best : v > best)
                                     : (last_ ? v <= best : v < best);
            if (better) {
              best = v;
              arg = k;
            }
          }
          py[o * inner + i] = arg;
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
  bool max_;
  int64_t axis_;
  bool keepdims_;
  bool last_;
};

KernelFactory ArgFactory(bool max) {
  return [max](const KernelSpec& spec)
             -> absl::StatusOr<std::unique_ptr<Kernel>> {
    GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
    GLINT_ASSIGN_OR_RETURN(DType dtype,
                           SpecInputDType(spec, 0, kAllNumericDTypes));
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, DType::kInt64).status());
    return std::unique_ptr<Kernel>(new ArgKernel(
        spec, dtype, max, spec.node->GetInt("axis", 0),
        spec.node->GetInt("keepdims", 1) != 0,
        spec.node->GetInt("select_last_index", 0) != 0));
  };
}

// ----------------------------------------------------------------- CumSum

class CumSumKernel final : public KernelBase {
 public:
  CumSumKernel(const KernelSpec& spec, DType dtype, bool exclusive,
               bool reverse)
      : KernelBase(spec),
        dtype_(dtype),
        exclusive_(exclusive),
        reverse_(reverse) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(
        std::vector<int64_t> axes,
        GetInputInt64s(ctx, 1, DType::kUndefined, "axis", node()));
    if (axes.size() != 1) {
      return InvalidArgument(node(), "axis must hold one value");
    }
    const int rank = x->shape.rank();
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axes[0], rank, false,
                                                   node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    // An empty input may have huge other dimensions: never loop over them.
    if (y.num_elements() == 0) return absl::OkStatus();
    const std::vector<int64_t>& d = x->shape.dims();
    const int64_t outer = Product(d, 0, axis);
    const int64_t n = d[axis];
    const int64_t inner = Product(d, axis + 1, rank);
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      using C = ComputeType<S>;
      using A = Acc<C>;
      const S* px = x->as<const S>();
      S* py = y.as<S>();
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          A sum = 0;
          for (int64_t j = 0; j < n; ++j) {
            const int64_t k = reverse_ ? n - 1 - j : j;
            const int64_t at = (o * n + k) * inner + i;
            const A v = static_cast<A>(Load<C>(px[at]));
            if (exclusive_) {
              py[at] = Store<S>(static_cast<C>(sum));
              sum += v;
            } else {
              sum += v;
              py[at] = Store<S>(static_cast<C>(sum));
            }
          }
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
  bool exclusive_, reverse_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeCumSum(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 2, 2));
  GLINT_ASSIGN_OR_RETURN(DType dtype,
                         SpecInputDType(spec, 0, kAllNumericDTypes));
  GLINT_RETURN_IF_ERROR(
      SpecInputDType(spec, 1, {DType::kInt32, DType::kInt64}).status());
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(
      new CumSumKernel(spec, dtype, spec.node->GetInt("exclusive", 0) != 0,
                       spec.node->GetInt("reverse", 0) != 0));
}

// ------------------------------------------------------------------ TopK
//
// Ties keep the lower index first, as ONNX specifies. K is an input from
// opset 10, an attribute before.

class TopKKernel final : public KernelBase {
 public:
  TopKKernel(const KernelSpec& spec, DType dtype, int64_t axis, bool largest,
             bool k_input, int64_t k_attr)
      : KernelBase(spec),
        dtype_(dtype),
        axis_(axis),
        largest_(largest),
        k_input_(k_input),
        k_attr_(k_attr) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    int64_t k = k_attr_;
    if (k_input_) {
      GLINT_ASSIGN_OR_RETURN(
          std::vector<int64_t> kv,
          GetInputInt64s(ctx, 1, DType::kInt64, "K", node()));
      if (kv.size() != 1) return InvalidArgument(node(), "K must be one value");
      k = kv[0];
    }
    const int rank = x->shape.rank();
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, std::max(rank, 1),
                                                   false, node()));
    if (rank == 0) return InvalidArgument(node(), "needs rank >= 1");
    const std::vector<int64_t>& d = x->shape.dims();
    const int64_t n = d[axis];
    if (k < 0 || k > n) {
      return InvalidArgument(node(), "K = ", k, " is outside [0, ", n, "]");
    }
    std::vector<int64_t> out_dims = d;
    out_dims[axis] = k;
    GLINT_ASSIGN_OR_RETURN(TensorView values, AllocateOutput(
        ctx, 0, Shape(out_dims), dtype_, node()));
    TensorView indices;
    if (ctx.output_used(1)) {
      GLINT_ASSIGN_OR_RETURN(indices, AllocateOutput(ctx, 1, Shape(out_dims),
                                                     DType::kInt64, node()));
    }
    // An empty input's axis may be huge (x of [0, 2^40] along axis 1):
    // the scratch `order` below is sized by it, so nothing to sort is
    // nothing to allocate.
    if (x->num_elements() == 0) return absl::OkStatus();
    const int64_t outer = Product(d, 0, axis);
    const int64_t inner = Product(d, axis + 1, rank);
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      if constexpr (std::is_same_v<S, bool>) {
        return Unimplemented(node(), "bool is not supported");
      } else {
        using C = ComputeType<S>;
        const S* px = x->as<const S>();
        std::vector<int64_t> order(n);
        for (int64_t o = 0; o < outer; ++o) {
          for (int64_t i = 0; i < inner; ++i) {
            const S* p = px + o * n * inner + i;
            std::iota(order.begin(), order.end(), 0);
            auto cmp = [&](int64_t a, int64_t b) {
              const C va = Load<C>(p[a * inner]), vb = Load<C>(p[b * inner]);
              if (va == vb) return a < b;
              return largest_ ? va > vb : va < vb;
            };
            std::partial_sort(order.begin(), order.begin() + k, order.end(),
                              cmp);
            for (int64_t j = 0; j < k; ++j) {
              const int64_t at = (o * k + j) * inner + i;
              values.as<S>()[at] = p[order[j] * inner];
              if (indices.data != nullptr) indices.as<int64_t>()[at] = order[j];
            }
          }
        }
        return absl::OkStatus();
      }
    });
  }

 private:
  DType dtype_;
  int64_t axis_;
  bool largest_;
  bool k_input_;
  int64_t k_attr_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeTopK(const KernelSpec& spec) {
  const bool k_input = spec.opset_version == 0 || spec.opset_version >= 10;
  GLINT_RETURN_IF_ERROR(CheckArity(spec, k_input ? 2 : 1, k_input ? 2 : 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype,
                         SpecInputDType(spec, 0, kAllNumericDTypes));
  if (spec.node->GetInt("sorted", 1) == 0) {
    // Sorted output is a valid "unsorted" order, so nothing to refuse.
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new TopKKernel(
      spec, dtype, spec.node->GetInt("axis", -1),
      spec.node->GetInt("largest", 1) != 0, k_input,
      spec.node->GetInt("k", 0)));
}

}  // namespace

void RegisterReduceKernels(KernelRegistry* registry) {
  registry->Register("ReduceSum", ReduceFactory(Reduce::kSum, 13));
  registry->Register("ReduceMean", ReduceFactory(Reduce::kMean, 18));
  registry->Register("ReduceMax", ReduceFactory(Reduce::kMax, 18));
  registry->Register("ReduceMin", ReduceFactory(Reduce::kMin, 18));
  registry->Register("ReduceProd", ReduceFactory(Reduce::kProd, 18));
  registry->Register("ReduceL1", ReduceFactory(Reduce::kL1, 18));
  registry->Register("ReduceL2", ReduceFactory(Reduce::kL2, 18));
  registry->Register("ReduceLogSum", ReduceFactory(Reduce::kLogSum, 18));
  registry->Register("ReduceLogSumExp", ReduceFactory(Reduce::kLogSumExp, 18));
  registry->Register("ReduceSumSquare", ReduceFactory(Reduce::kSumSquare, 18));
  registry->Register("ArgMax", ArgFactory(true));
  registry->Register("ArgMin", ArgFactory(false));
  registry->Register("CumSum", MakeCumSum);
  registry->Register("TopK", MakeTopK);
}

}  // namespace glint::cpu
