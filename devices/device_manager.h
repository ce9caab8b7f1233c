// DeviceManager: one device as the runtime drives it (Glow's vocabulary):
// memory, streams, events, copies, and compiled functions loaded onto it.
#ifndef GLINT_DEVICES_DEVICE_MANAGER_H_
#define GLINT_DEVICES_DEVICE_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device_info.h"
#include "core/tensor.h"
#include "core/trace.h"
#include "devices/compiled_function.h"
#include "devices/device_memory.h"
#include "devices/event.h"
#include "devices/stream.h"

namespace glint {

// A compiled function resident on one device (constants uploaded). Owned by
// whoever loaded it; destroying it evicts it and frees its memory. Must not
// be destroyed while launches of it are pending. Thread-safe.
class LoadedFunction {
 public:
  virtual ~LoadedFunction() = default;
  virtual const CompiledFunction& function() const = 0;
  virtual int device_id() const = 0;
};

// How busy a device is with runs, as whoever places runs on devices (the
// executor) counts them: the runs placed on it and not yet finished, over
// every network and plan sharing the device, and when a run was last placed
// on it. The device itself never reads or writes it: it is placement
// bookkeeping that lives with the device so that every network's replicas
// on it see the same count without a shared table. Thread-safe and
// lock-free; readers do not synchronize with each other, so two placements
// at once may see the same load (placement is a heuristic, never a
// correctness condition).
class DeviceLoad {
 public:
  // A run was placed on the device; `ticket` orders placements (a later
  // placement passes a larger one).
  void AddRun(uint64_t ticket) {
    active_runs_.fetch_add(1, std::memory_order_relaxed);
    last_placed_.store(ticket, std::memory_order_relaxed);
  }
  // A run placed with AddRun has finished.
  void RemoveRun() { active_runs_.fetch_sub(1, std::memory_order_relaxed); }

  int active_runs() const {
    return active_runs_.load(std::memory_order_relaxed);
  }
  // The ticket of the latest AddRun; 0 if none.
  uint64_t last_placed() const {
    return last_placed_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<int> active_runs_{0};
  std::atomic<uint64_t> last_placed_{0};
};

// How one launch is observed. The default observes nothing and costs
// nothing.
struct LaunchOptions {
  // When set (a profiled run: RunOptions::profile), the launch records a
  // slice per node it executes on this track, with the node's op type,
  // kernel and run-time shapes (core/trace.h NodeSliceArgs); a device that
  // cannot see nodes records none. Borrowed: it must outlive the launch
  // (the executor's run state holds it until the run's streams drain).
  const TraceTrack* profile = nullptr;
};

// Device memory set aside for launches' run-time values
// (DeviceManager::ReserveLaunchMemory); returned when destroyed.
class LaunchReservation {
 public:
  virtual ~LaunchReservation() = default;
  virtual uint64_t bytes() const = 0;
};

// One device. Every method is thread-safe. All data movement and
// computation is asynchronous: it is enqueued on a stream of this device
// and the objects it references (host tensors, device tensors, the loaded
// function) must stay alive until the stream has passed it.
class DeviceManager {
 public:
  virtual ~DeviceManager() = default;

  virtual int id() const = 0;
  virtual DeviceInfo GetDeviceInfo() const = 0;
  // False once the device has died (then GetDeviceInfo() says why): runs
  // avoid it and nothing new is placed on it. Cheap: asked on every run.
  virtual bool healthy() const { return true; }
  virtual const Backend& backend() const = 0;
  // The runs placed on this device (see DeviceLoad). Not virtual: a device
  // that wraps another (fault/) keeps its own, since runs are placed on the
  // wrapper.
  DeviceLoad& load() { return load_; }
  const DeviceLoad& load() const { return load_; }

  // Stops the device: pending work fails with UNAVAILABLE, later calls fail
  // fast. Never hangs. Idempotent.
  virtual void Stop() = 0;

  // --- Memory ---------------------------------------------------------
  // RESOURCE_EXHAUSTED when `bytes` exceeds what is left of the capacity.
  virtual absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(
      size_t bytes) = 0;
  virtual uint64_t AvailableMemory() const = 0;
  // Sets `bytes` aside for the values launches allocate as they run
  // (values of run-time shape: CompiledFunction::DynamicMemoryWithin),
  // until the returned reservation is destroyed (before the device).
  // Launches run one at a time, so reservations overlap: the device holds
  // the largest one alive, and a launch's run-time values draw on it before
  // on the free memory, so a launch within its function's reserved peak
  // never fails for memory other allocations took. RESOURCE_EXHAUSTED
  // when the device cannot set that much aside. Thread-safe.
  virtual absl::StatusOr<std::unique_ptr<LaunchReservation>>
  ReserveLaunchMemory(uint64_t bytes) = 0;

  // --- Streams ----------------------------------------------------------
  // Priorities: a larger number is more urgent. When streams of one device
  // compete for its compute engine, the most urgent waiting launch goes
  // first (FIFO among equals). kDefaultStreamPriority is 0.
  static constexpr int kDefaultStreamPriority = 0;

  // The device's default stream, shared by every caller; lives as long as
  // the device.
  virtual Stream& default_stream() = 0;
  // A new stream owned by the caller (destroy it only once its work is
  // done). UNAVAILABLE once stopped.
  virtual absl::StatusOr<std::unique_ptr<Stream>> CreateStream(
      int priority) = 0;
  // A stream for the caller's exclusive use, from the device's pool of
  // default-priority streams (created on demand). Return it with
  // ReleaseStream once its work is done.
  virtual absl::StatusOr<Stream*> AcquireStream() = 0;
  virtual void ReleaseStream(Stream* stream) = 0;
  // What runs use: a view, for one user, of the device's shared stream
  // (SharedStream), which every user's work goes on, so that the device's
  // threads do not grow with the number of users. The view is an in-order
  // queue of its own with its own errors: a failing item fails the view
  // only (its later items are skipped, events recorded through it carry
  // the error, its OnDone callbacks get it), never another view. Views'
  // items interleave on the device, the most urgent ready first
  // (options.priority); a view waiting for an event holds up no other.
  // Query/Synchronize/status/ClearError concern the view's own items; its
  // launches and copies are checked with options.work_check. Destroy the
  // view once its work is done. UNAVAILABLE once stopped.
  virtual absl::StatusOr<std::unique_ptr<Stream>> OpenSharedStream(
      SharedStreamOptions options) = 0;

  // --- Copies (enqueued on `stream`, a stream of this device) ----------
  // Every copy and launch reuses a destination buffer the caller already
  // holds when it is large enough, and allocates one otherwise, so callers
  // that keep their DeviceTensors between runs allocate nothing once warm.
  // Host → this device.
  virtual void CopyToDevice(Stream& stream, const Tensor* src,
                            DeviceTensor* dst) = 0;
  // This device → host: *dst becomes a new host tensor with src's contents.
  virtual void CopyToHost(Stream& stream, const DeviceTensor* src,
                          Tensor* dst) = 0;
  // The same into host memory the caller provides (`into`, e.g. a
  // shared-memory window): when src's bytes fit in it, they land there and
  // *dst becomes a view of it (Tensor::ViewAs) with src's dtype and shape;
  // otherwise as CopyToHost. A device may always answer as CopyToHost (the
  // default): the caller checks where the bytes went.
  virtual void CopyToHostInto(Stream& stream, const DeviceTensor* src,
                              Tensor into, Tensor* dst) {
    (void)into;
    CopyToHost(stream, src, dst);
  }
  // Another device → this device (peer copy).
  virtual void CopyFromPeer(Stream& stream, const DeviceTensor* src,
                            DeviceTensor* dst) = 0;

  // --- Functions ---------------------------------------------------------
  // Uploads the constants; RESOURCE_EXHAUSTED if they (with one execution's
  // arena, which is reserved) do not fit. UNAVAILABLE once stopped.
  virtual absl::StatusOr<std::unique_ptr<LoadedFunction>> Load(
      std::shared_ptr<const CompiledFunction> function) = 0;
  // Runs `function` (loaded on this device) on `inputs` (device tensors of
  // this device, one per function input), filling `outputs` (one per
  // function output, allocated here when the launch runs), observed as
  // `options` say.
  virtual void Launch(Stream& stream, const LoadedFunction& function,
                      std::vector<const DeviceTensor*> inputs,
                      std::vector<DeviceTensor*> outputs,
                      const LaunchOptions& options) = 0;
  // The same, unobserved. Implementations override the one above only and
  // bring this one into scope (`using DeviceManager::Launch;`).
  void Launch(Stream& stream, const LoadedFunction& function,
              std::vector<const DeviceTensor*> inputs,
              std::vector<DeviceTensor*> outputs) {
    Launch(stream, function, std::move(inputs), std::move(outputs),
           LaunchOptions());
  }

 private:
  DeviceLoad load_;
};

}  // namespace glint

#endif  // GLINT_DEVICES_DEVICE_MANAGER_H_
