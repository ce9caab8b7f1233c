// Message size limits shared by glintd and every Glint client.
#ifndef GLINT_PROTO_LIMITS_H_
#define GLINT_PROTO_LIMITS_H_

namespace glint {

// Largest gRPC message glintd and the Glint client send or accept, in both
// directions. gRPC's default of 4 MiB would refuse real models (hundreds of
// MB in one AddNetwork) and large tensors; protobuf cannot parse messages of
// 2 GiB or more, so 1 GiB leaves headroom under that hard limit. Models
// larger than this would need a streaming upload (not yet in glint.v1).
inline constexpr int kMaxMessageBytes = 1 << 30;

}  // namespace glint

#endif  // GLINT_PROTO_LIMITS_H_
