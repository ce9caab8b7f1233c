// Glint against ONNX Runtime on the corpus of real exports (tests/corpus/):
// each network runs in-process through HostManager on one simulated device,
// through a real glintd with one such device (loopback gRPC; the tensors in
// the messages), through the same glintd with the tensors in system shared
// memory (Triton's way for large tensors: the client copies the inputs into
// a registered region and reads the outputs from it, so only the call
// itself travels by gRPC), and through onnxruntime-node
// (tests/corpus/ort_reference.js), taking turns for ROUNDS rounds, with the
// same thread count and the corpus's own inputs. Prints per model the
// median latencies, Glint / ORT in-process, through glintd and through
// glintd with shared memory, Glint's largest difference from ORT's
// outputs, the geometric means, the models above 1.3, and the load
// average.
//
//   tests/corpus/make_corpus.sh /tmp/corpus
//   bazel run -c opt //bench:corpus_bench -- /tmp/corpus [threads] [iters]
//       [rounds] [models|all] [--profile]
//
// --profile: after its timed runs, each model runs `iters` more times with
// the per-op profile on, in-process and through glintd, and the bench
// prints both sides' node time per run and their top ops (where a gap
// between the two, or to ORT, comes from). The profiled runs are not in
// the latencies.
//
// oneDNN runs on OpenMP, so the thread count is applied through
// OMP_NUM_THREADS before anything starts (re-exec'd when it differs), as
// ort_compare does.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/omp_env.h"
#include "bench/timing.h"
#include "client/shared_memory.h"
#include "core/allocator_policy.h"
#include "core/device_info.h"
#include "core/op_profile.h"
#include "core/trace.h"
#include "runtime/host_manager.h"
#include "tests/corpus_util.h"
#include "tests/process_util.h"

namespace glint {
namespace {

using bench::LoadAverage;
using bench::Median;
using bench::ReadFile;
using bench::TimeRuns;
using testing::CorpusModel;

double GeometricMean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double log_sum = 0;
  for (double v : values) log_sum += std::log(v);
  return std::exp(log_sum / values.size());
}

// ort_reference.js from the source tree, where its node_modules are.
std::string OrtScript() {
  const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY");
  return ws != nullptr ? std::string(ws) + "/tests/corpus/ort_reference.js"
                       : "tests/corpus/ort_reference.js";
}

// ONNX Runtime's median latency of `iters` runs of `model`, in ms.
absl::StatusOr<double> OrtMillis(const std::string& dir,
                                 const std::string& model, int iters,
                                 int threads) {
  const std::string cmd =
      absl::StrCat("node ", OrtScript(), " ", dir, " --models ", model,
                   " --time ", iters, " --threads ", threads, " 2>&1");
  FILE* pipe = popen(cmd.c_str(), "r");
  double ms = -1;
  char line[512];
  const std::string key = model + " ort_ms_p50 ";
  while (pipe != nullptr && std::fgets(line, sizeof(line), pipe)) {
    if (absl::string_view(line).substr(0, key.size()) == key) {
      ms = std::atof(line + key.size());
    }
  }
  if (pipe == nullptr || pclose(pipe) != 0 || ms <= 0) {
    return absl::InternalError(absl::StrCat("ONNX Runtime failed: ", cmd));
  }
  return ms;
}

bool Wanted(const std::vector<std::string>& only, const std::string& name) {
  return only.empty() || (only.size() == 1 && only[0] == "all") ||
         std::find(only.begin(), only.end(), name) != only.end();
}

// `iters` profiled runs of `name` in-process and through glintd: each
// side's node time per run and its top ops.
absl::Status PrintProfiles(HostManager& host, GlintClient& client,
                           const std::string& name,
                           const std::vector<NamedTensor>& inputs, int iters) {
  OpProfileBuilder local, remote;
  for (int i = 0; i < iters; ++i) {
    RunOptions options;
    options.trace = std::make_shared<RunTrace>();
    options.profile = true;
    absl::Status status = host.RunNetwork(name, inputs, options).status();
    if (!status.ok()) return status;
    local.Add(OpSpansFromSlices(options.trace->Slices()));
    RunNetworkCall call;
    call.inputs = inputs;
    call.profile = true;
    absl::StatusOr<RunNetworkReply> reply = client.Run(name, call);
    if (!reply.ok()) return reply.status();
    absl::StatusOr<std::vector<OpSpan>> spans =
        OpSpansFromChromeJson(reply->trace_json);
    if (!spans.ok()) return spans.status();
    remote.Add(*spans);
  }
  for (const auto& [side, builder] :
       {std::pair<const char*, OpProfileBuilder*>{"in-process", &local},
        {"glintd", &remote}}) {
    const OpProfile profile = builder->Build();
    std::printf("  %s profile: %.3f ms of node time per run\n%s", side,
                profile.total_us / 1000 / iters,
                FormatOpProfile(profile, 8).c_str());
  }
  return absl::OkStatus();
}

int Run(const std::string& dir, int threads, int iters, int rounds,
        const std::vector<std::string>& only, bool profile) {
  absl::StatusOr<std::vector<CorpusModel>> models =
      testing::ReadCorpusManifest(dir);
  if (!models.ok()) {
    std::cerr << models.status() << "\n";
    return 1;
  }
  DeviceConfig device;
  device.memory_bytes = 8ull << 30;
  absl::StatusOr<std::unique_ptr<testing::GlintdProcess>> glintd =
      testing::GlintdProcess::Start(
          {"--devices=sim:memory=8GiB", "--log_level=warning", "--store_dir="},
          absl::Seconds(60));
  if (!glintd.ok()) {
    std::cerr << "glintd: " << glintd.status() << "\n";
    return 1;
  }
  std::printf("load average at start: %s\n", LoadAverage().c_str());
  std::printf("%-34s %9s %9s %9s %9s %7s %7s %7s %10s\n", "model", "ort_ms",
              "glint_ms", "glintd_ms", "shm_ms", "ratio", "ratio_d",
              "ratio_s", "max_rel");
  std::vector<double> ratios, ratios_d, ratios_s;
  std::vector<std::string> above, failed;
  for (const CorpusModel& model : *models) {
    if (model.file.empty() || !Wanted(only, model.name)) continue;
    // A host of its own per model (see ort_compare: a thread that has just
    // run a heavy model is scheduled late for a while on a loaded machine).
    absl::StatusOr<std::unique_ptr<HostManager>> host =
        HostManager::CreateFromConfigs({}, {device});
    absl::StatusOr<std::vector<NamedTensor>> inputs =
        testing::ReadCorpusInputs(dir, model);
    absl::StatusOr<std::vector<Tensor>> want =
        testing::ReadOrtOutputs(dir, model);
    absl::Status status = host.status();
    status.Update(inputs.status());
    status.Update(want.status());
    AddNetworkOptions options;
    options.input_shapes = model.input_shapes;
    const std::string bytes = ReadFile(absl::StrCat(dir, "/", model.file));
    if (status.ok()) {
      status.Update((*host)->AddNetwork(model.name, bytes, options).status());
    }
    if (status.ok()) {
      status.Update(
          (*glintd)->client().AddNetwork(model.name, bytes, options).status());
    }
    // The shared-memory session: the inputs' windows, and one slot of
    // output windows for the outputs of static shape (others come back in
    // the reply).
    std::unique_ptr<SharedMemorySession> shm;
    if (status.ok()) {
      absl::StatusOr<NetworkInfo> info =
          (*glintd)->client().GetNetwork(model.name);
      status.Update(info.status());
      std::vector<ValueInfo> shm_inputs;
      for (const NamedTensor& in : *inputs) {
        shm_inputs.push_back({in.name, in.tensor.dtype(), in.tensor.shape()});
      }
      absl::StatusOr<std::unique_ptr<SharedMemorySession>> session =
          info.ok() ? SharedMemorySession::Create(&(*glintd)->client(),
                                                  shm_inputs, info->outputs)
                    : info.status();
      // Without a session (no /dev/shm, say) the model is still timed the
      // other ways; its shm columns read 0.
      if (session.ok()) {
        shm = *std::move(session);
      } else {
        std::printf("%-34s shared memory: %s\n", model.name.c_str(),
                    session.status().ToString().c_str());
      }
    }
    auto run_shm = [&]() -> absl::StatusOr<std::vector<NamedTensor>> {
      for (const NamedTensor& in : *inputs) {
        absl::Status written = shm->WriteInput(in);
        if (!written.ok()) return written;
      }
      absl::StatusOr<RunNetworkReply> reply =
          (*glintd)->client().Run(model.name, shm->MakeCall(0));
      if (!reply.ok()) return reply.status();
      return shm->ReadOutputs(*reply, 0);
    };
    std::vector<double> local_us, remote_us, shm_us, ort_ms;
    std::vector<NamedTensor> local_out, remote_out, shm_out;
    // Each way warms up with as many untimed runs as it times: the ways take
    // turns, and a glintd that sat idle while ORT's process and the
    // in-process host ran answered its first ten calls up to 2x slower
    // than in steady state (MobileNetV3: 5.6 ms a call over 10 calls, 3.8
    // over 200), which is no serving figure.
    const int warmup = std::max(3, iters);
    for (int r = 0; r < rounds && status.ok(); ++r) {
      status.Update(TimeRuns(
          iters, [&] { return (*host)->RunNetwork(model.name, *inputs); },
          &local_out, &local_us, warmup));
      status.Update(TimeRuns(
          iters,
          [&] { return (*glintd)->client().RunNetwork(model.name, *inputs); },
          &remote_out, &remote_us, warmup));
      if (status.ok() && shm != nullptr) {
        status.Update(TimeRuns(iters, run_shm, &shm_out, &shm_us, warmup));
      }
      absl::StatusOr<double> ort = OrtMillis(dir, model.name, iters, threads);
      status.Update(ort.status());
      if (ort.ok()) ort_ms.push_back(*ort);
    }
    if (!status.ok()) {
      std::printf("%-34s %s\n", model.name.c_str(),
                  status.ToString().c_str());
      failed.push_back(model.name);
      continue;
    }
    double max_rel = 0;
    for (const std::vector<NamedTensor>* outs :
         {&local_out, &remote_out, &shm_out}) {
      for (size_t k = 0; k < model.outputs.size(); ++k) {
        for (const NamedTensor& t : *outs) {
          if (t.name != model.outputs[k]) continue;
          testing::Agreement a =
              testing::CompareWithReference(t.tensor, (*want)[k]);
          max_rel = std::max(max_rel, a.max_magnitude > 0
                                          ? a.max_abs_diff / a.max_magnitude
                                          : a.max_abs_diff);
        }
      }
    }
    const double ort = Median(ort_ms);
    const double local = Median(local_us) / 1000;
    const double remote = Median(remote_us) / 1000;
    const double via_shm = Median(shm_us) / 1000;  // 0: not timed.
    ratios.push_back(local / ort);
    ratios_d.push_back(remote / ort);
    if (via_shm > 0) ratios_s.push_back(via_shm / ort);
    if (std::max(local, remote) / ort > 1.3) above.push_back(model.name);
    std::printf("%-34s %9.3f %9.3f %9.3f %9.3f %7.2f %7.2f %7.2f %10.2e\n",
                model.name.c_str(), ort, local, remote, via_shm, local / ort,
                remote / ort, via_shm / ort, max_rel);
    if (profile) {
      absl::Status printed = PrintProfiles(**host, (*glintd)->client(),
                                           model.name, *inputs, iters);
      if (!printed.ok()) {
        std::printf("  profile: %s\n", printed.ToString().c_str());
      }
    }
    std::fflush(stdout);
    (void)(*glintd)->client().RemoveNetwork(model.name);
  }
  std::printf(
      "geomean glint/ort %.2f in-process, %.2f through glintd, %.2f through "
      "glintd with shared memory, over %zu models; above 1.3: %s; failed: "
      "%s\n",
      GeometricMean(ratios), GeometricMean(ratios_d), GeometricMean(ratios_s),
      ratios.size(),
      above.empty() ? "none" : absl::StrJoin(above, ", ").c_str(),
      failed.empty() ? "none" : absl::StrJoin(failed, ", ").c_str());
  std::printf(
      "threads %d, %d rounds of %d timed runs each way (ORT: its p50 per "
      "round), medians; GOMP_SPINCOUNT %s; load average at end: %s\n",
      threads, rounds, iters,
      std::getenv("GOMP_SPINCOUNT") != nullptr ? std::getenv("GOMP_SPINCOUNT")
                                               : "libgomp's default",
      LoadAverage().c_str());
  return failed.empty() ? 0 : 1;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  bool profile = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (absl::string_view(argv[i]) == "--profile") {
      profile = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (args.size() < 2) {
    std::cerr << "usage: corpus_bench CORPUS_DIR [threads] [iters] [rounds] "
                 "[models|all] [--profile]\n";
    return 2;
  }
  argc = static_cast<int>(args.size());
  const int threads = argc > 2 ? std::atoi(args[2]) : 2;
  const int iters = argc > 3 ? std::max(1, std::atoi(args[3])) : 10;
  const int rounds = argc > 4 ? std::max(1, std::atoi(args[4])) : 3;
  const std::vector<std::string> only =
      argc > 5 ? absl::StrSplit(args[5], ',') : std::vector<std::string>{};
  glint::bench::ReexecWithOmpThreads(threads, argv);
  // As glintd and the glint CLI do (core/allocator_policy.h): the glintd
  // client and the in-process runs move MBs a run.
  glint::ConfigureAllocatorForTensors();
  return glint::Run(args[1], threads, iters, rounds, only, profile);
}
