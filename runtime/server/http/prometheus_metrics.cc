#include "runtime/server/http/prometheus_metrics.h"

#include <charconv>
#include <cstdint>
#include <functional>

#include "absl/strings/str_cat.h"

namespace glint {
namespace {

// The label `version` of every network: Glint keeps one version of each,
// "1" as the REST and OIP endpoints name it.
constexpr absl::string_view kVersion = "1";

// Length of the well-formed UTF-8 sequence starting at text[i], 0 if none
// (Unicode's table 3-7: no overlong forms, surrogates or code points past
// U+10FFFF).
size_t Utf8SequenceLength(absl::string_view text, size_t i) {
  const auto byte = [&](size_t k) {
    return static_cast<unsigned char>(text[i + k]);
  };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // Range of the second byte.
  if (lead >= 0xc2 && lead <= 0xdf) {
    n = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    n = 3;
    if (lead == 0xe0) lo = 0xa0;
    if (lead == 0xed) hi = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    n = 4;
    if (lead == 0xf0) lo = 0x90;
    if (lead == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xbf) return 0;
  }
  return n;
}

std::string FormatDouble(double value) {
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, r.ptr);
}

// One metric family: HELP and TYPE, then a sample per item.
class Page {
 public:
  void Family(absl::string_view name, absl::string_view type,
              absl::string_view help) {
    absl::StrAppend(&text_, "# HELP ", name, " ", help, "\n# TYPE ", name,
                    " ", type, "\n");
    name_ = std::string(name);
  }
  // `labels` is the rendered label set, braces included.
  void Sample(absl::string_view labels, absl::string_view value) {
    absl::StrAppend(&text_, name_, labels, " ", value, "\n");
  }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
  std::string name_;
};

std::string ModelLabels(const NetworkStatistics& n) {
  return absl::StrCat("{model=\"", EscapeLabelValue(n.name), "\",version=\"",
                      kVersion, "\"}");
}

std::string DeviceLabels(const DeviceInfo& d) {
  return absl::StrCat("{device=\"", EscapeLabelValue(d.name), "\"}");
}

std::string PartitionLabels(const NetworkStatistics& n,
                            const PartitionStatistics& p) {
  return absl::StrCat("{model=\"", EscapeLabelValue(n.name),
                      "\",partition=\"", EscapeLabelValue(p.name),
                      "\",device=\"", EscapeLabelValue(p.device_name), "\"}");
}

// Triton's cumulative durations are whole microseconds.
std::string Micros(const DurationStats& d) {
  return absl::StrCat(d.total_ns / 1000);
}

}  // namespace

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size();) {
    const char c = value[i];
    if (c == '\\') {
      out.append("\\\\");
    } else if (c == '"') {
      out.append("\\\"");
    } else if (c == '\n') {
      out.append("\\n");
    } else {
      const size_t n = Utf8SequenceLength(value, i);
      if (n == 0) {
        out.append("\xef\xbf\xbd");  // U+FFFD for one bad byte.
        ++i;
      } else {
        out.append(value.data() + i, n);
        i += n;
      }
      continue;
    }
    ++i;
  }
  return out;
}

std::string PrometheusMetricsText(
    const std::vector<NetworkStatistics>& networks,
    const std::vector<DeviceStatistics>& devices) {
  Page page;
  // Triton's per-model families.
  struct ModelFamily {
    absl::string_view name;
    absl::string_view type;
    absl::string_view help;
    std::function<std::string(const NetworkStatistics&)> value;
  };
  const ModelFamily model_families[] = {
      {"nv_inference_request_success", "counter",
       "Successful inference requests, all batch sizes",
       [](const NetworkStatistics& n) {
         return absl::StrCat(n.success_count);
       }},
      {"nv_inference_request_failure", "counter",
       "Failed inference requests, all batch sizes",
       [](const NetworkStatistics& n) {
         return absl::StrCat(n.failure_count);
       }},
      // Triton counts the inferences performed, which failed requests are
      // not (NetworkStatistics::inference_count includes them): one per
      // successful request here.
      {"nv_inference_count", "counter",
       "Inferences performed (one per successful request)",
       [](const NetworkStatistics& n) {
         return absl::StrCat(n.success_count);
       }},
      {"nv_inference_exec_count", "counter",
       "Model executions performed (one may serve several requests when "
       "batching)",
       [](const NetworkStatistics& n) {
         return absl::StrCat(n.execution_count);
       }},
      {"nv_inference_request_duration_us", "counter",
       "Cumulative duration of successful inference requests, end to end, "
       "in microseconds",
       [](const NetworkStatistics& n) { return Micros(n.request); }},
      {"nv_inference_queue_duration_us", "counter",
       "Cumulative time successful requests waited in the queue, in "
       "microseconds",
       [](const NetworkStatistics& n) { return Micros(n.queue); }},
      {"nv_inference_compute_input_duration_us", "counter",
       "Cumulative time taking inputs to the devices, in microseconds",
       [](const NetworkStatistics& n) { return Micros(n.compute_input); }},
      {"nv_inference_compute_infer_duration_us", "counter",
       "Cumulative time computing the model's partitions, in microseconds",
       [](const NetworkStatistics& n) { return Micros(n.compute_infer); }},
      {"nv_inference_compute_output_duration_us", "counter",
       "Cumulative time bringing outputs back to the host, in microseconds",
       [](const NetworkStatistics& n) { return Micros(n.compute_output); }},
      {"glint_queue_depth", "gauge",
       "Runs of the model waiting for admission now",
       [](const NetworkStatistics& n) { return absl::StrCat(n.queue_depth); }},
      {"glint_runs_in_flight", "gauge",
       "Runs of the model admitted and not finished now",
       [](const NetworkStatistics& n) { return absl::StrCat(n.in_flight); }},
      {"glint_shape_builds_total", "counter",
       "Kernel builds that runs paid for shapes first met at run time",
       [](const NetworkStatistics& n) { return absl::StrCat(n.shape_builds); }},
      {"glint_shape_build_seconds_total", "counter",
       "Cumulative time of those builds",
       [](const NetworkStatistics& n) {
         return FormatDouble(absl::ToDoubleSeconds(n.shape_build_time));
       }},
      {"glint_slot_waits_total", "counter",
       "Runs (batches, when batching) that waited for admission because "
       "every execution the model's device memory is reserved for was "
       "running",
       [](const NetworkStatistics& n) {
         return absl::StrCat(n.slot_wait.count);
       }},
      {"glint_slot_wait_seconds_total", "counter",
       "Cumulative time those runs waited, from asking to admission",
       [](const NetworkStatistics& n) {
         return FormatDouble(static_cast<double>(n.slot_wait.total_ns) / 1e9);
       }},
  };
  for (const ModelFamily& family : model_families) {
    page.Family(family.name, family.type, family.help);
    for (const NetworkStatistics& n : networks) {
      page.Sample(ModelLabels(n), family.value(n));
    }
  }

  page.Family("glint_partition_executions_total", "counter",
              "Launches of the partition on its devices");
  for (const NetworkStatistics& n : networks) {
    for (const PartitionStatistics& p : n.partitions) {
      page.Sample(PartitionLabels(n, p), absl::StrCat(p.compute.count));
    }
  }
  page.Family("glint_partition_compute_seconds_total", "counter",
              "Cumulative compute time of the partition's launches");
  for (const NetworkStatistics& n : networks) {
    for (const PartitionStatistics& p : n.partitions) {
      page.Sample(PartitionLabels(n, p),
                  FormatDouble(static_cast<double>(p.compute.total_ns) / 1e9));
    }
  }

  page.Family("glint_device_memory_total_bytes", "gauge",
              "Memory capacity of the device");
  for (const DeviceStatistics& d : devices) {
    page.Sample(DeviceLabels(d.device), absl::StrCat(d.device.memory_bytes));
  }
  page.Family("glint_device_memory_used_bytes", "gauge",
              "Memory of the device allocated now");
  for (const DeviceStatistics& d : devices) {
    const DeviceInfo& i = d.device;
    const uint64_t used = i.memory_bytes >= i.available_memory_bytes
                              ? i.memory_bytes - i.available_memory_bytes
                              : 0;
    page.Sample(DeviceLabels(i), absl::StrCat(used));
  }
  page.Family("glint_device_memory_peak_bytes", "gauge",
              "The most memory of the device allocated at once since it "
              "started");
  for (const DeviceStatistics& d : devices) {
    page.Sample(DeviceLabels(d.device),
                absl::StrCat(d.device.peak_used_memory_bytes));
  }
  page.Family("glint_device_launch_reserved_bytes", "gauge",
              "Memory of the device set aside for the values launches "
              "allocate as they run (counted as used)");
  for (const DeviceStatistics& d : devices) {
    page.Sample(DeviceLabels(d.device),
                absl::StrCat(d.device.launch_reserved_bytes));
  }
  page.Family("glint_device_loaded_partitions", "gauge",
              "Compiled partitions loaded on the device now");
  for (const DeviceStatistics& d : devices) {
    page.Sample(DeviceLabels(d.device),
                absl::StrCat(d.device.loaded_functions));
  }
  page.Family("glint_device_launches_running", "gauge",
              "Launches computing on the device now (queued ones excluded)");
  for (const DeviceStatistics& d : devices) {
    page.Sample(DeviceLabels(d.device),
                absl::StrCat(d.device.launches_running));
  }
  page.Family("glint_device_healthy", "gauge",
              "1 while the device works, 0 once it has failed");
  for (const DeviceStatistics& d : devices) {
    page.Sample(DeviceLabels(d.device),
                d.device.unhealthy_reason.empty() ? "1" : "0");
  }
  page.Family("glint_device_executions_total", "counter",
              "Partition launches of successful runs on the device");
  for (const DeviceStatistics& d : devices) {
    page.Sample(DeviceLabels(d.device), absl::StrCat(d.compute.count));
  }
  page.Family("glint_device_compute_seconds_total", "counter",
              "Cumulative compute time of those launches");
  for (const DeviceStatistics& d : devices) {
    page.Sample(DeviceLabels(d.device),
                FormatDouble(static_cast<double>(d.compute.total_ns) / 1e9));
  }
  return page.Take();
}

}  // namespace glint
