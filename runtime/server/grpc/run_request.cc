#include "runtime/server/grpc/run_request.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "proto/proto_convert.h"

namespace glint {

absl::StatusOr<DecodedRunRequest> DecodeRunRequest(const v1::RunNetworkRequest& request,
                                       const SharedMemoryRegistry& registry) {
  DecodedRunRequest run;
  run.inputs.reserve(request.inputs_size());
  for (const v1::Tensor& proto : request.inputs()) {
    if (!proto.has_shared_memory()) {
      GLINT_ASSIGN_OR_RETURN(NamedTensor t, BorrowNamedTensorFromProto(proto));
      run.inputs.push_back(std::move(t));
      continue;
    }
    GLINT_ASSIGN_OR_RETURN(SharedMemoryTensor header,
                           SharedMemoryTensorFromProto(proto));
    GLINT_ASSIGN_OR_RETURN(
        Tensor t, registry.BorrowTensor(
                      header.window, header.dtype, header.shape,
                      absl::StrCat("input '", header.name, "'")));
    run.inputs.push_back({std::move(header.name), std::move(t)});
  }
  run.options.requested_outputs.assign(request.requested_outputs().begin(),
                                       request.requested_outputs().end());
  if (request.trace() || request.profile()) {
    run.options.trace = std::make_shared<RunTrace>();
  }
  run.options.profile = request.profile();
  const std::vector<std::string>& requested = run.options.requested_outputs;
  for (const auto& [output, ref_proto] : request.output_shared_memory()) {
    const std::string what = absl::StrCat("output '", output, "'");
    if (!requested.empty() &&
        std::find(requested.begin(), requested.end(), output) ==
            requested.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " has a shared-memory window but is not requested"));
    }
    DecodedRunRequest::OutputWindow window;
    window.output = output;
    window.ref = SharedMemoryRefFromProto(ref_proto);
    GLINT_ASSIGN_OR_RETURN(window.view, registry.View(window.ref, what));
    run.output_windows.push_back(std::move(window));
  }
  AddOutputBuffers(run.output_windows, run.inputs, &run.options);
  return run;
}

namespace {

// Whether the bytes of `w` and of `t` share an address.
bool Overlaps(const OutputWindow& w, const Tensor& t) {
  const auto w_begin = reinterpret_cast<uintptr_t>(w.view.data());
  const auto t_begin = reinterpret_cast<uintptr_t>(t.raw_data());
  return w_begin < t_begin + t.num_bytes() && t_begin < w_begin + w.view.size();
}

}  // namespace

void AddOutputBuffers(const std::vector<OutputWindow>& windows,
                      const std::vector<NamedTensor>& inputs,
                      RunOptions* options) {
  for (const OutputWindow& w : windows) {
    // Devices write output buffers during the run, possibly before a later
    // partition has read an input borrowed from the same bytes: such an
    // output is copied in after the run instead (WriteOutputWindows).
    if (std::any_of(inputs.begin(), inputs.end(), [&](const NamedTensor& in) {
          return in.tensor.num_bytes() > 0 && Overlaps(w, in.tensor);
        })) {
      continue;
    }
    options->output_buffers.push_back(
        {w.output, Tensor::Borrow(DType::kUInt8,
                                  Shape({static_cast<int64_t>(w.view.size())}),
                                  w.view.data(), w.view.keep_alive())});
  }
}

absl::StatusOr<std::vector<const OutputWindow*>> WriteOutputWindows(
    const std::vector<OutputWindow>& windows,
    const std::vector<NamedTensor>& outputs, absl::string_view field) {
  // Every window is checked before any is copied into: a refused reply
  // copies nothing (windows the devices wrote during the run keep that).
  std::vector<const OutputWindow*> window_of(outputs.size());
  for (const OutputWindow& w : windows) {
    auto it = std::find_if(
        outputs.begin(), outputs.end(),
        [&](const NamedTensor& t) { return t.name == w.output; });
    if (it == outputs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " names '", w.output,
                       "', which is not an output of the network"));
    }
    const Tensor& t = it->tensor;
    if (t.num_bytes() > w.view.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output '", w.output, "' is ", DTypeName(t.dtype()),
          t.shape().ToString(), ", ", t.num_bytes(),
          " bytes, more than its shared-memory window of ", w.view.size()));
    }
    window_of[it - outputs.begin()] = &w;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (window_of[i] == nullptr) continue;
    // Written in place by its device (RunOptions::output_buffers).
    if (outputs[i].tensor.raw_data() == window_of[i]->view.data()) continue;
    GLINT_RETURN_IF_ERROR(
        CopyTensorToWindow(outputs[i].tensor, window_of[i]->view,
                           absl::StrCat("output '", outputs[i].name, "'")));
  }
  return window_of;
}

absl::Status EncodeRunResponse(const DecodedRunRequest& run,
                               const std::vector<NamedTensor>& outputs,
                               v1::RunNetworkResponse* response) {
  GLINT_ASSIGN_OR_RETURN(
      std::vector<const OutputWindow*> window_of,
      WriteOutputWindows(run.output_windows, outputs, "output_shared_memory"));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedTensor& t = outputs[i];
    v1::Tensor* proto = response->add_outputs();
    if (window_of[i] == nullptr) {
      absl::Status s = TensorToProto(t, proto);
      // An output that cannot travel is the runtime's fault, not the
      // caller's.
      if (!s.ok()) return absl::InternalError(s.message());
      continue;
    }
    SharedMemoryTensor written{t.name, t.tensor.dtype(), t.tensor.shape(),
                               window_of[i]->ref};
    written.window.byte_size = t.tensor.num_bytes();
    SharedMemoryTensorToProto(written, proto);
  }
  return absl::OkStatus();
}

}  // namespace glint
