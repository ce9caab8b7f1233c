// Workarounds for ONNX 1.12's shape inference (the version Debian 12
// ships): inputs on which its code reads out of bounds, and ranks it leaves
// unknown where newer releases infer them. Each runs around
// RunShapeInference in InferTypes (onnx/onnx_inference.cc); each says which
// ONNX behaviour it works around, so it can go when ONNX is upgraded.
//
// Internal to //onnx:onnx_importer. Every function is thread-safe on
// distinct protos.
#ifndef GLINT_ONNX_INFERENCE_FIXES_H_
#define GLINT_ONNX_INFERENCE_FIXES_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

// ONNX 1.12's ConvTranspose inference indexes W's dims by X's spatial rank
// without checking W's rank, and reads out of bounds (crashing the
// process) when W has fewer dims than X. INVALID_ARGUMENT for such a node,
// found before the real inference runs.
absl::Status CheckConvTransposeRanks(const onnx::ModelProto& model);

// (node index, the model's axis) of the LayerNormalization nodes whose axis
// NormalizeLayerNormAxes rewrote.
using AxisRewrites = std::vector<std::pair<int, int64_t>>;

// ONNX 1.12's LayerNormalization inference fills its Mean output's shape
// from static_cast<int>(axis), normalised by the input's rank, with no range
// check: a negative result indexes out of bounds and crashes the process.
// Refuses (INVALID_ARGUMENT) axes no rank makes valid and negative axes
// beyond the input's rank; rewrites valid negative axes of nodes with a
// Mean output as their positive equivalents (1.12 also gives the Mean
// output a wrong shape for them), recording each in `rewritten` for
// RestoreLayerNormAxes.
absl::Status NormalizeLayerNormAxes(onnx::ModelProto* model,
                                    AxisRewrites* rewritten);

// Puts back the axes NormalizeLayerNormAxes rewrote.
void RestoreLayerNormAxes(const AxisRewrites& rewritten,
                          onnx::GraphProto* graph);

// ONNX 1.12 leaves the output of Reshape and ConstantOfShape rankless when
// the target shape is a run-time value, although the static length of that
// 1-D input is the output's rank (newer ONNX releases infer it); likewise
// the outputs of ops that keep their input's rank (Slice, Tile, Pad,
// Resize, TopK, Split...) when their other operands are run-time values.
// Gives those outputs their rank, so that the next inference pass gives
// every downstream value a rank too. Returns whether anything changed;
// INVALID_ARGUMENT for a rank over kMaxTensorRank (a hostile model
// declares its shape operand with billions of elements to make this
// allocate billions of dims).
absl::StatusOr<bool> RecoverRanks(onnx::GraphProto* graph);

// When ONNX's strict inference fails on a model, Glint does not refuse it
// outright: exporters write models that the runtime can run although ONNX
// 1.12 rejects a node (PyTorch's opset 6 exports hold int64 Constants,
// which Constant-1..8 does not allow). `failure` is that error. A failure
// that says a declared type or shape contradicts what ONNX infers (ONNX's
// "existing ... type/shape" messages) is a malformed model and is returned
// as it is. Otherwise ONNX's inference runs non-strict (skipping the nodes
// it cannot infer), and FallBackTypes gives the outputs ONNX left untyped
// the element type (and, for Constant, the shape) their op defines, rounds
// apart until nothing changes; kernels compute shapes at run time. Any
// node output still untyped then is INVALID_ARGUMENT naming the node and
// the value, with ONNX's message.
absl::Status InferWithFallback(onnx::ModelProto* model,
                               const absl::Status& failure);

// The model's opset of the default domain (0 when it imports none).
int64_t DefaultOpsetOf(const onnx::ModelProto& model);

// True when ONNX's inference error says a declared type or shape
// contradicts the inferred one.
bool IsDeclarationContradiction(const absl::Status& failure);

// Glint's own element-type propagation, one pass in node order (nodes must
// be sorted): each node output without an element type gets the one its
// op defines (Cast's `to`, a Constant's value, ConstantOfShape's value,
// else its schema's rule below). Returns
// whether anything changed. The op's rule is its ONNX schema at `opset`:
// an output whose type variable an input shares takes that input's type,
// one whose constraint allows a single type takes it.
bool FallBackTypes(onnx::GraphProto* graph, int64_t opset);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_INFERENCE_FIXES_H_
