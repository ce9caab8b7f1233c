// ModelUpload: one AddNetworkStream call's state, without gRPC's server
// machinery (tested directly, fuzzed by add_network_stream_fuzzer): the
// first message's name and options, then the model's bytes written to a
// file as they arrive (core/model_bytes.h ModelFileWriter), which the add
// then reads mapped. So glintd never holds a streamed model in memory
// whole, and a model may exceed one message's limit (proto/limits.h).
//
// Thread-compatible: a call's messages come one at a time.
#ifndef GLINT_RUNTIME_SERVER_GRPC_MODEL_UPLOAD_H_
#define GLINT_RUNTIME_SERVER_GRPC_MODEL_UPLOAD_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/model_bytes.h"
#include "proto/glint.pb.h"

namespace glint {

class ModelUpload {
 public:
  // The model's file goes in `dir` (created with the first message);
  // models over `max_bytes` are refused.
  ModelUpload(std::string dir, uint64_t max_bytes);

  // Takes the stream's next message. An error ends the upload, and the
  // call is answered with it: INVALID_ARGUMENT for a first message without
  // a name, a later one that sets name, options or model_size, a
  // model_size or bytes beyond `max_bytes` or beyond the model_size given;
  // RESOURCE_EXHAUSTED when the disk is full; INTERNAL when the file
  // cannot be created (the server's folder is missing or not writable).
  absl::Status Take(const v1::AddNetworkChunk& chunk);

  // The stream ended: the model's bytes, mapped. INVALID_ARGUMENT when no
  // message came or fewer bytes than the model_size given. Once only.
  absl::StatusOr<ModelBytes> Finish();

  // From the first message (empty before it).
  const std::string& name() const { return name_; }
  const v1::AddNetworkOptions& options() const { return options_; }
  // Model bytes taken so far.
  uint64_t received() const { return received_; }

 private:
  const std::string dir_;
  const uint64_t max_bytes_;
  bool started_ = false;
  std::string name_;
  v1::AddNetworkOptions options_;
  uint64_t declared_ = 0;  // model_size; 0 when not given.
  uint64_t received_ = 0;
  std::optional<ModelFileWriter> file_;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_MODEL_UPLOAD_H_
