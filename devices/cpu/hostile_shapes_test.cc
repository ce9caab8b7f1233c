// Runs every ONNX single-node case whose op has a CPU kernel with hostile
// inputs, to catch kernels that size scratch memory or loops by a dimension
// of an input that may be empty, or by a run-time shape/count value:
//  - each input in turn replaced by an empty tensor of its dtype and rank
//    whose first dimension is 0 and whose other dimensions multiply to
//    >= 2^40 (CheckTensorSize lets such a tensor through);
//  - each small integer input (a shape, size, count, axis, k...) filled
//    with huge or negative values.
// Input shapes are hidden from the spec, so kernels see them at run time.
// The address space is capped first, so a giant allocation fails at once
// with bad_alloc (which ComputeNoThrow/BuildNoThrow report as
// RESOURCE_EXHAUSTED "out of host memory") instead of overcommitting.
// Every variant must end with OK or a clean refusal.
#include <sys/resource.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "devices/cpu/onnx_node_case.h"
#include "gtest/gtest.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GLINT_HOSTILE_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GLINT_HOSTILE_SANITIZER 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__)
// ASan cannot run under RLIMIT_AS (it reserves terabytes of shadow memory):
// its own allocation limit stands in for it, so that an output a huge
// value legitimately asks for (under the 2^31 element cap) fails cleanly
// in Tensor::Create instead of being touched. A giant `new` in a kernel
// still aborts the test, as it should.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=4096";
}
#endif

namespace glint::cpu {
namespace {

// Far below any "giant" allocation (>= 2^40 elements), above what the
// cases legitimately need, and below this machine's free memory: an output
// a huge value legitimately asks for (under the generating ops' 2^31
// element cap) fails cleanly in Tensor::Create instead of being touched.
constexpr rlim_t kAddressSpaceCap = rlim_t{4} << 30;

// An empty tensor of `dtype` and `rank`: first dimension 0, the others
// 2^ceil(40 / (rank - 1)) each, so that they multiply to >= 2^40.
Tensor HostileEmpty(DType dtype, int rank) {
  std::vector<int64_t> dims(rank, 0);
  if (rank > 1) {
    const int bits = (40 + rank - 2) / (rank - 1);
    for (int i = 1; i < rank; ++i) dims[i] = int64_t{1} << bits;
  }
  absl::StatusOr<Tensor> t = Tensor::Create(dtype, Shape(std::move(dims)));
  return t.ok() ? *t : Tensor();
}

// `t` (int32 or int64) with every element set to `v` (saturated to int32).
Tensor Filled(const Tensor& t, int64_t v) {
  absl::StatusOr<Tensor> out = Tensor::Create(t.dtype(), t.shape());
  if (!out.ok()) return Tensor();
  for (int64_t i = 0; i < out->num_elements(); ++i) {
    if (t.dtype() == DType::kInt64) {
      out->data<int64_t>()[i] = v;
    } else {
      out->data<int32_t>()[i] = static_cast<int32_t>(
          std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(),
                              std::numeric_limits<int32_t>::max()));
    }
  }
  return *out;
}

// A failure that means a kernel let a hostile shape or value reach an
// allocation or an exception; empty when `s` is an acceptable outcome.
std::string Offense(const absl::Status& s) {
  if (s.code() == absl::StatusCode::kResourceExhausted &&
      absl::StrContains(s.message(), "out of host memory")) {
    return "giant allocation";
  }
  if (s.code() == absl::StatusCode::kInternal &&
      absl::StrContains(s.message(), "unexpected exception")) {
    return "escaped exception";
  }
  return "";
}

TEST(HostileShapesTest, EveryKernelRefusesOrCopesWithoutGiantAllocations) {
  const std::vector<std::string> cases = testing::ListOnnxNodeCases();
  if (cases.empty()) GTEST_SKIP() << testing::kOnnxNodeDataDir << " absent";
#ifndef GLINT_HOSTILE_SANITIZER
  // Sanitizers reserve terabytes of shadow memory; ASan also aborts on a
  // failed giant allocation by itself.
  rlimit limit{kAddressSpaceCap, kAddressSpaceCap};
  ASSERT_EQ(setrlimit(RLIMIT_AS, &limit), 0);
#endif
  const KernelRegistry& registry = CpuKernelRegistry();
  // oneDNN and OpenMP must still start under the cap.
  {
    Node matmul = testing::MakeNode("MatMul", {"a", "b"}, {"y"});
    absl::StatusOr<std::vector<Tensor>> got =
        testing::RunKernel(registry, matmul,
                           {testing::RandomTensor({256, 256}, 1),
                            testing::RandomTensor({256, 256}, 2)});
    ASSERT_TRUE(got.ok()) << got.status();
  }
  const bool verbose = std::getenv("GLINT_HOSTILE_VERBOSE") != nullptr;
  int num_cases = 0, num_variants = 0;
  std::map<std::string, int> by_code;
  std::vector<std::string> other_exhausted;
  // `constant_input` >= 0 also tells the kernel that input's value at build
  // time (the factory path that folds shapes and counts).
  auto run = [&](const testing::OnnxNodeCase& c, std::vector<Tensor> inputs,
                 const std::string& variant, int constant_input = -1) {
    testing::RunKernelOptions options = c.options;
    options.hide_input_shapes = true;
    if (constant_input >= 0) options.constant_inputs = {constant_input};
    if (verbose) std::cerr << c.name << " " << variant << std::endl;
    absl::StatusOr<std::vector<Tensor>> got =
        testing::RunKernel(registry, c.node, inputs, options);
    ++num_variants;
    ++by_code[absl::StatusCodeToString(got.status().code())];
    const std::string offense = Offense(got.status());
    EXPECT_EQ(offense, "") << c.name << " " << variant << ": " << got.status();
    if (offense.empty() &&
        got.status().code() == absl::StatusCode::kResourceExhausted) {
      other_exhausted.push_back(c.name + " " + variant + ": " +
                                std::string(got.status().message()));
    }
  };
  for (const std::string& name : cases) {
    testing::OnnxNodeCase c;
    if (!testing::LoadOnnxNodeCase(testing::kOnnxNodeDataDir, name, registry,
                                   &c)) {
      continue;
    }
    ++num_cases;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const Tensor& in = c.inputs[i];
      if (!in.valid()) continue;
      const int rank = in.shape().rank();
      if (rank >= 1) {
        std::vector<Tensor> inputs = c.inputs;
        inputs[i] = HostileEmpty(in.dtype(), rank);
        ASSERT_TRUE(inputs[i].valid()) << name << " input " << i;
        run(c, std::move(inputs), absl::StrCat("input ", i, " empty"));
      }
      const bool integer =
          in.dtype() == DType::kInt64 || in.dtype() == DType::kInt32;
      if (integer && in.num_elements() >= 1 && in.num_elements() <= 64) {
        for (int64_t v : {int64_t{1} << 40, std::numeric_limits<int64_t>::max(),
                          -(int64_t{1} << 40)}) {
          std::vector<Tensor> inputs = c.inputs;
          inputs[i] = Filled(in, v);
          run(c, inputs, absl::StrCat("input ", i, " = ", v));
          run(c, std::move(inputs),
              absl::StrCat("input ", i, " = ", v, " (constant)"),
              static_cast<int>(i));
        }
      }
    }
  }
  std::cout << num_cases << " cases, " << num_variants << " hostile variants\n";
  for (const auto& [code, n] : by_code)
    std::cout << "  " << code << ": " << n << "\n";
  for (const std::string& s : other_exhausted) {
    std::cout << "  (output over the cap) " << s << "\n";
  }
  EXPECT_GE(num_cases, 100);
}

}  // namespace
}  // namespace glint::cpu
