// GlintServer: glintd as an object. It owns the ServingCore (the
// HostManager on its devices, the store, the model repository, the
// shared-memory regions: serving/serving_core.h) and the transports over
// it (the gRPC services on one port, the HTTP port), and wires them in the
// order that keeps the daemon's promises: durable networks come back, and
// the repository loads, before health says SERVING; a shutdown refuses
// new work, stops runs and imports, and lets RPCs in progress end within a
// grace period.
//
// glintd's main parses its flags into GlintServerOptions, calls
// BuildAndStart, writes its port files and waits for a signal; tests start
// a whole server in-process the same way.
//
// Thread-safe: every method may be called from any thread; Shutdown is
// idempotent.
#ifndef GLINT_RUNTIME_SERVER_GLINT_SERVER_H_
#define GLINT_RUNTIME_SERVER_GLINT_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "runtime/host_manager.h"
#include "runtime/server/common/security_options.h"
#include "serving/serving_core.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace glint {

class Authorizer;
class GlintServiceImpl;
class HttpServer;
class InferenceServiceImpl;
class RequestBudget;
class RestApi;
class WorkerPool;

// What glintd serves and how; each field is the flag of the same name
// (glintd --help), and errors name the flag.
struct GlintServerOptions {
  // What is served: devices, store, import limits, admission, repository.
  ServingCoreOptions core;
  // gRPC address, host:port; port 0 picks a free one (see port()).
  std::string listen = "127.0.0.1:50051";
  // HTTP address for KServe v2 REST and /metrics; empty: no HTTP.
  std::string http_listen = "127.0.0.1:8000";
  int http_threads = 8;
  int http_max_connections = 2048;
  int http_max_connections_per_peer = 512;
  absl::Duration http_timeout = absl::Seconds(5);
  uint64_t http_max_request_bytes = uint64_t{32} << 20;
  uint64_t grpc_memory_limit_bytes = uint64_t{4} << 30;
  // Bytes of inference requests held at once (request_budget.h); 0: half
  // of grpc_memory_limit_bytes. At most grpc_memory_limit_bytes.
  uint64_t max_request_bytes_in_flight = 0;
  int grpc_max_threads = 8;
  int blocking_call_threads = 2;
  int blocking_call_queue = 64;
  // UploadOptions::idle_timeout (runtime/server/grpc/service.h).
  absl::Duration upload_idle_timeout = absl::Minutes(2);
  SecurityOptions security;
  // The grpc.health.v1 service that is SERVING while the process answers
  // (liveness); empty: none.
  std::string liveness_service = "liveness";
  // How long RPCs in progress get to finish once Shutdown begins (from
  // its start, whatever the runs and devices are doing meanwhile).
  absl::Duration shutdown_grace = absl::Seconds(5);
};

class GlintServer {
 public:
  // Creates the devices, opens the store, starts the gRPC port and the
  // HTTP port, and starts restoring the stored networks (then loading the
  // repository) in the background; returns once both ports accept
  // connections. Errors: INVALID_ARGUMENT for options that make no sense
  // (naming the flag), and the store's, the devices' or the ports' own
  // (UNAVAILABLE when a port cannot be bound). Nothing keeps running after
  // a failure.
  static absl::StatusOr<std::unique_ptr<GlintServer>> BuildAndStart(
      GlintServerOptions options);

  // Shutdown(), then waits for the background threads.
  ~GlintServer();
  GlintServer(const GlintServer&) = delete;
  GlintServer& operator=(const GlintServer&) = delete;

  // The bound ports; http_port() is 0 without HTTP.
  int port() const { return port_; }
  int http_port() const;
  // host:port as bound (port 0 replaced by the chosen one).
  const std::string& listen() const { return listen_; }

  HostManager& host_manager() { return core_->host_manager(); }

  // Blocks until the stored networks are back and the repository is
  // loaded: health says SERVING from then until Shutdown.
  void WaitUntilReady();
  bool ready() const { return ready_.load(); }

  // What SIGINT/SIGTERM do: health says NOT_SERVING, new calls and runs are
  // refused, queued runs fail, runs in flight stop before their next launch
  // or copy and imports in progress are killed (all UNAVAILABLE); calls in
  // progress get until `shutdown_grace` after the start of Shutdown to end,
  // then are cancelled. Returns once both ports have stopped, which an item
  // already running on a device (one launch, one copy) may delay: glintd's
  // main bounds the whole exit by the grace plus 1 s. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(shutdown_mu_);

 private:
  explicit GlintServer(GlintServerOptions options);

  // BuildAndStart's steps.
  absl::Status CreateCore();
  absl::Status StartGrpc();
  absl::Status StartHttp();
  // The core's loading; health says SERVING once it is done.
  void OnLoaded() ABSL_LOCKS_EXCLUDED(shutdown_mu_);

  const GlintServerOptions options_;

  // Declared in the order they are built; destroyed in reverse.
  std::unique_ptr<Authorizer> authorizer_;
  std::unique_ptr<ServingCore> core_;
  std::unique_ptr<RequestBudget> request_budget_;
  // Outlives the server: its tasks answer calls.
  std::unique_ptr<WorkerPool> blocking_;
  std::unique_ptr<GlintServiceImpl> glint_service_;
  std::unique_ptr<InferenceServiceImpl> inference_service_;
  std::optional<TlsMaterial> tls_;  // Of both ports; none: plaintext.
  std::unique_ptr<grpc::Server> server_;
  std::string listen_;
  int port_ = 0;
  std::atomic<bool> ready_{false};
  std::unique_ptr<RestApi> rest_api_;
  std::unique_ptr<HttpServer> http_server_;

  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GLINT_SERVER_H_
