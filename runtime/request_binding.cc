#include "runtime/request_binding.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "core/status_macros.h"
#include "core/text.h"

namespace glint {

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
    const int64_t max_batch = info.batching.max_batch_size;
    if (max_batch > 0) {
      // Batched: any rows from 1 to max_batch_size, the rest as declared.
      const Shape& got = in.tensor.shape();
      bool same = got.rank() == want.shape.rank() && got.rank() > 0;
      for (int d = 1; same && d < got.rank(); ++d) {
        same = got.dim(d) == want.shape.dim(d);
      }
      if (!same || got.dim(0) < 1 || got.dim(0) > max_batch) {
        Shape expected = want.shape;
        expected.mutable_dims()[0] = -1;
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", in.name, "' has shape ", got.ToString(), ", expected ",
            expected.ToString(), " with 1..", max_batch,
            " rows (max_batch_size)"));
      }
    } else if (in.tensor.shape() != want.shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", in.name, "' has shape ", in.tensor.shape().ToString(),
          ", expected ", want.shape.ToString()));
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
  for (const std::string& name : requested) {
    size_t i = 0;
    while (i < info.outputs.size() && info.outputs[i].name != name) ++i;
    if (i == info.outputs.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "network '", Clip(info.name), "' has no output '", Clip(name), "'"));
    }
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

absl::StatusOr<std::shared_ptr<ExecutionRequest>> BindRequest(
    const NetworkInfo& info, std::vector<NamedTensor> inputs,
    const RunOptions& options,
    std::shared_ptr<const CancellationToken> shutdown) {
  if (options.profile && options.trace == nullptr) {
    return absl::InvalidArgumentError(
        "RunOptions::profile records into RunOptions::trace, which is not "
        "set");
  }
  GLINT_ASSIGN_OR_RETURN(std::vector<Tensor> bound,
                         BindInputs(info, std::move(inputs)));
  GLINT_ASSIGN_OR_RETURN(std::vector<int> outputs,
                         BindOutputs(info, options.requested_outputs));
  auto request = std::make_shared<ExecutionRequest>();
  request->inputs = std::move(bound);
  if (!options.output_buffers.empty()) {
    request->output_destinations.resize(outputs.size());
    for (size_t r = 0; r < outputs.size(); ++r) {
      for (const RunOptions::OutputBuffer& b : options.output_buffers) {
        if (b.output == info.outputs[outputs[r]].name) {
          request->output_destinations[r] = b.memory;
        }
      }
    }
  }
  request->outputs = std::move(outputs);
  request->deadline = options.deadline;
  request->cancel = options.cancel;
  request->shutdown = std::move(shutdown);
  request->trace = options.trace;
  request->profile = options.profile;
  request->priority = options.priority;
  return request;
}

TraceSlice* TraceAdmission(const RunOptions& options) {
  if (options.trace == nullptr) return nullptr;
  TraceSlice slice;
  slice.name = "admission queue";
  slice.category = "host";
  slice.process_name = "host";
  slice.thread_name = "admission";
  slice.thread = 1;
  slice.begin = absl::Now();
  return options.trace->AddSlice(std::move(slice));
}

}  // namespace glint
