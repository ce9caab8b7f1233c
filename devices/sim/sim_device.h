// The simulated device type "sim": a DeviceManager whose memory is a
// capacity-accounted region apart from the host's objects, whose streams are
// host worker threads, and whose compute is the CPU kernels.
#ifndef GLINT_DEVICES_SIM_SIM_DEVICE_H_
#define GLINT_DEVICES_SIM_SIM_DEVICE_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "devices/device_manager.h"
#include "devices/sim/cpu_function.h"

namespace glint {

struct SimDeviceOptions {
  // Streams created at most; AcquireStream fails with RESOURCE_EXHAUSTED
  // beyond (each stream is a host thread).
  int max_streams = 64;
};

// Thread-safe.
class SimDevice : public DeviceManager {
 public:
  // Type name in the device registry.
  static constexpr absl::string_view kTypeName = "sim";

  // INVALID_ARGUMENT for unknown config params or a zero capacity.
  static absl::StatusOr<std::unique_ptr<SimDevice>> Create(
      int id, const DeviceConfig& config, SimDeviceOptions options = {});
  ~SimDevice() override;

  int id() const override { return id_; }
  DeviceInfo GetDeviceInfo() const override;
  const Backend& backend() const override { return backend_; }
  void Stop() override;

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(
      size_t bytes) override;
  uint64_t AvailableMemory() const override;

  absl::StatusOr<Stream*> AcquireStream() override;
  void ReleaseStream(Stream* stream) override;

  void CopyToDevice(Stream& stream, const Tensor* src,
                    DeviceTensor* dst) override;
  void CopyToHost(Stream& stream, const DeviceTensor* src,
                  Tensor* dst) override;
  void CopyFromPeer(Stream& stream, const DeviceTensor* src,
                    DeviceTensor* dst) override;

  absl::StatusOr<std::unique_ptr<LoadedFunction>> Load(
      std::shared_ptr<const CompiledFunction> function) override;
  void Launch(Stream& stream, const LoadedFunction& function,
              std::vector<const DeviceTensor*> inputs,
              std::vector<DeviceTensor*> outputs) override;

 private:
  class SimBuffer;
  class SimLoadedFunction;
  friend class SimBuffer;

  SimDevice(int id, DeviceConfig config, SimDeviceOptions options,
            std::vector<std::string> unsupported_ops);

  void ReturnMemory(size_t bytes);
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }

  const int id_;
  const DeviceConfig config_;
  const SimDeviceOptions options_;
  const CpuBackend backend_;
  std::atomic<bool> stopped_{false};

  mutable absl::Mutex memory_mu_;
  uint64_t used_bytes_ ABSL_GUARDED_BY(memory_mu_) = 0;

  absl::Mutex streams_mu_;
  std::vector<std::unique_ptr<HostStream>> streams_ ABSL_GUARDED_BY(streams_mu_);
  std::vector<HostStream*> free_streams_ ABSL_GUARDED_BY(streams_mu_);
};

}  // namespace glint

#endif  // GLINT_DEVICES_SIM_SIM_DEVICE_H_
