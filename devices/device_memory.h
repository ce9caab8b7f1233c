// Device memory as the rest of Glint sees it: opaque allocations that only
// the owning device's copy engine and kernels dereference.
#ifndef GLINT_DEVICES_DEVICE_MEMORY_H_
#define GLINT_DEVICES_DEVICE_MEMORY_H_

#include <cstddef>
#include <memory>

#include "core/dtype.h"
#include "core/tensor.h"

namespace glint {

// One allocation on a device. Freed (and its bytes returned to the device's
// capacity) when destroyed. Thread-compatible.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual int device_id() const = 0;
  virtual size_t size() const = 0;
  // The device-side address: an opaque handle for host code. The simulated
  // device returns a non-canonical address here, so a host component that
  // dereferences device memory instead of copying crashes in every build
  // (and its tests fail) rather than silently working.
  virtual void* device_address() const = 0;
};

// A tensor that lives on a device, as a run's executor passes them between
// copies and launches. The buffer may be filled in by the stream work that
// produces the tensor (its shape can depend on data), so it is read only by
// work enqueued after the producer. Thread-compatible.
struct DeviceTensor {
  DType dtype = DType::kUndefined;
  Shape shape;
  std::unique_ptr<DeviceBuffer> buffer;

  size_t num_bytes() const {
    return static_cast<size_t>(shape.NumElements()) * DTypeSize(dtype);
  }
};

}  // namespace glint

#endif  // GLINT_DEVICES_DEVICE_MEMORY_H_
