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
#include "core/graph.h"

namespace glint::partitioner_internal {

// Whether `device` runs ops of type `op` (a device lists those it cannot).
inline bool Supports(const DeviceInfo& device, absl::string_view op) {
  return std::find(device.unsupported_ops.begin(),
                   device.unsupported_ops.end(),
                   op) == device.unsupported_ops.end();
}

// Whether `device` runs `node`: its op and, for control flow, every op of
// its subgraphs (a control-flow node runs whole on one device, subgraphs
// included; core/graph.h bounds their nesting).
inline bool Supports(const DeviceInfo& device, const Node& node) {
  if (!Supports(device, node.op_type)) return false;
  for (const auto& [attr, sub] : node.Subgraphs()) {
    for (const Node& inner : sub->nodes) {
      if (!Supports(device, inner)) return false;
    }
  }
  return true;
}

// "N bytes (M MiB)", for messages about memory.
inline std::string Mib(uint64_t bytes) {
  return absl::StrCat(bytes, " bytes (", bytes / kMiB, " MiB)");
}

// Devices of one type with the same unsupported ops and the same rates
// are interchangeable (they differ at most in free memory): a class. Its
// key.
std::string TypeKey(const DeviceInfo& device);

// How `glint show` and errors name a class: "sim without Softmax,
// 50 GFLOP/s, 10 GB/s link".
std::string ClassName(const DeviceInfo& d);

// "1.23 ms".
std::string Ms(double seconds);

}  // namespace glint::partitioner_internal

#endif  // GLINT_PARTITIONER_PLAN_UTIL_H_
