// The one place where absl::Status meets the wire's status codes: gRPC's
// (every handler in glintd and every call in the Glint client converts
// through these, so the code and the message survive the wire unchanged in
// both directions) and HTTP's (glintd's REST endpoints).
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

// The HTTP status of a REST reply failing with `code`, as the Open
// Inference Protocol's REST binding expects (400 bad request, 404 unknown
// model, 503 not ready, 500 internal) and, for the codes it leaves open,
// as google.rpc.Code documents each code's HTTP equivalent: 401, 403, 409
// (ALREADY_EXISTS, ABORTED), 429 (RESOURCE_EXHAUSTED), 499 (CANCELLED),
// 501 (UNIMPLEMENTED), 504 (DEADLINE_EXCEEDED). OK is 200; codes outside
// the canonical 0..16 are 500.
int ToHttpStatus(absl::StatusCode code);

}  // namespace glint

#endif  // GLINT_PROTO_STATUS_UTIL_H_
