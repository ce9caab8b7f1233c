// Old models: libonnx-testdata's pytorch-converted/ and pytorch-operator/
// cases (PyTorch exports of opsets 2 to 9, most of them opset 6: legacy
// broadcast/axis attributes, consumed_inputs, BatchNormalization's
// spatial/is_test, initializers listed as graph inputs), in process
// through HostManager, judged as tests/onnx_case.h judges the node cases.
// Every case must pass except those listed in KnownRefused with the
// reason (none today). Hand-built models then pin down each old form and
// the fallback when ONNX's inference fails, with computed values.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/device_info.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "runtime/host_manager.h"
#include "tests/host_case_backend.h"
#include "tests/onnx_case.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using testing::CaseResult;
using testing::Outcome;

constexpr char kDataDir[] = "/usr/share/libonnx-testdata/data";

// Cases that may stay refused, with why (they fail the test if they start
// passing, so that the list only shrinks).
const std::map<std::string, std::string>& KnownRefused() {
  static const auto* const kRefused = new std::map<std::string, std::string>{
  };
  return *kRefused;
}

TEST(OnnxLegacyTest, PyTorchExportsOfOldOpsetsRun) {
  if (!fs::exists(kDataDir)) {
    GTEST_SKIP() << kDataDir << " missing: is libonnx-testdata installed?";
  }
  DeviceConfig device;
  device.memory_bytes = 8ull << 30;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  testing::HostCaseBackend backend(**host);
  const bool verbose = std::getenv("GLINT_CONFORMANCE_VERBOSE") != nullptr;
  int passed = 0, run = 0;
  for (const char* group : {"pytorch-converted", "pytorch-operator"}) {
    std::vector<std::string> cases;
    for (const auto& e : fs::directory_iterator(fs::path(kDataDir) / group)) {
      if (e.is_directory()) cases.push_back(e.path().filename().string());
    }
    std::sort(cases.begin(), cases.end());
    for (const std::string& name : cases) {
      ++run;
      const CaseResult r = testing::RunOnnxCase(
          backend, (fs::path(kDataDir) / group / name).string(), name);
      if (verbose) {
        std::cout << group << "/" << name << " "
                  << testing::OutcomeName(r.outcome) << " " << r.detail
                  << "\n";
      }
      const auto known = KnownRefused().find(name);
      if (r.outcome == Outcome::kPass) {
        ++passed;
        EXPECT_EQ(known, KnownRefused().end())
            << name << " passes now: remove it from KnownRefused";
      } else if (known == KnownRefused().end()) {
        ADD_FAILURE() << group << "/" << name << " is "
                      << testing::OutcomeName(r.outcome) << ": " << r.detail;
      }
    }
  }
  std::cout << "old-opset cases: " << passed << " of " << run << " pass\n";
}

// A model of the default domain at `opset`.
class Model {
 public:
  explicit Model(int64_t opset) {
    proto_.set_ir_version(3);
    proto_.add_opset_import()->set_version(opset);
    proto_.mutable_graph()->set_name("legacy");
  }
  Model& Value(onnx::ValueInfoProto* v, const std::string& name, int32_t elem,
               const std::vector<int64_t>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    return *this;
  }
  Model& Input(const std::string& name, int32_t elem,
               const std::vector<int64_t>& dims) {
    return Value(proto_.mutable_graph()->add_input(), name, elem, dims);
  }
  Model& Output(const std::string& name) {
    proto_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  Model& Output(const std::string& name, int32_t elem,
                const std::vector<int64_t>& dims) {
    return Value(proto_.mutable_graph()->add_output(), name, elem, dims);
  }
  Model& FloatInitializer(const std::string& name,
                          const std::vector<int64_t>& dims,
                          const std::vector<float>& values) {
    onnx::TensorProto* t = proto_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }
  onnx::NodeProto* Node(const std::string& op,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs,
                        const std::string& name) {
    onnx::NodeProto* n = proto_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  std::string Bytes() const { return proto_.SerializeAsString(); }

 private:
  onnx::ModelProto proto_;
};

void IntAttr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void IntsAttr(onnx::NodeProto* n, const std::string& name,
              const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void StringAttr(onnx::NodeProto* n, const std::string& name,
                const std::string& v) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

Tensor Floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  return Tensor::FromVector(DType::kFloat32, Shape(std::move(dims)), v);
}

// Adds `model`, runs it once on `inputs` and removes it.
absl::StatusOr<std::vector<NamedTensor>> AddAndRun(
    const std::string& model, const std::vector<NamedTensor>& inputs) {
  DeviceConfig device;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, {device});
  if (!host.ok()) return host.status();
  absl::StatusOr<NetworkInfo> info = (*host)->AddNetwork("m", model, {});
  if (!info.ok()) return info.status();
  RunOptions run;
  run.deadline = absl::Now() + absl::Seconds(20);
  return (*host)->RunNetwork("m", inputs, run);
}

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.num_elements());
}

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(OnnxLegacyTest, BroadcastAxisAlignsBWithA) {
  // Opset 5: Add(A[2, 3, 2], B[3]) with broadcast=1, axis=1 adds B[j] to
  // A[i, j, k] (numpy rules would align B with the last axis and fail);
  // Mul with a constant B[2, 3] at axis 0 scales A[i, j, k] by B[i, j].
  // Add-1 also carries consumed_inputs, which means nothing at inference.
  Model m(5);
  m.Input("a", onnx::TensorProto::FLOAT, {2, 3, 2})
      .Input("b", onnx::TensorProto::FLOAT, {3})
      .FloatInitializer("w", {2, 3}, {1, 2, 3, 4, 5, 6})
      .Output("y");
  onnx::NodeProto* add = m.Node("Add", {"a", "b"}, {"s"}, "add");
  IntAttr(add, "broadcast", 1);
  IntAttr(add, "axis", 1);
  IntsAttr(add, "consumed_inputs", {0, 0});
  onnx::NodeProto* mul = m.Node("Mul", {"s", "w"}, {"y"}, "mul");
  IntAttr(mul, "broadcast", 1);
  IntAttr(mul, "axis", 0);
  std::vector<float> a(12);
  for (int i = 0; i < 12; ++i) a[i] = static_cast<float>(i);
  auto out = AddAndRun(m.Bytes(), {{"a", Floats({2, 3, 2}, a)},
                                   {"b", Floats({3}, {100, 200, 300})}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].tensor.shape(), Shape({2, 3, 2}));
  const float b[3] = {100, 200, 300};
  const float w[6] = {1, 2, 3, 4, 5, 6};
  std::vector<float> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 2; ++k) {
        want.push_back((a[(i * 3 + j) * 2 + k] + b[j]) * w[i * 3 + j]);
      }
  EXPECT_EQ(Values((*out)[0].tensor), want);
}

TEST(OnnxLegacyTest, BroadcastAxisPastARankIsInvalid) {
  Model m(6);
  m.Input("a", onnx::TensorProto::FLOAT, {2, 3})
      .Input("b", onnx::TensorProto::FLOAT, {3})
      .Output("y");
  onnx::NodeProto* add = m.Node("Add", {"a", "b"}, {"y"}, "bad_add");
  IntAttr(add, "broadcast", 1);
  IntAttr(add, "axis", 2);
  auto out = AddAndRun(m.Bytes(), {{"a", Floats({2, 3}, {1, 2, 3, 4, 5, 6})},
                                   {"b", Floats({3}, {1, 2, 3})}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("bad_add"));
}

TEST(OnnxLegacyTest, PReluSlopeIsPerChannelBeforeOpset7) {
  Model m(6);
  m.Input("x", onnx::TensorProto::FLOAT, {1, 3, 2})
      .Input("slope", onnx::TensorProto::FLOAT, {3})
      .Output("y");
  m.Node("PRelu", {"x", "slope"}, {"y"}, "prelu");
  auto out = AddAndRun(
      m.Bytes(), {{"x", Floats({1, 3, 2}, {-1, 1, -2, 2, -4, 4})},
                  {"slope", Floats({3}, {0.5f, 0.25f, 2})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values((*out)[0].tensor),
              ElementsAre(-0.5f, 1, -0.5f, 2, -8, 4));
}

TEST(OnnxLegacyTest, CastConcatAndReshapeOfTheFirstOpsets) {
  // Cast-1 names its type; Concat-1's axis defaults to 1; Reshape-1 takes
  // its shape as an attribute.
  Model m(3);
  m.Input("x", onnx::TensorProto::FLOAT, {2, 2})
      .Input("z", onnx::TensorProto::FLOAT, {2, 1})
      .Output("y");
  m.Node("Concat", {"x", "z"}, {"c"}, "concat");
  IntsAttr(m.Node("Reshape", {"c"}, {"r"}, "reshape"), "shape", {3, 2});
  StringAttr(m.Node("Cast", {"r"}, {"y"}, "cast"), "to", "DOUBLE");
  auto out = AddAndRun(m.Bytes(), {{"x", Floats({2, 2}, {1, 2, 3, 4})},
                                   {"z", Floats({2, 1}, {5, 6})}});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0].tensor;
  ASSERT_EQ(y.dtype(), DType::kFloat64);
  EXPECT_EQ(y.shape(), Shape({3, 2}));
  EXPECT_THAT(std::vector<double>(y.data<double>(), y.data<double>() + 6),
              ElementsAre(1, 2, 5, 3, 4, 6));
}

TEST(OnnxLegacyTest, NonSpatialBatchNormNormalisesPerPosition) {
  // Opset 6 (is_test, consumed_inputs of BatchNormalization-6 are gone;
  // spatial stays until 9): X[2, 2, 3], params [2, 3] per position.
  Model m(6);
  m.Input("x", onnx::TensorProto::FLOAT, {2, 2, 3})
      .FloatInitializer("scale", {2, 3}, {1, 2, 3, 4, 5, 6})
      .Input("b", onnx::TensorProto::FLOAT, {2, 3})
      .FloatInitializer("mean", {2, 3}, {0, 1, 2, 3, 4, 5})
      .FloatInitializer("var", {2, 3}, {1, 4, 9, 16, 25, 36})
      .Output("y");
  onnx::NodeProto* bn = m.Node("BatchNormalization",
                               {"x", "scale", "b", "mean", "var"}, {"y"}, "bn");
  IntAttr(bn, "spatial", 0);
  IntAttr(bn, "is_test", 1);
  onnx::AttributeProto* eps = bn->add_attribute();
  eps->set_name("epsilon");
  eps->set_type(onnx::AttributeProto::FLOAT);
  eps->set_f(0);
  std::vector<float> x(12), b = {10, 20, 30, 40, 50, 60};
  for (int i = 0; i < 12; ++i) x[i] = static_cast<float>(i * 3 % 7);
  auto out = AddAndRun(m.Bytes(),
                       {{"x", Floats({2, 2, 3}, x)}, {"b", Floats({2, 3}, b)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].tensor.shape(), Shape({2, 2, 3}));
  const float scale[6] = {1, 2, 3, 4, 5, 6}, mean[6] = {0, 1, 2, 3, 4, 5},
              sd[6] = {1, 2, 3, 4, 5, 6};
  const std::vector<float> got = Values((*out)[0].tensor);
  for (int n = 0; n < 2; ++n)
    for (int p = 0; p < 6; ++p) {
      EXPECT_FLOAT_EQ(got[n * 6 + p],
                      (x[n * 6 + p] - mean[p]) / sd[p] * scale[p] + b[p])
          << n << ", " << p;
    }
}

TEST(OnnxLegacyTest, SplitInputAndTileAxisOfOpset1) {
  Model m(1);
  m.Input("x", onnx::TensorProto::FLOAT, {2, 2}).Output("z").Output("w")
      .Output("t");
  onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(m.Bytes()));
  auto add_init = [&](const std::string& name, std::vector<int64_t> dims,
                      std::vector<int64_t> v) {
    onnx::TensorProto* t = proto.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t x : v) t->add_int64_data(x);
    // Opset 1 lists initializers as graph inputs.
    onnx::ValueInfoProto* in = proto.mutable_graph()->add_input();
    in->set_name(name);
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::INT64);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  add_init("split", {2}, {1, 1});
  add_init("tiles", {}, {3});
  add_init("axis", {}, {1});
  auto node = [&](const std::string& op, std::vector<std::string> in,
                  std::vector<std::string> out) {
    onnx::NodeProto* n = proto.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(op);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return n;
  };
  IntAttr(node("Split", {"x", "split"}, {"z", "w"}), "axis", 0);
  node("Tile", {"x", "tiles", "axis"}, {"t"});
  auto out = AddAndRun(proto.SerializeAsString(),
                       {{"x", Floats({2, 2}, {1, 2, 3, 4})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].tensor.shape(), Shape({1, 2}));
  EXPECT_THAT(Values((*out)[0].tensor), ElementsAre(1, 2));
  EXPECT_EQ((*out)[1].tensor.shape(), Shape({1, 2}));
  EXPECT_THAT(Values((*out)[1].tensor), ElementsAre(3, 4));
  EXPECT_EQ((*out)[2].tensor.shape(), Shape({2, 6}));
  EXPECT_THAT(Values((*out)[2].tensor),
              ElementsAre(1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4));
}

TEST(OnnxLegacyTest, Int64ConstantOfAnOldExporterImportsByFallback) {
  // Constant-1 allows float types only, so ONNX's inference refuses the
  // int64 Constant PyTorch wrote; Glint types it from its value.
  Model m(6);
  m.Input("x", onnx::TensorProto::FLOAT, {1, 2}).Output("y");
  onnx::NodeProto* c = m.Node("Constant", {}, {"reps"}, "reps_const");
  onnx::AttributeProto* v = c->add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  v->mutable_t()->add_dims(2);
  v->mutable_t()->add_int64_data(2);
  v->mutable_t()->add_int64_data(1);
  m.Node("Tile", {"x", "reps"}, {"y"}, "tile");
  auto out = AddAndRun(m.Bytes(), {{"x", Floats({1, 2}, {7, 8})}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].tensor.shape(), Shape({2, 2}));
  EXPECT_THAT(Values((*out)[0].tensor), ElementsAre(7, 8, 7, 8));
}

TEST(OnnxLegacyTest, FallbackRefusesWhatItCannotTypeNamingNodeAndValue) {
  // EyeLike on a rank-3 input: ONNX's inference fails, and without it the
  // output's type (no dtype attribute, a type variable of its own) is
  // unknown.
  Model m(9);
  m.Input("x", onnx::TensorProto::FLOAT, {2, 2, 2}).Output("y");
  m.Node("EyeLike", {"x"}, {"eye"}, "eye_node");
  m.Node("Relu", {"eye"}, {"y"}, "relu");
  auto out = AddAndRun(m.Bytes(), {{"x", Floats({2, 2, 2}, std::vector<float>(8))}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'eye_node'"));
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'eye'"));
}

TEST(OnnxLegacyTest, DeclarationsContradictingInferenceStayRefused) {
  Model m(13);
  m.Input("x", onnx::TensorProto::FLOAT, {2})
      .Output("y", onnx::TensorProto::INT32, {2});
  m.Node("Relu", {"x"}, {"y"}, "relu");
  auto out = AddAndRun(m.Bytes(), {{"x", Floats({2}, {1, -1})}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint
