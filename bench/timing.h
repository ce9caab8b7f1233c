// Timing helpers shared by the benchmarks that run networks, and the two
// files they read (models, /proc/loadavg).
#ifndef GLINT_BENCH_TIMING_H_
#define GLINT_BENCH_TIMING_H_

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/types.h"

namespace glint::bench {

// The whole file at `path` ("" when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// /proc/loadavg's line: how busy the machine was around a measurement.
inline std::string LoadAverage() {
  std::string load = ReadFile("/proc/loadavg");
  while (!load.empty() && load.back() == '\n') load.pop_back();
  return load;
}

// The middle sample (the upper one of an even count); 0 when empty.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using RunFn = std::function<absl::StatusOr<std::vector<NamedTensor>>()>;

// Appends to *micros the microseconds of `iters` calls of `run` after
// `warmup` untimed calls; the last call's outputs land in `out` (when not
// null). A failing call ends the timing with its status.
inline absl::Status TimeRuns(int iters, const RunFn& run,
                             std::vector<NamedTensor>* out,
                             std::vector<double>* micros, int warmup = 3) {
  for (int i = 0; i < warmup + iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<NamedTensor>> r = run();
    const double us = std::chrono::duration<double, std::micro>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
    if (!r.ok()) return r.status();
    if (out != nullptr) *out = *std::move(r);
    if (i >= warmup) micros->push_back(us);
  }
  return absl::OkStatus();
}

}  // namespace glint::bench

#endif  // GLINT_BENCH_TIMING_H_
