// Device types by name ("sim", or any a program adds), each a factory from a
// DeviceConfig to a DeviceManager. Registration is explicit at start-up:
// call RegisterBuiltinDeviceTypes() (glintd and HostManager do) and
// Register() for your own types.
#ifndef GLINT_DEVICES_DEVICE_REGISTRY_H_
#define GLINT_DEVICES_DEVICE_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/device_info.h"
#include "devices/device_manager.h"

namespace glint {

// Makes device number `id` of a type from its configuration.
using DeviceFactory =
    std::function<absl::StatusOr<std::unique_ptr<DeviceManager>>(
        int id, const DeviceConfig& config)>;

// Thread-safe.
class DeviceRegistry {
 public:
  // The process-wide registry.
  static DeviceRegistry& Global();

  // ALREADY_EXISTS if `type` is taken; INVALID_ARGUMENT for an empty name.
  absl::Status Register(absl::string_view type, DeviceFactory factory);
  bool IsRegistered(absl::string_view type) const;
  std::vector<std::string> Types() const;  // Sorted.

  // NOT_FOUND for an unregistered type.
  absl::StatusOr<std::unique_ptr<DeviceManager>> Create(
      int id, const DeviceConfig& config) const;
  // Creates one device per config, numbered from 0.
  absl::StatusOr<std::vector<std::unique_ptr<DeviceManager>>> CreateAll(
      const std::vector<DeviceConfig>& configs) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, DeviceFactory, std::less<>> factories_
      ABSL_GUARDED_BY(mu_);
};

// Registers the built-in types ("sim") in the global registry. Idempotent.
void RegisterBuiltinDeviceTypes();

}  // namespace glint

#endif  // GLINT_DEVICES_DEVICE_REGISTRY_H_
