// glintd with many RunNetwork calls in flight: its thread count (from
// /proc/PID/status, sampled while the calls are outstanding), the names of
// its threads at the peak, and the throughput and completion of every call.
// Prints figures; asserts nothing (a failed call ends the run with exit
// status 1).
//
//   bazel run -c opt //bench:inflight_bench -- [levels=64,256,1024]
//       [devices=sim*2:memory=1GiB:compute_gflops=0.01] [max_active=64]
//
// Each level sends that many calls at once from gRPC's callback client
// (this process holds no thread per call) to a network of 4 MatMul layers
// of 64x64 (32 KFLOP: 3.3 ms at 0.01 GFLOP/s) with a replica per device;
// glintd admits max_active at a time and queues the rest (--max_queued_runs
// is raised to the largest level). The baseline is glintd idle, and
// `cores + devices` is printed beside it.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "onnx/test_models.h"
#include "proto/glint.grpc.pb.h"
#include "proto/proto_convert.h"
#include "tests/process_util.h"

namespace glint {
namespace {

constexpr int64_t kWidth = 64;
constexpr int kLayers = 4;

// "Threads:" of /proc/PID/status; -1 if unreadable.
int ThreadCount(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    int n = 0;
    if (absl::StartsWith(line, "Threads:") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(8)), &n)) {
      return n;
    }
  }
  return -1;
}

// Thread names (/proc/PID/task/*/comm) with their counts, most first.
std::string ThreadNames(pid_t pid) {
  std::map<std::string, int> names;
  const std::string dir = absl::StrCat("/proc/", pid, "/task");
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return "?";
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(absl::StrCat(dir, "/", e->d_name, "/comm"));
    std::string name;
    std::getline(comm, name);
    ++names[name];
  }
  closedir(d);
  std::vector<std::pair<int, std::string>> sorted;
  for (const auto& [name, n] : names) sorted.push_back({n, name});
  std::sort(sorted.rbegin(), sorted.rend());
  return absl::StrJoin(sorted, ", ", [](std::string* out, const auto& p) {
    absl::StrAppend(out, p.second, " ", p.first);
  });
}

// `calls` RunNetwork calls issued at once; waits for every answer while
// sampling glintd's thread count.
struct LevelResult {
  int peak_threads = 0;
  std::string peak_names;
  absl::Duration wall;
  int ok = 0;
  std::map<grpc::StatusCode, int> failures;
};

LevelResult RunLevel(v1::HostManager::Stub& stub, pid_t pid, int calls,
                     const v1::RunNetworkRequest& request) {
  struct Call {
    grpc::ClientContext context;
    v1::RunNetworkResponse response;
  };
  std::vector<std::unique_ptr<Call>> state(calls);
  absl::Mutex mu;
  int done = 0;
  LevelResult result;
  const absl::Time start = absl::Now();
  for (int i = 0; i < calls; ++i) {
    state[i] = std::make_unique<Call>();
    state[i]->context.set_deadline(std::chrono::system_clock::now() +
                                   std::chrono::minutes(10));
    stub.async()->RunNetwork(&state[i]->context, &request,
                             &state[i]->response, [&, i](grpc::Status s) {
                               const bool good =
                                   s.ok() && state[i]->response.outputs_size() == 1;
                               absl::MutexLock lock(&mu);
                               if (good) {
                                 ++result.ok;
                               } else {
                                 ++result.failures[s.error_code()];
                               }
                               ++done;
                             });
  }
  // Read with mu held (Await evaluates it under the lock).
  auto all_done = [&] { return done == calls; };
  for (;;) {
    const int threads = ThreadCount(pid);
    if (threads > result.peak_threads) {
      result.peak_threads = threads;
      result.peak_names = ThreadNames(pid);
    }
    absl::MutexLock lock(&mu);
    if (mu.AwaitWithTimeout(absl::Condition(&all_done),
                            absl::Milliseconds(5))) {
      break;
    }
  }
  result.wall = absl::Now() - start;
  return result;
}

int Run(const std::vector<int>& levels, const std::string& devices,
        int max_active) {
  const int most = *std::max_element(levels.begin(), levels.end());
  absl::StatusOr<std::unique_ptr<testing::GlintdProcess>> glintd =
      testing::GlintdProcess::Start(
          {absl::StrCat("--devices=", devices), "--log_level=warning",
           absl::StrCat("--max_active_runs=", max_active),
           absl::StrCat("--max_queued_runs=", std::max(1024, most))});
  if (!glintd.ok()) {
    std::cerr << "glintd: " << glintd.status() << "\n";
    return 1;
  }
  GlintClient& client = (*glintd)->client();
  absl::StatusOr<std::vector<DeviceInfo>> infos = client.GetDevices();
  if (!infos.ok()) {
    std::cerr << infos.status() << "\n";
    return 1;
  }
  AddNetworkOptions options;
  options.partition.replicas = static_cast<int>(infos->size());
  absl::StatusOr<NetworkInfo> added = client.AddNetwork(
      "mlp", testing::MakeDeepMlpModel(1, kWidth, kLayers), options);
  if (!added.ok()) {
    std::cerr << "AddNetwork: " << added.status() << "\n";
    return 1;
  }
  v1::RunNetworkRequest request;
  request.set_name("mlp");
  if (absl::Status s = TensorToProto(
          {"x", Tensor::FromVector(DType::kFloat32, Shape({1, kWidth}),
                                   std::vector<float>(kWidth, 0.5f))},
          request.add_inputs());
      !s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  // A few runs first: streams and states exist before the idle count.
  for (int i = 0; i < 8; ++i) {
    (void)client.RunNetwork("mlp", {{"x", Tensor::FromVector(
                                              DType::kFloat32, Shape({1, kWidth}),
                                              std::vector<float>(kWidth, 0.5f))}});
  }
  auto stub = v1::HostManager::NewStub(
      GlintClient::CreateChannel((*glintd)->address()));
  const pid_t pid = (*glintd)->pid();
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  std::printf("glintd: %s, %d cores, %zu devices (cores + devices = %zu), "
              "max_active_runs %d; idle: %d threads\n  (%s)\n",
              devices.c_str(), cores, infos->size(), cores + infos->size(),
              max_active, ThreadCount(pid), ThreadNames(pid).c_str());
  std::printf("%9s %13s %8s %9s %6s\n", "in_flight", "peak_threads", "wall_s",
              "runs_s", "ok");
  int status = 0;
  std::vector<std::string> peaks;
  for (int calls : levels) {
    LevelResult r = RunLevel(*stub, pid, calls, request);
    std::printf("%9d %13d %8.2f %9.0f %6d\n", calls, r.peak_threads,
                absl::ToDoubleSeconds(r.wall),
                calls / absl::ToDoubleSeconds(r.wall), r.ok);
    peaks.push_back(absl::StrCat(calls, ": ", r.peak_names));
    for (const auto& [code, n] : r.failures) {
      std::printf("  %d calls failed with gRPC code %d\n", n,
                  static_cast<int>(code));
      status = 1;
    }
  }
  std::printf("threads by name at each peak:\n");
  for (const std::string& p : peaks) std::printf("  %s\n", p.c_str());
  return status;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  std::vector<int> levels = {64, 256, 1024};
  if (argc > 1) {
    levels.clear();
    for (absl::string_view s : absl::StrSplit(argv[1], ',')) {
      int n = 0;
      if (!absl::SimpleAtoi(s, &n) || n <= 0) {
        std::cerr << "bad level '" << s << "' (e.g. 64,256,1024)\n";
        return 2;
      }
      levels.push_back(n);
    }
  }
  const std::string devices =
      argc > 2 ? argv[2] : "sim*2:memory=1GiB:compute_gflops=0.01";
  int max_active = 64;
  if (argc > 3 && (!absl::SimpleAtoi(argv[3], &max_active) || max_active < 1)) {
    std::cerr << "bad max_active '" << argv[3] << "'\n";
    return 2;
  }
  return glint::Run(levels, devices, max_active);
}
