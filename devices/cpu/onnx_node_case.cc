#include "devices/cpu/onnx_node_case.h"

#include <dirent.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "onnx/onnx_pb.h"

namespace glint::cpu::testing {
namespace {

std::vector<std::string> ListDirSorted(const std::string& dir) {
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
  const int64_t given =
      p.has_raw_data()
          ? static_cast<int64_t>(p.raw_data().size() / DTypeSize(*dtype))
          : std::max({p.float_data_size(), p.double_data_size(),
                      p.int64_data_size(), p.int32_data_size()});
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

}  // namespace

std::vector<std::string> ListOnnxNodeCases(const std::string& dir) {
  return ListDirSorted(dir);
}

bool LoadOnnxNodeCase(const std::string& data_dir, const std::string& name,
                      const KernelRegistry& registry, OnnxNodeCase* c) {
  if (absl::EndsWith(name, "_expanded")) return false;  // Multi-node graphs.
  const std::string dir = data_dir + "/" + name;
  onnx::ModelProto model;
  if (!ReadProto(dir + "/model.onnx", &model)) return false;
  const onnx::GraphProto& graph = model.graph();
  if (graph.node_size() != 1) return false;
  const onnx::NodeProto& np = graph.node(0);
  if (!np.domain().empty() && np.domain() != "ai.onnx") return false;
  if (registry.Find(np.op_type()) == nullptr) return false;
  *c = OnnxNodeCase();
  c->name = name;
  Node& node = c->node;
  if (!ToNode(np, &node)) return false;
  RunKernelOptions& options = c->options;
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
    ok = ok &&
         ReadProto(dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb",
                   &tp);
    if (!ok) break;
    by_name[graph.input(i).name()] = FromProto(tp);
    ok = by_name[graph.input(i).name()].valid();
  }
  for (const onnx::TensorProto& init : graph.initializer()) {
    by_name[init.name()] = FromProto(init);
  }
  for (const std::string& in : node.inputs) {
    c->inputs.push_back(in.empty() ? Tensor() : by_name[in]);
  }
  for (int i = 0; ok && i < graph.output_size(); ++i) {
    onnx::TensorProto tp;
    ok = ReadProto(dir + "/test_data_set_0/output_" + std::to_string(i) + ".pb",
                   &tp);
    c->want.push_back(FromProto(tp));
    c->want_names.push_back(graph.output(i).name());
    ok = ok && c->want.back().valid();
    auto dt = DTypeFromOnnx(graph.output(i).type().tensor_type().elem_type());
    options.output_dtypes.push_back(dt.ok() ? *dt : DType::kUndefined);
  }
  return ok;
}

}  // namespace glint::cpu::testing
