// Interop with Open Inference Protocol (KServe v2) clients: a real glintd
// driven through a client compiled from KServe's own, unmodified
// open_inference_grpc.proto (third_party/protocols/kserve). The protocol
// has no model repository: networks are added through glint.v1, then
// health, metadata and inference go through OIP and are compared with ONNX
// node cases' expected outputs.
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/oip_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"
#include "third_party/protocols/kserve/open_inference_grpc.grpc.pb.h"

namespace glint {
namespace {

using inference::GRPCInferenceService;
using testing::GlintdProcess;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class OipInteropTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d = GlintdProcess::Start({});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
    stub_ = GRPCInferenceService::NewStub(grpc::CreateChannel(
        daemon_->address(), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (daemon_ == nullptr) return;
    // An idle synchronous channel is not polled, so it would answer the
    // daemon's graceful GOAWAY only at gRPC's 5 s backup poll, and glintd
    // would spend its shutdown grace waiting for it: close it first.
    stub_.reset();
    absl::StatusOr<int> code = daemon_->Stop(SIGTERM, absl::Seconds(20));
    ASSERT_TRUE(code.ok()) << code.status();
    EXPECT_EQ(*code, 0) << daemon_->Log();
  }

  // Adds the ONNX node case `name` through glint.v1.
  testing::OnnxCase AddCase(const std::string& name) {
    absl::StatusOr<testing::OnnxCase> c = testing::LoadOnnxNodeCase(name);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return {};
    absl::StatusOr<NetworkInfo> info = daemon_->client().AddNetwork(name, c->model);
    EXPECT_TRUE(info.ok()) << info.status();
    return *std::move(c);
  }

  inference::ModelInferRequest Request(const std::string& model,
                                       const std::vector<NamedTensor>& inputs,
                                       bool typed) {
    inference::ModelInferRequest request;
    request.set_model_name(model);
    for (const NamedTensor& t : inputs) {
      auto* in = request.add_inputs();
      in->set_name(t.name);
      in->set_datatype(testing::OipDatatypeOf(t.tensor.dtype()));
      for (int64_t d : t.tensor.shape().dims()) in->add_shape(d);
      if (typed) {
        EXPECT_TRUE(testing::FillTypedContents(t.tensor, in->mutable_contents()));
      } else {
        request.add_raw_input_contents(testing::RawBytes(t.tensor));
      }
    }
    return request;
  }

  grpc::Status Infer(const inference::ModelInferRequest& request,
                     inference::ModelInferResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    return stub_->ModelInfer(&context, request, response);
  }

  void ExpectOutputs(const inference::ModelInferResponse& response,
                     const std::vector<NamedTensor>& expected) {
    ASSERT_EQ(response.outputs_size(), static_cast<int>(expected.size()));
    ASSERT_EQ(response.raw_output_contents_size(), response.outputs_size());
    for (int i = 0; i < response.outputs_size(); ++i) {
      const auto& out = response.outputs(i);
      EXPECT_EQ(out.name(), expected[i].name);
      absl::StatusOr<Tensor> t = testing::TensorFromRaw(
          out.datatype(), {out.shape().begin(), out.shape().end()},
          response.raw_output_contents(i));
      ASSERT_TRUE(t.ok()) << t.status();
      EXPECT_EQ(testing::CompareTensors(*t, expected[i].tensor), "")
          << "output '" << out.name() << "'";
    }
  }

  std::unique_ptr<GlintdProcess> daemon_;
  std::unique_ptr<GRPCInferenceService::Stub> stub_;
};

TEST_F(OipInteropTest, HealthMetadataInfer) {
  inference::ServerLiveResponse live;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub_->ServerLive(&c1, inference::ServerLiveRequest(), &live).ok());
  EXPECT_TRUE(live.live());
  inference::ServerReadyResponse ready;
  grpc::ClientContext c2;
  ASSERT_TRUE(
      stub_->ServerReady(&c2, inference::ServerReadyRequest(), &ready).ok());
  EXPECT_TRUE(ready.ready());
  inference::ServerMetadataResponse server;
  grpc::ClientContext c3;
  ASSERT_TRUE(
      stub_->ServerMetadata(&c3, inference::ServerMetadataRequest(), &server)
          .ok());
  EXPECT_EQ(server.name(), "glint");

  const testing::OnnxCase c = AddCase("test_where_example");
  ASSERT_FALSE(c.inputs.empty());
  inference::ModelReadyRequest ready_request;
  ready_request.set_name("test_where_example");
  inference::ModelReadyResponse model_ready;
  grpc::ClientContext c4;
  ASSERT_TRUE(stub_->ModelReady(&c4, ready_request, &model_ready).ok());
  EXPECT_TRUE(model_ready.ready());

  inference::ModelMetadataRequest meta_request;
  meta_request.set_name("test_where_example");
  inference::ModelMetadataResponse meta;
  grpc::ClientContext c5;
  ASSERT_TRUE(stub_->ModelMetadata(&c5, meta_request, &meta).ok());
  EXPECT_THAT(meta.versions(), ElementsAre("1"));
  ASSERT_EQ(meta.inputs_size(), 3);
  EXPECT_EQ(meta.inputs(0).name(), "condition");
  EXPECT_EQ(meta.inputs(0).datatype(), "BOOL");
  EXPECT_THAT(meta.inputs(0).shape(), ElementsAre(2, 2));
  EXPECT_EQ(meta.inputs(1).datatype(), "FP32");
  ASSERT_EQ(meta.outputs_size(), 1);
  EXPECT_EQ(meta.outputs(0).name(), "z");
  EXPECT_EQ(meta.outputs(0).datatype(), "FP32");

  for (bool typed : {false, true}) {
    SCOPED_TRACE(typed ? "typed contents" : "raw contents");
    inference::ModelInferRequest request =
        Request("test_where_example", c.inputs, typed);
    request.set_id(typed ? "typed" : "raw");
    request.add_outputs()->set_name("z");
    inference::ModelInferResponse out;
    grpc::Status s = Infer(request, &out);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(out.id(), request.id());
    EXPECT_EQ(out.model_name(), "test_where_example");
    ExpectOutputs(out, c.outputs);
  }
}

TEST_F(OipInteropTest, ErrorCodes) {
  const testing::OnnxCase c = AddCase("test_matmul_2d");
  ASSERT_FALSE(c.inputs.empty());
  inference::ModelInferResponse out;
  ASSERT_TRUE(Infer(Request("test_matmul_2d", c.inputs, false), &out).ok());
  ExpectOutputs(out, c.outputs);

  EXPECT_EQ(Infer(Request("absent", c.inputs, false), &out).error_code(),
            grpc::StatusCode::NOT_FOUND);
  inference::ModelInferRequest version = Request("test_matmul_2d", c.inputs, false);
  version.set_model_version("3");
  EXPECT_EQ(Infer(version, &out).error_code(), grpc::StatusCode::NOT_FOUND);
  inference::ModelInferRequest bytes = Request("test_matmul_2d", c.inputs, true);
  bytes.mutable_inputs(1)->set_datatype("BYTES");
  grpc::Status s = Infer(bytes, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("BYTES"));
  inference::ModelInferRequest count = Request("test_matmul_2d", c.inputs, true);
  count.mutable_inputs(0)->mutable_contents()->add_fp32_contents(1);
  s = Infer(count, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("holds 13 values"));

  inference::ModelReadyRequest ready_request;
  ready_request.set_name("absent");
  inference::ModelReadyResponse ready;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub_->ModelReady(&c1, ready_request, &ready).ok());
  EXPECT_FALSE(ready.ready());
  inference::ModelMetadataRequest meta_request;
  meta_request.set_name("absent");
  inference::ModelMetadataResponse meta;
  grpc::ClientContext c2;
  EXPECT_EQ(stub_->ModelMetadata(&c2, meta_request, &meta).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace glint
