// The simulated device type "sim": a DeviceManager whose memory is a
// capacity-accounted region the host cannot dereference, whose streams are
// host worker threads (runs share one SharedStream of two), whose compute
// engine runs the CPU kernels one launch at a time, and whose speed can
// follow a timing model.
#ifndef GLINT_DEVICES_SIM_SIM_DEVICE_H_
#define GLINT_DEVICES_SIM_SIM_DEVICE_H_

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "devices/compute_engine.h"
#include "devices/device_manager.h"
#include "devices/shared_stream.h"
#include "devices/sim/cpu_function.h"

namespace glint {

// How fast a simulated device is. Zero means "as fast as the host allows":
// no modelled time. A modelled item never completes earlier than its model
// says; if the host is slower, the host's time is what it takes.
struct SimTimingModel {
  double compute_flops = 0;         // FLOP/s of the compute engine.
  double link_bytes_per_second = 0; // Copy bandwidth (H2D, D2H, peer).
  absl::Duration link_latency;      // Added to every copy.

  bool enabled() const {
    return compute_flops > 0 || link_bytes_per_second > 0 ||
           link_latency > absl::ZeroDuration();
  }
  // Modelled durations; zero where the model is off.
  absl::Duration ComputeTime(double flops) const;
  absl::Duration CopyTime(size_t bytes) const;
};

struct SimDeviceOptions {
  // Pool streams created at most (each stream is a host thread);
  // AcquireStream fails with RESOURCE_EXHAUSTED beyond.
  int max_pool_streams = 64;
};

// Thread-safe. Buffers, loaded functions and streams it hands out must be
// destroyed before the device.
//
// Configuration (DeviceConfig::params):
//   compute_gflops=G     compute engine at G GFLOP/s
//   link_gbps=B          copies at B GB/s (10^9 bytes per second)
//   link_latency_us=U    plus U microseconds per copy
//   threads=T            kernels use T host threads (default: every core);
//                        with several devices on one host, giving each a
//                        share keeps their OpenMP pools from outnumbering
//                        the cores (see compute_engine.h)
//   unsupported_ops=A+B  the backend refuses ops A and B
class SimDevice : public DeviceManager {
 public:
  static constexpr absl::string_view kTypeName = "sim";

  // Buffers of at least this many bytes (weights, arenas, large tensors)
  // are anonymous mappings of their own, unmapped when freed: the device's
  // memory goes back to the OS as soon as a network is removed, as a real
  // device's would, instead of staying in the host heap where one small
  // live block above it pins every freed page below (glibc returns heap
  // memory only from its top). Smaller ones come from the heap: a mapping
  // per small tensor would cost a system call and a page each.
  static constexpr size_t kMappedBufferBytes = size_t{1} << 20;

  // A run's own buffers (tensors with run-time shapes, copies in and
  // between devices) that are mapped are kept mapped when freed, up to
  // this many bytes (or an eighth of the device's memory if less), and
  // handed to the next run that asks for a buffer of the same size class
  // (sizes rounded up to 3 significant bits: at most 12.5% over). A fresh
  // mapping pays a page fault per 4 KiB page on first touch: Faster R-CNN's
  // per-run [1000, 256, 7, 7] intermediates spent most of its time there.
  // Weights and arenas are never cached, so removing a network still
  // returns its memory at once. The cached bytes are host memory only: the
  // device counts them free.
  static constexpr size_t kTransientCacheBytes = size_t{256} << 20;

  // INVALID_ARGUMENT for unknown or malformed params or a zero capacity.
  static absl::StatusOr<std::unique_ptr<SimDevice>> Create(
      int id, const DeviceConfig& config, SimDeviceOptions options = {});
  ~SimDevice() override;

  int id() const override { return id_; }
  DeviceInfo GetDeviceInfo() const override;
  const Backend& backend() const override { return backend_; }
  const SimTimingModel& timing() const { return timing_; }
  void Stop() override;

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(
      size_t bytes) override;
  uint64_t AvailableMemory() const override;
  absl::StatusOr<std::unique_ptr<LaunchReservation>> ReserveLaunchMemory(
      uint64_t bytes) override;

  Stream& default_stream() override { return *default_stream_; }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream(int priority) override;
  absl::StatusOr<Stream*> AcquireStream() override;
  void ReleaseStream(Stream* stream) override;
  absl::StatusOr<std::unique_ptr<Stream>> OpenSharedStream(
      SharedStreamOptions options) override;

  void CopyToDevice(Stream& stream, const Tensor* src,
                    DeviceTensor* dst) override;
  void CopyToHost(Stream& stream, const DeviceTensor* src,
                  Tensor* dst) override;
  void CopyToHostInto(Stream& stream, const DeviceTensor* src, Tensor into,
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

  // The real address behind a simulated device's buffer, for the device's
  // own engines; null for buffers of other device types.
  static void* HostAddress(const DeviceBuffer& buffer);

 private:
  class SimBuffer;
  class SimLoadedFunction;
  class SimLaunchReservation;
  class OwnedStream;
  friend class SimBuffer;
  friend class SimLoadedFunction;
  friend class OwnedStream;

  SimDevice(int id, DeviceConfig config, SimDeviceOptions options,
            SimTimingModel timing, std::vector<std::string> unsupported_ops,
            int threads);

  // Where a buffer's bytes are counted: with the device's other
  // allocations, or as a launch's run-time value (drawn from the launch
  // reserve first, ReserveLaunchMemory).
  enum class Pool { kDevice, kLaunch };
  void ReturnMemory(size_t bytes, Pool pool) ABSL_LOCKS_EXCLUDED(memory_mu_);
  // Allocate's work; `transient` for a run's own buffers (a mapped one may
  // come from, and goes back to, the transient cache: kTransientCacheBytes).
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateBuffer(
      size_t bytes, bool transient, Pool pool = Pool::kDevice);
  // The bytes counted as used: the device pool's, plus the launch reserve
  // or, when a launch has outgrown it, what launches hold.
  uint64_t UsedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(memory_mu_) {
    return device_used_ + std::max(launch_reserve_, launch_used_);
  }
  // Drops one reservation of `bytes` (SimLaunchReservation's destructor).
  void Unreserve(uint64_t bytes) ABSL_LOCKS_EXCLUDED(memory_mu_);
  // Host memory for a buffer of `bytes`; `transient` ones of mapped size
  // are taken from the cache when it has their size class.
  void* HostAllocate(size_t bytes, bool transient)
      ABSL_LOCKS_EXCLUDED(cache_mu_);
  // Frees what HostAllocate gave, into the cache when `transient` and it
  // has room.
  void HostRelease(void* data, size_t bytes, bool transient)
      ABSL_LOCKS_EXCLUDED(cache_mu_);
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }
  absl::Status StoppedError() const;
  std::shared_ptr<HostStream> NewStream(int priority)
      ABSL_LOCKS_EXCLUDED(streams_mu_);
  std::shared_ptr<HostStream> NewStreamLocked(int priority)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(streams_mu_);
  // The shared stream, made on first use.
  std::shared_ptr<SharedStream> Shared() ABSL_LOCKS_EXCLUDED(streams_mu_);
  void ForgetStream(const HostStream* stream) ABSL_LOCKS_EXCLUDED(streams_mu_);
  // Runs a copy of `bytes` enqueued on `stream` on the copy engine, taking
  // at least the modelled time, once the stream's work check passes.
  absl::Status TimedCopy(const Stream& stream, size_t bytes,
                         const std::function<void()>& copy)
      ABSL_LOCKS_EXCLUDED(copy_engine_);

  const int id_;
  const DeviceConfig config_;
  const SimDeviceOptions options_;
  const SimTimingModel timing_;
  const CpuBackend backend_;
  std::atomic<bool> stopped_{false};
  std::atomic<int> loaded_functions_{0};
  std::atomic<int> launches_running_{0};  // DeviceInfo::launches_running.

  // The engines streams compete for: launches run one at a time on the
  // compute engine (on the shared stream's compute thread, or on a thread
  // of the engine's, see compute_engine.h), copies one at a time on the
  // copy engine; the two overlap (across streams, or across views of the
  // shared stream), as a DMA engine and the SMs of a GPU do. A stream's thread may be inside compute_engine_.Run() until
  // the stream is joined: the destructor's Stop() joins them all, and the
  // engine is declared before the streams so that it outlives them even
  // so.
  ComputeEngine compute_engine_;
  absl::Mutex copy_engine_;

  // Memory accounting. Launches run one at a time, so the values one
  // launch allocates as it runs (Pool::kLaunch) and the reservations made
  // for them overlap: what counts as used is max(reserve, launch_used_).
  mutable absl::Mutex memory_mu_;
  uint64_t device_used_ ABSL_GUARDED_BY(memory_mu_) = 0;
  uint64_t launch_used_ ABSL_GUARDED_BY(memory_mu_) = 0;
  // The reservations alive; launch_reserve_ is the largest.
  std::multiset<uint64_t> launch_reservations_ ABSL_GUARDED_BY(memory_mu_);
  uint64_t launch_reserve_ ABSL_GUARDED_BY(memory_mu_) = 0;
  uint64_t peak_used_bytes_ ABSL_GUARDED_BY(memory_mu_) = 0;

  // Mappings of freed transient buffers by mapped length (a size class).
  absl::Mutex cache_mu_;
  std::multimap<size_t, void*> cached_mappings_ ABSL_GUARDED_BY(cache_mu_);
  size_t cached_bytes_ ABSL_GUARDED_BY(cache_mu_) = 0;

  absl::Mutex streams_mu_;
  // Every live stream, so Stop() reaches them all.
  std::vector<std::shared_ptr<HostStream>> streams_
      ABSL_GUARDED_BY(streams_mu_);
  std::vector<HostStream*> free_pool_ ABSL_GUARDED_BY(streams_mu_);
  int pool_size_ ABSL_GUARDED_BY(streams_mu_) = 0;
  // What every run's work goes on (OpenSharedStream): its compute thread
  // is adopted by the compute engine (it runs its launches itself). Made
  // on first use, with completions_, where its views' OnDone callbacks run
  // (the end of a run: its caller's callback, which may answer a client or
  // start the next run) so that they never hold up the device's work.
  std::shared_ptr<SharedStream> shared_ ABSL_GUARDED_BY(streams_mu_);
  std::shared_ptr<HostStream> completions_ ABSL_GUARDED_BY(streams_mu_);
  std::shared_ptr<HostStream> default_stream_;
};

}  // namespace glint

#endif  // GLINT_DEVICES_SIM_SIM_DEVICE_H_
