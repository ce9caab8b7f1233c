// libFuzzer target for ImportOnnxModel: any bytes give a Graph or a status.
// An imported graph must pass its own structural validation.
//
// ImportOnnxModel runs libonnx's checker and shape inference in-process;
// crashes inside libonnx (not Glint) are expected until shape inference
// moves out of process: see fuzz/README.md.
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "runtime/graph.h"
#include "runtime/logging.h"
#include "runtime/onnx_importer.h"

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Refusals are logged; at a million inputs that is all the fuzzer would
  // do.
  (void)glint::SetLogLevel("off");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<glint::Graph> graph = glint::ImportOnnxModel(
      absl::string_view(reinterpret_cast<const char*>(data), size));
  if (!graph.ok()) {
    FUZZ_CHECK(!graph.status().message().empty(), "an error says why");
    return 0;
  }
  absl::Status valid = graph->Validate();
  FUZZ_CHECK(valid.ok(), valid.ToString());
  return 0;
}
