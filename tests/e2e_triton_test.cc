// Interop with Triton clients: a real glintd driven through a client
// compiled from Triton's own, unmodified grpc_service.proto and
// model_config.proto (third_party/protocols/triton), so what is proven is
// wire compatibility with definitions no one here wrote.
//
// The model repository flow (RepositoryModelLoad with the model's bytes in
// `file:1/model.onnx` and a `config` JSON, ModelReady, ModelMetadata,
// ModelConfig, ModelInfer with raw and typed contents compared with the
// ONNX node cases' expected outputs, ModelStatistics, RepositoryIndex,
// RepositoryModelUnload), datatypes through typed contents, a dynamic dim
// beside the batch with its bound, the error codes, a network shared with
// glint.v1 in both directions, and Triton's
// system shared memory (a POSIX object registered through either service,
// inputs and outputs in it, its bounds errors).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <csignal>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/shared_memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "tests/oip_test_util.h"
#include "tests/process_util.h"
#include "tests/test_util.h"
#include "third_party/protocols/triton/grpc_service.grpc.pb.h"
#include "third_party/protocols/triton/model_config.pb.h"

namespace glint {
namespace {

using inference::GRPCInferenceService;
using testing::GlintdProcess;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TritonInteropTest : public ::testing::Test {
 protected:
  // One daemon for the suite, with four devices for the placement case.
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start({"--devices=sim*4:memory=256MiB"});
    if (!d.ok()) {
      start_error_ = new std::string(d.status().ToString());
      return;
    }
    daemon_ = d->release();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    args.SetMaxSendMessageSize(64 << 20);
    stub_ = GRPCInferenceService::NewStub(grpc::CreateCustomChannel(
                daemon_->address(), grpc::InsecureChannelCredentials(), args))
                .release();
  }

  static void TearDownTestSuite() {
    delete stub_;
    stub_ = nullptr;
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

  void SetUp() override {
    ASSERT_NE(daemon_, nullptr) << "glintd did not start: " << *start_error_;
  }

  static grpc::Status Load(const std::string& name, const std::string& onnx,
                           const std::string& config = "") {
    inference::RepositoryModelLoadRequest request;
    request.set_model_name(name);
    // As Triton's clients send a model's files: "file:<version>/<name>".
    if (!onnx.empty()) {
      (*request.mutable_parameters())["file:1/model.onnx"].set_bytes_param(
          onnx);
    }
    if (!config.empty()) {
      (*request.mutable_parameters())["config"].set_string_param(config);
    }
    inference::RepositoryModelLoadResponse response;
    grpc::ClientContext context;
    return stub_->RepositoryModelLoad(&context, request, &response);
  }

  static grpc::Status Unload(const std::string& name) {
    inference::RepositoryModelUnloadRequest request;
    request.set_model_name(name);
    inference::RepositoryModelUnloadResponse response;
    grpc::ClientContext context;
    return stub_->RepositoryModelUnload(&context, request, &response);
  }

  // ModelConfig and ModelMetadata of model `name`.
  static grpc::Status Config(const std::string& name,
                             inference::ModelConfigResponse* response) {
    inference::ModelConfigRequest request;
    request.set_name(name);
    grpc::ClientContext context;
    return stub_->ModelConfig(&context, request, response);
  }
  static grpc::Status Metadata(const std::string& name,
                               inference::ModelMetadataResponse* response) {
    inference::ModelMetadataRequest request;
    request.set_name(name);
    grpc::ClientContext context;
    return stub_->ModelMetadata(&context, request, response);
  }

  static bool ModelReady(const std::string& name) {
    inference::ModelReadyRequest request;
    request.set_name(name);
    inference::ModelReadyResponse response;
    grpc::ClientContext context;
    grpc::Status s = stub_->ModelReady(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.ready();
  }

  // A request for `model` carrying `inputs` raw, or typed where the
  // datatype has a typed field (`typed`).
  static inference::ModelInferRequest Request(
      const std::string& model, const std::vector<NamedTensor>& inputs,
      bool typed) {
    inference::ModelInferRequest request;
    request.set_model_name(model);
    for (const NamedTensor& t : inputs) {
      auto* in = request.add_inputs();
      in->set_name(t.name);
      in->set_datatype(testing::OipDatatypeOf(t.tensor.dtype()));
      for (int64_t d : t.tensor.shape().dims()) in->add_shape(d);
      if (typed) {
        EXPECT_TRUE(
            testing::FillTypedContents(t.tensor, in->mutable_contents()))
            << t.name << " has no typed field";
      } else {
        request.add_raw_input_contents(testing::RawBytes(t.tensor));
      }
    }
    return request;
  }

  static grpc::Status Infer(const inference::ModelInferRequest& request,
                            inference::ModelInferResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(30));
    return stub_->ModelInfer(&context, request, response);
  }

  // The reply's outputs equal `expected` (names, datatypes, values).
  static void ExpectOutputs(const inference::ModelInferResponse& response,
                            const std::vector<NamedTensor>& expected) {
    ASSERT_EQ(response.outputs_size(), static_cast<int>(expected.size()));
    ASSERT_EQ(response.raw_output_contents_size(), response.outputs_size());
    for (int i = 0; i < response.outputs_size(); ++i) {
      const auto& out = response.outputs(i);
      EXPECT_EQ(out.name(), expected[i].name);
      EXPECT_EQ(out.datatype(), testing::OipDatatypeOf(expected[i].tensor.dtype()));
      absl::StatusOr<Tensor> t = testing::TensorFromRaw(
          out.datatype(), {out.shape().begin(), out.shape().end()},
          response.raw_output_contents(i));
      ASSERT_TRUE(t.ok()) << out.name() << ": " << t.status();
      EXPECT_EQ(testing::CompareTensors(*t, expected[i].tensor), "")
          << "output '" << out.name() << "'";
    }
  }

  static inference::ModelStatistics Statistics(const std::string& name) {
    inference::ModelStatisticsRequest request;
    request.set_name(name);
    inference::ModelStatisticsResponse response;
    grpc::ClientContext context;
    grpc::Status s = stub_->ModelStatistics(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.model_stats_size(), 1);
    return response.model_stats_size() == 1 ? response.model_stats(0)
                                             : inference::ModelStatistics();
  }

  static std::set<std::string> IndexNames() {
    inference::RepositoryIndexResponse index;
    grpc::ClientContext context;
    EXPECT_TRUE(
        stub_->RepositoryIndex(&context, inference::RepositoryIndexRequest(),
                               &index)
            .ok());
    std::set<std::string> names;
    for (const auto& m : index.models()) {
      EXPECT_EQ(m.state(), "READY") << m.name() << ": " << m.reason();
      names.insert(m.name());
    }
    return names;
  }

  static GlintdProcess* daemon_;
  static std::string* start_error_;
  static GRPCInferenceService::Stub* stub_;
};

GlintdProcess* TritonInteropTest::daemon_ = nullptr;
std::string* TritonInteropTest::start_error_ = nullptr;
GRPCInferenceService::Stub* TritonInteropTest::stub_ = nullptr;

TEST_F(TritonInteropTest, HealthAndServerMetadata) {
  inference::ServerLiveResponse live;
  grpc::ClientContext c1;
  ASSERT_TRUE(
      stub_->ServerLive(&c1, inference::ServerLiveRequest(), &live).ok());
  EXPECT_TRUE(live.live());
  // GlintdProcess waited for SERVING: the restore is done.
  inference::ServerReadyResponse ready;
  grpc::ClientContext c2;
  ASSERT_TRUE(
      stub_->ServerReady(&c2, inference::ServerReadyRequest(), &ready).ok());
  EXPECT_TRUE(ready.ready());
  inference::ServerMetadataResponse meta;
  grpc::ClientContext c3;
  ASSERT_TRUE(
      stub_->ServerMetadata(&c3, inference::ServerMetadataRequest(), &meta)
          .ok());
  EXPECT_EQ(meta.name(), "glint");
  EXPECT_FALSE(meta.version().empty());
  EXPECT_THAT(
      meta.extensions(),
      ::testing::IsSupersetOf({"model_repository", "statistics",
                               "model_configuration", "system_shared_memory"}));
}

// The whole repository flow on ONNX's MatMul node case.
TEST_F(TritonInteropTest, LoadDescribeInferStatisticsUnload) {
  absl::StatusOr<testing::OnnxCase> c =
      testing::LoadOnnxNodeCase("test_matmul_2d");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(Load("matmul", c->model,
                   R"({"name": "matmul", "platform": "onnxruntime_onnx",
                       "max_batch_size": 0,
                       "input": [{"name": "a", "data_type": "TYPE_FP32",
                                  "dims": [3, 4]}],
                       "output": [{"name": "c", "data_type": "TYPE_FP32",
                                   "dims": [3, 3]}],
                       "instance_group": [{"count": 1, "kind": "KIND_AUTO"}]})")
                  .ok());
  EXPECT_TRUE(ModelReady("matmul"));
  EXPECT_EQ(IndexNames().count("matmul"), 1u);

  inference::ModelMetadataRequest meta_request;
  meta_request.set_name("matmul");
  inference::ModelMetadataResponse meta;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub_->ModelMetadata(&c1, meta_request, &meta).ok());
  EXPECT_EQ(meta.name(), "matmul");
  EXPECT_THAT(meta.versions(), ElementsAre("1"));
  EXPECT_EQ(meta.platform(), "glint_onnx");
  ASSERT_EQ(meta.inputs_size(), 2);
  EXPECT_EQ(meta.inputs(0).name(), "a");
  EXPECT_EQ(meta.inputs(0).datatype(), "FP32");
  EXPECT_THAT(meta.inputs(0).shape(), ElementsAre(3, 4));
  EXPECT_THAT(meta.inputs(1).shape(), ElementsAre(4, 3));
  ASSERT_EQ(meta.outputs_size(), 1);
  EXPECT_EQ(meta.outputs(0).name(), "c");
  EXPECT_THAT(meta.outputs(0).shape(), ElementsAre(3, 3));

  inference::ModelConfigRequest config_request;
  config_request.set_name("matmul");
  config_request.set_version("1");
  inference::ModelConfigResponse config;
  grpc::ClientContext c2;
  ASSERT_TRUE(stub_->ModelConfig(&c2, config_request, &config).ok());
  const inference::ModelConfig& mc = config.config();
  EXPECT_EQ(mc.name(), "matmul");
  EXPECT_EQ(mc.platform(), "glint_onnx");
  EXPECT_EQ(mc.backend(), "glint");
  EXPECT_EQ(mc.max_batch_size(), 0);
  ASSERT_EQ(mc.input_size(), 2);
  EXPECT_EQ(mc.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_THAT(mc.input(0).dims(), ElementsAre(3, 4));
  ASSERT_EQ(mc.output_size(), 1);
  EXPECT_THAT(mc.output(0).dims(), ElementsAre(3, 3));
  ASSERT_EQ(mc.instance_group_size(), 1);
  EXPECT_EQ(mc.instance_group(0).count(), 1);
  EXPECT_EQ(mc.instance_group(0).kind(),
            inference::ModelInstanceGroup::KIND_MODEL);
  EXPECT_EQ(mc.instance_group(0).gpus_size(), 1);
  EXPECT_FALSE(mc.has_dynamic_batching());

  // Raw contents, with an id echoed and output selection.
  inference::ModelInferRequest raw = Request("matmul", c->inputs, false);
  raw.set_id("raw-1");
  raw.add_outputs()->set_name("c");
  inference::ModelInferResponse raw_out;
  grpc::Status s = Infer(raw, &raw_out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(raw_out.id(), "raw-1");
  EXPECT_EQ(raw_out.model_name(), "matmul");
  EXPECT_EQ(raw_out.model_version(), "1");
  ExpectOutputs(raw_out, c->outputs);

  // Typed contents, with a priority and a timeout (schedule_policy).
  inference::ModelInferRequest typed = Request("matmul", c->inputs, true);
  (*typed.mutable_parameters())["priority"].set_uint64_param(1);
  (*typed.mutable_parameters())["timeout"].set_int64_param(20'000'000);
  inference::ModelInferResponse typed_out;
  s = Infer(typed, &typed_out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(typed_out.id().empty());
  ExpectOutputs(typed_out, c->outputs);

  // A request of the wrong shape for the model fails in the runtime.
  inference::ModelInferRequest wrong = Request("matmul", c->inputs, false);
  wrong.mutable_inputs(0)->set_shape(0, 4);
  wrong.mutable_inputs(0)->set_shape(1, 3);
  inference::ModelInferResponse wrong_out;
  EXPECT_EQ(Infer(wrong, &wrong_out).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  const inference::ModelStatistics stats = Statistics("matmul");
  EXPECT_EQ(stats.name(), "matmul");
  EXPECT_EQ(stats.version(), "1");
  EXPECT_EQ(stats.inference_count(), 3u);
  EXPECT_EQ(stats.execution_count(), 2u);
  EXPECT_GT(stats.last_inference(), 0u);
  const inference::InferStatistics& is = stats.inference_stats();
  EXPECT_EQ(is.success().count(), 2u);
  EXPECT_GT(is.success().ns(), 0u);
  EXPECT_EQ(is.fail().count(), 1u);
  EXPECT_EQ(is.queue().count(), 2u);
  EXPECT_EQ(is.compute_input().count(), 2u);
  EXPECT_EQ(is.compute_infer().count(), 2u);
  EXPECT_GT(is.compute_infer().ns(), 0u);
  EXPECT_EQ(is.compute_output().count(), 2u);

  ASSERT_TRUE(Unload("matmul").ok());
  EXPECT_FALSE(ModelReady("matmul"));
  EXPECT_EQ(IndexNames().count("matmul"), 0u);
  inference::ModelInferResponse gone;
  EXPECT_EQ(Infer(raw, &gone).error_code(), grpc::StatusCode::NOT_FOUND);
}

// Datatypes other than FP32, each in its typed contents field (FP16 has
// none: raw), compared with ONNX's expected outputs.
TEST_F(TritonInteropTest, DatatypesThroughTypedContents) {
  struct Case {
    const char* name;
    bool typed;
  };
  for (const Case& k : {Case{"test_and2d", true},            // BOOL
                        Case{"test_add_uint8", true},        // UINT8
                        Case{"test_clip_default_int8_inbounds", true},  // INT8
                        Case{"test_gathernd_example_int32", true},  // INT32, INT64
                        Case{"test_bitshift_left_uint64", true},    // UINT64
                        Case{"test_where_example", true},    // BOOL, FP32
                        Case{"test_cast_FLOAT16_to_DOUBLE", false}}) {  // FP16 → FP64
    SCOPED_TRACE(k.name);
    absl::StatusOr<testing::OnnxCase> c = testing::LoadOnnxNodeCase(k.name);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_TRUE(Load(k.name, c->model).ok());
    inference::ModelInferResponse out;
    grpc::Status s = Infer(Request(k.name, c->inputs, k.typed), &out);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ExpectOutputs(out, c->outputs);
    ASSERT_TRUE(Unload(k.name).ok());
  }
}

// Dynamic batching and placement in the config come back in ModelConfig
// (and glint.v1 sees the same plan).
TEST_F(TritonInteropTest, ConfigBatchingAndPlacement) {
  // y = Relu(x), x: float[N, 4] with a symbolic batch dimension.
  testing::OnnxModelBuilder relu;
  relu.Input("x", 1, {-1, 4}).Output("y", 1, {-1, 4});
  relu.Node("Relu", {"x"}, {"y"});
  ASSERT_TRUE(Load("batched", relu.Serialize(),
                   R"({"max_batch_size": 4,
                       "dynamic_batching": {
                         "max_queue_delay_microseconds": 500,
                         "preferred_batch_size": [2, 4]},
                       "input": [{"name": "x", "data_type": "TYPE_FP32",
                                  "dims": [4]}]})")
                  .ok());
  inference::ModelConfigResponse config;
  ASSERT_TRUE(Config("batched", &config).ok());
  EXPECT_EQ(config.config().max_batch_size(), 4);
  ASSERT_TRUE(config.config().has_dynamic_batching());
  EXPECT_EQ(config.config().dynamic_batching().max_queue_delay_microseconds(),
            500u);
  EXPECT_THAT(config.config().dynamic_batching().preferred_batch_size(),
              ElementsAre(2, 4));
  EXPECT_THAT(config.config().input(0).dims(), ElementsAre(4));
  inference::ModelMetadataResponse meta;
  ASSERT_TRUE(Metadata("batched", &meta).ok());
  EXPECT_THAT(meta.inputs(0).shape(), ElementsAre(-1, 4));
  // Requests of one and of three rows run (each its own rows back).
  for (int rows : {1, 3}) {
    std::vector<float> x(4 * rows), y(4 * rows);
    for (int i = 0; i < 4 * rows; ++i) {
      x[i] = static_cast<float>(i % 5) - 2;
      y[i] = std::max(x[i], 0.0f);
    }
    inference::ModelInferResponse out;
    grpc::Status s = Infer(
        Request("batched",
                {{"x", Tensor::FromVector<float>(DType::kFloat32,
                                                 Shape({rows, 4}), x)}},
                false),
        &out);
    ASSERT_TRUE(s.ok()) << rows << " rows: " << s.error_message();
    ExpectOutputs(out, {{"y", Tensor::FromVector<float>(
                                  DType::kFloat32, Shape({rows, 4}), y)}});
  }
  ASSERT_TRUE(Unload("batched").ok());

  // Two replicas, each split over two of the four devices.
  ASSERT_TRUE(Load("placed", testing::MakeDeepMlpModel(1, 64, 4),
                   R"({"instance_group": [{"count": 2, "kind": "KIND_GPU"}],
                       "parameters": {
                         "partition_strategy": {"string_value": "load_balanced"},
                         "plan_devices": {"string_value": "2"}}})")
                  .ok());
  ASSERT_TRUE(Config("placed", &config).ok());
  ASSERT_EQ(config.config().instance_group_size(), 2);
  std::set<int> devices;
  for (const auto& g : config.config().instance_group()) {
    EXPECT_EQ(g.gpus_size(), 2);
    devices.insert(g.gpus().begin(), g.gpus().end());
  }
  EXPECT_EQ(devices.size(), 4u);  // Disjoint.
  EXPECT_EQ(config.config().parameters().at("partition_strategy").string_value(),
            "load_balanced");
  absl::StatusOr<NetworkInfo> info = daemon_->client().GetNetwork("placed");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->replicas, 2);
  EXPECT_EQ(info->strategy, "load_balanced");
  ASSERT_TRUE(Unload("placed").ok());
}

// A config with max_batch_size and an input dim of -1 keeps that dim
// dynamic beside the batch, bounded by parameters.max_dims: ModelConfig
// and ModelMetadata say -1 and give the bound back, requests of any length
// within it run, and one over it is INVALID_ARGUMENT.
TEST_F(TritonInteropTest, ConfigWithADynamicDimBesideTheBatch) {
  // y = Relu(x), x: float[N, S].
  testing::OnnxModelBuilder relu;
  relu.Input("x", 1, {-1, -1}).Output("y", 1, {-1, -1});
  relu.Node("Relu", {"x"}, {"y"});
  onnx::ModelProto& proto = relu.mutable_proto();
  for (auto* value : {proto.mutable_graph()->mutable_input(0),
                      proto.mutable_graph()->mutable_output(0)}) {
    value->mutable_type()->mutable_tensor_type()->mutable_shape()
        ->mutable_dim(1)->set_dim_param("S");
  }
  ASSERT_TRUE(Load("seqbatch", proto.SerializeAsString(),
                   R"({"max_batch_size": 4, "dynamic_batching": {},
                       "input": [{"name": "x", "data_type": "TYPE_FP32",
                                  "dims": [-1]}],
                       "parameters": {"max_dims": {"string_value": "S=16"}}})")
                  .ok());
  inference::ModelConfigResponse config;
  ASSERT_TRUE(Config("seqbatch", &config).ok());
  EXPECT_EQ(config.config().max_batch_size(), 4);
  EXPECT_THAT(config.config().input(0).dims(), ElementsAre(-1));
  EXPECT_EQ(config.config().parameters().at("max_dims").string_value(), "S=16");
  inference::ModelMetadataResponse meta;
  ASSERT_TRUE(Metadata("seqbatch", &meta).ok());
  EXPECT_THAT(meta.inputs(0).shape(), ElementsAre(-1, -1));
  for (const auto& [rows, length] : {std::pair<int, int>{1, 3}, {3, 16}}) {
    std::vector<float> x(rows * length), y(rows * length);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(i % 7) - 3;
      y[i] = std::max(x[i], 0.0f);
    }
    const Shape shape({rows, length});
    inference::ModelInferResponse out;
    grpc::Status s = Infer(
        Request("seqbatch",
                {{"x", Tensor::FromVector<float>(DType::kFloat32, shape, x)}},
                false),
        &out);
    ASSERT_TRUE(s.ok()) << shape.ToString() << ": " << s.error_message();
    ExpectOutputs(out, {{"y", Tensor::FromVector<float>(DType::kFloat32,
                                                        shape, y)}});
  }
  inference::ModelInferResponse over;
  grpc::Status s = Infer(
      Request("seqbatch",
              {{"x", Tensor::FromVector<float>(DType::kFloat32, Shape({1, 17}),
                                               std::vector<float>(17, 1.0f))}},
              false),
      &over);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("over its bound 16"));
  ASSERT_TRUE(Unload("seqbatch").ok());
}

TEST_F(TritonInteropTest, ErrorCodes) {
  absl::StatusOr<testing::OnnxCase> c = testing::LoadOnnxNodeCase("test_add");
  ASSERT_TRUE(c.ok()) << c.status();
  inference::ModelInferResponse out;
  grpc::Status s = Infer(Request("nobody", c->inputs, false), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();

  ASSERT_TRUE(Load("add", c->model).ok());
  inference::ModelInferRequest v2 = Request("add", c->inputs, false);
  v2.set_model_version("2");
  EXPECT_EQ(Infer(v2, &out).error_code(), grpc::StatusCode::NOT_FOUND);
  inference::ModelInferRequest bytes = Request("add", c->inputs, false);
  bytes.mutable_inputs(0)->set_datatype("BYTES");
  s = Infer(bytes, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("BYTES"));
  inference::ModelInferRequest bad_type = Request("add", c->inputs, false);
  bad_type.mutable_inputs(0)->set_datatype("FLOAT32");
  EXPECT_EQ(Infer(bad_type, &out).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  inference::ModelInferRequest short_raw = Request("add", c->inputs, false);
  short_raw.mutable_raw_input_contents(1)->pop_back();
  s = Infer(short_raw, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("raw_input_contents[1]"));
  inference::ModelInferRequest unknown = Request("add", c->inputs, false);
  (*unknown.mutable_parameters())["colour"].set_string_param("red");
  EXPECT_EQ(Infer(unknown, &out).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  inference::ModelMetadataResponse meta;
  EXPECT_EQ(Metadata("nobody", &meta).error_code(),
            grpc::StatusCode::NOT_FOUND);

  EXPECT_EQ(Load("add", c->model).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_EQ(Load("junk", "not an onnx model").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  s = Load("cfg", c->model, R"({"sequence_batching": {}})");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("sequence_batching"));
  EXPECT_FALSE(ModelReady("cfg"));
  EXPECT_EQ(Unload("nobody").error_code(), grpc::StatusCode::NOT_FOUND);

  // Triton RPCs glintd does not implement say so.
  grpc::ClientContext c2;
  auto stream = stub_->ModelStreamInfer(&c2);
  stream->WritesDone();
  inference::ModelStreamInferResponse ignored;
  EXPECT_FALSE(stream->Read(&ignored));
  s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(s.error_message(), HasSubstr("ModelStreamInfer"));
  inference::CudaSharedMemoryRegisterResponse cuda;
  grpc::ClientContext c3;
  s = stub_->CudaSharedMemoryRegister(
      &c3, inference::CudaSharedMemoryRegisterRequest(), &cuda);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  inference::TraceSettingResponse trace;
  grpc::ClientContext c4;
  s = stub_->TraceSetting(&c4, inference::TraceSettingRequest(), &trace);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);

  // The daemon still serves.
  ASSERT_TRUE(Infer(Request("add", c->inputs, false), &out).ok());
  ExpectOutputs(out, c->outputs);
  ASSERT_TRUE(Unload("add").ok());
}

// One HostManager behind both protocols.
TEST_F(TritonInteropTest, NetworksAreSharedWithGlintV1) {
  absl::StatusOr<testing::OnnxCase> c = testing::LoadOnnxNodeCase("test_add");
  ASSERT_TRUE(c.ok()) << c.status();
  GlintClient& glint = daemon_->client();

  // glint.v1 → Triton.
  ASSERT_TRUE(glint.AddNetwork("via_v1", c->model).ok());
  EXPECT_TRUE(ModelReady("via_v1"));
  EXPECT_EQ(IndexNames().count("via_v1"), 1u);
  inference::ModelInferResponse out;
  ASSERT_TRUE(Infer(Request("via_v1", c->inputs, true), &out).ok());
  ExpectOutputs(out, c->outputs);
  ASSERT_TRUE(glint.RemoveNetwork("via_v1").ok());
  EXPECT_FALSE(ModelReady("via_v1"));

  // Triton → glint.v1.
  ASSERT_TRUE(Load("via_triton", c->model).ok());
  absl::StatusOr<std::vector<NetworkInfo>> list = glint.ListNetworks();
  ASSERT_TRUE(list.ok());
  bool listed = false;
  for (const NetworkInfo& n : *list) listed = listed || n.name == "via_triton";
  EXPECT_TRUE(listed);
  absl::StatusOr<std::vector<NamedTensor>> ran =
      glint.RunNetwork("via_triton", c->inputs);
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_EQ(ran->size(), 1u);
  EXPECT_EQ(testing::CompareTensors((*ran)[0].tensor, c->outputs[0].tensor),
            "");
  // Runs through glint.v1 count in the model's statistics too.
  EXPECT_EQ(Statistics("via_triton").inference_stats().success().count(), 1u);
  ASSERT_TRUE(glint.RemoveNetwork("via_triton").ok());
  EXPECT_EQ(Unload("via_triton").error_code(), grpc::StatusCode::NOT_FOUND);
}

void SetWindow(
    google::protobuf::Map<std::string, inference::InferParameter>* parameters,
    const std::string& region, int64_t offset, int64_t byte_size) {
  (*parameters)["shared_memory_region"].set_string_param(region);
  (*parameters)["shared_memory_offset"].set_int64_param(offset);
  (*parameters)["shared_memory_byte_size"].set_int64_param(byte_size);
}

// Triton's system shared memory as Triton's clients use it: create an
// object, register it, run with an input and the output in it.
TEST_F(TritonInteropTest, SystemSharedMemory) {
  absl::StatusOr<testing::OnnxCase> c = testing::LoadOnnxNodeCase("test_add");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(Load("shm_add", c->model).ok());
  const Tensor& x = c->inputs[0].tensor;
  const Tensor& sum = c->outputs[0].tensor;
  const int64_t bytes = static_cast<int64_t>(x.num_bytes());  // 240.
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> object =
      SharedMemoryRegion::Create(8192);
  ASSERT_TRUE(object.ok()) << object.status();
  uint8_t* memory = (*object)->data();
  std::memset(memory, 0xEE, 8192);

  // The region: object bytes [4096, 8192).
  inference::SystemSharedMemoryRegisterRequest reg;
  reg.set_name("triton_region");
  reg.set_key((*object)->key());
  reg.set_offset(4096);
  reg.set_byte_size(4096);
  inference::SystemSharedMemoryRegisterResponse registered;
  grpc::ClientContext c1;
  grpc::Status s = stub_->SystemSharedMemoryRegister(&c1, reg, &registered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  inference::SystemSharedMemoryStatusResponse status;
  grpc::ClientContext c2;
  ASSERT_TRUE(
      stub_
          ->SystemSharedMemoryStatus(
              &c2, inference::SystemSharedMemoryStatusRequest(), &status)
          .ok());
  ASSERT_EQ(status.regions().count("triton_region"), 1u);
  EXPECT_EQ(status.regions().at("triton_region").key(), (*object)->key());
  EXPECT_EQ(status.regions().at("triton_region").offset(), 4096u);
  EXPECT_EQ(status.regions().at("triton_region").byte_size(), 4096u);

  // x at region offset 0, y in the message, the sum written at 1024.
  std::memcpy(memory + 4096, x.raw_data(), x.num_bytes());
  inference::ModelInferRequest request;
  request.set_model_name("shm_add");
  for (const NamedTensor& t : c->inputs) {
    auto* in = request.add_inputs();
    in->set_name(t.name);
    in->set_datatype(testing::OipDatatypeOf(t.tensor.dtype()));
    for (int64_t d : t.tensor.shape().dims()) in->add_shape(d);
  }
  SetWindow(request.mutable_inputs(0)->mutable_parameters(), "triton_region", 0,
            bytes);
  request.add_raw_input_contents(testing::RawBytes(c->inputs[1].tensor));
  auto* out = request.add_outputs();
  out->set_name(c->outputs[0].name);
  SetWindow(out->mutable_parameters(), "triton_region", 1024, 2048);
  inference::ModelInferResponse response;
  s = Infer(request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).datatype(), "FP32");
  EXPECT_THAT(response.outputs(0).shape(), ElementsAre(3, 4, 5));
  // No raw contents for an output in shared memory.
  ASSERT_EQ(response.raw_output_contents_size(), 1);
  EXPECT_TRUE(response.raw_output_contents(0).empty());
  absl::StatusOr<Tensor> got = testing::TensorFromRaw(
      "FP32", {3, 4, 5},
      std::string(reinterpret_cast<const char*>(memory + 4096 + 1024),
                  sum.num_bytes()));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(testing::CompareTensors(*got, sum), "");
  EXPECT_EQ(memory[4096 + 1024 + sum.num_bytes()], 0xEE);

  // Both inputs in the region: no raw_input_contents at all.
  std::memcpy(memory + 4096 + 512, c->inputs[1].tensor.raw_data(), bytes);
  inference::ModelInferRequest all_shm = request;
  all_shm.clear_raw_input_contents();
  SetWindow(all_shm.mutable_inputs(1)->mutable_parameters(), "triton_region",
            512, bytes);
  std::memset(memory + 4096 + 1024, 0, sum.num_bytes());
  s = Infer(all_shm, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  got = testing::TensorFromRaw(
      "FP32", {3, 4, 5},
      std::string(reinterpret_cast<const char*>(memory + 4096 + 1024),
                  sum.num_bytes()));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(testing::CompareTensors(*got, sum), "");

  // Bounds and misuse: INVALID_ARGUMENT, and the memory as it was.
  const std::string before(reinterpret_cast<const char*>(memory), 8192);
  struct Bad {
    const char* what;
    inference::ModelInferRequest request;
  };
  std::vector<Bad> bad;
  bad.push_back({"unregistered region", request});
  SetWindow(bad.back().request.mutable_inputs(0)->mutable_parameters(),
            "nobody", 0, bytes);
  bad.push_back({"input offset past the end", request});
  SetWindow(bad.back().request.mutable_inputs(0)->mutable_parameters(),
            "triton_region", 4096 + 8, bytes);
  bad.push_back({"input window past the end", request});
  SetWindow(bad.back().request.mutable_inputs(0)->mutable_parameters(),
            "triton_region", 4096 - 16, bytes);
  bad.push_back({"output region too small", request});
  SetWindow(bad.back().request.mutable_outputs(0)->mutable_parameters(),
            "triton_region", 4096 - 100, 100);
  bad.push_back({"output offset past the end", request});
  SetWindow(bad.back().request.mutable_outputs(0)->mutable_parameters(),
            "triton_region", 5000, 240);
  bad.push_back({"output window smaller than the output", request});
  SetWindow(bad.back().request.mutable_outputs(0)->mutable_parameters(),
            "triton_region", 2048, 100);
  bad.push_back({"shm and raw contents for one input", request});
  bad.back().request.add_raw_input_contents(testing::RawBytes(x));
  bad.push_back({"shm and typed contents for one input", request});
  testing::FillTypedContents(
      x, bad.back().request.mutable_inputs(0)->mutable_contents());
  for (const Bad& b : bad) {
    inference::ModelInferResponse refused;
    s = Infer(b.request, &refused);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << b.what << ": " << s.error_message();
  }
  EXPECT_TRUE(std::string(reinterpret_cast<const char*>(memory), 8192) ==
              before)
      << "a refused request changed the memory";

  // Registering the same name again, or a window past the object's end.
  grpc::ClientContext c3;
  EXPECT_EQ(
      stub_->SystemSharedMemoryRegister(&c3, reg, &registered).error_code(),
      grpc::StatusCode::ALREADY_EXISTS);
  inference::SystemSharedMemoryRegisterRequest too_big = reg;
  too_big.set_name("too_big");
  too_big.set_byte_size(4097);
  grpc::ClientContext c4;
  EXPECT_EQ(
      stub_->SystemSharedMemoryRegister(&c4, too_big, &registered).error_code(),
      grpc::StatusCode::INVALID_ARGUMENT);

  // One registry for the server: glint.v1 sees the region and unregisters
  // it; the inference protocol then no longer knows it.
  GlintClient& glint = daemon_->client();
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> regions =
      glint.SharedMemoryStatus("triton_region");
  ASSERT_TRUE(regions.ok()) << regions.status();
  ASSERT_EQ(regions->size(), 1u);
  EXPECT_EQ((*regions)[0].offset, 4096u);
  ASSERT_TRUE(glint.UnregisterSharedMemory("triton_region").ok());
  inference::SystemSharedMemoryStatusRequest one;
  one.set_name("triton_region");
  grpc::ClientContext c5;
  EXPECT_EQ(stub_->SystemSharedMemoryStatus(&c5, one, &status).error_code(),
            grpc::StatusCode::NOT_FOUND);
  s = Infer(request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Registered through glint.v1, used and unregistered through Triton's.
  ASSERT_TRUE(
      glint.RegisterSharedMemory("v1_region", (*object)->key(), 4096, 4096)
          .ok());
  inference::ModelInferRequest v1_request = all_shm;
  for (auto* parameters :
       {v1_request.mutable_inputs(0)->mutable_parameters(),
        v1_request.mutable_inputs(1)->mutable_parameters(),
        v1_request.mutable_outputs(0)->mutable_parameters()}) {
    (*parameters)["shared_memory_region"].set_string_param("v1_region");
  }
  s = Infer(v1_request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // Triton's unregister-all drops only what was registered through the
  // inference protocol: the glint.v1 client's region stays ...
  inference::SystemSharedMemoryUnregisterRequest unreg;  // Empty: all.
  inference::SystemSharedMemoryUnregisterResponse unregistered;
  grpc::ClientContext c6;
  ASSERT_TRUE(
      stub_->SystemSharedMemoryUnregister(&c6, unreg, &unregistered).ok());
  regions = glint.SharedMemoryStatus("");
  ASSERT_TRUE(regions.ok());
  ASSERT_EQ(regions->size(), 1u);
  EXPECT_EQ((*regions)[0].name, "v1_region");
  // ... and is unregistered by its name through Triton's.
  unreg.set_name("v1_region");
  grpc::ClientContext c7;
  ASSERT_TRUE(
      stub_->SystemSharedMemoryUnregister(&c7, unreg, &unregistered).ok());
  regions = glint.SharedMemoryStatus("");
  ASSERT_TRUE(regions.ok());
  EXPECT_TRUE(regions->empty());
  ASSERT_TRUE(Unload("shm_add").ok());
}

// parameters.precision in the config: the network computes in bf16, and
// ModelConfig and glint.v1 say so; a value Glint does not know is refused
// naming the allowed ones.
TEST_F(TritonInteropTest, ConfigPrecision) {
  ASSERT_TRUE(Load("mlp_bf16", testing::MakeDeepMlpModel(1, 64, 3),
                   R"({"parameters": {"precision": {"string_value": "bf16"}}})")
                  .ok());
  inference::ModelConfigResponse config;
  ASSERT_TRUE(Config("mlp_bf16", &config).ok());
  EXPECT_EQ(config.config().parameters().at("precision").string_value(),
            "bf16");
  absl::StatusOr<NetworkInfo> info = daemon_->client().GetNetwork("mlp_bf16");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->precision, Precision::kBFloat16);
  ASSERT_TRUE(Unload("mlp_bf16").ok());

  grpc::Status s =
      Load("mlp_fp8", testing::MakeDeepMlpModel(1, 64, 3),
           R"({"parameters": {"precision": {"string_value": "fp8"}}})");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("fp32 (the default), bf16"));
}

}  // namespace
}  // namespace glint
