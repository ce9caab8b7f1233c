#include "devices/device_guard.h"

#include "absl/strings/str_cat.h"

namespace glint {
namespace {

thread_local DeviceManager* current_device = nullptr;
thread_local int current_index = -1;

}  // namespace

absl::StatusOr<DeviceGuard> DeviceGuard::Create(
    absl::Span<DeviceManager* const> devices, int index) {
  if (index < 0 || index >= static_cast<int>(devices.size()) ||
      devices[index] == nullptr) {
    return absl::OutOfRangeError(absl::StrCat(
        "device index ", index, " is out of range (", devices.size(),
        " devices)"));
  }
  DeviceGuard guard(current_device, current_index);
  current_device = devices[index];
  current_index = index;
  return guard;
}

DeviceGuard::DeviceGuard(DeviceGuard&& other) noexcept
    : previous_(other.previous_),
      previous_index_(other.previous_index_),
      active_(other.active_) {
  other.active_ = false;
}

DeviceGuard::~DeviceGuard() {
  if (!active_) return;
  current_device = previous_;
  current_index = previous_index_;
}

DeviceManager* DeviceGuard::Current() { return current_device; }
int DeviceGuard::CurrentIndex() { return current_index; }

}  // namespace glint
