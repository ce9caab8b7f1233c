#include "runtime/host_manager.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "devices/device_manager.h"
#include "devices/device_registry.h"
#include "devices/fault/fault_injecting_device.h"
#include "executor/executor.h"
#include "runtime/admission.h"
#include "runtime/batcher.h"
#include "runtime/device_monitor.h"
#include "runtime/network_batcher.h"
#include "runtime/network_builder.h"
#include "runtime/network_entry.h"
#include "runtime/plan_cache.h"
#include "runtime/reprovision.h"
#include "runtime/request_binding.h"
#include "runtime/statistics.h"

namespace glint {
namespace {

// `entry`'s statistics now, with its plans' run-time kernel builds.
NetworkStatistics Snapshot(NetworkEntry& entry, const NetworkInfo& info) {
  NetworkStatistics stats = entry.stats.Snapshot(info);
  const ShapeBuildCounts builds = CountShapeBuilds(entry);
  stats.shape_builds = builds.builds;
  stats.shape_build_time = builds.time;
  return stats;
}

// Borrowed views of the devices for the parts that do not own them.
template <typename T>
std::vector<T*> Borrow(const std::vector<std::unique_ptr<DeviceManager>>& all) {
  std::vector<T*> devices;
  for (const auto& d : all) devices.push_back(d.get());
  return devices;
}

std::vector<int> DeviceIds(
    const std::vector<std::unique_ptr<DeviceManager>>& devices) {
  std::vector<int> ids;
  for (const auto& d : devices) ids.push_back(d->id());
  return ids;
}

// Ends a run (HostManager::FinishRun): called exactly once, with the run's
// result once it ran, or with the refusal if it never started (then it
// holds no admission slot).
using RunFinish =
    std::function<void(absl::StatusOr<std::vector<Tensor>>, bool started)>;

// Starts an admitted run on the executor; a run that Shutdown took out of
// the admission queue (`admitted` false) is refused instead.
void StartRun(const Executor& executor, const ExecutableNetwork& executable,
              ExecutionRequest request, std::shared_ptr<RunFinish> finish,
              TraceSlice* queued, bool admitted) {
  if (queued != nullptr) queued->end = absl::Now();
  if (!admitted) {
    (*finish)(absl::UnavailableError("the host manager is shutting down"),
              false);
    return;
  }
  executor.Run(executable, std::move(request),
               [finish](absl::StatusOr<std::vector<Tensor>> result) {
                 (*finish)(std::move(result), true);
               });
}

// Steps 3 and 4 of an unbatched run: admission (an active slot and one of
// the plan's execution slots: no more runs in flight than it has device
// memory reserved for, ExecutableNetwork::executions), then the start, now
// or once a running run ends. A refusal ends the run through `finish`.
void AdmitAndStart(
    AdmissionQueue& admission, const Executor& executor,
    std::shared_ptr<NetworkEntry> entry,
    std::shared_ptr<std::shared_ptr<ExecutableNetwork>> executable,
    std::shared_ptr<ExecutionRequest> request,
    std::shared_ptr<RunMeasures> measures, int priority, TraceSlice* queued,
    std::shared_ptr<RunFinish> finish) {
  measures->queued = MonotonicNow();
  entry->stats.AddQueued(1);
  const ExecutionSlots slots{executable->get(), (*executable)->executions};
  bool* waited_for_slot = &measures->waited_for_slot;
  absl::Status admitted = admission.Admit(
      priority, slots,
      [&executor, executable, entry, measures, request = std::move(request),
       finish, queued](bool admitted) {
        entry->stats.AddQueued(-1);
        if (admitted) {
          measures->admitted = MonotonicNow();
          entry->stats.AddInFlight(1);
          if (measures->waited_for_slot) {
            entry->stats.RecordSlotWait(measures->admitted - measures->queued);
          }
        }
        StartRun(executor, **executable, std::move(*request), finish, queued,
                 admitted);
      },
      waited_for_slot);
  if (!admitted.ok()) {
    entry->stats.AddQueued(-1);
    (*finish)(admitted, false);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<HostManager>> HostManager::Create(
    HostManagerOptions options,
    std::vector<std::unique_ptr<DeviceManager>> devices) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("a HostManager needs a device");
  }
  if (options.max_active_requests < 1 || options.max_queue_size < 0 ||
      options.priority_aging < 1 || options.max_concurrent_executions < 1) {
    return absl::InvalidArgumentError(
        "max_active_requests, priority_aging and max_concurrent_executions "
        "must be positive and max_queue_size not negative");
  }
  return std::unique_ptr<HostManager>(
      new HostManager(options, std::move(devices)));
}

absl::StatusOr<std::unique_ptr<HostManager>> HostManager::CreateFromConfigs(
    HostManagerOptions options, const std::vector<DeviceConfig>& configs) {
  RegisterBuiltinDeviceTypes();
  // The fault-injecting type too, for drills (--devices=faulty:...).
  GLINT_RETURN_IF_ERROR(
      RegisterFaultInjectingDeviceType(DeviceRegistry::Global()));
  GLINT_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<DeviceManager>> devices,
                         DeviceRegistry::Global().CreateAll(configs));
  return Create(options, std::move(devices));
}

HostManager::HostManager(HostManagerOptions options,
                         std::vector<std::unique_ptr<DeviceManager>> devices)
    : options_(options),
      devices_(std::move(devices)),
      builder_(std::make_unique<NetworkBuilder>(
          Borrow<DeviceManager>(devices_), options_.run_onnx_inference,
          options_.max_concurrent_executions)),
      executor_(std::make_unique<Executor>()),
      admission_(std::make_unique<AdmissionQueue>(
          AdmissionOptions{options_.max_active_requests,
                           options_.max_queue_size,
                           options_.priority_aging})),
      device_compute_(DeviceIds(devices_)),
      batch_timer_(std::make_unique<BatchTimer>()) {
  monitor_ = std::make_unique<DeviceMonitor>(
      Borrow<const DeviceManager>(devices_),
      [this](const std::vector<const DeviceManager*>& dead,
             const std::string& names) { ReprovisionOnto(dead, names); });
}

HostManager::~HostManager() {
  Shutdown();
  monitor_->Stop();
  // No batcher wakes up any more (they are closed, their requests failed).
  batch_timer_.reset();
  absl::flat_hash_map<std::string, std::shared_ptr<NetworkEntry>> networks;
  {
    absl::MutexLock lock(&mu_);
    networks.swap(networks_);
  }
  // Evict every function now, while the devices exist: a finished run's
  // callback, still unwinding on some device's thread, may hold the last
  // reference to an entry, and must not be the one to touch a device that
  // is already gone. No run is active (Shutdown waited), so nothing uses
  // the executables any more.
  for (auto& [name, entry] : networks) {
    absl::MutexLock lock(&entry->mu);
    entry->executable.reset();
    entry->smaller.clear();
  }
  networks.clear();
}

absl::StatusOr<NetworkInfo> HostManager::AddNetwork(
    absl::string_view name, const ModelBytes& onnx_model,
    const AddNetworkOptions& options) {
  return Add(name, onnx_model, options, AddMode::kAdd);
}

absl::StatusOr<NetworkInfo> HostManager::AddNetworkFromFile(
    absl::string_view name, const std::string& path,
    const AddNetworkOptions& options) {
  std::error_code ec;
  const std::filesystem::file_status type = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(type) &&
      !std::filesystem::is_regular_file(type) &&
      !std::filesystem::is_directory(type)) {
    // A pipe or a device: nothing to map (and opening it twice would lose
    // what its writer sent); read it whole.
    std::ifstream in(path, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (!in.good() && !in.eof()) {
      return absl::DataLossError(absl::StrCat("cannot read '", path, "'"));
    }
    return Add(name, bytes.str(), options, AddMode::kAdd);
  }
  GLINT_ASSIGN_OR_RETURN(ModelBytes model, ModelBytes::MapFile(path));
  return Add(name, model, options, AddMode::kAdd);
}

absl::StatusOr<NetworkInfo> HostManager::ReplaceNetwork(
    absl::string_view name, const ModelBytes& onnx_model,
    const AddNetworkOptions& options) {
  return Add(name, onnx_model, options, AddMode::kReplace);
}

void HostManager::ReprovisionOnto(
    const std::vector<const DeviceManager*>& dead, const std::string& names) {
  // Every network still on a dead device, also one placed there in the
  // moment between the death and its discovery.
  std::vector<std::shared_ptr<NetworkEntry>> affected;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, entry] : networks_) {
      absl::MutexLock entry_lock(&entry->mu);
      if (UsesAnyOf(*entry, dead)) affected.push_back(entry);
    }
  }
  for (const auto& entry : affected) Reprovision(entry, names);
}

void HostManager::Reprovision(const std::shared_ptr<NetworkEntry>& entry,
                              const std::string& failed_device) {
  absl::StatusOr<RebuiltNetwork> rebuilt =
      RebuildOnHealthyDevices(*entry, *builder_, options_.journal);
  std::vector<std::shared_ptr<ExecutableNetwork>> old;
  {
    absl::MutexLock lock(&mu_);
    absl::MutexLock entry_lock(&entry->mu);
    old.push_back(std::move(entry->executable));
    for (auto& [size, executable] : entry->smaller) {
      old.push_back(std::move(executable));
    }
    entry->smaller.clear();
    if (rebuilt.ok()) {
      entry->executable = std::move(rebuilt->executable);
      entry->smaller = std::move(rebuilt->smaller);
      entry->info = std::move(rebuilt->info);
      GLINT_LOG_INFO(
          "network '{}' re-provisioned after {} failed ({} replicas)",
          entry->info.name, failed_device, entry->info.replicas);
    } else {
      entry->info.unavailable_reason =
          absl::StrCat("device ", failed_device,
                       " failed and the network fits no healthy devices: ",
                       rebuilt.status().message());
      GLINT_LOG_ERROR("network '{}' is unavailable: {}", entry->info.name,
                      entry->info.unavailable_reason);
    }
  }
  Unpark(*entry);
  // Runs already on the old plan end (those on the dead device fail fast);
  // then its partitions are unloaded.
  AwaitUnused(*entry, old);
}

absl::StatusOr<NetworkInfo> HostManager::RestoreNetwork(
    absl::string_view name, const ModelBytes& onnx_model,
    const AddNetworkOptions& options) {
  absl::StatusOr<NetworkInfo> info =
      Add(name, onnx_model, options, AddMode::kRestore);
  if (!info.ok() && !absl::IsAlreadyExists(info.status())) {
    // Its own error is the one to return; this fails only as Add did.
    RestoreUnavailable(name, info.status().message()).IgnoreError();
  }
  return info;
}

absl::Status HostManager::RestoreUnavailable(absl::string_view name,
                                             absl::string_view reason) {
  if (name.empty() || !IsValidUtf8(name)) {
    return absl::InvalidArgumentError(absl::StrCat("network name '",
                                                   Clip(absl::CHexEscape(name)),
                                                   "' is empty or not UTF-8"));
  }
  auto entry = std::make_shared<NetworkEntry>();
  entry->info.name = std::string(name);
  entry->info.unavailable_reason = std::string(reason);
  entry->journaled = options_.journal != nullptr;
  absl::MutexLock lock(&mu_);
  if (networks_.contains(name) || adding_.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("a network named '", Clip(name), "' already exists"));
  }
  networks_[std::string(name)] = std::move(entry);
  return absl::OkStatus();
}

absl::StatusOr<NetworkInfo> HostManager::Add(absl::string_view name,
                                             const ModelBytes& onnx_model,
                                             const AddNetworkOptions& options,
                                             AddMode mode) {
  if (name.empty()) {
    return absl::InvalidArgumentError("a network needs a name");
  }
  if (!IsValidUtf8(name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "network name '", Clip(absl::CHexEscape(name)), "' is not UTF-8"));
  }
  GLINT_RETURN_IF_ERROR(ValidateDynamicBatching(options.batching));
  GLINT_RETURN_IF_ERROR(Reserve(name, mode));
  std::optional<CachedPlan> new_plan;
  absl::StatusOr<std::shared_ptr<NetworkEntry>> entry =
      BuildEntry(name, onnx_model, options, mode, &new_plan);
  // Durable before it is visible: once a client could see it, a restart
  // must not lose it. The name is still reserved, so no remove or add of
  // the same name interleaves with the journal.
  if (entry.ok() && mode == AddMode::kAdd && options_.journal != nullptr) {
    absl::Status s =
        options_.journal->Record(name, onnx_model, (*entry)->options);
    onnx_model.Evict();  // In case the journal did not.
    if (!s.ok()) {
      absl::MutexLock lock(&(*entry)->mu);
      (*entry)->executable.reset();
      (*entry)->smaller.clear();
      entry = s;
    }
  }
  // The plan only once the network is recorded: a failed add (a full disk,
  // say) leaves the journal as it was.
  if (entry.ok() && new_plan.has_value()) {
    // A plan not kept costs the next restart time, nothing else.
    if (absl::Status s = options_.journal->SavePlan(name, *new_plan); !s.ok()) {
      GLINT_LOG_WARN("cannot keep the plan of '{}': {}", Clip(name),
                     s.ToString());
    }
  }
  absl::ReleasableMutexLock lock(&mu_);
  adding_.erase(std::string(name));
  if (!entry.ok()) {
    GLINT_LOG_INFO("AddNetwork '{}' failed: {}", std::string(name),
                   entry.status().ToString());
    return entry.status();
  }
  std::shared_ptr<NetworkEntry> replaced =
      std::exchange(networks_[std::string(name)], *entry);
  const NetworkInfo info = (*entry)->info;
  GLINT_LOG_INFO("{} network '{}' ({} partitions)",
                 replaced != nullptr ? "replaced" : "added", std::string(name),
                 info.partitions.size());
  lock.Release();
  // New runs find the new entry from here on; those that started on the
  // old one finish on it, then its functions are evicted.
  if (replaced != nullptr) Drain(*replaced);
  return info;
}

absl::Status HostManager::Reserve(absl::string_view name, AddMode mode) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) {
    return absl::UnavailableError("the host manager is shutting down");
  }
  auto it = networks_.find(name);
  if (adding_.contains(name) ||
      (it != networks_.end() &&
       (mode != AddMode::kReplace || it->second->journaled))) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a network named '", Clip(name), "' already exists",
        mode == AddMode::kReplace && !adding_.contains(name)
            ? " and is journaled (added through AddNetwork): "
              "ReplaceNetwork replaces only networks it added"
            : ""));
  }
  adding_[std::string(name)] = true;
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<NetworkEntry>> HostManager::BuildEntry(
    absl::string_view name, const ModelBytes& onnx_model,
    const AddNetworkOptions& options, AddMode mode,
    std::optional<CachedPlan>* new_plan) {
  auto entry = std::make_shared<NetworkEntry>();
  // The plan cache: what is kept for this name, whether it matches, and
  // what the policy lets this add reuse. ReplaceNetwork's networks have no
  // journal: their source (glintd's model repository) is their durable
  // copy.
  NetworkJournal* const journal =
      mode == AddMode::kReplace ? nullptr : options_.journal;
  entry->journaled = journal != nullptr;
  PlanChoice choice;
  std::string key;
  if (journal != nullptr) {
    key = PlanKey(onnx_model.view(), options, builder_->HealthyDevices());
    onnx_model.Evict();  // Digested; the build reads it again.
    GLINT_ASSIGN_OR_RETURN(
        choice, ChoosePlan(name, key, options.reuse, journal->LoadPlan(name)));
  }
  CachedPlan made;
  absl::StatusOr<std::unique_ptr<ExecutableNetwork>> built;
  // A device that dies while the network is loading fails the load
  // UNAVAILABLE: plan again on the devices still healthy, as long as each
  // failure lost a device (so at most once per device).
  for (size_t before = builder_->HealthyCount();;) {
    built = builder_->Build(name, onnx_model, options, &entry->info,
                            choice.reuse_types ? &*choice.cached : nullptr,
                            choice.reuse_plan ? &*choice.cached : nullptr,
                            journal != nullptr ? &made : nullptr);
    if (built.ok() || !absl::IsUnavailable(built.status())) break;
    const size_t now = builder_->HealthyCount();
    if (now >= before) break;
    before = now;
  }
  GLINT_ASSIGN_OR_RETURN(std::unique_ptr<ExecutableNetwork> executable,
                         std::move(built));
  if (journal != nullptr && !choice.reuse_plan) {
    made.key = key;
    *new_plan = std::move(made);
  }
  // A journal that keeps the model gives it back for re-provisioning;
  // holding it here too would keep a second copy of the weights for the
  // network's lifetime.
  if (journal == nullptr || !journal->KeepsModels()) {
    entry->model = std::string(onnx_model.view());
    onnx_model.Evict();  // Copied.
  }
  // The bounds memory was reserved for, defaults included, become the
  // network's: what is journaled, and what a restart or a rebuild after a
  // device failure reserves again, so that a request admitted once is
  // admitted after.
  entry->options = options;
  for (const DynamicDim& d : entry->info.dynamic_dims) {
    if (!d.name.empty()) entry->options.max_dims[d.Key()] = d.max;
  }
  std::map<int, std::shared_ptr<ExecutableNetwork>> smaller;
  if (options.batching.max_batch_size > 0) {
    GLINT_ASSIGN_OR_RETURN(
        smaller, builder_->BuildSmaller(name, onnx_model, entry->options));
    BatchRunContext context;
    context.executor = executor_.get();
    context.admission = admission_.get();
    context.shutdown = shutdown_token_;
    context.timer = batch_timer_.get();
    context.max_queue_size = options_.max_queue_size;
    context.executed = [this](const RunTimings& timings) {
      device_compute_.Record(timings.partition_device, timings.partition_ns);
    };
    context.unavailable = [this] { monitor_->RequestCheck(); };
    GLINT_ASSIGN_OR_RETURN(entry->batcher,
                           MakeNetworkBatcher(entry.get(), std::move(context)));
  }
  absl::MutexLock lock(&entry->mu);
  entry->executable = std::move(executable);
  entry->smaller = std::move(smaller);
  return entry;
}

absl::Status HostManager::RemoveNetwork(absl::string_view name) {
  std::shared_ptr<NetworkEntry> entry;
  {
    absl::MutexLock lock(&mu_);
    auto it = networks_.find(name);
    if (it == networks_.end() || adding_.contains(name)) {
      return absl::NotFoundError(
          absl::StrCat("no network named '", Clip(name), "'"));
    }
    if (options_.journal == nullptr || !it->second->journaled) {
      entry = std::move(it->second);
      networks_.erase(it);
    } else {
      // Held like a name being added while the journal forgets it: a
      // concurrent add or remove of the same name waits its turn by
      // failing, and runs go on until the network leaves the map.
      adding_[std::string(name)] = true;
    }
  }
  if (entry == nullptr) {
    const absl::Status erased = options_.journal->Erase(name);
    absl::MutexLock lock(&mu_);
    adding_.erase(std::string(name));
    if (!erased.ok()) {
      return absl::Status(erased.code(),
                          absl::StrCat("cannot remove network '", Clip(name),
                                       "': ", erased.message()));
    }
    auto it = networks_.find(name);
    entry = std::move(it->second);
    networks_.erase(it);
  }
  Drain(*entry);
  return absl::OkStatus();
}

std::vector<NetworkInfo> HostManager::ListNetworks() const {
  std::vector<NetworkInfo> list;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, entry] : networks_) list.push_back(entry->info);
  }
  std::sort(list.begin(), list.end(),
            [](const NetworkInfo& a, const NetworkInfo& b) {
              return a.name < b.name;
            });
  return list;
}

absl::StatusOr<NetworkInfo> HostManager::GetNetwork(
    absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = networks_.find(name);
  if (it == networks_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no network named '", Clip(name), "'"));
  }
  return it->second->info;
}

absl::StatusOr<NetworkStatistics> HostManager::GetStatistics(
    absl::string_view name) const {
  std::shared_ptr<NetworkEntry> entry;
  NetworkInfo info;
  {
    absl::MutexLock lock(&mu_);
    auto it = networks_.find(name);
    if (it == networks_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no network named '", Clip(name), "'"));
    }
    entry = it->second;
    info = entry->info;
  }
  // Outside mu_: a snapshot sorts the recent values of every series.
  return Snapshot(*entry, info);
}

std::vector<NetworkStatistics> HostManager::GetAllStatistics() const {
  std::vector<std::pair<std::shared_ptr<NetworkEntry>, NetworkInfo>> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, entry] : networks_) {
      entries.emplace_back(entry, entry->info);
    }
  }
  std::vector<NetworkStatistics> all;
  for (const auto& [entry, info] : entries) {
    all.push_back(Snapshot(*entry, info));
  }
  std::sort(all.begin(), all.end(),
            [](const NetworkStatistics& a, const NetworkStatistics& b) {
              return a.name < b.name;
            });
  return all;
}

std::vector<DeviceStatistics> HostManager::GetDeviceStatistics() const {
  std::vector<DeviceStatistics> all;
  for (const auto& d : devices_) {
    DeviceStatistics stats;
    stats.device = d->GetDeviceInfo();
    stats.compute = device_compute_.Snapshot(d->id());
    all.push_back(std::move(stats));
  }
  return all;
}

std::vector<DeviceInfo> HostManager::GetDevices() const {
  std::vector<DeviceInfo> infos;
  for (const auto& d : devices_) infos.push_back(d->GetDeviceInfo());
  return infos;
}


void HostManager::RunNetworkAsync(absl::string_view name,
                                  std::vector<NamedTensor> inputs,
                                  const RunOptions& options, RunCallback done) {
  auto measures = std::make_shared<RunMeasures>();
  measures->arrived = MonotonicNow();
  // The run's reference to the executable it runs on, dropped under
  // entry->mu when the run ends (see NetworkEntry::executable).
  auto executable = std::make_shared<std::shared_ptr<ExecutableNetwork>>();
  // 1. Find the network. A run parked for a re-provisioned plan takes its
  // arguments along to start again.
  absl::StatusOr<std::shared_ptr<NetworkEntry>> found = FindNetworkForRun(
      name, executable.get(), [&]() -> std::function<void()> {
        return [this, name = std::string(name), inputs = std::move(inputs),
                options, done = std::move(done)]() mutable {
          RunNetworkAsync(name, std::move(inputs), options, std::move(done));
        };
      });
  // Callbacks run without locks held: they may call back into the manager.
  if (!found.ok()) {
    done(found.status());
    return;
  }
  if (*found == nullptr) return;  // Parked.
  std::shared_ptr<NetworkEntry> entry = *std::move(found);

  // 2. Check the inputs (and requested outputs) against the network's.
  absl::StatusOr<std::shared_ptr<ExecutionRequest>> request =
      BindRequest(entry->info, std::move(inputs), options, shutdown_token_);
  if (!request.ok()) {
    entry->stats.RecordFailure(MonotonicNow() - measures->arrived);
    LeaveNetwork(*entry, *executable);
    done(request.status());
    return;
  }
  // Measured for the statistics; shares the measures' allocation.
  (*request)->timings =
      std::shared_ptr<RunTimings>(measures, &measures->timings);

  if (entry->batcher != nullptr) {
    EnqueueBatched(std::move(entry), std::move(executable),
                   *std::move(request), std::move(measures), options.priority,
                   std::move(done));
    return;
  }

  // 5. Finish: every path from here ends the run through it.
  auto finish = std::make_shared<RunFinish>(
      [this, entry, executable, measures, outputs = (*request)->outputs,
       done = std::move(done)](absl::StatusOr<std::vector<Tensor>> result,
                               bool started) {
        FinishRun(*entry, *executable, outputs, std::move(result), started,
                  *measures, done);
      });

  // 3. Admit: 4. start the run now, or once a running one ends.
  TraceSlice* queued = TraceAdmission(options);
  AdmitAndStart(*admission_, *executor_, std::move(entry),
                std::move(executable), *std::move(request),
                std::move(measures), options.priority, queued,
                std::move(finish));
}

absl::StatusOr<std::shared_ptr<NetworkEntry>> HostManager::FindNetworkForRun(
    absl::string_view name, std::shared_ptr<ExecutableNetwork>* executable,
    absl::FunctionRef<std::function<void()>()> park) {
  std::shared_ptr<NetworkEntry> entry;
  absl::Status refused;
  bool parked = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = networks_.find(name);
    if (shutting_down_) {
      refused = absl::UnavailableError("the host manager is shutting down");
    } else if (it == networks_.end()) {
      refused = absl::NotFoundError(
          absl::StrCat("no network named '", Clip(name), "'"));
    } else {
      // Counted while the network is still in the map: RemoveNetwork, which
      // erases it under mu_ and then waits for in_flight to drain, can
      // never evict the executable under a run that found it.
      absl::MutexLock entry_lock(&it->second->mu);
      if (it->second->executable == nullptr) {
        refused = absl::UnavailableError(absl::StrCat(
            "network '", Clip(name),
            "' is unavailable: ", it->second->info.unavailable_reason));
      } else if (NoHealthyReplica(*it->second->executable)) {
        // A device it needs has died and the monitor is (or will be, once
        // asked) re-provisioning it: the run waits for the new plan rather
        // than fail on the dead device too.
        it->second->parked.push_back(park());
        parked = true;
      } else {
        // Through `it`, whose mu is the one held (the analysis cannot see
        // that `entry` aliases it).
        *executable = it->second->executable;
        ++it->second->in_flight;
        entry = it->second;
      }
    }
  }
  if (!refused.ok()) return refused;
  if (parked) monitor_->RequestCheck();
  return entry;
}

void HostManager::FinishRun(NetworkEntry& entry,
                            std::shared_ptr<ExecutableNetwork>& executable,
                            const std::vector<int>& outputs,
                            absl::StatusOr<std::vector<Tensor>> result,
                            bool started, const RunMeasures& measures,
                            const RunCallback& done) {
  // Recorded before the caller hears of the run, so that statistics read
  // after an answer count it.
  if (RecordRunEnd(entry, measures, result.ok(), started)) {
    device_compute_.Record(measures.timings.partition_device,
                           measures.timings.partition_ns);
  }
  absl::StatusOr<std::vector<NamedTensor>> named =
      NameOutputs(entry.info, outputs, std::move(result));
  // Before the plan may go: its address keys its execution slots.
  if (started) admission_->Release(executable.get());
  LeaveNetwork(entry, executable);
  // A device that fails runs may have died: look at the devices.
  if (!named.ok() &&
      named.status().code() == absl::StatusCode::kUnavailable) {
    monitor_->RequestCheck();
  }
  done(std::move(named));
}

void HostManager::EnqueueBatched(
    std::shared_ptr<NetworkEntry> entry,
    std::shared_ptr<std::shared_ptr<ExecutableNetwork>> executable,
    std::shared_ptr<ExecutionRequest> request,
    std::shared_ptr<RunMeasures> measures, int priority, RunCallback done) {
  // Each request ends as a run that was never admitted itself (its batch
  // holds the admission slot); waiting to be batched counts as queued.
  measures->batched = true;
  measures->queued = MonotonicNow();
  entry->stats.AddQueued(1);
  auto finish = std::make_shared<RunFinish>(
      [this, entry, executable, measures, outputs = request->outputs,
       done = std::move(done)](absl::StatusOr<std::vector<Tensor>> result,
                               bool started) {
        FinishRun(*entry, *executable, outputs, std::move(result), started,
                  *measures, done);
      });
  BatchRequest batched;
  batched.inputs = std::move(request->inputs);
  batched.outputs = request->outputs;
  batched.deadline = request->deadline;
  batched.cancel = request->cancel;
  batched.priority = priority;
  batched.trace = request->trace;
  batched.profile = request->profile;
  batched.done = [finish, measures](absl::StatusOr<std::vector<Tensor>> result,
                                    const BatchMeasures& batch) {
    measures->batch_admitted = batch.admitted;
    measures->admitted = batch.admitted_at;
    measures->timings = batch.timings;
    (*finish)(std::move(result), /*started=*/false);
  };
  absl::Status queued = entry->batcher->Enqueue(std::move(batched));
  if (!queued.ok()) (*finish)(queued, false);
}

absl::StatusOr<std::vector<NamedTensor>> HostManager::RunNetwork(
    absl::string_view name, std::vector<NamedTensor> inputs,
    const RunOptions& options) {
  absl::Notification finished;
  absl::StatusOr<std::vector<NamedTensor>> result;
  RunNetworkAsync(name, std::move(inputs), options,
                  [&](absl::StatusOr<std::vector<NamedTensor>> r) {
                    result = std::move(r);
                    finished.Notify();
                  });
  finished.WaitForNotification();
  return result;
}

void HostManager::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
  }
  shutdown_token_->Cancel();
  admission_->Shutdown();  // Refuses the queued runs.
  std::vector<std::shared_ptr<NetworkEntry>> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, entry] : networks_) entries.push_back(entry);
  }
  for (const auto& entry : entries) {
    Unpark(*entry);  // Refused now.
    if (entry->batcher != nullptr) {
      entry->batcher->Close(
          absl::UnavailableError("the host manager is shutting down"));
    }
  }
  admission_->WaitIdle();
}

}  // namespace glint
