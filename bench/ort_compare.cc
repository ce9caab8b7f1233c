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
//       [rounds] [--glintd=MODELS|none] [--precision]
//
// `models` is a comma-separated list of model names in the folder (default
// mlp,resnet,transformer), or `all` for every .onnx file in it (the sweep:
// make_models.py --sweep). The geometric mean of the ratios closes the
// table. --glintd limits the runs through glintd to those models (the
// others print "-"). --precision measures instead, in-process only, each
// model at float32 and at bf16 (AddNetworkOptions::precision) in turns and
// prints both latencies, their ratio and bf16's largest error against
// float32.
// Models named *_int8 (make_models.py's QDQ models) are compared with ORT
// by their largest absolute difference, and Glint's float32 run of the
// model they quantize (mlp_int8: mlp.onnx) takes turns with them
// in-process, on its own host: the table then prints int8 / float32.
//
// oneDNN runs on OpenMP, so the thread count is applied through
// OMP_NUM_THREADS before anything starts (re-exec'd when it differs).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/timing.h"
#include "core/allocator_policy.h"
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

// Largest |glint - ort| / (1e-4 + |ort|), and into *max_abs the largest
// |glint - ort|; sets *agree to whether every element is within atol 1e-4 +
// rtol 1e-3 or, for int8 models (`quantized`), whether the largest
// difference is within 5% of ORT's largest |output|: two int8 engines
// round differently (see bench/README.md).
double Compare(const Tensor& y, const std::string& ort_bytes, bool quantized,
               bool* agree, double* max_abs) {
  double max_rel = 0, ort_max = 0;
  *max_abs = 0;
  *agree = ort_bytes.size() == y.num_bytes() && y.dtype() == DType::kFloat32;
  bool close = true;
  for (int64_t i = 0; *agree && i < y.num_elements(); ++i) {
    float r;
    std::memcpy(&r, ort_bytes.data() + i * sizeof(float), sizeof(float));
    const double g = y.data<float>()[i];
    const double diff = std::fabs(g - r);
    max_rel = std::max(max_rel, diff / (1e-4 + std::fabs(r)));
    *max_abs = std::max(*max_abs, diff);
    ort_max = std::max(ort_max, static_cast<double>(std::fabs(r)));
    close = close && diff <= 1e-4 + 1e-3 * std::fabs(r);
  }
  if (*agree) *agree = quantized ? *max_abs <= 0.05 * ort_max : close;
  return max_rel;
}

bool IsQuantized(const std::string& model) {
  return absl::EndsWith(model, "_int8");
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

// The machine's load average now (other jobs share its cores).
std::string LoadAverage() {
  std::string load = ReadFile("/proc/loadavg");
  while (!load.empty() && load.back() == '\n') load.pop_back();
  return load;
}

// `models` as listed, or every .onnx file in `dir` (sorted) for "all".
std::vector<std::string> ModelNames(const std::string& dir,
                                    const std::vector<std::string>& models) {
  if (models.size() != 1 || models[0] != "all") return models;
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".onnx") {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

double GeometricMean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double log_sum = 0;
  for (double v : values) log_sum += std::log(v);
  return std::exp(log_sum / values.size());
}

// The network's input filled with the pattern ort_run.js uses.
std::vector<NamedTensor> PatternInput(const NetworkInfo& info) {
  const ValueInfo& in = info.inputs[0];
  Tensor x = *Tensor::Create(DType::kFloat32, in.shape);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = InputValue(i);
  }
  return {{in.name, x}};
}

// --precision: each model at float32 and at bf16, in-process, in turns.
int RunPrecision(const std::string& dir, int threads, int iters, int rounds,
                 const std::vector<std::string>& models) {
  DeviceConfig device;
  device.memory_bytes = 8ull << 30;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, {device});
  if (!host.ok()) {
    std::cerr << host.status() << "\n";
    return 1;
  }
  std::printf("load average at start: %s\n", LoadAverage().c_str());
  std::printf("%-24s %9s %9s %8s %10s %10s\n", "model", "f32_ms", "bf16_ms",
              "ratio", "max_rel", "rel_linf");
  int failures = 0;
  std::vector<double> ratios;
  for (const std::string& name : models) {
    const std::string bytes = ReadFile(absl::StrCat(dir, "/", name, ".onnx"));
    AddNetworkOptions bf16;
    bf16.precision = Precision::kBFloat16;
    absl::StatusOr<NetworkInfo> info =
        (*host)->AddNetwork(name + "_f32", bytes, {});
    absl::StatusOr<NetworkInfo> info_bf16 =
        (*host)->AddNetwork(name + "_bf16", bytes, bf16);
    if (!info.ok() || !info_bf16.ok()) {
      std::cerr << name << ": AddNetwork: "
                << (info.ok() ? info_bf16.status() : info.status()) << "\n";
      ++failures;
      continue;
    }
    const std::vector<NamedTensor> inputs = PatternInput(*info);
    std::vector<NamedTensor> f32_out, bf16_out;
    std::vector<double> f32_us, bf16_us;
    absl::Status status;
    for (int r = 0; r < rounds && status.ok(); ++r) {
      status.Update(TimeRuns(
          iters, [&] { return (*host)->RunNetwork(name + "_f32", inputs); },
          &f32_out, &f32_us));
      status.Update(TimeRuns(
          iters, [&] { return (*host)->RunNetwork(name + "_bf16", inputs); },
          &bf16_out, &bf16_us));
    }
    (void)(*host)->RemoveNetwork(name + "_f32");
    (void)(*host)->RemoveNetwork(name + "_bf16");
    if (!status.ok()) {
      std::cerr << name << ": " << status << "\n";
      ++failures;
      continue;
    }
    // Elementwise |bf16 - f32| / (1e-4 + |f32|) as the ORT comparison
    // reads it, and the largest difference over the largest |f32|.
    const Tensor& f = f32_out[0].tensor;
    const Tensor& b = bf16_out[0].tensor;
    double max_rel = 0, max_diff = 0, max_abs = 0;
    for (int64_t i = 0; i < f.num_elements(); ++i) {
      const double fv = f.data<float>()[i];
      const double diff = std::fabs(b.data<float>()[i] - fv);
      max_rel = std::max(max_rel, diff / (1e-4 + std::fabs(fv)));
      max_diff = std::max(max_diff, diff);
      max_abs = std::max(max_abs, std::fabs(fv));
    }
    const double f32_ms = Median(f32_us) / 1000;
    const double bf16_ms = Median(bf16_us) / 1000;
    ratios.push_back(bf16_ms / f32_ms);
    std::printf("%-24s %9.3f %9.3f %8.2f %10.2e %10.2e\n", name.c_str(),
                f32_ms, bf16_ms, bf16_ms / f32_ms, max_rel,
                max_abs > 0 ? max_diff / max_abs : 0.0);
  }
  std::printf(
      "geomean bf16/f32 %.2f; threads %d, %d rounds of %d iterations each "
      "way, median latency in-process; max_rel = max |bf16 - f32| / (1e-4 + "
      "|f32|), rel_linf = max |bf16 - f32| / max |f32|; load average at "
      "end: %s\n",
      GeometricMean(ratios), threads, rounds, iters, LoadAverage().c_str());
  return failures == 0 ? 0 : 1;
}

int Run(const std::string& dir, int threads, int iters, int rounds,
        const std::vector<std::string>& models,
        const std::optional<std::set<std::string>>& through_glintd) {
  DeviceConfig device;
  device.memory_bytes = 8ull << 30;
  // The same single device in a real daemon, reached over loopback gRPC.
  absl::StatusOr<std::unique_ptr<testing::GlintdProcess>> glintd =
      testing::GlintdProcess::Start({"--devices=sim:memory=8GiB",
                                     "--log_level=warning"});
  if (!glintd.ok()) {
    std::cerr << "glintd: " << glintd.status() << "\n";
    return 1;
  }
  std::printf("load average at start: %s\n", LoadAverage().c_str());
  std::printf("%-24s %9s %9s %9s %8s %8s  %-12s %s\n", "model", "glint_ms",
              "glintd_ms", "ort_ms", "ratio", "ratio_d", "max_rel_diff",
              "max_abs_diff");
  int failures = 0;
  std::vector<double> ratios, ratios_d;
  std::string above_one;
  for (const std::string& name : models) {
    const bool remote = !through_glintd.has_value() ||
                        through_glintd->count(name) > 0;
    // A fresh in-process host (and device threads) per model: on a loaded
    // machine the kernel's scheduler makes a thread that has just run a
    // heavy model wait a time slice (~4 ms) at each later wake-up, which
    // inflated the next small model's in-process time 5-10x (a round
    // 4.0 or 8.0 ms per run) while glintd's idle threads were not hit.
    absl::StatusOr<std::unique_ptr<HostManager>> host =
        HostManager::CreateFromConfigs({}, {device});
    if (!host.ok()) {
      std::cerr << host.status() << "\n";
      return 1;
    }
    const std::string path = absl::StrCat(dir, "/", name, ".onnx");
    const std::string bytes = ReadFile(path);
    if (bytes.empty()) {
      std::cerr << "cannot read " << path << "\n";
      return 1;
    }
    absl::StatusOr<NetworkInfo> info = (*host)->AddNetwork(name, bytes, {});
    absl::StatusOr<NetworkInfo> remote_info =
        remote ? (*glintd)->client().AddNetwork(name, bytes) : info;
    if (!info.ok() || !remote_info.ok()) {
      std::cerr << name << ": AddNetwork: "
                << (info.ok() ? remote_info.status() : info.status()) << "\n";
      ++failures;
      continue;
    }
    const ValueInfo& in = info->inputs[0];
    const std::vector<NamedTensor> inputs = PatternInput(*info);
    std::vector<NamedTensor> local_out, remote_out;
    std::string ort_bytes;
    // The three ways take turns, `rounds` times: this machine's noise comes
    // and goes, and should fall on each of them alike.
    std::vector<double> local_us, remote_us, ort_times;  // ORT's in ms.
    // An int8 model also takes turns with Glint's own float32 run of the
    // model it quantizes (mlp_int8: mlp.onnx), in-process.
    const std::string float_name =
        IsQuantized(name) ? name.substr(0, name.size() - 5) : "";
    std::vector<double> float_us;
    std::vector<NamedTensor> float_out;
    absl::Status status;
    // On a host (and device threads) of its own, as each model gets one
    // (see above).
    std::unique_ptr<HostManager> float_host;
    if (!float_name.empty()) {
      absl::StatusOr<std::unique_ptr<HostManager>> fh =
          HostManager::CreateFromConfigs({}, {device});
      status.Update(fh.status());
      if (fh.ok()) {
        float_host = *std::move(fh);
        status.Update(float_host
                          ->AddNetwork(float_name,
                                       ReadFile(absl::StrCat(
                                           dir, "/", float_name, ".onnx")),
                                       {})
                          .status());
      }
    }
    for (int r = 0; r < rounds && status.ok(); ++r) {
      if (!float_name.empty()) {
        status.Update(TimeRuns(
            iters, [&] { return float_host->RunNetwork(float_name, inputs); },
            &float_out, &float_us));
      }
      status.Update(TimeRuns(
          iters, [&] { return (*host)->RunNetwork(name, inputs); },
          &local_out, &local_us));
      if (remote) {
        status.Update(TimeRuns(
            iters,
            [&] { return (*glintd)->client().RunNetwork(name, inputs); },
            &remote_out, &remote_us));
      }
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
    const double ort_ms = Median(ort_times);
    bool agree_local = false, agree_remote = true;
    double abs_local = 0, abs_remote = 0;
    const bool quantized = IsQuantized(name);
    double max_rel = Compare(local_out[0].tensor, ort_bytes, quantized,
                             &agree_local, &abs_local);
    ratios.push_back(glint_ms / ort_ms);
    if (glint_ms / ort_ms > 1.0) absl::StrAppend(&above_one, " ", name);
    std::string remote_cols = absl::StrFormat("%9s %9s", "-", "-");
    if (remote) {
      const double glintd_ms = Median(remote_us) / 1000;
      max_rel = std::max(max_rel, Compare(remote_out[0].tensor, ort_bytes,
                                          quantized, &agree_remote,
                                          &abs_remote));
      ratios_d.push_back(glintd_ms / ort_ms);
      remote_cols = absl::StrFormat("%9.3f %9.3f", glintd_ms, ort_ms);
    } else {
      remote_cols = absl::StrFormat("%9s %9.3f", "-", ort_ms);
    }
    const bool agree = agree_local && agree_remote;
    std::printf("%-24s %9.3f %s %8.2f %8s  %-12.2e %.2e%s\n", name.c_str(),
                glint_ms, remote_cols.c_str(), glint_ms / ort_ms,
                remote ? absl::StrFormat("%.2f", ratios_d.back()).c_str()
                       : "-",
                max_rel, std::max(abs_local, abs_remote),
                agree ? "" : "  OUTPUTS DISAGREE");
    if (!float_name.empty()) {
      const double float_ms = Median(float_us) / 1000;
      std::printf("%-24s %9.3f  glint float32 (%s); ratio_f32 = int8 / "
                  "float32 = %.2f\n",
                  "", float_ms, float_name.c_str(), glint_ms / float_ms);
    }
    std::fflush(stdout);
    if (!agree) ++failures;
    (void)(*host)->RemoveNetwork(name);
    if (remote) (void)(*glintd)->client().RemoveNetwork(name);
  }
  std::printf(
      "geomean ratio %.2f over %zu models (above 1.0:%s), geomean ratio_d "
      "%.2f over %zu\n",
      GeometricMean(ratios), ratios.size(),
      above_one.empty() ? " none" : above_one.c_str(), GeometricMean(ratios_d),
      ratios_d.size());
  std::printf(
      "threads %d, %d rounds of %d iterations each way, median latency; "
      "ratio = glint / ort (in-process), ratio_d = glintd over gRPC / ort; "
      "load average at end: %s\n",
      threads, rounds, iters, LoadAverage().c_str());
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  std::vector<std::string> args;  // Positional.
  bool precision = false;
  std::optional<std::set<std::string>> through_glintd;
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--precision") {
      precision = true;
    } else if (absl::StartsWith(arg, "--glintd=")) {
      through_glintd.emplace();
      for (absl::string_view m :
           absl::StrSplit(arg.substr(9), ',', absl::SkipEmpty())) {
        if (m != "none") through_glintd->insert(std::string(m));
      }
    } else if (absl::StartsWith(arg, "--")) {
      std::cerr << "unknown flag " << arg << "\n";
      return 2;
    } else {
      args.emplace_back(arg);
    }
  }
  if (args.empty()) {
    std::cerr << "usage: ort_compare MODEL_DIR [threads] [iters] [models|all] "
                 "[rounds] [--glintd=MODELS|none] [--precision]\n";
    return 2;
  }
  const int threads =
      args.size() > 1 ? std::atoi(args[1].c_str())
                      : static_cast<int>(std::thread::hardware_concurrency());
  const int iters = args.size() > 2 ? std::atoi(args[2].c_str()) : 20;
  const std::vector<std::string> models = glint::ModelNames(
      args[0], args.size() > 3
                   ? absl::StrSplit(args[3], ',')
                   : std::vector<std::string>{"mlp", "resnet", "transformer"});
  const int rounds =
      args.size() > 4 ? std::max(1, std::atoi(args[4].c_str())) : 5;
  const std::string want = std::to_string(threads);
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (omp == nullptr || want != omp) {
    // OpenMP reads its thread count once, at start-up.
    setenv("OMP_NUM_THREADS", want.c_str(), 1);
    execv("/proc/self/exe", argv);
  }
  glint::ConfigureAllocatorForTensors();  // As glintd and the CLI do.
  if (precision) {
    return glint::RunPrecision(args[0], threads, iters, rounds, models);
  }
  return glint::Run(args[0], threads, iters, rounds, models, through_glintd);
}
