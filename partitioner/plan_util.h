// Helpers the partitioner's planner and its validators share. Internal to
// partitioner/ (see BUILD).
#ifndef GLINT_PARTITIONER_PLAN_UTIL_H_
#define GLINT_PARTITIONER_PLAN_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/device_info.h"

namespace glint::partitioner_internal {

// Whether `device` runs ops of type `op` (a device lists those it cannot).
inline bool Supports(const DeviceInfo& device, absl::string_view op) {
  return std::find(device.unsupported_ops.begin(),
                   device.unsupported_ops.end(),
                   op) == device.unsupported_ops.end();
}

// "N bytes (M MiB)", for messages about memory.
inline std::string Mib(uint64_t bytes) {
  return absl::StrCat(bytes, " bytes (", bytes / kMiB, " MiB)");
}

}  // namespace glint::partitioner_internal

#endif  // GLINT_PARTITIONER_PLAN_UTIL_H_
