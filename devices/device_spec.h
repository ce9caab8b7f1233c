// Parses glintd's --devices flag into device configurations.
//
// Grammar (whitespace around entries is ignored):
//   spec   := entry ("," entry)*
//   entry  := TYPE ["*" COUNT] (":" KEY "=" VALUE)*
// `memory` takes a size: an integer with an optional unit B, KiB, MiB, GiB,
// KB, MB or GB (KiB = 1024 bytes, KB = 1000 bytes; no unit means bytes).
// Every other key goes to DeviceConfig::params, for the device type's factory
// to check. Examples: "sim*2:memory=2GiB", "sim:memory=512MiB,sim:memory=4GiB".
#ifndef GLINT_DEVICES_DEVICE_SPEC_H_
#define GLINT_DEVICES_DEVICE_SPEC_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/device_info.h"

namespace glint {

// glintd's default: two simulated devices of 2 GiB each, so that the
// partitioner has a choice from the start.
inline constexpr char kDefaultDeviceSpec[] = "sim*2:memory=2GiB";

// One DeviceConfig per device, in order (an entry with COUNT n yields n
// configs). Names are left empty so that HostManager assigns "<type>:<i>".
// INVALID_ARGUMENT quoting the offending entry for any syntax error, an
// empty spec, a COUNT outside 1..1024, a zero or malformed memory size, or
// a key given twice in one entry.
absl::StatusOr<std::vector<DeviceConfig>> ParseDeviceSpec(
    absl::string_view spec);

// Devices that compute on the host's cores ("sim", and "faulty" wrapping
// one) and were given no threads= share `cores`: each gets cores / n
// threads (at least 1) for the n such devices, so that their OpenMP pools
// together never outnumber the cores. With every core each, glintd's
// default two devices oversubscribed: on 16 cores ResNet-50 served 159
// runs/s at 16 in flight and MobileNetV3 ran a request in 4.1 ms, against
// 167 and 2.0 with 8 threads each (bench/README.md). glintd and the C API
// call it after ParseDeviceSpec; an explicit threads= wins.
void ShareHostCores(int cores, std::vector<DeviceConfig>* configs);

// "512MiB", "2GiB", "1000KB", "4096" → bytes. INVALID_ARGUMENT on a
// malformed size, an unknown unit or overflow.
absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text);

}  // namespace glint

#endif  // GLINT_DEVICES_DEVICE_SPEC_H_
