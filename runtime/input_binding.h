// Binding a run's inputs and outputs to a network: the caller's named
// inputs matched to the network's (dtype and shape checked, dynamic dims
// within their bounds), the requested outputs resolved to indices, and the
// network's dynamic dims resolved at AddNetwork. Every mismatch is
// INVALID_ARGUMENT naming the input, output or dim and what was expected.
// Pure functions over API types (no executor, no devices: the request
// path's fuzz target links them alone); thread-safe.
#ifndef GLINT_RUNTIME_INPUT_BINDING_H_
#define GLINT_RUNTIME_INPUT_BINDING_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/types.h"
#include "core/tensor.h"

namespace glint {

// The dynamic dims of a network's `inputs` (the dims of unknown size),
// each named as its input names it (ValueInfo::DimName) and bounded by
// `max_dims` (AddNetworkOptions::max_dims) or kDefaultMaxDim.
// INVALID_ARGUMENT for a max_dims key that names none of them or a bound
// outside 1..kMaxDimBound.
absl::StatusOr<std::vector<DynamicDim>> ResolveDynamicDims(
    const std::vector<ValueInfo>& inputs,
    const std::map<std::string, int64_t>& max_dims);

// `inputs` in the network's input order. Each input must be given exactly
// once with the declared dtype and shape: its rank and known dims as
// declared, each dynamic dim (info.dynamic_dims) within its bound and the
// same size as the dims of its name in the other inputs. A network with
// dynamic batching (info.batching) takes 1..max_batch_size rows, the same
// for every input; its other dims are checked as above.
absl::StatusOr<std::vector<Tensor>> BindInputs(const NetworkInfo& info,
                                               std::vector<NamedTensor> inputs);

// The indices (into info.outputs) of `requested`, or of every output when
// it is empty. INVALID_ARGUMENT for a name the network lacks or one
// requested twice (as KServe's ModelInfer refuses it), so that a long list
// of one name fails at its second entry instead of costing a copy each.
absl::StatusOr<std::vector<int>> BindOutputs(
    const NetworkInfo& info, const std::vector<std::string>& requested);

// The run's answer: `result` (the executor's, for the outputs `outputs`
// indexes in info.outputs, in that order) with the outputs' names.
absl::StatusOr<std::vector<NamedTensor>> NameOutputs(
    const NetworkInfo& info, const std::vector<int>& outputs,
    absl::StatusOr<std::vector<Tensor>> result);

}  // namespace glint

#endif  // GLINT_RUNTIME_INPUT_BINDING_H_
