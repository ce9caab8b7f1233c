#include "onnx/onnx_importer.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/status_macros.h"
#include "google/protobuf/io/zero_copy_stream.h"
#include "onnx/graph_builder.h"
#include "onnx/import_util.h"
#include "onnx/legacy_ops.h"
#include "onnx/newer_opsets.h"
#include "onnx/onnx_inference.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_validate.h"
#include "onnx/shape_folding.h"

namespace glint {
namespace {

using onnx_internal::AssignNodeNames;
using onnx_internal::BindInputs;
using onnx_internal::BuildGraph;
using onnx_internal::CheckModelIsRunnable;
using onnx_internal::CheckNamesAreUtf8;
using onnx_internal::FoldShapeArithmetic;
using onnx_internal::InferTypes;
using onnx_internal::InferTypesElsewhere;
using onnx_internal::NormalizeDefaultDomain;
using onnx_internal::SortNodes;
using onnx_internal::StatusFromException;
using onnx_internal::TakeInitializers;
using onnx_internal::UpgradeLegacyNodes;

// The model's bytes in windows for protobuf's parser, each reported to
// `read_past` once the parser has asked for the next: protobuf copies what
// it still needs of a buffer (a few bytes) before it asks, so a window is
// not read again once passed.
class WindowedInput : public google::protobuf::io::ZeroCopyInputStream {
 public:
  static constexpr size_t kWindowBytes = size_t{64} << 20;

  WindowedInput(absl::string_view bytes,
                const std::function<void(size_t, size_t)>& read_past)
      : bytes_(bytes), read_past_(read_past) {}

  bool Next(const void** data, int* size) override {
    if (read_past_ && handed_ > passed_) {
      read_past_(passed_, handed_ - passed_);
      passed_ = handed_;
    }
    if (position_ >= bytes_.size()) return false;
    const size_t n = std::min(kWindowBytes, bytes_.size() - position_);
    *data = bytes_.data() + position_;
    *size = static_cast<int>(n);
    position_ += n;
    handed_ = position_;
    return true;
  }
  void BackUp(int count) override { position_ -= static_cast<size_t>(count); }
  bool Skip(int count) override {
    const size_t n =
        std::min(static_cast<size_t>(count), bytes_.size() - position_);
    position_ += n;
    return n == static_cast<size_t>(count);
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(position_); }

 private:
  const absl::string_view bytes_;
  const std::function<void(size_t, size_t)>& read_past_;
  size_t position_ = 0;  // Next byte to hand out.
  size_t handed_ = 0;    // End of the last window handed out.
  size_t passed_ = 0;    // End of what read_past_ was told.
};

absl::StatusOr<onnx::ModelProto> ParseModel(
    absl::string_view model_bytes,
    const std::function<void(size_t, size_t)>& read_past) {
  if (model_bytes.size() > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        "model bytes exceed 2 GiB, the protobuf limit; models that large "
        "need external data, which Glint does not support");
  }
  onnx::ModelProto model;
  WindowedInput input(model_bytes, read_past);
  const bool parsed =
      !model_bytes.empty() && model.ParseFromZeroCopyStream(&input);
  if (read_past) read_past(0, model_bytes.size());
  if (!parsed) {
    return absl::InvalidArgumentError(
        "model bytes are not a valid ONNX ModelProto");
  }
  if (!model.has_graph()) {
    return absl::InvalidArgumentError("the ONNX model has no graph");
  }
  return model;
}

// The phases of an import, in order; each refuses what it cannot take, so
// a model fails with the first reason in this order (onnx/README.md).
absl::StatusOr<Graph> Import(absl::string_view model_bytes,
                             const ImportOptions& options) {
  // libonnx learns the opsets newer than its own (onnx/newer_opsets.h).
  onnx_internal::RegisterNewerOpsetSchemas();
  // Parse and normalise: the default domain spelled "", unique node names.
  GLINT_ASSIGN_OR_RETURN(onnx::ModelProto model,
                         ParseModel(model_bytes, options.read_past));
  GLINT_ASSIGN_OR_RETURN(const int64_t opset, NormalizeDefaultDomain(&model));
  onnx::GraphProto* graph = model.mutable_graph();
  GLINT_RETURN_IF_ERROR(CheckNamesAreUtf8(*graph));
  AssignNodeNames(graph);

  // Validate: what Glint cannot run is refused before any inference.
  GLINT_RETURN_IF_ERROR(CheckModelIsRunnable(*graph, opset, options));

  // Bind: constants read, runtime inputs typed and their dims fixed.
  GLINT_ASSIGN_OR_RETURN(auto initializers, TakeInitializers(graph));
  Graph result;
  result.name = graph->name();
  result.opset_version = opset;
  GLINT_RETURN_IF_ERROR(BindInputs(graph, initializers, options, &result));
  GLINT_RETURN_IF_ERROR(SortNodes(graph));

  // Infer the type of every value, here or in the caller's helper process.
  GLINT_RETURN_IF_ERROR(options.run_inference
                            ? InferTypesElsewhere(&model, options.run_inference)
                            : InferTypes(&model));
  // The shape arithmetic inference folded (in the helper, on its copy)
  // leaves this model too, as Constant nodes (onnx/shape_folding.h).
  GLINT_RETURN_IF_ERROR(FoldShapeArithmetic(graph, opset).status());

  // Old opsets' forms of ops in today's terms (onnx/legacy_ops.h).
  GLINT_RETURN_IF_ERROR(UpgradeLegacyNodes(opset, graph, &initializers));

  // Build the Graph and check it.
  GLINT_RETURN_IF_ERROR(BuildGraph(*graph, std::move(initializers), &result));
  GLINT_RETURN_IF_ERROR(result.Validate());
  return result;
}

}  // namespace

absl::StatusOr<Graph> ImportOnnxModel(absl::string_view model_bytes,
                                      const ImportOptions& options) {
  // ONNX and the is_supported callback may throw; the API promises a
  // status, never an exception.
  try {
    return Import(model_bytes, options);
  } catch (...) {
    absl::Status s = StatusFromException("ONNX import failed");
    return s.code() == absl::StatusCode::kResourceExhausted
               ? s
               : absl::InternalError(s.message());
  }
}

}  // namespace glint
