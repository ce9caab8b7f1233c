// Shapes per request against static shapes (issue 30), on the corpus's
// models with dynamic axes (tests/corpus/: bert_encoder, gpt_decoder,
// lstm_tagger, mobilenet_v3_large) at each of their shapes (NAME/ and
// NAME/shape_S/). In-process through HostManager on one simulated device:
//   - dyn: the model added once with no shape option (its dims dynamic);
//   - static: the model added once per shape with input_shapes, the
//     baseline the dynamic network replaces;
// taking turns for ROUNDS rounds. Prints per model and shape the median
// latency of each, their ratio (dyn / static; the aim is <= 1.1), the
// first request of that shape on the dynamic network (kernels built for
// its shapes) against its warm median, and per model the memory of the
// one dynamic add (weights + planned arenas) against the sum of the static
// adds it replaces. Outputs are checked against ONNX Runtime's.
//
//   tests/corpus/make_corpus.sh /tmp/corpus
//       bert_encoder,gpt_decoder,lstm_tagger,mobilenet_v3_large  (one line)
//   bazel run -c opt //bench:shapes_bench -- /tmp/corpus [threads] [iters]
//       [rounds]
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "bench/omp_env.h"
#include "bench/timing.h"
#include "core/allocator_policy.h"
#include "core/device_info.h"
#include "core/status_macros.h"
#include "runtime/host_manager.h"
#include "tests/corpus_util.h"

namespace glint {
namespace {

using bench::LoadAverage;
using bench::Median;
using bench::ReadFile;
using bench::TimeRuns;
using testing::CorpusModel;

// VmRSS of this process.
int64_t ResidentBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::atoll(line.c_str() + 6) * 1024;
    }
  }
  return 0;
}

// Weights and planned arenas on the devices.
uint64_t NetworkBytes(const NetworkInfo& info) {
  uint64_t bytes = 0;
  for (const PartitionInfo& p : info.partitions) {
    bytes += p.weight_bytes + p.activation_bytes;
  }
  return bytes * static_cast<uint64_t>(info.replicas);
}

std::string ShapesOf(const std::vector<NamedTensor>& inputs) {
  std::vector<std::string> shapes;
  for (const NamedTensor& t : inputs) shapes.push_back(t.tensor.shape().ToString());
  return absl::StrJoin(shapes, " ");
}

// The largest relative difference of `got` from ORT's `want`.
double MaxRelative(const CorpusModel& model,
                   const std::vector<NamedTensor>& got,
                   const std::vector<Tensor>& want) {
  double worst = 0;
  for (size_t k = 0; k < model.outputs.size(); ++k) {
    bool found = false;
    for (const NamedTensor& t : got) {
      if (t.name != model.outputs[k]) continue;
      found = true;
      testing::Agreement a = testing::CompareWithReference(t.tensor, want[k]);
      if (!a.ok) return INFINITY;
      worst = std::max(worst, a.max_magnitude > 0
                                  ? a.max_abs_diff / a.max_magnitude
                                  : a.max_abs_diff);
    }
    if (!found) return INFINITY;
  }
  return worst;
}

struct ShapeRow {
  std::string shapes;
  std::vector<NamedTensor> inputs;
  std::vector<Tensor> want;
  std::vector<double> dyn_us, static_us;
  double first_us = 0;  // The dynamic network's first run of this shape.
  double max_rel = 0;
};

// The model's shapes (NAME/ and NAME/shape_S/) with ORT's outputs.
absl::StatusOr<std::vector<ShapeRow>> ReadRows(const std::string& dir,
                                               const CorpusModel& model) {
  std::vector<ShapeRow> rows;
  for (int s = 0; s <= static_cast<int>(model.shape_sets.size()); ++s) {
    ShapeRow row;
    GLINT_ASSIGN_OR_RETURN(row.inputs,
                           testing::ReadCorpusInputs(dir, model, s));
    GLINT_ASSIGN_OR_RETURN(row.want, testing::ReadOrtOutputs(dir, model, s));
    row.shapes = ShapesOf(row.inputs);
    rows.push_back(std::move(row));
  }
  return rows;
}

// Prints a model's rows (and adds their ratios) and its memory line.
void PrintModel(const CorpusModel& model, const std::vector<ShapeRow>& rows,
                uint64_t dyn_bytes, uint64_t dyn_peak, int64_t dyn_rss,
                uint64_t static_bytes, uint64_t static_max, int64_t static_rss,
                std::vector<double>* ratios) {
  for (const ShapeRow& row : rows) {
    const double d = Median(row.dyn_us) / 1000, st = Median(row.static_us) / 1000;
    ratios->push_back(d / st);
    std::printf("%-20s %-28s %9.3f %9.3f %6.2f %9.3f %6.1f %9.1e\n",
                model.name.c_str(), row.shapes.c_str(), st, d, d / st,
                row.first_us / 1000, row.first_us / 1000 / d, row.max_rel);
  }
  constexpr double kMiB = 1048576.0;
  std::printf(
      "%-20s memory: one dynamic add %.1f MiB on the device (%.1f MiB "
      "resident after a run of each shape); %zu static adds %.1f MiB on "
      "the device (%.1f MiB resident)\n",
      model.name.c_str(), dyn_bytes / kMiB, dyn_rss / kMiB, rows.size(),
      static_bytes / kMiB, static_rss / kMiB);
  std::printf(
      "%-20s device peak of the dynamic add over its first run of each "
      "shape %.1f MiB; the largest static add %.1f MiB\n",
      model.name.c_str(), dyn_peak / kMiB, static_max / kMiB);
  std::fflush(stdout);
}

// One simulated device of 8 GiB, in-process: every mode's host.
absl::StatusOr<std::unique_ptr<HostManager>> MakeHost() {
  DeviceConfig device;
  device.memory_bytes = 8ull << 30;
  return HostManager::CreateFromConfigs({}, {device});
}

absl::Status BenchModel(const std::string& dir, const CorpusModel& model,
                        int iters, int rounds, std::vector<double>* ratios) {
  GLINT_ASSIGN_OR_RETURN(std::vector<ShapeRow> rows, ReadRows(dir, model));
  const std::string bytes = ReadFile(absl::StrCat(dir, "/", model.file));
  absl::StatusOr<std::unique_ptr<HostManager>> host = MakeHost();
  if (!host.ok()) return host.status();
  // Resident memory grown by the dynamic add and its first run of every
  // shape (kernels and packed weights built per shape included), then by
  // the static adds and one run each.
  const int64_t rss_start = ResidentBytes();
  absl::StatusOr<NetworkInfo> dyn = (*host)->AddNetwork("dyn", bytes, {});
  if (!dyn.ok()) return dyn.status();
  // First requests, one shape after another, on the dynamic network.
  for (ShapeRow& row : rows) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::vector<NamedTensor>> out =
        (*host)->RunNetwork("dyn", row.inputs);
    if (!out.ok()) return out.status();
    row.first_us = absl::ToDoubleMicroseconds(absl::Now() - start);
    row.max_rel = MaxRelative(model, *out, row.want);
  }
  const int64_t rss_dyn = ResidentBytes();
  // Only the dynamic network has been on the device so far: its weights,
  // its plan and the most its runs held at once.
  const uint64_t dyn_peak = (*host)->GetDevices()[0].peak_used_memory_bytes;
  uint64_t static_bytes = 0, static_max = 0;
  for (size_t s = 0; s < rows.size(); ++s) {
    AddNetworkOptions options;
    for (const NamedTensor& t : rows[s].inputs) {
      options.input_shapes[t.name] = t.tensor.shape();
    }
    const std::string name = absl::StrCat("static", s);
    absl::StatusOr<NetworkInfo> info =
        (*host)->AddNetwork(name, bytes, options);
    if (!info.ok()) return info.status();
    static_bytes += NetworkBytes(*info);
    static_max = std::max(static_max, NetworkBytes(*info));
    GLINT_RETURN_IF_ERROR((*host)->RunNetwork(name, rows[s].inputs).status());
  }
  const int64_t rss_static = ResidentBytes();
  for (int r = 0; r < rounds; ++r) {
    for (size_t s = 0; s < rows.size(); ++s) {
      ShapeRow& row = rows[s];
      std::vector<NamedTensor> out;
      GLINT_RETURN_IF_ERROR(TimeRuns(
          iters, [&] { return (*host)->RunNetwork("dyn", row.inputs); }, &out,
          &row.dyn_us));
      row.max_rel = std::max(row.max_rel, MaxRelative(model, out, row.want));
      const std::string name = absl::StrCat("static", s);
      GLINT_RETURN_IF_ERROR(TimeRuns(
          iters, [&] { return (*host)->RunNetwork(name, row.inputs); }, &out,
          &row.static_us));
    }
  }
  PrintModel(model, rows, NetworkBytes(*dyn), dyn_peak, rss_dyn - rss_start,
             static_bytes, static_max, rss_static - rss_dyn, ratios);
  return absl::OkStatus();
}

// `inputs` ([B, S] each) cut to their first `s` columns.
std::vector<NamedTensor> FirstColumns(const std::vector<NamedTensor>& inputs,
                                      int64_t s) {
  std::vector<NamedTensor> cut;
  for (const NamedTensor& in : inputs) {
    const Shape& shape = in.tensor.shape();
    const int64_t rows = shape.dim(0), cols = shape.dim(1);
    const size_t element = DTypeSize(in.tensor.dtype());
    Tensor t = *Tensor::Create(in.tensor.dtype(), Shape({rows, s}));
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(
          static_cast<char*>(t.raw_data()) + r * s * element,
          static_cast<const char*>(in.tensor.raw_data()) + r * cols * element,
          s * element);
    }
    cut.push_back({in.name, std::move(t)});
  }
  return cut;
}

// Sequence lengths as a text service meets them: requests cycle through
// every length 1..N (each met once before timing: with N past a kernel's
// ShapeKeyedCache::kMaxEntries, every one of them is a miss), against as
// many requests at length 32 alone and at 33 alone (each built once, then
// kept). For the models whose inputs are all [B, S] (the BERT encoder, the
// GPT decoder, the LSTM tagger). Prints the medians and the kernel builds
// the timed runs paid.
absl::Status BenchLengths(const std::string& dir, const CorpusModel& model,
                          int lengths, int rounds) {
  GLINT_ASSIGN_OR_RETURN(std::vector<ShapeRow> rows, ReadRows(dir, model));
  const ShapeRow* widest = nullptr;
  for (const ShapeRow& row : rows) {
    for (const NamedTensor& in : row.inputs) {
      if (in.tensor.shape().rank() != 2) return absl::OkStatus();
    }
    if (widest == nullptr || row.inputs[0].tensor.shape().dim(1) >
                                 widest->inputs[0].tensor.shape().dim(1)) {
      widest = &row;
    }
  }
  if (widest == nullptr) return absl::OkStatus();
  const int64_t max_s = widest->inputs[0].tensor.shape().dim(1);
  const int n = static_cast<int>(std::min<int64_t>(lengths, max_s));
  // Lengths 32 and 33 (indices 31, 32): one past what a kernel keeps.
  constexpr int kCached = 31, kBeyond = 32;
  if (n <= kBeyond) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--lengths ", lengths, " with inputs of up to ", max_s,
        " columns: needs 33 lengths or more (a kernel keeps 32 shapes)"));
  }
  const std::string bytes = ReadFile(absl::StrCat(dir, "/", model.file));
  absl::StatusOr<std::unique_ptr<HostManager>> host = MakeHost();
  if (!host.ok()) return host.status();
  GLINT_RETURN_IF_ERROR((*host)->AddNetwork("dyn", bytes, {}).status());
  std::vector<std::vector<NamedTensor>> by_length;
  for (int s = 1; s <= n; ++s) {
    by_length.push_back(FirstColumns(widest->inputs, s));
    GLINT_RETURN_IF_ERROR(
        (*host)->RunNetwork("dyn", by_length.back()).status());
  }
  GLINT_ASSIGN_OR_RETURN(NetworkStatistics before,
                         (*host)->GetStatistics("dyn"));
  std::vector<double> cycled_us, cached_us, beyond_us;
  auto time_run = [&](int s, std::vector<double>* us) -> absl::Status {
    const auto t0 = absl::Now();
    GLINT_RETURN_IF_ERROR((*host)->RunNetwork("dyn", by_length[s]).status());
    us->push_back(absl::ToDoubleMicroseconds(absl::Now() - t0));
    return absl::OkStatus();
  };
  for (int r = 0; r < rounds; ++r) {
    for (int s = 0; s < n; ++s) GLINT_RETURN_IF_ERROR(time_run(s, &cycled_us));
    for (int s = 0; s < n; ++s) {
      GLINT_RETURN_IF_ERROR(time_run(kCached, &cached_us));
    }
    for (int s = 0; s < n; ++s) {
      GLINT_RETURN_IF_ERROR(time_run(kBeyond, &beyond_us));
    }
  }
  GLINT_ASSIGN_OR_RETURN(NetworkStatistics after,
                         (*host)->GetStatistics("dyn"));
  std::printf(
      "%-20s lengths 1..%d cycled: p50 %.3f ms; length %d alone %.3f ms, "
      "length %d alone %.3f ms; kernel builds %lld in %d runs\n",
      model.name.c_str(), n, Median(cycled_us) / 1000, kCached + 1,
      Median(cached_us) / 1000, kBeyond + 1, Median(beyond_us) / 1000,
      static_cast<long long>(after.shape_builds - before.shape_builds),
      3 * n * rounds);
  std::fflush(stdout);
  return absl::OkStatus();
}

// Runs `bench` on every corpus model with shape sets, after printing the
// load average; prints each failure. The models that failed, or -1 when
// the manifest cannot be read.
int ForEachModel(const std::string& dir,
                 const std::function<absl::Status(const CorpusModel&)>& bench) {
  absl::StatusOr<std::vector<CorpusModel>> models =
      testing::ReadCorpusManifest(dir);
  if (!models.ok()) {
    std::cerr << models.status() << "\n";
    return -1;
  }
  std::printf("load average at start: %s\n", LoadAverage().c_str());
  int failed = 0;
  for (const CorpusModel& model : *models) {
    if (model.file.empty() || model.shape_sets.empty()) continue;
    absl::Status s = bench(model);
    if (!s.ok()) {
      std::printf("%-20s %s\n", model.name.c_str(), s.ToString().c_str());
      ++failed;
    }
  }
  return failed;
}

int RunLengths(const std::string& dir, int lengths, int rounds) {
  const int failed = ForEachModel(dir, [&](const CorpusModel& model) {
    return BenchLengths(dir, model, lengths, rounds);
  });
  if (failed < 0) return 1;
  std::printf("load average at end: %s\n", LoadAverage().c_str());
  return failed == 0 ? 0 : 1;
}

int Run(const std::string& dir, int threads, int iters, int rounds) {
  std::vector<double> ratios;
  bool header = false;
  const int failed = ForEachModel(dir, [&](const CorpusModel& model) {
    if (!header) {
      std::printf("%-20s %-28s %9s %9s %6s %9s %6s %9s\n", "model", "shapes",
                  "static_ms", "dyn_ms", "ratio", "first_ms", "xwarm",
                  "max_rel");
      header = true;
    }
    return BenchModel(dir, model, iters, rounds, &ratios);
  });
  if (failed < 0) return 1;
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  std::printf(
      "geomean dyn/static %.2f over %zu shapes (worst %.2f); %d models "
      "failed; threads %d, %d rounds of %d timed runs; load average at end: "
      "%s\n",
      ratios.empty() ? 0 : std::exp(log_sum / ratios.size()), ratios.size(),
      ratios.empty() ? 0 : *std::max_element(ratios.begin(), ratios.end()),
      failed, threads, rounds, iters, LoadAverage().c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: shapes_bench CORPUS_DIR [threads] [iters] [rounds] "
                 "[--lengths N]\n";
    return 2;
  }
  // --lengths N anywhere; the rest positional.
  int lengths = 0;
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--lengths" && i + 1 < argc) {
      lengths = std::atoi(argv[++i]);
      continue;
    }
    args.push_back(argv[i]);
  }
  const size_t n = args.size();
  if (n < 2) {
    std::cerr << "usage: shapes_bench CORPUS_DIR [threads] [iters] [rounds] "
                 "[--lengths N]\n";
    return 2;
  }
  const int threads = n > 2 ? std::atoi(args[2].c_str()) : 2;
  const int iters = n > 3 ? std::atoi(args[3].c_str()) : 20;
  const int rounds = n > 4 ? std::max(1, std::atoi(args[4].c_str())) : 3;
  glint::bench::ReexecWithOmpThreads(threads, argv);
  glint::ConfigureAllocatorForTensors();  // As glintd and the CLI do.
  if (lengths > 0) return glint::RunLengths(args[1], lengths, rounds);
  return glint::Run(args[1], threads, iters, rounds);
}
