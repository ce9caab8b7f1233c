// Einsum (opset 12): the equation is parsed once at build time; shapes are
// resolved per call.
//
// Labels are the letters a-z, A-Z; "..." stands for the dimensions an
// operand has beyond its letters, right-aligned and broadcast (size 1
// against any size) across operands. Without "->" the output is the
// ellipsis dimensions followed by the letters that occur exactly once,
// sorted. A letter repeated within one operand takes its diagonal; letters
// absent from the output are summed.
//
// Two float32 operands whose labels each occur once per operand, and
// which do not sum a label away on their own, are a batched matrix
// product: the operands are permuted (only when their layout does not
// already fit) to [batch, m, k] and [batch, k, n] and multiplied with
// oneDNN's sgemm. More float32 operands are contracted pairwise, left to
// right, the same way. Everything else takes the generic path: one odometer
// over every label, accumulating in double (float types) or int64.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/dnnl_util.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

constexpr int kEllipsis = -1;   // Token for "..." in a parsed term.
constexpr int kNumLetters = 52;  // a-z then A-Z: label ids 0..51.
// Pairwise intermediates are capped as generating ops' outputs are (README).
constexpr int64_t kMaxIntermediateElements = int64_t{1} << 31;

int LetterId(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -2;
}

// Sorting order of the implicit output: ASCII (upper case before lower),
// as numpy orders labels.
int AsciiRank(int id) { return id < 26 ? 26 + id : id - 26; }

struct Equation {
  std::vector<std::vector<int>> inputs;  // Letter ids and kEllipsis.
  bool explicit_output = false;
  std::vector<int> output;
};

absl::StatusOr<std::vector<int>> ParseTerm(absl::string_view term,
                                           absl::string_view node) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if (c == ' ') continue;
    if (c == '.') {
      if (ellipsis || term.substr(i, 3) != "...") {
        return InvalidArgument(node, "malformed ellipsis in equation term '",
                               term, "'");
      }
      ellipsis = true;
      out.push_back(kEllipsis);
      i += 2;
      continue;
    }
    const int id = LetterId(c);
    if (id < 0) {
      return InvalidArgument(node, "invalid character '",
                             std::string(1, c), "' in equation");
    }
    out.push_back(id);
  }
  return out;
}

absl::StatusOr<Equation> ParseEquation(absl::string_view eq,
                                       absl::string_view node) {
  Equation e;
  absl::string_view lhs = eq;
  const size_t arrow = eq.find("->");
  if (arrow != absl::string_view::npos) {
    lhs = eq.substr(0, arrow);
    e.explicit_output = true;
    GLINT_ASSIGN_OR_RETURN(e.output, ParseTerm(eq.substr(arrow + 2), node));
    std::array<bool, kNumLetters> seen{};
    for (int id : e.output) {
      if (id == kEllipsis) continue;
      if (seen[id]) {
        return InvalidArgument(node, "output label repeated in '", eq, "'");
      }
      seen[id] = true;
    }
  }
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    GLINT_ASSIGN_OR_RETURN(
        std::vector<int> term,
        ParseTerm(lhs.substr(start, comma == absl::string_view::npos
                                        ? absl::string_view::npos
                                        : comma - start),
                  node));
    e.inputs.push_back(std::move(term));
    if (comma == absl::string_view::npos) break;
    start = comma + 1;
  }
  std::array<int, kNumLetters> count{};
  bool any_ellipsis = false;
  for (const auto& term : e.inputs) {
    for (int id : term) {
      if (id == kEllipsis) {
        any_ellipsis = true;
      } else {
        ++count[id];
      }
    }
  }
  if (e.explicit_output) {
    for (int id : e.output) {
      if (id == kEllipsis) {
        if (!any_ellipsis) {
          return InvalidArgument(node, "output has '...' but no input does");
        }
      } else if (count[id] == 0) {
        return InvalidArgument(node, "output label '",
                               std::string(1, id < 26 ? 'a' + id : 'A' + id - 26),
                               "' is in no input");
      }
    }
  } else {
    if (any_ellipsis) e.output.push_back(kEllipsis);
    std::vector<int> once;
    for (int id = 0; id < kNumLetters; ++id) {
      if (count[id] == 1) once.push_back(id);
    }
    std::sort(once.begin(), once.end(),
              [](int a, int b) { return AsciiRank(a) < AsciiRank(b); });
    e.output.insert(e.output.end(), once.begin(), once.end());
  }
  return e;
}

// The equation resolved against actual input shapes: every dimension is a
// label id (letters 0..51, ellipsis dimension d is kNumLetters + d).
struct Plan {
  std::vector<int64_t> size;                // Per label id; -1 = unused.
  std::vector<std::vector<int>> operands;   // Label per operand dimension.
  std::vector<int> output;                  // Label per output dimension.
  std::vector<int> summed;                  // Labels not in the output.
};

absl::StatusOr<Plan> Resolve(const Equation& e,
                             const std::vector<const TensorView*>& in,
                             absl::string_view node) {
  if (in.size() != e.inputs.size()) {
    return InvalidArgument(node, "equation has ", e.inputs.size(),
                           " operands but the node has ", in.size(),
                           " inputs");
  }
  int ellipsis_rank = 0;
  std::vector<int> op_ellipsis(in.size(), 0);
  for (size_t i = 0; i < in.size(); ++i) {
    int letters = 0;
    bool has_ellipsis = false;
    for (int id : e.inputs[i]) {
      if (id == kEllipsis) {
        has_ellipsis = true;
      } else {
        ++letters;
      }
    }
    const int rank = in[i]->shape.rank();
    if (rank < letters || (!has_ellipsis && rank != letters)) {
      return InvalidArgument(node, "operand ", i, " has shape ",
                             in[i]->shape.ToString(), " but its term has ",
                             letters, " labels");
    }
    op_ellipsis[i] = rank - letters;
    ellipsis_rank = std::max(ellipsis_rank, op_ellipsis[i]);
  }
  Plan p;
  p.size.assign(kNumLetters + ellipsis_rank, -1);
  for (size_t i = 0; i < in.size(); ++i) {
    std::vector<int>& labels = p.operands.emplace_back();
    for (int id : e.inputs[i]) {
      if (id == kEllipsis) {
        for (int d = ellipsis_rank - op_ellipsis[i]; d < ellipsis_rank; ++d) {
          labels.push_back(kNumLetters + d);
        }
      } else {
        labels.push_back(id);
      }
    }
    for (size_t d = 0; d < labels.size(); ++d) {
      const int64_t dim = in[i]->shape.dim(static_cast<int>(d));
      int64_t& size = p.size[labels[d]];
      const bool broadcastable = labels[d] >= kNumLetters;
      if (size < 0 || (broadcastable && size == 1)) {
        size = dim;
      } else if (dim != size && !(broadcastable && dim == 1)) {
        return InvalidArgument(node, "operand ", i, " dimension ", d, " is ",
                               dim, ", the same label elsewhere is ", size);
      }
    }
  }
  std::vector<bool> in_output(p.size.size(), false);
  for (int id : e.output) {
    if (id == kEllipsis) {
      for (int d = 0; d < ellipsis_rank; ++d) {
        p.output.push_back(kNumLetters + d);
        in_output[kNumLetters + d] = true;
      }
    } else {
      p.output.push_back(id);
      in_output[id] = true;
    }
  }
  for (size_t id = 0; id < p.size.size(); ++id) {
    if (p.size[id] >= 0 && !in_output[id]) p.summed.push_back(id);
  }
  return p;
}

// Element strides of operand `i` per label id (a repeated label sums its
// strides: the diagonal; a broadcast size-1 dimension has stride 0).
std::vector<int64_t> LabelStrides(const Plan& p, int i, const Shape& shape) {
  std::vector<int64_t> strides(p.size.size(), 0);
  int64_t stride = 1;
  for (int d = shape.rank() - 1; d >= 0; --d) {
    const int label = p.operands[i][d];
    if (!(shape.dim(d) == 1 && p.size[label] != 1)) {
      strides[label] += stride;
    }
    stride *= shape.dim(d);
  }
  return strides;
}

template <typename Acc>
std::vector<Acc> LoadAs(const TensorView& t) {
  std::vector<Acc> v(static_cast<size_t>(t.num_elements()));
  (void)VisitDType(t.dtype, [&](auto tag) -> absl::Status {
    using S = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = static_cast<Acc>(Load<ComputeType<S>>(t.as<const S>()[i]));
    }
    return absl::OkStatus();
  });
  return v;
}

template <typename Acc>
void StoreFrom(const std::vector<Acc>& v, const TensorView& t) {
  (void)VisitDType(t.dtype, [&](auto tag) -> absl::Status {
    using S = typename decltype(tag)::type;
    using C = ComputeType<S>;
    for (size_t i = 0; i < v.size(); ++i) {
      t.as<S>()[i] = Store<S>(static_cast<C>(v[i]));
    }
    return absl::OkStatus();
  });
}

// out[output labels] = sum over summed labels of prod operands.
template <typename Acc>
void Generic(const Plan& p, const std::vector<const TensorView*>& in,
             const TensorView& y) {
  std::vector<std::vector<Acc>> data;
  std::vector<std::vector<int64_t>> strides;
  for (size_t i = 0; i < in.size(); ++i) {
    data.push_back(LoadAs<Acc>(*in[i]));
    strides.push_back(LabelStrides(p, static_cast<int>(i), in[i]->shape));
  }
  std::vector<int> order = p.output;
  order.insert(order.end(), p.summed.begin(), p.summed.end());
  const size_t n_ops = in.size(), n_labels = order.size();
  std::vector<Acc> out(static_cast<size_t>(y.num_elements()), Acc(0));
  int64_t inner = 1;
  for (int id : p.summed) inner *= p.size[id];
  if (inner == 0) {
    StoreFrom(out, y);
    return;
  }
  std::vector<int64_t> idx(n_labels, 0);
  std::vector<int64_t> offset(n_ops, 0);
  for (Acc& o : out) {
    Acc sum = 0;
    for (int64_t s = 0; s < inner; ++s) {
      Acc prod = 1;
      for (size_t i = 0; i < n_ops; ++i) prod *= data[i][offset[i]];
      sum += prod;
      // Advance the odometer (the summed labels run fastest; after the
      // last one it carries into the output labels).
      for (size_t l = n_labels; l-- > 0;) {
        const int id = order[l];
        if (++idx[l] < p.size[id]) {
          for (size_t i = 0; i < n_ops; ++i) offset[i] += strides[i][id];
          break;
        }
        for (size_t i = 0; i < n_ops; ++i) {
          offset[i] -= strides[i][id] * (p.size[id] - 1);
        }
        idx[l] = 0;
      }
    }
    o = sum;
  }
  StoreFrom(out, y);
}

// Copies `src` (dims `dims`, element strides `strides` per dim) into
// contiguous `dst` in the order of `dims`.
void Gather(const float* src, const std::vector<int64_t>& dims,
            const std::vector<int64_t>& strides, float* dst) {
  const size_t r = dims.size();
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t n = 0; n < total; ++n) {
    dst[n] = src[off];
    for (size_t l = r; l-- > 0;) {
      if (++idx[l] < dims[l]) {
        off += strides[l];
        break;
      }
      off -= strides[l] * (dims[l] - 1);
      idx[l] = 0;
    }
  }
}

class EinsumKernel final : public KernelBase {
 public:
  EinsumKernel(const KernelSpec& spec, DType dtype, Equation eq)
      : KernelBase(spec), dtype_(dtype), eq_(std::move(eq)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    std::vector<const TensorView*> in;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      GLINT_ASSIGN_OR_RETURN(const TensorView* t,
                             GetInput(ctx, i, dtype_, node()));
      in.push_back(t);
    }
    GLINT_ASSIGN_OR_RETURN(Plan p, Resolve(eq_, in, node()));
    std::vector<int64_t> out_dims;
    for (int id : p.output) out_dims.push_back(p.size[id]);
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape(out_dims), dtype_, node()));
    if (dtype_ == DType::kFloat32 && in.size() == 2 &&
        TryMatMul(p, *in[0], *in[1], y)) {
      return absl::OkStatus();
    }
    if (dtype_ == DType::kFloat32 && in.size() > 2) {
      return Pairwise(p, in, y);
    }
    if (DTypeIn(dtype_, kAllFloatDTypes)) {
      Generic<double>(p, in, y);
    } else {
      Generic<int64_t>(p, in, y);
    }
    return absl::OkStatus();
  }

 private:
  // More than two float32 operands: contracted left to right, each step
  // a two-operand einsum (sgemm where it is a matrix product) that keeps
  // the labels the output or a later operand still needs. One pass over
  // every label at once would cost the product of all their sizes.
  // An intermediate keeps labels of different operands, so its size is not
  // bounded by any input's: every step is planned first and the kernel
  // refuses (INVALID_ARGUMENT) an intermediate over kMaxIntermediateElements
  // before computing anything.
  absl::Status Pairwise(const Plan& p, const std::vector<const TensorView*>& in,
                        const TensorView& y) const {
    std::vector<Plan> steps;
    std::vector<std::vector<int64_t>> step_dims;
    std::vector<int> acc_labels = p.operands[0];
    for (size_t i = 1; i < in.size(); ++i) {
      const bool last = i + 1 == in.size();
      Plan step;
      step.size = p.size;
      step.operands = {acc_labels, p.operands[i]};
      if (last) {
        step.output = p.output;
      } else {
        std::vector<bool> needed(p.size.size(), false);
        for (int id : p.output) needed[id] = true;
        for (size_t j = i + 1; j < in.size(); ++j) {
          for (int id : p.operands[j]) needed[id] = true;
        }
        for (const auto& labels : step.operands) {
          for (int id : labels) {
            if (needed[id] && std::find(step.output.begin(), step.output.end(),
                                        id) == step.output.end()) {
              step.output.push_back(id);
            }
          }
        }
      }
      std::vector<bool> kept(p.size.size(), false);
      for (int id : step.output) kept[id] = true;
      for (const auto& labels : step.operands) {
        for (int id : labels) {
          if (!kept[id] && std::find(step.summed.begin(), step.summed.end(),
                                     id) == step.summed.end()) {
            step.summed.push_back(id);
          }
        }
      }
      std::vector<int64_t> dims;
      for (int id : step.output) dims.push_back(p.size[id]);
      if (!last) {
        int64_t elements = 1;
        bool over = false;
        for (int64_t d : dims) {
          if (d == 0) {
            elements = 0;
            over = false;
            break;
          }
          if (__builtin_mul_overflow(elements, d, &elements) ||
              elements > kMaxIntermediateElements) {
            over = true;  // Keep scanning: a later 0 makes it empty.
            elements = kMaxIntermediateElements;
          }
        }
        if (over) {
          return InvalidArgument(
              node(), "the intermediate after operand ", i, " (shape ",
              Shape(dims).ToString(), ") exceeds the limit of 2^31 elements");
        }
      }
      acc_labels = step.output;
      steps.push_back(std::move(step));
      step_dims.push_back(std::move(dims));
    }

    std::vector<float> acc;  // The running intermediate.
    TensorView acc_view = *in[0];
    for (size_t i = 1; i < in.size(); ++i) {
      const bool last = i + 1 == in.size();
      const Plan& step = steps[i - 1];
      const std::vector<int64_t>& dims = step_dims[i - 1];
      std::vector<float> next;
      TensorView out = y;
      if (!last) {
        next.resize(static_cast<size_t>(Product(dims, 0, dims.size())));
        out = TensorView{DType::kFloat32, Shape(dims), next.data()};
      }
      if (!TryMatMul(step, acc_view, *in[i], out)) {
        Generic<double>(step, {&acc_view, in[i]}, out);
      }
      if (!last) {
        acc.swap(next);
        acc_view = TensorView{DType::kFloat32, Shape(dims), acc.data()};
      }
    }
    return absl::OkStatus();
  }

  // The sgemm path; false (nothing written) when the contraction is not a
  // plain batched matrix product.
  bool TryMatMul(const Plan& p, const TensorView& a, const TensorView& b,
                 const TensorView& y) const {
    const size_t labels = p.size.size();
    std::vector<int> in_a(labels, 0), in_b(labels, 0), in_y(labels, 0);
    for (int id : p.operands[0]) ++in_a[id];
    for (int id : p.operands[1]) ++in_b[id];
    for (int id : p.output) ++in_y[id];
    std::vector<int> batch, m, n, k;
    for (size_t id = 0; id < labels; ++id) {
      if (in_a[id] > 1 || in_b[id] > 1) return false;  // A diagonal.
      if (in_a[id] + in_b[id] == 0) continue;
      if (in_a[id] && in_b[id]) {
        (in_y[id] ? batch : k).push_back(static_cast<int>(id));
      } else if (!in_y[id]) {
        return false;  // Summed within one operand.
      } else {
        (in_a[id] ? m : n).push_back(static_cast<int>(id));
      }
    }
    // Broadcast size-1 dimensions would need stride 0: generic path.
    for (int i = 0; i < 2; ++i) {
      const TensorView& t = i == 0 ? a : b;
      for (int d = 0; d < t.shape.rank(); ++d) {
        if (t.shape.dim(d) != p.size[p.operands[i][d]]) return false;
      }
    }
    // Output label order: batch, m, n in the order the output lists them.
    auto by_output = [&](std::vector<int>& v) {
      std::vector<int> sorted;
      for (int id : p.output) {
        if (std::find(v.begin(), v.end(), id) != v.end()) sorted.push_back(id);
      }
      v = sorted;
    };
    by_output(batch);
    by_output(m);
    by_output(n);
    auto product = [&](const std::vector<int>& v) {
      int64_t r = 1;
      for (int id : v) r *= p.size[id];
      return r;
    };
    const int64_t nb = product(batch), nm = product(m), nn = product(n),
                  nk = product(k);
    if (nb * nm * nn == 0) return false;
    // Lays out operand `i` as the concatenation of `groups` contiguously;
    // returns its data, copied into `buf` only when needed.
    auto arrange = [&](int i, const TensorView& t,
                       std::vector<const std::vector<int>*> groups,
                       std::vector<float>& buf) -> const float* {
      const std::vector<int64_t> st = LabelStrides(p, i, t.shape);
      std::vector<int64_t> dims, strides;
      for (const auto* g : groups) {
        for (int id : *g) {
          dims.push_back(p.size[id]);
          strides.push_back(st[id]);
        }
      }
      bool contiguous = true;
      int64_t expect = 1;
      for (size_t d = dims.size(); d-- > 0;) {
        if (dims[d] != 1 && strides[d] != expect) contiguous = false;
        expect *= dims[d];
      }
      if (contiguous) return t.as<const float>();
      buf.resize(static_cast<size_t>(t.num_elements()));
      Gather(t.as<const float>(), dims, strides, buf.data());
      return buf.data();
    };
    std::vector<float> abuf, bbuf, ybuf;
    const float* pa = arrange(0, a, {&batch, &m, &k}, abuf);
    const float* pb = arrange(1, b, {&batch, &k, &n}, bbuf);
    // The product lands in [batch, m, n]; it is y itself when the output
    // lists its labels in that order.
    std::vector<int> bmn = batch;
    bmn.insert(bmn.end(), m.begin(), m.end());
    bmn.insert(bmn.end(), n.begin(), n.end());
    const bool direct = bmn == p.output;
    float* py = y.as<float>();
    if (!direct) {
      ybuf.resize(static_cast<size_t>(y.num_elements()));
      py = ybuf.data();
    }
    for (int64_t i = 0; i < nb; ++i) {
      float* c = py + i * nm * nn;
      if (nk == 0) {
        std::fill(c, c + nm * nn, 0.0f);
        continue;
      }
      const dnnl_status_t st = dnnl_sgemm(
          'N', 'N', nm, nn, nk, 1.0f, pa + i * nm * nk, nk,
          pb + i * nk * nn, nn, 0.0f, c, nn);
      if (st != dnnl_success) return false;  // Generic path recomputes.
    }
    if (!direct) {
      // ybuf is [batch, m, n]; permute into the output's order.
      std::vector<int64_t> pos_stride(p.size.size(), 0);
      int64_t stride = 1;
      for (size_t d = bmn.size(); d-- > 0;) {
        pos_stride[bmn[d]] = stride;
        stride *= p.size[bmn[d]];
      }
      std::vector<int64_t> dims, strides;
      for (int id : p.output) {
        dims.push_back(p.size[id]);
        strides.push_back(pos_stride[id]);
      }
      Gather(ybuf.data(), dims, strides, y.as<float>());
    }
    return true;
  }

  DType dtype_;
  Equation eq_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeEinsum(const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  if (spec.inputs.empty()) {
    return InvalidArgument(node, "Einsum needs at least one input");
  }
  GLINT_RETURN_IF_ERROR(
      CheckArity(spec, 1, static_cast<int>(spec.inputs.size())));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kAllNumericDTypes));
  for (size_t i = 1; i < spec.inputs.size(); ++i) {
    GLINT_ASSIGN_OR_RETURN(DType d, SpecInputDType(spec, static_cast<int>(i),
                                                   kAllNumericDTypes));
    if (d != dtype) {
      return InvalidArgument(node, "input ", i, " has dtype ", DTypeName(d),
                             ", input 0 ", DTypeName(dtype));
    }
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const std::string equation = spec.node->GetString("equation", "");
  if (equation.empty()) {
    return InvalidArgument(node, "missing attribute 'equation'");
  }
  GLINT_ASSIGN_OR_RETURN(Equation eq, ParseEquation(equation, node));
  if (eq.inputs.size() != spec.inputs.size()) {
    return InvalidArgument(node, "equation '", equation, "' has ",
                           eq.inputs.size(), " operands but the node has ",
                           spec.inputs.size(), " inputs");
  }
  return std::unique_ptr<Kernel>(new EinsumKernel(spec, dtype, std::move(eq)));
}

}  // namespace

void RegisterEinsumKernels(KernelRegistry* registry) {
  registry->Register("Einsum", MakeEinsum);
}

}  // namespace glint::cpu
