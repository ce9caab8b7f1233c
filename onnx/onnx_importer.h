// Imports an ONNX model (serialized ModelProto) into Glint's Graph IR.
//
// The importer validates the model, binds the dimensions of graph inputs,
// infers the dtype and shape of every value (ONNX's shape inference, with
// data propagation) and refuses, up front, anything Glint cannot run: the
// caller learns at AddNetwork, never at run time.
#ifndef GLINT_ONNX_ONNX_IMPORTER_H_
#define GLINT_ONNX_ONNX_IMPORTER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/graph.h"

namespace glint {

// Runs ONNX's checker and shape inference somewhere else: given a request
// (bytes), returns RunOnnxInference's reply for it or the status that
// prevented one. See ImportOptions::run_inference.
using InferenceRunner =
    std::function<absl::StatusOr<std::string>(const std::string& request)>;

struct ImportOptions {
  // Full static shapes for graph inputs, by name; they override the model's
  // declared shape (rank and known dims must agree, else INVALID_ARGUMENT).
  // Unknown or symbolic dims of other inputs stay Shape::kUnknownDim, so
  // every value they reach is typed with unknown dims and the kernels take
  // each run's sizes (ValueInfo::dim_names keeps the symbolic names).
  std::map<std::string, Shape> input_shapes;
  // When positive, the first dimension of every runtime input is bound to
  // it, over input_shapes and the declaration (dynamic batching compiles a
  // network at its largest batch). INVALID_ARGUMENT naming the input when
  // it is a scalar, the model fixes that dimension to another size, or
  // another of its dims is left unknown (the batcher works on one shape).
  int64_t batch_size = 0;
  // Whether some device can run `op_type` of the default ONNX domain. Nodes
  // it rejects (and every node of another domain) fail the import with
  // UNIMPLEMENTED naming the op and the node. Unset: every op is accepted.
  std::function<bool(absl::string_view op_type)> is_supported;
  // Where ONNX's checker and shape inference run. They are third-party code
  // that a hostile model can crash, exhaust or hang, so a service runs them
  // in a disposable process (onnx/import_sandbox.h) through this hook,
  // which must behave like RunOnnxInference. Unset: in this process, which
  // then trusts the model.
  InferenceRunner run_inference;
  // Called as the parse moves past the model's bytes [offset, offset +
  // length), in windows, and once for all of them when they are parsed (the
  // import reads them no more): a caller whose bytes are a mapped file drops
  // those pages (core/model_bytes.h ModelBytes::EvictRange), so that the
  // model is not resident beside what is parsed from it. Unset: nothing is
  // called.
  std::function<void(size_t offset, size_t length)> read_past;
};

// Errors: INVALID_ARGUMENT for bytes that are not a valid ModelProto or a
// structurally broken graph (unknown value, cycle, duplicate names...) or
// subgraphs nested deeper than kMaxSubgraphDepth; UNIMPLEMENTED for
// unsupported ops, dtypes, or attribute kinds (lists of graphs, sparse
// tensors). Subgraphs (If, Loop, Scan) import as GraphAttributes, the outer
// values they read made implicit inputs of their node (core/graph.h).
absl::StatusOr<Graph> ImportOnnxModel(absl::string_view model_bytes,
                                      const ImportOptions& options = {});

// The isolated step of an import: `request` is the importer's prepared
// ModelProto; the reply is a GraphProto holding its inferred value_info and
// outputs (and, for a model with subgraphs, one node per node carrying its
// subgraphs' inferred types). Errors as ImportOnnxModel's. Never throws; what it can still do
// on a hostile model (crash inside ONNX, exhaust memory or time) is why it
// runs in a helper process.
absl::StatusOr<std::string> RunOnnxInference(absl::string_view request);

}  // namespace glint

#endif  // GLINT_ONNX_ONNX_IMPORTER_H_
