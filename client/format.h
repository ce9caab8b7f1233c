// Human-readable renderings of Glint's types for the glint CLI. Pure
// functions (thread-safe).
#ifndef GLINT_CLIENT_FORMAT_H_
#define GLINT_CLIENT_FORMAT_H_

#include <cstdint>
#include <string>

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

}  // namespace glint

#endif  // GLINT_CLIENT_FORMAT_H_
