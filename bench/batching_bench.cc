// Dynamic batching's effect on throughput, in process: a batch-1 network
// (bench/make_models.py's resnet.onnx, whose batch dim is symbolic) kept at
// C runs in flight by a closed loop of RunNetworkAsync callbacks (no thread
// per run), added once without batching and once with it. Prints runs/s
// per level and the ratio batched / unbatched measured in the same run.
//
//   bazel run -c opt //bench:batching_bench -- MODEL.onnx \
//       [CONCURRENCY=1,8,64] [SECONDS=3] [MAX_BATCH=8] [DELAY_US=0]
//       [PREFERRED=1,2,4]
// PREFERRED are the preferred (so also compiled) batch sizes; "-" for
// none, when every batch is padded to MAX_BATCH.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "runtime/host_manager.h"

namespace glint {
namespace {

// Keeps `concurrency` runs of `network` in flight until `seconds` pass;
// returns completed runs per second (and counts failures).
double Throughput(HostManager& host, const std::string& network,
                  const NetworkInfo& info, int concurrency, double seconds,
                  int* failures) {
  std::vector<NamedTensor> inputs;
  for (const ValueInfo& v : info.inputs) {
    Shape shape = v.shape;
    shape.mutable_dims()[0] = 1;  // One row per request.
    absl::StatusOr<Tensor> t = Tensor::Create(v.dtype, shape);
    if (!t.ok()) std::abort();
    for (int64_t i = 0; i < t->num_elements() && v.dtype == DType::kFloat32;
         ++i) {
      t->data<float>()[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
    }
    inputs.push_back({v.name, *std::move(t)});
  }
  struct Loop {
    absl::Mutex mu;
    int outstanding ABSL_GUARDED_BY(mu) = 0;
    std::atomic<int64_t> completed{0};
    std::atomic<int> failed{0};
    absl::Time end;
  };
  auto loop = std::make_shared<Loop>();
  loop->end = absl::Now() + absl::Seconds(seconds);
  std::function<void()> start;
  start = [&host, &network, &inputs, loop, &start] {
    host.RunNetworkAsync(
        network, inputs, {},
        [loop, &start](absl::StatusOr<std::vector<NamedTensor>> result) {
          if (result.ok()) {
            ++loop->completed;
          } else {
            ++loop->failed;
          }
          if (absl::Now() < loop->end) {
            start();
            return;
          }
          absl::MutexLock lock(&loop->mu);
          --loop->outstanding;
        });
  };
  const absl::Time begin = absl::Now();
  {
    absl::MutexLock lock(&loop->mu);
    loop->outstanding = concurrency;
  }
  for (int i = 0; i < concurrency; ++i) start();
  absl::MutexLock lock(&loop->mu);
  loop->mu.Await(absl::Condition(
      +[](int* n) { return *n == 0; }, &loop->outstanding));
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - begin);
  *failures += loop->failed.load();
  return static_cast<double>(loop->completed.load()) / elapsed;
}

int Main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: batching_bench MODEL.onnx [CONCURRENCY=1,8,64] "
                 "[SECONDS=3] [MAX_BATCH=8] [DELAY_US=0] "
                 "[PREFERRED=1,2,4|-]\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  const std::string model = bytes.str();
  std::vector<int> levels = {1, 8, 64};
  if (argc > 2) {
    levels.clear();
    for (absl::string_view s : absl::StrSplit(argv[2], ',')) {
      int c = 0;
      if (absl::SimpleAtoi(s, &c) && c > 0) levels.push_back(c);
    }
  }
  const double seconds = argc > 3 ? std::atof(argv[3]) : 3.0;
  const int max_batch = argc > 4 ? std::atoi(argv[4]) : 8;
  const int delay_us = argc > 5 ? std::atoi(argv[5]) : 0;
  std::vector<int> preferred = {1, 2, 4};
  if (argc > 6) {
    preferred.clear();
    for (absl::string_view s : absl::StrSplit(argv[6], ',')) {
      int size = 0;
      if (absl::SimpleAtoi(s, &size)) preferred.push_back(size);
    }
  }

  // The default devices of glintd: two simulated devices.
  std::vector<DeviceConfig> configs(2);
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, configs);
  if (!host.ok()) {
    std::fprintf(stderr, "%s\n", host.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<NetworkInfo> plain = (*host)->AddNetwork("plain", model, {});
  AddNetworkOptions options;
  options.batching.max_batch_size = max_batch;
  options.batching.max_queue_delay = absl::Microseconds(delay_us);
  options.batching.preferred_batch_sizes = preferred;
  absl::StatusOr<NetworkInfo> batched =
      (*host)->AddNetwork("batched", model, options);
  if (!plain.ok() || !batched.ok()) {
    std::fprintf(stderr, "add: %s / %s\n", plain.status().ToString().c_str(),
                 batched.status().ToString().c_str());
    return 1;
  }
  std::string sizes;
  for (int p : preferred) sizes += std::to_string(p) + " ";
  std::printf("%s: batch-1 requests, 2 sim devices, %.1f s per level; "
              "batched: max_batch_size %d, max_queue_delay %d us, "
              "preferred sizes [ %s]\n",
              argv[1], seconds, max_batch, delay_us, sizes.c_str());
  std::printf("%12s %16s %16s %8s   (medians of 5 interleaved rounds)\n",
              "in flight", "unbatched run/s",
              "batched run/s", "ratio");
  int failures = 0;
  // Warm both (pools, primitive caches) before measuring.
  Throughput(**host, "plain", *plain, 2, 0.3, &failures);
  Throughput(**host, "batched", *batched, max_batch, 0.3, &failures);
  // Interleaved rounds, medians: a machine shared with other work drifts,
  // and both modes see the same drift.
  constexpr int kRounds = 5;
  for (int c : levels) {
    std::vector<double> u, b;
    for (int r = 0; r < kRounds; ++r) {
      u.push_back(Throughput(**host, "plain", *plain, c, seconds / kRounds,
                             &failures));
      b.push_back(Throughput(**host, "batched", *batched, c,
                             seconds / kRounds, &failures));
    }
    std::sort(u.begin(), u.end());
    std::sort(b.begin(), b.end());
    const double um = u[kRounds / 2], bm = b[kRounds / 2];
    std::printf("%12d %16.1f %16.1f %8.2f\n", c, um, bm, bm / um);
    std::fflush(stdout);
  }
  // What batching can gain in compute alone: one run of MAX_BATCH rows vs
  // one of a single row, back to back (no concurrency), per row.
  {
    AddNetworkOptions at_max;
    for (const ValueInfo& v : plain->inputs) {
      Shape shape = v.shape;
      shape.mutable_dims()[0] = max_batch;
      at_max.input_shapes[v.name] = shape;
    }
    absl::StatusOr<NetworkInfo> big = (*host)->AddNetwork("big", model, at_max);
    if (big.ok()) {
      auto median_run = [&](const std::string& name, const NetworkInfo& info) {
        std::vector<NamedTensor> inputs;
        for (const ValueInfo& v : info.inputs) {
          inputs.push_back({v.name, *Tensor::Create(v.dtype, v.shape)});
          std::fill_n(static_cast<char*>(inputs.back().tensor.raw_data()),
                      inputs.back().tensor.num_bytes(), 0);
        }
        std::vector<double> ms;
        for (int i = 0; i < 7; ++i) {
          const absl::Time t = absl::Now();
          if (!(*host)->RunNetwork(name, inputs).ok()) ++failures;
          ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t));
        }
        std::sort(ms.begin(), ms.end());
        return ms[ms.size() / 2];
      };
      const double one = median_run("plain", *plain);
      const double many = median_run("big", *big);
      std::printf("one run alone: 1 row %.2f ms, %d rows %.2f ms: %.2f ms "
                  "per row, %.2fx cheaper per row batched\n",
                  one, max_batch, many, many / max_batch,
                  one / (many / max_batch));
    }
  }
  absl::StatusOr<NetworkStatistics> stats =
      (*host)->GetStatistics("batched");
  if (stats.ok() && stats->execution_count > 0) {
    std::printf("batched: %llu requests in %llu executions (%.2f per batch)\n",
                static_cast<unsigned long long>(stats->inference_count),
                static_cast<unsigned long long>(stats->execution_count),
                static_cast<double>(stats->success_count) /
                    static_cast<double>(stats->execution_count));
  }
  if (failures > 0) std::printf("FAILED runs: %d\n", failures);
  return failures > 0 ? 1 : 0;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) { return glint::Main(argc, argv); }
