// How glintd builds its gRPC server, apart from the services it registers:
// the listening port, message size limits and the resource quota. Every
// service (glint.v1, and any served beside it) is registered on the builder
// this configures, so that they share one port, one quota and one set of
// limits:
//
//   grpc::ServerBuilder builder;
//   int port = 0;
//   ConfigureServerBuilder(options, &builder, &port);
//   builder.RegisterService(&glint_service);
//   builder.RegisterService(&another_callback_service);
//   std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
//
// Services on gRPC's callback API share the HostManager and the blocking
// WorkerPool (worker_pool.h) and use the reactors of reactors.h.
#ifndef GLINT_RUNTIME_SERVER_GRPC_SERVER_SETUP_H_
#define GLINT_RUNTIME_SERVER_GRPC_SERVER_SETUP_H_

#include <cstdint>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "proto/limits.h"

namespace glint {

struct GrpcServerOptions {
  // host:port with a concrete port (glintd chooses one for port 0 first).
  std::string listen = "127.0.0.1:50051";
  // TLS or not (grpc_auth.h's MakeServerCredentials); null: plaintext.
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // Send and receive limit for one message.
  int max_message_bytes = kMaxMessageBytes;
  // The resource quota: memory gRPC may hold for calls (read buffers,
  // messages being parsed), and threads its synchronous servers may start
  // (only the reflection service is synchronous; the callback services run
  // on gRPC's own fixed pool). Over the memory, gRPC refuses new streams
  // (the caller sees RESOURCE_EXHAUSTED, "RST_STREAM with error code 11")
  // rather than grow, and may close an idle connection (GOAWAY: calls not
  // yet sent on it fail UNAVAILABLE, which clients retry). The default
  // holds two messages of the largest size; a smaller quota refuses
  // messages larger than what it has free.
  uint64_t memory_quota_bytes = uint64_t{2} << 30;
  int max_threads = 8;
};

// INVALID_ARGUMENT for a message limit that is not positive, a memory quota
// below 1 MiB, or fewer than 2 threads (a synchronous server needs a poller
// and a worker).
absl::Status ValidateGrpcServerOptions(const GrpcServerOptions& options);

// Adds the listening port with its credentials (the bound port lands in
// `*port` once the server is built; 0 if binding failed), the message
// limits and the resource quota
// to `builder`. `options` must be valid.
void ConfigureServerBuilder(const GrpcServerOptions& options,
                            grpc::ServerBuilder* builder, int* port);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_SERVER_SETUP_H_
