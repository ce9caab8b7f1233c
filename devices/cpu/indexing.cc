// Indexing kernels: Slice, Split, Gather, GatherElements, GatherND,
// ScatterElements (and the deprecated Scatter), ScatterND, OneHot,
// Compress, Trilu, ReverseSequence.
//
// They only move elements, so most dispatch on element size. Indices may
// be negative (counted from the end) where ONNX allows it; an index out of
// range is INVALID_ARGUMENT, never an out-of-bounds access.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/status_macros.h"
#include "devices/cpu/element_types.h"
#include "devices/cpu/index_walk.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

constexpr std::initializer_list<DType> kIndexDTypes = {DType::kInt32,
                                                       DType::kInt64};

// Index `i` of an int32/int64 tensor.
int64_t IndexAt(const TensorView& t, int64_t i) {
  return t.dtype == DType::kInt32 ? t.as<const int32_t>()[i]
                                  : t.as<const int64_t>()[i];
}

// Maps a possibly negative index into [0, n); INVALID_ARGUMENT outside.
absl::StatusOr<int64_t> FixIndex(int64_t idx, int64_t n,
                                 absl::string_view node) {
  if (idx < -n || idx >= n) {
    return InvalidArgument(node, "index ", idx, " is out of range for a ",
                           "dimension of size ", n);
  }
  return idx < 0 ? idx + n : idx;
}

// ------------------------------------------------------------------ Slice

class SliceKernel final : public KernelBase {
 public:
  SliceKernel(const KernelSpec& spec, DType dtype, bool from_inputs)
      : KernelBase(spec),
        dtype_(dtype),
        from_inputs_(from_inputs),
        starts_(spec.node->GetInts("starts")),
        ends_(spec.node->GetInts("ends")),
        axes_(spec.node->GetInts("axes")) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (from_inputs_) {
      GLINT_ASSIGN_OR_RETURN(
          starts, GetInputInt64s(ctx, 1, DType::kUndefined, "starts", node()));
      GLINT_ASSIGN_OR_RETURN(
          ends, GetInputInt64s(ctx, 2, DType::kUndefined, "ends", node()));
      GLINT_ASSIGN_OR_RETURN(
          axes, GetOptionalInputInt64s(ctx, 3, DType::kUndefined, {}, "axes",
                                       node()));
      GLINT_ASSIGN_OR_RETURN(
          steps, GetOptionalInputInt64s(ctx, 4, DType::kUndefined, {}, "steps",
                                        node()));
    }
    const int rank = x->shape.rank();
    if (axes.empty()) {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(i);
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (ends.size() != starts.size() || axes.size() != starts.size() ||
        steps.size() != starts.size()) {
      return InvalidArgument(node(), "starts, ends, axes and steps must "
                             "have one length");
    }
    std::vector<int64_t> begin(rank, 0), step(rank, 1), dims =
                                                             x->shape.dims();
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < starts.size(); ++i) {
      GLINT_ASSIGN_OR_RETURN(int ax, NormalizeAxis(axes[i], rank, false,
                                                   node()));
      if (seen[ax]) return InvalidArgument(node(), "axis repeated");
      seen[ax] = true;
      const int64_t n = x->shape.dim(ax);
      const int64_t s = steps[i];
      if (s == 0) return InvalidArgument(node(), "step is zero");
      int64_t b = starts[i], e = ends[i];
      if (b < 0) b += n;
      if (e < 0) e += n;
      if (s > 0) {
        b = std::clamp<int64_t>(b, 0, n);
        e = std::clamp<int64_t>(e, 0, n);
        // Ceil division written so that a step near INT64_MAX cannot
        // overflow (e - b <= n).
        dims[ax] = e > b ? 1 + (e - b - 1) / s : 0;
      } else {
        b = std::clamp<int64_t>(b, 0, n - 1);
        e = std::clamp<int64_t>(e, -1, n - 1);
        // As above; -INT64_MIN does not exist, and such a step takes one
        // element anyway.
        dims[ax] = b <= e ? 0
                   : s == std::numeric_limits<int64_t>::min()
                       ? 1
                       : 1 + (b - e - 1) / -s;
      }
      begin[ax] = b;
      step[ax] = s;
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape(dims), dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    return VisitBySize(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* px = x->as<const T>();
      T* py = y.as<T>();
      const std::vector<int64_t> st = RowStrides(x->shape.dims());
      IndexWalk walk(dims);
      int64_t i = 0;
      if (rank == 0) {
        py[0] = px[0];
        return absl::OkStatus();
      }
      if (step[rank - 1] == 1) {
        // Contiguous rows along the last axis (a channels-last Slice of
        // the channels, most slices of real models): one copy per row.
        const int64_t row = dims[rank - 1];
        const int64_t rows = y.num_elements() / row;
        ParallelFor(rows, std::max<int64_t>(1, 4096 / row),
                    [&](int64_t first, int64_t last) {
                      for (int64_t r = first; r < last; ++r) {
                        int64_t src = begin[rank - 1] * st[rank - 1];
                        int64_t rest = r;
                        for (int d = rank - 2; d >= 0; --d) {
                          const int64_t index = rest % dims[d];
                          rest /= dims[d];
                          src += (begin[d] + index * step[d]) * st[d];
                        }
                        std::memcpy(py + r * row, px + src, row * sizeof(T));
                      }
                    });
        return absl::OkStatus();
      }
      do {
        int64_t src = 0;
        for (int d = 0; d < rank; ++d) {
          src += (begin[d] + walk.index(d) * step[d]) * st[d];
        }
        py[i++] = px[src];
      } while (walk.Next());
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
  bool from_inputs_;
  std::vector<int64_t> starts_, ends_, axes_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeSlice(const KernelSpec& spec) {
  const bool from_inputs = spec.opset_version == 0 || spec.opset_version >= 10;
  GLINT_RETURN_IF_ERROR(CheckArity(spec, from_inputs ? 3 : 1,
                                   from_inputs ? 5 : 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kEveryDType));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new SliceKernel(spec, dtype, from_inputs));
}

// ------------------------------------------------------------------ Split

class SplitKernel final : public KernelBase {
 public:
  // `num_outputs` (opset 18's attribute, > 0 when given) asks for chunks
  // of ceil(dim / num_outputs), the last one smaller.
  SplitKernel(const KernelSpec& spec, DType dtype, int64_t axis,
              bool from_input, std::vector<int64_t> split, int outputs,
              bool num_outputs)
      : KernelBase(spec),
        dtype_(dtype),
        axis_(axis),
        from_input_(from_input),
        split_(std::move(split)),
        outputs_(outputs),
        num_outputs_(num_outputs) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, rank, false, node()));
    std::vector<int64_t> split = split_;
    if (from_input_) {
      GLINT_ASSIGN_OR_RETURN(
          split, GetOptionalInputInt64s(ctx, 1, DType::kInt64, split_, "split",
                                        node()));
    }
    const int64_t n = x->shape.dim(axis);
    if (num_outputs_) {
      // As onnxruntime: ceil-sized chunks must leave the last one at least
      // one element (7 into 4 is 2, 2, 2, 1; 5 into 4 has no such split).
      const int64_t part = outputs_ > n ? 0 : (n + outputs_ - 1) / outputs_;
      const int64_t last = n - part * (outputs_ - 1);
      if (outputs_ > n || last < 1) {
        return InvalidArgument(node(), "num_outputs=", outputs_,
                               " cannot split an axis of size ", n,
                               " into chunks of ceil(", n, "/", outputs_,
                               ") with a non-empty last one");
      }
      split.assign(outputs_, part);
      split.back() = last;
    } else if (split.empty()) {
      // Equal parts; the last one smaller when n does not divide.
      const int64_t part = (n + outputs_ - 1) / outputs_;
      for (int i = 0; i < outputs_; ++i) {
        split.push_back(std::max<int64_t>(0, std::min(part, n - i * part)));
      }
    }
    int64_t total = 0;
    for (int64_t s : split) {
      if (s < 0) return InvalidArgument(node(), "negative split");
      // total <= n here, so n - total cannot overflow where total + s can.
      if (s > n - total) {
        return InvalidArgument(node(), "split sums past the axis size ", n);
      }
      total += s;
    }
    if (static_cast<int>(split.size()) != outputs_ || total != n) {
      return InvalidArgument(node(), "split does not match the outputs or "
                             "the axis size ", n);
    }
    const std::vector<int64_t>& d = x->shape.dims();
    const int64_t outer = Product(d, 0, axis);
    const int64_t inner = Product(d, axis + 1, rank) * DTypeSize(dtype_);
    int64_t offset = 0;
    for (int o = 0; o < outputs_; ++o) {
      if (ctx.output_used(o)) {
        std::vector<int64_t> od = d;
        od[axis] = split[o];
        GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
            ctx, o, Shape(od), dtype_, node()));
        const char* src = static_cast<const char*>(x->data);
        char* dst = static_cast<char*>(y.data);
        const int64_t chunk = split[o] * inner;
        for (int64_t i = 0; i < outer && chunk > 0; ++i) {
          std::memcpy(dst + i * chunk, src + (i * n + offset) * inner, chunk);
        }
      }
      offset += split[o];
    }
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  int64_t axis_;
  bool from_input_;
  std::vector<int64_t> split_;
  int outputs_;
  bool num_outputs_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeSplit(const KernelSpec& spec) {
  const bool from_input = spec.opset_version == 0 || spec.opset_version >= 13;
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, from_input ? 2 : 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kEveryDType));
  const int outputs = static_cast<int>(spec.node->outputs.size());
  for (int i = 0; i < outputs; ++i) {
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, i, dtype).status());
  }
  // Opset 18: num_outputs instead of the split input (never both).
  const bool num_outputs =
      (spec.opset_version == 0 || spec.opset_version >= 18) &&
      spec.node->HasAttribute("num_outputs");
  if (num_outputs) {
    const int64_t k = spec.node->GetInt("num_outputs", 0);
    if (k < 1 || k != outputs) {
      return InvalidArgument(spec.node->Describe(), "num_outputs=", k,
                             " must be >= 1 and equal the node's ", outputs,
                             " outputs");
    }
    if (spec.has_input(1)) {
      return InvalidArgument(spec.node->Describe(),
                             "takes the split input or num_outputs, not both");
    }
  }
  return std::unique_ptr<Kernel>(new SplitKernel(
      spec, dtype, spec.node->GetInt("axis", 0), from_input,
      spec.node->GetInts("split"), outputs, num_outputs));
}

// ----------------------------------------------------------------- Gather

class GatherKernel final : public KernelBase {
 public:
  GatherKernel(const KernelSpec& spec, DType dtype, int64_t axis)
      : KernelBase(spec), dtype_(dtype), axis_(axis) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* idx,
                           GetInput(ctx, 1, DType::kUndefined, node()));
    const int rank = x->shape.rank();
    if (rank == 0) return InvalidArgument(node(), "data must have rank >= 1");
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, rank, false, node()));
    const std::vector<int64_t>& d = x->shape.dims();
    std::vector<int64_t> od(d.begin(), d.begin() + axis);
    od.insert(od.end(), idx->shape.dims().begin(), idx->shape.dims().end());
    od.insert(od.end(), d.begin() + axis + 1, d.end());
    const int64_t n = d[axis];
    const int64_t outer = Product(d, 0, axis);
    const int64_t inner = Product(d, axis + 1, rank) * DTypeSize(dtype_);
    const int64_t m = idx->num_elements();
    std::vector<int64_t> fixed(m);
    for (int64_t i = 0; i < m; ++i) {
      GLINT_ASSIGN_OR_RETURN(fixed[i], FixIndex(IndexAt(*idx, i), n, node()));
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape(od), dtype_, node()));
    const char* src = static_cast<const char*>(x->data);
    char* dst = static_cast<char*>(y.data);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < m; ++i) {
        std::memcpy(dst + (o * m + i) * inner, src + (o * n + fixed[i]) * inner,
                    inner);
      }
    }
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  int64_t axis_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeGather(const KernelSpec& spec) {
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecDataAndIndex(spec, 2, kIndexDTypes));
  return std::unique_ptr<Kernel>(
      new GatherKernel(spec, dtype, spec.node->GetInt("axis", 0)));
}

// GatherElements and ScatterElements share the walk over indices: for
// each position p of `indices`, the data position is p with p[axis]
// replaced by the index. Where the indices' dims after `axis` are the
// data's (torchvision's RoI merge scatters whole [C, 7, 7] rows), a run of
// positions maps to a run of data and the walk is three plain loops;
// otherwise it steps a position at a time.
template <typename F>
absl::Status WalkElements(const Shape& data, const TensorView& idx, int axis,
                          absl::string_view node, F&& f) {
  const int rank = data.rank();
  if (idx.shape.rank() != rank) {
    return InvalidArgument(node, "indices must have the data's rank");
  }
  const int64_t m = idx.num_elements();
  if (m == 0) return absl::OkStatus();
  bool inner_whole = true;
  for (int d = 0; d < rank; ++d) {
    if (d != axis && idx.shape.dim(d) > data.dim(d)) {
      return InvalidArgument(node, "indices shape exceeds the data's");
    }
    if (d > axis) inner_whole = inner_whole && idx.shape.dim(d) == data.dim(d);
  }
  const std::vector<int64_t> st = RowStrides(data.dims());
  const int64_t n = data.dim(axis);
  const bool int32 = idx.dtype == DType::kInt32;
  auto index = [&](int64_t i) -> int64_t {
    return int32 ? idx.as<const int32_t>()[i] : idx.as<const int64_t>()[i];
  };
  if (inner_whole) {
    const int64_t inner = st[axis];
    const int64_t along = idx.shape.dim(axis);
    const std::vector<int64_t> outer_dims(idx.shape.dims().begin(),
                                          idx.shape.dims().begin() + axis);
    IndexWalk outer(outer_dims);
    int64_t i = 0;
    do {
      int64_t base = 0;
      for (int d = 0; d < axis; ++d) base += outer.index(d) * st[d];
      for (int64_t a = 0; a < along; ++a) {
        for (int64_t j = 0; j < inner; ++j, ++i) {
          int64_t k = index(i);
          if (k < -n || k >= n) {
            return InvalidArgument(node, "index ", k, " is out of range for ",
                                   "a dimension of size ", n);
          }
          if (k < 0) k += n;
          f(i, base + k * inner + j);
        }
      }
    } while (outer.Next());
    return absl::OkStatus();
  }
  IndexWalk walk(idx.shape.dims());
  for (int64_t i = 0; i < m; ++i) {
    GLINT_ASSIGN_OR_RETURN(int64_t k, FixIndex(index(i), n, node));
    int64_t pos = 0;
    for (int d = 0; d < rank; ++d) {
      pos += (d == axis ? k : walk.index(d)) * st[d];
    }
    f(i, pos);
    walk.Next();
  }
  return absl::OkStatus();
}

class GatherElementsKernel final : public KernelBase {
 public:
  GatherElementsKernel(const KernelSpec& spec, DType dtype, int64_t axis)
      : KernelBase(spec), dtype_(dtype), axis_(axis) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* idx,
                           GetInput(ctx, 1, DType::kUndefined, node()));
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x->shape.rank(),
                                                   false, node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, idx->shape, dtype_, node()));
    return VisitBySize(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* px = x->as<const T>();
      T* py = y.as<T>();
      return WalkElements(x->shape, *idx, axis, node(),
                          [&](int64_t i, int64_t pos) { py[i] = px[pos]; });
    });
  }

 private:
  DType dtype_;
  int64_t axis_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeGatherElements(
    const KernelSpec& spec) {
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecDataAndIndex(spec, 2, kIndexDTypes));
  return std::unique_ptr<Kernel>(
      new GatherElementsKernel(spec, dtype, spec.node->GetInt("axis", 0)));
}

enum class ScatterReduce { kNone, kAdd, kMul, kMax, kMin };

// ScatterElements/ScatterND's reduction: add and mul from opset 16, max
// and min from 18 (a node of an older opset naming them is malformed).
absl::StatusOr<ScatterReduce> ParseReduction(const KernelSpec& spec) {
  const Node& node = *spec.node;
  const int64_t v = spec.opset_version;
  const std::string r = node.GetString("reduction", "none");
  if (r == "none") return ScatterReduce::kNone;
  const int64_t since = r == "max" || r == "min" ? 18 : 16;
  if (v > 0 && v < since) {
    return InvalidArgument(node.Describe(), "reduction '", r, "' needs ",
                           node.op_type, "-", since, "; the node is opset ",
                           v);
  }
  if (r == "add") return ScatterReduce::kAdd;
  if (r == "mul") return ScatterReduce::kMul;
  if (r == "max") return ScatterReduce::kMax;
  if (r == "min") return ScatterReduce::kMin;
  return Unimplemented(node.Describe(), node.op_type, "-", v,
                       " attribute reduction='", r, "' not supported");
}

template <typename S>
void ScatterOne(S* dst, S v, ScatterReduce r) {
  using C = ComputeType<S>;
  if constexpr (std::is_same_v<S, bool>) {
    *dst = v;
  } else {
    const C a = Load<C>(*dst), b = Load<C>(v);
    switch (r) {
      case ScatterReduce::kNone: *dst = v; break;
      case ScatterReduce::kAdd: *dst = Store<S>(static_cast<C>(a + b)); break;
      case ScatterReduce::kMul: *dst = Store<S>(static_cast<C>(a * b)); break;
      case ScatterReduce::kMax: *dst = Store<S>(a < b ? b : a); break;
      case ScatterReduce::kMin: *dst = Store<S>(b < a ? b : a); break;
    }
  }
}

class ScatterElementsKernel final : public KernelBase {
 public:
  ScatterElementsKernel(const KernelSpec& spec, DType dtype, int64_t axis,
                        ScatterReduce r)
      : KernelBase(spec), dtype_(dtype), axis_(axis), reduce_(r) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* idx,
                           GetInput(ctx, 1, DType::kUndefined, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* upd,
                           GetInput(ctx, 2, dtype_, node()));
    if (upd->shape != idx->shape) {
      return InvalidArgument(node(), "updates must have the indices' shape");
    }
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, x->shape.rank(),
                                                   false, node()));
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, x->shape, dtype_, node()));
    if (y.num_bytes() > 0) std::memcpy(y.data, x->data, y.num_bytes());
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      const S* pu = upd->as<const S>();
      S* py = y.as<S>();
      return WalkElements(x->shape, *idx, axis, node(),
                          [&](int64_t i, int64_t pos) {
                            ScatterOne(py + pos, pu[i], reduce_);
                          });
    });
  }

 private:
  DType dtype_;
  int64_t axis_;
  ScatterReduce reduce_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeScatterElements(
    const KernelSpec& spec) {
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecDataAndIndex(spec, 3, kIndexDTypes));
  GLINT_ASSIGN_OR_RETURN(ScatterReduce r, ParseReduction(spec));
  return std::unique_ptr<Kernel>(new ScatterElementsKernel(
      spec, dtype, spec.node->GetInt("axis", 0), r));
}

// --------------------------------------------------- GatherND, ScatterND

// Offsets (in elements of data) of each index tuple of `idx` (last dim =
// tuple length q), for data dims starting at `batch_dims`, plus the batch
// number of each tuple.
struct NdPlan {
  std::vector<int64_t> offsets;  // Per tuple, into data.
  int64_t slice = 1;             // Elements copied per tuple.
};

absl::StatusOr<NdPlan> PlanNd(const Shape& data, const TensorView& idx,
                              int64_t batch_dims, absl::string_view node) {
  const int r = data.rank();
  const int qr = idx.shape.rank();
  if (qr < 1) return InvalidArgument(node, "indices must have rank >= 1");
  const int64_t q = idx.shape.dim(qr - 1);
  if (batch_dims < 0 || batch_dims >= std::min(r, qr) ||
      q > r - batch_dims) {
    return InvalidArgument(node, "indices' last dimension or batch_dims "
                           "does not fit the data");
  }
  for (int64_t b = 0; b < batch_dims; ++b) {
    if (data.dim(b) != idx.shape.dim(b)) {
      return InvalidArgument(node, "batch dimensions differ");
    }
  }
  const std::vector<int64_t> st = RowStrides(data.dims());
  NdPlan plan;
  plan.slice = Product(data.dims(), static_cast<int>(batch_dims + q), r);
  const int64_t tuples = q == 0 ? idx.num_elements() : idx.num_elements() / q;
  const int64_t per_batch =
      tuples / std::max<int64_t>(1, Product(idx.shape.dims(), 0, batch_dims));
  const int64_t batch_stride = batch_dims > 0 ? st[batch_dims - 1] : 0;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = batch_dims > 0 ? (t / per_batch) * batch_stride : 0;
    for (int64_t j = 0; j < q; ++j) {
      const int d = static_cast<int>(batch_dims + j);
      GLINT_ASSIGN_OR_RETURN(int64_t k,
                             FixIndex(IndexAt(idx, t * q + j), data.dim(d),
                                      node));
      off += k * st[d];
    }
    plan.offsets.push_back(off);
  }
  return plan;
}

class GatherNDKernel final : public KernelBase {
 public:
  GatherNDKernel(const KernelSpec& spec, DType dtype, int64_t batch_dims)
      : KernelBase(spec), dtype_(dtype), batch_dims_(batch_dims) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* idx,
                           GetInput(ctx, 1, DType::kInt64, node()));
    GLINT_ASSIGN_OR_RETURN(NdPlan plan,
                           PlanNd(x->shape, *idx, batch_dims_, node()));
    const int qr = idx->shape.rank();
    const int64_t q = idx->shape.dim(qr - 1);
    std::vector<int64_t> od(idx->shape.dims().begin(),
                            idx->shape.dims().end() - 1);
    for (int d = static_cast<int>(batch_dims_ + q); d < x->shape.rank(); ++d) {
      od.push_back(x->shape.dim(d));
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape(od), dtype_, node()));
    const size_t bytes = plan.slice * DTypeSize(dtype_);
    for (size_t t = 0; t < plan.offsets.size(); ++t) {
      std::memcpy(static_cast<char*>(y.data) + t * bytes,
                  static_cast<const char*>(x->data) +
                      plan.offsets[t] * DTypeSize(dtype_),
                  bytes);
    }
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  int64_t batch_dims_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeGatherND(const KernelSpec& spec) {
  GLINT_ASSIGN_OR_RETURN(DType dtype,
                         SpecDataAndIndex(spec, 2, {DType::kInt64}));
  return std::unique_ptr<Kernel>(
      new GatherNDKernel(spec, dtype, spec.node->GetInt("batch_dims", 0)));
}

class ScatterNDKernel final : public KernelBase {
 public:
  ScatterNDKernel(const KernelSpec& spec, DType dtype, ScatterReduce r)
      : KernelBase(spec), dtype_(dtype), reduce_(r) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* idx,
                           GetInput(ctx, 1, DType::kInt64, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* upd,
                           GetInput(ctx, 2, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(NdPlan plan, PlanNd(x->shape, *idx, 0, node()));
    if (upd->num_elements() !=
        static_cast<int64_t>(plan.offsets.size()) * plan.slice) {
      return InvalidArgument(node(), "updates has the wrong shape ",
                             upd->shape.ToString());
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, x->shape, dtype_, node()));
    if (y.num_bytes() > 0) std::memcpy(y.data, x->data, y.num_bytes());
    return VisitDType(dtype_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      const S* pu = upd->as<const S>();
      S* py = y.as<S>();
      for (size_t t = 0; t < plan.offsets.size(); ++t) {
        for (int64_t k = 0; k < plan.slice; ++k) {
          ScatterOne(py + plan.offsets[t] + k, pu[t * plan.slice + k],
                     reduce_);
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
  ScatterReduce reduce_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeScatterND(const KernelSpec& spec) {
  GLINT_ASSIGN_OR_RETURN(DType dtype,
                         SpecDataAndIndex(spec, 3, {DType::kInt64}));
  GLINT_ASSIGN_OR_RETURN(ScatterReduce r, ParseReduction(spec));
  return std::unique_ptr<Kernel>(new ScatterNDKernel(spec, dtype, r));
}

// ----------------------------------------------------------------- OneHot

class OneHotKernel final : public KernelBase {
 public:
  OneHotKernel(const KernelSpec& spec, DType idx, DType depth, DType values,
               int64_t axis)
      : KernelBase(spec),
        idx_(idx),
        depth_(depth),
        values_(values),
        axis_(axis) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* idx,
                           GetInput(ctx, 0, idx_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* dep,
                           GetInput(ctx, 1, depth_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* val,
                           GetInput(ctx, 2, values_, node()));
    if (dep->num_elements() != 1 || val->num_elements() != 2) {
      return InvalidArgument(node(), "depth must be a scalar and values "
                             "hold two elements");
    }
    double depth_d = 0;
    double* dd = &depth_d;
    GLINT_RETURN_IF_ERROR(VisitDType(depth_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      *dd = Load<double>(*dep->as<const S>());
      return absl::OkStatus();
    }));
    const int64_t depth = static_cast<int64_t>(depth_d);
    if (depth <= 0 || depth > (int64_t{1} << 24)) {
      return InvalidArgument(node(), "depth ", depth, " is out of range");
    }
    const int rank = idx->shape.rank() + 1;
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, rank, false, node()));
    std::vector<int64_t> od = idx->shape.dims();
    od.insert(od.begin() + axis, depth);
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape(od), values_, node()));
    const int64_t outer = Product(idx->shape.dims(), 0, axis);
    const int64_t inner = Product(idx->shape.dims(), axis, rank - 1);
    std::vector<int64_t> hot(idx->num_elements());
    GLINT_RETURN_IF_ERROR(VisitDType(idx_, [&](auto tag) -> absl::Status {
      using S = typename decltype(tag)::type;
      for (size_t i = 0; i < hot.size(); ++i) {
        int64_t k = static_cast<int64_t>(Load<double>(idx->as<const S>()[i]));
        if (k < 0) k += depth;
        hot[i] = k;  // Out of range: no hot element.
      }
      return absl::OkStatus();
    }));
    return VisitBySize(values_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T off = val->as<const T>()[0], on = val->as<const T>()[1];
      T* py = y.as<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k = 0; k < depth; ++k)
          for (int64_t i = 0; i < inner; ++i) {
            py[(o * depth + k) * inner + i] =
                hot[o * inner + i] == k ? on : off;
          }
      return absl::OkStatus();
    });
  }

 private:
  DType idx_, depth_, values_;
  int64_t axis_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeOneHot(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 3, 3));
  GLINT_ASSIGN_OR_RETURN(DType idx, SpecInputDType(spec, 0, kAllNumericDTypes));
  GLINT_ASSIGN_OR_RETURN(DType dep, SpecInputDType(spec, 1, kAllNumericDTypes));
  GLINT_ASSIGN_OR_RETURN(DType val, SpecInputDType(spec, 2, kEveryDType));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, val).status());
  return std::unique_ptr<Kernel>(new OneHotKernel(
      spec, idx, dep, val, spec.node->GetInt("axis", -1)));
}

// --------------------------------------------------------------- Compress

class CompressKernel final : public KernelBase {
 public:
  CompressKernel(const KernelSpec& spec, DType dtype, bool has_axis,
                 int64_t axis)
      : KernelBase(spec), dtype_(dtype), has_axis_(has_axis), axis_(axis) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* c,
                           GetInput(ctx, 1, DType::kBool, node()));
    if (c->shape.rank() != 1) {
      return InvalidArgument(node(), "condition must be 1-D");
    }
    Shape xs = x->shape;
    int axis = 0;
    if (!has_axis_) {
      xs = Shape({x->num_elements()});
    } else {
      GLINT_ASSIGN_OR_RETURN(axis, NormalizeAxis(axis_, xs.rank(), false,
                                                 node()));
    }
    const int64_t n = xs.dim(axis);
    const bool* pc = c->as<const bool>();
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < std::min(n, c->num_elements()); ++i) {
      if (pc[i]) keep.push_back(i);
    }
    std::vector<int64_t> od = xs.dims();
    od[axis] = static_cast<int64_t>(keep.size());
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(
        ctx, 0, Shape(od), dtype_, node()));
    const int64_t outer = Product(xs.dims(), 0, axis);
    const int64_t inner = Product(xs.dims(), axis + 1, xs.rank()) *
                          DTypeSize(dtype_);
    const char* src = static_cast<const char*>(x->data);
    char* dst = static_cast<char*>(y.data);
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t k = 0; k < keep.size(); ++k) {
        std::memcpy(dst + (o * keep.size() + k) * inner,
                    src + (o * n + keep[k]) * inner, inner);
      }
    }
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  bool has_axis_;
  int64_t axis_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeCompress(const KernelSpec& spec) {
  GLINT_ASSIGN_OR_RETURN(DType dtype,
                         SpecDataAndIndex(spec, 2, {DType::kBool}));
  return std::unique_ptr<Kernel>(new CompressKernel(
      spec, dtype, spec.node->HasAttribute("axis"),
      spec.node->GetInt("axis", 0)));
}

// ------------------------------------------------------------------ Trilu

class TriluKernel final : public KernelBase {
 public:
  TriluKernel(const KernelSpec& spec, DType dtype, bool upper)
      : KernelBase(spec), dtype_(dtype), upper_(upper) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* kt,
                           GetOptionalInput(ctx, 1, DType::kInt64, node()));
    int64_t k = 0;
    if (kt != nullptr) {
      if (kt->num_elements() != 1) return InvalidArgument(node(), "k scalar");
      k = *kt->as<const int64_t>();
    }
    const int rank = x->shape.rank();
    if (rank < 2) return InvalidArgument(node(), "needs rank >= 2");
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    const int64_t rows = x->shape.dim(rank - 2), cols = x->shape.dim(rank - 1);
    const int64_t mats = Product(x->shape.dims(), 0, rank - 2);
    return VisitBySize(dtype_, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* px = x->as<const T>();
      T* py = y.as<T>();
      for (int64_t m = 0; m < mats; ++m)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) {
            const int64_t at = (m * rows + r) * cols + c;
            const bool keep = upper_ ? c - r >= k : c - r <= k;
            py[at] = keep ? px[at] : T(0);
          }
      return absl::OkStatus();
    });
  }

 private:
  DType dtype_;
  bool upper_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeTrilu(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 2));
  GLINT_ASSIGN_OR_RETURN(DType dtype, SpecInputDType(spec, 0, kEveryDType));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(
      new TriluKernel(spec, dtype, spec.node->GetInt("upper", 1) != 0));
}

// --------------------------------------------------------- ReverseSequence

// Each batch entry's first sequence_lens[b] steps reversed, the rest
// copied; whole [time, batch] cells move as byte blocks.
class ReverseSequenceKernel final : public KernelBase {
 public:
  ReverseSequenceKernel(const KernelSpec& spec, DType dtype, int time_axis)
      : KernelBase(spec), dtype_(dtype), time_axis_(time_axis) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(const TensorView* lens,
                           GetInput(ctx, 1, DType::kUndefined, node()));
    if (x->shape.rank() < 2) {
      return InvalidArgument(node(), "input has shape ", x->shape.ToString(),
                             "; expected rank >= 2");
    }
    const int64_t t_len = x->shape.dim(time_axis_);
    const int64_t batch = x->shape.dim(1 - time_axis_);
    if (lens->shape.rank() != 1 || lens->num_elements() != batch) {
      return InvalidArgument(node(), "sequence_lens has shape ",
                             lens->shape.ToString(), "; expected [", batch,
                             "]");
    }
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = IndexAt(*lens, b);
      if (len < 0 || len > t_len) {
        return InvalidArgument(node(), "sequence_lens[", b, "] = ", len,
                               " is outside [0, ", t_len, "]");
      }
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, x->shape,
                                                        dtype_, node()));
    const size_t cell = static_cast<size_t>(
        Product(x->shape.dims(), 2, x->shape.rank()) * DTypeSize(dtype_));
    auto at = [&](int64_t t, int64_t b) {
      return (time_axis_ == 0 ? t * batch + b : b * t_len + t) * cell;
    };
    const char* src = static_cast<const char*>(x->data);
    char* dst = static_cast<char*>(y.data);
    if (cell == 0) return absl::OkStatus();
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t len = IndexAt(*lens, b);
      for (int64_t t = 0; t < t_len; ++t) {
        const int64_t from = t < len ? len - 1 - t : t;
        std::memcpy(dst + at(t, b), src + at(from, b), cell);
      }
    }
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  int time_axis_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeReverseSequence(
    const KernelSpec& spec) {
  GLINT_ASSIGN_OR_RETURN(DType dtype,
                         SpecDataAndIndex(spec, 2, {DType::kInt64}));
  const int64_t time_axis = spec.node->GetInt("time_axis", 0);
  const int64_t batch_axis = spec.node->GetInt("batch_axis", 1);
  if (!((time_axis == 0 && batch_axis == 1) ||
        (time_axis == 1 && batch_axis == 0))) {
    return InvalidArgument(spec.node->Describe(), "time_axis ", time_axis,
                           " and batch_axis ", batch_axis,
                           " must be 0 and 1 in some order");
  }
  return std::unique_ptr<Kernel>(new ReverseSequenceKernel(
      spec, dtype, static_cast<int>(time_axis)));
}

}  // namespace

void RegisterIndexingKernels(KernelRegistry* registry) {
  registry->Register("Slice", MakeSlice);
  registry->Register("Split", MakeSplit);
  registry->Register("Gather", MakeGather);
  registry->Register("GatherElements", MakeGatherElements);
  registry->Register("GatherND", MakeGatherND);
  registry->Register("ScatterElements", MakeScatterElements);
  registry->Register("Scatter", MakeScatterElements);
  registry->Register("ScatterND", MakeScatterND);
  registry->Register("OneHot", MakeOneHot);
  registry->Register("Compress", MakeCompress);
  registry->Register("Trilu", MakeTrilu);
  registry->Register("ReverseSequence", MakeReverseSequence);
}

}  // namespace glint::cpu
