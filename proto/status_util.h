// The one place where absl::Status and grpc::Status meet. Every handler in
// glintd and every call in the Glint client converts through these, so the
// code and the message survive the wire unchanged in both directions.
#ifndef GLINT_PROTO_STATUS_UTIL_H_
#define GLINT_PROTO_STATUS_UTIL_H_

#include <grpcpp/support/status.h>

#include <cstddef>

#include "absl/status/status.h"

namespace glint {

// The longest error message sent to a client; longer ones are clipped.
inline constexpr size_t kMaxStatusMessageBytes = 4096;

// Same code, same message (clipped to kMaxStatusMessageBytes). Codes
// outside the canonical 0..16 become UNKNOWN.
grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

grpc::StatusCode ToGrpcCode(absl::StatusCode code);
absl::StatusCode FromGrpcCode(grpc::StatusCode code);

}  // namespace glint

#endif  // GLINT_PROTO_STATUS_UTIL_H_
