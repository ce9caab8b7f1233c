// The importer's type inference (onnx/README.md): ONNX's checker and shape
// inference over the prepared model, with Glint's checks and ONNX 1.12's
// workarounds (onnx/inference_fixes.h) around them. This is where an
// untrusted model meets third-party code, so it can run in this process
// (InferTypes) or in another one (InferTypesElsewhere, through
// ImportOptions::run_inference; RunOnnxInference is that process's side).
//
// Internal to //onnx:onnx_importer. Thread-safe on distinct protos.
#ifndef GLINT_ONNX_ONNX_INFERENCE_H_
#define GLINT_ONNX_ONNX_INFERENCE_H_

#include "absl/status/status.h"
#include "onnx/onnx_importer.h"
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

// Checks `model` (the importer's prepared model: inputs typed and bound,
// nodes sorted) and leaves every inferred type in its value_info and
// outputs. Errors as ImportOnnxModel's.
absl::Status InferTypes(onnx::ModelProto* model);

// InferTypes through `run`: sends the model and takes back the inferred
// types. The importer has made its initializers over 1 MiB bare typed
// inputs already (TakeInitializers: inference reads the values of small
// shape-like tensors only, and a 100 MB model is not copied to the helper).
// INTERNAL for a malformed reply.
absl::Status InferTypesElsewhere(onnx::ModelProto* model,
                                 const InferenceRunner& run);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_ONNX_INFERENCE_H_
