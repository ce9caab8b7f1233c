#include "tests/test_util.h"

#include <cmath>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "core/half.h"

namespace glint {
namespace testing {
namespace {

void AddTensorInput(onnx::GraphProto* g, const std::string& name,
                    std::vector<int64_t> dims, bool output = false) {
  onnx::ValueInfoProto* v = output ? g->add_output() : g->add_input();
  v->set_name(name);
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
}

onnx::ModelProto NewModel(const std::string& graph_name) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("glint-tests");
  m.add_opset_import()->set_version(13);
  m.mutable_graph()->set_name(graph_name);
  return m;
}

// Element i of a tensor of any numeric dtype as double (floating types) for
// comparison; `exact` tells whether the dtype compares exactly.
double ElementAsDouble(const Tensor& t, int64_t i, bool* exact) {
  *exact = false;
  switch (t.dtype()) {
    case DType::kFloat32: return t.data<float>()[i];
    case DType::kFloat64: return t.data<double>()[i];
    case DType::kFloat16: return Float16ToFloat(t.data<uint16_t>()[i]);
    case DType::kBFloat16: return BFloat16ToFloat(t.data<uint16_t>()[i]);
    default: break;
  }
  *exact = true;
  switch (t.dtype()) {
    case DType::kInt8: return t.data<int8_t>()[i];
    case DType::kUInt8: return t.data<uint8_t>()[i];
    case DType::kBool: return t.data<uint8_t>()[i];
    case DType::kInt16: return t.data<int16_t>()[i];
    case DType::kUInt16: return t.data<uint16_t>()[i];
    case DType::kInt32: return t.data<int32_t>()[i];
    case DType::kUInt32: return t.data<uint32_t>()[i];
    // 64-bit integers are compared bytewise by the caller.
    default: return 0;
  }
}

}  // namespace

std::string AddModel() {
  onnx::ModelProto m = NewModel("add");
  onnx::GraphProto* g = m.mutable_graph();
  AddTensorInput(g, "x", {2, 3});
  AddTensorInput(g, "y", {2, 3});
  AddTensorInput(g, "z", {2, 3}, /*output=*/true);
  onnx::NodeProto* n = g->add_node();
  n->set_name("add0");
  n->set_op_type("Add");
  n->add_input("x");
  n->add_input("y");
  n->add_output("z");
  return m.SerializeAsString();
}

std::string SingleOpModel(const std::string& op_type,
                          const std::string& node_name) {
  onnx::ModelProto m = NewModel("single_op");
  onnx::GraphProto* g = m.mutable_graph();
  AddTensorInput(g, "a", {2, 2});
  AddTensorInput(g, "b", {2, 2});
  AddTensorInput(g, "c", {2, 2}, /*output=*/true);
  onnx::NodeProto* n = g->add_node();
  n->set_name(node_name);
  n->set_op_type(op_type);
  n->add_input("a");
  n->add_input("b");
  n->add_output("c");
  onnx::AttributeProto* eq = n->add_attribute();
  eq->set_name("equation");
  eq->set_type(onnx::AttributeProto::STRING);
  eq->set_s("ij,jk->ik");
  return m.SerializeAsString();
}

std::string BigWeightsModel(int64_t rows, int64_t cols) {
  onnx::ModelProto m = NewModel("big");
  onnx::GraphProto* g = m.mutable_graph();
  AddTensorInput(g, "x", {1, rows});
  AddTensorInput(g, "y", {1, cols}, /*output=*/true);
  onnx::TensorProto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(rows);
  w->add_dims(cols);
  w->set_raw_data(std::string(rows * cols * sizeof(float), '\0'));
  onnx::NodeProto* n = g->add_node();
  n->set_name("matmul0");
  n->set_op_type("MatMul");
  n->add_input("x");
  n->add_input("W");
  n->add_output("y");
  return m.SerializeAsString();
}

std::vector<std::string> RuntimeInputNames(const onnx::ModelProto& model) {
  std::set<std::string> initializers;
  for (const onnx::TensorProto& t : model.graph().initializer()) {
    initializers.insert(t.name());
  }
  std::vector<std::string> names;
  for (const onnx::ValueInfoProto& v : model.graph().input()) {
    if (initializers.count(v.name()) == 0) names.push_back(v.name());
  }
  return names;
}

std::string CompareTensors(const Tensor& actual, const Tensor& expected,
                           double rtol, double atol) {
  if (actual.dtype() != expected.dtype()) {
    return absl::StrCat("dtype ", DTypeName(actual.dtype()), ", expected ",
                        DTypeName(expected.dtype()));
  }
  if (actual.shape() != expected.shape()) {
    return absl::StrCat("shape ", actual.shape().ToString(), ", expected ",
                        expected.shape().ToString());
  }
  const int64_t n = expected.num_elements();
  if (DTypeSize(expected.dtype()) == 8 && expected.dtype() != DType::kFloat64) {
    if (n > 0 &&
        std::memcmp(actual.raw_data(), expected.raw_data(), n * 8) != 0) {
      return "64-bit integer values differ";
    }
    return "";
  }
  for (int64_t i = 0; i < n; ++i) {
    bool exact = false;
    const double a = ElementAsDouble(actual, i, &exact);
    const double e = ElementAsDouble(expected, i, &exact);
    if (std::isnan(e) && std::isnan(a)) continue;
    const bool ok = exact ? a == e
                          : (a == e || std::fabs(a - e) <=
                                           atol + rtol * std::fabs(e));
    if (!ok) {
      return absl::StrCat("element ", i, " is ", a, ", expected ", e,
                          " (rtol ", rtol, ", atol ", atol, ")");
    }
  }
  return "";
}

}  // namespace testing
}  // namespace glint
