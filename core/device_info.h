// What the runtime knows about a device: how to configure one (DeviceConfig)
// and what it reports (DeviceInfo). Both are plain values.
#ifndef GLINT_CORE_DEVICE_INFO_H_
#define GLINT_CORE_DEVICE_INFO_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace glint {

inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;

// Configures one device. `type` names a registered device type ("sim").
struct DeviceConfig {
  std::string type = "sim";
  // Human-readable name; defaults to "<type>:<index>".
  std::string name;
  // Capacity of the device's memory; every allocation counts against it.
  uint64_t memory_bytes = 2 * kGiB;
  // Type-specific settings ("compute_gflops", "link_gbps"...), parsed by the
  // device type's factory. Unknown keys are refused there.
  std::map<std::string, std::string> params;
};

// A snapshot of a device's description and state.
struct DeviceInfo {
  int id = -1;  // Index in the HostManager's device list.
  // The kind of device plans target (devices of one type are
  // interchangeable for placement): the registered type, except that a
  // wrapper such as the fault-injecting device reports what it wraps.
  std::string type;
  std::string name;
  uint64_t memory_bytes = 0;            // Capacity.
  uint64_t available_memory_bytes = 0;  // Capacity minus allocations.
  // The most allocated at once since the device started (weights, plans
  // and runs' values together): how close to full it has come.
  uint64_t peak_used_memory_bytes = 0;
  // Set aside for launches' run-time values (the largest reservation
  // alive, DeviceManager::ReserveLaunchMemory): counted as used.
  uint64_t launch_reserved_bytes = 0;
  // Peak compute in FLOP/s and link bandwidth in bytes/s; 0 means "as fast
  // as the host allows" (no timing model). Used by the cost model.
  double compute_flops = 0;
  double link_bytes_per_second = 0;
  // Ops this device type cannot run (empty: everything its backend has).
  std::vector<std::string> unsupported_ops;
  // Compiled functions (partitions) loaded on the device now: its load,
  // which placement spreads.
  int loaded_functions = 0;
  // Launches computing on the device at this moment (0 when idle): what a
  // run is waiting on when it is in flight but not queued. A launch still
  // queued on a stream is not counted, nor is a delay or hang the
  // fault-injecting device adds (devices/fault) around the real launch.
  int launches_running = 0;
  // Empty while the device works; otherwise why it does not (it died).
  // Nothing new is placed on an unhealthy device, and runs avoid it.
  std::string unhealthy_reason;
};

}  // namespace glint

#endif  // GLINT_CORE_DEVICE_INFO_H_
