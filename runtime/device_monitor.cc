#include "runtime/device_monitor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/thread_name.h"

namespace glint {

DeviceMonitor::DeviceMonitor(std::vector<const DeviceManager*> devices,
                             OnDead on_dead)
    : devices_(std::move(devices)), on_dead_(std::move(on_dead)) {
  thread_ = std::thread([this] {
    SetCurrentThreadName("glint-monitor");
    Loop();
  });
}

DeviceMonitor::~DeviceMonitor() { Stop(); }

void DeviceMonitor::RequestCheck() {
  absl::MutexLock lock(&mu_);
  check_requested_ = true;
}

void DeviceMonitor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void DeviceMonitor::Loop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &DeviceMonitor::HasWork));
      if (stop_) return;
      check_requested_ = false;
    }
    std::vector<const DeviceManager*> dead;
    std::string names;
    for (const DeviceManager* device : devices_) {
      if (device->healthy()) continue;
      dead.push_back(device);
      const DeviceInfo info = device->GetDeviceInfo();
      absl::StrAppend(&names, names.empty() ? "" : ", ", info.name);
      absl::MutexLock lock(&mu_);
      if (reported_.insert(device).second) {
        GLINT_LOG_ERROR("device {} failed ({}); re-provisioning its networks",
                        info.name, info.unhealthy_reason);
      }
    }
    if (!dead.empty()) on_dead_(dead, names);
  }
}

}  // namespace glint
