// ONNX conformance over the wire: starts a real glintd, adds operator test
// cases from Debian's libonnx-testdata over gRPC, runs them with the cases'
// test_data_set_0 inputs and compares with the expected outputs (relative
// tolerance 1e-4, absolute 1e-6).
//
// Every case below is listed on purpose and must pass; none is skipped at
// run time. Cases of the listed ops that are left out are either beyond
// the ops Glint supports (e.g. *_expanded softmax graphs use Exp and
// ReduceMax; batchnorm *_training_mode has training outputs; maxpool
// with_argmax has an Indices output; *_uint8 arithmetic) or near-duplicates
// of included ones.
#include <csignal>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/file_util.h"
#include "client/tensor_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using testing::GlintdProcess;

constexpr char kTestData[] = "/usr/share/libonnx-testdata/data/";

// Directories under kTestData. "node/" cases test one operator each;
// ONNX's node cases have no grouped or dilated Conv, so those come from
// "pytorch-converted/" (opset 6 models that list initializers as inputs).
const char* const kCases[] = {
    // MatMul
    "node/test_matmul_2d",
    "node/test_matmul_3d",
    "node/test_matmul_4d",
    // Gemm
    "node/test_gemm_default_no_bias",
    "node/test_gemm_default_matrix_bias",
    "node/test_gemm_default_vector_bias",
    "node/test_gemm_default_scalar_bias",
    "node/test_gemm_transposeA",
    "node/test_gemm_transposeB",
    "node/test_gemm_all_attributes",
    // Conv: pads, strides, auto_pad; groups, depthwise, dilations.
    "node/test_basic_conv_with_padding",
    "node/test_basic_conv_without_padding",
    "node/test_conv_with_strides_padding",
    "node/test_conv_with_strides_no_padding",
    "node/test_conv_with_strides_and_asymmetric_padding",
    "node/test_conv_with_autopad_same",
    "pytorch-converted/test_Conv2d_groups",
    "pytorch-converted/test_Conv2d_depthwise_strided",
    "pytorch-converted/test_Conv2d_dilated",
    // MaxPool
    "node/test_maxpool_1d_default",
    "node/test_maxpool_2d_default",
    "node/test_maxpool_2d_pads",
    "node/test_maxpool_2d_strides",
    "node/test_maxpool_2d_dilations",
    "node/test_maxpool_2d_ceil",
    "node/test_maxpool_2d_same_upper",
    // AveragePool
    "node/test_averagepool_2d_default",
    "node/test_averagepool_2d_pads",
    "node/test_averagepool_2d_pads_count_include_pad",
    "node/test_averagepool_2d_strides",
    "node/test_averagepool_2d_ceil",
    // GlobalAveragePool
    "node/test_globalaveragepool",
    "node/test_globalaveragepool_precomputed",
    // BatchNormalization (inference)
    "node/test_batchnorm_example",
    "node/test_batchnorm_epsilon",
    // Activations
    "node/test_relu",
    "node/test_sigmoid",
    "node/test_tanh",
    // Softmax
    "node/test_softmax_example",
    "node/test_softmax_axis_0",
    "node/test_softmax_default_axis",
    "node/test_softmax_negative_axis",
    "node/test_softmax_large_number",
    // Elementwise arithmetic, with broadcasting
    "node/test_add",
    "node/test_add_bcast",
    "node/test_sub",
    "node/test_sub_bcast",
    "node/test_mul",
    "node/test_mul_bcast",
    "node/test_div",
    "node/test_div_bcast",
    // Shape ops
    "node/test_flatten_axis0",
    "node/test_flatten_default_axis",
    "node/test_flatten_negative_axis1",
    "node/test_reshape_reordered_all_dims",
    "node/test_reshape_negative_dim",
    "node/test_reshape_zero_and_negative_dim",
    "node/test_transpose_default",
    "node/test_transpose_all_permutations_0",
    "node/test_concat_1d_axis_0",
    "node/test_concat_2d_axis_1",
    "node/test_concat_3d_axis_negative_1",
    // Identity, Constant
    "node/test_identity",
    "node/test_constant",
};

class OnnxConformanceTest : public ::testing::TestWithParam<const char*> {
 protected:
  // One daemon for the whole suite: start-up is the slow part, and reusing
  // it also checks that adding and removing dozens of networks works.
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start({});
    if (!d.ok()) {
      start_error_ = new std::string(d.status().ToString());
      return;
    }
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    if (daemon_ != nullptr) {
      absl::StatusOr<int> code = daemon_->Stop(SIGTERM, absl::Seconds(20));
      EXPECT_TRUE(code.ok()) << code.status();
      if (code.ok()) {
        EXPECT_EQ(*code, 0) << daemon_->Log();
      }
    }
    delete daemon_;
    daemon_ = nullptr;
  }

  static GlintdProcess* daemon_;
  static std::string* start_error_;
};

GlintdProcess* OnnxConformanceTest::daemon_ = nullptr;
std::string* OnnxConformanceTest::start_error_ = nullptr;

std::string CaseName(const ::testing::TestParamInfo<const char*>& info) {
  std::string name = fs::path(info.param).filename().string();
  if (absl::StartsWith(name, "test_")) name = name.substr(5);
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

TEST_P(OnnxConformanceTest, MatchesExpectedOutputs) {
  ASSERT_NE(daemon_, nullptr) << "glintd did not start: " << *start_error_;
  const fs::path dir = fs::path(kTestData) / GetParam();
  ASSERT_TRUE(fs::exists(dir / "model.onnx"))
      << dir << " missing: is libonnx-testdata installed?";

  absl::StatusOr<std::string> model_bytes =
      ReadFileToString((dir / "model.onnx").string());
  ASSERT_TRUE(model_bytes.ok()) << model_bytes.status();
  onnx::ModelProto model;
  ASSERT_TRUE(model.ParseFromString(*model_bytes));
  const std::vector<std::string> input_names =
      testing::RuntimeInputNames(model);

  // Inputs input_<i>.pb pair with the runtime inputs by position; their own
  // names are not reliable in old cases.
  const fs::path data = dir / "test_data_set_0";
  std::vector<NamedTensor> inputs;
  for (size_t i = 0; i < input_names.size(); ++i) {
    absl::StatusOr<NamedTensor> t = ReadTensorProtoFile(
        (data / absl::StrCat("input_", i, ".pb")).string());
    ASSERT_TRUE(t.ok()) << t.status();
    t->name = input_names[i];
    inputs.push_back(*std::move(t));
  }
  std::vector<NamedTensor> expected;
  for (int i = 0; i < model.graph().output_size(); ++i) {
    absl::StatusOr<NamedTensor> t = ReadTensorProtoFile(
        (data / absl::StrCat("output_", i, ".pb")).string());
    ASSERT_TRUE(t.ok()) << t.status();
    expected.push_back(*std::move(t));
  }

  GlintClient& client = daemon_->client();
  const std::string name = CaseName({GetParam(), 0});
  absl::StatusOr<NetworkInfo> info =
      client.AddNetwork(name, *std::move(model_bytes));
  ASSERT_TRUE(info.ok()) << "AddNetwork: " << info.status();
  EXPECT_EQ(info->inputs.size(), input_names.size());
  EXPECT_FALSE(info->partitions.empty());

  absl::StatusOr<std::vector<NamedTensor>> outputs =
      client.RunNetwork(name, inputs, {}, absl::Seconds(30));
  ASSERT_TRUE(outputs.ok()) << "RunNetwork: " << outputs.status();
  ASSERT_EQ(outputs->size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ((*outputs)[i].name, model.graph().output(i).name());
    const std::string diff =
        testing::CompareTensors((*outputs)[i].tensor, expected[i].tensor);
    EXPECT_EQ(diff, "") << "output " << i << " ('" << (*outputs)[i].name
                        << "')";
  }
  EXPECT_TRUE(client.RemoveNetwork(name).ok());
}

INSTANTIATE_TEST_SUITE_P(Cases, OnnxConformanceTest,
                         ::testing::ValuesIn(kCases), CaseName);

}  // namespace
}  // namespace glint
