#include "onnx/test_models.h"

#include <algorithm>
#include <cstdint>

namespace glint::testing {
namespace {

void SetType(onnx::ValueInfoProto* v, int32_t elem_type,
             const std::vector<int64_t>& dims) {
  onnx::TypeProto_Tensor* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem_type);
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (int64_t d : dims) {
    if (d < 0) {
      shape->add_dim()->set_dim_param("N");
    } else {
      shape->add_dim()->set_dim_value(d);
    }
  }
}

}  // namespace

OnnxModelBuilder::OnnxModelBuilder(int64_t opset) {
  model_.set_ir_version(8);
  model_.set_producer_name("glint-tests");
  onnx::OperatorSetIdProto* op = model_.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model_.mutable_graph()->set_name("test");
}

OnnxModelBuilder& OnnxModelBuilder::Output(const std::string& name,
                                           int32_t elem_type) {
  onnx::ValueInfoProto* v = model_.mutable_graph()->add_output();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  return *this;
}

void SetGraphAttribute(onnx::NodeProto& node, const std::string& name,
                       const onnx::GraphProto& graph) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = graph;
}

std::string MakeLoopModel() {
  // The body, built as a model of its own and taken out of it.
  OnnxModelBuilder body_model(13);
  body_model.Input("i", onnx::TensorProto::INT64, {})
      .Input("cond_in", onnx::TensorProto::BOOL, {})
      .Input("y_in", onnx::TensorProto::FLOAT, {2});
  body_model.Node("Add", {"y_in", "d"}, {"y_out"}, "add");
  body_model.Node("Identity", {"cond_in"}, {"cond_out"}, "cond");
  body_model.Node("Identity", {"y_out"}, {"y_scan"}, "scan");
  body_model.Output("cond_out", onnx::TensorProto::BOOL, {})
      .Output("y_out", onnx::TensorProto::FLOAT, {2})
      .Output("y_scan", onnx::TensorProto::FLOAT, {2});
  onnx::GraphProto body = body_model.proto().graph();
  body.set_name("loop_body");

  OnnxModelBuilder b(13);
  b.Input("trip_count", onnx::TensorProto::INT64, {})
      .Input("x", onnx::TensorProto::FLOAT, {2})
      .FloatInitializer("y0", {2}, {0, 0});
  b.Node("Add", {"x", "x"}, {"d"}, "double");
  onnx::NodeProto& loop =
      b.Node("Loop", {"trip_count", "", "y0"}, {"y_final", "ys"}, "loop");
  SetGraphAttribute(loop, "body", body);
  b.Output("y_final", onnx::TensorProto::FLOAT, {2})
      .Output("ys", onnx::TensorProto::FLOAT);
  return b.Serialize();
}

std::string MakeUnknownRankModel() {
  // A branch: out = Reshape(x, dims), the dims an initializer of its own.
  auto branch = [](const std::string& name, std::vector<int64_t> dims) {
    OnnxModelBuilder m(13);
    m.Node("Reshape", {"x", name + "_dims"}, {name + "_out"}, name);
    onnx::TensorProto* t = m.mutable_proto().mutable_graph()->add_initializer();
    t->set_name(name + "_dims");
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(dims.size()));
    for (int64_t d : dims) t->add_int64_data(d);
    m.Output(name + "_out", onnx::TensorProto::FLOAT);
    onnx::GraphProto g = m.proto().graph();
    g.set_name(name);
    return g;
  };
  OnnxModelBuilder b(13);
  b.Input("c", onnx::TensorProto::BOOL, {})
      .Input("x", onnx::TensorProto::FLOAT, {6})
      .FloatInitializer("two", {}, {2.0f});
  onnx::NodeProto& node = b.Node("If", {"c"}, {"y0"}, "branch");
  SetGraphAttribute(node, "then_branch", branch("matrix", {2, 3}));
  SetGraphAttribute(node, "else_branch", branch("vector", {6}));
  b.Node("Relu", {"y0"}, {"y1"}, "relu");
  b.Node("Transpose", {"y1"}, {"y1t"}, "tr");
  b.Node("MatMul", {"y1", "y1t"}, {"gram"}, "gram");
  b.Node("Mul", {"y1", "two"}, {"y2"}, "double");
  b.Node("Shape", {"y2"}, {"y2_shape"}, "shape");
  b.Output("gram", onnx::TensorProto::FLOAT)
      .Output("y2", onnx::TensorProto::FLOAT)
      .Output("y2_shape", onnx::TensorProto::INT64);
  return b.Serialize();
}

void SetAttribute(onnx::NodeProto& node, const std::string& name,
                  int64_t value) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

void SetAttribute(onnx::NodeProto& node, const std::string& name,
                  const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

OnnxModelBuilder& OnnxModelBuilder::Input(const std::string& name,
                                          int32_t elem_type,
                                          const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto* v = model_.mutable_graph()->add_input();
  v->set_name(name);
  SetType(v, elem_type, dims);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::Output(const std::string& name,
                                           int32_t elem_type,
                                           const std::vector<int64_t>& dims) {
  onnx::ValueInfoProto* v = model_.mutable_graph()->add_output();
  v->set_name(name);
  SetType(v, elem_type, dims);
  return *this;
}

OnnxModelBuilder& OnnxModelBuilder::FloatInitializer(
    const std::string& name, const std::vector<int64_t>& dims,
    const std::vector<float>& values) {
  onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()),
                              values.size() * sizeof(float)));
  return *this;
}

onnx::NodeProto& OnnxModelBuilder::Node(const std::string& op_type,
                                        const std::vector<std::string>& inputs,
                                        const std::vector<std::string>& outputs,
                                        const std::string& name) {
  onnx::NodeProto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op_type);
  n->set_name(name.empty() ? op_type + "_" +
                                 std::to_string(model_.graph().node_size())
                           : name);
  for (const std::string& in : inputs) n->add_input(in);
  for (const std::string& out : outputs) n->add_output(out);
  return *n;
}

std::string OnnxModelBuilder::Serialize() const {
  return model_.SerializeAsString();
}

std::string MakeMlpModel(int64_t batch, int64_t in, int64_t out) {
  std::vector<float> w(in * out), b(out);
  for (int64_t i = 0; i < in; ++i) {
    for (int64_t j = 0; j < out; ++j) w[i * out + j] = (i - j) / 8.0f;
  }
  for (int64_t j = 0; j < out; ++j) b[j] = j / 4.0f - 0.5f;
  OnnxModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {batch, in})
      .FloatInitializer("w", {in, out}, w)
      .FloatInitializer("b", {out}, b)
      .Output("y", onnx::TensorProto::FLOAT, {batch, out});
  m.Node("MatMul", {"x", "w"}, {"xw"}, "matmul");
  m.Node("Add", {"xw", "b"}, {"xwb"}, "add");
  m.Node("Relu", {"xwb"}, {"y"}, "relu");
  return m.Serialize();
}

std::vector<float> MlpReference(const std::vector<float>& x, int64_t batch,
                                int64_t in, int64_t out) {
  std::vector<float> y(batch * out);
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t j = 0; j < out; ++j) {
      double acc = j / 4.0 - 0.5;
      for (int64_t i = 0; i < in; ++i) acc += x[r * in + i] * ((i - j) / 8.0);
      y[r * out + j] = static_cast<float>(std::max(acc, 0.0));
    }
  }
  return y;
}

std::string MakeDeepMlpModel(int64_t batch, int64_t width, int layers) {
  OnnxModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {batch, width})
      .Output("y", onnx::TensorProto::FLOAT, {batch, width});
  uint32_t state = 12345;
  auto next = [&state] {  // A small LCG: deterministic, no <random> needed.
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 24);
  };
  const float scale = 2.0f / static_cast<float>(width);
  std::string prev = "x";
  for (int l = 0; l < layers; ++l) {
    std::vector<float> w(width * width);
    for (float& v : w) v = (next() - 0.45f) * scale * 2;
    const std::string wn = "w" + std::to_string(l);
    const std::string h = l + 1 == layers ? "y" : "h" + std::to_string(l);
    m.FloatInitializer(wn, {width, width}, w);
    m.Node("MatMul", {prev, wn}, {h}, "mm" + std::to_string(l));
    prev = h;
    if (l + 1 < layers) {
      const std::string a = "a" + std::to_string(l);
      m.Node("Relu", {h}, {a}, "relu" + std::to_string(l));
      prev = a;
    }
  }
  return m.Serialize();
}

std::string MakeConvNetModel() {
  std::vector<float> w(4 * 3 * 3 * 3), b(4), w2(256 * 10);
  for (size_t i = 0; i < w.size(); ++i) w[i] = (i % 5) * 0.1f - 0.2f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.05f * i;
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = (i % 7) * 0.01f - 0.03f;
  OnnxModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {1, 3, 8, 8})
      .FloatInitializer("w", {4, 3, 3, 3}, w)
      .FloatInitializer("b", {4}, b)
      .FloatInitializer("w2", {256, 10}, w2)
      .Output("y", onnx::TensorProto::FLOAT, {1, 10});
  onnx::NodeProto& conv = m.Node("Conv", {"x", "w", "b"}, {"c"}, "conv");
  SetAttribute(conv, "pads", std::vector<int64_t>{1, 1, 1, 1});
  SetAttribute(conv, "kernel_shape", std::vector<int64_t>{3, 3});
  m.Node("Relu", {"c"}, {"r"}, "relu");
  m.Node("Flatten", {"r"}, {"f"}, "flatten");
  m.Node("MatMul", {"f", "w2"}, {"y"}, "matmul");
  return m.Serialize();
}

}  // namespace glint::testing
