// The C API from a C++ test: real runs on an ONNX node case (outputs
// against the case's expected output), async runs, deadlines and
// cancellation, and every kind of bad argument the API promises to refuse
// with a status instead of aborting (point 6 of issue 20).
#include "glint/c_api.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"

namespace {

using ::testing::HasSubstr;

constexpr char kCase[] = "/usr/share/libonnx-testdata/data/node/test_matmul_2d";
// A dims pointer an out-parameter must overwrite.
constexpr int64_t kSentinelDim = 42;

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream s;
  s << file.rdbuf();
  return s.str();
}

// Owns a status; the code and message of the call's result.
struct Result {
  GlintCode code;
  std::string message;
};
Result Take(GlintStatus* status) {
  Result r{glint_status_code(status), glint_status_message(status)};
  glint_status_delete(status);
  return r;
}

#define EXPECT_GLINT_OK(expr)                                   \
  do {                                                          \
    Result r_ = Take(expr);                                     \
    EXPECT_EQ(r_.code, GLINT_OK) << #expr << ": " << r_.message; \
  } while (0)

// Expects `expr` to fail with `code` and a message containing `text`.
#define EXPECT_GLINT_ERROR(expr, expected_code, text)      \
  do {                                                     \
    Result r_ = Take(expr);                                \
    EXPECT_EQ(r_.code, expected_code)                      \
        << #expr << ": " << glint_code_name(r_.code) << " " << r_.message; \
    EXPECT_THAT(r_.message, HasSubstr(text)) << #expr;     \
  } while (0)

GlintTensor* LoadPb(const std::string& path) {
  const std::string bytes = ReadFile(path);
  GlintTensor* tensor = nullptr;
  GlintStatus* s =
      glint_tensor_create_from_onnx(bytes.data(), bytes.size(), &tensor);
  EXPECT_EQ(s, nullptr) << glint_status_message(s);
  glint_status_delete(s);
  return tensor;
}

std::vector<float> Floats(const GlintTensor* t) {
  const void* data = nullptr;
  size_t bytes = 0;
  GlintDType dtype = GLINT_DTYPE_UNDEFINED;
  EXPECT_EQ(glint_tensor_info(t, nullptr, &dtype, nullptr, nullptr, &data,
                              &bytes),
            nullptr);
  EXPECT_EQ(dtype, GLINT_DTYPE_FLOAT32);
  std::vector<float> v(bytes / sizeof(float));
  std::memcpy(v.data(), data, bytes);
  return v;
}

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(glint_runtime_create("sim*2:memory=256MiB", &runtime_), nullptr);
    inputs_[0] = LoadPb(std::string(kCase) + "/test_data_set_0/input_0.pb");
    inputs_[1] = LoadPb(std::string(kCase) + "/test_data_set_0/input_1.pb");
    expected_ = LoadPb(std::string(kCase) + "/test_data_set_0/output_0.pb");
    ASSERT_NE(inputs_[0], nullptr);
    ASSERT_NE(inputs_[1], nullptr);
    ASSERT_NE(expected_, nullptr);
  }
  void TearDown() override {
    glint_tensor_delete(inputs_[0]);
    glint_tensor_delete(inputs_[1]);
    glint_tensor_delete(expected_);
    EXPECT_EQ(glint_runtime_delete(runtime_), nullptr);
  }

  void AddCase(const char* name) {
    EXPECT_GLINT_OK(glint_runtime_add_network_from_file(
        runtime_, name, (std::string(kCase) + "/model.onnx").c_str(), nullptr,
        nullptr));
  }

  // Expects `outputs` to hold the case's output, close to the reference.
  void ExpectExpected(const GlintTensorList* outputs) {
    size_t n = 0;
    ASSERT_EQ(glint_tensor_list_size(outputs, &n), nullptr);
    ASSERT_EQ(n, 1u);
    const GlintTensor* out = nullptr;
    const char* expected_name = nullptr;
    ASSERT_EQ(glint_tensor_info(expected_, &expected_name, nullptr, nullptr,
                                nullptr, nullptr, nullptr),
              nullptr);
    ASSERT_EQ(glint_tensor_list_find(outputs, expected_name, &out), nullptr);
    const int64_t* dims = nullptr;
    size_t rank = 0;
    ASSERT_EQ(glint_tensor_info(out, nullptr, nullptr, &dims, &rank, nullptr,
                                nullptr),
              nullptr);
    ASSERT_EQ(rank, 2u);
    EXPECT_EQ(dims[0], 3);
    EXPECT_EQ(dims[1], 3);
    std::vector<float> got = Floats(out), want = Floats(expected_);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-4f * (1 + std::fabs(want[i]))) << i;
    }
  }

  GlintRuntime* runtime_ = nullptr;
  GlintTensor* inputs_[2] = {nullptr, nullptr};
  GlintTensor* expected_ = nullptr;
};

TEST(CApiVersionTest, LibraryMatchesHeader) {
  EXPECT_EQ(glint_api_version(), static_cast<uint32_t>(GLINT_C_API_VERSION));
  EXPECT_EQ(GLINT_C_API_VERSION, 600);
  EXPECT_STREQ(glint_code_name(GLINT_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
  EXPECT_STREQ(glint_code_name(static_cast<GlintCode>(99)), "UNKNOWN_CODE");
  EXPECT_EQ(glint_status_code(nullptr), GLINT_OK);
  EXPECT_STREQ(glint_status_message(nullptr), "");
}

// A value whose rank only the run decides reads as GLINT_UNKNOWN_RANK
// with no dims, not as a scalar; a dim known only at run time as -1.
TEST_F(CApiTest, ValuesOfUnknownRankSayso) {
  const std::string model = glint::testing::MakeUnknownRankModel();
  GlintNetwork* network = nullptr;
  ASSERT_EQ(glint_runtime_add_network(runtime_, "ranks", model.data(),
                                      model.size(), nullptr, &network),
            nullptr);
  const int64_t* dims = &kSentinelDim;
  size_t rank = 0;
  EXPECT_GLINT_OK(
      glint_network_value(network, 1, 0, nullptr, nullptr, &dims, &rank));
  EXPECT_EQ(rank, GLINT_UNKNOWN_RANK);
  EXPECT_EQ(dims, nullptr);
  EXPECT_GLINT_OK(
      glint_network_value(network, 1, 2, nullptr, nullptr, &dims, &rank));
  ASSERT_EQ(rank, 1u);
  EXPECT_EQ(dims[0], -1);
  glint_network_delete(network);
}

// A symbolic dim stays dynamic: its bound is set and read through the C
// API, runs of two sizes within it succeed, one over it is refused.
TEST_F(CApiTest, DynamicDimsTakeEachRunsSizeWithinTheirBound) {
  glint::testing::OnnxModelBuilder b;
  b.Input("x", 1, {-1, 3}).Output("y", 1, {-1, 3});  // -1: the dim "N".
  b.Node("Relu", {"x"}, {"y"});
  const std::string model = b.Serialize();
  GlintAddOptions* options = nullptr;
  ASSERT_EQ(glint_add_options_create(&options), nullptr);
  EXPECT_GLINT_ERROR(glint_add_options_set_max_dim(options, "N", 0),
                     GLINT_INVALID_ARGUMENT, "a bound is 1..");
  EXPECT_GLINT_OK(glint_add_options_set_max_dim(options, "N", 4));
  GlintNetwork* network = nullptr;
  ASSERT_EQ(glint_runtime_add_network(runtime_, "dyn", model.data(),
                                      model.size(), options, &network),
            nullptr);
  glint_add_options_delete(options);
  size_t count = 0;
  EXPECT_GLINT_OK(glint_network_num_dynamic_dims(network, &count));
  ASSERT_EQ(count, 1u);
  const char* input = nullptr;
  const char* dim_name = nullptr;
  int axis = -1;
  int64_t max = 0;
  EXPECT_GLINT_OK(
      glint_network_dynamic_dim(network, 0, &input, &axis, &dim_name, &max));
  EXPECT_STREQ(input, "x");
  EXPECT_EQ(axis, 0);
  EXPECT_STREQ(dim_name, "N");
  EXPECT_EQ(max, 4);
  EXPECT_GLINT_ERROR(
      glint_network_dynamic_dim(network, 1, nullptr, nullptr, nullptr, nullptr),
      GLINT_OUT_OF_RANGE, "past network 'dyn''s 1 dynamic dims");
  const int64_t* dims = nullptr;
  size_t rank = 0;
  EXPECT_GLINT_OK(
      glint_network_value(network, 0, 0, nullptr, nullptr, &dims, &rank));
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(dims[0], -1);
  // The dim's name, on the input and (through Relu) on the output.
  const char* named = nullptr;
  EXPECT_GLINT_OK(glint_network_value_dim_name(network, 0, 0, 0, &named));
  EXPECT_STREQ(named, "N");
  EXPECT_GLINT_OK(glint_network_value_dim_name(network, 1, 0, 0, &named));
  EXPECT_STREQ(named, "N");
  EXPECT_GLINT_OK(glint_network_value_dim_name(network, 1, 0, 1, &named));
  EXPECT_STREQ(named, "");
  EXPECT_GLINT_ERROR(glint_network_value_dim_name(network, 1, 0, 2, &named),
                     GLINT_OUT_OF_RANGE, "axis 2 is past the rank of 'y'");
  EXPECT_GLINT_ERROR(glint_network_value_dim_name(network, 1, 1, 0, &named),
                     GLINT_OUT_OF_RANGE, "past network 'dyn''s 1 outputs");
  glint_network_delete(network);

  for (int64_t rows : {1, 4, 5}) {
    std::vector<float> x(rows * 3);
    for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 2 == 0 ? -1.0f : 1.0f) * i;
    const int64_t shape[] = {rows, 3};
    GlintTensor* in = nullptr;
    ASSERT_EQ(glint_tensor_create("x", GLINT_DTYPE_FLOAT32, shape, 2, x.data(),
                                  x.size() * sizeof(float), &in),
              nullptr);
    GlintTensorList* outputs = nullptr;
    const GlintTensor* ins[] = {in};
    GlintStatus* status =
        glint_runtime_run(runtime_, "dyn", ins, 1, nullptr, &outputs);
    if (rows > 4) {
      EXPECT_GLINT_ERROR(status, GLINT_INVALID_ARGUMENT,
                         "dim 0 ('N') is 5, over its bound 4");
    } else {
      ASSERT_EQ(status, nullptr) << glint_status_message(status);
      const GlintTensor* y = nullptr;
      ASSERT_EQ(glint_tensor_list_get(outputs, 0, &y), nullptr);
      const int64_t* ydims = nullptr;
      size_t yrank = 0;
      const void* data = nullptr;
      ASSERT_EQ(glint_tensor_info(y, nullptr, nullptr, &ydims, &yrank, &data,
                                  nullptr),
                nullptr);
      ASSERT_EQ(yrank, 2u);
      EXPECT_EQ(ydims[0], rows);
      const float* yv = static_cast<const float*>(data);
      for (size_t i = 0; i < x.size(); ++i) {
        EXPECT_EQ(yv[i], std::max(x[i], 0.0f)) << i;
      }
      glint_tensor_list_delete(outputs);
    }
    glint_tensor_delete(in);
  }
}

TEST_F(CApiTest, AddsListsRunsAndRemoves) {
  GlintAddOptions* options = nullptr;
  ASSERT_EQ(glint_add_options_create(&options), nullptr);
  EXPECT_GLINT_OK(glint_add_options_set_strategy(options, "whole"));
  EXPECT_GLINT_OK(glint_add_options_set_replicas(options, 2));
  EXPECT_GLINT_OK(glint_add_options_set_precision(options, "fp32"));
  const std::string model = ReadFile(std::string(kCase) + "/model.onnx");
  GlintNetwork* network = nullptr;
  EXPECT_GLINT_OK(glint_runtime_add_network(runtime_, "mm", model.data(),
                                            model.size(), options, &network));
  glint_add_options_delete(options);

  const char* name = nullptr;
  const char* strategy = nullptr;
  size_t num_inputs = 0, num_outputs = 0, num_partitions = 0;
  int replicas = 0;
  ASSERT_EQ(glint_network_info(network, &name, &num_inputs, &num_outputs,
                               &num_partitions, &replicas, &strategy),
            nullptr);
  EXPECT_STREQ(name, "mm");
  EXPECT_EQ(num_inputs, 2u);
  EXPECT_EQ(num_outputs, 1u);
  EXPECT_EQ(num_partitions, 1u);
  EXPECT_EQ(replicas, 2);
  EXPECT_STREQ(strategy, "whole");
  const char* in_name = nullptr;
  GlintDType dtype = GLINT_DTYPE_UNDEFINED;
  const int64_t* dims = nullptr;
  size_t rank = 0;
  ASSERT_EQ(glint_network_value(network, 0, 1, &in_name, &dtype, &dims, &rank),
            nullptr);
  EXPECT_STREQ(in_name, "b");
  EXPECT_EQ(dtype, GLINT_DTYPE_FLOAT32);
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(dims[0], 4);
  EXPECT_EQ(dims[1], 3);
  EXPECT_GLINT_ERROR(
      glint_network_value(network, 1, 1, nullptr, nullptr, nullptr, nullptr),
      GLINT_OUT_OF_RANGE, "output index 1 is past network 'mm''s 1 outputs");
  glint_network_delete(network);

  GlintTensorList* outputs = nullptr;
  const GlintTensor* in[] = {inputs_[0], inputs_[1]};
  ASSERT_EQ(glint_runtime_run(runtime_, "mm", in, 2, nullptr, &outputs),
            nullptr);
  ExpectExpected(outputs);
  glint_tensor_list_delete(outputs);

  AddCase("mm2");
  GlintNetworkList* list = nullptr;
  ASSERT_EQ(glint_runtime_list_networks(runtime_, &list), nullptr);
  size_t n = 0;
  ASSERT_EQ(glint_network_list_size(list, &n), nullptr);
  ASSERT_EQ(n, 2u);
  const GlintNetwork* second = nullptr;
  ASSERT_EQ(glint_network_list_get(list, 1, &second), nullptr);
  ASSERT_EQ(glint_network_info(second, &name, nullptr, nullptr, nullptr,
                               nullptr, nullptr),
            nullptr);
  EXPECT_STREQ(name, "mm2");
  EXPECT_GLINT_ERROR(glint_network_list_get(list, 2, &second),
                     GLINT_OUT_OF_RANGE, "index 2 is past the list's 2");
  glint_network_list_delete(list);

  EXPECT_GLINT_OK(glint_runtime_remove_network(runtime_, "mm"));
  EXPECT_GLINT_ERROR(glint_runtime_remove_network(runtime_, "mm"),
                     GLINT_NOT_FOUND, "mm");
  EXPECT_GLINT_ERROR(glint_runtime_run(runtime_, "mm", in, 2, nullptr, &outputs),
                     GLINT_NOT_FOUND, "mm");
  GlintNetwork* got = nullptr;
  EXPECT_GLINT_ERROR(glint_runtime_get_network(runtime_, "mm", &got),
                     GLINT_NOT_FOUND, "mm");
  EXPECT_GLINT_OK(glint_runtime_get_network(runtime_, "mm2", &got));
  glint_network_delete(got);
}

struct AsyncResult {
  absl::Notification done;
  GlintCode code = GLINT_UNKNOWN;
  std::string message;
  GlintTensorList* outputs = nullptr;
  GlintRuntime* runtime_to_delete = nullptr;
  GlintCode delete_code = GLINT_OK;
  std::string delete_message;
};

void OnDone(void* user_data, GlintStatus* status, GlintTensorList* outputs) {
  auto* r = static_cast<AsyncResult*>(user_data);
  r->code = glint_status_code(status);
  r->message = glint_status_message(status);
  glint_status_delete(status);
  r->outputs = outputs;
  if (r->runtime_to_delete != nullptr) {
    GlintStatus* s = glint_runtime_delete(r->runtime_to_delete);
    r->delete_code = glint_status_code(s);
    r->delete_message = glint_status_message(s);
    glint_status_delete(s);
  }
  r->done.Notify();
}

TEST_F(CApiTest, RunsAsynchronously) {
  AddCase("mm");
  const GlintTensor* in[] = {inputs_[0], inputs_[1]};
  AsyncResult ok;
  ASSERT_EQ(glint_runtime_run_async(runtime_, "mm", in, 2, nullptr, OnDone, &ok),
            nullptr);
  ok.done.WaitForNotification();
  EXPECT_EQ(ok.code, GLINT_OK) << ok.message;
  ExpectExpected(ok.outputs);
  glint_tensor_list_delete(ok.outputs);

  // A run that fails once started reports through the callback, not the
  // return value; the callback may not delete the runtime it runs for.
  AsyncResult missing;
  missing.runtime_to_delete = runtime_;
  ASSERT_EQ(glint_runtime_run_async(runtime_, "nope", in, 2, nullptr, OnDone,
                                    &missing),
            nullptr);
  missing.done.WaitForNotification();
  EXPECT_EQ(missing.code, GLINT_NOT_FOUND);
  EXPECT_THAT(missing.message, HasSubstr("nope"));
  EXPECT_EQ(missing.outputs, nullptr);
  EXPECT_EQ(missing.delete_code, GLINT_FAILED_PRECONDITION);
  EXPECT_THAT(missing.delete_message, HasSubstr("completion callback"));
  // The runtime survived and still runs.
  GlintTensorList* outputs = nullptr;
  ASSERT_EQ(glint_runtime_run(runtime_, "mm", in, 2, nullptr, &outputs),
            nullptr);
  ExpectExpected(outputs);
  glint_tensor_list_delete(outputs);
}

TEST_F(CApiTest, CancellationAndDeadlines) {
  AddCase("mm");
  const GlintTensor* in[] = {inputs_[0], inputs_[1]};
  GlintCancel* cancel = nullptr;
  ASSERT_EQ(glint_cancel_create(&cancel), nullptr);
  GlintRunOptions* options = nullptr;
  ASSERT_EQ(glint_run_options_create(&options), nullptr);
  EXPECT_GLINT_OK(glint_run_options_set_cancel(options, cancel));
  EXPECT_GLINT_OK(glint_cancel_trigger(cancel));
  EXPECT_GLINT_OK(glint_cancel_trigger(cancel));  // Harmless twice.
  glint_cancel_delete(cancel);  // The options keep the token.
  GlintTensorList* outputs = nullptr;
  EXPECT_GLINT_ERROR(glint_runtime_run(runtime_, "mm", in, 2, options, &outputs),
                     GLINT_CANCELLED, "");
  EXPECT_EQ(outputs, nullptr);

  AsyncResult cancelled;
  ASSERT_EQ(glint_runtime_run_async(runtime_, "mm", in, 2, options, OnDone,
                                    &cancelled),
            nullptr);
  cancelled.done.WaitForNotification();
  EXPECT_EQ(cancelled.code, GLINT_CANCELLED) << cancelled.message;
  glint_run_options_delete(options);

  // A deadline of 1 µs has passed by the time the run reaches a device.
  ASSERT_EQ(glint_run_options_create(&options), nullptr);
  EXPECT_GLINT_OK(glint_run_options_set_timeout_us(options, 1));
  EXPECT_GLINT_ERROR(glint_runtime_run(runtime_, "mm", in, 2, options, &outputs),
                     GLINT_DEADLINE_EXCEEDED, "");
  // Priority and a requested output, with a generous deadline: it runs.
  EXPECT_GLINT_OK(glint_run_options_set_timeout_us(options, 600000000));
  EXPECT_GLINT_OK(glint_run_options_set_priority(options, 5));
  EXPECT_GLINT_OK(glint_run_options_add_output(options, "c"));
  ASSERT_EQ(glint_runtime_run(runtime_, "mm", in, 2, options, &outputs),
            nullptr);
  ExpectExpected(outputs);
  glint_tensor_list_delete(outputs);
  EXPECT_GLINT_OK(glint_run_options_add_output(options, "zz"));
  EXPECT_GLINT_ERROR(glint_runtime_run(runtime_, "mm", in, 2, options, &outputs),
                     GLINT_INVALID_ARGUMENT, "zz");
  glint_run_options_delete(options);
}

// glint_run_options_set_profile: runs given a profile record a slice per
// node (here the case's one MatMul) into it, readable as Chrome trace JSON
// and as the summary table; runs without one record nothing.
TEST_F(CApiTest, ProfilesRunsPerOp) {
  AddCase("mm");
  const GlintTensor* in[] = {inputs_[0], inputs_[1]};
  GlintProfile* profile = nullptr;
  ASSERT_EQ(glint_profile_create(&profile), nullptr);
  GlintRunOptions* options = nullptr;
  ASSERT_EQ(glint_run_options_create(&options), nullptr);
  EXPECT_GLINT_OK(glint_run_options_set_profile(options, profile));
  for (int i = 0; i < 2; ++i) {
    GlintTensorList* outputs = nullptr;
    ASSERT_EQ(glint_runtime_run(runtime_, "mm", in, 2, options, &outputs),
              nullptr);
    ExpectExpected(outputs);
    glint_tensor_list_delete(outputs);
  }
  const char* json = nullptr;
  EXPECT_GLINT_OK(glint_profile_trace_json(profile, &json));
  ASSERT_NE(json, nullptr);
  EXPECT_THAT(json, HasSubstr("\"cat\": \"op\""));
  EXPECT_THAT(json, HasSubstr("\"op_type\": \"MatMul\""));
  EXPECT_THAT(json, HasSubstr("\"inputs\": \"float32[3,4], float32[4,3]\""));
  EXPECT_THAT(json, HasSubstr("\"outputs\": \"float32[3,3]\""));
  const char* text = nullptr;
  EXPECT_GLINT_OK(glint_profile_summary(profile, 15, &text));
  ASSERT_NE(text, nullptr);
  // One row, the MatMul run twice, all of the node time.
  EXPECT_THAT(text, HasSubstr("MatMul"));
  EXPECT_THAT(text, HasSubstr("100.0%"));
  EXPECT_THAT(text, HasSubstr("in 2 node spans"));

  // The options keep the profile; NULL turns profiling off.
  glint_profile_delete(profile);
  GlintTensorList* outputs = nullptr;
  ASSERT_EQ(glint_runtime_run(runtime_, "mm", in, 2, options, &outputs),
            nullptr);
  glint_tensor_list_delete(outputs);
  EXPECT_GLINT_OK(glint_run_options_set_profile(options, nullptr));
  ASSERT_EQ(glint_runtime_run(runtime_, "mm", in, 2, options, &outputs),
            nullptr);
  glint_tensor_list_delete(outputs);
  glint_run_options_delete(options);

  GlintProfile* unused = nullptr;
  ASSERT_EQ(glint_profile_create(&unused), nullptr);
  EXPECT_GLINT_OK(glint_profile_summary(unused, 0, &text));
  EXPECT_THAT(text, HasSubstr("in 0 node spans"));
  EXPECT_GLINT_ERROR(glint_profile_create(nullptr), GLINT_INVALID_ARGUMENT,
                     "out is NULL");
  EXPECT_GLINT_ERROR(glint_profile_trace_json(unused, nullptr),
                     GLINT_INVALID_ARGUMENT, "json is NULL");
  EXPECT_GLINT_ERROR(
      glint_profile_summary(reinterpret_cast<GlintProfile*>(inputs_[0]), 1,
                            &text),
      GLINT_INVALID_ARGUMENT, "profile is not a GlintProfile");
  EXPECT_GLINT_ERROR(glint_run_options_set_profile(nullptr, unused),
                     GLINT_INVALID_ARGUMENT, "options is NULL");
  glint_profile_delete(unused);
}

TEST_F(CApiTest, RuntimeErrorsCarryCodesAndLeaveNoTrace) {
  GlintRuntime* other = nullptr;
  EXPECT_GLINT_ERROR(glint_runtime_create("sim*0", &other),
                     GLINT_INVALID_ARGUMENT, "glint_runtime_create: ");
  EXPECT_GLINT_ERROR(glint_runtime_create("warp*2", &other), GLINT_NOT_FOUND,
                     "warp");
  EXPECT_EQ(other, nullptr);  // Out-parameters are written only on success.

  const char junk[] = "not an onnx model";
  EXPECT_GLINT_ERROR(glint_runtime_add_network(runtime_, "bad", junk,
                                               sizeof(junk), nullptr, nullptr),
                     GLINT_INVALID_ARGUMENT, "glint_runtime_add_network: ");
  EXPECT_GLINT_ERROR(glint_runtime_add_network_from_file(
                         runtime_, "bad", "/nonexistent/model.onnx", nullptr,
                         nullptr),
                     GLINT_NOT_FOUND, "cannot open '/nonexistent/model.onnx'");
  AddCase("mm");
  EXPECT_GLINT_ERROR(glint_runtime_add_network_from_file(
                         runtime_, "mm",
                         (std::string(kCase) + "/model.onnx").c_str(), nullptr,
                         nullptr),
                     GLINT_ALREADY_EXISTS, "mm");
  GlintNetworkList* list = nullptr;
  ASSERT_EQ(glint_runtime_list_networks(runtime_, &list), nullptr);
  size_t n = 0;
  ASSERT_EQ(glint_network_list_size(list, &n), nullptr);
  EXPECT_EQ(n, 1u);  // The failed adds left nothing.
  glint_network_list_delete(list);

  // Inputs of the wrong shape, missing or unknown are the caller's error,
  // named in the message.
  const float four[4] = {1, 2, 3, 4};
  const int64_t two_by_two[] = {2, 2};
  GlintTensor* wrong = nullptr;
  ASSERT_EQ(glint_tensor_create("a", GLINT_DTYPE_FLOAT32, two_by_two, 2, four,
                                sizeof(four), &wrong),
            nullptr);
  GlintTensor* extra = nullptr;
  ASSERT_EQ(glint_tensor_create("zz", GLINT_DTYPE_FLOAT32, two_by_two, 2, four,
                                sizeof(four), &extra),
            nullptr);
  GlintTensorList* outputs = nullptr;
  const GlintTensor* wrong_shape[] = {wrong, inputs_[1]};
  EXPECT_GLINT_ERROR(
      glint_runtime_run(runtime_, "mm", wrong_shape, 2, nullptr, &outputs),
      GLINT_INVALID_ARGUMENT, "glint_runtime_run: ");
  EXPECT_GLINT_ERROR(
      glint_runtime_run(runtime_, "mm", wrong_shape + 1, 1, nullptr, &outputs),
      GLINT_INVALID_ARGUMENT, "'a'");
  const GlintTensor* unknown[] = {inputs_[0], inputs_[1], extra};
  EXPECT_GLINT_ERROR(
      glint_runtime_run(runtime_, "mm", unknown, 3, nullptr, &outputs),
      GLINT_INVALID_ARGUMENT, "zz");
  EXPECT_EQ(outputs, nullptr);
  glint_tensor_delete(wrong);
  glint_tensor_delete(extra);

  GlintAddOptions* options = nullptr;
  ASSERT_EQ(glint_add_options_create(&options), nullptr);
  EXPECT_GLINT_ERROR(glint_add_options_set_strategy(options, "fastest"),
                     GLINT_INVALID_ARGUMENT, "fastest");
  EXPECT_GLINT_ERROR(glint_add_options_set_strategy(options, "user"),
                     GLINT_INVALID_ARGUMENT, "user plan");
  EXPECT_GLINT_ERROR(glint_add_options_set_precision(options, "fp8"),
                     GLINT_INVALID_ARGUMENT, "fp8");
  EXPECT_GLINT_ERROR(glint_add_options_set_replicas(options, 0),
                     GLINT_INVALID_ARGUMENT, "replicas is 0");
  EXPECT_GLINT_ERROR(glint_add_options_set_plan_devices(options, -1),
                     GLINT_INVALID_ARGUMENT, "plan_devices is -1");
  const int64_t bad_dims[] = {2, -3};
  EXPECT_GLINT_ERROR(
      glint_add_options_set_input_shape(options, "a", bad_dims, 2),
      GLINT_INVALID_ARGUMENT, "dims[1] is -3");
  // More replicas than devices: the add fails whole.
  EXPECT_GLINT_OK(glint_add_options_set_strategy(options, "whole"));
  EXPECT_GLINT_OK(glint_add_options_set_replicas(options, 3));
  Result three = Take(glint_runtime_add_network_from_file(
      runtime_, "mm3", (std::string(kCase) + "/model.onnx").c_str(), options,
      nullptr));
  EXPECT_NE(three.code, GLINT_OK);
  EXPECT_THAT(three.message,
              HasSubstr("glint_runtime_add_network_from_file: "));
  GlintNetwork* got = nullptr;
  EXPECT_GLINT_ERROR(glint_runtime_get_network(runtime_, "mm3", &got),
                     GLINT_NOT_FOUND, "mm3");
  glint_add_options_delete(options);
}

// Point 6: NULLs, handles of the wrong kind and wrong sizes, function by
// function; each gives INVALID_ARGUMENT naming the function and the
// parameter, and nothing aborts.
TEST_F(CApiTest, RefusesNullsBadHandlesAndWrongSizes) {
  // Memory that is no handle (zeroed, and large enough to read a tag from),
  // and handles of the wrong kind.
  alignas(8) unsigned char junk_bytes[64] = {0};
  void* junk = junk_bytes;
  GlintTensor* tensor_as_runtime_src = inputs_[0];
  auto* not_runtime = reinterpret_cast<GlintRuntime*>(tensor_as_runtime_src);
  auto* not_tensor = reinterpret_cast<GlintTensor*>(runtime_);
  const GlintTensor* in[] = {inputs_[0], inputs_[1]};
  GlintTensorList* outputs = nullptr;
  GlintNetworkList* networks = nullptr;

  // Runtime.
  EXPECT_GLINT_ERROR(glint_runtime_create(nullptr, nullptr),
                     GLINT_INVALID_ARGUMENT,
                     "glint_runtime_create: out is NULL");
  EXPECT_GLINT_ERROR(glint_runtime_delete(not_runtime), GLINT_INVALID_ARGUMENT,
                     "glint_runtime_delete: runtime is not a GlintRuntime");
  EXPECT_GLINT_ERROR(
      glint_runtime_delete(static_cast<GlintRuntime*>(junk)),
      GLINT_INVALID_ARGUMENT, "runtime is not a GlintRuntime");
  EXPECT_EQ(glint_runtime_delete(nullptr), nullptr);

  // Adding, listing, removing.
  EXPECT_GLINT_ERROR(
      glint_runtime_add_network(nullptr, "x", "m", 1, nullptr, nullptr),
      GLINT_INVALID_ARGUMENT, "glint_runtime_add_network: runtime is NULL");
  EXPECT_GLINT_ERROR(
      glint_runtime_add_network(not_runtime, "x", "m", 1, nullptr, nullptr),
      GLINT_INVALID_ARGUMENT, "runtime is not a GlintRuntime");
  EXPECT_GLINT_ERROR(
      glint_runtime_add_network(runtime_, nullptr, "m", 1, nullptr, nullptr),
      GLINT_INVALID_ARGUMENT, "name is NULL");
  EXPECT_GLINT_ERROR(
      glint_runtime_add_network(runtime_, "x", nullptr, 10, nullptr, nullptr),
      GLINT_INVALID_ARGUMENT, "model is NULL");
  EXPECT_GLINT_ERROR(
      glint_runtime_add_network(runtime_, "x", "m", 1,
                                static_cast<GlintAddOptions*>(junk), nullptr),
      GLINT_INVALID_ARGUMENT, "options is not a GlintAddOptions");
  EXPECT_GLINT_ERROR(glint_runtime_add_network_from_file(runtime_, "x", nullptr,
                                                         nullptr, nullptr),
                     GLINT_INVALID_ARGUMENT, "path is NULL");
  EXPECT_GLINT_ERROR(glint_runtime_remove_network(runtime_, nullptr),
                     GLINT_INVALID_ARGUMENT, "name is NULL");
  EXPECT_GLINT_ERROR(glint_runtime_remove_network(not_runtime, "x"),
                     GLINT_INVALID_ARGUMENT, "not a GlintRuntime");
  EXPECT_GLINT_ERROR(glint_runtime_get_network(runtime_, "x", nullptr),
                     GLINT_INVALID_ARGUMENT, "out is NULL");
  EXPECT_GLINT_ERROR(glint_runtime_list_networks(runtime_, nullptr),
                     GLINT_INVALID_ARGUMENT, "out is NULL");
  EXPECT_GLINT_ERROR(glint_runtime_list_networks(not_runtime, &networks),
                     GLINT_INVALID_ARGUMENT, "not a GlintRuntime");
  EXPECT_GLINT_ERROR(
      glint_network_info(reinterpret_cast<GlintNetwork*>(runtime_), nullptr,
                         nullptr, nullptr, nullptr, nullptr, nullptr),
      GLINT_INVALID_ARGUMENT, "network is not a GlintNetwork");
  EXPECT_GLINT_ERROR(glint_network_value(nullptr, 0, 0, nullptr, nullptr,
                                         nullptr, nullptr),
                     GLINT_INVALID_ARGUMENT, "network is NULL");
  EXPECT_GLINT_ERROR(glint_network_value_dim_name(nullptr, 0, 0, 0, nullptr),
                     GLINT_INVALID_ARGUMENT, "network is NULL");
  EXPECT_GLINT_ERROR(glint_network_list_size(nullptr, nullptr),
                     GLINT_INVALID_ARGUMENT, "list is NULL");
  EXPECT_GLINT_ERROR(
      glint_network_list_get(static_cast<GlintNetworkList*>(junk), 0, nullptr),
      GLINT_INVALID_ARGUMENT, "list is not a GlintNetworkList");

  // Options.
  EXPECT_GLINT_ERROR(glint_add_options_create(nullptr), GLINT_INVALID_ARGUMENT,
                     "out is NULL");
  EXPECT_GLINT_ERROR(glint_add_options_set_strategy(nullptr, "whole"),
                     GLINT_INVALID_ARGUMENT, "options is NULL");
  GlintAddOptions* add = nullptr;
  ASSERT_EQ(glint_add_options_create(&add), nullptr);
  EXPECT_GLINT_ERROR(glint_add_options_set_strategy(add, nullptr),
                     GLINT_INVALID_ARGUMENT, "strategy is NULL");
  EXPECT_GLINT_ERROR(glint_add_options_set_precision(add, nullptr),
                     GLINT_INVALID_ARGUMENT, "precision is NULL");
  EXPECT_GLINT_ERROR(glint_add_options_set_input_shape(add, "a", nullptr, 2),
                     GLINT_INVALID_ARGUMENT, "dims is NULL");
  EXPECT_GLINT_ERROR(glint_add_options_set_input_shape(add, nullptr, nullptr, 0),
                     GLINT_INVALID_ARGUMENT, "input is NULL");
  EXPECT_GLINT_ERROR(
      glint_add_options_set_replicas(reinterpret_cast<GlintAddOptions*>(
                                         inputs_[0]),
                                     1),
      GLINT_INVALID_ARGUMENT, "options is not a GlintAddOptions");
  glint_add_options_delete(add);
  EXPECT_GLINT_ERROR(glint_run_options_create(nullptr), GLINT_INVALID_ARGUMENT,
                     "out is NULL");
  GlintRunOptions* run = nullptr;
  ASSERT_EQ(glint_run_options_create(&run), nullptr);
  EXPECT_GLINT_ERROR(glint_run_options_set_timeout_us(run, 0),
                     GLINT_INVALID_ARGUMENT, "timeout_us is 0");
  EXPECT_GLINT_ERROR(glint_run_options_set_timeout_us(nullptr, 5),
                     GLINT_INVALID_ARGUMENT, "options is NULL");
  EXPECT_GLINT_ERROR(glint_run_options_set_cancel(
                         run, reinterpret_cast<GlintCancel*>(run)),
                     GLINT_INVALID_ARGUMENT, "cancel is not a GlintCancel");
  EXPECT_GLINT_OK(glint_run_options_set_cancel(run, nullptr));
  EXPECT_GLINT_ERROR(glint_run_options_add_output(run, nullptr),
                     GLINT_INVALID_ARGUMENT, "name is NULL");
  EXPECT_GLINT_ERROR(glint_run_options_set_priority(
                         static_cast<GlintRunOptions*>(junk), 1),
                     GLINT_INVALID_ARGUMENT, "not a GlintRunOptions");
  EXPECT_GLINT_ERROR(glint_cancel_create(nullptr), GLINT_INVALID_ARGUMENT,
                     "out is NULL");
  EXPECT_GLINT_ERROR(glint_cancel_trigger(nullptr), GLINT_INVALID_ARGUMENT,
                     "cancel is NULL");
  EXPECT_GLINT_ERROR(
      glint_cancel_trigger(reinterpret_cast<GlintCancel*>(inputs_[0])),
      GLINT_INVALID_ARGUMENT, "cancel is not a GlintCancel");

  // Runs.
  AddCase("mm");
  EXPECT_GLINT_ERROR(glint_runtime_run(runtime_, "mm", in, 2, nullptr, nullptr),
                     GLINT_INVALID_ARGUMENT, "outputs is NULL");
  EXPECT_GLINT_ERROR(glint_runtime_run(runtime_, "mm", nullptr, 2, nullptr,
                                       &outputs),
                     GLINT_INVALID_ARGUMENT, "inputs is NULL");
  const GlintTensor* with_null[] = {inputs_[0], nullptr};
  EXPECT_GLINT_ERROR(
      glint_runtime_run(runtime_, "mm", with_null, 2, nullptr, &outputs),
      GLINT_INVALID_ARGUMENT, "inputs[1] is NULL");
  const GlintTensor* with_runtime[] = {inputs_[0], not_tensor};
  EXPECT_GLINT_ERROR(
      glint_runtime_run(runtime_, "mm", with_runtime, 2, nullptr, &outputs),
      GLINT_INVALID_ARGUMENT, "inputs[1] is not a GlintTensor");
  EXPECT_GLINT_ERROR(glint_runtime_run(runtime_, nullptr, in, 2, nullptr,
                                       &outputs),
                     GLINT_INVALID_ARGUMENT, "name is NULL");
  EXPECT_GLINT_ERROR(glint_runtime_run(runtime_, "mm", in, 2,
                                       reinterpret_cast<GlintRunOptions*>(
                                           runtime_),
                                       &outputs),
                     GLINT_INVALID_ARGUMENT, "options is not a GlintRunOptions");
  EXPECT_GLINT_ERROR(
      glint_runtime_run_async(runtime_, "mm", in, 2, run, nullptr, nullptr),
      GLINT_INVALID_ARGUMENT, "glint_runtime_run_async: callback is NULL");
  EXPECT_GLINT_ERROR(glint_runtime_run_async(not_runtime, "mm", in, 2, run,
                                             OnDone, nullptr),
                     GLINT_INVALID_ARGUMENT, "runtime is not a GlintRuntime");
  EXPECT_EQ(outputs, nullptr);
  glint_run_options_delete(run);

  // Tensors: wrong sizes, bad shapes and dtypes, bad handles.
  const float data[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[] = {2, 3};
  GlintTensor* t = nullptr;
  EXPECT_GLINT_ERROR(glint_tensor_create("t", GLINT_DTYPE_FLOAT32, dims, 2,
                                         data, 20, &t),
                     GLINT_INVALID_ARGUMENT,
                     "byte_size is 20 but tensor 't' of float32[2, 3] needs 24");
  EXPECT_GLINT_ERROR(glint_tensor_create("t", GLINT_DTYPE_FLOAT32, dims, 2,
                                         nullptr, 24, &t),
                     GLINT_INVALID_ARGUMENT, "data is NULL but byte_size is 24");
  EXPECT_GLINT_ERROR(glint_tensor_create("t", static_cast<GlintDType>(8), dims,
                                         2, data, 24, &t),
                     GLINT_INVALID_ARGUMENT, "dtype 8 is not a GlintDType");
  EXPECT_GLINT_ERROR(glint_tensor_create("t", static_cast<GlintDType>(1234),
                                         dims, 2, data, 24, &t),
                     GLINT_INVALID_ARGUMENT, "dtype 1234 is not a GlintDType");
  const int64_t negative[] = {2, -1};
  EXPECT_GLINT_ERROR(glint_tensor_create("t", GLINT_DTYPE_FLOAT32, negative, 2,
                                         data, 24, &t),
                     GLINT_INVALID_ARGUMENT, "dims[1] is -1");
  const int64_t huge[] = {int64_t{1} << 40, int64_t{1} << 40};
  EXPECT_GLINT_ERROR(glint_tensor_create("t", GLINT_DTYPE_FLOAT32, huge, 2,
                                         nullptr, 0, &t),
                     GLINT_INVALID_ARGUMENT, "tensor 't'");
  EXPECT_GLINT_ERROR(glint_tensor_create("t", GLINT_DTYPE_FLOAT32, dims, 65,
                                         data, 24, &t),
                     GLINT_INVALID_ARGUMENT, "rank 65 is over the limit of 64");
  EXPECT_GLINT_ERROR(glint_tensor_create("t", GLINT_DTYPE_FLOAT32, nullptr, 2,
                                         data, 24, &t),
                     GLINT_INVALID_ARGUMENT, "dims is NULL");
  EXPECT_GLINT_ERROR(glint_tensor_create(nullptr, GLINT_DTYPE_FLOAT32, dims, 2,
                                         data, 24, &t),
                     GLINT_INVALID_ARGUMENT, "name is NULL");
  EXPECT_GLINT_ERROR(glint_tensor_create("t", GLINT_DTYPE_FLOAT32, dims, 2,
                                         data, 24, nullptr),
                     GLINT_INVALID_ARGUMENT, "out is NULL");
  EXPECT_EQ(t, nullptr);
  ASSERT_EQ(glint_tensor_create("t", GLINT_DTYPE_FLOAT32, dims, 2, data, 24, &t),
            nullptr);
  float back[6];
  EXPECT_GLINT_ERROR(glint_tensor_copy_data(t, back, 23),
                     GLINT_INVALID_ARGUMENT,
                     "dst_size is 23 but tensor 't' holds 24 bytes");
  EXPECT_GLINT_ERROR(glint_tensor_copy_data(t, nullptr, 24),
                     GLINT_INVALID_ARGUMENT, "dst is NULL");
  EXPECT_GLINT_OK(glint_tensor_copy_data(t, back, sizeof(back)));
  EXPECT_EQ(back[5], 6.0f);
  EXPECT_GLINT_ERROR(glint_tensor_copy_data(not_tensor, back, 24),
                     GLINT_INVALID_ARGUMENT, "tensor is not a GlintTensor");
  EXPECT_GLINT_ERROR(glint_tensor_info(static_cast<GlintTensor*>(junk), nullptr,
                                       nullptr, nullptr, nullptr, nullptr,
                                       nullptr),
                     GLINT_INVALID_ARGUMENT, "tensor is not a GlintTensor");
  // A zero tensor: no data, no bytes.
  GlintTensor* zeros = nullptr;
  ASSERT_EQ(glint_tensor_create("z", GLINT_DTYPE_INT64, dims, 2, nullptr, 0,
                                &zeros),
            nullptr);
  int64_t zero_back[6] = {1, 1, 1, 1, 1, 1};
  EXPECT_GLINT_OK(glint_tensor_copy_data(zeros, zero_back, sizeof(zero_back)));
  EXPECT_EQ(zero_back[3], 0);
  glint_tensor_delete(zeros);
  glint_tensor_delete(t);

  const char not_proto[] = "\xff\xff\xff\xff garbage";
  EXPECT_GLINT_ERROR(
      glint_tensor_create_from_onnx(not_proto, sizeof(not_proto), &t),
      GLINT_INVALID_ARGUMENT, "not a serialized ONNX TensorProto");
  EXPECT_GLINT_ERROR(glint_tensor_create_from_onnx(nullptr, 10, &t),
                     GLINT_INVALID_ARGUMENT, "proto is NULL");
  EXPECT_GLINT_ERROR(glint_tensor_list_size(nullptr, nullptr),
                     GLINT_INVALID_ARGUMENT, "list is NULL");
  EXPECT_GLINT_ERROR(
      glint_tensor_list_get(reinterpret_cast<GlintTensorList*>(inputs_[0]), 0,
                            nullptr),
      GLINT_INVALID_ARGUMENT, "list is not a GlintTensorList");
  EXPECT_GLINT_ERROR(glint_tensor_list_find(static_cast<GlintTensorList*>(junk),
                                            "c", nullptr),
                     GLINT_INVALID_ARGUMENT, "list is not a GlintTensorList");

  // Statuses and deletes: wrong kinds are read as errors or left alone.
  EXPECT_EQ(glint_status_code(reinterpret_cast<GlintStatus*>(runtime_)),
            GLINT_INVALID_ARGUMENT);
  EXPECT_THAT(glint_status_message(static_cast<GlintStatus*>(junk)),
              HasSubstr("not a GlintStatus"));
  glint_status_delete(reinterpret_cast<GlintStatus*>(runtime_));
  glint_tensor_delete(not_tensor);
  glint_tensor_list_delete(static_cast<GlintTensorList*>(junk));
  glint_network_delete(reinterpret_cast<GlintNetwork*>(inputs_[0]));
  glint_network_list_delete(nullptr);
  glint_add_options_delete(static_cast<GlintAddOptions*>(junk));
  glint_run_options_delete(nullptr);
  glint_cancel_delete(reinterpret_cast<GlintCancel*>(runtime_));
  // ... and everything they were given still works.
  ASSERT_EQ(glint_runtime_run(runtime_, "mm", in, 2, nullptr, &outputs),
            nullptr);
  ExpectExpected(outputs);
  glint_tensor_list_delete(outputs);
}

// Issue 33 through the C API: a network split by memory onto devices it
// nearly fills takes 48 runs at once; every one succeeds with the output
// of a run alone (the runtime admits runs by the executions whose memory
// it reserved, and queues the rest).
TEST(CApiMemoryTest, FortyEightAsyncRunsOnANetworkSplitByMemory) {
  GlintRuntime* runtime = nullptr;
  ASSERT_EQ(glint_runtime_create("sim*3:memory=800KiB", &runtime), nullptr);
  // 6 layers of 256×256 floats on 64 rows: two layers per device.
  const std::string model = glint::testing::MakeDeepMlpModel(64, 256, 6);
  GlintAddOptions* options = nullptr;
  ASSERT_EQ(glint_add_options_create(&options), nullptr);
  EXPECT_GLINT_OK(glint_add_options_set_strategy(options, "memory"));
  EXPECT_GLINT_OK(glint_runtime_add_network(runtime, "mlp", model.data(),
                                            model.size(), options, nullptr));
  glint_add_options_delete(options);
  std::vector<float> x(64 * 256);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 11) / 11.0f - 0.5f;
  const int64_t shape[] = {64, 256};
  GlintTensor* in = nullptr;
  ASSERT_EQ(glint_tensor_create("x", GLINT_DTYPE_FLOAT32, shape, 2, x.data(),
                                x.size() * sizeof(float), &in),
            nullptr);
  const GlintTensor* ins[] = {in};
  GlintTensorList* alone = nullptr;
  ASSERT_EQ(glint_runtime_run(runtime, "mlp", ins, 1, nullptr, &alone),
            nullptr);
  const GlintTensor* want = nullptr;
  ASSERT_EQ(glint_tensor_list_get(alone, 0, &want), nullptr);
  const std::vector<float> expected = Floats(want);

  std::vector<std::unique_ptr<AsyncResult>> runs;
  for (int i = 0; i < 48; ++i) {
    runs.push_back(std::make_unique<AsyncResult>());
    ASSERT_EQ(glint_runtime_run_async(runtime, "mlp", ins, 1, nullptr, OnDone,
                                      runs.back().get()),
              nullptr);
  }
  int ok = 0;
  for (const auto& run : runs) {
    run->done.WaitForNotification();
    EXPECT_EQ(run->code, GLINT_OK) << run->message;
    if (run->code != GLINT_OK) continue;
    ++ok;
    const GlintTensor* got = nullptr;
    ASSERT_EQ(glint_tensor_list_get(run->outputs, 0, &got), nullptr);
    EXPECT_EQ(Floats(got), expected);
    glint_tensor_list_delete(run->outputs);
  }
  EXPECT_EQ(ok, 48);
  glint_tensor_list_delete(alone);
  glint_tensor_delete(in);
  EXPECT_EQ(glint_runtime_delete(runtime), nullptr);
}

}  // namespace
