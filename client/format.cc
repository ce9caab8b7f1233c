#include "client/format.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "core/half.h"

namespace glint {

namespace {

std::string FormatElement(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return absl::StrFormat("%.6g", t.data<float>()[i]);
    case DType::kFloat64: return absl::StrFormat("%.10g", t.data<double>()[i]);
    case DType::kFloat16:
      return absl::StrFormat("%.4g", Float16ToFloat(t.data<uint16_t>()[i]));
    case DType::kBFloat16:
      return absl::StrFormat("%.4g", BFloat16ToFloat(t.data<uint16_t>()[i]));
    case DType::kInt8: return absl::StrCat(t.data<int8_t>()[i]);
    case DType::kUInt8: return absl::StrCat(t.data<uint8_t>()[i]);
    case DType::kInt16: return absl::StrCat(t.data<int16_t>()[i]);
    case DType::kUInt16: return absl::StrCat(t.data<uint16_t>()[i]);
    case DType::kInt32: return absl::StrCat(t.data<int32_t>()[i]);
    case DType::kUInt32: return absl::StrCat(t.data<uint32_t>()[i]);
    case DType::kInt64: return absl::StrCat(t.data<int64_t>()[i]);
    case DType::kUInt64: return absl::StrCat(t.data<uint64_t>()[i]);
    case DType::kBool: return t.data<uint8_t>()[i] ? "true" : "false";
    default: return "?";
  }
}

// "  dynamic dims: seq <= 128 (input_ids:1, attention_mask:1), ...\n",
// or "" for a network without any.
std::string FormatDynamicDims(const std::vector<DynamicDim>& dims) {
  if (dims.empty()) return "";
  std::vector<std::string> shown;
  std::vector<std::string> keys;
  for (const DynamicDim& d : dims) {
    if (std::find(keys.begin(), keys.end(), d.Key()) != keys.end()) continue;
    keys.push_back(d.Key());
    std::vector<std::string> where;
    for (const DynamicDim& e : dims) {
      if (e.Key() != d.Key()) continue;
      where.push_back(absl::StrCat(e.input, ":", e.axis));
    }
    shown.push_back(d.name.empty()
                        ? absl::StrCat(d.Key(), " <= ", d.max)
                        : absl::StrCat(d.name, " <= ", d.max, " (",
                                       absl::StrJoin(where, ", "), ")"));
  }
  return absl::StrCat("  dynamic dims: ", absl::StrJoin(shown, ", "), "\n");
}

}  // namespace

std::string FormatTensorValues(const Tensor& tensor, int max_values) {
  const int64_t n = tensor.num_elements();
  if (n < 0 || (n > 0 && tensor.raw_data() == nullptr)) return "<no data>";
  std::vector<std::string> parts;
  if (n <= max_values) {
    for (int64_t i = 0; i < n; ++i) parts.push_back(FormatElement(tensor, i));
  } else {
    const int64_t half = max_values / 2;
    for (int64_t i = 0; i < half; ++i) parts.push_back(FormatElement(tensor, i));
    parts.push_back("...");
    for (int64_t i = n - half; i < n; ++i) {
      parts.push_back(FormatElement(tensor, i));
    }
  }
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string FormatBytes(uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  return absl::StrFormat("%.4g %s", v, kUnits[unit]);
}

std::string FormatNetwork(const NetworkInfo& network, bool detailed) {
  std::string out = absl::StrCat("network ", network.name, "\n");
  if (!network.unavailable_reason.empty()) {
    absl::StrAppend(&out, "  UNAVAILABLE: ", network.unavailable_reason, "\n");
  }
  // Unknown dims by the model's names where it has them: "[batch, seq]".
  for (const ValueInfo& v : network.inputs) {
    absl::StrAppend(&out, "  input  ", v.name, ": ", DTypeName(v.dtype),
                    v.ShapeString(), "\n");
  }
  for (const ValueInfo& v : network.outputs) {
    absl::StrAppend(&out, "  output ", v.name, ": ", DTypeName(v.dtype),
                    v.ShapeString(), "\n");
  }
  absl::StrAppend(&out, FormatDynamicDims(network.dynamic_dims));
  absl::StrAppend(&out, "  partitions: ", network.partitions.size());
  if (!network.strategy.empty()) {
    absl::StrAppend(&out, " (strategy ", network.strategy, ")");
  }
  if (network.replicas > 1) {
    absl::StrAppend(&out, ", replicas: ", network.replicas);
  }
  absl::StrAppend(&out, "\n");
  if (network.batching.max_batch_size > 0) {
    const DynamicBatching& b = network.batching;
    absl::StrAppend(&out, "  batching: up to ", b.max_batch_size,
                    " rows, queue delay ",
                    absl::FormatDuration(b.max_queue_delay));
    if (!b.preferred_batch_sizes.empty()) {
      absl::StrAppend(&out, ", preferred sizes ",
                      absl::StrJoin(b.preferred_batch_sizes, ","));
    }
    absl::StrAppend(&out, "\n");
  }
  if (network.precision != Precision::kFloat32) {
    absl::StrAppend(&out, "  precision: ", PrecisionName(network.precision),
                    " (MatMul/Gemm/Conv operands in bfloat16, float32 "
                    "accumulation)\n");
  }
  if (!detailed) return out;
  for (const PartitionInfo& p : network.partitions) {
    absl::StrAppend(
        &out, "  partition ", p.name, " on device ", p.device_id, " (",
        p.device_name, "): ", p.num_nodes, " nodes, weights ",
        FormatBytes(p.weight_bytes), ", activations ",
        FormatBytes(p.activation_bytes), ", ", absl::StrFormat("%.4g", p.flops),
        " FLOPs\n", "    per execution: ", FormatBytes(p.execution_bytes),
        " (inputs and outputs held on the device), ", p.executions,
        p.executions == 1 ? " execution" : " executions", " reserved\n");
    if (p.launch_bytes > 0 || p.unsized_values > 0) {
      absl::StrAppend(&out, "    at the bounds: ", FormatBytes(p.launch_bytes),
                      " of run-time values per launch (reserved)");
      if (p.unsized_values > 0) {
        absl::StrAppend(&out, ", ", p.unsized_values,
                        p.unsized_values == 1 ? " value" : " values",
                        " no bound sizes (allocated per run)");
      }
      absl::StrAppend(&out, "\n");
    }
    absl::StrAppend(&out, "    estimated: memory ", FormatBytes(p.memory_bytes),
                    ", input ", FormatBytes(p.input_bytes),
                    absl::StrFormat(" per run, %.3g ms per run\n",
                                    p.estimated_seconds * 1e3),
                    "    inputs:  ", absl::StrJoin(p.inputs, ", "), "\n",
                    "    outputs: ", absl::StrJoin(p.outputs, ", "), "\n");
    if (!p.device_class.empty()) {
      absl::StrAppend(&out, "    device class: ", p.device_class, "\n");
    }
    if (!p.placement_reason.empty()) {
      absl::StrAppend(&out, "    placed there: ", p.placement_reason, "\n");
    }
    if (!p.replica_devices.empty()) {
      absl::StrAppend(&out, "    replicas on: ",
                      absl::StrJoin(p.replica_devices, ", "), "\n");
    }
  }
  return out;
}

std::string FormatDevice(const DeviceInfo& device) {
  std::string out =
      absl::StrCat(device.id, "  ", device.name, "  type=", device.type,
                   "  memory ", FormatBytes(device.memory_bytes), ", ",
                   FormatBytes(device.available_memory_bytes), " available, ",
                   device.loaded_functions, " partitions loaded");
  // An older glintd does not send the peak.
  if (device.peak_used_memory_bytes > 0) {
    absl::StrAppend(&out, ", at most ",
                    FormatBytes(device.peak_used_memory_bytes),
                    " in use since start");
  }
  if (device.launch_reserved_bytes > 0) {
    absl::StrAppend(&out, ", ", FormatBytes(device.launch_reserved_bytes),
                    " of it reserved for launches' run-time values");
  }
  if (device.launches_running > 0) {
    absl::StrAppend(&out, ", ", device.launches_running, " computing");
  }
  if (!device.unhealthy_reason.empty()) {
    absl::StrAppend(&out, "  UNHEALTHY: ", device.unhealthy_reason);
  }
  if (device.compute_flops > 0) {
    absl::StrAppend(&out, absl::StrFormat("  compute %.4g FLOP/s",
                                          device.compute_flops));
  }
  if (device.link_bytes_per_second > 0) {
    absl::StrAppend(&out, absl::StrFormat("  link %.4g B/s",
                                          device.link_bytes_per_second));
  }
  return out;
}

std::string FormatMicros(double us) {
  if (!(us > 0)) return "-";
  if (us < 1000) return absl::StrFormat("%.0fus", us);
  if (us < 1e6) return absl::StrFormat("%.3gms", us / 1e3);
  return absl::StrFormat("%.3gs", us / 1e6);
}

namespace {

// "p50/p99" of a series.
std::string Quantiles(const DurationStats& d) {
  if (d.count == 0) return "-";
  return absl::StrCat(FormatMicros(d.p50_us), "/", FormatMicros(d.p99_us));
}

// Rows of cells, columns padded to their widest cell, two spaces apart.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) {
      width[c] = std::max(width[c], row[c].size());
    }
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      absl::StrAppend(&line, row[c]);
      if (c + 1 < row.size()) {
        line.append(width[c] - row[c].size() + 2, ' ');
      }
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace

namespace {

// The lines under the statistics table: what only some networks have
// (kernel builds at run time, waits for an execution slot).
std::string FormatNotes(const std::vector<NetworkStatistics>& networks) {
  std::string out;
  for (const NetworkStatistics& n : networks) {
    if (n.shape_builds == 0) continue;
    absl::StrAppend(
        &out, n.name, ": ", n.shape_builds,
        " kernel builds for shapes first met at run time, ",
        FormatMicros(absl::ToDoubleMicroseconds(n.shape_build_time)),
        " in all\n");
  }
  for (const NetworkStatistics& n : networks) {
    if (n.slot_wait.count == 0) continue;
    absl::StrAppend(
        &out, n.name, ": ", n.slot_wait.count,
        " runs waited for an execution slot (every execution its memory is "
        "reserved for was running), ",
        FormatMicros(static_cast<double>(n.slot_wait.total_ns) / 1e3),
        " in all\n");
  }
  return out;
}

}  // namespace

std::string FormatStatistics(const std::vector<NetworkStatistics>& networks,
                             const std::vector<DeviceStatistics>& devices,
                             bool detailed) {
  std::string out;
  if (networks.empty()) {
    out = "no networks\n";
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"network", "ok", "failed", "execs", "queued", "running", "request",
         "queue", "input", "compute", "output"}};
    for (const NetworkStatistics& n : networks) {
      rows.push_back({n.name, absl::StrCat(n.success_count),
                      absl::StrCat(n.failure_count),
                      absl::StrCat(n.execution_count),
                      absl::StrCat(n.queue_depth), absl::StrCat(n.in_flight),
                      Quantiles(n.request), Quantiles(n.queue),
                      Quantiles(n.compute_input), Quantiles(n.compute_infer),
                      Quantiles(n.compute_output)});
    }
    out = Table(rows);
    absl::StrAppend(&out,
                    "(times p50/p99 of the last 1,024 successful requests; "
                    "input, compute, output on the devices)\n");
    absl::StrAppend(&out, FormatNotes(networks));
    if (detailed) {
      for (const NetworkStatistics& n : networks) {
        if (n.partitions.empty()) continue;
        std::vector<std::vector<std::string>> parts = {
            {"  partition", "device", "launches", "compute", "total"}};
        for (const PartitionStatistics& p : n.partitions) {
          parts.push_back(
              {absl::StrCat("  ", p.name), p.device_name,
               absl::StrCat(p.compute.count), Quantiles(p.compute),
               FormatMicros(static_cast<double>(p.compute.total_ns) / 1e3)});
        }
        absl::StrAppend(&out, "\n", n.name, ":\n", Table(parts));
        if (n.last_inference > absl::UnixEpoch()) {
          absl::StrAppend(&out, "  last request answered ",
                          absl::FormatTime("%Y-%m-%d %H:%M:%E3S %Z",
                                           n.last_inference,
                                           absl::LocalTimeZone()),
                          "\n");
        }
      }
    }
  }
  if (!devices.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"device", "memory used", "of", "loaded", "launches", "compute"}};
    for (const DeviceStatistics& d : devices) {
      const DeviceInfo& info = d.device;
      const uint64_t used = info.memory_bytes > info.available_memory_bytes
                                ? info.memory_bytes -
                                      info.available_memory_bytes
                                : 0;
      std::string name = info.name;
      if (!info.unhealthy_reason.empty()) absl::StrAppend(&name, " (DEAD)");
      rows.push_back({name, FormatBytes(used), FormatBytes(info.memory_bytes),
                      absl::StrCat(info.loaded_functions),
                      absl::StrCat(d.compute.count), Quantiles(d.compute)});
    }
    absl::StrAppend(&out, "\n", Table(rows));
  }
  return out;
}

}  // namespace glint
