// glintd's /metrics page: Prometheus's text exposition format (0.0.4) of
// the runtime's statistics.
//
// Per network, Triton's metric names and labels (`model`, `version`), so
// that dashboards made for Triton read glintd unchanged; these are
// cumulative counters, durations in microseconds of successful requests,
// nv_inference_count one per successful request (Triton counts performed
// inferences, not failed requests):
//   nv_inference_request_success, nv_inference_request_failure,
//   nv_inference_count, nv_inference_exec_count,
//   nv_inference_request_duration_us, nv_inference_queue_duration_us,
//   nv_inference_compute_input_duration_us,
//   nv_inference_compute_infer_duration_us,
//   nv_inference_compute_output_duration_us
// (Triton's names predate Prometheus's conventions: promtool's linter
// flags their missing `_total`, their abbreviated unit and the `_count`
// ending of two of them, and nothing else). Glint's own follow the conventions
// (base units, `_total` on counters):
//   glint_queue_depth, glint_runs_in_flight            {model, version}
//   glint_partition_executions_total,
//   glint_partition_compute_seconds_total       {model, partition, device}
//   glint_device_memory_total_bytes, glint_device_memory_used_bytes,
//   glint_device_memory_peak_bytes,
//   glint_device_loaded_partitions, glint_device_launches_running,
//   glint_device_healthy,
//   glint_device_executions_total,
//   glint_device_compute_seconds_total                          {device}
//
// Pure functions (thread-safe).
#ifndef GLINT_RUNTIME_SERVER_HTTP_PROMETHEUS_METRICS_H_
#define GLINT_RUNTIME_SERVER_HTTP_PROMETHEUS_METRICS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "api/types.h"

namespace glint {

// The Content-Type of the page.
inline constexpr absl::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// The whole page: every family's HELP and TYPE lines once, then its
// samples, one per network (partition, device) in the order given
// (HostManager::GetAllStatistics and GetDeviceStatistics). Names are user
// strings: label values are escaped (EscapeLabelValue).
std::string PrometheusMetricsText(
    const std::vector<NetworkStatistics>& networks,
    const std::vector<DeviceStatistics>& devices);

// `value` as it goes between a label's quotes: backslash, double quote
// and line feed escaped as \\, \" and \n, and every byte that is not part
// of well-formed UTF-8 replaced by U+FFFD (Prometheus refuses a page with
// invalid UTF-8 in a label value).
std::string EscapeLabelValue(absl::string_view value);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_HTTP_PROMETHEUS_METRICS_H_
