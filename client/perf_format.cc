// `glint perf`'s table and CSV (perf.h).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/perf.h"

namespace glint {
namespace {

// "-" for a figure the server did not report.
std::string Figure(double value, int decimals) {
  if (value < 0) return "-";
  return absl::StrFormat("%.*f", decimals, value);
}

}  // namespace

std::string PerfTableHeader() {
  return absl::StrFormat("%11s %10s %8s %10s %9s %9s %9s %15s %17s",
                         "concurrency", "runs", "errors", "runs/s", "p50_ms",
                         "p90_ms", "p99_ms", "server_queue_us",
                         "server_compute_us");
}

std::string FormatPerfRow(const PerfLevel& l) {
  return absl::StrFormat("%11d %10d %8d %10.1f %9.3f %9.3f %9.3f %15s %17s",
                         l.concurrency, l.runs, l.errors, l.throughput,
                         l.p50_ms, l.p90_ms, l.p99_ms,
                         Figure(l.server_queue_us, 1),
                         Figure(l.server_compute_us, 1));
}

std::string FormatPerfCsv(const std::vector<PerfLevel>& levels) {
  std::string csv =
      "concurrency,runs,errors,seconds,runs_per_second,p50_ms,p90_ms,p99_ms,"
      "server_queue_us,server_compute_us\n";
  for (const PerfLevel& l : levels) {
    absl::StrAppend(
        &csv,
        absl::StrFormat("%d,%d,%d,%.3f,%.3f,%.4f,%.4f,%.4f,%s,%s\n",
                        l.concurrency, l.runs, l.errors, l.seconds,
                        l.throughput, l.p50_ms, l.p90_ms, l.p99_ms,
                        l.server_queue_us < 0
                            ? std::string()
                            : Figure(l.server_queue_us, 3),
                        l.server_compute_us < 0
                            ? std::string()
                            : Figure(l.server_compute_us, 3)));
  }
  return csv;
}

}  // namespace glint
