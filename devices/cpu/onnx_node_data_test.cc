// Cross-checks the kernels against ONNX's own single-node test cases
// (Debian's libonnx-testdata): every case whose op has a CPU kernel is run
// and its outputs compared with ONNX's. Cases the kernels refuse with
// UNIMPLEMENTED are listed, not failed; anything else must match.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "devices/cpu/onnx_node_case.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

// Cases whose expected values ONNX wrote by hand with four decimals
// (-0.1406 for -0.140625): compared at ONNX's own runner's tolerance.
bool RoundedExpectations(const std::string& name) {
  return absl::StartsWith(name, "test_roialign_") ||
         name == "test_gridsample_bicubic";
}

// Empty when equal (floats within `rtol` relative, 1e-5 absolute).
std::string Compare(const Tensor& got, const Tensor& want, double rtol = 1e-4) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return "got " + std::string(DTypeName(got.dtype())) +
           got.shape().ToString() + ", want " +
           std::string(DTypeName(want.dtype())) + want.shape().ToString();
  }
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    double g, w;
    if (got.dtype() == DType::kFloat32) {
      g = got.data<float>()[i];
      w = want.data<float>()[i];
    } else if (got.dtype() == DType::kFloat64) {
      g = got.data<double>()[i];
      w = want.data<double>()[i];
    } else {
      const size_t es = DTypeSize(got.dtype());
      if (std::memcmp(got.data<char>() + i * es, want.data<char>() + i * es,
                      es) != 0) {
        return "element " + std::to_string(i) + " differs";
      }
      continue;
    }
    if (std::isnan(w) && std::isnan(g)) continue;
    if (!(std::abs(g - w) <= 1e-5 + rtol * std::abs(w))) {
      return "element " + std::to_string(i) + ": got " + std::to_string(g) +
             ", want " + std::to_string(w);
    }
  }
  return "";
}

TEST(OnnxNodeDataTest, SupportedCasesMatch) {
  const std::vector<std::string> cases = testing::ListOnnxNodeCases();
  if (cases.empty())
    GTEST_SKIP() << testing::kOnnxNodeDataDir << " is not installed";
  const KernelRegistry& registry = CpuKernelRegistry();
  int passed = 0;
  std::vector<std::string> refused;
  for (const std::string& name : cases) {
    // ONNX 1.12 stores these cases' bfloat16 tensors as uint16 data, which
    // contradicts their models; the conformance test reports them.
    if (absl::StrContains(name, "BFLOAT16")) continue;
    // ONNX 1.12 generated the window cases with pi = 3.1415 (its operators'
    // own definition uses 2pi = 6.2831853): their data is 7e-5 off, within
    // the conformance test's rtol 1e-3 but not this test's 1e-4.
    if (absl::StrContains(name, "window")) continue;
    testing::OnnxNodeCase c;
    if (!testing::LoadOnnxNodeCase(testing::kOnnxNodeDataDir, name, registry,
                                   &c)) {
      continue;
    }
    const Node& node = c.node;
    const std::vector<Tensor>& inputs = c.inputs;
    const testing::RunKernelOptions& options = c.options;
    const std::vector<Tensor>& want = c.want;
    absl::StatusOr<std::vector<Tensor>> got =
        testing::RunKernel(registry, node, inputs, options);
    if (got.status().code() == absl::StatusCode::kUnimplemented) {
      refused.push_back(name + ": " + std::string(got.status().message()));
      continue;
    }
    ASSERT_TRUE(got.ok()) << name << ": " << got.status();
    // Graph outputs by name: a node may leave optional outputs out
    // (LSTM's Y), so positions need not match.
    for (size_t i = 0; i < want.size(); ++i) {
      const auto it =
          std::find(node.outputs.begin(), node.outputs.end(), c.want_names[i]);
      ASSERT_NE(it, node.outputs.end()) << name << " output " << i;
      EXPECT_EQ(Compare((*got)[it - node.outputs.begin()], want[i],
                        RoundedExpectations(name) ? 1e-3 : 1e-4),
                "")
          << name << " output " << i;
    }
    ++passed;
    std::cout << "matched " << name << "\n";
  }
  for (const std::string& r : refused) std::cout << "refused " << r << "\n";
  std::cout << passed << " ONNX node cases matched\n";
  EXPECT_GE(passed, 100);
}

}  // namespace
}  // namespace glint::cpu
