// The importer's conversion of the prepared ModelProto into Glint's Graph
// (onnx/README.md), in two steps around type inference: BindInputs before
// it (constants read, runtime inputs typed and their dims fixed, which
// inference then propagates), BuildGraph after it (nodes, attributes and
// the inferred type of every value).
//
// Internal to //onnx:onnx_importer. Thread-safe on distinct protos.
#ifndef GLINT_ONNX_GRAPH_BUILDER_H_
#define GLINT_ONNX_GRAPH_BUILDER_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "onnx/onnx_importer.h"
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

// The graph's initializers as tensors, by name. INVALID_ARGUMENT for one
// without a name or defined twice; TensorFromOnnxProto's errors, prefixed
// with the initializer's name.
absl::StatusOr<std::map<std::string, Tensor>> ReadInitializers(
    const onnx::GraphProto& graph);

// Initializers up to this size stay in the model's proto with their data
// (shape-like values that ONNX's inference and the shape folding read);
// larger ones leave it as typed graph inputs (TakeInitializers), so that a
// 100 MB model is neither held twice nor copied to the inference helper.
inline constexpr size_t kInlineInitializerBytes = 1 << 20;

// ReadInitializers for the main graph, whose proto the import keeps
// working on: an initializer over kInlineInitializerBytes leaves `graph`
// as soon as it is read (a graph input of its type takes its place, as
// models of IR < 4 list them), so the import never holds a weight both as
// protobuf bytes and as a tensor. Errors as ReadInitializers'.
absl::StatusOr<std::map<std::string, Tensor>> TakeInitializers(
    onnx::GraphProto* graph);

// Types the graph's inputs into `result` (inputs and values; initializers'
// values too) and writes what it decides back into `graph` for inference:
// each runtime input's dims bound (options.input_shapes, else the declared
// dims, symbolic and unknown ones left Shape::kUnknownDim with their names
// in ValueInfo::dim_names), and each input that is also an initializer
// (models of IR < 4 list them) described by its tensor.
// INVALID_ARGUMENT for input_shapes naming no runtime input, inputs without
// a name, type or shape, declared twice, or shapes that contradict or are
// over CheckTensorSize's ceilings; UNIMPLEMENTED for inputs that are not
// tensors or of an element type Glint lacks.
absl::Status BindInputs(onnx::GraphProto* graph,
                        const std::map<std::string, Tensor>& initializers,
                        const ImportOptions& options, Graph* result);

// After inference: adds `graph`'s nodes (attributes converted, outputs
// typed as inferred), `initializers` and the outputs to `result`.
// UNIMPLEMENTED for a value of no tensor type, or of a type inference did
// not find or Glint lacks; INVALID_ARGUMENT for an output listed twice or
// never produced.
absl::Status BuildGraph(const onnx::GraphProto& graph,
                        std::map<std::string, Tensor> initializers,
                        Graph* result);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_GRAPH_BUILDER_H_
