// Glint vs ONNX Runtime on the generated models (bench/make_models.py):
// each model runs in-process through HostManager on one simulated device,
// through a real glintd with one such device (loopback gRPC, the C++
// client), and through onnxruntime-node (bench/ort_run.js), in the same run
// with the same thread count; outputs must agree (rtol 1e-3, atol 1e-4) and
// the median latencies and their ratios to ORT's are printed.
//
//   /usr/bin/python3 bench/make_models.py /tmp/models
//   (cd bench && npm install --ignore-scripts onnxruntime-node)
//   bazel run //bench:ort_compare -- /tmp/models [threads] [iters] [models]
//       [rounds]
//
// `models` is a comma-separated subset of mlp,resnet,transformer.
//
// oneDNN runs on OpenMP, so the thread count is applied through
// OMP_NUM_THREADS before anything starts (re-exec'd when it differs).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/timing.h"
#include "core/device_info.h"
#include "runtime/host_manager.h"
#include "tests/process_util.h"

namespace glint {
namespace {

using bench::Median;
using bench::TimeRuns;

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

// Largest |glint - ort| / (1e-4 + |ort|); sets *agree to whether every
// element is within atol 1e-4 + rtol 1e-3.
double Compare(const Tensor& y, const std::string& ort_bytes, bool* agree) {
  double max_rel = 0;
  *agree = ort_bytes.size() == y.num_bytes() && y.dtype() == DType::kFloat32;
  for (int64_t i = 0; *agree && i < y.num_elements(); ++i) {
    float r;
    std::memcpy(&r, ort_bytes.data() + i * sizeof(float), sizeof(float));
    const double g = y.data<float>()[i];
    const double diff = std::fabs(g - r);
    max_rel = std::max(max_rel, diff / (1e-4 + std::fabs(r)));
    *agree = diff <= 1e-4 + 1e-3 * std::fabs(r);
  }
  return max_rel;
}

// ONNX Runtime on `path`: latencies appended to *times, output bytes into
// *out.
absl::Status RunOrt(const std::string& path, const Shape& shape, int iters,
                    int threads, std::string* out, std::vector<double>* times) {
  const std::string out_path =
      absl::StrCat("/tmp/glint_ort_", getpid(), ".bin");
  const std::string cmd = absl::StrCat(
      "node ", ScriptPath(), " ", path, " ", absl::StrJoin(shape.dims(), ","),
      " ", iters, " ", threads, " ", out_path);
  FILE* pipe = popen(cmd.c_str(), "r");
  const size_t before = times->size();
  char line[256];
  while (pipe != nullptr && std::fgets(line, sizeof(line), pipe)) {
    double ms;
    if (std::sscanf(line, "ms %lf", &ms) == 1) times->push_back(ms);
  }
  if (pipe == nullptr || pclose(pipe) != 0 || times->size() == before) {
    return absl::InternalError(absl::StrCat("ONNX Runtime failed: ", cmd));
  }
  *out = ReadFile(out_path);
  std::remove(out_path.c_str());
  return absl::OkStatus();
}

int Run(const std::string& dir, int threads, int iters, int rounds,
        const std::vector<std::string>& models) {
  DeviceConfig device;
  device.memory_bytes = 8ull << 30;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, {device});
  if (!host.ok()) {
    std::cerr << host.status() << "\n";
    return 1;
  }
  // The same single device in a real daemon, reached over loopback gRPC.
  absl::StatusOr<std::unique_ptr<testing::GlintdProcess>> glintd =
      testing::GlintdProcess::Start({"--devices=sim:memory=8GiB",
                                     "--log_level=warning"});
  if (!glintd.ok()) {
    std::cerr << "glintd: " << glintd.status() << "\n";
    return 1;
  }
  std::printf("%-12s %9s %9s %9s %8s %8s  %s\n", "model", "glint_ms",
              "glintd_ms", "ort_ms", "ratio", "ratio_d", "max_rel_diff");
  int failures = 0;
  for (const std::string& name : models) {
    const std::string path = absl::StrCat(dir, "/", name, ".onnx");
    const std::string bytes = ReadFile(path);
    if (bytes.empty()) {
      std::cerr << "cannot read " << path << "\n";
      return 1;
    }
    absl::StatusOr<NetworkInfo> info = (*host)->AddNetwork(name, bytes, {});
    absl::StatusOr<NetworkInfo> remote_info =
        (*glintd)->client().AddNetwork(name, bytes);
    if (!info.ok() || !remote_info.ok()) {
      std::cerr << name << ": AddNetwork: "
                << (info.ok() ? remote_info.status() : info.status()) << "\n";
      ++failures;
      continue;
    }
    const ValueInfo& in = info->inputs[0];
    Tensor x = *Tensor::Create(DType::kFloat32, in.shape);
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      x.data<float>()[i] = InputValue(i);
    }
    const std::vector<NamedTensor> inputs = {{in.name, x}};
    std::vector<NamedTensor> local_out, remote_out;
    std::string ort_bytes;
    // The three ways take turns, `rounds` times: this machine's noise comes
    // and goes, and should fall on each of them alike.
    std::vector<double> local_us, remote_us, ort_times;  // ORT's in ms.
    absl::Status status;
    for (int r = 0; r < rounds && status.ok(); ++r) {
      status.Update(TimeRuns(
          iters, [&] { return (*host)->RunNetwork(name, inputs); },
          &local_out, &local_us));
      status.Update(TimeRuns(
          iters, [&] { return (*glintd)->client().RunNetwork(name, inputs); },
          &remote_out, &remote_us));
      if (status.ok()) {
        status.Update(RunOrt(path, in.shape, iters, threads, &ort_bytes,
                             &ort_times));
      }
    }
    if (!status.ok()) {
      std::cerr << name << ": " << status << "\n";
      ++failures;
      continue;
    }
    const double glint_ms = Median(local_us) / 1000;
    const double glintd_ms = Median(remote_us) / 1000;
    const double ort_ms = Median(ort_times);
    bool agree_local = false, agree_remote = false;
    const double max_rel = std::max(
        Compare(local_out[0].tensor, ort_bytes, &agree_local),
        Compare(remote_out[0].tensor, ort_bytes, &agree_remote));
    const bool agree = agree_local && agree_remote;
    std::printf("%-12s %9.3f %9.3f %9.3f %8.2f %8.2f  %.2e%s\n",
                name.c_str(), glint_ms, glintd_ms, ort_ms,
                glint_ms / ort_ms, glintd_ms / ort_ms, max_rel,
                agree ? "" : "  OUTPUTS DISAGREE");
    if (!agree) ++failures;
    (void)(*host)->RemoveNetwork(name);
    (void)(*glintd)->client().RemoveNetwork(name);
  }
  std::printf(
      "threads %d, %d rounds of %d iterations each way, median latency; "
      "ratio = glint / ort (in-process), ratio_d = glintd over gRPC / ort\n",
      threads, rounds, iters);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: ort_compare MODEL_DIR [threads] [iters] [models] "
                 "[rounds]\n";
    return 2;
  }
  const int threads =
      argc > 2 ? std::atoi(argv[2])
               : static_cast<int>(std::thread::hardware_concurrency());
  const int iters = argc > 3 ? std::atoi(argv[3]) : 20;
  const std::vector<std::string> models =
      argc > 4 ? absl::StrSplit(argv[4], ',')
               : std::vector<std::string>{"mlp", "resnet", "transformer"};
  const int rounds = argc > 5 ? std::max(1, std::atoi(argv[5])) : 5;
  const std::string want = std::to_string(threads);
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (omp == nullptr || want != omp) {
    // OpenMP reads its thread count once, at start-up.
    setenv("OMP_NUM_THREADS", want.c_str(), 1);
    execv("/proc/self/exe", argv);
  }
  return glint::Run(argv[1], threads, iters, rounds, models);
}
