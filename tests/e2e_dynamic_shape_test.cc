// Data-dependent output shapes through a real glintd: a detection head
// (NonMaxSuppression, then a Gather of the selected boxes) split by a user
// plan over two sim devices, so the [N, 3] selection crosses devices. Each
// run's outputs come back over glint.v1 (read from the wire message, not
// through Glint's client library) and over Triton's ModelInfer (a client
// compiled from Triton's unmodified grpc_service.proto) with exactly the
// shapes and values the data gives, N = 0 included; metadata reports the
// data-dependent dimension as unknown.
#include <grpcpp/grpcpp.h>

#include <csignal>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "onnx/test_models.h"
#include "proto/glint.grpc.pb.h"
#include "tests/process_util.h"
#include "third_party/protocols/triton/grpc_service.grpc.pb.h"

namespace glint {
namespace {

using ::glint::testing::OnnxModelBuilder;
using ::glint::testing::SetAttribute;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::GlintdProcess;

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

// Six boxes [y1, x1, y2, x2]: 0-2 overlap, 3-4 overlap, 5 is alone.
const std::vector<float> kBoxes = {0, 0,     1, 1,     0, 0.1f, 1, 1.1f,
                                   0, -0.1f, 1, 0.9f,  0, 10,   1, 11,
                                   0, 10.1f, 1, 11.1f, 0, 100,  1, 101};

// selected = NMS(boxes, scores; at most 3, IoU 0.5, score > 0.05) on
// logical device 0; picked = boxes[:, selected[:, 2], :] on device 1.
std::string NmsGatherModel() {
  OnnxModelBuilder b(11);
  b.Input("boxes", kFloat, {1, 6, 4})
      .Input("scores", kFloat, {1, 1, 6})
      .Output("selected", kInt64)
      .Output("picked", kFloat);
  onnx::GraphProto* g = b.mutable_proto().mutable_graph();
  for (auto [name, value] :
       {std::pair<const char*, int64_t>{"max_out", 3}, {"col", 2}}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(kInt64);
    if (std::string(name) == "max_out") t->add_dims(1);
    t->add_int64_data(value);
  }
  b.FloatInitializer("iou", {1}, {0.5f});
  b.FloatInitializer("score", {1}, {0.05f});
  b.Node("NonMaxSuppression", {"boxes", "scores", "max_out", "iou", "score"},
         {"selected"}, "nms");
  SetAttribute(b.Node("Gather", {"selected", "col"}, {"box_index"}, "column"),
               "axis", int64_t{1});
  SetAttribute(b.Node("Gather", {"boxes", "box_index"}, {"picked"}, "pick"),
               "axis", int64_t{1});
  return b.Serialize();
}

struct Case {
  std::vector<float> scores;
  std::vector<int64_t> selected_boxes;  // In selection order.
};
const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {{0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f}, {3, 0, 5}},
      {{0.1f, 0.2f, 0.9f, 0.1f, 0.1f, 0.1f}, {2, 3, 5}},
      {{0, 0, 0, 0, 0.01f, 0}, {}},  // Nothing above the score threshold.
      {{0, 0, 0, 0, 0.5f, 0}, {4}},
  };
  return *cases;
}

std::vector<int64_t> WantSelected(const Case& c) {
  std::vector<int64_t> v;
  for (int64_t box : c.selected_boxes) v.insert(v.end(), {0, 0, box});
  return v;
}
std::vector<float> WantPicked(const Case& c) {
  std::vector<float> v;
  for (int64_t box : c.selected_boxes) {
    v.insert(v.end(), kBoxes.begin() + box * 4, kBoxes.begin() + box * 4 + 4);
  }
  return v;
}

template <typename T>
std::vector<T> FromBytes(const std::string& bytes) {
  std::vector<T> v(bytes.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}
std::string ToBytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(float));
}

class DynamicShapeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start({"--devices=sim*2"});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
    auto channel = grpc::CreateChannel(daemon_->address(),
                                       grpc::InsecureChannelCredentials());
    glint_ = v1::HostManager::NewStub(channel);
    triton_ = inference::GRPCInferenceService::NewStub(channel);
    AddNetworkOptions options;
    options.partition.strategy = PartitionStrategy::kUser;
    options.partition.user_plan = {{"nms", 0}, {"*", 1}};
    absl::StatusOr<NetworkInfo> info =
        daemon_->client().AddNetwork("nms", NmsGatherModel(), options);
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_EQ(info->partitions.size(), 2u);
    EXPECT_NE(info->partitions[0].device_id, info->partitions[1].device_id);
    EXPECT_THAT(info->partitions[1].inputs, ::testing::Contains("selected"));
  }

  void TearDown() override {
    if (daemon_ == nullptr) return;
    // Idle channels would hold glintd's graceful shutdown (see
    // e2e_oip_test): close them first.
    glint_.reset();
    triton_.reset();
    absl::StatusOr<int> code = daemon_->Stop(SIGTERM, absl::Seconds(20));
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(*code, 0) << daemon_->Log();
  }

  std::unique_ptr<GlintdProcess> daemon_;
  std::unique_ptr<v1::HostManager::Stub> glint_;
  std::unique_ptr<inference::GRPCInferenceService::Stub> triton_;
};

void Deadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(30));
}

TEST_F(DynamicShapeTest, GlintV1RepliesCarryTheDataDependentShapes) {
  absl::StatusOr<NetworkInfo> info = daemon_->client().GetNetwork("nms");
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->outputs.size(), 2u);
  EXPECT_EQ(info->outputs[0].shape, Shape({Shape::kUnknownDim, 3}));
  EXPECT_EQ(info->outputs[1].shape, Shape({1, Shape::kUnknownDim, 4}));
  for (const Case& c : Cases()) {
    v1::RunNetworkRequest request;
    request.set_name("nms");
    v1::Tensor* boxes = request.add_inputs();
    boxes->set_name("boxes");
    boxes->set_dtype(v1::DATA_TYPE_FLOAT32);
    for (int64_t d : {1, 6, 4}) boxes->add_shape(d);
    boxes->set_raw_data(ToBytes(kBoxes));
    v1::Tensor* scores = request.add_inputs();
    scores->set_name("scores");
    scores->set_dtype(v1::DATA_TYPE_FLOAT32);
    for (int64_t d : {1, 1, 6}) scores->add_shape(d);
    scores->set_raw_data(ToBytes(c.scores));
    v1::RunNetworkResponse response;
    grpc::ClientContext context;
    Deadline(&context);
    grpc::Status s = glint_->RunNetwork(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(response.outputs_size(), 2);
    const int64_t n = static_cast<int64_t>(c.selected_boxes.size());
    const v1::Tensor& selected = response.outputs(0);
    EXPECT_EQ(selected.name(), "selected");
    EXPECT_EQ(selected.dtype(), v1::DATA_TYPE_INT64);
    EXPECT_THAT(selected.shape(), ElementsAre(n, 3));
    EXPECT_THAT(FromBytes<int64_t>(selected.raw_data()),
                ElementsAreArray(WantSelected(c)));
    EXPECT_EQ(selected.raw_data().size(), n * 3 * sizeof(int64_t));
    const v1::Tensor& picked = response.outputs(1);
    EXPECT_EQ(picked.name(), "picked");
    EXPECT_EQ(picked.dtype(), v1::DATA_TYPE_FLOAT32);
    EXPECT_THAT(picked.shape(), ElementsAre(1, n, 4));
    EXPECT_THAT(FromBytes<float>(picked.raw_data()),
                ElementsAreArray(WantPicked(c)));
    EXPECT_EQ(picked.raw_data().size(), n * 4 * sizeof(float));
  }
}

TEST_F(DynamicShapeTest, TritonModelInferRepliesCarryTheDataDependentShapes) {
  inference::ModelMetadataRequest meta_request;
  meta_request.set_name("nms");
  inference::ModelMetadataResponse meta;
  grpc::ClientContext mc;
  Deadline(&mc);
  ASSERT_TRUE(triton_->ModelMetadata(&mc, meta_request, &meta).ok());
  ASSERT_EQ(meta.outputs_size(), 2);
  EXPECT_EQ(meta.outputs(0).datatype(), "INT64");
  EXPECT_THAT(meta.outputs(0).shape(), ElementsAre(-1, 3));
  EXPECT_THAT(meta.outputs(1).shape(), ElementsAre(1, -1, 4));

  for (const Case& c : Cases()) {
    inference::ModelInferRequest request;
    request.set_model_name("nms");
    auto* boxes = request.add_inputs();
    boxes->set_name("boxes");
    boxes->set_datatype("FP32");
    for (int64_t d : {1, 6, 4}) boxes->add_shape(d);
    request.add_raw_input_contents(ToBytes(kBoxes));
    auto* scores = request.add_inputs();
    scores->set_name("scores");
    scores->set_datatype("FP32");
    for (int64_t d : {1, 1, 6}) scores->add_shape(d);
    request.add_raw_input_contents(ToBytes(c.scores));
    inference::ModelInferResponse response;
    grpc::ClientContext context;
    Deadline(&context);
    grpc::Status s = triton_->ModelInfer(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(response.outputs_size(), 2);
    ASSERT_EQ(response.raw_output_contents_size(), 2);
    const int64_t n = static_cast<int64_t>(c.selected_boxes.size());
    EXPECT_EQ(response.outputs(0).name(), "selected");
    EXPECT_EQ(response.outputs(0).datatype(), "INT64");
    EXPECT_THAT(response.outputs(0).shape(), ElementsAre(n, 3));
    EXPECT_THAT(FromBytes<int64_t>(response.raw_output_contents(0)),
                ElementsAreArray(WantSelected(c)));
    EXPECT_EQ(response.raw_output_contents(0).size(), n * 3 * sizeof(int64_t));
    EXPECT_EQ(response.outputs(1).name(), "picked");
    EXPECT_EQ(response.outputs(1).datatype(), "FP32");
    EXPECT_THAT(response.outputs(1).shape(), ElementsAre(1, n, 4));
    EXPECT_THAT(FromBytes<float>(response.raw_output_contents(1)),
                ElementsAreArray(WantPicked(c)));
    EXPECT_EQ(response.raw_output_contents(1).size(), n * 4 * sizeof(float));
  }
}

}  // namespace
}  // namespace glint
