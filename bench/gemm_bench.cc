// RowGemm (the batch-invariant float32 GEMM MatMul/Gemm run on AVX2 CPUs,
// devices/cpu/row_gemm.h) against oneDNN's matmul with packed weights, on
// the shapes of fully connected layers at serving batch sizes. Prints
// GFLOP/s of each and the ratio; asserts nothing.
//
//   bazel run -c opt //bench:gemm_bench [-- threads]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "devices/cpu/kernel_util.h"
#include "devices/cpu/row_gemm.h"
#include "dnnl.hpp"

namespace {

using glint::cpu::RowGemm;
using glint::cpu::RowGemmItem;
using glint::cpu::RowGemmShape;

// Median seconds of one call, over calls for about 0.3 s.
double MedianSeconds(const std::function<void()>& fn) {
  fn();
  std::vector<double> times;
  const auto start = std::chrono::steady_clock::now();
  while (times.size() < 5 ||
         (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(300) &&
          times.size() < 10000)) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - t0)
                        .count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2,
                   times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  glint::cpu::SetKernelThreads(threads);
  if (!glint::cpu::RowGemmAvailable()) {
    std::printf("RowGemm needs AVX2 and FMA; this CPU has not\n");
    return 0;
  }
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::printf("%d thread(s)\n%6s %6s %6s %12s %12s %8s\n", threads, "M", "K",
              "N", "oneDNN GF/s", "RowGemm GF/s", "ratio");
  struct Case { int64_t m, k, n; };
  for (const Case c : std::vector<Case>{{1, 1024, 1024},   {8, 1024, 1024},
                                        {64, 1024, 1024},  {256, 1024, 1024},
                                        {1, 4096, 1024},   {8, 4096, 1024},
                                        {64, 768, 3072},   {128, 3072, 768},
                                        {8, 512, 10},      {512, 64, 64}}) {
    std::vector<float> a(c.m * c.k), b(c.k * c.n), y(c.m * c.n);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    // oneDNN: weights in its preferred layout, reordered once.
    const memory::desc a_md({c.m, c.k}, memory::data_type::f32,
                            memory::format_tag::ab);
    const memory::desc b_any({c.k, c.n}, memory::data_type::f32,
                             memory::format_tag::any);
    const memory::desc y_md({c.m, c.n}, memory::data_type::f32,
                            memory::format_tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_any, y_md),
                                    engine);
    memory b_user({{c.k, c.n}, memory::data_type::f32, memory::format_tag::ab},
                  engine, b.data());
    memory b_packed(pd.weights_desc(), engine);
    dnnl::reorder(b_user, b_packed).execute(stream, b_user, b_packed);
    dnnl::matmul prim(pd);
    memory a_mem(a_md, engine, a.data()), y_mem(y_md, engine, y.data());
    const double onednn = MedianSeconds([&] {
      prim.execute(stream, {{DNNL_ARG_SRC, a_mem},
                            {DNNL_ARG_WEIGHTS, b_packed},
                            {DNNL_ARG_DST, y_mem}});
      stream.wait();
    });
    std::vector<float> packed(glint::cpu::RowGemmPackedFloats(c.k, c.n));
    glint::cpu::RowGemmPackB(b.data(), c.k, c.n, c.n, 1, packed.data());
    const RowGemmShape shape{c.m, c.n, c.k, c.k, 1, c.n};
    const std::vector<RowGemmItem> items = {
        {a.data(), packed.data(), y.data(), nullptr}};
    const double row = MedianSeconds([&] { RowGemm(shape, items, {}); });
    const double flops = 2.0 * c.m * c.k * c.n;
    std::printf("%6ld %6ld %6ld %12.1f %12.1f %8.2f\n", c.m, c.k, c.n,
                flops / onednn * 1e-9, flops / row * 1e-9, onednn / row);
  }
  return 0;
}
