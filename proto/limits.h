// Message size limits shared by glintd and every Glint client.
#ifndef GLINT_PROTO_LIMITS_H_
#define GLINT_PROTO_LIMITS_H_

#include <cstdint>

namespace glint {

// Largest gRPC message glintd and the Glint client send or accept, in both
// directions. gRPC's default of 4 MiB would refuse real models (hundreds of
// MB in one AddNetwork) and large tensors; protobuf cannot parse messages of
// 2 GiB or more, so 1 GiB leaves headroom under that hard limit. Larger
// models go through AddNetworkStream, in pieces.
inline constexpr int kMaxMessageBytes = 1 << 30;

// Largest model AddNetworkStream takes: what protobuf can parse (2 GiB -
// 1) less 1 MiB, the room the store's record needs around the model (name,
// options), so that a model taken is one the journal can keep. Larger
// models need ONNX's external data.
inline constexpr uint64_t kMaxModelBytes = (uint64_t{1} << 31) - 1 - (1 << 20);

// The piece size the Glint client cuts a model into for AddNetworkStream:
// large enough that a piece costs little per byte, small enough that
// neither side holds much of the model at once.
inline constexpr int kModelChunkBytes = 4 << 20;

}  // namespace glint

#endif  // GLINT_PROTO_LIMITS_H_
