// Data-movement kernels: Flatten, Reshape, Transpose, Concat, Identity,
// Constant. They work on any dtype with a fixed element size (numeric,
// bool, float16, bfloat16) since they only move bytes. Outputs are fresh
// buffers (the context has no aliasing), so even Reshape copies.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <variant>
#include <vector>

#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

absl::StatusOr<DType> MovableDType(const KernelSpec& spec, int i) {
  const std::string node = spec.node->Describe();
  if (!spec.has_input(i)) {
    return InvalidArgument(node, "input ", i, " is required");
  }
  const DType dtype = spec.inputs[i].dtype;
  if (DTypeSize(dtype) == 0) {
    return Unimplemented(node, "input ", i, " has dtype ", DTypeName(dtype),
                         ", which the CPU kernels do not handle");
  }
  return dtype;
}

void CopyData(const TensorView& from, const TensorView& to) {
  if (to.num_bytes() > 0) std::memcpy(to.data, from.data, to.num_bytes());
}

// Copies the input to an output of another shape (same element count).
class CopyKernel : public KernelBase {
 public:
  CopyKernel(const KernelSpec& spec, DType dtype)
      : KernelBase(spec), dtype_(dtype) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    GLINT_ASSIGN_OR_RETURN(Shape shape, OutputShape(ctx, *x));
    if (shape.NumElements() != x->num_elements()) {
      return InvalidArgument(node(), "cannot reshape ", x->shape.ToString(),
                             " to ", shape.ToString());
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, shape, dtype_, node()));
    CopyData(*x, y);
    return absl::OkStatus();
  }

 protected:
  virtual absl::StatusOr<Shape> OutputShape(const KernelContext& ctx,
                                            const TensorView& x) const = 0;

 private:
  DType dtype_;
};

class IdentityKernel final : public CopyKernel {
 public:
  using CopyKernel::CopyKernel;

 private:
  absl::StatusOr<Shape> OutputShape(const KernelContext&,
                                    const TensorView& x) const override {
    return x.shape;
  }
};

class FlattenKernel final : public CopyKernel {
 public:
  FlattenKernel(const KernelSpec& spec, DType dtype, int64_t axis)
      : CopyKernel(spec, dtype), axis_(axis) {}

 private:
  absl::StatusOr<Shape> OutputShape(const KernelContext&,
                                    const TensorView& x) const override {
    GLINT_ASSIGN_OR_RETURN(
        int axis, NormalizeAxis(axis_, x.shape.rank(), true, node()));
    const std::vector<int64_t>& d = x.shape.dims();
    return Shape({Product(d, 0, axis), Product(d, axis, x.shape.rank())});
  }

  int64_t axis_;
};

class ReshapeKernel final : public CopyKernel {
 public:
  // `shape_attr` is used before opset 5 (where the shape is an attribute);
  // later the shape is input 1.
  ReshapeKernel(const KernelSpec& spec, DType dtype, bool allow_zero,
                bool use_attr, std::vector<int64_t> shape_attr)
      : CopyKernel(spec, dtype),
        allow_zero_(allow_zero),
        use_attr_(use_attr),
        shape_attr_(std::move(shape_attr)) {}

 private:
  absl::StatusOr<Shape> OutputShape(const KernelContext& ctx,
                                    const TensorView& x) const override {
    std::vector<int64_t> req = shape_attr_;
    if (!use_attr_) {
      GLINT_ASSIGN_OR_RETURN(const TensorView* s,
                             GetInput(ctx, 1, DType::kUndefined, node()));
      GLINT_ASSIGN_OR_RETURN(req, ReadInt64s(*s, "the shape input", node()));
    }
    std::vector<int64_t> out(req.size());
    int infer = -1;
    bool has_zero = false;
    int64_t known = 1;
    for (size_t i = 0; i < req.size(); ++i) {
      const int64_t r = req[i];
      if (r == -1) {
        if (infer >= 0) {
          return InvalidArgument(node(), "shape [", absl::StrJoin(req, ", "),
                                 "] has more than one -1");
        }
        infer = static_cast<int>(i);
        continue;
      }
      if (r < -1) {
        return InvalidArgument(node(), "shape [", absl::StrJoin(req, ", "),
                               "] has a negative dimension");
      }
      if (r == 0) has_zero = true;
      if (r == 0 && !allow_zero_) {
        if (static_cast<int>(i) >= x.shape.rank()) {
          return InvalidArgument(node(), "shape [", absl::StrJoin(req, ", "),
                                 "] copies dimension ", i, " of ",
                                 x.shape.ToString(), ", which has none");
        }
        out[i] = x.shape.dim(i);
      } else {
        out[i] = r;
      }
      // Requested dimensions are run-time values: a product past int64
      // cannot match any input's element count.
      if (__builtin_mul_overflow(known, out[i], &known)) {
        return InvalidArgument(node(), "shape [", absl::StrJoin(req, ", "),
                               "] has more elements than int64 holds");
      }
    }
    if (infer >= 0) {
      if (allow_zero_ && has_zero) {
        return InvalidArgument(node(), "shape [", absl::StrJoin(req, ", "),
                               "] has both -1 and 0 with allowzero=1");
      }
      if (known == 0 || x.num_elements() % known != 0) {
        return InvalidArgument(node(), "cannot reshape ",
                               x.shape.ToString(), " to [",
                               absl::StrJoin(req, ", "), "]");
      }
      out[infer] = x.num_elements() / known;
    }
    return Shape(std::move(out));
  }

  bool allow_zero_;
  bool use_attr_;
  std::vector<int64_t> shape_attr_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeIdentity(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, MovableDType(spec, 0));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new IdentityKernel(spec, dtype));
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeFlatten(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, MovableDType(spec, 0));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(
      new FlattenKernel(spec, dtype, spec.node->GetInt("axis", 1)));
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeReshape(const KernelSpec& spec) {
  const bool use_attr = spec.opset_version > 0 && spec.opset_version < 5;
  GLINT_RETURN_IF_ERROR(CheckArity(spec, use_attr ? 1 : 2, use_attr ? 1 : 2));
  GLINT_ASSIGN_OR_RETURN(DType dtype, MovableDType(spec, 0));
  if (!use_attr) {
    GLINT_RETURN_IF_ERROR(
        SpecInputDType(spec, 1, {DType::kInt64, DType::kInt32}).status());
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(new ReshapeKernel(
      spec, dtype, spec.node->GetInt("allowzero", 0) != 0, use_attr,
      spec.node->GetInts("shape")));
}

// --------------------------------------------------------------- Transpose

// y[b][c][r] = x[b][r][c] for `batches` matrices of rows x cols, in tiles
// of 32 x 32 (a tile's reads and writes stay in cache), the tiles in
// parallel. The layout reorders into and out of channels-last regions are
// this (NCHW [N, C, HW] <-> NHWC [N, HW, C]); through the general walk,
// which gathers one element at a time with an index update per output row,
// an image's 3-channel input took 130 us.
template <typename U>
void Transpose2D(const U* x, U* y, int64_t batches, int64_t rows,
                 int64_t cols) {
  constexpr int64_t kTile = 32;
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  const int64_t tiles = col_tiles * row_tiles;
  ParallelFor(batches * tiles, 16, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t b = t / tiles;
      const int64_t c0 = (t % tiles) / row_tiles * kTile;
      const int64_t r0 = (t % tiles) % row_tiles * kTile;
      const int64_t c1 = std::min(cols, c0 + kTile);
      const int64_t r1 = std::min(rows, r0 + kTile);
      const U* xb = x + b * rows * cols;
      U* yb = y + b * rows * cols;
      for (int64_t c = c0; c < c1; ++c) {
        for (int64_t r = r0; r < r1; ++r) yb[c * rows + r] = xb[r * cols + c];
      }
    }
  });
}

// When the permutation, with size-1 axes dropped and axes that stay
// adjacent merged, swaps the last two of [batches, rows, cols] (or of
// [rows, cols]): those three; else nullopt.
std::optional<std::array<int64_t, 3>> AsBatchedTranspose(
    const std::vector<int64_t>& out_dims,
    const std::vector<int64_t>& in_strides_by_out) {
  std::vector<int64_t> dims, strides;  // Of the output, merged.
  for (size_t i = 0; i < out_dims.size(); ++i) {
    if (out_dims[i] == 1) continue;
    if (!dims.empty() && strides.back() == in_strides_by_out[i] * out_dims[i]) {
      dims.back() *= out_dims[i];
      strides.back() = in_strides_by_out[i];
      continue;
    }
    dims.push_back(out_dims[i]);
    strides.push_back(in_strides_by_out[i]);
  }
  if (dims.size() == 2 && strides[0] == 1 && strides[1] == dims[0]) {
    // Output [cols, rows] of input [rows, cols].
    return std::array<int64_t, 3>{1, dims[1], dims[0]};
  }
  if (dims.size() == 3 && strides[1] == 1 && strides[2] == dims[1] &&
      strides[0] == dims[1] * dims[2]) {
    return std::array<int64_t, 3>{dims[0], dims[2], dims[1]};
  }
  return std::nullopt;
}

template <typename U>
void TransposeCopy(const U* x, U* y, const std::vector<int64_t>& out_dims,
                   const std::vector<int64_t>& in_strides_by_out) {
  const int rank = static_cast<int>(out_dims.size());
  const int64_t inner = out_dims[rank - 1];
  const int64_t inner_stride = in_strides_by_out[rank - 1];
  int64_t rows = 1;
  for (int i = 0; i + 1 < rank; ++i) rows *= out_dims[i];
  // Output rows in parallel chunks of at least ~16K elements; each chunk
  // finds its first row's input offset by decomposing its row number
  // (callers pass no zero-size dims: the kernel returns before).
  const int64_t grain =
      std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1));
  ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> index(rank, 0);
    int64_t offset = 0;
    int64_t r0 = begin;
    for (int d = rank - 2; d >= 0; --d) {
      index[d] = r0 % out_dims[d];
      r0 /= out_dims[d];
      offset += index[d] * in_strides_by_out[d];
    }
    for (int64_t r = begin; r < end; ++r) {
      const U* src = x + offset;
      U* dst = y + r * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] = src[i * inner_stride];
      for (int d = rank - 2; d >= 0; --d) {
        if (++index[d] < out_dims[d]) {
          offset += in_strides_by_out[d];
          break;
        }
        offset -= in_strides_by_out[d] * (out_dims[d] - 1);
        index[d] = 0;
      }
    }
  });
}

class TransposeKernel final : public KernelBase {
 public:
  TransposeKernel(const KernelSpec& spec, DType dtype,
                  std::vector<int64_t> perm)
      : KernelBase(spec), dtype_(dtype), perm_(std::move(perm)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* x,
                           GetInput(ctx, 0, dtype_, node()));
    const int rank = x->shape.rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty()) {
      for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
    }
    std::vector<bool> seen(rank, false);
    bool valid = static_cast<int>(perm.size()) == rank;
    for (size_t i = 0; valid && i < perm.size(); ++i) {
      valid = perm[i] >= 0 && perm[i] < rank && !seen[perm[i]];
      if (valid) seen[perm[i]] = true;
    }
    if (!valid) {
      return InvalidArgument(node(), "perm [", absl::StrJoin(perm, ", "),
                             "] is not a permutation of the axes of ",
                             x->shape.ToString());
    }
    std::vector<int64_t> in_strides(rank);
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; --i) {
      in_strides[i] = s;
      s *= x->shape.dim(i);
    }
    std::vector<int64_t> out_dims(rank), strides_by_out(rank);
    for (int i = 0; i < rank; ++i) {
      out_dims[i] = x->shape.dim(perm[i]);
      strides_by_out[i] = in_strides[perm[i]];
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0,
                                                        Shape(out_dims),
                                                        dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    if (rank == 0 || std::is_sorted(perm.begin(), perm.end())) {
      CopyData(*x, y);
      return absl::OkStatus();
    }
    // Elements moved as unsigned integers of their width.
    const auto shape = AsBatchedTranspose(out_dims, strides_by_out);
    auto transpose = [&](auto width) {
      using U = decltype(width);
      if (shape.has_value()) {
        const auto [batches, rows, cols] = *shape;
        Transpose2D(x->as<const U>(), y.as<U>(), batches, rows, cols);
      } else {
        TransposeCopy(x->as<const U>(), y.as<U>(), out_dims, strides_by_out);
      }
    };
    switch (DTypeSize(dtype_)) {
      case 1:
        transpose(uint8_t{});
        break;
      case 2:
        transpose(uint16_t{});
        break;
      case 4:
        transpose(uint32_t{});
        break;
      case 8:
        transpose(uint64_t{});
        break;
      default:
        return Internal(node(), "unexpected element size");
    }
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  std::vector<int64_t> perm_;  // Empty: reverse the axes.
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeTranspose(const KernelSpec& spec) {
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1));
  GLINT_ASSIGN_OR_RETURN(DType dtype, MovableDType(spec, 0));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  return std::unique_ptr<Kernel>(
      new TransposeKernel(spec, dtype, spec.node->GetInts("perm")));
}

// ------------------------------------------------------------------ Concat

class ConcatKernel final : public KernelBase {
 public:
  ConcatKernel(const KernelSpec& spec, DType dtype, int64_t axis)
      : KernelBase(spec), dtype_(dtype), axis_(axis) {}

  absl::Status Compute(KernelContext& ctx) const override {
    const int n = ctx.num_inputs();
    std::vector<const TensorView*> ins(n);
    for (int i = 0; i < n; ++i) {
      GLINT_ASSIGN_OR_RETURN(ins[i], GetInput(ctx, i, dtype_, node()));
    }
    const Shape& first = ins[0]->shape;
    const int rank = first.rank();
    if (rank == 0) {
      return InvalidArgument(node(), "cannot concatenate scalars");
    }
    GLINT_ASSIGN_OR_RETURN(int axis, NormalizeAxis(axis_, rank, false,
                                                   node()));
    std::vector<int64_t> out = first.dims();
    out[axis] = 0;
    for (const TensorView* in : ins) {
      bool ok = in->shape.rank() == rank;
      for (int d = 0; ok && d < rank; ++d) {
        ok = d == axis || in->shape.dim(d) == first.dim(d);
      }
      if (!ok) {
        return InvalidArgument(node(), "input shapes ", first.ToString(),
                               " and ", in->shape.ToString(),
                               " differ off axis ", axis);
      }
      out[axis] += in->shape.dim(axis);
    }
    GLINT_ASSIGN_OR_RETURN(TensorView y, AllocateOutput(ctx, 0, Shape(out),
                                                        dtype_, node()));
    if (y.num_elements() == 0) return absl::OkStatus();
    // The output is `outer` rows, each the inputs' chunks side by side
    // (input i's chunk starts at byte start[i] of a row). Its bytes are
    // copied in parallel ranges of at least kGrainBytes: concatenating
    // along the channels of a channels-last region (DenseNet's blocks,
    // ShuffleNet's) is one short chunk per pixel per input, and a single
    // thread doing it was 15% of DenseNet's time.
    const size_t elem = DTypeSize(dtype_);
    const int64_t outer = Product(out, 0, axis);
    std::vector<int64_t> chunk(n), start(n + 1, 0);
    for (int i = 0; i < n; ++i) {
      chunk[i] = Product(ins[i]->shape.dims(), axis, rank) *
                 static_cast<int64_t>(elem);
      start[i + 1] = start[i] + chunk[i];
    }
    const int64_t row = start[n];
    auto* dst = static_cast<uint8_t*>(y.data);
    constexpr int64_t kGrainBytes = 64 << 10;
    ParallelFor(outer * row, kGrainBytes, [&](int64_t begin, int64_t end) {
      int64_t o = begin / row;
      int64_t pos = begin % row;
      // The input whose chunk holds `pos`: the last with start <= pos and
      // a chunk (empty inputs have none).
      int i =
          static_cast<int>(std::upper_bound(start.begin(), start.end(), pos) -
                           start.begin()) -
          1;
      for (int64_t b = begin; b < end;) {
        while (pos >= start[i + 1]) ++i;
        const int64_t take = std::min(start[i + 1] - pos, end - b);
        std::memcpy(dst + b,
                    static_cast<const uint8_t*>(ins[i]->data) + o * chunk[i] +
                        (pos - start[i]),
                    static_cast<size_t>(take));
        b += take;
        pos += take;
        if (pos == row) {
          pos = 0;
          i = 0;
          ++o;
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  DType dtype_;
  int64_t axis_;
};

absl::StatusOr<std::unique_ptr<Kernel>> MakeConcat(const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  GLINT_RETURN_IF_ERROR(CheckArity(spec, 1, 1 << 20));
  GLINT_ASSIGN_OR_RETURN(DType dtype, MovableDType(spec, 0));
  for (int i = 1; i < spec.node->num_inputs(); ++i) {
    GLINT_ASSIGN_OR_RETURN(DType d, MovableDType(spec, i));
    if (d != dtype) {
      return InvalidArgument(node, "input ", i, " has dtype ", DTypeName(d),
                             " unlike input 0's ", DTypeName(dtype));
    }
  }
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, dtype).status());
  const bool old = spec.opset_version > 0 && spec.opset_version < 4;
  if (!old && !spec.node->HasAttribute("axis")) {
    return InvalidArgument(node, "the axis attribute is required");
  }
  return std::unique_ptr<Kernel>(
      new ConcatKernel(spec, dtype, spec.node->GetInt("axis", 1)));
}

// ---------------------------------------------------------------- Constant

class ConstantKernel final : public KernelBase {
 public:
  ConstantKernel(const KernelSpec& spec, Tensor value)
      : KernelBase(spec), value_(std::move(value)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(TensorView y,
                           AllocateOutput(ctx, 0, value_.shape(),
                                          value_.dtype(), node()));
    CopyData(ViewOf(value_), y);
    return absl::OkStatus();
  }

 private:
  Tensor value_;  // Owned copy: the node may not outlive the kernel.
};

absl::StatusOr<Tensor> ConstantValue(const Node& node) {
  const std::string desc = node.Describe();
  int count = 0;
  for (const char* name : {"value", "value_float", "value_floats",
                           "value_int", "value_ints", "value_string",
                           "value_strings", "sparse_value"}) {
    count += node.HasAttribute(name) ? 1 : 0;
  }
  if (count != 1) {
    return InvalidArgument(desc, "needs exactly one value attribute; has ",
                           count);
  }
  if (const Tensor* t = node.GetTensor("value")) {
    if (DTypeSize(t->dtype()) == 0) {
      return Unimplemented(desc, "a constant of dtype ",
                           DTypeName(t->dtype()));
    }
    if (!t->valid()) return InvalidArgument(desc, "value has no data");
    return t->Clone();
  }
  const auto& attrs = node.attributes;
  auto it = attrs.find("value_float");
  if (it != attrs.end() && std::holds_alternative<float>(it->second)) {
    return Tensor::FromVector(DType::kFloat32, Shape(),
                              std::vector<float>{std::get<float>(it->second)});
  }
  it = attrs.find("value_floats");
  if (it != attrs.end() &&
      std::holds_alternative<std::vector<float>>(it->second)) {
    const auto& v = std::get<std::vector<float>>(it->second);
    return Tensor::FromVector(
        DType::kFloat32, Shape({static_cast<int64_t>(v.size())}), v);
  }
  it = attrs.find("value_int");
  if (it != attrs.end() && std::holds_alternative<int64_t>(it->second)) {
    return Tensor::FromVector(
        DType::kInt64, Shape(),
        std::vector<int64_t>{std::get<int64_t>(it->second)});
  }
  it = attrs.find("value_ints");
  if (it != attrs.end() &&
      std::holds_alternative<std::vector<int64_t>>(it->second)) {
    const auto& v = std::get<std::vector<int64_t>>(it->second);
    return Tensor::FromVector(DType::kInt64,
                              Shape({static_cast<int64_t>(v.size())}), v);
  }
  if (node.HasAttribute("value_string") ||
      node.HasAttribute("value_strings") ||
      node.HasAttribute("sparse_value")) {
    return Unimplemented(desc, "string and sparse constants");
  }
  return InvalidArgument(desc, "the value attribute has the wrong type");
}

absl::StatusOr<std::unique_ptr<Kernel>> MakeConstant(const KernelSpec& spec) {
  const std::string node = spec.node->Describe();
  if (spec.node->num_inputs() != 0) {
    return InvalidArgument(node, "Constant takes no inputs");
  }
  if (spec.node->outputs.empty() || spec.node->outputs[0].empty()) {
    return InvalidArgument(node, "has no output");
  }
  GLINT_ASSIGN_OR_RETURN(Tensor value, ConstantValue(*spec.node));
  GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, 0, value.dtype()).status());
  return std::unique_ptr<Kernel>(new ConstantKernel(spec, std::move(value)));
}

}  // namespace

void RegisterShapeKernels(KernelRegistry* registry) {
  registry->Register("Identity", MakeIdentity);
  registry->Register("Flatten", MakeFlatten);
  registry->Register("Reshape", MakeReshape);
  registry->Register("Transpose", MakeTranspose);
  registry->Register("Concat", MakeConcat);
  registry->Register("Constant", MakeConstant);
}

}  // namespace glint::cpu
