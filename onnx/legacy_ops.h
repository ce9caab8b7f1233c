// Old opsets (< 7) in today's terms. Models exported years ago (PyTorch's
// opset 6 among them) use forms of ops that later opsets replaced; Glint's
// kernels implement the current forms, so the importer rewrites the old
// ones after ONNX's inference (which types them by their own opset's
// schemas) and before the Graph is built:
//
//  - Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less before
//    opset 7 with broadcast=1 and `axis`: B's dims align with A's from
//    `axis` on; B gets trailing 1s (a reshaped copy when B is a constant,
//    an Unsqueeze node otherwise) so numpy broadcasting means the same;
//    `broadcast`/`axis` are dropped;
//  - PRelu before opset 7: a 1-D slope of X's channel count applies per
//    channel (axis 1), as PyTorch exported it; it gets the trailing 1s;
//  - Cast before opset 6: `to` is a type name ("FLOAT"), made the enum;
//  - Concat before opset 4: `axis` defaults to 1;
//  - Split-1: a constant `split` input becomes the attribute;
//  - Tile before opset 6: constant scalar (tiles, axis) inputs become
//    Tile-6's repeats;
//  - BatchNormalization before opset 9 with spatial=0 (statistics per
//    channel and position, params [C, D1, ...]): the elementwise chain
//    (X - mean) / sqrt(var + epsilon) * scale + B (the optimiser folds the
//    constant part).
//
// Not covered: Upsample-1 (experimental). (Reshape-1's `shape` attribute, Clip/Pad/Slice/Split/Squeeze attribute
// forms and Dropout's is_test are the kernels' own business already.)
//
// Attributes the old forms carry that change nothing at inference
// (`consumed_inputs`; BatchNormalization's and Dropout's `is_test`) are
// left to the kernels, which ignore or check them.
//
// Internal to //onnx:onnx_importer. Thread-safe on distinct protos.
#ifndef GLINT_ONNX_LEGACY_OPS_H_
#define GLINT_ONNX_LEGACY_OPS_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "core/tensor.h"
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

// Rewrites the nodes of `graph` (inferred, sorted) that use an old form at
// `opset`, adding constants to `initializers` and typing every value it
// adds in the graph's value_info. INVALID_ARGUMENT naming the node for an
// old form that contradicts its operands (an axis past A's rank);
// UNIMPLEMENTED where the rewrite needs a rank inference left unknown.
absl::Status UpgradeLegacyNodes(int64_t opset, onnx::GraphProto* graph,
                                std::map<std::string, Tensor>* initializers);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_LEGACY_OPS_H_
