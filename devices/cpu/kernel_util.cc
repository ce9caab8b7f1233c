#include "devices/cpu/kernel_util.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "devices/cpu/element_types.h"

namespace glint::cpu {

bool DTypeIn(DType dtype, std::initializer_list<DType> set) {
  return std::find(set.begin(), set.end(), dtype) != set.end();
}

std::string DTypeList(std::initializer_list<DType> set) {
  return absl::StrJoin(set, ", ", [](std::string* out, DType d) {
    absl::StrAppend(out, DTypeName(d));
  });
}

absl::StatusOr<DType> SpecInputDType(const KernelSpec& spec, int i,
                                     std::initializer_list<DType> allowed) {
  const std::string node = spec.node->Describe();
  if (!spec.has_input(i)) {
    return InvalidArgument(node, "input ", i, " is required");
  }
  const DType dtype = spec.inputs[i].dtype;
  if (!DTypeIn(dtype, allowed)) {
    return Unimplemented(node, "input ", i, " has dtype ", DTypeName(dtype),
                         "; the CPU kernel supports ", DTypeList(allowed));
  }
  return dtype;
}

absl::StatusOr<DType> SpecOutputDType(const KernelSpec& spec, int i,
                                      DType derived) {
  if (i < static_cast<int>(spec.outputs.size()) &&
      spec.outputs[i].dtype != DType::kUndefined &&
      spec.outputs[i].dtype != derived) {
    return InvalidArgument(spec.node->Describe(), "output ", i,
                           " is declared ", DTypeName(spec.outputs[i].dtype),
                           " but the op produces ", DTypeName(derived));
  }
  return derived;
}

absl::Status CheckArity(const KernelSpec& spec, int min_inputs,
                        int max_inputs) {
  const int n = spec.node->num_inputs();
  if (n < min_inputs || n > max_inputs) {
    return InvalidArgument(spec.node->Describe(), "has ", n,
                           " inputs; expected ", min_inputs,
                           min_inputs == max_inputs
                               ? std::string()
                               : absl::StrCat(" to ", max_inputs));
  }
  if (spec.node->outputs.empty() || spec.node->outputs[0].empty()) {
    return InvalidArgument(spec.node->Describe(), "has no output");
  }
  return absl::OkStatus();
}

absl::StatusOr<DType> SpecDataAndIndex(
    const KernelSpec& spec, int num_inputs,
    std::initializer_list<DType> index_dtypes) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, num_inputs, num_inputs));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kEveryDType));
  GLINT_RETURN_IF_ERROR(SpecInputDType(spec, 1, index_dtypes).status());
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return dtype;
}

absl::StatusOr<const TensorView*> GetOptionalInput(const KernelContext& ctx,
                                                   int i, DType dtype,
                                                   absl::string_view node) {
  const TensorView* in = ctx.input(i);
  if (in == nullptr) return nullptr;
  if (dtype != DType::kUndefined && in->dtype != dtype) {
    return InvalidArgument(node, "input ", i, " has dtype ",
                           DTypeName(in->dtype), "; expected ",
                           DTypeName(dtype));
  }
  if (!in->shape.IsStatic()) {
    return InvalidArgument(node, "input ", i, " has a non-static shape ",
                           in->shape.ToString());
  }
  if (in->data == nullptr && in->num_bytes() != 0) {
    return InvalidArgument(node, "input ", i, " has no buffer");
  }
  return in;
}

absl::StatusOr<std::vector<const TensorView*>> GetChannelsLastConcatInputs(
    const KernelContext& ctx, int first, absl::string_view node) {
  std::vector<const TensorView*> xs;
  for (int i = first; i < ctx.num_inputs(); ++i) {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, i, DType::kFloat32, node));
    xs.push_back(x);
  }
  if (xs.empty()) return InvalidArgument(node, "has no input to concatenate");
  const Shape& s0 = xs[0]->shape;
  const int rank = s0.rank();
  if (rank < 2) {
    return InvalidArgument(node, "input shape ", s0.ToString(),
                           "; expected [N, ..., C]");
  }
  for (const TensorView* x : xs) {
    const Shape& s = x->shape;
    bool same = s.rank() == rank;
    for (int d = 0; same && d + 1 < rank; ++d) same = s.dim(d) == s0.dim(d);
    if (!same) {
      return InvalidArgument(node, "input shapes ", s0.ToString(), " and ",
                             s.ToString(), " differ off the channel axis");
    }
  }
  return xs;
}

absl::StatusOr<const TensorView*> GetInput(const KernelContext& ctx, int i,
                                           DType dtype,
                                           absl::string_view node) {
  GLINT_ASSIGN_OR_RETURN(const TensorView* in,
                         GetOptionalInput(ctx, i, dtype, node));
  if (in == nullptr) {
    return InvalidArgument(node, "input ", i, " is missing");
  }
  return in;
}

absl::StatusOr<TensorView> AllocateOutput(KernelContext& ctx, int i,
                                          const Shape& shape, DType dtype,
                                          absl::string_view node) {
  absl::StatusOr<TensorView> out = ctx.AllocateOutput(i, shape);
  if (!out.ok()) {
    return absl::Status(out.status().code(),
                        absl::StrCat(node, ": output ", i, ": ",
                                     out.status().message()));
  }
  if (out->dtype != dtype) {
    return Internal(node, "output ", i, " was allocated as ",
                    DTypeName(out->dtype), " but the kernel produces ",
                    DTypeName(dtype));
  }
  if (out->shape != shape) {
    return Internal(node, "output ", i, " was allocated with shape ",
                    out->shape.ToString(), " instead of ", shape.ToString());
  }
  if (out->data == nullptr && out->num_bytes() != 0) {
    return Internal(node, "output ", i, " has no buffer");
  }
  return out;
}

absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank, bool inclusive_end,
                                  absl::string_view node) {
  const int64_t hi = inclusive_end ? rank : rank - 1;
  if (axis < -static_cast<int64_t>(rank) || axis > hi) {
    return InvalidArgument(node, "axis ", axis, " is out of range [", -rank,
                           ", ", hi, "] for rank ", rank);
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

absl::StatusOr<std::vector<int64_t>> ReadInt64s(const TensorView& t,
                                                absl::string_view what,
                                                absl::string_view node) {
  if (t.shape.rank() > 1) {
    return InvalidArgument(node, what, " must be 1-D; it has shape ",
                           t.shape.ToString());
  }
  const int64_t n = t.num_elements();
  std::vector<int64_t> v(n);
  if (t.dtype == DType::kInt64) {
    std::copy(t.as<const int64_t>(), t.as<const int64_t>() + n, v.begin());
  } else if (t.dtype == DType::kInt32) {
    std::copy(t.as<const int32_t>(), t.as<const int32_t>() + n, v.begin());
  } else {
    return InvalidArgument(node, what, " must be int64; it is ",
                           DTypeName(t.dtype));
  }
  return v;
}

absl::StatusOr<std::vector<int64_t>> GetInputInt64s(const KernelContext& ctx,
                                                    int i, DType dtype,
                                                    absl::string_view what,
                                                    absl::string_view node) {
  GLINT_ASSIGN_OR_RETURN(const TensorView* t, GetInput(ctx, i, dtype, node));
  return ReadInt64s(*t, what, node);
}

absl::StatusOr<std::vector<int64_t>> GetOptionalInputInt64s(
    const KernelContext& ctx, int i, DType dtype,
    const std::vector<int64_t>& fallback, absl::string_view what,
    absl::string_view node) {
  GLINT_ASSIGN_OR_RETURN(const TensorView* t,
                         GetOptionalInput(ctx, i, dtype, node));
  if (t == nullptr) return fallback;
  return ReadInt64s(*t, what, node);
}

int64_t Product(const std::vector<int64_t>& dims, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) p *= dims[i];
  return p;
}

TensorView ViewOf(const Tensor& t) {
  TensorView v;
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.data = const_cast<void*>(t.raw_data());
  return v;
}

void ParallelFor(int64_t n, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
#if defined(_OPENMP) && !defined(GLINT_SANITIZER)
  const int threads = omp_get_max_threads();
  const int64_t chunks =
      std::min<int64_t>(threads, n / std::max<int64_t>(grain, 1));
  if (chunks >= 2) {
    // The team is always the thread's full count, and threads past
    // `chunks` have nothing to do. A team smaller than the one this thread
    // started last makes libgomp end the pool's extra threads, and the next
    // full-size region (most oneDNN primitives) creates them again: on 16
    // cores every small op between two convolutions then paid ~14 thread
    // creations, and most ops ran slower on 16 threads than on 2
    // (bench/README.md, "Many cores").
#pragma omp parallel num_threads(threads)
    {
      const int64_t team = omp_get_num_threads();
      for (int64_t c = omp_get_thread_num(); c < chunks; c += team) {
        fn(n * c / chunks, n * (c + 1) / chunks);
      }
    }
    return;
  }
#endif
  fn(0, n);
}

#if defined(_OPENMP)
ScopedKernelThreads::ScopedKernelThreads(int threads)
    : saved_(omp_get_max_threads()) {
  omp_set_num_threads(std::max(1, std::min(threads, saved_)));
}
ScopedKernelThreads::~ScopedKernelThreads() { omp_set_num_threads(saved_); }
#else
ScopedKernelThreads::ScopedKernelThreads(int threads) : saved_(1) {}
ScopedKernelThreads::~ScopedKernelThreads() = default;
#endif

void SetKernelThreads(int threads) {
#if defined(_OPENMP)
  omp_set_num_threads(std::max(threads, 1));
#endif
}

std::string DescribeKernel(const Node& node, absl::string_view engine) {
  const bool fused = absl::StartsWith(node.op_type, "glint.Fused");
  std::vector<std::string> traits;
  const std::string activation = node.GetString("activation", "");
  if (!activation.empty()) traits.push_back(activation);
  if (node.HasAttribute("alpha") && fused &&
      node.GetFloat("alpha", 1.0f) != 1.0f) {
    traits.push_back(absl::StrCat("alpha=", node.GetFloat("alpha", 1.0f)));
  }
  if (node.GetInt("channels_last", 0) != 0) traits.push_back("channels_last");
  auto has_input = [&node](int i) {
    return i < node.num_inputs() && !node.inputs[i].empty();
  };
  if (fused && node.op_type != "glint.FusedGemm") {
    if (has_input(2)) traits.push_back("bias");
    if (has_input(3)) traits.push_back("residual");
  }
  std::string out = node.op_type;
  if (!traits.empty()) {
    absl::StrAppend(&out, "[", absl::StrJoin(traits, ", "), "]");
  }
  if (!engine.empty()) absl::StrAppend(&out, " ", engine);
  return out;
}

}  // namespace glint::cpu
