// Human-readable renderings of Glint's types for the glint CLI. Pure
// functions (thread-safe).
#ifndef GLINT_CLIENT_FORMAT_H_
#define GLINT_CLIENT_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "api/types.h"
#include "core/device_info.h"
#include "core/tensor.h"

namespace glint {

// The values of `tensor`, flattened in row-major order: "[1, 2.5, 3]". With
// more than `max_values` elements, the first and last max_values/2 with
// "..." between them. float16/bfloat16 are shown as their float values.
std::string FormatTensorValues(const Tensor& tensor, int max_values = 20);

// "1.5 GiB", "512 MiB", "37 B".
std::string FormatBytes(uint64_t bytes);

// One line per input/output; with `detailed`, also every partition.
std::string FormatNetwork(const NetworkInfo& network, bool detailed);

// "0  sim:0  type=sim  memory 2 GiB, 2 GiB available".
std::string FormatDevice(const DeviceInfo& device);

// A duration given in microseconds with a unit that keeps it short:
// "850us", "12.3ms", "4.20s"; "-" for 0 (nothing measured yet).
std::string FormatMicros(double us);

// `glint stats`: a table of networks (requests ok and failed, executions,
// queued and running now, and p50/p99 of request, queue, input, compute
// and output times), with `detailed` each network's partitions, then a
// table of devices (memory used of total, loaded partitions, launches and
// their p50/p99).
std::string FormatStatistics(const std::vector<NetworkStatistics>& networks,
                             const std::vector<DeviceStatistics>& devices,
                             bool detailed);

}  // namespace glint

#endif  // GLINT_CLIENT_FORMAT_H_
