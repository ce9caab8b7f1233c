#include "runtime/server/grpc/model_upload.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace glint {

ModelUpload::ModelUpload(std::string dir, uint64_t max_bytes)
    : dir_(std::move(dir)), max_bytes_(max_bytes) {}

absl::Status ModelUpload::Take(const v1::AddNetworkChunk& chunk) {
  if (!started_) {
    if (chunk.name().empty()) {
      return absl::InvalidArgumentError(
          "the first message of AddNetworkStream must name the network");
    }
    if (chunk.model_size() > max_bytes_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the model is ", chunk.model_size(), " bytes, over the limit of ",
          max_bytes_, " (larger models need ONNX's external data)"));
    }
    absl::StatusOr<ModelFileWriter> file = ModelFileWriter::Create(dir_);
    if (!file.ok()) {
      // The server's folder, not the request, is at fault.
      return absl::InternalError(
          absl::StrCat("glintd cannot keep the model while it arrives: ",
                       file.status().message()));
    }
    file_.emplace(*std::move(file));
    started_ = true;
    name_ = chunk.name();
    options_ = chunk.options();
    declared_ = chunk.model_size();
  } else if (!chunk.name().empty() || chunk.has_options() ||
             chunk.model_size() != 0) {
    return absl::InvalidArgumentError(
        "only the first message of AddNetworkStream may set name, options "
        "and model_size; later ones carry model bytes alone");
  }
  const uint64_t limit = declared_ != 0 ? declared_ : max_bytes_;
  if (chunk.model().size() > limit - received_) {
    return absl::InvalidArgumentError(
        declared_ != 0
            ? absl::StrCat("the model goes past the model_size given (",
                           declared_, " bytes)")
            : absl::StrCat("the model goes past the limit of ", max_bytes_,
                           " bytes (larger models need ONNX's external "
                           "data)"));
  }
  GLINT_RETURN_IF_ERROR(file_->Append(chunk.model()));
  received_ += chunk.model().size();
  return absl::OkStatus();
}

absl::StatusOr<ModelBytes> ModelUpload::Finish() {
  if (!started_) {
    return absl::InvalidArgumentError(
        "AddNetworkStream ended before its first message");
  }
  if (declared_ != 0 && received_ != declared_) {
    return absl::InvalidArgumentError(
        absl::StrCat("the stream ended after ", received_,
                     " bytes of a model of ", declared_));
  }
  if (!file_.has_value()) {
    return absl::FailedPreconditionError("the upload is finished");
  }
  absl::StatusOr<ModelBytes> bytes = file_->Finish();
  file_.reset();
  return bytes;
}

}  // namespace glint
