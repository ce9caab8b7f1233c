// The glint.v1.HostManager gRPC service, in two layers:
//
// - GlintHandlers: the handler logic without gRPC's server machinery. Each
//   handler converts the request (proto_convert.h), calls HostManager,
//   fills the response and maps the status (status_util.h); behaviour lives
//   in HostManager. Tested directly (service_test.cc).
// - GlintServiceImpl: the callback-API service (v1::HostManager::
//   CallbackService) that gives each handler its reactor (reactors.h):
//   quick calls answer on gRPC's callback thread, RunNetwork answers from
//   its run's completion (no thread waits on a run; a cancelled call
//   cancels its run), and AddNetwork and RemoveNetwork, which block, run on
//   a WorkerPool.
//
// Both thread-safe: gRPC calls the handlers concurrently, and HostManager is
// thread-safe.
#ifndef GLINT_RUNTIME_SERVER_GRPC_SERVICE_H_
#define GLINT_RUNTIME_SERVER_GRPC_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "core/cancellation.h"
#include "proto/glint.grpc.pb.h"
#include "runtime/host_manager.h"
#include "runtime/server/common/auth.h"
#include "runtime/server/grpc/idle_call_watch.h"
#include "runtime/server/grpc/model_upload.h"
#include "runtime/server/grpc/reactors.h"
#include "runtime/server/grpc/request_budget.h"
#include "runtime/server/grpc/worker_pool.h"
#include "serving/shared_memory.h"

namespace glint {

class GlintHandlers {
 public:
  // Neither is owned; both must outlive the handlers.
  GlintHandlers(HostManager* host_manager, SharedMemoryRegistry* shared_memory);

  // Block (import, compile and load; waiting for in-flight runs).
  grpc::Status AddNetwork(const v1::AddNetworkRequest& request,
                          v1::AddNetworkResponse* response) const;
  // AddNetworkStream, one message at a time: `chunk` goes to `upload`
  // (model_upload.h); the first message's options are checked at once, so
  // that bad options fail before the model's bytes are sent. Blocks on the
  // file's write.
  grpc::Status TakeUploadChunk(ModelUpload& upload,
                               const v1::AddNetworkChunk& chunk) const;
  // ...and at the stream's end: adds the network from the uploaded model,
  // read mapped. Blocks as AddNetwork.
  grpc::Status AddUploadedNetwork(ModelUpload& upload,
                                  v1::AddNetworkResponse* response) const;
  grpc::Status RemoveNetwork(const v1::RemoveNetworkRequest& request,
                             v1::RemoveNetworkResponse* response) const;

  // Quick: a look under HostManager's locks.
  grpc::Status ListNetworks(const v1::ListNetworksRequest& request,
                            v1::ListNetworksResponse* response) const;
  grpc::Status GetNetwork(const v1::GetNetworkRequest& request,
                          v1::GetNetworkResponse* response) const;
  grpc::Status GetDevices(const v1::GetDevicesRequest& request,
                          v1::GetDevicesResponse* response) const;
  grpc::Status GetStatistics(const v1::GetStatisticsRequest& request,
                             v1::GetStatisticsResponse* response) const;
  grpc::Status RegisterSharedMemory(
      const v1::RegisterSharedMemoryRequest& request,
      v1::RegisterSharedMemoryResponse* response) const;
  grpc::Status UnregisterSharedMemory(
      const v1::UnregisterSharedMemoryRequest& request,
      v1::UnregisterSharedMemoryResponse* response) const;
  grpc::Status SharedMemoryStatus(const v1::SharedMemoryStatusRequest& request,
                                  v1::SharedMemoryStatusResponse* response) const;

  // RunNetwork's request as a run: the inputs converted (shared-memory ones
  // borrowed from their regions; run_request.h), the options (requested
  // outputs, priority, trace; no deadline or cancellation yet), and how its
  // result fills `response` (outputs with a shared-memory window copied
  // there). INVALID_ARGUMENT for a malformed tensor or a bad window. The
  // inputs and the responder hold the regions they use. `response` must
  // live until the responder has been called.
  struct PreparedRun {
    std::string name;
    std::vector<NamedTensor> inputs;
    RunOptions options;
    RunResponder respond;
  };
  absl::StatusOr<PreparedRun> PrepareRun(const v1::RunNetworkRequest& request,
                                         v1::RunNetworkResponse* response) const;

  // PrepareRun, then RunForCall: starts the run and returns; `finish` is
  // called exactly once, once `response` is filled (possibly before RunNetwork returns, possibly on a
  // device thread). `deadline` (the call's) becomes RunOptions::deadline;
  // cancelling `cancel` cancels the run (partitions not yet started are
  // skipped; the call ends CANCELLED). `request` and `response` must live
  // until `finish` is called.
  void RunNetwork(const v1::RunNetworkRequest& request,
                  v1::RunNetworkResponse* response, absl::Time deadline,
                  std::shared_ptr<const CancellationToken> cancel,
                  FinishCallback finish) const;

 private:
  // AddNetwork's and AddUploadedNetwork's shared end.
  grpc::Status Add(absl::string_view name, const ModelBytes& model,
                   const v1::AddNetworkOptions& options,
                   v1::AddNetworkResponse* response) const;

  HostManager* const host_manager_;
  SharedMemoryRegistry* const shared_memory_;
};

// What GlintServiceImpl's AddNetworkStream may hold at once.
struct UploadOptions {
  // Where a model being uploaded is kept until added (a file no other
  // process can open, gone when the call ends: ModelFileWriter). glintd
  // gives a folder of its store's (a disk, not memory); empty: $TMPDIR, or
  // /tmp without it.
  std::string dir;
  // Uploads in progress at once; more are RESOURCE_EXHAUSTED at once, so
  // that clients cannot fill the disk with ever more half-sent models.
  // Every Glint client adds through an upload, so this is also how many
  // adds may be under way at once: glintd sets it to what its blocking
  // pool holds (threads + queue), the bound unary AddNetwork has.
  int max_concurrent = 64;
  // An upload whose client sends nothing this long (between two messages,
  // or before the first) is cancelled and its place freed
  // (IdleCallWatch): a stalled or hostile client cannot keep others'
  // adds out for ever. At 2 minutes a client must send one 4 MiB piece
  // (kModelChunkBytes) each 2 minutes, 280 kbit/s. Positive (glintd
  // checks its flag); InfiniteDuration: no limit.
  absl::Duration idle_timeout = absl::Minutes(2);
};

class GlintServiceImpl final : public v1::HostManager::CallbackService {
 public:
  // None is owned; all must outlive the gRPC server. `blocking` runs
  // AddNetwork and RemoveNetwork. A null `authorizer` leaves every call
  // open (glintd without --auth_tokens); else each handler first checks
  // the call's bearer token against auth.h's method table
  // (UNAUTHENTICATED / PERMISSION_DENIED), answered at once. Without a
  // shared-memory registry the service keeps one of its own (glintd passes
  // the one its services share). A RunNetwork request is first charged
  // against `request_budget` (null: none), RESOURCE_EXHAUSTED beyond it.
  // `uploads`: see UploadOptions.
  GlintServiceImpl(HostManager* host_manager, WorkerPool* blocking,
                   const Authorizer* authorizer = nullptr,
                   SharedMemoryRegistry* shared_memory = nullptr,
                   RequestBudget* request_budget = nullptr,
                   UploadOptions uploads = UploadOptions());

  grpc::ServerUnaryReactor* AddNetwork(
      grpc::CallbackServerContext* context,
      const v1::AddNetworkRequest* request,
      v1::AddNetworkResponse* response) override;
  // Reads the messages one at a time; each is written to the model's file
  // on the blocking pool before the next is read (so a call holds at most
  // one message), and the add runs there at the stream's end.
  grpc::ServerReadReactor<v1::AddNetworkChunk>* AddNetworkStream(
      grpc::CallbackServerContext* context,
      v1::AddNetworkResponse* response) override;
  grpc::ServerUnaryReactor* RemoveNetwork(
      grpc::CallbackServerContext* context,
      const v1::RemoveNetworkRequest* request,
      v1::RemoveNetworkResponse* response) override;
  grpc::ServerUnaryReactor* ListNetworks(
      grpc::CallbackServerContext* context,
      const v1::ListNetworksRequest* request,
      v1::ListNetworksResponse* response) override;
  grpc::ServerUnaryReactor* GetNetwork(
      grpc::CallbackServerContext* context,
      const v1::GetNetworkRequest* request,
      v1::GetNetworkResponse* response) override;
  // The call's gRPC deadline becomes RunOptions::deadline; its cancellation
  // (OnCancel) cancels the run.
  grpc::ServerUnaryReactor* RunNetwork(
      grpc::CallbackServerContext* context,
      const v1::RunNetworkRequest* request,
      v1::RunNetworkResponse* response) override;
  grpc::ServerUnaryReactor* GetDevices(
      grpc::CallbackServerContext* context,
      const v1::GetDevicesRequest* request,
      v1::GetDevicesResponse* response) override;
  grpc::ServerUnaryReactor* GetStatistics(
      grpc::CallbackServerContext* context,
      const v1::GetStatisticsRequest* request,
      v1::GetStatisticsResponse* response) override;
  grpc::ServerUnaryReactor* RegisterSharedMemory(
      grpc::CallbackServerContext* context,
      const v1::RegisterSharedMemoryRequest* request,
      v1::RegisterSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* UnregisterSharedMemory(
      grpc::CallbackServerContext* context,
      const v1::UnregisterSharedMemoryRequest* request,
      v1::UnregisterSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* SharedMemoryStatus(
      grpc::CallbackServerContext* context,
      const v1::SharedMemoryStatusRequest* request,
      v1::SharedMemoryStatusResponse* response) override;

 private:
  // AuthorizeCall for `method` ("AddNetwork"...) of glint.v1.HostManager.
  grpc::Status Authorize(const grpc::CallbackServerContext& context,
                         absl::string_view method) const;

  HostManager* const host_manager_;
  const std::unique_ptr<SharedMemoryRegistry> own_shared_memory_;
  const GlintHandlers handlers_;
  WorkerPool* const blocking_;
  const Authorizer* const authorizer_;
  RequestBudget* const request_budget_;
  const UploadOptions uploads_;
  std::atomic<int> uploading_{0};  // AddNetworkStream calls in progress.
  // Null when uploads.idle_timeout is infinite.
  const std::unique_ptr<IdleCallWatch> idle_uploads_;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_SERVICE_H_
