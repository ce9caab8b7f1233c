#include "partitioner/plan_util.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace glint::partitioner_internal {

std::string TypeKey(const DeviceInfo& device) {
  std::vector<std::string> ops = device.unsupported_ops;
  std::sort(ops.begin(), ops.end());
  return absl::StrCat(device.type, "|", absl::StrJoin(ops, "+"), "|",
                      device.compute_flops, "|", device.link_bytes_per_second);
}

std::string ClassName(const DeviceInfo& d) {
  std::vector<std::string> ops = d.unsupported_ops;
  std::sort(ops.begin(), ops.end());
  std::string name = d.type;
  if (!ops.empty())
    absl::StrAppend(&name, " without ", absl::StrJoin(ops, ","));
  if (d.compute_flops > 0) {
    absl::StrAppend(&name,
                    absl::StrFormat(", %.4g GFLOP/s", d.compute_flops / 1e9));
  }
  if (d.link_bytes_per_second > 0) {
    absl::StrAppend(&name, absl::StrFormat(", %.4g GB/s link",
                                           d.link_bytes_per_second / 1e9));
  }
  if (d.compute_flops <= 0 && d.link_bytes_per_second <= 0) {
    absl::StrAppend(&name, ", no timing model");
  }
  return name;
}

std::string Ms(double seconds) {
  return absl::StrFormat("%.3g ms", seconds * 1e3);
}

}  // namespace glint::partitioner_internal
