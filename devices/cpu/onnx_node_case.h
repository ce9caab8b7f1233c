// Loads ONNX's single-node test cases (Debian's libonnx-testdata) as a Node,
// its inputs and its expected outputs, ready for kernel_test_util's
// RunKernel. Shared by the tests that run kernels over every ONNX case.
#ifndef GLINT_DEVICES_CPU_ONNX_NODE_CASE_H_
#define GLINT_DEVICES_CPU_ONNX_NODE_CASE_H_

#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"

namespace glint::cpu::testing {

// Where libonnx-testdata installs the node cases.
inline constexpr char kOnnxNodeDataDir[] =
    "/usr/share/libonnx-testdata/data/node";

// One case: `inputs` follow node.inputs (!valid() for an absent optional
// one); `want[i]` is the graph output named `want_names[i]`.
struct OnnxNodeCase {
  std::string name;
  Node node;
  std::vector<Tensor> inputs;
  // opset_version and output_dtypes set from the model.
  RunKernelOptions options;
  std::vector<Tensor> want;
  std::vector<std::string> want_names;
};

// The case names under `dir`, sorted; empty when `dir` is absent.
std::vector<std::string> ListOnnxNodeCases(
    const std::string& dir = kOnnxNodeDataDir);

// Loads case `name` from `dir`. False for what these tests skip: expanded
// (multi-node) cases, non-ai.onnx domains, ops `registry` has no kernel for,
// attribute forms or tensors this loader cannot convert.
bool LoadOnnxNodeCase(const std::string& dir, const std::string& name,
                      const KernelRegistry& registry, OnnxNodeCase* c);

}  // namespace glint::cpu::testing

#endif  // GLINT_DEVICES_CPU_ONNX_NODE_CASE_H_
