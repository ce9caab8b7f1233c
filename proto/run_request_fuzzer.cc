// libFuzzer target for what glintd does with a RunNetwork request before
// the runtime sees it: parse the glint.v1.RunNetworkRequest and convert its
// input tensors (NamedTensorsFromProto: dtype, shape and raw_data checks,
// the copy into aligned host tensors). The input is a serialized request.
//
// Binding the tensors to a network's declared inputs (HostManager's
// BindInputs) is private to host_manager.cc and needs a real HostManager
// with devices, so it is not fuzzed here.
//
// Every tensor accepted must be exactly its raw_data, and TensorToProto must
// send it back as the same wire tensor.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "fuzz/fuzz_check.h"
#include "proto/glint.pb.h"
#include "proto/proto_convert.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  glint::v1::RunNetworkRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;

  absl::StatusOr<std::vector<glint::NamedTensor>> inputs =
      glint::NamedTensorsFromProto(request.inputs());
  if (!inputs.ok()) {
    FUZZ_CHECK(inputs.status().code() == absl::StatusCode::kInvalidArgument,
               inputs.status().ToString());
    return 0;
  }
  FUZZ_CHECK(static_cast<int>(inputs->size()) == request.inputs_size(),
             "one tensor per wire tensor");
  for (int i = 0; i < request.inputs_size(); ++i) {
    const glint::v1::Tensor& wire = request.inputs(i);
    const glint::NamedTensor& t = (*inputs)[i];
    FUZZ_CHECK(t.tensor.valid() && t.tensor.shape().IsStatic(),
               "a converted tensor has data and a static shape");
    FUZZ_CHECK(t.tensor.num_bytes() == wire.raw_data().size(),
               absl::StrCat("tensor ", i, " is not its raw_data"));
    glint::v1::Tensor back;
    absl::Status s = glint::TensorToProto(t, &back);
    FUZZ_CHECK(s.ok(), s.ToString());
    FUZZ_CHECK(back.name() == wire.name() && back.dtype() == wire.dtype() &&
                   back.raw_data() == wire.raw_data() &&
                   back.shape_size() == wire.shape_size(),
               absl::StrCat("tensor ", i, " does not travel back unchanged"));
    for (int d = 0; d < wire.shape_size(); ++d) {
      FUZZ_CHECK(back.shape(d) == wire.shape(d),
                 absl::StrCat("tensor ", i, " dimension ", d));
    }
  }
  return 0;
}
