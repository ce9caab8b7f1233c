// ServingCore: what glintd serves, without any transport — the role of
// TensorFlow Serving's ServerCore under its gRPC and REST handlers. It owns
// the HostManager on its devices, the store and the journal that make
// networks durable, the model repository with its control mode and poll,
// and the shared-memory regions of local clients; it restores stored
// networks and loads the repository before it reports itself loaded, and
// it holds the load/unload policy of Triton's RepositoryModelLoad/Unload.
//
// The transports (runtime/server/: gRPC services, the REST port) borrow
// it: a handler authorizes, converts, calls the core and maps the status.
// No gRPC or HTTP type appears here.
//
// Errors name the glintd flag of the offending option (ServingCoreOptions'
// fields are those flags), so glintd reports them as they are.
//
// Thread-safe: every method may be called from any thread; Shutdown is
// idempotent.
#ifndef GLINT_SERVING_SERVING_CORE_H_
#define GLINT_SERVING_SERVING_CORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/cancellation.h"
#include "devices/device_spec.h"
#include "proto/oip_types.h"
#include "runtime/host_manager.h"
#include "serving/model_repository.h"
#include "serving/shared_memory.h"

namespace glint {

class NetworkStore;
class StoreJournal;

// Each field is the glintd flag of the same name (docs/OPERATING.md).
struct ServingCoreOptions {
  // The device spec (devices/device_spec.h).
  std::string devices = kDefaultDeviceSpec;
  // Where added networks are kept across restarts (a path, ~ expanded by
  // the caller); empty: nowhere.
  std::string store_dir;
  // The import helper: the command line of a program that serves
  // ServeImportHelper (glintd itself with --serve_import_helper), run
  // under these limits for every added model. Empty: ONNX's checker and
  // inference run in this process (tests, embedding programs).
  std::vector<std::string> import_helper_argv;
  uint64_t import_memory_limit_bytes = uint64_t{8} << 30;
  absl::Duration import_time_limit = absl::Seconds(120);
  // HostManager's admission limits.
  int max_active_runs = 64;
  int max_queued_runs = 1024;
  // HostManagerOptions::max_concurrent_executions.
  int max_concurrent_executions = 8;
  // A model repository in Triton's layout; empty: none.
  std::string model_repository;
  ModelControlMode model_control_mode = ModelControlMode::kNone;
  absl::Duration repository_poll = absl::Seconds(15);
};

class ServingCore {
 public:
  // Creates the devices (sharing the host's cores among them), opens the
  // store and the repository. Nothing is loaded yet: StartLoading does
  // that. INVALID_ARGUMENT for options that make no sense (naming the
  // flag); the store's, the repository's or the devices' own errors,
  // prefixed with the flag. Nothing keeps running after a failure.
  static absl::StatusOr<std::unique_ptr<ServingCore>> Create(
      ServingCoreOptions options);

  // Shutdown(), then waits for the background threads.
  ~ServingCore();
  ServingCore(const ServingCore&) = delete;
  ServingCore& operator=(const ServingCore&) = delete;

  HostManager& host_manager() { return *host_manager_; }
  const HostManager& host_manager() const { return *host_manager_; }
  // Null without --model_repository.
  ModelRepository* repository() { return repository_.get(); }
  // One registry for every transport: a region registered through one is
  // usable through another.
  SharedMemoryRegistry& shared_memory() { return *shared_memory_; }
  // The store's folder; empty without a store.
  std::string store_dir() const;

  // On a background thread: restores the stored networks, then loads the
  // repository (not in explicit mode), then calls `on_loaded` unless
  // Shutdown began, then (poll mode) rescans every repository_poll until
  // Shutdown. `on_loaded` is where a transport starts saying SERVING. Call
  // once.
  void StartLoading(std::function<void()> on_loaded);
  // Blocks until the loading StartLoading began has finished (on_loaded
  // returned or was skipped); returns at once if StartLoading was never
  // called.
  void WaitUntilLoaded();

  // Triton's RepositoryModelLoad and RepositoryModelUnload over this
  // core's HostManager and repository (serving/model_lifecycle.h says the
  // policy). Blocking: run them off the transport's callback threads.
  absl::Status LoadModel(const OipModelLoad& load);
  absl::Status UnloadModel(const std::string& name);

  // Stops polling, kills imports in progress, and shuts the HostManager
  // down (queued runs fail, runs in flight stop before their next
  // partition, all UNAVAILABLE). Returns without waiting for the loading
  // thread; the destructor joins it. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(shutdown_mu_);

 private:
  explicit ServingCore(ServingCoreOptions options);
  absl::Status Build();

  const ServingCoreOptions options_;
  // Cancelled by Shutdown: an import in progress stops at once.
  const std::shared_ptr<CancellationToken> stopping_ =
      std::make_shared<CancellationToken>();

  // Declared in the order they are built; destroyed in reverse.
  std::unique_ptr<NetworkStore> store_;
  std::unique_ptr<StoreJournal> journal_;
  std::unique_ptr<HostManager> host_manager_;
  std::unique_ptr<ModelRepository> repository_;
  std::unique_ptr<SharedMemoryRegistry> shared_memory_ =
      std::make_unique<SharedMemoryRegistry>();

  std::atomic<bool> loading_started_{false};
  absl::Notification loaded_;        // The loading thread finished.
  absl::Notification stop_polling_;  // Shutdown began.
  absl::Mutex shutdown_mu_;
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;
  std::thread loading_thread_;
  std::thread poll_thread_;
};

}  // namespace glint

#endif  // GLINT_SERVING_SERVING_CORE_H_
