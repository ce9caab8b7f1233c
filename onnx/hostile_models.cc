#include "onnx/hostile_models.h"

#include <cstdint>

#include "onnx/onnx_pb.h"
#include "onnx/test_models.h"

namespace glint::testing {
namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;
constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;

std::string StridesZero(const std::string& op) {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {1, 1, 4, 4});
  std::vector<std::string> inputs = {"x"};
  if (op == "Conv") {
    b.Input("w", kFloat, {1, 1, 2, 2});
    inputs.push_back("w");
  }
  onnx::NodeProto& node = b.Node(op, inputs, {"y"});
  if (op != "Conv") SetAttribute(node, "kernel_shape", {2, 2});
  SetAttribute(node, "strides", {0, 0});
  b.Output("y", kFloat);
  return b.Serialize();
}

// `op` whose operand `operand` (of `inputs`) is declared int64[2^31].
std::string ShapeOperandBomb(const std::string& op, int operand) {
  OnnxModelBuilder b;
  std::vector<std::string> inputs;
  if (operand == 1) {
    b.Input("x", kFloat, {1});
    inputs.push_back("x");
  }
  b.Input("s", kInt64, {int64_t{1} << 31});
  inputs.push_back("s");
  b.Node(op, inputs, {"y"});
  b.Output("y", kFloat);
  return b.Serialize();
}

// A unary op over an input of `dims`.
std::string HugeInput(const std::vector<int64_t>& dims, const std::string& op) {
  OnnxModelBuilder b;
  b.Input("x", kFloat, dims);
  std::vector<std::string> inputs = {"x"};
  if (op == "Conv") {
    b.Input("w", kFloat, {1, 1, 2, 2});
    inputs.push_back("w");
  }
  onnx::NodeProto& node = b.Node(op, inputs, {"y"});
  if (op != "Relu") {
    node.add_attribute()->set_name("auto_pad");
    node.mutable_attribute(0)->set_type(onnx::AttributeProto::STRING);
    node.mutable_attribute(0)->set_s("SAME_UPPER");
    SetAttribute(node, "strides", {2, 2});
    if (op == "MaxPool") SetAttribute(node, "kernel_shape", {2, 2});
  }
  b.Output("y", kFloat);
  return b.Serialize();
}

}  // namespace

std::vector<HostileModel> HostileModels() {
  std::vector<HostileModel> models;
  for (const char* op : {"Conv", "MaxPool", "AveragePool"}) {
    models.push_back({std::string(op) + "_strides_0", StridesZero(op), kInvalid,
                      "attribute 'strides' holds 0"});
  }
  {
    OnnxModelBuilder b;
    b.Input("x", kFloat, {1, 4, 2, 2});
    SetAttribute(b.Node("DepthToSpace", {"x"}, {"y"}), "blocksize",
                 int64_t{1} << 32);
    b.Output("y", kFloat);
    models.push_back({"DepthToSpace_blocksize_2^32", b.Serialize(), kInvalid,
                      "attribute 'blocksize' is 4294967296"});
  }
  {
    OnnxModelBuilder b;
    b.Input("x", kFloat, {2, 2});
    b.Input("i", kInt64, {2, 1});
    SetAttribute(b.Node("GatherND", {"x", "i"}, {"y"}), "batch_dims", -7);
    b.Output("y", kFloat);
    models.push_back({"GatherND_batch_dims_-7", b.Serialize(), kInvalid,
                      "attribute 'batch_dims' is -7"});
  }
  models.push_back({"ConstantOfShape_2^31",
                    ShapeOperandBomb("ConstantOfShape", 0), kInvalid,
                    "has 2147483648 elements, over Glint's rank limit"});
  models.push_back({"Expand_2^31", ShapeOperandBomb("Expand", 1), kInvalid,
                    "has 2147483648 elements, over Glint's rank limit"});
  models.push_back({"Reshape_2^31", ShapeOperandBomb("Reshape", 1), kInvalid,
                    "has 2147483648 elements, over Glint's rank limit"});
  models.push_back({"Conv_same_upper_10^12",
                    HugeInput({1, 1, 1'000'000'000'000, 4}, "Conv"), kInvalid,
                    "would exceed Glint's limit of 1024 GiB per tensor"});
  models.push_back({"MaxPool_same_upper_10^12",
                    HugeInput({1, 1, 1'000'000'000'000, 4}, "MaxPool"),
                    kInvalid, "would exceed Glint's limit of 1024 GiB"});
  models.push_back({"Relu_3x2^31x2^31",
                    HugeInput({3, int64_t{1} << 31, int64_t{1} << 31}, "Relu"),
                    kInvalid, "would exceed Glint's limit of 1024 GiB"});
  {
    OnnxModelBuilder b;
    b.Input("x", kFloat, {2});
    b.Node("Relu", {"x"}, {"y"});
    b.Output("y", kFloat, {2});
    onnx::ModelProto& m = b.mutable_proto();
    m.mutable_graph()->mutable_input(0)->set_name("x\xff\xfe");
    m.mutable_graph()->mutable_node(0)->set_input(0, "x\xff\xfe");
    models.push_back({"input_name_not_utf8", m.SerializeAsString(), kInvalid,
                      "name 'x\\xff\\xfe' is not UTF-8"});
  }
  return models;
}

std::string OnnxSegfaultModel() {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {1, 1});
  b.Input("w", kFloat, {1, 1, 1});
  b.Node("Conv", {"x", "w"}, {"y"});
  b.Output("y", kFloat);
  return b.Serialize();
}

std::string OnnxMemoryBombModel() {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {1});
  b.Input("s", kInt64, {int64_t{1} << 31});
  b.Node("Identity", {"s"}, {"t"});
  b.Node("Expand", {"x", "t"}, {"y"});
  b.Output("y", kFloat);
  return b.Serialize();
}

}  // namespace glint::testing
