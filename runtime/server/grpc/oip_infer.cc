#include "runtime/server/grpc/oip_infer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "proto/oip_convert.h"

namespace glint {

absl::StatusOr<PreparedOipInfer> PrepareOipInfer(
    const inference::ModelInferRequest& request,
    const SharedMemoryRegistry& registry, absl::Time now,
    absl::Time grpc_deadline) {
  GLINT_ASSIGN_OR_RETURN(OipInferCall call,
                         OipInferCallFromProto(request, now, grpc_deadline));
  PreparedOipInfer run;
  run.model_name = std::move(call.model_name);
  run.inputs = std::move(call.inputs);
  run.options = std::move(call.options);
  for (SharedMemoryTensor& in : call.shared_memory_inputs) {
    GLINT_ASSIGN_OR_RETURN(
        Tensor t,
        registry.BorrowTensor(in.window, in.dtype, in.shape,
                              absl::StrCat("input '", Clip(in.name), "'")));
    run.inputs.push_back({std::move(in.name), std::move(t)});
  }
  for (OipOutputWindow& out : call.output_windows) {
    OutputWindow window;
    GLINT_ASSIGN_OR_RETURN(
        window.view,
        registry.View(out.window,
                      absl::StrCat("output '", Clip(out.output), "'")));
    window.output = std::move(out.output);
    window.ref = std::move(out.window);
    run.output_windows.push_back(std::move(window));
  }
  AddOutputBuffers(run.output_windows, run.inputs, &run.options);
  return run;
}

absl::Status FinishOipInfer(const inference::ModelInferRequest& request,
                            const PreparedOipInfer& run,
                            const std::vector<NamedTensor>& outputs,
                            inference::ModelInferResponse* response) {
  GLINT_ASSIGN_OR_RETURN(
      std::vector<const OutputWindow*> window_of,
      WriteOutputWindows(run.output_windows, outputs, "a requested output"));
  std::vector<bool> in_shared_memory(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    in_shared_memory[i] = window_of[i] != nullptr;
  }
  return OipInferResponseToProto(request, outputs, response, in_shared_memory);
}

}  // namespace glint
