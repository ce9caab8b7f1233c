// GlintServiceImpl: the glint.v1.HostManager gRPC service. Each handler only
// converts the request (proto_convert.h), calls HostManager, converts the
// reply and maps the status (status_util.h); behaviour lives in HostManager.
//
// Thread-safe: gRPC calls the handlers concurrently, and HostManager is
// thread-safe.
#ifndef GLINT_RUNTIME_SERVER_SERVICE_H_
#define GLINT_RUNTIME_SERVER_SERVICE_H_

#include <chrono>
#include <functional>
#include <memory>

#include <grpcpp/grpcpp.h>

#include "absl/time/time.h"
#include "proto/glint.grpc.pb.h"
#include "runtime/host_manager.h"
#include "runtime/server/auth.h"
#include "runtime/server/shared_memory.h"

namespace glint {

class GlintServiceImpl final : public v1::HostManager::Service {
 public:
  // None is owned; all must outlive the gRPC server. A null `authorizer`
  // leaves every call open (glintd without --auth_tokens); else each
  // handler first checks the call's bearer token against auth.h's method
  // table (UNAUTHENTICATED / PERMISSION_DENIED). Without a shared-memory
  // registry the service keeps one of its own (glintd passes the one its
  // services share).
  explicit GlintServiceImpl(HostManager* host_manager,
                            const Authorizer* authorizer = nullptr,
                            SharedMemoryRegistry* shared_memory = nullptr);

  grpc::Status AddNetwork(grpc::ServerContext* context,
                          const v1::AddNetworkRequest* request,
                          v1::AddNetworkResponse* response) override;
  grpc::Status RemoveNetwork(grpc::ServerContext* context,
                             const v1::RemoveNetworkRequest* request,
                             v1::RemoveNetworkResponse* response) override;
  grpc::Status ListNetworks(grpc::ServerContext* context,
                            const v1::ListNetworksRequest* request,
                            v1::ListNetworksResponse* response) override;
  grpc::Status GetNetwork(grpc::ServerContext* context,
                          const v1::GetNetworkRequest* request,
                          v1::GetNetworkResponse* response) override;
  // The call's gRPC deadline becomes RunOptions::deadline.
  grpc::Status RunNetwork(grpc::ServerContext* context,
                          const v1::RunNetworkRequest* request,
                          v1::RunNetworkResponse* response) override;
  grpc::Status GetDevices(grpc::ServerContext* context,
                          const v1::GetDevicesRequest* request,
                          v1::GetDevicesResponse* response) override;
  grpc::Status RegisterSharedMemory(
      grpc::ServerContext* context,
      const v1::RegisterSharedMemoryRequest* request,
      v1::RegisterSharedMemoryResponse* response) override;
  grpc::Status UnregisterSharedMemory(
      grpc::ServerContext* context,
      const v1::UnregisterSharedMemoryRequest* request,
      v1::UnregisterSharedMemoryResponse* response) override;
  grpc::Status SharedMemoryStatus(
      grpc::ServerContext* context,
      const v1::SharedMemoryStatusRequest* request,
      v1::SharedMemoryStatusResponse* response) override;

 private:
  HostManager* const host_manager_;
  const Authorizer* const authorizer_;
  std::unique_ptr<SharedMemoryRegistry> own_shared_memory_;
  SharedMemoryRegistry* const shared_memory_;
};

// A gRPC deadline as an absl::Time; "no deadline" (the far future gRPC
// reports then) is absl::InfiniteFuture(). Exposed for tests.
absl::Time DeadlineFromGrpc(std::chrono::system_clock::time_point deadline);

// RunNetwork's core, without gRPC: runs and waits, polling `client_gone`
// every few milliseconds; once it returns true the run is cancelled
// (partitions not yet started are skipped; the result is CANCELLED).
absl::StatusOr<std::vector<NamedTensor>> RunUntilDoneOrCancelled(
    HostManager& host_manager, absl::string_view name,
    std::vector<NamedTensor> inputs, RunOptions options,
    const std::function<bool()>& client_gone);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_SERVICE_H_
