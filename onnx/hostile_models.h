// The hostile models of the hardening issue, as regression cases: ~100-byte
// ONNX models that crashed glintd (SIGFPE/SIGSEGV inside ONNX's shape
// inference), drove it past 20 GB or pinned a core, each with the status an
// import must give instead. Test-only; pure functions.
#ifndef GLINT_ONNX_HOSTILE_MODELS_H_
#define GLINT_ONNX_HOSTILE_MODELS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace glint::testing {

struct HostileModel {
  std::string name;   // What it does, e.g. "conv_strides_0".
  std::string bytes;  // The serialized ModelProto.
  absl::StatusCode code;
  std::string message;  // A substring the error must contain.
};

// Models that Glint refuses before any third-party code sees them, so an
// import refuses them the same way in-process and isolated.
std::vector<HostileModel> HostileModels();

// Conv with an input of rank 2 and a weight of rank 3: ONNX 1.12's shape
// inference reads out of bounds on it (SIGSEGV). Glint does not pre-check
// this one: only an isolated import survives it.
std::string OnnxSegfaultModel();

// Expand to the Identity of an int64[2^31] input: ONNX's inference builds
// an output of 2^31 dims (tens of GB). Glint's pre-checks see only the
// declared lengths of direct operands: a memory limit must stop this one.
std::string OnnxMemoryBombModel();

}  // namespace glint::testing

#endif  // GLINT_ONNX_HOSTILE_MODELS_H_
