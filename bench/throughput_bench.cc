// glintd's throughput, latency and thread count with N RunNetwork calls
// kept in flight (a closed loop: each answer sends the next call), from
// gRPC's callback client, so this process holds no thread per call.
// Prints figures and ratios; asserts nothing, but every answer is checked
// against a reference and a wrong or failed one makes the exit status 1.
//
//   bazel build -c opt //bench:throughput_bench
//   bazel-bin/bench/throughput_bench batching MODEL.onnx [LEVELS=1,8,64,512,1024]
//       [SECONDS=3] [ROUNDS=3] [MAX_BATCH=8] [DELAY_US=0] [PREFERRED=1,2,4|-]
//       [DEVICES]
//   bazel-bin/bench/throughput_bench scale MODEL.onnx [LEVELS=1,8,64,256,1024]
//       [SECONDS=3] [ROUNDS=1] [BATCH=8] [DEVICES]
//
// Each level runs ROUNDS times (the networks taking turns, so that this
// shared machine's slow spells fall on both) and the summary gives medians.
//
// MODEL is bench/make_models.py's resnet.onnx (symbolic batch dim).
//
// `batching` (issue 15, 7(c)): batch-1 requests to the network added twice
// to one glintd, without and with dynamic batching, one replica per
// device each; per level the unbatched then the batched network; prints
// batched / unbatched per level.
//
// `scale` (issue 15, point 2): the network bound to BATCH rows (no dynamic
// batching), one replica per device, glintd's default admission flags;
// prints each level's throughput against the best level's.
//
// Per level: N calls are sent at once and each answer sends another. The
// window opens when N calls have been answered (every slot has turned over
// once, so the calls answered from then on were sent in the steady state)
// and closes once N more are answered and SECONDS have passed; then the
// loop stops and the outstanding calls drain (and are checked). runs/s and
// the latency percentiles are over the answers in the window; `threads` is
// the highest `Threads:` of glintd's /proc status sampled every 5 ms
// during the level; glintd_ms (client_ms) is glintd's (this process's) CPU
// time over the level per answer, the figure that does not depend on the
// share of the cores glintd gets on a shared machine; `devices busy` and
// the server-side split come from GetStatistics before and after. Inputs cycle
// over kInputs distinct tensors whose outputs were taken before the levels
// by one call each to the unbatched network: every answer must match its
// input's reference (exactly: `bitwise` counts the identical ones; within
// 1e-4 + 1e-3 * |ref|, else it is wrong).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
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
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/allocator_policy.h"
#include "grpcpp/grpcpp.h"
#include "proto/glint.grpc.pb.h"
#include "proto/proto_convert.h"
#include "tests/process_util.h"

namespace glint {
namespace {

constexpr int kInputs = 4;

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

// utime + stime of /proc/PID/stat, in seconds.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)),
                   std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::vector<std::string> fields =
      absl::StrSplit(text.substr(paren + 2), ' ');
  // Fields after the name start at 3 (state); utime is 14, stime 15.
  double utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtod(fields[11], &utime) ||
      !absl::SimpleAtod(fields[12], &stime)) {
    return 0;
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double SelfCpuSeconds() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec * 1e-6 +
         usage.ru_stime.tv_sec + usage.ru_stime.tv_usec * 1e-6;
}

std::string LoadAverage() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return absl::StrCat(a, " ", b, " ", c);
}

// The input of call k (of kInputs distinct ones) and its reference output.
struct Workload {
  std::string network;
  std::vector<v1::RunNetworkRequest> requests;  // kInputs of them.
  std::vector<std::string> reference;           // Output raw_data per input.
};

// Whether `got` (float32 bytes) is within 1e-4 + 1e-3 * |ref| of `ref`.
bool Close(const std::string& got, const std::string& ref) {
  if (got.size() != ref.size()) return false;
  const size_t n = ref.size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) {
    float a, b;
    std::memcpy(&a, got.data() + i * sizeof(float), sizeof(float));
    std::memcpy(&b, ref.data() + i * sizeof(float), sizeof(float));
    if (!(std::fabs(a - b) <= 1e-4f + 1e-3f * std::fabs(b))) return false;
  }
  return true;
}

struct LevelResult {
  double runs_per_s = 0;
  double p50_ms = 0, p99_ms = 0;
  int peak_threads = 0;
  int64_t answered = 0, failed = 0, wrong = 0, bitwise = 0;
  double server_cpu_ms = 0, client_cpu_ms = 0;  // Per answer.
  double wall_s = 0;
  std::string first_error;
};

// One level: `calls` kept in flight on `stub` as described at the top.
class ClosedLoop {
 public:
  ClosedLoop(v1::HostManager::Stub* stub, const Workload* work, int calls,
             absl::Duration seconds)
      : stub_(stub), work_(work), calls_(calls), seconds_(seconds) {}

  LevelResult Run(pid_t pid) {
    LevelResult result;
    const double server_cpu0 = ProcessCpuSeconds(pid);
    const double client_cpu0 = SelfCpuSeconds();
    start_ = absl::Now();
    {
      absl::MutexLock lock(&mu_);
      slots_.resize(calls_);
    }
    for (int i = 0; i < calls_; ++i) Send(i);
    for (;;) {
      result.peak_threads = std::max(result.peak_threads, ThreadCount(pid));
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(this, &ClosedLoop::Drained),
                               absl::Milliseconds(5))) {
        break;
      }
    }
    absl::MutexLock lock(&mu_);
    result.wall_s = absl::ToDoubleSeconds(absl::Now() - start_);
    result.runs_per_s =
        window_answered_ / absl::ToDoubleSeconds(window_end_ - window_start_);
    std::sort(latencies_ms_.begin(), latencies_ms_.end());
    if (!latencies_ms_.empty()) {
      result.p50_ms = latencies_ms_[latencies_ms_.size() / 2];
      result.p99_ms = latencies_ms_[std::min(
          latencies_ms_.size() - 1,
          static_cast<size_t>(std::ceil(latencies_ms_.size() * 0.99)) - 1)];
    }
    result.answered = answered_;
    result.failed = failed_;
    result.wrong = wrong_;
    result.bitwise = bitwise_;
    result.first_error = first_error_;
    result.server_cpu_ms =
        1e3 * (ProcessCpuSeconds(pid) - server_cpu0) / std::max<int64_t>(1, answered_);
    result.client_cpu_ms =
        1e3 * (SelfCpuSeconds() - client_cpu0) / std::max<int64_t>(1, answered_);
    return result;
  }

 private:
  // A call and the one before it in its slot: a context is freed only when
  // the slot's next call ends, never inside its own callback.
  struct Call {
    grpc::ClientContext context;
    v1::RunNetworkResponse response;
    absl::Time sent;
    int input = 0;
  };
  struct Slot {
    std::unique_ptr<Call> current, previous;
  };

  bool Drained() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ && outstanding_ == 0;
  }

  void Send(int slot) {
    auto call = std::make_unique<Call>();
    call->context.set_deadline(std::chrono::system_clock::now() +
                               std::chrono::minutes(10));
    call->input = static_cast<int>(next_input_++ % kInputs);
    call->sent = absl::Now();
    Call* raw = call.get();
    {
      absl::MutexLock lock(&mu_);
      slots_[slot].previous = std::move(slots_[slot].current);
      slots_[slot].current = std::move(call);
      ++outstanding_;
    }
    stub_->async()->RunNetwork(&raw->context, &work_->requests[raw->input],
                               &raw->response, [this, slot, raw](grpc::Status s) {
                                 Answered(slot, raw, std::move(s));
                               });
  }

  void Answered(int slot, Call* call, grpc::Status status) {
    const absl::Time now = absl::Now();
    bool good = false, exact = false;
    std::string error;
    if (!status.ok()) {
      error = absl::StrCat("gRPC ", status.error_code(), ": ",
                           status.error_message());
    } else if (call->response.outputs_size() != 1) {
      error = "not one output";
    } else {
      const std::string& got = call->response.outputs(0).raw_data();
      const std::string& ref = work_->reference[call->input];
      exact = got == ref;
      good = exact || Close(got, ref);
      if (!good) error = "output differs from the reference";
    }
    bool again = false;
    {
      absl::MutexLock lock(&mu_);
      --outstanding_;
      ++answered_;
      if (!status.ok()) {
        ++failed_;
      } else if (!good) {
        ++wrong_;
      }
      if (exact) ++bitwise_;
      if (!error.empty() && first_error_.empty()) first_error_ = error;
      if (answered_ == calls_) window_start_ = now;
      if (answered_ > calls_ && !stopping_) {
        ++window_answered_;
        latencies_ms_.push_back(absl::ToDoubleMilliseconds(now - call->sent));
        if (window_answered_ >= calls_ && now - window_start_ >= seconds_) {
          stopping_ = true;
          window_end_ = now;
        }
      }
      again = !stopping_;
    }
    if (again) Send(slot);
  }

  v1::HostManager::Stub* const stub_;
  const Workload* const work_;
  const int calls_;
  const absl::Duration seconds_;
  absl::Time start_;
  std::atomic<int64_t> next_input_{0};

  absl::Mutex mu_;
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t answered_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t failed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t wrong_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t bitwise_ ABSL_GUARDED_BY(mu_) = 0;
  std::string first_error_ ABSL_GUARDED_BY(mu_);
  absl::Time window_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time window_end_ ABSL_GUARDED_BY(mu_);
  int64_t window_answered_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
};

// kInputs requests of `rows` rows for `network`, and their outputs from
// one call each to `reference_network`.
absl::StatusOr<Workload> MakeWorkload(GlintClient& client,
                                      const std::string& network,
                                      const std::string& reference_network,
                                      const ValueInfo& input, int64_t rows) {
  Workload work;
  work.network = network;
  Shape shape = input.shape;
  shape.mutable_dims()[0] = rows;
  for (int k = 0; k < kInputs; ++k) {
    std::vector<float> values(static_cast<size_t>(shape.NumElements()));
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = static_cast<float>((i * 7 + k * 131) % 23) * 0.05f - 0.5f;
    }
    NamedTensor tensor{input.name,
                       Tensor::FromVector(DType::kFloat32, shape, values)};
    v1::RunNetworkRequest request;
    request.set_name(network);
    if (absl::Status s = TensorToProto(tensor, request.add_inputs()); !s.ok()) {
      return s;
    }
    work.requests.push_back(std::move(request));
    absl::StatusOr<std::vector<NamedTensor>> out =
        client.RunNetwork(reference_network, {tensor});
    if (!out.ok()) return out.status();
    if (out->size() != 1) return absl::InternalError("not one output");
    v1::Tensor proto;
    if (absl::Status s = TensorToProto((*out)[0], &proto); !s.ok()) return s;
    work.reference.push_back(proto.raw_data());
  }
  return work;
}

void PrintHeader() {
  std::printf("%9s %-9s %9s %8s %8s %8s %9s %9s %8s %s\n", "in_flight",
              "network", "runs_s", "p50_ms", "p99_ms", "threads", "glintd_ms",
              "client_ms", "answers", "(bitwise/wrong/failed)");
}

void PrintLevel(int calls, const std::string& name, const LevelResult& r) {
  std::printf("%9d %-9s %9.1f %8.1f %8.1f %8d %9.2f %9.2f %8lld (%lld/%lld/%lld)\n",
              calls, name.c_str(), r.runs_per_s, r.p50_ms, r.p99_ms,
              r.peak_threads, r.server_cpu_ms, r.client_cpu_ms,
              static_cast<long long>(r.answered),
              static_cast<long long>(r.bitwise),
              static_cast<long long>(r.wrong),
              static_cast<long long>(r.failed));
  if (!r.first_error.empty()) std::printf("    first error: %s\n", r.first_error.c_str());
  std::fflush(stdout);
}

// Each device's compute time over the level as a share of its wall time,
// and the network's requests per execution (rows per batch when batched).
void PrintBusy(const ServingStatistics& before, const ServingStatistics& after,
               const std::string& network, const LevelResult& r) {
  std::string busy;
  for (size_t d = 0; d < after.devices.size() && d < before.devices.size();
       ++d) {
    const double ns = static_cast<double>(after.devices[d].compute.total_ns -
                                          before.devices[d].compute.total_ns);
    absl::StrAppend(&busy, " ", after.devices[d].device.name, " ",
                    static_cast<int>(100 * ns / (r.wall_s * 1e9)), "%");
  }
  double per_execution = 0, queue_ms = 0, infer_ms = 0;
  auto mean_ms = [](const DurationStats& a, const DurationStats& b) {
    return a.count > b.count ? 1e-6 * static_cast<double>(a.total_ns - b.total_ns) /
                                   static_cast<double>(a.count - b.count)
                             : 0.0;
  };
  for (const NetworkStatistics& a : after.networks) {
    if (a.name != network) continue;
    for (const NetworkStatistics& b : before.networks) {
      if (b.name != network) continue;
      const double executions =
          static_cast<double>(a.execution_count - b.execution_count);
      if (executions > 0) {
        per_execution = (a.inference_count - b.inference_count) / executions;
      }
      queue_ms = mean_ms(a.queue, b.queue);
      infer_ms = mean_ms(a.compute_infer, b.compute_infer);
    }
  }
  std::printf("    devices busy:%s; requests per execution %.2f; mean queue "
              "%.1f ms, compute_infer %.1f ms\n",
              busy.c_str(), per_execution, queue_ms, infer_ms);
}

bool Bad(const LevelResult& r) { return r.failed > 0 || r.wrong > 0; }

std::vector<int> ParseInts(absl::string_view text) {
  std::vector<int> values;
  if (text == "-") return values;
  for (absl::string_view s : absl::StrSplit(text, ',')) {
    int v = 0;
    if (!absl::SimpleAtoi(s, &v) || v <= 0) return {};
    values.push_back(v);
  }
  return values;
}

struct Config {
  std::string mode;
  std::string model;
  std::vector<int> levels;
  double seconds = 3;
  int rounds = 1;
  int max_batch = 8;   // batching: max_batch_size; scale: the bound batch.
  int delay_us = 0;
  std::vector<int> preferred = {1, 2, 4};
  std::string devices;  // Empty: glintd's default.
};

int Run(const Config& config) {
  std::ifstream file(config.model, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  if (bytes.str().empty()) {
    std::cerr << "cannot read " << config.model << "\n";
    return 2;
  }
  const int most = *std::max_element(config.levels.begin(), config.levels.end());
  std::vector<std::string> args = {"--log_level=warning"};
  if (!config.devices.empty()) args.push_back("--devices=" + config.devices);
  // glintd's default admission (64 active, 1,024 queued) holds 1,088 runs;
  // more in flight would be refused by design, not measured.
  if (most > 1024 + 64) {
    args.push_back(absl::StrCat("--max_queued_runs=", most));
  }
  absl::StatusOr<std::unique_ptr<testing::GlintdProcess>> glintd =
      testing::GlintdProcess::Start(args, absl::Seconds(60));
  if (!glintd.ok()) {
    std::cerr << "glintd: " << glintd.status() << "\n";
    return 1;
  }
  GlintClient& client = (*glintd)->client();
  absl::StatusOr<std::vector<DeviceInfo>> devices = client.GetDevices();
  if (!devices.ok()) {
    std::cerr << devices.status() << "\n";
    return 1;
  }
  const int replicas = static_cast<int>(devices->size());
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  std::printf("glintd --devices=%s (%d devices), %s; %d cores, cores + "
              "devices = %d; load average %s\n",
              config.devices.empty() ? "(default)" : config.devices.c_str(),
              replicas, absl::StrJoin(args, " ").c_str(), cores,
              cores + replicas, LoadAverage().c_str());

  AddNetworkOptions plain;
  plain.partition.replicas = replicas;
  if (config.mode == "scale") {
    plain.input_shapes["input"] = Shape({config.max_batch, 3, 112, 112});
  }
  absl::StatusOr<NetworkInfo> plain_info =
      client.AddNetwork("plain", bytes.str(), plain);
  if (!plain_info.ok()) {
    std::cerr << "AddNetwork plain: " << plain_info.status() << "\n";
    return 1;
  }
  const ValueInfo input = plain_info->inputs.at(0);
  std::vector<std::pair<std::string, Workload>> networks;
  {
    absl::StatusOr<Workload> work =
        MakeWorkload(client, "plain", "plain", input, input.shape.dims()[0]);
    if (!work.ok()) {
      std::cerr << "reference runs: " << work.status() << "\n";
      return 1;
    }
    networks.push_back({"plain", *std::move(work)});
  }
  std::printf("plain: %s input %s, %d replicas (one per device)\n",
              config.model.c_str(), input.shape.ToString().c_str(), replicas);
  if (config.mode == "batching") {
    AddNetworkOptions batched = plain;
    batched.batching.max_batch_size = config.max_batch;
    batched.batching.max_queue_delay = absl::Microseconds(config.delay_us);
    batched.batching.preferred_batch_sizes = config.preferred;
    absl::StatusOr<NetworkInfo> info =
        client.AddNetwork("batched", bytes.str(), batched);
    if (!info.ok()) {
      std::cerr << "AddNetwork batched: " << info.status() << "\n";
      return 1;
    }
    absl::StatusOr<Workload> work =
        MakeWorkload(client, "batched", "plain", input, 1);
    if (!work.ok()) {
      std::cerr << "batched reference runs: " << work.status() << "\n";
      return 1;
    }
    networks.push_back({"batched", *std::move(work)});
    std::printf("batched: the same, dynamic batching max_batch_size %d, "
                "max_queue_delay %d us, preferred sizes [%s]\n",
                config.max_batch, config.delay_us,
                absl::StrJoin(config.preferred, ",").c_str());
  }
  // A few calls first: streams and compute engines exist before the idle
  // count.
  for (auto& [name, work] : networks) {
    for (int i = 0; i < 4; ++i) {
      (void)client.RunNetwork(name, {{input.name, *TensorFromProto(
                                                      work.requests[0].inputs(0))}});
    }
  }
  const pid_t pid = (*glintd)->pid();
  std::printf("glintd idle: %d threads; %.1f s windows\n", ThreadCount(pid),
              config.seconds);
  auto stub = v1::HostManager::NewStub(
      GlintClient::CreateChannel((*glintd)->address()));
  PrintHeader();
  int status = 0;
  // results[n][level]: the rounds of network n at that level.
  std::vector<std::vector<std::vector<LevelResult>>> results(
      networks.size(),
      std::vector<std::vector<LevelResult>>(config.levels.size()));
  for (size_t level = 0; level < config.levels.size(); ++level) {
    const int calls = config.levels[level];
    for (int round = 0; round < config.rounds; ++round) {
    for (size_t n = 0; n < networks.size(); ++n) {
      absl::StatusOr<ServingStatistics> before = client.GetStatistics();
      ClosedLoop loop(stub.get(), &networks[n].second, calls,
                      absl::Seconds(config.seconds));
      LevelResult r = loop.Run(pid);
      absl::StatusOr<ServingStatistics> after = client.GetStatistics();
      PrintLevel(calls, networks[n].first, r);
      if (before.ok() && after.ok()) PrintBusy(*before, *after, networks[n].first, r);
      if (Bad(r)) status = 1;
      results[n][level].push_back(r);
    }
    }
  }
  std::printf("load average after: %s\n", LoadAverage().c_str());
  // Medians over the rounds; threads: the highest peak.
  auto median = [](std::vector<LevelResult> rounds,
                   double LevelResult::*field) {
    std::sort(rounds.begin(), rounds.end(),
              [field](const LevelResult& a, const LevelResult& b) {
                return a.*field < b.*field;
              });
    return rounds[rounds.size() / 2].*field;
  };
  auto peak = [](const std::vector<LevelResult>& rounds) {
    int most = 0;
    for (const LevelResult& r : rounds) most = std::max(most, r.peak_threads);
    return most;
  };
  std::printf("medians of %d round(s):\n", config.rounds);
  if (config.mode == "batching") {
    std::printf("%9s %11s %11s %11s %11s %11s %11s %7s %11s %9s\n",
                "in_flight", "plain_run_s", "batch_run_s", "plain_p50",
                "batch_p50", "plain_p99", "batch_p99", "ratio", "glintd_ms",
                "cpu_ratio");
    for (size_t i = 0; i < config.levels.size(); ++i) {
      const auto& a = results[0][i];
      const auto& b = results[1][i];
      const double ra = median(a, &LevelResult::runs_per_s);
      const double rb = median(b, &LevelResult::runs_per_s);
      const double ca = median(a, &LevelResult::server_cpu_ms);
      const double cb = median(b, &LevelResult::server_cpu_ms);
      std::printf("%9d %11.1f %11.1f %11.1f %11.1f %11.1f %11.1f %7.2f "
                  "%5.2f/%5.2f %9.2f  threads %d/%d\n",
                  config.levels[i], ra, rb, median(a, &LevelResult::p50_ms),
                  median(b, &LevelResult::p50_ms),
                  median(a, &LevelResult::p99_ms),
                  median(b, &LevelResult::p99_ms), rb / ra, ca, cb, ca / cb,
                  peak(a), peak(b));
    }
    std::printf("ratio = batched / unbatched runs/s; glintd_ms = glintd's CPU "
                "ms per answer, unbatched/batched; cpu_ratio = their ratio "
                "(answers per CPU second, batched / unbatched: what batching "
                "gains whatever share of the cores glintd gets)\n");
  } else {
    double best = 0;
    for (const auto& rounds : results[0]) {
      best = std::max(best, median(rounds, &LevelResult::runs_per_s));
    }
    double best_cpu = 1e300;
    for (const auto& rounds : results[0]) {
      best_cpu = std::min(best_cpu, median(rounds, &LevelResult::server_cpu_ms));
    }
    std::printf("%9s %9s %12s %9s %9s %13s %13s %s\n", "in_flight", "runs_s",
                "ratio_best", "p50_ms", "glintd_ms", "cpu_ratio_best",
                "peak_threads",
                absl::StrCat("(cores + devices = ", cores + replicas, ")")
                    .c_str());
    for (size_t i = 0; i < config.levels.size(); ++i) {
      const double runs = median(results[0][i], &LevelResult::runs_per_s);
      const double cpu = median(results[0][i], &LevelResult::server_cpu_ms);
      std::printf("%9d %9.1f %12.2f %9.1f %9.2f %13.2f %13d\n",
                  config.levels[i], runs, runs / best,
                  median(results[0][i], &LevelResult::p50_ms), cpu,
                  best_cpu / cpu, peak(results[0][i]));
    }
    std::printf("glintd_ms = glintd's CPU ms per answer; cpu_ratio_best = "
                "answers per CPU second against the best level's\n");
  }
  return status;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  // This process's Mutexes: no lock-order graph (Debian's Abseil keeps one
  // without NDEBUG), as in glintd.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  glint::ConfigureAllocatorForTensors();  // As glintd and the CLI do.
  glint::Config config;
  if (argc < 3 || (std::string(argv[1]) != "batching" &&
                   std::string(argv[1]) != "scale")) {
    std::cerr << "usage: throughput_bench batching MODEL.onnx "
                 "[LEVELS=1,8,64,512,1024] [SECONDS=3] [ROUNDS=3] "
                 "[MAX_BATCH=8] [DELAY_US=0] [PREFERRED=1,2,4|-] [DEVICES]\n"
                 "       throughput_bench scale MODEL.onnx "
                 "[LEVELS=1,8,64,256,1024] [SECONDS=3] [ROUNDS=1] [BATCH=8] "
                 "[DEVICES]\n";
    return 2;
  }
  config.mode = argv[1];
  config.model = argv[2];
  const bool batching = config.mode == "batching";
  config.levels = batching ? std::vector<int>{1, 8, 64, 512, 1024}
                           : std::vector<int>{1, 8, 64, 256, 1024};
  int arg = 3;
  if (argc > arg) config.levels = glint::ParseInts(argv[arg]);
  ++arg;
  if (config.levels.empty()) {
    std::cerr << "bad levels\n";
    return 2;
  }
  if (argc > arg) config.seconds = std::atof(argv[arg]);
  ++arg;
  config.rounds = batching ? 3 : 1;
  if (argc > arg) config.rounds = std::atoi(argv[arg]);
  ++arg;
  if (argc > arg) config.max_batch = std::atoi(argv[arg]);
  ++arg;
  if (batching) {
    if (argc > arg) config.delay_us = std::atoi(argv[arg]);
    ++arg;
    if (argc > arg) config.preferred = glint::ParseInts(argv[arg]);
    ++arg;
  }
  if (argc > arg) config.devices = argv[arg];
  if (config.seconds <= 0 || config.max_batch < 1 || config.rounds < 1) {
    std::cerr << "bad SECONDS, ROUNDS or batch\n";
    return 2;
  }
  return glint::Run(config);
}
