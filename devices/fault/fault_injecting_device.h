// A DeviceManager that wraps another and injects faults on demand, in the
// spirit of LevelDB's EnvWrapper/SpecialEnv: tests of the executor, the
// provisioner and the devices themselves use it to make allocation fail,
// make one launch fail or hang, slow launches down, or kill the device.
#ifndef GLINT_DEVICES_FAULT_FAULT_INJECTING_DEVICE_H_
#define GLINT_DEVICES_FAULT_FAULT_INJECTING_DEVICE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/device_info.h"
#include "devices/device_manager.h"
#include "devices/device_registry.h"

namespace glint {

// Which faults to inject. The default injects none (pass-through).
struct FaultOptions {
  // Allocation through the wrapper fails with RESOURCE_EXHAUSTED once the
  // bytes allocated through it since the limit was set would exceed this.
  // Cumulative (frees are not credited back): deterministic whatever the
  // order of frees. Unset: no limit.
  std::optional<uint64_t> fail_alloc_after_bytes;
  // The k-th Launch call (1-based, counted over the device's lifetime)
  // fails on its stream with INTERNAL "injected launch failure" instead of
  // running. 0: none.
  int64_t fail_launch = 0;
  // The k-th Launch call blocks its stream until the device is stopped or
  // killed, then fails with UNAVAILABLE. 0: none.
  int64_t hang_launch = 0;
  // The k-th Launch call kills the device: it fails with UNAVAILABLE, and
  // so does every later call, as when a real accelerator falls off the bus
  // mid-run (work queued before it still drains). 0: never. For drills
  // through --devices.
  int64_t kill_at_launch = 0;
  // Every launch is preceded on its stream by an item that takes this long
  // (a simulated slow device), after the stream's work check (a run no
  // longer wanted skips it). Cut short, with UNAVAILABLE, by Stop/Kill.
  absl::Duration launch_delay = absl::ZeroDuration();
  // The device is dead from the start (as after Kill()).
  bool dead = false;
};

// Forwards everything to the wrapped device, injecting the faults of its
// FaultOptions. Buffers, streams and loaded functions are the wrapped
// device's own, so they interoperate with it and its peers (peer copies).
// Thread-safe: the fault setters may be called while work runs.
//
// Allocation accounting covers what goes through the wrapper: Allocate,
// Load (constants + the reserved arena), CopyToDevice into a tensor with no
// buffer (the wrapper allocates it when the copy runs), CopyFromPeer and
// the statically shaped outputs of a launch (charged when they run, in
// stream order). Allocations the wrapped device makes on its own beyond
// these (extra arenas for concurrent launches, dynamically shaped values)
// are not charged.
//
// Injected errors travel as ordinary sticky stream errors: a failed launch
// fails its stream, or only its view of a shared stream (ClearError() makes
// it usable again), and memory is returned as usual when buffers are
// destroyed. A hang or delay is compute: on a shared stream it holds the
// device's compute thread (every view's launches wait), as a hung kernel
// holds up a GPU.
class FaultInjectingDevice : public DeviceManager {
 public:
  static constexpr absl::string_view kTypeName = "faulty";

  // Wraps `inner`, which must be non-null; applies `options` (killing the
  // device at once if options.dead).
  FaultInjectingDevice(std::unique_ptr<DeviceManager> inner,
                       FaultOptions options = {});
  // Stops the device (releasing a hung launch) before destroying `inner`.
  ~FaultInjectingDevice() override;

  // Parses the fault parameters of a "faulty" DeviceConfig:
  //   inner=TYPE                   the wrapped type (default "sim")
  //   fail_alloc_after_bytes=N     FaultOptions::fail_alloc_after_bytes
  //   fail_launch=K, hang_launch=K FaultOptions::fail_launch/hang_launch
  //   kill_at_launch=K             FaultOptions::kill_at_launch
  //   launch_delay_ms=D            FaultOptions::launch_delay
  //   dead=true|false              FaultOptions::dead
  // and returns the wrapped device's config: `config` with type=TYPE and
  // the fault parameters removed (everything else is passed on).
  // INVALID_ARGUMENT for a malformed fault parameter.
  static absl::StatusOr<DeviceConfig> ParseConfig(const DeviceConfig& config,
                                                  FaultOptions* options);

  // --- Fault control (thread-safe) ---------------------------------------
  // Sets the allocation limit and restarts the byte count from zero.
  void SetAllocationLimit(std::optional<uint64_t> bytes);
  void SetFailLaunch(int64_t k);
  void SetHangLaunch(int64_t k);
  void SetLaunchDelay(absl::Duration delay);
  // While held, each launch enqueued waits before it runs, holding the
  // device's compute thread as a hang does (copies and other runs' waits
  // go on), until Hold(false), Stop() or Kill() (then UNAVAILABLE). For
  // tests that need a device busy for as long as they look at the others.
  void Hold(bool held);
  // The device dies: the wrapped device is stopped (pending work fails with
  // UNAVAILABLE, a hung launch is released) and every later call fails fast
  // with UNAVAILABLE. Idempotent.
  void Kill();
  bool dead() const;

  // Bytes charged against the allocation limit so far, and Launch calls.
  uint64_t allocated_bytes() const;
  int64_t launch_count() const;
  // Launches that have run to their end successfully.
  int64_t finished_launches() const;
  // Waits until at least `n` launches have finished (true) or `timeout`
  // passes (false).
  bool AwaitFinishedLaunches(int64_t n, absl::Duration timeout) const;
  DeviceManager& inner() { return *inner_; }

  // --- DeviceManager -----------------------------------------------------
  int id() const override { return inner_->id(); }
  // Unhealthy (with why) once killed.
  DeviceInfo GetDeviceInfo() const override;
  bool healthy() const override { return !dead(); }
  const Backend& backend() const override { return inner_->backend(); }
  void Stop() override;

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(
      size_t bytes) override;
  uint64_t AvailableMemory() const override;
  // Forwarded (not charged, as the launches' run-time values it is for).
  absl::StatusOr<std::unique_ptr<LaunchReservation>> ReserveLaunchMemory(
      uint64_t bytes) override;

  Stream& default_stream() override { return inner_->default_stream(); }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream(int priority) override;
  absl::StatusOr<Stream*> AcquireStream() override;
  void ReleaseStream(Stream* stream) override;
  absl::StatusOr<std::unique_ptr<Stream>> OpenSharedStream(
      SharedStreamOptions options) override;

  void CopyToDevice(Stream& stream, const Tensor* src,
                    DeviceTensor* dst) override;
  void CopyToHost(Stream& stream, const DeviceTensor* src,
                  Tensor* dst) override;
  void CopyFromPeer(Stream& stream, const DeviceTensor* src,
                    DeviceTensor* dst) override;

  absl::StatusOr<std::unique_ptr<LoadedFunction>> Load(
      std::shared_ptr<const CompiledFunction> function) override;
  using DeviceManager::Launch;
  void Launch(Stream& stream, const LoadedFunction& function,
              std::vector<const DeviceTensor*> inputs,
              std::vector<DeviceTensor*> outputs,
              const LaunchOptions& options) override;

 private:
  // Charges `bytes` against the allocation limit (RESOURCE_EXHAUSTED if
  // over, and then nothing is charged).
  absl::Status Charge(uint64_t bytes, absl::string_view what)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Refund(uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // UNAVAILABLE if the device is dead or stopped.
  absl::Status CheckAlive() const ABSL_LOCKS_EXCLUDED(mu_);
  // Enqueues an item that fails `stream` with `status`.
  static void EnqueueFailure(Stream& stream, absl::Status status);

  const std::unique_ptr<DeviceManager> inner_;

  mutable absl::Mutex mu_;
  FaultOptions options_ ABSL_GUARDED_BY(mu_);
  uint64_t allocated_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t launches_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t finished_launches_ ABSL_GUARDED_BY(mu_) = 0;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  // Set by Stop() and Kill(); releases hung and delayed launches.
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

// Registers the "faulty" type in `registry`: its factory creates the inner
// device (DeviceConfig param `inner`, default "sim") through the same
// registry and wraps it, see FaultInjectingDevice::ParseConfig. Idempotent:
// OK if "faulty" is already registered there.
absl::Status RegisterFaultInjectingDeviceType(DeviceRegistry& registry);

}  // namespace glint

#endif  // GLINT_DEVICES_FAULT_FAULT_INJECTING_DEVICE_H_
