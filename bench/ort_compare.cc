// Glint vs ONNX Runtime on the generated models (bench/make_models.py):
// each model runs in-process through HostManager on one simulated device,
// and through onnxruntime-node (bench/ort_run.js) in the same run with the
// same thread count; outputs must agree (rtol 1e-3, atol 1e-4) and the
// median latencies and their ratio Glint / ORT are printed.
//
//   /usr/bin/python3 bench/make_models.py /tmp/models
//   (cd bench && npm install --ignore-scripts onnxruntime-node)
//   bazel run //bench:ort_compare -- /tmp/models [threads] [iters]
//
// oneDNN runs on OpenMP, so the thread count is applied through
// OMP_NUM_THREADS before anything starts (re-exec'd when it differs).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/device_info.h"
#include "runtime/host_manager.h"

namespace glint {
namespace {

// Must match ort_run.js.
float InputValue(int64_t i) {
  return static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The node script next to this binary's sources: the runfiles copy under
// `bazel run`, else the workspace's.
std::string ScriptPath() {
  for (const char* p : {"bench/ort_run.js", "../bench/ort_run.js"}) {
    if (access(p, R_OK) == 0) return p;
  }
  const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  return ws != nullptr ? std::string(ws) + "/bench/ort_run.js"
                       : "bench/ort_run.js";
}

int Run(const std::string& dir, int threads, int iters,
        const std::vector<std::string>& models) {
  std::printf("%-12s %10s %10s %8s  %s\n", "model", "glint_ms", "ort_ms",
              "ratio", "max_rel_diff");
  DeviceConfig device;
  device.memory_bytes = 8ull << 30;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, {device});
  if (!host.ok()) {
    std::cerr << host.status() << "\n";
    return 1;
  }
  int failures = 0;
  for (const std::string& name : models) {
    const std::string path = absl::StrCat(dir, "/", name, ".onnx");
    const std::string bytes = ReadFile(path);
    if (bytes.empty()) {
      std::cerr << "cannot read " << path << "\n";
      return 1;
    }
    absl::StatusOr<NetworkInfo> info = (*host)->AddNetwork(name, bytes, {});
    if (!info.ok()) {
      std::cerr << name << ": AddNetwork: " << info.status() << "\n";
      ++failures;
      continue;
    }
    const ValueInfo& in = info->inputs[0];
    Tensor x = *Tensor::Create(DType::kFloat32, in.shape);
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      x.data<float>()[i] = InputValue(i);
    }
    std::vector<NamedTensor> inputs = {{in.name, x}};
    absl::StatusOr<std::vector<NamedTensor>> out;
    for (int i = 0; i < 3; ++i) out = (*host)->RunNetwork(name, inputs);
    if (!out.ok()) {
      std::cerr << name << ": RunNetwork: " << out.status() << "\n";
      ++failures;
      continue;
    }
    std::vector<double> times;
    for (int i = 0; i < iters; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      out = (*host)->RunNetwork(name, inputs);
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - t0)
                          .count());
    }
    const double glint_ms = Median(times);

    const std::string ort_out = absl::StrCat("/tmp/glint_ort_", getpid(), "_",
                                             name, ".bin");
    const std::string cmd = absl::StrCat(
        "node ", ScriptPath(), " ", path, " ",
        absl::StrJoin(in.shape.dims(), ","), " ", iters, " ", threads, " ",
        ort_out);
    FILE* pipe = popen(cmd.c_str(), "r");
    double ort_ms = -1;
    char line[256];
    while (pipe != nullptr && std::fgets(line, sizeof(line), pipe)) {
      std::sscanf(line, "median_ms %lf", &ort_ms);
    }
    if (pipe == nullptr || pclose(pipe) != 0 || ort_ms < 0) {
      std::cerr << name << ": ONNX Runtime failed (" << cmd << ")\n";
      ++failures;
      continue;
    }
    const std::string ort_bytes = ReadFile(ort_out);
    std::remove(ort_out.c_str());
    const Tensor& y = (*out)[0].tensor;
    double max_rel = 0;
    bool agree = ort_bytes.size() == y.num_bytes();
    for (int64_t i = 0; agree && i < y.num_elements(); ++i) {
      float r;
      std::memcpy(&r, ort_bytes.data() + i * sizeof(float), sizeof(float));
      const double g = y.data<float>()[i];
      const double diff = std::fabs(g - r);
      max_rel = std::max(max_rel, diff / (1e-4 + std::fabs(r)));
      agree = diff <= 1e-4 + 1e-3 * std::fabs(r);
    }
    std::printf("%-12s %10.3f %10.3f %8.2f  %.2e%s\n", name.c_str(),
                glint_ms, ort_ms, glint_ms / ort_ms, max_rel,
                agree ? "" : "  OUTPUTS DISAGREE");
    if (!agree) ++failures;
    (void)(*host)->RemoveNetwork(name);
  }
  std::printf("threads %d, %d iterations each, median latency\n", threads,
              iters);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: ort_compare MODEL_DIR [threads] [iters] [models]\n";
    return 2;
  }
  const int threads =
      argc > 2 ? std::atoi(argv[2])
               : static_cast<int>(std::thread::hardware_concurrency());
  const int iters = argc > 3 ? std::atoi(argv[3]) : 20;
  const std::vector<std::string> models =
      argc > 4 ? absl::StrSplit(argv[4], ',')
               : std::vector<std::string>{"mlp", "resnet", "transformer"};
  const std::string want = std::to_string(threads);
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (omp == nullptr || want != omp) {
    // OpenMP reads its thread count once, at start-up.
    setenv("OMP_NUM_THREADS", want.c_str(), 1);
    execv("/proc/self/exe", argv);
  }
  return glint::Run(argv[1], threads, iters, models);
}
