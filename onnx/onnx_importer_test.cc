#include "onnx/onnx_importer.h"

#include <array>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/dim_expr.h"
#include "core/graph.h"
#include "core/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_tensor.h"
#include "onnx/test_models.h"

namespace glint {

// Readable Shapes in gtest failure messages.
void PrintTo(const Shape& shape, std::ostream* os) { *os << shape.ToString(); }

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kNodeTestData[] = "/usr/share/libonnx-testdata/data/node/";

// Debian's absl::string_view is not std::string_view, and gtest prints it
// character by character; compare and print std::string instead.
std::string Message(const absl::Status& s) { return std::string(s.message()); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadTestModel(const std::string& test) {
  std::string bytes =
      ReadFile(absl::StrCat(kNodeTestData, test, "/model.onnx"));
  EXPECT_FALSE(bytes.empty()) << "missing test data for " << test;
  return bytes;
}

onnx::TensorProto ReadTensorPb(const std::string& path) {
  onnx::TensorProto proto;
  const std::string bytes = ReadFile(path);
  EXPECT_TRUE(proto.ParseFromString(bytes)) << path;
  return proto;
}

// One dimension of a declared shape: a size or a symbolic name.
struct Dim {
  Dim(int64_t v) : value(v) {}      // NOLINT: implicit for brevity.
  Dim(const char* p) : param(p) {}  // NOLINT
  int64_t value = -1;
  std::string param;
};

void SetType(onnx::ValueInfoProto* vi, int32_t elem,
             const std::optional<std::vector<Dim>>& dims) {
  onnx::TypeProto_Tensor* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  if (!dims.has_value()) return;
  onnx::TensorShapeProto* shape = t->mutable_shape();
  for (const Dim& d : *dims) {
    if (!d.param.empty()) {
      shape->add_dim()->set_dim_param(d.param);
    } else if (d.value >= 0) {
      shape->add_dim()->set_dim_value(d.value);
    } else {
      shape->add_dim();
    }
  }
}

// Builds small ModelProtos for the tests.
class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 13) {
    model_.set_ir_version(8);
    onnx::OperatorSetIdProto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    graph()->set_name("test_graph");
  }

  onnx::ModelProto& model() { return model_; }
  onnx::GraphProto* graph() { return model_.mutable_graph(); }

  ModelBuilder& Input(const std::string& name, int32_t elem,
                      std::optional<std::vector<Dim>> dims) {
    onnx::ValueInfoProto* vi = graph()->add_input();
    vi->set_name(name);
    SetType(vi, elem, dims);
    return *this;
  }
  ModelBuilder& Output(const std::string& name, int32_t elem,
                       std::optional<std::vector<Dim>> dims) {
    onnx::ValueInfoProto* vi = graph()->add_output();
    vi->set_name(name);
    SetType(vi, elem, dims);
    return *this;
  }
  ModelBuilder& FloatInitializer(const std::string& name,
                                 std::vector<int64_t> dims,
                                 std::vector<float> values) {
    onnx::TensorProto* t = graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  onnx::NodeProto* Node(const std::string& op, std::vector<std::string> inputs,
                        std::vector<std::string> outputs,
                        const std::string& name = "") {
    onnx::NodeProto* n = graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& in : inputs) n->add_input(in);
    for (auto& out : outputs) n->add_output(out);
    return n;
  }

  std::string Bytes() const { return model_.SerializeAsString(); }

 private:
  onnx::ModelProto model_;
};

void AddIntsAttr(onnx::NodeProto* n, const std::string& name,
                 std::vector<int64_t> v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

std::vector<std::string> OpTypes(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  return ops;
}

std::vector<std::string> NodeNames(const Graph& g) {
  std::vector<std::string> names;
  for (const Node& n : g.nodes) names.push_back(n.name);
  return names;
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.num_elements());
}

// Where a test's import runs inference: with `elsewhere`, as glintd does,
// through a runner (here the helper process's side, called in this
// process on the request a helper would get); else in this process.
InferenceRunner InferenceElsewhere(bool elsewhere) {
  if (!elsewhere) return nullptr;
  return [](const std::string& request) { return RunOnnxInference(request); };
}

// A model x[N,3] + b -> y, with b = {1, 2, 3} an initializer.
ModelBuilder AddBiasModel() {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"N", 3})
      .FloatInitializer("b", {3}, {1.0f, 2.0f, 3.0f})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{"N", 3});
  b.Node("Add", {"x", "b"}, {"y"}, "add");
  return b;
}

// --- Real models from ONNX's test data ------------------------------------

TEST(OnnxImporterTest, ImportsConvWithStridesPadding) {
  absl::StatusOr<Graph> g =
      ImportOnnxModel(ReadTestModel("test_conv_with_strides_padding"));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->name, "test_conv_with_strides_padding");
  EXPECT_EQ(g->opset_version, 11);
  ASSERT_EQ(g->inputs.size(), 2u);
  EXPECT_EQ(g->inputs[0].name, "x");
  EXPECT_EQ(g->inputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(g->inputs[0].shape, Shape({1, 1, 7, 5}));
  EXPECT_EQ(g->inputs[1].name, "W");
  EXPECT_EQ(g->inputs[1].shape, Shape({1, 1, 3, 3}));
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->outputs[0].name, "y");
  EXPECT_EQ(g->outputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(g->outputs[0].shape, Shape({1, 1, 4, 3}));
  ASSERT_THAT(OpTypes(*g), ElementsAre("Conv"));
  const Node& conv = g->nodes[0];
  EXPECT_FALSE(conv.name.empty());
  EXPECT_THAT(conv.inputs, ElementsAre("x", "W"));
  EXPECT_THAT(conv.GetInts("kernel_shape"), ElementsAre(3, 3));
  EXPECT_THAT(conv.GetInts("pads"), ElementsAre(1, 1, 1, 1));
  EXPECT_THAT(conv.GetInts("strides"), ElementsAre(2, 2));
  EXPECT_TRUE(g->initializers.empty());
  ASSERT_NE(g->FindValue("y"), nullptr);
  EXPECT_EQ(g->FindValue("y")->shape, Shape({1, 1, 4, 3}));
}

// What inference cannot give a rank stays of unknown rank, never a
// scalar's shape: the If's branches differ in rank, and so does all that
// its value feeds; Shape of it is a vector of unknown length.
TEST(OnnxImporterTest, UnknownRankIsKeptAsUnknown) {
  absl::StatusOr<Graph> g = ImportOnnxModel(glint::testing::MakeUnknownRankModel());
  ASSERT_TRUE(g.ok()) << g.status();
  for (const char* name : {"y0", "y1", "y1t", "gram", "y2"}) {
    ASSERT_NE(g->FindValue(name), nullptr) << name;
    EXPECT_FALSE(g->FindValue(name)->shape.has_rank())
        << name << ": " << g->FindValue(name)->ToString();
  }
  EXPECT_EQ(g->FindValue("y2_shape")->shape, Shape({Shape::kUnknownDim}));
  EXPECT_EQ(g->FindValue("x")->shape, Shape({6}));
  EXPECT_EQ(g->FindValue("c")->shape, Shape());
}

TEST(OnnxImporterTest, ImportsReshapeReducedDims) {
  absl::StatusOr<Graph> g =
      ImportOnnxModel(ReadTestModel("test_reshape_reduced_dims"));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->opset_version, 14);
  ASSERT_EQ(g->inputs.size(), 2u);
  EXPECT_EQ(g->inputs[1].name, "shape");
  EXPECT_EQ(g->inputs[1].dtype, DType::kInt64);
  EXPECT_EQ(g->inputs[1].shape, Shape({2}));
  ASSERT_THAT(OpTypes(*g), ElementsAre("Reshape"));
  // The model declares its output's shape, which inference keeps.
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->outputs[0].shape, Shape({2, 12}));
}

TEST(OnnxImporterTest, ImportsGemmDefaultNoBias) {
  absl::StatusOr<Graph> g =
      ImportOnnxModel(ReadTestModel("test_gemm_default_no_bias"));
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_THAT(OpTypes(*g), ElementsAre("Gemm"));
  EXPECT_EQ(g->inputs[0].shape, Shape({2, 10}));
  EXPECT_EQ(g->inputs[1].shape, Shape({10, 3}));
  EXPECT_EQ(g->outputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(g->outputs[0].shape, Shape({2, 3}));
}

TEST(OnnxImporterTest, ImportsSoftmaxAxis0) {
  absl::StatusOr<Graph> g =
      ImportOnnxModel(ReadTestModel("test_softmax_axis_0"));
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_THAT(OpTypes(*g), ElementsAre("Softmax"));
  EXPECT_EQ(g->nodes[0].GetInt("axis", -1), 0);
  EXPECT_EQ(g->outputs[0].shape, Shape({3, 4, 5}));
}

TEST(OnnxImporterTest, ImportsConstantWithExactValues) {
  absl::StatusOr<Graph> g = ImportOnnxModel(ReadTestModel("test_constant"));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->inputs.empty());
  ASSERT_THAT(OpTypes(*g), ElementsAre("Constant"));
  const Tensor* value = g->nodes[0].GetTensor("value");
  ASSERT_NE(value, nullptr);
  EXPECT_EQ(value->dtype(), DType::kFloat32);
  EXPECT_EQ(value->shape(), Shape({5, 5}));
  EXPECT_EQ(g->outputs[0].shape, Shape({5, 5}));

  // The expected output of a Constant is its value: compare bit for bit.
  absl::StatusOr<Tensor> expected =
      TensorFromOnnxProto(ReadTensorPb(absl::StrCat(
          kNodeTestData, "test_constant/test_data_set_0/output_0.pb")));
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(Values<float>(*value), Values<float>(*expected));
}

TEST(OnnxImporterTest, ReadsTensorPbFromTestData) {
  absl::StatusOr<Tensor> t = TensorFromOnnxProto(
      ReadTensorPb(absl::StrCat(kNodeTestData,
                                "test_reshape_reduced_dims/test_data_set_0/"
                                "input_1.pb")));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kInt64);
  EXPECT_EQ(t->shape(), Shape({2}));
  EXPECT_THAT(Values<int64_t>(*t), ElementsAre(2, 12));
}

TEST(OnnxImporterTest, ImportsIfWithItsBranches) {
  absl::StatusOr<Graph> g = ImportOnnxModel(ReadTestModel("test_if"));
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->nodes.size(), 1u);
  const Node& node = g->nodes[0];
  EXPECT_EQ(node.num_implicit_inputs, 0);
  const Graph* then_branch = node.GetGraph("then_branch");
  ASSERT_NE(then_branch, nullptr);
  ASSERT_NE(node.GetGraph("else_branch"), nullptr);
  EXPECT_EQ(node.Subgraphs().size(), 2u);
  ASSERT_EQ(then_branch->outputs.size(), 1u);
  EXPECT_EQ(then_branch->outputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(then_branch->outputs[0].shape, Shape({5}));
  EXPECT_TRUE(g->Validate().ok());
}

// c: bool, x: float[2], w an initializer; s = x + w;
// y = If(c) then s * w else x: the branches read s, w and x from the outer
// graph without listing them.
ModelBuilder IfCapturingModel() {
  ModelBuilder then_b;
  then_b.Node("Mul", {"s", "w"}, {"t_out"}, "mul");
  then_b.Output("t_out", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  ModelBuilder else_b;
  else_b.Node("Identity", {"x"}, {"e_out"}, "id");
  else_b.Output("e_out", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  ModelBuilder b;
  b.Input("c", onnx::TensorProto::BOOL, std::vector<Dim>{})
      .Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .FloatInitializer("w", {2}, {1.0f, 2.0f})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  b.Node("Add", {"x", "w"}, {"s"}, "add");
  onnx::NodeProto* n = b.Node("If", {"c"}, {"y"}, "if");
  for (auto [name, branch] : {std::pair<const char*, ModelBuilder*>{
                                  "then_branch", &then_b},
                              {"else_branch", &else_b}}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = branch->model().graph();
    a->mutable_g()->set_name(name);
  }
  return b;
}

TEST(OnnxImporterTest, OuterValuesASubgraphReadsBecomeNodeInputs) {
  absl::StatusOr<Graph> g = ImportOnnxModel(IfCapturingModel().Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->nodes.size(), 2u);
  const Node& node = g->nodes[1];
  // The then branch's captures first, then the else branch's.
  EXPECT_THAT(node.inputs, ElementsAre("c", "s", "w", "x"));
  EXPECT_EQ(node.num_implicit_inputs, 3);
  EXPECT_EQ(node.num_explicit_inputs(), 1);
  for (const auto& [attr, sub] : node.Subgraphs()) {
    ASSERT_EQ(sub->inputs.size(), 3u) << attr;
    EXPECT_EQ(sub->inputs[0].name, "s") << attr;
    EXPECT_EQ(sub->inputs[2].name, "x") << attr;
    EXPECT_EQ(sub->inputs[1].shape, Shape({2})) << attr;
    EXPECT_TRUE(sub->Validate().ok()) << attr;
  }
  EXPECT_TRUE(g->Validate().ok());
  // Graph::Validate checks the pairing of implicit inputs and subgraphs.
  Graph broken = *g;
  broken.nodes[1].num_implicit_inputs = 4;
  EXPECT_EQ(broken.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(OnnxImporterTest, RanksAreRecoveredInsideSubgraphs) {
  // The then branch reshapes x by a shape computed at run time whose
  // length (2) is static: ONNX 1.12 leaves r rankless, RecoverRanks (run
  // in subgraphs too) gives it rank 2.
  ModelBuilder then_b;
  then_b.Node("Shape", {"x"}, {"s"}, "shape");
  then_b.Node("Concat", {"s", "s"}, {"s2"}, "concat")
      ->add_attribute()
      ->CopyFrom([] {
        onnx::AttributeProto a;
        a.set_name("axis");
        a.set_type(onnx::AttributeProto::INT);
        a.set_i(0);
        return a;
      }());
  then_b.Node("Abs", {"s2"}, {"s3"}, "abs");
  then_b.Node("Reshape", {"x", "s3"}, {"r"}, "reshape");
  then_b.Output("r", onnx::TensorProto::FLOAT, std::nullopt);
  ModelBuilder else_b;
  else_b.Node("Reshape", {"x", "s_outer"}, {"e"}, "reshape2");
  else_b.Output("e", onnx::TensorProto::FLOAT, std::nullopt);
  ModelBuilder b;
  b.Input("c", onnx::TensorProto::BOOL, std::vector<Dim>{})
      .Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{4})
      .Input("s_outer", onnx::TensorProto::INT64, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  onnx::NodeProto* n = b.Node("If", {"c"}, {"y"}, "if");
  for (auto [name, branch] : {std::pair<const char*, ModelBuilder*>{
                                  "then_branch", &then_b},
                              {"else_branch", &else_b}}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = branch->model().graph();
  }
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  const Graph* then_branch = g->nodes[0].GetGraph("then_branch");
  ASSERT_NE(then_branch, nullptr);
  const ValueInfo* r = then_branch->FindValue("r");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->shape.rank(), 2) << r->shape.ToString();
}

TEST(OnnxImporterTest, SubgraphNestingIsBounded) {
  // If inside If ... deeper than kMaxSubgraphDepth.
  onnx::GraphProto inner;
  inner.set_name("leaf");
  onnx::NodeProto* id = inner.add_node();
  id->set_op_type("Identity");
  id->add_input("x");
  id->add_output("leaf_out");
  inner.add_output()->set_name("leaf_out");
  for (int level = 0; level <= kMaxSubgraphDepth; ++level) {
    onnx::GraphProto outer;
    outer.set_name(absl::StrCat("level", level));
    onnx::NodeProto* n = outer.add_node();
    n->set_op_type("If");
    n->add_input("c");
    const std::string out = absl::StrCat("out", level);
    n->add_output(out);
    for (const char* name : {"then_branch", "else_branch"}) {
      onnx::AttributeProto* a = n->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::GRAPH);
      *a->mutable_g() = inner;
    }
    outer.add_output()->set_name(out);
    inner = std::move(outer);
  }
  ModelBuilder b;
  b.Input("c", onnx::TensorProto::BOOL, std::vector<Dim>{})
      .Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  onnx::NodeProto* n = b.Node("If", {"c"}, {"y"}, "top");
  for (const char* name : {"then_branch", "else_branch"}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = inner;
  }
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("nests deeper than"));
}

TEST(OnnxImporterTest, GraphListsAndUnguardedOpsInSubgraphsAreUnimplemented) {
  ModelBuilder graphs = IfCapturingModel();
  onnx::AttributeProto* a = graphs.graph()->mutable_node(1)->add_attribute();
  a->set_name("branches");
  a->set_type(onnx::AttributeProto::GRAPHS);
  absl::StatusOr<Graph> g = ImportOnnxModel(graphs.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(g.status()), HasSubstr("list of graphs"));

  ModelBuilder conv_t = IfCapturingModel();
  conv_t.graph()
      ->mutable_node(1)
      ->mutable_attribute(0)
      ->mutable_g()
      ->mutable_node(0)
      ->set_op_type("ConvTranspose");
  g = ImportOnnxModel(conv_t.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(g.status()), HasSubstr("inside a subgraph"));
}

TEST(OnnxImporterTest, SubgraphReadingAnUndefinedValueIsInvalid) {
  ModelBuilder b = IfCapturingModel();
  b.graph()->mutable_node(1)->mutable_attribute(1)->mutable_g()->mutable_node(
      0)->set_input(0, "nowhere");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("nowhere"));
}

TEST(OnnxImporterTest, OpRejectedByIsSupportedIsUnimplemented) {
  ImportOptions options;
  options.is_supported = [](absl::string_view op) { return op != "Einsum"; };
  absl::StatusOr<Graph> g =
      ImportOnnxModel(ReadTestModel("test_einsum_inner_prod"), options);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(g.status()), HasSubstr("op 'Einsum' (node '"));
  EXPECT_THAT(Message(g.status()), HasSubstr("is not supported by any device"));
}

// --- Built models ------------------------------------------------------------

// A symbolic dim stays unknown (shapes per request) and keeps its name;
// it is never bound to 1 behind the caller's back.
TEST(OnnxImporterTest, SymbolicDimStaysDynamicAndInitializerIsConverted) {
  absl::StatusOr<Graph> g = ImportOnnxModel(AddBiasModel().Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->name, "test_graph");
  EXPECT_EQ(g->opset_version, 13);
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0].ToString(), "x: float32[?, 3]");
  EXPECT_THAT(g->inputs[0].dim_names, ElementsAre("N", ""));
  EXPECT_EQ(g->inputs[0].ShapeString(), "[N, 3]");
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->outputs[0].ToString(), "y: float32[?, 3]");
  // The name reaches the output through inference.
  EXPECT_EQ(g->outputs[0].ShapeString(), "[N, 3]");
  const Tensor* b = g->FindInitializer("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype(), DType::kFloat32);
  EXPECT_EQ(b->shape(), Shape({3}));
  EXPECT_THAT(Values<float>(*b), ElementsAre(1.0f, 2.0f, 3.0f));
  ASSERT_NE(g->FindValue("b"), nullptr);
  EXPECT_EQ(g->FindValue("b")->shape, Shape({3}));
  EXPECT_EQ(g->FindValue("x")->shape, Shape({Shape::kUnknownDim, 3}));
}

TEST(OnnxImporterTest, InputShapesOverrideSymbolicDims) {
  ImportOptions options;
  options.input_shapes["x"] = Shape({4, 3});
  absl::StatusOr<Graph> g = ImportOnnxModel(AddBiasModel().Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].shape, Shape({4, 3}));
  EXPECT_EQ(g->outputs[0].shape, Shape({4, 3}));
}

// A name is one size: input_shapes fixing "S" in one input fixes the "S"
// of the others, which do not stay dynamic; two sizes for one name are
// refused.
TEST(OnnxImporterTest, InputShapesFixANamedDimEverywhere) {
  ModelBuilder b;
  b.Input("a", onnx::TensorProto::FLOAT, std::vector<Dim>{"B", "S"})
      .Input("m", onnx::TensorProto::FLOAT, std::vector<Dim>{"B", "S"})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{"B", "S"});
  b.Node("Add", {"a", "m"}, {"y"}, "add");
  ImportOptions options;
  options.input_shapes["a"] = Shape({2, 16});
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[1].shape, Shape({2, 16}));
  EXPECT_EQ(g->outputs[0].shape, Shape({2, 16}));
  options.input_shapes["m"] = Shape({2, 8});
  g = ImportOnnxModel(b.Bytes(), options);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Message(g.status()),
            "input_shapes give dim 'S' two sizes: 16 (input 'a') and 8 "
            "(input 'm')");
}

TEST(OnnxImporterTest, BatchSizeBindsTheFirstDimOfEveryInput) {
  ImportOptions options;
  options.batch_size = 8;
  absl::StatusOr<Graph> g = ImportOnnxModel(AddBiasModel().Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].shape, Shape({8, 3}));
  EXPECT_EQ(g->outputs[0].shape, Shape({8, 3}));
  // Over input_shapes too: the batch is the batcher's to choose.
  options.input_shapes["x"] = Shape({2, 3});
  g = ImportOnnxModel(AddBiasModel().Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].shape, Shape({8, 3}));

  // A first dim fixed by the model is not a batch dimension...
  ModelBuilder fixed;
  fixed.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{1, 3})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{1, 3});
  fixed.Node("Relu", {"x"}, {"y"}, "relu");
  options.input_shapes.clear();
  g = ImportOnnxModel(fixed.Bytes(), options);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("input 'x' fixes its first"));
  // ...unless it is the batch size itself.
  options.batch_size = 1;
  EXPECT_TRUE(ImportOnnxModel(fixed.Bytes(), options).ok());

  // A scalar has none.
  ModelBuilder scalar;
  scalar.Input("s", onnx::TensorProto::FLOAT, std::vector<Dim>{})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{});
  scalar.Node("Relu", {"s"}, {"y"}, "relu");
  g = ImportOnnxModel(scalar.Bytes(), options);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("input 's' is a scalar"));

  // Another dynamic dim stays dynamic beside the batch; input_shapes can
  // still fix it.
  ModelBuilder seq;
  seq.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"N", "S"})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{"N", "S"});
  seq.Node("Relu", {"x"}, {"y"}, "relu");
  g = ImportOnnxModel(seq.Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].shape, Shape({1, Shape::kUnknownDim}));
  EXPECT_EQ(g->outputs[0].shape, Shape({1, Shape::kUnknownDim}));
  options.input_shapes["x"] = Shape({1, 5});
  g = ImportOnnxModel(seq.Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].shape, Shape({1, 5}));
}

TEST(OnnxImporterTest, InputShapeWithWrongRankIsInvalid) {
  ImportOptions options;
  options.input_shapes["x"] = Shape({4});
  absl::StatusOr<Graph> g = ImportOnnxModel(AddBiasModel().Bytes(), options);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("'x'"));
}

TEST(OnnxImporterTest, InputShapeContradictingKnownDimIsInvalid) {
  ImportOptions options;
  options.input_shapes["x"] = Shape({4, 5});
  absl::StatusOr<Graph> g = ImportOnnxModel(AddBiasModel().Bytes(), options);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("'x'"));
}

TEST(OnnxImporterTest, InputShapeForUnknownNameIsInvalid) {
  ImportOptions options;
  options.input_shapes["nope"] = Shape({1, 3});
  absl::StatusOr<Graph> g = ImportOnnxModel(AddBiasModel().Bytes(), options);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("'nope'"));
}

TEST(OnnxImporterTest, InputShapeForInitializerIsInvalid) {
  ImportOptions options;
  options.input_shapes["b"] = Shape({3});
  absl::StatusOr<Graph> g = ImportOnnxModel(AddBiasModel().Bytes(), options);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("'b'"));
}

TEST(OnnxImporterTest, InputWithoutShapeNeedsInputShapes) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  b.Node("Relu", {"x"}, {"y"});
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("'x'"));

  ImportOptions options;
  options.input_shapes["x"] = Shape({2, 5});
  g = ImportOnnxModel(b.Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->outputs[0].shape, Shape({2, 5}));
}

TEST(OnnxImporterTest, InitializerListedAsInputIsNotARuntimeInput) {
  ModelBuilder b = AddBiasModel();
  // IR < 4 style: the initializer is also declared as a graph input, here
  // with a vague shape that the tensor's must replace.
  b.Input("b", onnx::TensorProto::FLOAT, std::vector<Dim>{"K"});
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0].name, "x");
  ASSERT_TRUE(g->IsInitializer("b"));
  EXPECT_EQ(g->FindValue("b")->shape, Shape({3}));
  EXPECT_EQ(g->outputs[0].shape, Shape({Shape::kUnknownDim, 3}));
}

// Initializers over 1 MiB reach the inference helper as typed inputs, not
// with their data: they must still come out as constants with their
// values, never as runtime inputs, with inference in this process or
// through a helper, and also when the model already lists them as inputs
// (IR < 4).
TEST(OnnxImporterTest, LargeInitializersStayConstantsWithTheirValues) {
  constexpr int64_t kRows = 600;  // 600 x 600 floats: 1.4 MB.
  std::vector<float> w(kRows * kRows);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 997);
  for (bool listed_as_input : {false, true}) {
    for (bool elsewhere : {false, true}) {
      ModelBuilder b;
      b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"N", kRows})
          .FloatInitializer("w", {kRows, kRows}, w)
          .FloatInitializer("small", {kRows}, std::vector<float>(kRows, 2))
          .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
      if (listed_as_input) {
        b.Input("w", onnx::TensorProto::FLOAT, std::vector<Dim>{kRows, kRows});
      }
      b.Node("MatMul", {"x", "w"}, {"t"}, "matmul");
      b.Node("Add", {"t", "small"}, {"y"}, "add");
      ImportOptions options;
      options.run_inference = InferenceElsewhere(elsewhere);
      absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), options);
      ASSERT_TRUE(g.ok()) << g.status();
      ASSERT_EQ(g->inputs.size(), 1u);
      EXPECT_EQ(g->inputs[0].name, "x");
      const Tensor* t = g->FindInitializer("w");
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->shape(), Shape({kRows, kRows}));
      EXPECT_TRUE(Values<float>(*t) == w);  // 360,000 values: no dump.
      ASSERT_NE(g->FindInitializer("small"), nullptr);
      EXPECT_EQ(g->outputs[0].ToString(), "y: float32[?, 600]")
          << listed_as_input << elsewhere;
    }
  }
}

TEST(OnnxImporterTest, UnsupportedOpNamesOpAndNode) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 2});
  b.Node("Relu", {"x"}, {"t"}, "relu_0");
  onnx::NodeProto* e = b.Node("Einsum", {"t"}, {"y"}, "einsum_0");
  onnx::AttributeProto* eq = e->add_attribute();
  eq->set_name("equation");
  eq->set_type(onnx::AttributeProto::STRING);
  eq->set_s("ij->ij");
  ImportOptions options;
  options.is_supported = [](absl::string_view op) { return op != "Einsum"; };
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), options);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(Message(g.status()),
            "op 'Einsum' (node 'einsum_0') is not supported by any device");

  // Without the filter the same model imports, string attribute included.
  g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->nodes[1].GetString("equation", ""), "ij->ij");
}

TEST(OnnxImporterTest, OtherDomainIsUnimplemented) {
  ModelBuilder b;
  onnx::OperatorSetIdProto* ms = b.model().add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 2});
  b.Node("FusedGelu", {"x"}, {"y"}, "gelu")->set_domain("com.microsoft");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(g.status()), HasSubstr("'FusedGelu'"));
  EXPECT_THAT(Message(g.status()), HasSubstr("'com.microsoft'"));
  EXPECT_THAT(Message(g.status()), HasSubstr("'gelu'"));
}

TEST(OnnxImporterTest, ModelOfOnlyAnotherDomainIsUnimplemented) {
  // ONNX's training ops import no default-domain opset at all.
  absl::StatusOr<Graph> g = ImportOnnxModel(ReadTestModel("test_adagrad"));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(g.status()), HasSubstr("'Adagrad'"));
  EXPECT_THAT(Message(g.status()), HasSubstr("'ai.onnx.preview.training'"));
}

// ONNX 1.12's own inference crashes on these; the importer must refuse them.
TEST(OnnxImporterTest, LayerNormAxisOutOfRangeIsInvalidNotACrash) {
  for (int64_t axis :
       {int64_t{-5}, int64_t{-3000000000}, int64_t{9223372036854775804}}) {
    ModelBuilder b(/*opset=*/17);
    b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 3, 4, 5})
        .Input("w", onnx::TensorProto::FLOAT, std::vector<Dim>{5})
        .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
    onnx::NodeProto* n = b.Node("LayerNormalization", {"x", "w"},
                                {"y", "mean", "inv_std_dev"}, "ln");
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
    absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << axis;
    EXPECT_THAT(Message(g.status()), HasSubstr("'ln'"));
  }
  // The default axis (-1) on a scalar.
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{})
      .Input("w", onnx::TensorProto::FLOAT, std::vector<Dim>{})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  b.Node("LayerNormalization", {"x", "w"}, {"y", "mean"}, "ln");
  EXPECT_EQ(ImportOnnxModel(b.Bytes()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OnnxImporterTest, LayerNormWithValidNegativeAxisImports) {
  absl::StatusOr<Graph> g = ImportOnnxModel(
      ReadTestModel("test_layer_normalization_4d_axis_negative_4"));
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_THAT(OpTypes(*g), ElementsAre("LayerNormalization"));
  EXPECT_EQ(g->nodes[0].GetInt("axis", 0), -4);
  EXPECT_EQ(g->outputs[0].shape, Shape({2, 3, 4, 5}));
}

TEST(OnnxImporterTest, OpUnknownToOnnxIsUnimplemented) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  b.Node("NoSuchOp", {"x"}, {"y"}, "mystery");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(g.status()), HasSubstr("'NoSuchOp'"));
  EXPECT_THAT(Message(g.status()), HasSubstr("'mystery'"));
}

TEST(OnnxImporterTest, DefaultDomainSpelledAiOnnxIsAccepted) {
  ModelBuilder b = AddBiasModel();
  b.model().mutable_opset_import(0)->set_domain("ai.onnx");
  b.graph()->mutable_node(0)->set_domain("ai.onnx");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->nodes[0].domain, "");
}

TEST(OnnxImporterTest, OpsetOutsideTestedRangeStillImports) {
  for (int64_t opset : {6, 17, 18}) {
    ModelBuilder b(opset);
    b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
        .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
    b.Node("Relu", {"x"}, {"y"});
    absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
    ASSERT_TRUE(g.ok()) << "opset " << opset << ": " << g.status();
    EXPECT_EQ(g->opset_version, opset);
  }
}

TEST(OnnxImporterTest, MissingDefaultOpsetIsInvalid) {
  ModelBuilder b = AddBiasModel();
  b.model().clear_opset_import();
  EXPECT_EQ(ImportOnnxModel(b.Bytes()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OnnxImporterTest, GarbageEmptyAndGraphlessBytesAreInvalid) {
  const std::string garbage = "\xff\xff\xff\xff this is not a protobuf \x07";
  absl::StatusOr<Graph> g = ImportOnnxModel(garbage);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()),
              HasSubstr("model bytes are not a valid ONNX ModelProto"));
  EXPECT_EQ(ImportOnnxModel("").status().code(),
            absl::StatusCode::kInvalidArgument);

  onnx::ModelProto no_graph;
  no_graph.set_ir_version(8);
  no_graph.add_opset_import()->set_version(13);
  EXPECT_EQ(ImportOnnxModel(no_graph.SerializeAsString()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OnnxImporterTest, EveryTruncationOfARealModelIsInvalid) {
  const std::string bytes = ReadTestModel("test_conv_with_strides_padding");
  ASSERT_TRUE(ImportOnnxModel(bytes).ok());
  for (size_t len = 0; len < bytes.size(); ++len) {
    absl::StatusOr<Graph> g = ImportOnnxModel(bytes.substr(0, len));
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument)
        << "prefix of " << len << " bytes: " << g.status();
  }
}

// Random byte changes to real models: whatever they turn into, the
// importer answers with a status (ONNX's inference is not hardened, so this
// guards the checks that run before it).
TEST(OnnxImporterTest, MutatedModelsGetAStatusNeverACrash) {
  std::mt19937 rng(20240611);
  for (const char* test :
       {"test_conv_with_strides_padding", "test_gemm_default_no_bias",
        "test_layer_normalization_2d_axis_negative_2", "test_constant",
        "test_reshape_reduced_dims", "test_softmax_axis_0"}) {
    const std::string bytes = ReadTestModel(test);
    for (int i = 0; i < 300; ++i) {
      std::string mutant = bytes;
      const int changes = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < changes; ++k) {
        mutant[rng() % mutant.size()] = static_cast<char>(rng());
      }
      absl::StatusOr<Graph> g = ImportOnnxModel(mutant);
      EXPECT_NE(g.status().code(), absl::StatusCode::kInternal)
          << test << " mutant " << i << ": " << g.status();
      if (g.ok()) {
        EXPECT_TRUE(g->Validate().ok()) << test << " mutant " << i;
      }
    }
  }
}

TEST(OnnxImporterTest, CycleIsInvalid) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  b.Node("Add", {"x", "c"}, {"a"}, "first");
  b.Node("Relu", {"a"}, {"c"}, "second");
  b.Node("Relu", {"a"}, {"y"}, "third");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("cycle"));
}

TEST(OnnxImporterTest, UnsortedNodesAreSorted) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  b.Node("Relu", {"t2"}, {"y"}, "last");
  b.Node("Neg", {"t1"}, {"t2"}, "middle");
  b.Node("Abs", {"x"}, {"t1"}, "first");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(NodeNames(*g), ElementsAre("first", "middle", "last"));
  EXPECT_EQ(g->FindValue("t2")->shape, Shape({2}));
}

TEST(OnnxImporterTest, SortingKeepsTheOrderOfIndependentNodes) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  b.Node("Add", {"p", "q"}, {"y"}, "sum");
  b.Node("Abs", {"x"}, {"p"}, "abs");
  b.Node("Neg", {"x"}, {"q"}, "neg");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(NodeNames(*g), ElementsAre("abs", "neg", "sum"));
}

TEST(OnnxImporterTest, UnnamedAndDuplicateNodesGetUniqueNames) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  b.Node("Abs", {"x"}, {"a"});
  b.Node("Neg", {"a"}, {"c"}, "dup");
  b.Node("Relu", {"c"}, {"d"}, "dup");
  b.Node("Abs", {"d"}, {"y"}, "Abs_0");  // Collides with a generated name.
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(NodeNames(*g), ElementsAre("Abs_0_1", "dup", "Relu_2", "Abs_0"));
}

TEST(OnnxImporterTest, UndefinedInputIsInvalid) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  b.Node("Add", {"x", "ghost"}, {"y"}, "add");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("'ghost'"));
}

TEST(OnnxImporterTest, WrongArityIsInvalid) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  b.Node("Add", {"x"}, {"y"}, "lonely_add");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("lonely_add"));
}

TEST(OnnxImporterTest, DeclaredTypeContradictingInferenceIsInvalid) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::INT64, std::vector<Dim>{2});
  b.Node("Relu", {"x"}, {"y"});
  EXPECT_EQ(ImportOnnxModel(b.Bytes()).status().code(),
            absl::StatusCode::kInvalidArgument);

  ModelBuilder c;
  c.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{3});
  c.Node("Relu", {"x"}, {"y"});
  EXPECT_EQ(ImportOnnxModel(c.Bytes()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OnnxImporterTest, ReshapeWithRuntimeShapeHasUnknownDims) {
  ModelBuilder b;
  b.Input("data", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 3, 4})
      .Input("shape", onnx::TensorProto::INT64, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  b.Node("Reshape", {"data", "shape"}, {"r"}, "reshape");
  b.Node("Relu", {"r"}, {"y"}, "relu");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  const ValueInfo* r = g->FindValue("r");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->dtype, DType::kFloat32);
  EXPECT_EQ(r->shape, Shape({Shape::kUnknownDim, Shape::kUnknownDim}));
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->outputs[0].dtype, DType::kFloat32);
  EXPECT_EQ(g->outputs[0].shape,
            Shape({Shape::kUnknownDim, Shape::kUnknownDim}));
}

TEST(OnnxImporterTest, ShapeComputedInTheGraphIsPropagated) {
  // y = Reshape(v, Shape(x)): data propagation resolves the target shape.
  // ONNX 1.12 propagates through Reshape from opset 14 on.
  ModelBuilder b(/*opset=*/14);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"N", 3})
      .Input("v", onnx::TensorProto::FLOAT, std::vector<Dim>{6})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Reshape", {"v", "s"}, {"y"});
  ImportOptions options;
  options.input_shapes["x"] = Shape({2, 3});
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->FindValue("s")->dtype, DType::kInt64);
  EXPECT_EQ(g->outputs[0].shape, Shape({2, 3}));
}

TEST(OnnxImporterTest, ConstantNodeValueAndSecondaryOutputs) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 3})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 3});
  onnx::NodeProto* c = b.Node("Constant", {}, {"k"}, "k");
  onnx::AttributeProto* v = c->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  v->mutable_t()->add_dims(2);
  v->mutable_t()->add_int64_data(3);
  v->mutable_t()->add_int64_data(2);
  b.Node("Reshape", {"x", "k"}, {"r"}, "reshape");
  onnx::NodeProto* t = b.Node("Transpose", {"r"}, {"y"}, "transpose");
  AddIntsAttr(t, "perm", {1, 0});
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  const Tensor* k = g->nodes[0].GetTensor("value");
  ASSERT_NE(k, nullptr);
  EXPECT_THAT(Values<int64_t>(*k), ElementsAre(3, 2));
  EXPECT_EQ(g->FindValue("k")->shape, Shape({2}));
  EXPECT_EQ(g->FindValue("r")->shape, Shape({3, 2}));
  EXPECT_THAT(g->nodes[2].GetInts("perm"), ElementsAre(1, 0));
}

TEST(OnnxImporterTest, FloatAttributeIsConverted) {
  ModelBuilder b;
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2})
      .Output("y", onnx::TensorProto::FLOAT, std::vector<Dim>{2});
  onnx::NodeProto* n = b.Node("LeakyRelu", {"x"}, {"y"}, "leaky");
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.25f);
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->nodes[0].GetFloat("alpha", 0.0f), 0.25f);
}

TEST(OnnxImporterTest, ExternalInitializerIsUnimplemented) {
  ModelBuilder b = AddBiasModel();
  onnx::TensorProto* t = b.graph()->mutable_initializer(0);
  t->clear_float_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  onnx::StringStringEntryProto* loc = t->add_external_data();
  loc->set_key("location");
  loc->set_value("weights.bin");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(g.status()), HasSubstr("'b'"));
}

TEST(OnnxImporterTest, InitializerWithWrongValueCountIsInvalid) {
  ModelBuilder b = AddBiasModel();
  b.graph()->mutable_initializer(0)->add_float_data(4.0f);
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("'b'"));
}

TEST(OnnxImporterTest, SequenceInputIsUnimplemented) {
  ModelBuilder b;
  onnx::ValueInfoProto* in = b.graph()->add_input();
  in->set_name("seq");
  in->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(onnx::TensorProto::FLOAT);
  b.Output("n", onnx::TensorProto::INT64, std::vector<Dim>{});
  b.Node("SequenceLength", {"seq"}, {"n"});
  EXPECT_EQ(ImportOnnxModel(b.Bytes()).status().code(),
            absl::StatusCode::kUnimplemented);
}

// --- Glint's shape folding (onnx/shape_folding.h) ------------------------

void AddIntAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

// A Constant node of int64 values (a scalar when `dims` is empty).
void Int64Constant(ModelBuilder* b, const std::string& out,
                   std::vector<int64_t> dims, std::vector<int64_t> values) {
  onnx::NodeProto* c = b->Node("Constant", {}, {out}, out);
  onnx::AttributeProto* v = c->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims) v->mutable_t()->add_dims(d);
  for (int64_t x : values) v->mutable_t()->add_int64_data(x);
}

// Attention's head split as PyTorch 1.13 exports `x.view(x.size()[:-1] +
// (heads, x.size(-1) // heads))` with dynamic axes: Shape → Gather →
// Div → Unsqueeze → Concat → Reshape, then Transpose and MatMul. ONNX
// 1.12's data propagation stops at the Div, leaving everything after the
// Reshape untyped (the MatMul then refused its "[]" operands).
ModelBuilder HeadSplitModel() {
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"batch", "seq", 64})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  b.Node("Shape", {"x"}, {"s"}, "shape");
  Int64Constant(&b, "i0", {}, {0});
  Int64Constant(&b, "i1", {}, {1});
  Int64Constant(&b, "i2", {}, {2});
  Int64Constant(&b, "heads", {}, {4});
  Int64Constant(&b, "axes0", {1}, {0});
  b.Node("Gather", {"s", "i0"}, {"n"}, "gather_n");
  b.Node("Gather", {"s", "i1"}, {"t"}, "gather_t");
  b.Node("Gather", {"s", "i2"}, {"c"}, "gather_c");
  b.Node("Div", {"c", "heads"}, {"d"}, "div");
  b.Node("Unsqueeze", {"n", "axes0"}, {"un"}, "unsqueeze_n");
  b.Node("Unsqueeze", {"t", "axes0"}, {"ut"}, "unsqueeze_t");
  b.Node("Unsqueeze", {"heads", "axes0"}, {"uh"}, "unsqueeze_h");
  b.Node("Unsqueeze", {"d", "axes0"}, {"ud"}, "unsqueeze_d");
  AddIntAttr(b.Node("Concat", {"un", "ut", "uh", "ud"}, {"new_shape"},
                    "concat"),
             "axis", 0);
  b.Node("Reshape", {"x", "new_shape"}, {"r"}, "reshape");
  AddIntsAttr(b.Node("Transpose", {"r"}, {"q"}, "transpose"), "perm",
              {0, 2, 1, 3});
  AddIntsAttr(b.Node("Transpose", {"r"}, {"kt"}, "transpose_k"), "perm",
              {0, 2, 3, 1});
  b.Node("MatMul", {"q", "kt"}, {"y"}, "matmul");
  return b;
}

TEST(ShapeFoldingTest, HeadSplitOfAnExportedAttentionIsTypedAndFolded) {
  ImportOptions options;
  options.input_shapes["x"] = Shape({2, 8, 64});
  for (bool elsewhere : {false, true}) {
    SCOPED_TRACE(elsewhere ? "inference in a helper" : "in process");
    // As glintd runs it: inference (and its folding) on a copy elsewhere,
    // the reply's types applied here, the same nodes folded here.
    options.run_inference = InferenceElsewhere(elsewhere);
    absl::StatusOr<Graph> g = ImportOnnxModel(HeadSplitModel().Bytes(),
                                              options);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->FindValue("r")->shape, Shape({2, 8, 4, 16}));
    EXPECT_EQ(g->FindValue("q")->shape, Shape({2, 4, 8, 16}));
    EXPECT_EQ(g->outputs[0].shape, Shape({2, 4, 8, 8}));
    // The shape arithmetic is gone: each of its nodes is a Constant now,
    // the concatenated shape holding its value.
    EXPECT_THAT(OpTypes(*g),
                ::testing::Not(::testing::Contains(::testing::AnyOf(
                    "Shape", "Gather", "Div", "Unsqueeze", "Concat"))));
    for (const Node& n : g->nodes) {
      if (n.outputs[0] != "new_shape") continue;
      EXPECT_EQ(n.op_type, "Constant");
      ASSERT_NE(n.GetTensor("value"), nullptr);
      EXPECT_THAT(Values<int64_t>(*n.GetTensor("value")),
                  ElementsAre(2, 8, 4, 16));
    }
  }
}

TEST(ShapeFoldingTest, ChannelShuffleAndCausalRangeFold) {
  // ShuffleNet's channel shuffle: Reshape(x, [n, 2, c / 2, h, w]), and a
  // causal mask's Range(0, seq) compared with its transpose, as GPT-style
  // exports compute them.
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"n", 4, 3, 3})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("mask", onnx::TensorProto::BOOL, std::nullopt);
  b.Node("Shape", {"x"}, {"s"}, "shape");
  Int64Constant(&b, "i1", {}, {1});
  Int64Constant(&b, "two", {1}, {2});
  Int64Constant(&b, "zero", {}, {0});
  Int64Constant(&b, "one", {}, {1});
  b.Node("Gather", {"s", "i1"}, {"c"}, "gather_c");
  b.Node("Div", {"c", "two"}, {"half"}, "div");  // [1] / [1] -> [1]
  Int64Constant(&b, "starts", {1}, {0});
  Int64Constant(&b, "ends1", {1}, {1});
  Int64Constant(&b, "starts2", {1}, {2});
  Int64Constant(&b, "ends2", {1}, {4});
  b.Node("Slice", {"s", "starts", "ends1"}, {"n"}, "slice_n");
  b.Node("Slice", {"s", "starts2", "ends2"}, {"hw"}, "slice_hw");
  AddIntAttr(b.Node("Concat", {"n", "two", "half", "hw"}, {"shape5"},
                    "concat"),
             "axis", 0);
  b.Node("Reshape", {"x", "shape5"}, {"r"}, "reshape");
  AddIntsAttr(b.Node("Transpose", {"r"}, {"y"}, "transpose"), "perm",
              {0, 2, 1, 3, 4});
  // mask[i][j] = j <= i over seq = s[2] = 3.
  Int64Constant(&b, "i2", {}, {2});
  b.Node("Gather", {"s", "i2"}, {"seq"}, "gather_seq");
  b.Node("Range", {"zero", "seq", "one"}, {"pos"}, "range");
  Int64Constant(&b, "axes1", {1}, {1});
  b.Node("Unsqueeze", {"pos", "axes1"}, {"col"}, "unsqueeze");
  b.Node("LessOrEqual", {"pos", "col"}, {"mask"}, "le");
  ImportOptions options;
  options.input_shapes["x"] = Shape({2, 4, 3, 3});
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->FindValue("r")->shape, Shape({2, 2, 2, 3, 3}));
  EXPECT_EQ(g->outputs[0].shape, Shape({2, 2, 2, 3, 3}));
  // The mask is a graph output: computed, typed, but its node stays.
  EXPECT_EQ(g->outputs[1].shape, Shape({3, 3}));
  EXPECT_EQ(g->nodes.back().op_type, "LessOrEqual");
  for (const Node& n : g->nodes) {
    if (n.outputs[0] == "pos") {
      ASSERT_EQ(n.op_type, "Constant");
      EXPECT_THAT(Values<int64_t>(*n.GetTensor("value")), ElementsAre(0, 1, 2));
    }
  }
}

// Symbolic dims propagate by name: a GPT-style embedding with dynamic
// batch and sequence, token embeddings plus position embeddings of
// Range(0, seq), then the attention head split, reaches its output as
// [batch, seq, 2, 2]. ONNX alone names Range's length (and every dim
// past the Add) with a name of its own ("unk__0").
TEST(ShapeFoldingTest, SymbolicDimsPropagateByName) {
  ModelBuilder b(/*opset=*/17);
  b.Input("ids", onnx::TensorProto::INT64, std::vector<Dim>{"batch", "seq"})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  std::vector<float> table(8 * 4);
  for (size_t i = 0; i < table.size(); ++i) table[i] = 0.5f * i;
  b.FloatInitializer("wte", {8, 4}, table)
      .FloatInitializer("wpe", {8, 4}, table);
  b.Node("Gather", {"wte", "ids"}, {"tok"}, "wte");
  b.Node("Shape", {"ids"}, {"s"}, "shape");
  Int64Constant(&b, "i0", {}, {0});
  Int64Constant(&b, "i1", {}, {1});
  b.Node("Gather", {"s", "i1"}, {"seq_len"}, "gather_seq");
  AddIntAttr(b.Node("Cast", {"seq_len"}, {"seq_i64"}, "cast"), "to",
             onnx::TensorProto::INT64);
  b.Node("Range", {"i0", "seq_i64", "i1"}, {"pos"}, "range");
  b.Node("Gather", {"wpe", "pos"}, {"pe"}, "wpe");
  b.Node("Add", {"tok", "pe"}, {"h"}, "add");
  // Reshape(h, [h.shape[0], h.shape[1], 2, 2]), as exporters split heads.
  b.Node("Shape", {"h"}, {"hs"}, "shape_h");
  b.Node("Gather", {"hs", "i0"}, {"n"}, "gather_n");
  b.Node("Gather", {"hs", "i1"}, {"t"}, "gather_t");
  Int64Constant(&b, "axes0", {1}, {0});
  b.Node("Unsqueeze", {"n", "axes0"}, {"n1"}, "unsqueeze_n");
  b.Node("Unsqueeze", {"t", "axes0"}, {"t1"}, "unsqueeze_t");
  Int64Constant(&b, "heads", {2}, {2, 2});
  AddIntAttr(b.Node("Concat", {"n1", "t1", "heads"}, {"shape4"}, "concat"),
             "axis", 0);
  b.Node("Reshape", {"h", "shape4"}, {"y"}, "reshape");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->inputs[0].ShapeString(), "[batch, seq]");
  EXPECT_EQ(g->FindValue("tok")->ShapeString(), "[batch, seq, 4]");
  EXPECT_EQ(g->FindValue("pos")->ShapeString(), "[seq]");
  EXPECT_EQ(g->FindValue("h")->ShapeString(), "[batch, seq, 4]");
  EXPECT_EQ(g->outputs[0].ShapeString(), "[batch, seq, 2, 2]");
  EXPECT_EQ(g->outputs[0].shape, Shape({-1, -1, 2, 2}));
  // The names only name: the dims stay dynamic.
  EXPECT_FALSE(g->FindValue("h")->shape.IsStatic());
}

// A Range whose length is a dim ONNX could only invent a name for (the
// length of two sequences concatenated) keeps no name: naming it by the
// invented one, which the next round replaces, would never settle.
TEST(ShapeFoldingTest, RangeOfAnInventedDimIsNotNamed) {
  ModelBuilder b(/*opset=*/17);
  b.Input("a", onnx::TensorProto::INT64, std::vector<Dim>{"seq"})
      .Output("pos", onnx::TensorProto::INT64, std::nullopt);
  AddIntAttr(b.Node("Concat", {"a", "a"}, {"aa"}, "concat"), "axis", 0);
  b.Node("Shape", {"aa"}, {"s"}, "shape");
  Int64Constant(&b, "i0", {}, {0});
  Int64Constant(&b, "i1", {}, {1});
  b.Node("Gather", {"s", "i0"}, {"n"}, "gather");
  b.Node("Range", {"i0", "n", "i1"}, {"pos"}, "range");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->outputs[0].shape.rank(), 1);
  EXPECT_NE(g->outputs[0].DimName(0), "seq");
}

// --- Names of derived dims (onnx/dim_naming.h) ---------------------------

// Imports `bytes` with dynamic inputs and again with `static_inputs`, and
// checks that every dim the dynamic import names, evaluated at `sizes` (the
// static inputs' dims by name), is the dim ONNX infers for the same value
// at those shapes: ONNX's inference on static shapes is the oracle. Returns
// how many named dims it checked.
int ExpectNamesAgreeWithStaticImport(
    const std::string& bytes, const std::map<std::string, Shape>& static_inputs,
    const std::map<std::string, int64_t>& sizes) {
  absl::StatusOr<Graph> dynamic = ImportOnnxModel(bytes);
  ImportOptions options;
  options.input_shapes = static_inputs;
  absl::StatusOr<Graph> fixed = ImportOnnxModel(bytes, options);
  EXPECT_TRUE(dynamic.ok()) << dynamic.status();
  EXPECT_TRUE(fixed.ok()) << fixed.status();
  if (!dynamic.ok() || !fixed.ok()) return 0;
  int checked = 0;
  for (const auto& [name, v] : dynamic->values) {
    const ValueInfo* s = fixed->FindValue(name);
    if (s == nullptr || !v.shape.has_rank() ||
        s->shape.rank() != v.shape.rank()) {
      continue;
    }
    for (int axis = 0; axis < v.shape.rank(); ++axis) {
      if (s->shape.dim(axis) < 0) continue;
      if (v.shape.dim(axis) >= 0) {
        EXPECT_EQ(v.shape.dim(axis), s->shape.dim(axis)) << name;
        continue;
      }
      if (v.DimName(axis).empty()) continue;
      // A size the data decides is named by its bound: at least the size.
      if (IsDataDependentDim(v.DimName(axis))) {
        EXPECT_GE(EvaluateDim(v.DimName(axis), sizes).value_or(-1),
                  s->shape.dim(axis))
            << name << v.ShapeString() << " axis " << axis;
      } else {
        EXPECT_EQ(EvaluateDim(v.DimName(axis), sizes), s->shape.dim(axis))
            << name << v.ShapeString() << " axis " << axis;
      }
      ++checked;
    }
  }
  return checked;
}

// Whether every value of `g` has a size at `bounds`.
std::vector<std::string> UnsizedValues(
    const Graph& g, const std::map<std::string, int64_t>& bounds) {
  std::vector<std::string> unsized;
  for (const auto& [name, v] : g.values) {
    if (!v.BytesWithin(bounds).has_value()) {
      unsized.push_back(absl::StrCat(name, v.ShapeString()));
    }
  }
  return unsized;
}

// A float [dims...] initializer of zeros.
void Zeros(ModelBuilder* b, const std::string& name,
           std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  b->FloatInitializer(name, dims, std::vector<float>(n, 0.0f));
}

// A convolutional network with dynamic batch and image size, as
// torchvision's are exported: ONNX names none of the spatial dims after the
// first convolution; Glint names each by its arithmetic, so that two
// branches of one size meet under one name.
std::string ConvNetWithDynamicImageSize() {
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"n", 3, "h", "w"})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  Zeros(&b, "w1", {4, 3, 3, 3});
  Zeros(&b, "w2", {4, 4, 1, 1});
  // A 3x3 convolution of stride 2 padded by 1: (h+1)/2.
  onnx::NodeProto* c1 = b.Node("Conv", {"x", "w1"}, {"c1"}, "c1");
  AddIntsAttr(c1, "strides", {2, 2});
  AddIntsAttr(c1, "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c1"}, {"r1"}, "r1");
  // A 2x2 max pool of stride 2: floor(((h+1)/2) / 2) = (h+1)/4.
  onnx::NodeProto* p1 = b.Node("MaxPool", {"r1"}, {"p1"}, "p1");
  AddIntsAttr(p1, "kernel_shape", {2, 2});
  AddIntsAttr(p1, "strides", {2, 2});
  // Two branches of one size: a 1x1 convolution of stride 2, and a 3x3
  // average pool of stride 2 with SAME padding, both (h+3)/4.
  onnx::NodeProto* c2 = b.Node("Conv", {"r1", "w2"}, {"c2"}, "c2");
  AddIntsAttr(c2, "strides", {2, 2});
  onnx::NodeProto* a1 = b.Node("AveragePool", {"r1"}, {"a1"}, "a1");
  AddIntsAttr(a1, "kernel_shape", {3, 3});
  AddIntsAttr(a1, "strides", {2, 2});
  onnx::AttributeProto* pad = a1->add_attribute();
  pad->set_name("auto_pad");
  pad->set_type(onnx::AttributeProto::STRING);
  pad->set_s("SAME_UPPER");
  b.Node("Add", {"c2", "a1"}, {"sum"}, "sum");
  // Upsampled by 2, then flattened.
  b.FloatInitializer("scales", {4}, {1, 1, 2, 2});
  b.Node("Resize", {"sum", "", "scales"}, {"up"}, "up");
  b.Node("Flatten", {"up"}, {"y"}, "flatten");
  return b.Bytes();
}

TEST(DimNamingTest, ConvolutionsAndPoolsNameTheirOutputsByTheirArithmetic) {
  const std::string bytes = ConvNetWithDynamicImageSize();
  absl::StatusOr<Graph> g = ImportOnnxModel(bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->FindValue("r1")->ShapeString(), "[n, 4, (h+1)/2, (w+1)/2]");
  EXPECT_EQ(g->FindValue("p1")->ShapeString(), "[n, 4, (h+1)/4, (w+1)/4]");
  EXPECT_EQ(g->FindValue("c2")->ShapeString(), "[n, 4, (h+3)/4, (w+3)/4]");
  EXPECT_EQ(g->FindValue("sum")->ShapeString(), "[n, 4, (h+3)/4, (w+3)/4]");
  EXPECT_EQ(g->FindValue("up")->ShapeString(),
            "[n, 4, 2*((h+3)/4), 2*((w+3)/4)]");
  EXPECT_EQ(g->outputs[0].ShapeString(), "[n, 16*((h+3)/4)*((w+3)/4)]");
  // The dims stay dynamic: the names only size them.
  EXPECT_EQ(g->outputs[0].shape, Shape({-1, -1}));
  const std::map<std::string, int64_t> bounds = {
      {"n", 2}, {"h", 224}, {"w", 224}};
  EXPECT_THAT(UnsizedValues(*g, bounds), ::testing::IsEmpty());
  EXPECT_EQ(g->outputs[0].BytesWithin(bounds), 4u * 2 * 16 * 56 * 56);
  // At the sizes ONNX infers for fixed shapes, odd and even alike: every
  // named dim of every value (n, and both spatial dims of each).
  for (const auto& [n, h, w] : std::vector<std::array<int64_t, 3>>{
           {2, 37, 30}, {1, 64, 17}, {3, 5, 8}}) {
    EXPECT_GE(
        ExpectNamesAgreeWithStaticImport(bytes, {{"x", Shape({n, 3, h, w})}},
                                         {{"n", n}, {"h", h}, {"w", w}}),
        20)
        << n << "x" << h << "x" << w;
  }
}

// A transformer's shape arithmetic as PyTorch exports it: the head split's
// Reshape to [batch * 2, seq, 4] computed from Shape(x) (ONNX cannot read
// that target, so it knows none of the Reshape's dims), a Reshape to
// [-1, 4], and a class token expanded to the batch through torch's
// expand(n, -1, -1) (Where(Equal(shape, -1), 1, shape)).
std::string TransformerShapeArithmetic() {
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"batch", "seq", 8})
      .Output("flat", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("cls", onnx::TensorProto::FLOAT, std::nullopt);
  b.Node("Shape", {"x"}, {"s"}, "shape");
  Int64Constant(&b, "i0", {}, {0});
  Int64Constant(&b, "i1", {}, {1});
  Int64Constant(&b, "heads", {}, {2});
  Int64Constant(&b, "axes0", {1}, {0});
  Int64Constant(&b, "four", {1}, {4});
  b.Node("Gather", {"s", "i0"}, {"b"}, "gather_b");
  b.Node("Gather", {"s", "i1"}, {"t"}, "gather_t");
  b.Node("Mul", {"b", "heads"}, {"bh"}, "mul");
  b.Node("Unsqueeze", {"bh", "axes0"}, {"bh1"}, "unsqueeze_bh");
  b.Node("Unsqueeze", {"t", "axes0"}, {"t1"}, "unsqueeze_t");
  AddIntAttr(b.Node("Concat", {"bh1", "t1", "four"}, {"shape3"}, "concat"),
             "axis", 0);
  b.Node("Reshape", {"x", "shape3"}, {"split"}, "split");
  Int64Constant(&b, "to2", {2}, {-1, 4});
  b.Node("Reshape", {"split", "to2"}, {"flat"}, "flatten");
  // expand(batch, -1, -1) of a [1, 1, 8] token.
  Zeros(&b, "token", {1, 1, 8});
  b.Node("Unsqueeze", {"b", "axes0"}, {"b1"}, "unsqueeze_b");
  Int64Constant(&b, "minus1", {1}, {-1});
  AddIntAttr(
      b.Node("Concat", {"b1", "minus1", "minus1"}, {"want"}, "concat_want"),
      "axis", 0);
  Int64Constant(&b, "all_minus1", {3}, {-1, -1, -1});
  Int64Constant(&b, "ones", {3}, {1, 1, 1});
  b.Node("Equal", {"want", "all_minus1"}, {"keep"}, "equal");
  b.Node("Where", {"keep", "ones", "want"}, {"target"}, "where");
  b.Node("Expand", {"token", "target"}, {"cls"}, "expand");
  return b.Bytes();
}

TEST(DimNamingTest, ShapeArithmeticOfReadDimsNamesReshapesAndExpands) {
  const std::string bytes = TransformerShapeArithmetic();
  absl::StatusOr<Graph> g = ImportOnnxModel(bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->FindValue("split")->ShapeString(), "[2*batch, seq, 4]");
  EXPECT_EQ(g->FindValue("split")->shape, Shape({-1, -1, 4}));
  EXPECT_EQ(g->outputs[0].ShapeString(), "[2*batch*seq, 4]");
  EXPECT_EQ(g->outputs[1].ShapeString(), "[batch, 1, 8]");
  EXPECT_EQ(g->outputs[1].shape, Shape({-1, 1, 8}));
  // Equal of the batch (a size) with -1 is false whatever the batch: it
  // folds, and the Where picks the target's elements.
  EXPECT_THAT(OpTypes(*g), ::testing::Not(::testing::Contains("Equal")));
  EXPECT_THAT(UnsizedValues(*g, {{"batch", 8}, {"seq", 512}}),
              ::testing::IsEmpty());
  for (const auto& [batch, seq] :
       std::vector<std::pair<int64_t, int64_t>>{{3, 5}, {1, 64}}) {
    EXPECT_GE(
        ExpectNamesAgreeWithStaticImport(bytes, {{"x", Shape({batch, seq, 8})}},
                                         {{"batch", batch}, {"seq", seq}}),
        4);
  }
}

// ShuffleNet's channel shuffle with a dynamic batch: Reshape(x, [n, 2,
// c / 2, h, w]), Transpose, Reshape(., [n, -1, h, w]): the -1 is what is
// left of the input's size once the batch cancels, a size (4), not a name.
TEST(DimNamingTest, AReshapesInferredDimIsWhatTheNamesLeave) {
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"n", 4, 3, 3})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  b.Node("Shape", {"x"}, {"s"}, "shape");
  Int64Constant(&b, "i0", {}, {0});
  Int64Constant(&b, "axes0", {1}, {0});
  b.Node("Gather", {"s", "i0"}, {"n0"}, "gather_n");
  b.Node("Unsqueeze", {"n0", "axes0"}, {"n"}, "unsqueeze_n");
  Int64Constant(&b, "groups", {4}, {2, 2, 3, 3});
  AddIntAttr(b.Node("Concat", {"n", "groups"}, {"shape5"}, "concat5"), "axis",
             0);
  b.Node("Reshape", {"x", "shape5"}, {"r"}, "reshape5");
  AddIntsAttr(b.Node("Transpose", {"r"}, {"t"}, "transpose"), "perm",
              {0, 2, 1, 3, 4});
  Int64Constant(&b, "rest", {3}, {-1, 3, 3});
  AddIntAttr(b.Node("Concat", {"n", "rest"}, {"shape4"}, "concat4"), "axis", 0);
  b.Node("Reshape", {"t", "shape4"}, {"y"}, "reshape4");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->FindValue("r")->ShapeString(), "[n, 2, 2, 3, 3]");
  EXPECT_EQ(g->outputs[0].shape, Shape({-1, 4, 3, 3}));
  EXPECT_EQ(g->outputs[0].ShapeString(), "[n, 4, 3, 3]");
  EXPECT_GE(ExpectNamesAgreeWithStaticImport(
                b.Bytes(), {{"x", Shape({5, 4, 3, 3})}}, {{"n", 5}}),
            3);
}

// A model's own dim names are names, whatever they spell: one named "7" is
// no size of 7, and "max-len" is no subtraction, so nothing is built on
// either: what they reach goes unsized rather than wrongly sized.
TEST(DimNamingTest, ModelDimNamesThatReadAsArithmeticAreNotBuiltOn) {
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"7", "max-len", 8})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("z", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("w", onnx::TensorProto::FLOAT, std::nullopt);
  Int64Constant(&b, "to", {2}, {-1, 4});
  b.Node("Reshape", {"x", "to"}, {"y"}, "reshape");
  AddIntAttr(b.Node("Flatten", {"x"}, {"z"}, "flatten"), "axis", 2);
  // Reshape(x, [x.shape[0], x.shape[1] * 8]): the elements read at run
  // time keep no name to be read as a size.
  b.Node("Shape", {"x"}, {"s"}, "shape");
  Int64Constant(&b, "i0", {}, {0});
  Int64Constant(&b, "i1", {}, {1});
  Int64Constant(&b, "eight", {}, {8});
  Int64Constant(&b, "axes0", {1}, {0});
  b.Node("Gather", {"s", "i0"}, {"d0"}, "gather0");
  b.Node("Gather", {"s", "i1"}, {"d1"}, "gather1");
  b.Node("Mul", {"d1", "eight"}, {"d18"}, "mul");
  b.Node("Unsqueeze", {"d0", "axes0"}, {"u0"}, "unsqueeze0");
  b.Node("Unsqueeze", {"d18", "axes0"}, {"u1"}, "unsqueeze1");
  AddIntAttr(b.Node("Concat", {"u0", "u1"}, {"to2"}, "concat"), "axis", 0);
  b.Node("Reshape", {"x", "to2"}, {"w"}, "reshape2");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  // With dims named `max` and `len` about, a split name would evaluate.
  const std::map<std::string, int64_t> bounds = {
      {"7", 2}, {"max-len", 3}, {"max", 10}, {"len", 2}};
  EXPECT_EQ(g->inputs[0].BytesWithin(bounds), 4u * 2 * 3 * 8);
  EXPECT_EQ(g->outputs[0].shape, Shape({-1, 4}));
  EXPECT_EQ(g->outputs[1].shape, Shape({-1, 8}));
  EXPECT_EQ(g->outputs[2].shape, Shape({-1, -1}));
  for (const ValueInfo& out : g->outputs) {
    EXPECT_FALSE(out.BytesWithin(bounds).has_value()) << out.ShapeString();
  }
}

// What no arithmetic sizes keeps no name: a Reshape of [n, m] to [-1, 2]
// has no product of names to call its -1 (n * m / 2 need not be a whole
// product).
TEST(DimNamingTest, AnInferredDimNoProductNamesStaysUnnamed) {
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"n", "m"})
      .Output("r", onnx::TensorProto::FLOAT, std::nullopt);
  Int64Constant(&b, "to", {2}, {-1, 2});
  b.Node("Reshape", {"x", "to"}, {"r"}, "reshape");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->outputs[0].shape, Shape({-1, 2}));
  EXPECT_FALSE(g->outputs[0].BytesWithin({{"n", 8}, {"m", 8}}).has_value());
}

// A decoder's upsampling, a pool in ceil_mode and a Resize by 1.5 of an
// image of dynamic size: the transposed convolution's 2*h and the Resize's
// (3*h)/2 are exact (ONNX's inference at fixed shapes agrees); the pool's
// last window may be dropped, so it is at most the ceiling.
TEST(DimNamingTest, TransposedConvolutionsCeilPoolsAndFractionalResizes) {
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"n", 2, "h", "w"})
      .Output("up", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("pooled", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("resized", onnx::TensorProto::FLOAT, std::nullopt);
  Zeros(&b, "wt", {2, 3, 3, 3});
  onnx::NodeProto* up = b.Node("ConvTranspose", {"x", "wt"}, {"up"}, "up");
  AddIntsAttr(up, "strides", {2, 2});
  AddIntsAttr(up, "pads", {1, 1, 1, 1});
  AddIntsAttr(up, "output_padding", {1, 1});
  onnx::NodeProto* pool = b.Node("MaxPool", {"x"}, {"pooled"}, "pool");
  AddIntsAttr(pool, "kernel_shape", {3, 3});
  AddIntsAttr(pool, "strides", {2, 2});
  AddIntAttr(pool, "ceil_mode", 1);
  b.FloatInitializer("scales", {4}, {1.0f, 1.0f, 1.5f, 1.5f});
  b.Node("Resize", {"x", "", "scales"}, {"resized"}, "resize");
  const std::string bytes = b.Bytes();
  absl::StatusOr<Graph> g = ImportOnnxModel(bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->outputs[0].ShapeString(), "[n, 3, 2*h, 2*w]");
  EXPECT_EQ(g->outputs[2].ShapeString(), "[n, 2, 3*h/2, 3*w/2]");
  EXPECT_TRUE(IsDataDependentDim(g->outputs[1].DimName(2)))
      << g->outputs[1].ShapeString();
  EXPECT_THAT(UnsizedValues(*g, {{"n", 2}, {"h", 64}, {"w", 64}}),
              ::testing::IsEmpty());
  for (const auto& [h, w] :
       std::vector<std::pair<int64_t, int64_t>>{{7, 9}, {10, 5}, {8, 8}}) {
    EXPECT_GE(
        ExpectNamesAgreeWithStaticImport(bytes, {{"x", Shape({2, 2, h, w})}},
                                         {{"n", 2}, {"h", h}, {"w", w}}),
        9);
  }
}

// Pad, DepthToSpace, SpaceToDepth and an equal Split of an image of
// dynamic size keep their arithmetic: h+4, 2*h, h/2 (ONNX's inference at
// fixed shapes agrees).
TEST(DimNamingTest, PadsSplitsAndDepthSpaceMovesKeepTheirArithmetic) {
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"n", 4, "h", "w"})
      .Output("padded", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("space", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("depth", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("top", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("bottom", onnx::TensorProto::FLOAT, std::nullopt);
  Int64Constant(&b, "pads", {8}, {0, 0, 1, 2, 0, 0, 3, 4});
  b.Node("Pad", {"x", "pads"}, {"padded"}, "pad");
  AddIntAttr(b.Node("DepthToSpace", {"x"}, {"space"}, "d2s"), "blocksize", 2);
  AddIntAttr(b.Node("SpaceToDepth", {"x"}, {"depth"}, "s2d"), "blocksize", 2);
  AddIntAttr(b.Node("Split", {"x"}, {"top", "bottom"}, "split"), "axis", 2);
  const std::string bytes = b.Bytes();
  absl::StatusOr<Graph> g = ImportOnnxModel(bytes);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->outputs[0].ShapeString(), "[n, 4, h+4, w+6]");
  EXPECT_EQ(g->outputs[1].ShapeString(), "[n, 1, 2*h, 2*w]");
  EXPECT_EQ(g->outputs[2].ShapeString(), "[n, 16, h/2, w/2]");
  EXPECT_EQ(g->outputs[3].ShapeString(), "[n, 4, h/2, w]");
  EXPECT_EQ(g->outputs[4].ShapeString(), "[n, 4, h/2, w]");
  EXPECT_THAT(UnsizedValues(*g, {{"n", 2}, {"h", 64}, {"w", 64}}),
              ::testing::IsEmpty());
  for (const auto& [h, w] :
       std::vector<std::pair<int64_t, int64_t>>{{8, 6}, {4, 10}}) {
    EXPECT_GE(
        ExpectNamesAgreeWithStaticImport(bytes, {{"x", Shape({3, 4, h, w})}},
                                         {{"n", 3}, {"h", h}, {"w", w}}),
        14);
  }
}

// A detector's post-processing: the sizes its data decides (how many
// scores pass a threshold, a TopK's run-time k, the boxes NMS keeps) are
// each named by their node and bounded by what the inputs' dims allow, so
// memory planned for the bounds covers every run.
TEST(DimNamingTest, DataDependentSizesAreBoundedByTheirInputs) {
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{"n"})
      .Input("k", onnx::TensorProto::INT64, std::vector<Dim>{1})
      .Input("boxes", onnx::TensorProto::FLOAT, std::vector<Dim>{1, "n", 4})
      .Output("nz", onnx::TensorProto::INT64, std::nullopt)
      .Output("nz2", onnx::TensorProto::INT64, std::nullopt)
      .Output("vals", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("inds", onnx::TensorProto::INT64, std::nullopt)
      .Output("cat", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("top3", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("last3", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("every2nd", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("rest", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("sum", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("sum3", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("none_kept", onnx::TensorProto::INT64, std::nullopt)
      .Output("uniq_rows", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("row_of", onnx::TensorProto::INT64, std::nullopt)
      .Output("kept", onnx::TensorProto::INT64, std::nullopt)
      .Output("compressed", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("compressed_flat", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("uniq", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("first", onnx::TensorProto::INT64, std::nullopt)
      .Output("inverse", onnx::TensorProto::INT64, std::nullopt)
      .Output("counts", onnx::TensorProto::INT64, std::nullopt);
  b.FloatInitializer("half", {}, {0.5f});
  b.Node("Greater", {"x", "half"}, {"pass"}, "greater");
  b.Node("NonZero", {"pass"}, {"nz"}, "nonzero");  // [1, <= n]
  b.Node("NonZero", {"x"}, {"nz2"}, "nonzero2");   // another count
  Int64Constant(&b, "axes0", {1}, {0});
  b.Node("Squeeze", {"nz", "axes0"}, {"idx"}, "squeeze");
  b.Node("Gather", {"x", "idx"}, {"picked"}, "gather");
  b.Node("TopK", {"picked", "k"}, {"vals", "inds"}, "topk");
  AddIntAttr(b.Node("Concat", {"vals", "x"}, {"cat"}, "concat"), "axis", 0);
  Int64Constant(&b, "three", {1}, {3});
  b.Node("Slice", {"vals", "axes0", "three"}, {"top3"}, "keep3");  // [:3]
  Int64Constant(&b, "minus3", {1}, {-3});
  Int64Constant(&b, "big", {1}, {std::numeric_limits<int64_t>::max()});
  Int64Constant(&b, "seven", {1}, {7});
  Int64Constant(&b, "two", {1}, {2});
  b.Node("Slice", {"vals", "minus3", "big"}, {"last3"}, "last3");  // [-3:]
  b.Node("Slice", {"vals", "axes0", "seven", "axes0", "two"}, {"every2nd"},
         "every2nd");                                           // [0:7:2]
  b.Node("Slice", {"vals", "three", "big"}, {"rest"}, "rest");  // [3:]
  b.Node("Add", {"vals", "x"}, {"sum"}, "add");  // Both n or one of them 1.
  b.FloatInitializer("c3", {3}, {1.0f, 2.0f, 3.0f});
  b.Node("Add", {"vals", "c3"}, {"sum3"}, "add3");
  b.Node("NonMaxSuppression", {"boxes", "scores"}, {"none_kept"}, "nms0");
  AddIntAttr(b.Node("Unique", {"boxes"}, {"uniq_rows", "", "row_of", ""},
                    "unique_rows"),
             "axis", 1);
  b.Node("Unsqueeze", {"x", "axes0"}, {"x1"}, "unsqueeze");
  b.Node("Unsqueeze", {"x1", "axes0"}, {"x11"}, "unsqueeze2");
  AddIntAttr(b.Node("Concat", {"x11", "x11"}, {"scores"}, "classes"), "axis",
             1);  // [1, 2, n]
  Int64Constant(&b, "most", {1}, {3});
  b.Node("NonMaxSuppression", {"boxes", "scores", "most"}, {"kept"}, "nms");
  AddIntAttr(b.Node("Compress", {"x", "pass"}, {"compressed"}, "compress"),
             "axis", 0);
  b.Node("Compress", {"boxes", "pass"}, {"compressed_flat"}, "flatten");
  b.Node("Unique", {"x"}, {"uniq", "first", "inverse", "counts"}, "unique");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  const std::map<std::string, int64_t> bounds = {{"n", 10}};
  // NonZero of [n]: [1, at most n] int64.
  const ValueInfo* nz = g->FindValue("nz");
  EXPECT_EQ(nz->BytesWithin(bounds), 8u * 10);
  EXPECT_TRUE(absl::StartsWith(nz->DimName(1), "nonzero_"))
      << nz->ShapeString();
  EXPECT_TRUE(absl::EndsWith(nz->DimName(1), "<=n")) << nz->ShapeString();
  // Two counts are two sizes: a fold that took them for one would make
  // their difference 0.
  EXPECT_NE(g->FindValue("nz2")->DimName(1), nz->DimName(1));
  EXPECT_EQ(g->FindValue("picked")->DimName(0), nz->DimName(1));
  // TopK's values and indices: one size, at most NonZero's bound.
  const ValueInfo* vals = g->FindValue("vals");
  EXPECT_EQ(vals->BytesWithin(bounds), 4u * 10);
  EXPECT_EQ(g->FindValue("inds")->DimName(0), vals->DimName(0));
  EXPECT_TRUE(IsDataDependentDim(vals->DimName(0)));
  EXPECT_NE(vals->DimName(0), nz->DimName(1));
  // A Concat of it and x: at most twice n.
  EXPECT_EQ(g->FindValue("cat")->BytesWithin(bounds), 4u * 20);
  // Its first three (torchvision's keep[:post_nms_top_n]): at most 3. Its
  // last three, or all but its first three: at most all of it. Every other
  // of its first seven: at most 4.
  EXPECT_EQ(g->FindValue("top3")->BytesWithin(bounds), 4u * 3);
  EXPECT_EQ(g->FindValue("last3")->BytesWithin(bounds), 4u * 10);
  EXPECT_EQ(g->FindValue("rest")->BytesWithin(bounds), 4u * 10);
  EXPECT_EQ(g->FindValue("every2nd")->BytesWithin(bounds), 4u * 4);
  // Broadcast with x: at most the larger; with 3 values: 3.
  EXPECT_EQ(g->FindValue("sum")->BytesWithin(bounds), 4u * 10);
  EXPECT_EQ(g->FindValue("sum3")->shape, Shape({3}));
  // NMS without a maximum keeps no box.
  EXPECT_EQ(g->FindValue("none_kept")->BytesWithin(bounds), 0u);
  // Unique rows of boxes [1, n, 4] along axis 1: at most n of them; one
  // index per row.
  EXPECT_EQ(g->FindValue("uniq_rows")->BytesWithin(bounds), 4u * 10 * 4);
  EXPECT_EQ(g->FindValue("row_of")->DimName(0), "n");
  // NMS of 2 classes, at most 3 boxes each: [<= 6, 3].
  EXPECT_EQ(g->FindValue("kept")->BytesWithin(bounds), 8u * 6 * 3);
  // Compress and Unique keep at most every element; Unique's inverse has
  // one per element, exactly.
  EXPECT_EQ(g->FindValue("compressed")->BytesWithin(bounds), 4u * 10);
  EXPECT_EQ(g->FindValue("compressed_flat")->BytesWithin(bounds), 4u * 40);
  const ValueInfo* uniq = g->FindValue("uniq");
  EXPECT_EQ(uniq->BytesWithin(bounds), 4u * 10);
  EXPECT_EQ(g->FindValue("first")->DimName(0), uniq->DimName(0));
  EXPECT_EQ(g->FindValue("counts")->DimName(0), uniq->DimName(0));
  EXPECT_EQ(g->FindValue("inverse")->DimName(0), "n");
  EXPECT_THAT(UnsizedValues(*g, bounds), ::testing::IsEmpty());
}

TEST(ShapeFoldingTest, OperatorErrorsAreLeftToRunTime) {
  // An integer division by zero is not folded: the kernel reports it when
  // the network runs. (A Gather index out of range is refused already by
  // ONNX's data propagation, at add time.)
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 3})
      .Output("q", onnx::TensorProto::INT64, std::nullopt);
  b.Node("Shape", {"x"}, {"s"}, "shape");
  Int64Constant(&b, "zero", {2}, {0, 0});
  b.Node("Div", {"s", "zero"}, {"q0"}, "div");
  b.Node("Identity", {"q0"}, {"q"}, "id_q");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(OpTypes(*g), ::testing::Contains("Div"));
  // The Shape before it folds.
  EXPECT_EQ(g->nodes[0].op_type, "Constant");
}

TEST(ShapeFoldingTest, LoopCarriedShapesAreNotFolded) {
  // A Loop body's Shape of its loop-carried value changes per iteration
  // (the body concatenates to it): it must stay a Shape node. Its Shape of
  // an outer value does not change and folds.
  ModelBuilder body(/*opset=*/17);
  body.Input("i", onnx::TensorProto::INT64, std::vector<Dim>{})
      .Input("cond", onnx::TensorProto::BOOL, std::vector<Dim>{})
      .Input("acc", onnx::TensorProto::FLOAT, std::vector<Dim>{1})
      .Output("cond_out", onnx::TensorProto::BOOL, std::vector<Dim>{})
      .Output("acc_out", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("len", onnx::TensorProto::INT64, std::nullopt)
      .Output("outer_len", onnx::TensorProto::INT64, std::nullopt);
  body.Node("Identity", {"cond"}, {"cond_out"}, "id");
  AddIntAttr(body.Node("Concat", {"acc", "acc"}, {"acc_out"}, "grow"), "axis",
             0);
  body.Node("Shape", {"acc"}, {"len0"}, "shape_acc");
  body.Node("Identity", {"len0"}, {"len"}, "id_len");
  body.Node("Shape", {"x"}, {"olen0"}, "shape_x");
  body.Node("Identity", {"olen0"}, {"outer_len"}, "id_olen");
  ModelBuilder b(/*opset=*/17);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{3})
      .Input("trips", onnx::TensorProto::INT64, std::vector<Dim>{})
      .Input("init", onnx::TensorProto::FLOAT, std::vector<Dim>{1})
      .Output("acc_final", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("lens", onnx::TensorProto::INT64, std::nullopt)
      .Output("olens", onnx::TensorProto::INT64, std::nullopt);
  onnx::NodeProto* loop = b.Node("Loop", {"trips", "", "init"},
                                 {"acc_final", "lens", "olens"}, "loop");
  onnx::AttributeProto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body.model().graph();
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  const Graph* sub = g->nodes[0].GetGraph("body");
  ASSERT_NE(sub, nullptr);
  std::vector<std::string> ops = OpTypes(*sub);
  EXPECT_EQ(sub->nodes[2].op_type, "Shape");     // of the carried value
  EXPECT_EQ(sub->nodes[4].op_type, "Constant");  // of the outer x
}

TEST(ShapeFoldingTest, KnownDimOfADataDependentShapeChoosesTheIfBranch) {
  // torchvision's "squeeze if 2-D" after a data-dependent count: x is
  // [?, 1] (rows picked by NonZero), the If compares x.shape[1] with 1 and
  // its branches give rank 1 and rank 2. libonnx merges them into no rank;
  // x.shape[1] is known, so the If takes the then branch: rank 1. The
  // Slice by x.shape[0] keeps its input's rank though its end is unknown.
  ModelBuilder then_b(/*opset=*/17);
  Int64Constant(&then_b, "sq_axes", {1}, {1});
  then_b.Node("Squeeze", {"x", "sq_axes"}, {"t_out"}, "squeeze");
  then_b.Output("t_out", onnx::TensorProto::INT64, std::nullopt);
  ModelBuilder else_b(/*opset=*/17);
  else_b.Node("Identity", {"x"}, {"e_out"}, "identity");
  else_b.Output("e_out", onnx::TensorProto::INT64, std::nullopt);
  ModelBuilder b(/*opset=*/17);
  b.Input("m", onnx::TensorProto::FLOAT, std::vector<Dim>{6})
      .Input("v", onnx::TensorProto::FLOAT, std::vector<Dim>{8, 3})
      .Output("y", onnx::TensorProto::INT64, std::nullopt)
      .Output("w", onnx::TensorProto::FLOAT, std::nullopt);
  b.Node("NonZero", {"m"}, {"nz"}, "nonzero");  // [1, ?]
  AddIntsAttr(b.Node("Transpose", {"nz"}, {"x"}, "transpose"), "perm",
              {1, 0});  // [?, 1]
  b.Node("Shape", {"x"}, {"s"}, "shape");
  Int64Constant(&b, "i1", {}, {1});
  Int64Constant(&b, "one", {}, {1});
  b.Node("Gather", {"s", "i1"}, {"cols"}, "gather_cols");
  b.Node("Equal", {"cols", "one"}, {"cond"}, "equal");
  onnx::NodeProto* n = b.Node("If", {"cond"}, {"y"}, "if");
  for (auto [name, branch] : {std::pair<const char*, ModelBuilder*>{
                                  "then_branch", &then_b},
                              {"else_branch", &else_b}}) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = branch->model().graph();
  }
  Int64Constant(&b, "starts", {1}, {0});
  Int64Constant(&b, "i0", {1}, {0});
  b.Node("Slice", {"s", "i0", "i1"}, {"rows"}, "slice_rows");  // [?]
  b.Node("Slice", {"v", "starts", "rows"}, {"w"}, "slice_v");
  for (bool elsewhere : {false, true}) {
    SCOPED_TRACE(elsewhere ? "inference in a helper" : "in process");
    ImportOptions options;
    options.run_inference = InferenceElsewhere(elsewhere);
    absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes(), options);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->outputs[0].shape, Shape({Shape::kUnknownDim}));
    // The Slice cuts axis 0 only (one start): v's 3 columns stay, and its
    // rows are at most v's 8.
    EXPECT_EQ(g->outputs[1].shape, Shape({Shape::kUnknownDim, 3}));
    EXPECT_EQ(g->outputs[1].BytesWithin({}), 4u * 8 * 3);
    // The comparison folded: the If reads a Constant condition.
    for (const Node& node : g->nodes) {
      if (node.outputs[0] == "cond") EXPECT_EQ(node.op_type, "Constant");
    }
  }
}

// --- Opsets 18 to 23 (onnx/newer_opsets.h) ------------------------------

void AddStringAttr(onnx::NodeProto* n, const std::string& name,
                   const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

void Int64Initializer(ModelBuilder* b, const std::string& name,
                      std::vector<int64_t> values) {
  onnx::TensorProto* t = b->graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t->add_int64_data(v);
}

TEST(NewerOpsetTest, ReduceMeanWithAxesInputAtOpset18) {
  // The dynamo exporter's LayerNorm and pooling: ReduceMean-18 with axes as
  // an input. libonnx 1.12 alone refused it ("has input size 2 not in
  // range [min=1, max=1]").
  for (int64_t keep : {0, 1}) {
    ModelBuilder b(/*opset=*/18);
    b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 3, 4})
        .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
    Int64Initializer(&b, "axes", {-1, 1});
    AddIntAttr(b.Node("ReduceMean", {"x", "axes"}, {"y"}, "node_mean"),
               "keepdims", keep);
    absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->opset_version, 18);
    EXPECT_EQ(g->outputs[0].shape, keep ? Shape({2, 1, 1}) : Shape({2}));
  }
}

TEST(NewerOpsetTest, SplitWithNumOutputsIsUnevenAtTheEnd) {
  ModelBuilder b(/*opset=*/18);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{7, 2})
      .Output("a", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("b", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("c", onnx::TensorProto::FLOAT, std::nullopt);
  AddIntAttr(b.Node("Split", {"x"}, {"a", "b", "c"}, "split"), "num_outputs",
             3);
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->outputs[0].shape, Shape({3, 2}));
  EXPECT_EQ(g->outputs[1].shape, Shape({3, 2}));
  EXPECT_EQ(g->outputs[2].shape, Shape({1, 2}));
}

TEST(NewerOpsetTest, PadWithAxesAndResizeWithAxesAndAspectPolicy) {
  ModelBuilder b(/*opset=*/19);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{1, 3, 10, 20})
      .Output("p", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("r", onnx::TensorProto::FLOAT, std::nullopt);
  Int64Initializer(&b, "pads", {1, 2, 3, 4});
  Int64Initializer(&b, "pad_axes", {-1, 2});
  b.Node("Pad", {"x", "pads", "", "pad_axes"}, {"p"}, "pad");
  Int64Initializer(&b, "sizes", {5, 5});
  onnx::NodeProto* r = b.Node("Resize", {"x", "", "", "sizes"}, {"r"},
                              "resize");
  AddIntsAttr(r, "axes", {2, 3});
  AddStringAttr(r, "keep_aspect_ratio_policy", "not_larger");
  AddStringAttr(r, "mode", "linear");
  AddStringAttr(r, "coordinate_transformation_mode", "half_pixel_symmetric");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  // Axis 3 gets 1 + 3, axis 2 gets 2 + 4.
  EXPECT_EQ(g->outputs[0].shape, Shape({1, 3, 16, 24}));
  // not_larger: one scale, min(5/10, 5/20) = 0.25.
  EXPECT_EQ(g->outputs[1].shape, Shape({1, 3, 3, 5}));
}

TEST(NewerOpsetTest, NewOpsAreCheckedAndTyped) {
  ModelBuilder b(/*opset=*/23);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 4, 8, 16})
      .Input("scale", onnx::TensorProto::FLOAT, std::vector<Dim>{4})
      .Input("bias", onnx::TensorProto::FLOAT, std::vector<Dim>{4})
      .Input("k", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 2, 6, 16})
      .Input("v", onnx::TensorProto::FLOAT, std::vector<Dim>{2, 2, 6, 32})
      .Output("gelu", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("gn", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("rms", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("att", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("cast", onnx::TensorProto::FLOAT16, std::nullopt);
  AddStringAttr(b.Node("Gelu", {"x"}, {"gelu"}, "gelu"), "approximate",
                "tanh");
  AddIntAttr(b.Node("GroupNormalization", {"x", "scale", "bias"}, {"gn"},
                    "gn"),
             "num_groups", 2);
  b.Node("RMSNormalization", {"x", "scale16"}, {"rms"}, "rms");
  b.FloatInitializer("scale16", {16}, std::vector<float>(16, 1.0f));
  AddIntAttr(b.Node("Attention", {"x", "k", "v"}, {"att"}, "attention"),
             "is_causal", 1);
  onnx::NodeProto* cast = b.Node("Cast", {"x"}, {"cast"}, "cast");
  AddIntAttr(cast, "to", onnx::TensorProto::FLOAT16);
  AddIntAttr(cast, "saturate", 1);
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->outputs[0].shape, Shape({2, 4, 8, 16}));
  EXPECT_EQ(g->outputs[1].shape, Shape({2, 4, 8, 16}));
  EXPECT_EQ(g->outputs[2].shape, Shape({2, 4, 8, 16}));
  // Grouped-query attention: 4 query heads over 2 key/value heads, V's
  // head size.
  EXPECT_EQ(g->outputs[3].shape, Shape({2, 4, 8, 32}));
  EXPECT_EQ(g->outputs[4].dtype, DType::kFloat16);
}

TEST(NewerOpsetTest, NewSignatureCheckedAgainstItsOwnSchema) {
  // Glint's schemas are real checks: an attribute Split-18 does not have
  // is refused, naming the node, as libonnx does for its own ops.
  ModelBuilder b(/*opset=*/18);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{4})
      .Output("a", onnx::TensorProto::FLOAT, std::nullopt)
      .Output("b", onnx::TensorProto::FLOAT, std::nullopt);
  AddIntAttr(b.Node("Split", {"x"}, {"a", "b"}, "split"), "chunks", 2);
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()), HasSubstr("split"));
  EXPECT_THAT(Message(g.status()), HasSubstr("chunks"));
}

TEST(NewerOpsetTest, OpNewerThanOpset23IsNamedWithItsOpset) {
  ModelBuilder b(/*opset=*/24);
  b.Input("x", onnx::TensorProto::FLOAT, std::vector<Dim>{4})
      .Output("y", onnx::TensorProto::FLOAT, std::nullopt);
  b.Node("Swish", {"x"}, {"y"}, "swish");
  absl::StatusOr<Graph> g = ImportOnnxModel(b.Bytes());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(g.status()), HasSubstr("'Swish'"));
  EXPECT_THAT(Message(g.status()), HasSubstr("opset 24"));
}

// --- TensorFromOnnxProto / TensorToOnnxProto ------------------------------

onnx::TensorProto MakeProto(int32_t type, std::vector<int64_t> dims) {
  onnx::TensorProto p;
  p.set_name("t");
  p.set_data_type(type);
  for (int64_t d : dims) p.add_dims(d);
  return p;
}

TEST(TensorFromOnnxProtoTest, RawFloat) {
  onnx::TensorProto p = MakeProto(onnx::TensorProto::FLOAT, {2, 2});
  const float v[] = {1.5f, -2.0f, 0.0f, 3.25f};
  p.set_raw_data(std::string(reinterpret_cast<const char*>(v), sizeof(v)));
  absl::StatusOr<Tensor> t = TensorFromOnnxProto(p);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kFloat32);
  EXPECT_EQ(t->shape(), Shape({2, 2}));
  EXPECT_THAT(Values<float>(*t), ElementsAre(1.5f, -2.0f, 0.0f, 3.25f));
}

TEST(TensorFromOnnxProtoTest, RawSizeMismatchIsInvalid) {
  onnx::TensorProto p = MakeProto(onnx::TensorProto::FLOAT, {3});
  p.set_raw_data(std::string(8, '\0'));
  EXPECT_EQ(TensorFromOnnxProto(p).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorFromOnnxProtoTest, TypedFields) {
  onnx::TensorProto f = MakeProto(onnx::TensorProto::FLOAT, {3});
  for (float v : {1.0f, 2.5f, -3.0f}) f.add_float_data(v);
  absl::StatusOr<Tensor> tf = TensorFromOnnxProto(f);
  ASSERT_TRUE(tf.ok()) << tf.status();
  EXPECT_THAT(Values<float>(*tf), ElementsAre(1.0f, 2.5f, -3.0f));

  onnx::TensorProto i64 = MakeProto(onnx::TensorProto::INT64, {2, 1});
  i64.add_int64_data(-7);
  i64.add_int64_data(int64_t{1} << 40);
  absl::StatusOr<Tensor> ti = TensorFromOnnxProto(i64);
  ASSERT_TRUE(ti.ok()) << ti.status();
  EXPECT_EQ(ti->shape(), Shape({2, 1}));
  EXPECT_THAT(Values<int64_t>(*ti), ElementsAre(-7, int64_t{1} << 40));

  onnx::TensorProto d = MakeProto(onnx::TensorProto::DOUBLE, {2});
  d.add_double_data(0.1);
  d.add_double_data(-1e300);
  absl::StatusOr<Tensor> td = TensorFromOnnxProto(d);
  ASSERT_TRUE(td.ok()) << td.status();
  EXPECT_THAT(Values<double>(*td), ElementsAre(0.1, -1e300));

  onnx::TensorProto b = MakeProto(onnx::TensorProto::BOOL, {4});
  for (int v : {0, 1, 1, 0}) b.add_int32_data(v);
  absl::StatusOr<Tensor> tb = TensorFromOnnxProto(b);
  ASSERT_TRUE(tb.ok()) << tb.status();
  EXPECT_EQ(tb->dtype(), DType::kBool);
  EXPECT_THAT(Values<uint8_t>(*tb), ElementsAre(0, 1, 1, 0));

  // float16 travels as its bit pattern in int32_data: 1.0 and -2.0.
  onnx::TensorProto h = MakeProto(onnx::TensorProto::FLOAT16, {2});
  h.add_int32_data(0x3C00);
  h.add_int32_data(0xC000);
  absl::StatusOr<Tensor> th = TensorFromOnnxProto(h);
  ASSERT_TRUE(th.ok()) << th.status();
  EXPECT_EQ(th->dtype(), DType::kFloat16);
  EXPECT_THAT(Values<uint16_t>(*th), ElementsAre(0x3C00, 0xC000));

  onnx::TensorProto i8 = MakeProto(onnx::TensorProto::INT8, {3});
  for (int v : {-128, 0, 127}) i8.add_int32_data(v);
  absl::StatusOr<Tensor> t8 = TensorFromOnnxProto(i8);
  ASSERT_TRUE(t8.ok()) << t8.status();
  EXPECT_THAT(Values<int8_t>(*t8), ElementsAre(-128, 0, 127));

  onnx::TensorProto u32 = MakeProto(onnx::TensorProto::UINT32, {1});
  u32.add_uint64_data(4000000000u);
  absl::StatusOr<Tensor> tu = TensorFromOnnxProto(u32);
  ASSERT_TRUE(tu.ok()) << tu.status();
  EXPECT_THAT(Values<uint32_t>(*tu), ElementsAre(4000000000u));
}

TEST(TensorFromOnnxProtoTest, ScalarAndEmptyTensors) {
  onnx::TensorProto s = MakeProto(onnx::TensorProto::INT32, {});
  s.add_int32_data(42);
  absl::StatusOr<Tensor> ts = TensorFromOnnxProto(s);
  ASSERT_TRUE(ts.ok()) << ts.status();
  EXPECT_EQ(ts->shape().rank(), 0);
  EXPECT_THAT(Values<int32_t>(*ts), ElementsAre(42));

  absl::StatusOr<Tensor> te =
      TensorFromOnnxProto(MakeProto(onnx::TensorProto::FLOAT, {0, 4}));
  ASSERT_TRUE(te.ok()) << te.status();
  EXPECT_EQ(te->num_elements(), 0);
}

TEST(TensorFromOnnxProtoTest, BadTensorsAreRefused) {
  onnx::TensorProto range = MakeProto(onnx::TensorProto::UINT8, {1});
  range.add_int32_data(256);
  EXPECT_EQ(TensorFromOnnxProto(range).status().code(),
            absl::StatusCode::kInvalidArgument);

  onnx::TensorProto wrong_field = MakeProto(onnx::TensorProto::FLOAT, {1});
  wrong_field.add_double_data(1.0);
  EXPECT_EQ(TensorFromOnnxProto(wrong_field).status().code(),
            absl::StatusCode::kInvalidArgument);

  onnx::TensorProto negative = MakeProto(onnx::TensorProto::FLOAT, {-1});
  EXPECT_EQ(TensorFromOnnxProto(negative).status().code(),
            absl::StatusCode::kInvalidArgument);

  // Huge dims and no data: refused before any allocation is attempted.
  onnx::TensorProto huge =
      MakeProto(onnx::TensorProto::FLOAT, {int64_t{1} << 40, 1 << 20});
  EXPECT_EQ(TensorFromOnnxProto(huge).status().code(),
            absl::StatusCode::kInvalidArgument);

  onnx::TensorProto strings = MakeProto(onnx::TensorProto::STRING, {1});
  strings.add_string_data("hello");
  EXPECT_EQ(TensorFromOnnxProto(strings).status().code(),
            absl::StatusCode::kUnimplemented);

  onnx::TensorProto external = MakeProto(onnx::TensorProto::FLOAT, {1});
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(TensorFromOnnxProto(external).status().code(),
            absl::StatusCode::kUnimplemented);

  EXPECT_EQ(TensorFromOnnxProto(MakeProto(0, {1})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorToOnnxProtoTest, RoundTrips) {
  Tensor t = Tensor::FromVector<int16_t>(DType::kInt16, Shape({2, 2}),
                                         {1, -2, 300, -32768});
  onnx::TensorProto p;
  p.set_name("kept");
  p.add_float_data(9.0f);  // Stale content must go.
  ASSERT_TRUE(TensorToOnnxProto(t, &p).ok());
  EXPECT_EQ(p.name(), "kept");
  EXPECT_EQ(p.data_type(), onnx::TensorProto::INT16);
  EXPECT_THAT(p.dims(), ElementsAre(2, 2));
  EXPECT_EQ(p.float_data_size(), 0);
  absl::StatusOr<Tensor> back = TensorFromOnnxProto(p);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype(), DType::kInt16);
  EXPECT_EQ(back->shape(), Shape({2, 2}));
  EXPECT_THAT(Values<int16_t>(*back), ElementsAre(1, -2, 300, -32768));
}

}  // namespace
}  // namespace glint
