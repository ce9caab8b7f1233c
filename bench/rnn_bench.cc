// One LSTM (or GRU/RNN) layer through its CPU kernel on both code paths:
// oneDNN's RNN primitive (the registry's kernel) against the loop
// (dnnl_sgemm for the gate products, the cell in C++), interleaved rounds,
// same inputs, outputs compared. Weights are constants, packed at build.
//
//   bazel run -c opt //bench:rnn_bench -- [op] [seq] [batch] [hidden]
//       [input] [iters] [rounds] [threads]
// Defaults: LSTM 64 8 256 256 20 5, threads = every core.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/cpu/kernel_test_util.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/rnn.h"

namespace glint::cpu {
namespace {

using testing::MakeNode;
using testing::MakeSpec;
using testing::RandomTensor;
using testing::RunKernelOptions;
using testing::TestKernelContext;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int Main(int argc, char** argv) {
  auto arg = [&](int i, int64_t def) {
    return argc > i ? std::atoll(argv[i]) : def;
  };
  const std::string op = argc > 1 ? argv[1] : "LSTM";
  const int64_t seq = arg(2, 64), batch = arg(3, 8), hidden = arg(4, 256),
                input = arg(5, 256), iters = arg(6, 20), rounds = arg(7, 5),
                threads = arg(8, 0);
  if (threads > 0) SetKernelThreads(static_cast<int>(threads));
  const int64_t g = op == "RNN" ? 1 : op == "GRU" ? 3 : 4;
  const std::vector<Tensor> inputs = {
      RandomTensor({seq, batch, input}, 1),
      RandomTensor({1, g * hidden, input}, 2, -0.1f, 0.1f),
      RandomTensor({1, g * hidden, hidden}, 3, -0.1f, 0.1f),
      RandomTensor({1, 2 * g * hidden}, 4, -0.1f, 0.1f)};
  const Node node = MakeNode(op, {"x", "w", "r", "b"}, {"y", "yh"},
                             {{"hidden_size", hidden}});
  RunKernelOptions options;
  options.constant_inputs = {1, 2, 3};
  options.output_dtypes = {DType::kFloat32, DType::kFloat32};
  const KernelSpec spec = MakeSpec(node, inputs, options);
  const RecurrentPath paths[2] = {RecurrentPath::kDnnlOnly,
                                  RecurrentPath::kLoop};
  std::unique_ptr<Kernel> kernels[2];
  for (int p = 0; p < 2; ++p) {
    absl::StatusOr<std::unique_ptr<Kernel>> k =
        MakeRecurrentKernel(spec, paths[p]);
    if (!k.ok()) {
      std::fprintf(stderr, "%s\n", k.status().ToString().c_str());
      return 1;
    }
    kernels[p] = *std::move(k);
  }
  std::vector<double> medians[2];
  Tensor last[2];
  for (int64_t r = 0; r < rounds; ++r) {
    for (int p = 0; p < 2; ++p) {
      std::vector<double> us;
      for (int64_t i = 0; i < iters + 2; ++i) {
        TestKernelContext ctx(inputs, options.output_dtypes);
        const auto t0 = std::chrono::steady_clock::now();
        const absl::Status st = kernels[p]->Compute(ctx);
        const double t = std::chrono::duration<double, std::micro>(
                             std::chrono::steady_clock::now() - t0)
                             .count();
        if (!st.ok()) {
          std::fprintf(stderr, "%s\n", st.ToString().c_str());
          return 1;
        }
        if (i >= 2) us.push_back(t);
        last[p] = ctx.TakeOutputs()[0];
      }
      medians[p].push_back(Median(us));
    }
  }
  const double dnnl = Median(medians[0]), loop = Median(medians[1]);
  const double flops = 2.0 * seq * batch * g * hidden * (input + hidden);
  std::printf("%s seq %lld batch %lld hidden %lld input %lld threads %s\n",
              op.c_str(), (long long)seq, (long long)batch, (long long)hidden,
              (long long)input,
              threads > 0 ? std::to_string(threads).c_str() : "all");
  std::printf("oneDNN primitive: %.0f us (%.1f GFLOP/s)\n", dnnl,
              flops / dnnl / 1e3);
  std::printf("loop (sgemm):     %.0f us (%.1f GFLOP/s)\n", loop,
              flops / loop / 1e3);
  std::printf("loop / oneDNN: %.2fx; max relative difference of Y %.2e\n",
              loop / dnnl, testing::MaxRelativeError(last[1], last[0]));
  return 0;
}

}  // namespace
}  // namespace glint::cpu

int main(int argc, char** argv) { return glint::cpu::Main(argc, argv); }
