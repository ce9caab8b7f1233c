#include "serving/serving_core.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/thread_name.h"
#include "onnx/import_sandbox.h"
#include "serving/model_lifecycle.h"
#include "serving/network_journal.h"
#include "store/network_store.h"

namespace glint {
namespace {

// The HostManager's options: admission limits, and every model imported by
// the helper under the import limits (or in-process without one).
absl::StatusOr<HostManagerOptions> MakeHostManagerOptions(
    const ServingCoreOptions& options,
    std::shared_ptr<const CancellationToken> cancel) {
  if (options.import_time_limit <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--import_time_limit must be positive");
  }
  HostManagerOptions host;
  host.max_active_requests = options.max_active_runs;
  host.max_queue_size = options.max_queued_runs;
  host.max_concurrent_executions = options.max_concurrent_executions;
  if (!options.import_helper_argv.empty()) {
    ImportSandboxOptions sandbox;
    sandbox.argv = options.import_helper_argv;
    sandbox.max_address_space_bytes = options.import_memory_limit_bytes;
    sandbox.max_cpu_time = options.import_time_limit;
    sandbox.max_wall_time = options.import_time_limit;
    sandbox.cancel = std::move(cancel);
    host.run_onnx_inference = [sandbox](const std::string& request) {
      return RunImportHelper(sandbox, request);
    };
  }
  return host;
}

// The repository of `options` and its mode; null without a repository.
absl::StatusOr<std::unique_ptr<ModelRepository>> MakeModelRepository(
    const ServingCoreOptions& options, HostManager* host) {
  if (options.model_repository.empty()) {
    if (options.model_control_mode != ModelControlMode::kNone) {
      return absl::InvalidArgumentError(
          "--model_control_mode needs --model_repository");
    }
    return nullptr;
  }
  if (options.repository_poll <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--repository_poll_secs must be positive");
  }
  // A repository that is not there is a deployment error, not an empty one.
  if (absl::StatusOr<std::vector<RepositoryModel>> scan =
          ScanModelRepository(options.model_repository);
      !scan.ok()) {
    return absl::Status(
        scan.status().code(),
        absl::StrCat("--model_repository: ", scan.status().message()));
  }
  return std::make_unique<ModelRepository>(
      host, ModelRepositoryOptions{options.model_repository,
                                   options.model_control_mode});
}

void SyncRepository(ModelRepository& repository) {
  const absl::Time start = absl::Now();
  absl::StatusOr<RepositorySyncReport> report = repository.Sync();
  if (!report.ok()) {
    GLINT_LOG_ERROR("model repository: {}", report.status().ToString());
    return;
  }
  if (report->loaded + report->reloaded + report->unloaded + report->failed ==
      0) {
    return;  // A poll that found nothing new says nothing.
  }
  GLINT_LOG_INFO(
      "model repository {}: {} loaded, {} reloaded, {} unloaded, {} failed, "
      "{} unchanged in {}",
      repository.options().dir, report->loaded, report->reloaded,
      report->unloaded, report->failed, report->unchanged,
      absl::FormatDuration(absl::Now() - start));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServingCore>> ServingCore::Create(
    ServingCoreOptions options) {
  std::unique_ptr<ServingCore> core(new ServingCore(std::move(options)));
  // A failed step leaves the core to its destructor, which shuts down
  // whatever was built.
  GLINT_RETURN_IF_ERROR(core->Build());
  return core;
}

ServingCore::ServingCore(ServingCoreOptions options)
    : options_(std::move(options)) {}

ServingCore::~ServingCore() {
  Shutdown();
  if (loading_thread_.joinable()) loading_thread_.join();
  if (poll_thread_.joinable()) poll_thread_.join();
}

absl::Status ServingCore::Build() {
  absl::StatusOr<std::vector<DeviceConfig>> configs =
      ParseDeviceSpec(options_.devices);
  if (!configs.ok()) {
    return absl::Status(configs.status().code(),
                        absl::StrCat("--devices: ", configs.status().message()));
  }
  ShareHostCores(static_cast<int>(std::thread::hardware_concurrency()),
                 &*configs);
  GLINT_ASSIGN_OR_RETURN(HostManagerOptions host,
                         MakeHostManagerOptions(options_, stopping_));
  if (!options_.store_dir.empty()) {
    absl::StatusOr<std::unique_ptr<NetworkStore>> opened =
        NetworkStore::Open(options_.store_dir);
    if (!opened.ok()) {
      return absl::Status(opened.status().code(),
                          absl::StrCat("--store_dir: ",
                                       opened.status().message()));
    }
    store_ = *std::move(opened);
    journal_ = std::make_unique<StoreJournal>(store_.get());
    host.journal = journal_.get();
  }
  absl::StatusOr<std::unique_ptr<HostManager>> created =
      HostManager::CreateFromConfigs(std::move(host), *configs);
  if (!created.ok()) {
    return absl::Status(created.status().code(),
                        absl::StrCat("cannot create the devices: ",
                                     created.status().message()));
  }
  host_manager_ = *std::move(created);
  GLINT_ASSIGN_OR_RETURN(repository_,
                         MakeModelRepository(options_, host_manager_.get()));
  return absl::OkStatus();
}

std::string ServingCore::store_dir() const {
  return store_ != nullptr ? store_->dir() : std::string();
}

void ServingCore::StartLoading(std::function<void()> on_loaded) {
  loading_started_.store(true);
  loading_thread_ = std::thread([this, on_loaded = std::move(on_loaded)] {
    SetCurrentThreadName("glint-restore");
    if (store_ != nullptr) {
      const absl::Time start = absl::Now();
      const RestoreReport report = RestoreNetworks(*store_, *host_manager_);
      GLINT_LOG_INFO(
          "restored {} networks from {} in {} ({} unavailable, {} unreadable)",
          report.restored, store_->dir(),
          absl::FormatDuration(absl::Now() - start), report.unavailable,
          report.unreadable);
    }
    // The repository's models load before the daemon says it is ready:
    // a replica behind a load balancer gets runs only once it serves them.
    if (repository_ != nullptr &&
        repository_->options().mode != ModelControlMode::kExplicit) {
      SyncRepository(*repository_);
    }
    if (!stop_polling_.HasBeenNotified() && on_loaded) on_loaded();
    loaded_.Notify();
  });
  // Poll mode: rescans until shutdown (a scan in progress finishes first).
  if (repository_ != nullptr &&
      repository_->options().mode == ModelControlMode::kPoll) {
    poll_thread_ = std::thread([this] {
      SetCurrentThreadName("glint-repo-poll");
      loaded_.WaitForNotification();
      while (!stop_polling_.WaitForNotificationWithTimeout(
          options_.repository_poll)) {
        SyncRepository(*repository_);
      }
    });
  }
}

void ServingCore::WaitUntilLoaded() {
  if (loading_started_.load()) loaded_.WaitForNotification();
}

absl::Status ServingCore::LoadModel(const OipModelLoad& load) {
  return LoadRepositoryModel(*host_manager_, repository_.get(), load);
}

absl::Status ServingCore::UnloadModel(const std::string& name) {
  return UnloadRepositoryModel(*host_manager_, repository_.get(), name);
}

void ServingCore::Shutdown() {
  {
    absl::MutexLock lock(&shutdown_mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  stop_polling_.Notify();  // Once: shut_down_ guards this body.
  stopping_->Cancel();
  if (host_manager_ != nullptr) host_manager_->Shutdown();
}

}  // namespace glint
