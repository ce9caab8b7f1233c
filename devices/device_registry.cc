#include "devices/device_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "devices/sim/sim_device.h"

namespace glint {

DeviceRegistry& DeviceRegistry::Global() {
  static DeviceRegistry* registry = new DeviceRegistry();
  return *registry;
}

absl::Status DeviceRegistry::Register(absl::string_view type,
                                      DeviceFactory factory) {
  if (type.empty()) {
    return absl::InvalidArgumentError("a device type needs a name");
  }
  absl::MutexLock lock(&mu_);
  if (!factories_.emplace(std::string(type), std::move(factory)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("device type '", type, "' is already registered"));
  }
  return absl::OkStatus();
}

bool DeviceRegistry::IsRegistered(absl::string_view type) const {
  absl::MutexLock lock(&mu_);
  return factories_.find(type) != factories_.end();
}

std::vector<std::string> DeviceRegistry::Types() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> types;
  for (const auto& [name, factory] : factories_) types.push_back(name);
  return types;
}

absl::StatusOr<std::unique_ptr<DeviceManager>> DeviceRegistry::Create(
    int id, const DeviceConfig& config) const {
  DeviceFactory factory;
  {
    absl::MutexLock lock(&mu_);
    auto it = factories_.find(config.type);
    if (it == factories_.end()) {
      std::vector<std::string> known;
      for (const auto& [name, f] : factories_) known.push_back(name);
      return absl::NotFoundError(
          absl::StrCat("unknown device type '", config.type,
                       "' (registered: ", absl::StrJoin(known, ", "), ")"));
    }
    factory = it->second;
  }
  return factory(id, config);
}

absl::StatusOr<std::vector<std::unique_ptr<DeviceManager>>>
DeviceRegistry::CreateAll(const std::vector<DeviceConfig>& configs) const {
  std::vector<std::unique_ptr<DeviceManager>> devices;
  for (size_t i = 0; i < configs.size(); ++i) {
    GLINT_ASSIGN_OR_RETURN(std::unique_ptr<DeviceManager> d,
                           Create(static_cast<int>(i), configs[i]));
    devices.push_back(std::move(d));
  }
  return devices;
}

void RegisterBuiltinDeviceTypes() {
  static const bool registered = [] {
    absl::Status s = DeviceRegistry::Global().Register(
        SimDevice::kTypeName,
        [](int id, const DeviceConfig& config)
            -> absl::StatusOr<std::unique_ptr<DeviceManager>> {
          GLINT_ASSIGN_OR_RETURN(std::unique_ptr<SimDevice> d,
                                 SimDevice::Create(id, config));
          return std::unique_ptr<DeviceManager>(std::move(d));
        });
    return s.ok();
  }();
  (void)registered;
}

}  // namespace glint
