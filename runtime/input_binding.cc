#include "runtime/input_binding.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/text.h"
namespace glint {

absl::StatusOr<std::vector<DynamicDim>> ResolveDynamicDims(
    const std::vector<ValueInfo>& inputs,
    const std::map<std::string, int64_t>& max_dims) {
  std::vector<DynamicDim> dims;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& shape = inputs[i].shape;
    for (int axis = 0; shape.has_rank() && axis < shape.rank(); ++axis) {
      if (shape.dim(axis) != Shape::kUnknownDim) continue;
      DynamicDim d;
      d.input = inputs[i].name;
      d.axis = axis;
      d.name = inputs[i].DimName(axis);
      d.max = kDefaultMaxDim;
      dims.push_back(std::move(d));
    }
  }
  for (const auto& [key, max] : max_dims) {
    bool found = false;
    for (DynamicDim& d : dims) {
      if (d.Key() != key) continue;
      found = true;
      d.max = max;
    }
    if (!found) {
      std::vector<std::string> keys;
      for (const DynamicDim& d : dims) {
        if (std::find(keys.begin(), keys.end(), d.Key()) == keys.end()) {
          keys.push_back(d.Key());
        }
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "max_dims names '", Clip(key), "', which is no dynamic dim of the ",
          "model (its dynamic dims: ",
          keys.empty() ? "none" : absl::StrJoin(keys, ", "), ")"));
    }
    if (max < 1 || max > kMaxDimBound) {
      return absl::InvalidArgumentError(
          absl::StrCat("max_dims['", Clip(key), "'] is ", max,
                       "; a bound is 1..", kMaxDimBound));
    }
  }
  return dims;
}

namespace {

// "dim 1 ('seq')" or "dim 0".
std::string DescribeDim(const DynamicDim& d) {
  return d.name.empty() ? absl::StrCat("dim ", d.axis)
                        : absl::StrCat("dim ", d.axis, " ('", d.name, "')");
}

// Whether `got` has `want`'s rank and known dims (dims from `first_dim`
// on; the batch dim of a batching network is checked apart).
bool HasDeclaredDims(const Shape& want, const Shape& got, int first_dim) {
  // A tensor an embedder made (Tensor::Borrow) may claim any dims.
  bool same = got.IsStatic() && got.rank() == want.rank();
  for (int d = first_dim; same && d < got.rank(); ++d) {
    same = want.dim(d) == Shape::kUnknownDim || got.dim(d) == want.dim(d);
  }
  return same;
}

// Each dynamic dim (of `dims`) of input `name`, of shape `got`, within its
// bound.
absl::Status CheckBounds(const std::string& name, const Shape& got,
                         const std::vector<DynamicDim>& dims) {
  for (const DynamicDim& d : dims) {
    if (d.input != name) continue;
    const int64_t size = got.dim(d.axis);
    if (size > d.max) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", name, "' has shape ", got.ToString(), ": its ",
          DescribeDim(d), " is ", size, ", over its bound ", d.max,
          " (max_dims['", Clip(d.Key()), "'])"));
    }
  }
  return absl::OkStatus();
}

// Checks `got` against input `want` of a network without batching: rank
// and known dims equal, dynamic ones (of `dims`) within their bounds.
absl::Status CheckShape(const ValueInfo& want, const Shape& got,
                        const std::vector<DynamicDim>& dims) {
  if (!HasDeclaredDims(want.shape, got, 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("input '", want.name, "' has shape ", got.ToString(),
                     ", expected ", want.shape.ToString()));
  }
  return CheckBounds(want.name, got, dims);
}

// Checks `got` against input `want` of a network with dynamic batching:
// 1..max_batch rows, the other dims as CheckShape checks them.
absl::Status CheckBatchedShape(const ValueInfo& want, const Shape& got,
                               int64_t max_batch,
                               const std::vector<DynamicDim>& dims) {
  if (!HasDeclaredDims(want.shape, got, 1) || got.rank() < 1 ||
      got.dim(0) < 1 || got.dim(0) > max_batch) {
    Shape expected = want.shape;
    if (expected.rank() > 0) expected.mutable_dims()[0] = -1;
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", want.name, "' has shape ", got.ToString(), ", expected ",
        expected.ToString(), " with 1..", max_batch,
        " rows (max_batch_size)"));
  }
  return CheckBounds(want.name, got, dims);
}

// Dims of one name are one size across the inputs (`bound`, in the
// network's input order).
absl::Status CheckNamedDims(const NetworkInfo& info,
                            const std::vector<Tensor>& bound) {
  auto size_of = [&](const DynamicDim& d) -> int64_t {
    for (size_t i = 0; i < info.inputs.size(); ++i) {
      if (info.inputs[i].name == d.input) return bound[i].shape().dim(d.axis);
    }
    return -1;
  };
  for (size_t a = 0; a < info.dynamic_dims.size(); ++a) {
    const DynamicDim& first = info.dynamic_dims[a];
    if (first.name.empty()) continue;
    for (size_t b = a + 1; b < info.dynamic_dims.size(); ++b) {
      const DynamicDim& other = info.dynamic_dims[b];
      if (other.name != first.name) continue;
      if (size_of(first) != size_of(other)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", other.input, "' ", DescribeDim(other), " is ",
            size_of(other), " but input '", first.input, "' ",
            DescribeDim(first), " is ", size_of(first),
            ": dims of one name are one size"));
      }
      break;  // `other` is checked against the rest in its turn.
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> BindInputs(
    const NetworkInfo& info, std::vector<NamedTensor> inputs) {
  std::vector<Tensor> bound(info.inputs.size());
  std::vector<bool> seen(info.inputs.size(), false);
  for (NamedTensor& in : inputs) {
    size_t i = 0;
    while (i < info.inputs.size() && info.inputs[i].name != in.name) ++i;
    if (i == info.inputs.size()) {
      std::vector<std::string> names;
      for (const ValueInfo& v : info.inputs) names.push_back(v.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "network '", Clip(info.name), "' has no input '", Clip(in.name),
          "' (inputs: ", absl::StrJoin(names, ", "), ")"));
    }
    if (seen[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", Clip(in.name), "' is given twice"));
    }
    const ValueInfo& want = info.inputs[i];
    if (in.tensor.dtype() != want.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", in.name, "' has dtype ", DTypeName(in.tensor.dtype()),
          ", expected ", DTypeName(want.dtype)));
    }
    if (const int64_t max_batch = info.batching.max_batch_size;
        max_batch > 0) {
      // Batched: any rows from 1 to max_batch_size, the rest as declared.
      GLINT_RETURN_IF_ERROR(CheckBatchedShape(want, in.tensor.shape(),
                                              max_batch, info.dynamic_dims));
    } else {
      GLINT_RETURN_IF_ERROR(
          CheckShape(want, in.tensor.shape(), info.dynamic_dims));
    }
    if (!in.tensor.valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", in.name, "' has no data"));
    }
    seen[i] = true;
    bound[i] = std::move(in.tensor);
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    if (!seen[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("missing input '", info.inputs[i].name, "' (",
                       DTypeName(info.inputs[i].dtype),
                       info.inputs[i].shape.ToString(), ")"));
    }
  }
  if (!info.dynamic_dims.empty()) {
    GLINT_RETURN_IF_ERROR(CheckNamedDims(info, bound));
  }
  // A batched run's inputs are rows of one batch: the same count for all.
  for (size_t i = 1; info.batching.max_batch_size > 0 && i < bound.size();
       ++i) {
    if (bound[i].shape().dim(0) != bound[0].shape().dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", info.inputs[i].name, "' has ", bound[i].shape().dim(0),
          " rows but input '", info.inputs[0].name, "' has ",
          bound[0].shape().dim(0), ": a batched run's inputs share their "
          "first (batch) dimension"));
    }
  }
  return bound;
}

absl::StatusOr<std::vector<int>> BindOutputs(
    const NetworkInfo& info, const std::vector<std::string>& requested) {
  std::vector<int> indices;
  if (requested.empty()) {
    for (size_t i = 0; i < info.outputs.size(); ++i) {
      indices.push_back(static_cast<int>(i));
    }
    return indices;
  }
  std::vector<bool> taken(info.outputs.size(), false);
  for (const std::string& name : requested) {
    size_t i = 0;
    while (i < info.outputs.size() && info.outputs[i].name != name) ++i;
    if (i == info.outputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "network '", Clip(info.name), "' has no output '", Clip(name), "'"));
    }
    if (taken[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("output '", Clip(name), "' is requested twice"));
    }
    taken[i] = true;
    indices.push_back(static_cast<int>(i));
  }
  return indices;
}

absl::StatusOr<std::vector<NamedTensor>> NameOutputs(
    const NetworkInfo& info, const std::vector<int>& outputs,
    absl::StatusOr<std::vector<Tensor>> result) {
  if (!result.ok()) return result.status();
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < outputs.size() && i < result->size(); ++i) {
    named.push_back({info.outputs[outputs[i]].name, std::move((*result)[i])});
  }
  return named;
}

}  // namespace glint
