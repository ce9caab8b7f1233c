// The importer's checks on the ModelProto (onnx/README.md): what it
// normalises first (the default domain's spelling, node names), what it
// refuses before any inference runs (non-UTF-8 names, foreign domains,
// opsets, ops no device runs, attribute kinds and values ONNX's own code
// mishandles), and the dataflow every graph must have.
//
// Internal to //onnx:onnx_importer. Every function is thread-safe on
// distinct protos.
#ifndef GLINT_ONNX_ONNX_VALIDATE_H_
#define GLINT_ONNX_ONNX_VALIDATE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_importer.h"
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

// Spells the default domain "" in opset imports and nodes (ONNX's tools
// key on "", models may write "ai.onnx") and returns its opset: 0 where the
// model imports none. INVALID_ARGUMENT where it imports it at two opsets.
absl::StatusOr<int64_t> NormalizeDefaultDomain(onnx::ModelProto* model);

// Names travel back to clients in protobuf strings (ListNetworks, DOT),
// which must be UTF-8: INVALID_ARGUMENT naming the first name that is not.
absl::Status CheckNamesAreUtf8(const onnx::GraphProto& graph);

// Gives every node a unique name: the model's where it has one, the first
// holder of a duplicated name keeps it, and the others get "<op_type>_<i>"
// (i = position in the model), made unique if the model already uses it.
void AssignNodeNames(onnx::GraphProto* graph);

// Refuses, before any inference, what Glint cannot run, so that the caller
// sees the real reason rather than a consequence of it: nodes of other
// domains, an opset missing or out of range, ops that are not ONNX ops at
// `opset` or that `options.is_supported` rejects, attribute kinds Glint
// lacks (lists of graphs, sparse tensors...) and sparse initializers;
// subgraphs are checked the same way, recursively, at most
// kMaxSubgraphDepth deep (INVALID_ARGUMENT beyond).
// UNIMPLEMENTED or INVALID_ARGUMENT.
absl::Status CheckModelIsRunnable(const onnx::GraphProto& graph, int64_t opset,
                                  const ImportOptions& options);

// Checks that every value has one producer (a node, a graph input or an
// initializer) and that the nodes have no cycle, and reorders them
// topologically where the model did not (stable: a sorted model keeps its
// order). INVALID_ARGUMENT naming the offending value or node.
absl::Status SortNodes(onnx::GraphProto* graph);

// Attribute values that ONNX 1.12's shape inference divides by, shifts by
// or indexes with unchecked (SIGFPE/SIGSEGV in the process that runs it),
// and that Glint's kernels and cost model would misuse the same way; shape
// operands longer than kMaxTensorRank. INVALID_ARGUMENT.
absl::Status CheckAttributeValues(const onnx::GraphProto& graph);

// ONNX's checker, node by node (arity, required attributes and their
// types, deprecated ops). INVALID_ARGUMENT with ONNX's message.
absl::Status CheckNodes(const onnx::ModelProto& model);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_ONNX_VALIDATE_H_
