// DeviceGuard: the calling thread's "current device", as c10's DeviceGuard
// and CUDA's cudaSetDevice. The executor passes streams and devices
// explicitly; the guard serves kernels and user code that ask for the
// current device.
#ifndef GLINT_DEVICES_DEVICE_GUARD_H_
#define GLINT_DEVICES_DEVICE_GUARD_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "devices/device_manager.h"

namespace glint {

// RAII: makes a device current for the calling thread and restores the
// previous one (or none) when destroyed, on every scope exit, nested or
// not. Move-only; a moved-from guard restores nothing. Not shareable
// between threads (it describes its creating thread).
class DeviceGuard {
 public:
  // Makes devices[index] current. OUT_OF_RANGE for a bad index, and then
  // nothing changes.
  static absl::StatusOr<DeviceGuard> Create(
      absl::Span<DeviceManager* const> devices, int index);

  DeviceGuard(DeviceGuard&& other) noexcept;
  DeviceGuard& operator=(DeviceGuard&&) = delete;
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard();

  // The calling thread's current device, or null.
  static DeviceManager* Current();
  // Its index in the list it was chosen from, or -1.
  static int CurrentIndex();

 private:
  DeviceGuard(DeviceManager* previous, int previous_index)
      : previous_(previous), previous_index_(previous_index) {}

  DeviceManager* previous_;
  int previous_index_;
  bool active_ = true;
};

// The number of devices in `devices`. Never fails: 0 when none are
// configured (c10's deviceCount contract).
inline int DeviceCount(absl::Span<DeviceManager* const> devices) noexcept {
  return static_cast<int>(devices.size());
}

}  // namespace glint

#endif  // GLINT_DEVICES_DEVICE_GUARD_H_
