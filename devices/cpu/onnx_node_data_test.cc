// Cross-checks the kernels against ONNX's own single-node test cases
// (Debian's libonnx-testdata): every case whose op has a CPU kernel is run
// and its outputs compared with ONNX's. Cases the kernels refuse with
// UNIMPLEMENTED are listed, not failed; anything else must match.
#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"

namespace glint::cpu {
namespace {

constexpr char kDataDir[] = "/usr/share/libonnx-testdata/data/node";

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

template <typename Proto>
bool ReadProto(const std::string& path, Proto* proto) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream buf;
  buf << in.rdbuf();
  return proto->ParseFromString(buf.str());
}

// A TensorProto as a Tensor; !valid() for what this test does not handle.
Tensor FromProto(const onnx::TensorProto& p) {
  absl::StatusOr<DType> dtype = DTypeFromOnnx(p.data_type());
  if (!dtype.ok() || DTypeSize(*dtype) == 0) return Tensor();
  Shape shape(std::vector<int64_t>(p.dims().begin(), p.dims().end()));
  // Some cases keep their data elsewhere; never allocate from dims alone.
  const int64_t count = shape.NumElements();
  const int64_t given = p.has_raw_data()
                            ? static_cast<int64_t>(p.raw_data().size() /
                                                   DTypeSize(*dtype))
                            : std::max({p.float_data_size(),
                                        p.double_data_size(),
                                        p.int64_data_size(),
                                        p.int32_data_size()});
  if (count < 0 || count != given) return Tensor();
  absl::StatusOr<Tensor> t = Tensor::Create(*dtype, shape);
  if (!t.ok()) return Tensor();
  const size_t bytes = t->num_bytes();
  if (p.has_raw_data()) {
    if (p.raw_data().size() != bytes) return Tensor();
    std::copy(p.raw_data().begin(), p.raw_data().end(),
              static_cast<char*>(t->raw_data()));
    return *t;
  }
  const int64_t n = t->num_elements();
  switch (*dtype) {
    case DType::kFloat32:
      if (p.float_data_size() != n) return Tensor();
      std::copy(p.float_data().begin(), p.float_data().end(), t->data<float>());
      return *t;
    case DType::kFloat64:
      if (p.double_data_size() != n) return Tensor();
      std::copy(p.double_data().begin(), p.double_data().end(),
                t->data<double>());
      return *t;
    case DType::kInt64:
      if (p.int64_data_size() != n) return Tensor();
      std::copy(p.int64_data().begin(), p.int64_data().end(),
                t->data<int64_t>());
      return *t;
    case DType::kInt32:
      if (p.int32_data_size() != n) return Tensor();
      std::copy(p.int32_data().begin(), p.int32_data().end(),
                t->data<int32_t>());
      return *t;
    default:
      return Tensor();
  }
}

// False when the node uses an attribute form this test cannot convert.
bool ToNode(const onnx::NodeProto& p, Node* node) {
  node->name = p.name().empty() ? p.op_type() : p.name();
  node->op_type = p.op_type();
  node->domain = p.domain();
  node->inputs.assign(p.input().begin(), p.input().end());
  node->outputs.assign(p.output().begin(), p.output().end());
  for (const onnx::AttributeProto& a : p.attribute()) {
    switch (a.type()) {
      case onnx::AttributeProto::INT:
        node->attributes[a.name()] = static_cast<int64_t>(a.i());
        break;
      case onnx::AttributeProto::FLOAT:
        node->attributes[a.name()] = a.f();
        break;
      case onnx::AttributeProto::STRING:
        node->attributes[a.name()] = a.s();
        break;
      case onnx::AttributeProto::INTS:
        node->attributes[a.name()] =
            std::vector<int64_t>(a.ints().begin(), a.ints().end());
        break;
      case onnx::AttributeProto::FLOATS:
        node->attributes[a.name()] =
            std::vector<float>(a.floats().begin(), a.floats().end());
        break;
      case onnx::AttributeProto::TENSOR: {
        Tensor t = FromProto(a.t());
        if (!t.valid()) return false;
        node->attributes[a.name()] = t;
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

// Cases whose expected values ONNX wrote by hand with four decimals
// (-0.1406 for -0.140625): compared at ONNX's own runner's tolerance.
bool RoundedExpectations(const std::string& name) {
  return absl::StartsWith(name, "test_roialign_") ||
         name == "test_gridsample_bicubic";
}

// Empty when equal (floats within `rtol` relative, 1e-5 absolute).
std::string Compare(const Tensor& got, const Tensor& want,
                    double rtol = 1e-4) {
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
  const std::vector<std::string> cases = ListDir(kDataDir);
  if (cases.empty()) GTEST_SKIP() << kDataDir << " is not installed";
  const KernelRegistry& registry = CpuKernelRegistry();
  int passed = 0;
  std::vector<std::string> refused;
  for (const std::string& name : cases) {
    if (absl::EndsWith(name, "_expanded")) continue;  // Multi-node graphs.
    // ONNX 1.12 stores these cases' bfloat16 tensors as uint16 data, which
    // contradicts their models; the conformance test reports them.
    if (absl::StrContains(name, "BFLOAT16")) continue;
    // ONNX 1.12 generated the window cases with pi = 3.1415 (its operators'
    // own definition uses 2pi = 6.2831853): their data is 7e-5 off, within
    // the conformance test's rtol 1e-3 but not this test's 1e-4.
    if (absl::StrContains(name, "window")) continue;
    const std::string dir = std::string(kDataDir) + "/" + name;
    onnx::ModelProto model;
    if (!ReadProto(dir + "/model.onnx", &model)) continue;
    const onnx::GraphProto& graph = model.graph();
    if (graph.node_size() != 1) continue;
    const onnx::NodeProto& np = graph.node(0);
    if (!np.domain().empty() && np.domain() != "ai.onnx") continue;
    if (registry.Find(np.op_type()) == nullptr) continue;
    Node node;
    if (!ToNode(np, &node)) continue;
    testing::RunKernelOptions options;
    for (const auto& op : model.opset_import()) {
      if (op.domain().empty() || op.domain() == "ai.onnx") {
        options.opset_version = op.version();
      }
    }
    // Inputs by name (graph inputs in order match input_<i>.pb).
    std::map<std::string, Tensor> by_name;
    bool ok = true;
    for (int i = 0; i < graph.input_size(); ++i) {
      onnx::TensorProto tp;
      ok = ok && ReadProto(dir + "/test_data_set_0/input_" +
                               std::to_string(i) + ".pb", &tp);
      if (!ok) break;
      by_name[graph.input(i).name()] = FromProto(tp);
      ok = by_name[graph.input(i).name()].valid();
    }
    for (const onnx::TensorProto& init : graph.initializer()) {
      by_name[init.name()] = FromProto(init);
    }
    std::vector<Tensor> inputs;
    for (const std::string& in : node.inputs) {
      inputs.push_back(in.empty() ? Tensor() : by_name[in]);
    }
    std::vector<Tensor> want;
    for (int i = 0; ok && i < graph.output_size(); ++i) {
      onnx::TensorProto tp;
      ok = ReadProto(dir + "/test_data_set_0/output_" + std::to_string(i) +
                         ".pb", &tp);
      want.push_back(FromProto(tp));
      ok = ok && want.back().valid();
      auto dt = DTypeFromOnnx(graph.output(i).type().tensor_type().elem_type());
      options.output_dtypes.push_back(dt.ok() ? *dt : DType::kUndefined);
    }
    if (!ok) continue;
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
      const auto it = std::find(node.outputs.begin(), node.outputs.end(),
                                graph.output(static_cast<int>(i)).name());
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
