// Small pieces that the importer's phases share (onnx/README.md): how a
// node is named in messages, the spellings of the default domain, ONNX's
// exceptions as statuses, and ONNX's shape inference as Glint runs it.
//
// Internal to //onnx:onnx_importer. Every function is thread-safe.
#ifndef GLINT_ONNX_IMPORT_UTIL_H_
#define GLINT_ONNX_IMPORT_UTIL_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "onnx/onnx_pb.h"

namespace glint::onnx_internal {

// "" and "ai.onnx" both name the default ONNX domain.
bool IsDefaultDomain(const std::string& domain);

// "node 'conv1' (Conv)", for messages.
std::string DescribeNode(const onnx::NodeProto& node);

// The exception being handled (call only inside a catch block) as a status
// prefixed by `stage`: RESOURCE_EXHAUSTED for std::bad_alloc, else
// INVALID_ARGUMENT with ONNX's own words, which name the offending node.
absl::Status StatusFromException(absl::string_view stage);

// Every declared type in `graph` (value_info, outputs, inputs; a later kind
// wins), by value name. Pointers into `graph`.
using TypeIndex = absl::flat_hash_map<std::string, const onnx::TypeProto*>;
TypeIndex IndexTypes(const onnx::GraphProto& graph);

// The type `graph` declares for `name` in its value_info or outputs; null
// where it declares none.
onnx::TypeProto* FindMutableType(onnx::GraphProto* graph,
                                 const std::string& name);

// ONNX's shape inference over `model`, writing what it infers into the
// graph's value_info and outputs, with data propagation; strict (types
// checked against the op schemas, the first node it cannot infer fails
// it) unless `strict` is false, where ONNX skips such nodes and goes on
// without checking types (its type check throws past the skipping). The
// kernels still check every dtype they are given at build time. INVALID_ARGUMENT (or
// RESOURCE_EXHAUSTED) with ONNX's message where it throws.
absl::Status RunShapeInference(onnx::ModelProto* model, bool strict = true);

}  // namespace glint::onnx_internal

#endif  // GLINT_ONNX_IMPORT_UTIL_H_
