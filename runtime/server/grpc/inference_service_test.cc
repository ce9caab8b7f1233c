// InferenceServiceImpl through an in-process gRPC server (next to the
// glint.v1 service, over one HostManager), called with the stubs of Glint's
// own inference.proto. The whole-system tests with clients compiled from
// the upstream protocol files are tests/e2e_triton_test and e2e_oip_test.
#include "runtime/server/grpc/inference_service.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "proto/glint.grpc.pb.h"
#include "proto/inference.grpc.pb.h"
#include "proto/proto_convert.h"
#include "runtime/server/common/auth.h"
#include "runtime/server/grpc/service.h"
#include "runtime/server/grpc/worker_pool.h"
#include "serving/model_repository.h"
#include "serving/shared_memory.h"

namespace glint {
namespace {

using inference::GRPCInferenceService;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string FloatBytes(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()),
                     v.size() * sizeof(float));
}

std::vector<float> Floats(const std::string& bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

class InferenceServiceTest : public ::testing::Test {
 protected:
  // `devices` default to one plain 64 MiB sim device.
  void Start(std::vector<DeviceConfig> devices = {},
             const Authorizer* authorizer = nullptr) {
    if (devices.empty()) {
      devices.resize(1);
      devices[0].memory_bytes = 64 * kMiB;
    }
    absl::StatusOr<std::unique_ptr<HostManager>> hm =
        HostManager::CreateFromConfigs(HostManagerOptions(), devices);
    ASSERT_TRUE(hm.ok()) << hm.status();
    host_manager_ = *std::move(hm);
    WorkerPoolOptions pool;
    pool.threads = 1;
    blocking_ = std::make_unique<WorkerPool>(pool);
    // One registry for both services, as glintd has.
    shared_memory_ = std::make_unique<SharedMemoryRegistry>();
    glint_service_ = std::make_unique<GlintServiceImpl>(
        host_manager_.get(), blocking_.get(), nullptr, shared_memory_.get());
    service_ = std::make_unique<InferenceServiceImpl>(
        host_manager_.get(), blocking_.get(), authorizer, shared_memory_.get());
    if (!repository_dir_.empty()) {
      repository_ = std::make_unique<ModelRepository>(
          host_manager_.get(),
          ModelRepositoryOptions{repository_dir_, ModelControlMode::kExplicit});
      service_->SetModelRepository(repository_.get());
    }
    grpc::ServerBuilder builder;
    builder.RegisterService(glint_service_.get());
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    std::shared_ptr<grpc::Channel> channel =
        server_->InProcessChannel(grpc::ChannelArguments());
    stub_ = GRPCInferenceService::NewStub(channel);
    glint_stub_ = v1::HostManager::NewStub(channel);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    if (blocking_ != nullptr) blocking_->Shutdown();
    if (host_manager_ != nullptr) host_manager_->Shutdown();
  }

  grpc::Status Load(const std::string& name, const std::string& onnx,
                    const std::string& config = "") {
    inference::RepositoryModelLoadRequest request;
    request.set_model_name(name);
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

  grpc::Status Unload(const std::string& name) {
    inference::RepositoryModelUnloadRequest request;
    request.set_model_name(name);
    inference::RepositoryModelUnloadResponse response;
    grpc::ClientContext context;
    return stub_->RepositoryModelUnload(&context, request, &response);
  }

  bool ModelReady(const std::string& name, const std::string& version = "") {
    inference::ModelReadyRequest request;
    request.set_name(name);
    request.set_version(version);
    inference::ModelReadyResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(stub_->ModelReady(&context, request, &response).ok());
    return response.ready();
  }

  // x: FP32[1, 4] as raw bytes.
  static inference::ModelInferRequest MlpRequest(const std::string& model,
                                                 const std::vector<float>& x) {
    inference::ModelInferRequest request;
    request.set_model_name(model);
    auto* in = request.add_inputs();
    in->set_name("x");
    in->set_datatype("FP32");
    in->add_shape(1);
    in->add_shape(static_cast<int64_t>(x.size()));
    request.add_raw_input_contents(FloatBytes(x));
    return request;
  }

  grpc::Status Infer(const inference::ModelInferRequest& request,
                     inference::ModelInferResponse* response) {
    grpc::ClientContext context;
    return stub_->ModelInfer(&context, request, response);
  }

  // Set before Start(): an explicit-mode --model_repository.
  std::string repository_dir_;
  std::unique_ptr<HostManager> host_manager_;
  std::unique_ptr<ModelRepository> repository_;
  std::unique_ptr<WorkerPool> blocking_;
  std::unique_ptr<SharedMemoryRegistry> shared_memory_;
  std::unique_ptr<GlintServiceImpl> glint_service_;
  std::unique_ptr<InferenceServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GRPCInferenceService::Stub> stub_;
  std::unique_ptr<v1::HostManager::Stub> glint_stub_;
};

TEST_F(InferenceServiceTest, LiveAlwaysReadyOnlyBetweenSetReadyAndShutdown) {
  Start();
  auto ready = [&] {
    inference::ServerReadyResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(
        stub_->ServerReady(&context, inference::ServerReadyRequest(), &response)
            .ok());
    return response.ready();
  };
  inference::ServerLiveResponse live;
  grpc::ClientContext context;
  ASSERT_TRUE(
      stub_->ServerLive(&context, inference::ServerLiveRequest(), &live).ok());
  EXPECT_TRUE(live.live());
  EXPECT_FALSE(ready());
  service_->SetReady();
  EXPECT_TRUE(ready());
  service_->Shutdown();
  EXPECT_FALSE(ready());
  service_->SetReady();  // A restore ending after the signal.
  EXPECT_FALSE(ready());
}

TEST_F(InferenceServiceTest, ServerMetadataNamesTheExtensions) {
  Start();
  inference::ServerMetadataResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ServerMetadata(&context, inference::ServerMetadataRequest(),
                                    &response)
                  .ok());
  EXPECT_EQ(response.name(), "glint");
  EXPECT_EQ(response.version(), kGlintVersion);
  EXPECT_THAT(
      response.extensions(),
      ElementsAre("model_repository", "model_configuration", "schedule_policy",
                  "statistics", "system_shared_memory"));
}

TEST_F(InferenceServiceTest, LoadDescribeInferUnload) {
  Start();
  service_->SetReady();
  ASSERT_TRUE(Load("mlp", testing::MakeMlpModel(1, 4, 3),
                   R"({"input": [{"name": "x", "data_type": "TYPE_FP32",
                                  "dims": [1, 4]}]})")
                  .ok());
  EXPECT_TRUE(ModelReady("mlp"));
  EXPECT_TRUE(ModelReady("mlp", "1"));
  EXPECT_FALSE(ModelReady("mlp", "2"));
  EXPECT_FALSE(ModelReady("absent"));

  inference::ModelMetadataRequest meta_request;
  meta_request.set_name("mlp");
  inference::ModelMetadataResponse meta;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub_->ModelMetadata(&c1, meta_request, &meta).ok());
  EXPECT_EQ(meta.platform(), "glint_onnx");
  ASSERT_EQ(meta.inputs_size(), 1);
  EXPECT_EQ(meta.inputs(0).datatype(), "FP32");
  EXPECT_THAT(meta.inputs(0).shape(), ElementsAre(1, 4));

  inference::ModelConfigRequest config_request;
  config_request.set_name("mlp");
  inference::ModelConfigResponse config;
  grpc::ClientContext c2;
  ASSERT_TRUE(stub_->ModelConfig(&c2, config_request, &config).ok());
  EXPECT_EQ(config.config().name(), "mlp");
  ASSERT_EQ(config.config().instance_group_size(), 1);
  EXPECT_THAT(config.config().instance_group(0).gpus(), ElementsAre(0));

  const std::vector<float> x = {1, -2, 3, 0.5f};
  const std::vector<float> expected = testing::MlpReference(x, 1, 4, 3);
  // Raw contents, with an id to echo.
  inference::ModelInferRequest raw = MlpRequest("mlp", x);
  raw.set_id("first");
  inference::ModelInferResponse raw_out;
  grpc::Status s = Infer(raw, &raw_out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(raw_out.id(), "first");
  EXPECT_EQ(raw_out.model_version(), "1");
  ASSERT_EQ(raw_out.outputs_size(), 1);
  EXPECT_EQ(raw_out.outputs(0).datatype(), "FP32");
  EXPECT_THAT(raw_out.outputs(0).shape(), ElementsAre(1, 3));
  ASSERT_EQ(raw_out.raw_output_contents_size(), 1);
  std::vector<float> y = Floats(raw_out.raw_output_contents(0));
  ASSERT_EQ(y.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(y[i], expected[i], 1e-5);

  // Typed contents give the same.
  inference::ModelInferRequest typed = MlpRequest("mlp", x);
  typed.clear_raw_input_contents();
  for (float v : x) typed.mutable_inputs(0)->mutable_contents()->add_fp32_contents(v);
  inference::ModelInferResponse typed_out;
  ASSERT_TRUE(Infer(typed, &typed_out).ok());
  EXPECT_EQ(typed_out.raw_output_contents(0), raw_out.raw_output_contents(0));

  // Statistics count both runs.
  inference::ModelStatisticsRequest stats_request;
  stats_request.set_name("mlp");
  inference::ModelStatisticsResponse stats;
  grpc::ClientContext c3;
  ASSERT_TRUE(stub_->ModelStatistics(&c3, stats_request, &stats).ok());
  ASSERT_EQ(stats.model_stats_size(), 1);
  EXPECT_EQ(stats.model_stats(0).inference_stats().success().count(), 2u);
  EXPECT_GT(stats.model_stats(0).inference_stats().success().ns(), 0u);
  EXPECT_EQ(stats.model_stats(0).inference_stats().fail().count(), 0u);
  EXPECT_GT(stats.model_stats(0).last_inference(), 0u);

  inference::RepositoryIndexResponse index;
  grpc::ClientContext c4;
  ASSERT_TRUE(
      stub_->RepositoryIndex(&c4, inference::RepositoryIndexRequest(), &index)
          .ok());
  ASSERT_EQ(index.models_size(), 1);
  EXPECT_EQ(index.models(0).name(), "mlp");
  EXPECT_EQ(index.models(0).state(), "READY");

  // Loading the name again is refused; without a file it is a no-op.
  EXPECT_EQ(Load("mlp", testing::MakeMlpModel(1, 4, 3)).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_TRUE(Load("mlp", "").ok());

  ASSERT_TRUE(Unload("mlp").ok());
  EXPECT_FALSE(ModelReady("mlp"));
  inference::ModelInferResponse gone;
  EXPECT_EQ(Infer(raw, &gone).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Unload("mlp").error_code(), grpc::StatusCode::NOT_FOUND);
}

// A network added through glint.v1 serves through the inference protocol,
// and one loaded through it is listed and run by glint.v1.
// --model_repository in explicit mode: RepositoryModelLoad without a file
// loads the repository's model, RepositoryIndex lists the repository's
// models with their state and why a load failed, Unload unloads.
TEST_F(InferenceServiceTest, ExplicitModelRepositoryThroughTheProtocol) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  repository_dir_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/oip_repo";
  std::filesystem::remove_all(repository_dir_);
  auto write = [&](const std::string& path, const std::string& bytes) {
    std::filesystem::create_directories(
        std::filesystem::path(repository_dir_ + "/" + path).parent_path());
    std::ofstream(repository_dir_ + "/" + path, std::ios::binary) << bytes;
  };
  write("good/3/model.onnx", testing::MakeMlpModel(1, 4, 3));
  write("bad/1/model.onnx", "not an ONNX model");
  Start();
  service_->SetReady();
  EXPECT_FALSE(ModelReady("good"));  // Explicit: nothing loads at start.
  ASSERT_TRUE(Load("good", "").ok());
  EXPECT_TRUE(ModelReady("good"));
  inference::ModelInferResponse response;
  ASSERT_TRUE(Infer(MlpRequest("good", {1, 2, 3, 4}), &response).ok());
  const std::vector<float> got = Floats(response.raw_output_contents(0));
  const std::vector<float> want = testing::MlpReference({1, 2, 3, 4}, 1, 4, 3);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4);
  EXPECT_EQ(Load("bad", "").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Load("absent", "").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Load("good", "", "{}").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  auto index = [&] {
    inference::RepositoryIndexRequest request;
    inference::RepositoryIndexResponse reply;
    grpc::ClientContext context;
    EXPECT_TRUE(stub_->RepositoryIndex(&context, request, &reply).ok());
    std::map<std::string, inference::RepositoryIndexResponse::ModelIndex> by;
    for (const auto& m : reply.models()) by[m.name()] = m;
    return by;
  };
  auto models = index();
  ASSERT_EQ(models.size(), 2u);
  EXPECT_EQ(models["good"].state(), "READY");
  EXPECT_EQ(models["good"].version(), "1");
  EXPECT_EQ(models["good"].reason(), "repository version 3");
  EXPECT_EQ(models["bad"].state(), "UNAVAILABLE");
  EXPECT_THAT(models["bad"].reason(), HasSubstr("version 1 failed to load"));

  ASSERT_TRUE(Unload("good").ok());
  EXPECT_FALSE(ModelReady("good"));
  models = index();
  EXPECT_EQ(models["good"].state(), "UNLOADED");
  EXPECT_EQ(Unload("good").error_code(), grpc::StatusCode::NOT_FOUND);
  // The bytes-in-the-request path keeps working beside the repository.
  ASSERT_TRUE(Load("sent", testing::MakeMlpModel(1, 4, 3)).ok());
  EXPECT_TRUE(ModelReady("sent"));
}

TEST_F(InferenceServiceTest, BothProtocolsShareTheNetworks) {
  Start();
  service_->SetReady();
  v1::AddNetworkRequest add;
  add.set_name("from_v1");
  add.set_model(testing::MakeMlpModel(1, 4, 2));
  v1::AddNetworkResponse added;
  grpc::ClientContext c1;
  ASSERT_TRUE(glint_stub_->AddNetwork(&c1, add, &added).ok());
  EXPECT_TRUE(ModelReady("from_v1"));
  const std::vector<float> x = {0.5f, 1, 2, -1};
  inference::ModelInferResponse out;
  ASSERT_TRUE(Infer(MlpRequest("from_v1", x), &out).ok());
  const std::vector<float> want = testing::MlpReference(x, 1, 4, 2);
  std::vector<float> y = Floats(out.raw_output_contents(0));
  ASSERT_EQ(y.size(), 2u);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(y[i], want[i], 1e-5);

  ASSERT_TRUE(Load("from_oip", testing::MakeMlpModel(1, 4, 2)).ok());
  v1::RunNetworkRequest run;
  run.set_name("from_oip");
  ASSERT_TRUE(TensorToProto({"x", Tensor::FromVector<float>(
                                      DType::kFloat32, Shape({1, 4}), x)},
                            run.add_inputs())
                  .ok());
  v1::RunNetworkResponse ran;
  grpc::ClientContext c2;
  ASSERT_TRUE(glint_stub_->RunNetwork(&c2, run, &ran).ok());
  absl::StatusOr<Tensor> t = TensorFromProto(ran.outputs(0));
  ASSERT_TRUE(t.ok());
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(t->data<float>()[i], want[i], 1e-5);
  v1::RemoveNetworkRequest remove;
  remove.set_name("from_oip");
  v1::RemoveNetworkResponse removed;
  grpc::ClientContext c3;
  ASSERT_TRUE(glint_stub_->RemoveNetwork(&c3, remove, &removed).ok());
  EXPECT_FALSE(ModelReady("from_oip"));
}

// A POSIX shared-memory object of `bytes`, mapped by the test, removed at
// the end.
class ShmObject {
 public:
  explicit ShmObject(size_t bytes) : bytes_(bytes) {
    key_ = "/glint_inference_service_test_" + std::to_string(getpid());
    const int fd = shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    EXPECT_NE(p, MAP_FAILED);
    data_ = static_cast<uint8_t*>(p);
  }
  ~ShmObject() {
    munmap(data_, bytes_);
    shm_unlink(key_.c_str());
  }
  const std::string& key() const { return key_; }
  float* floats(size_t offset) {
    return reinterpret_cast<float*>(data_ + offset);
  }

 private:
  std::string key_;
  size_t bytes_;
  uint8_t* data_;
};

void SetWindow(
    google::protobuf::Map<std::string, inference::InferParameter>* parameters,
    const std::string& region, int64_t offset, int64_t byte_size) {
  (*parameters)["shared_memory_region"].set_string_param(region);
  (*parameters)["shared_memory_offset"].set_int64_param(offset);
  (*parameters)["shared_memory_byte_size"].set_int64_param(byte_size);
}

TEST_F(InferenceServiceTest, SystemSharedMemoryIsSharedWithGlintV1) {
  Start();
  service_->SetReady();
  ASSERT_TRUE(Load("mlp", testing::MakeMlpModel(1, 4, 3)).ok());
  ShmObject object(4096);
  inference::SystemSharedMemoryRegisterRequest reg;
  reg.set_name("r");
  reg.set_key(object.key());
  reg.set_offset(1024);
  reg.set_byte_size(2048);
  inference::SystemSharedMemoryRegisterResponse registered;
  grpc::ClientContext c1;
  grpc::Status s = stub_->SystemSharedMemoryRegister(&c1, reg, &registered);
  ASSERT_TRUE(s.ok()) << s.error_message();
  grpc::ClientContext c2;
  EXPECT_EQ(
      stub_->SystemSharedMemoryRegister(&c2, reg, &registered).error_code(),
      grpc::StatusCode::ALREADY_EXISTS);

  // glint.v1 lists it: one registry, the server's.
  v1::SharedMemoryStatusResponse v1_status;
  grpc::ClientContext c3;
  ASSERT_TRUE(
      glint_stub_
          ->SharedMemoryStatus(&c3, v1::SharedMemoryStatusRequest(), &v1_status)
          .ok());
  ASSERT_EQ(v1_status.regions_size(), 1);
  EXPECT_EQ(v1_status.regions(0).name(), "r");
  EXPECT_EQ(v1_status.regions(0).offset(), 1024u);

  // x in the region at 64, y written at 512 (region offsets).
  const std::vector<float> x = {1, -2, 3, 0.5f};
  std::memcpy(object.floats(1024 + 64), x.data(), 16);
  inference::ModelInferRequest request;
  request.set_model_name("mlp");
  auto* in = request.add_inputs();
  in->set_name("x");
  in->set_datatype("FP32");
  in->add_shape(1);
  in->add_shape(4);
  SetWindow(in->mutable_parameters(), "r", 64, 16);
  auto* out = request.add_outputs();
  out->set_name("y");
  SetWindow(out->mutable_parameters(), "r", 512, 64);
  inference::ModelInferResponse response;
  s = Infer(request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_THAT(response.outputs(0).shape(), ElementsAre(1, 3));
  ASSERT_EQ(response.raw_output_contents_size(), 1);
  EXPECT_TRUE(response.raw_output_contents(0).empty());
  const std::vector<float> want = testing::MlpReference(x, 1, 4, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(object.floats(1024 + 512)[i], want[i], 1e-5);
  }

  // A window past the region's end: INVALID_ARGUMENT.
  SetWindow(out->mutable_parameters(), "r", 2048 - 8, 64);
  inference::ModelInferResponse refused;
  EXPECT_EQ(Infer(request, &refused).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  inference::SystemSharedMemoryStatusRequest one;
  one.set_name("r");
  inference::SystemSharedMemoryStatusResponse status;
  grpc::ClientContext c4;
  ASSERT_TRUE(stub_->SystemSharedMemoryStatus(&c4, one, &status).ok());
  ASSERT_EQ(status.regions_size(), 1);
  EXPECT_EQ(status.regions().at("r").key(), object.key());
  EXPECT_EQ(status.regions().at("r").byte_size(), 2048u);

  // Unregistered through glint.v1, gone for both; unregistering an
  // unknown name through the inference protocol is OK (as Triton).
  v1::UnregisterSharedMemoryRequest unreg;
  unreg.set_name("r");
  v1::UnregisterSharedMemoryResponse unregistered;
  grpc::ClientContext c5;
  ASSERT_TRUE(
      glint_stub_->UnregisterSharedMemory(&c5, unreg, &unregistered).ok());
  grpc::ClientContext c6;
  EXPECT_EQ(stub_->SystemSharedMemoryStatus(&c6, one, &status).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Infer(request, &refused).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  inference::SystemSharedMemoryUnregisterRequest oip_unreg;
  oip_unreg.set_name("r");
  inference::SystemSharedMemoryUnregisterResponse oip_unregistered;
  grpc::ClientContext c7;
  EXPECT_TRUE(
      stub_->SystemSharedMemoryUnregister(&c7, oip_unreg, &oip_unregistered)
          .ok());

  // An empty name unregisters every region registered through this
  // protocol; a glint.v1 client's region (same registry) stays.
  for (const char* name : {"a", "b"}) {
    reg.set_name(name);
    grpc::ClientContext c;
    ASSERT_TRUE(stub_->SystemSharedMemoryRegister(&c, reg, &registered).ok());
  }
  ASSERT_TRUE(shared_memory_
                  ->Register("glint", reg.key(), reg.offset(),
                             reg.byte_size(), kGlintSharedMemoryOwner)
                  .ok());
  EXPECT_EQ(shared_memory_->size(), 3);
  oip_unreg.set_name("");
  grpc::ClientContext c8;
  EXPECT_TRUE(
      stub_->SystemSharedMemoryUnregister(&c8, oip_unreg, &oip_unregistered)
          .ok());
  EXPECT_EQ(shared_memory_->size(), 1);
  EXPECT_TRUE(shared_memory_->Regions("glint").ok());
}

TEST_F(InferenceServiceTest, ErrorsHaveTheirCodes) {
  Start();
  ASSERT_TRUE(Load("mlp", testing::MakeMlpModel(1, 4, 3)).ok());
  inference::ModelInferResponse out;
  EXPECT_EQ(Infer(MlpRequest("absent", {1, 2, 3, 4}), &out).error_code(),
            grpc::StatusCode::NOT_FOUND);
  inference::ModelInferRequest v2 = MlpRequest("mlp", {1, 2, 3, 4});
  v2.set_model_version("2");
  EXPECT_EQ(Infer(v2, &out).error_code(), grpc::StatusCode::NOT_FOUND);
  inference::ModelInferRequest bytes = MlpRequest("mlp", {1, 2, 3, 4});
  bytes.mutable_inputs(0)->set_datatype("BYTES");
  grpc::Status s = Infer(bytes, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("BYTES"));
  inference::ModelInferRequest wrong_shape = MlpRequest("mlp", {1, 2, 3});
  EXPECT_EQ(Infer(wrong_shape, &out).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  inference::ModelInferRequest unknown_output = MlpRequest("mlp", {1, 2, 3, 4});
  unknown_output.add_outputs()->set_name("nope");
  EXPECT_EQ(Infer(unknown_output, &out).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  for (const std::string& name : {std::string("absent"), std::string("mlp")}) {
    inference::ModelMetadataRequest r;
    r.set_name(name);
    r.set_version(name == "mlp" ? "7" : "");
    inference::ModelMetadataResponse m;
    grpc::ClientContext c;
    EXPECT_EQ(stub_->ModelMetadata(&c, r, &m).error_code(),
              grpc::StatusCode::NOT_FOUND)
        << name;
  }
  inference::ModelConfigRequest config_request;
  config_request.set_name("absent");
  inference::ModelConfigResponse config;
  grpc::ClientContext c1;
  EXPECT_EQ(stub_->ModelConfig(&c1, config_request, &config).error_code(),
            grpc::StatusCode::NOT_FOUND);
  inference::ModelStatisticsRequest stats_request;
  stats_request.set_name("absent");
  inference::ModelStatisticsResponse stats;
  grpc::ClientContext c2;
  EXPECT_EQ(stub_->ModelStatistics(&c2, stats_request, &stats).error_code(),
            grpc::StatusCode::NOT_FOUND);

  // A load whose config does not describe the model leaves nothing.
  s = Load("other", testing::MakeMlpModel(1, 4, 3),
           R"({"input": [{"name": "image"}]})");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("no input 'image'"));
  EXPECT_FALSE(host_manager_->GetNetwork("other").ok());
  EXPECT_EQ(Load("other", "", "").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(Load("bad", "not onnx").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  s = Load("mlp", "", R"({"max_batch_size": 4})");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS);
}

TEST_F(InferenceServiceTest, UnimplementedRpcsSaySo) {
  Start();
  grpc::ClientContext c1;
  std::unique_ptr<grpc::ClientReaderWriter<inference::ModelInferRequest,
                                           inference::ModelStreamInferResponse>>
      stream = stub_->ModelStreamInfer(&c1);
  stream->WritesDone();
  inference::ModelStreamInferResponse ignored;
  EXPECT_FALSE(stream->Read(&ignored));
  grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(s.error_message(), HasSubstr("ModelStreamInfer"));

  inference::CudaSharedMemoryStatusResponse shm;
  grpc::ClientContext c2;
  s = stub_->CudaSharedMemoryStatus(
      &c2, inference::CudaSharedMemoryStatusRequest(), &shm);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(s.error_message(), HasSubstr("system shared memory"));
  inference::LogSettingsResponse log;
  grpc::ClientContext c3;
  s = stub_->LogSettings(&c3, inference::LogSettingsRequest(), &log);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(s.error_message(), HasSubstr("--log_level"));
}

// Two devices at 40 FLOP/s: each partition of the 2-layer 8-wide MLP takes
// about 3 s of simulated compute.
std::vector<DeviceConfig> SlowDevices() {
  std::vector<DeviceConfig> devices(2);
  for (DeviceConfig& d : devices) {
    d.memory_bytes = 64 * kMiB;
    d.params["compute_gflops"] = "0.00000004";
  }
  return devices;
}

constexpr char kSlowConfig[] =
    R"({"parameters": {"partition_strategy": "load_balanced",
                       "plan_devices": "2"}})";

inference::ModelInferRequest SlowRequest() {
  inference::ModelInferRequest request;
  request.set_model_name("slow");
  auto* in = request.add_inputs();
  in->set_name("x");
  in->set_datatype("FP32");
  in->add_shape(1);
  in->add_shape(8);
  request.add_raw_input_contents(FloatBytes(std::vector<float>(8, 1.0f)));
  return request;
}

// The `timeout` parameter is the run's deadline: the second partition is
// never started.
TEST_F(InferenceServiceTest, TimeoutParameterEndsTheRun) {
  Start(SlowDevices());
  ASSERT_TRUE(Load("slow", testing::MakeDeepMlpModel(1, 8, 2), kSlowConfig).ok());
  inference::ModelInferRequest request = SlowRequest();
  (*request.mutable_parameters())["timeout"].set_int64_param(100'000);
  const absl::Time start = absl::Now();
  inference::ModelInferResponse out;
  grpc::Status s = Infer(request, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << s.error_message();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// A client that cancels cancels the run (OnCancel → RunOptions::cancel):
// the run ends failed long before its second partition could finish.
TEST_F(InferenceServiceTest, ClientCancelCancelsTheRun) {
  Start(SlowDevices());
  ASSERT_TRUE(Load("slow", testing::MakeDeepMlpModel(1, 8, 2), kSlowConfig).ok());
  grpc::ClientContext context;
  inference::ModelInferRequest request = SlowRequest();
  inference::ModelInferResponse out;
  absl::Notification done;
  grpc::Status status;
  const absl::Time start = absl::Now();
  stub_->async()->ModelInfer(&context, &request, &out, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  // Bounded polling until the run is in flight on the server.
  auto stats = [&] { return *host_manager_->GetStatistics("slow"); };
  const absl::Time limit = absl::Now() + absl::Seconds(10);
  while (stats().in_flight == 0 && absl::Now() < limit) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  ASSERT_EQ(stats().in_flight, 1);
  context.TryCancel();
  done.WaitForNotification();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  // The server's run ends (failed) without running the second partition.
  while (stats().failure_count == 0 && absl::Now() < limit) {
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_EQ(stats().failure_count, 1u);
  EXPECT_EQ(stats().success_count, 0u);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// With --auth_tokens, every call of the service is authorized by scope:
// infer for health, metadata and inference, admin for the repository.
TEST_F(InferenceServiceTest, CallsAreAuthorizedByScope) {
  constexpr char kInfer[] = "infer-token-0123456789";
  constexpr char kAdmin[] = "admin-token-0123456789";
  absl::StatusOr<std::unique_ptr<Authorizer>> authorizer = Authorizer::Parse(
      absl::StrCat(kInfer, " infer\n", kAdmin, " admin\n"));
  ASSERT_TRUE(authorizer.ok()) << authorizer.status();
  Start({}, authorizer->get());
  service_->SetReady();
  auto with = [](grpc::ClientContext* c, const char* token) {
    if (token != nullptr) {
      c->AddMetadata("authorization", absl::StrCat("Bearer ", token));
    }
  };
  auto load = [&](const char* token) {
    inference::RepositoryModelLoadRequest request;
    request.set_model_name("mlp");
    (*request.mutable_parameters())["file:1/model.onnx"].set_bytes_param(
        testing::MakeMlpModel(1, 4, 3));
    inference::RepositoryModelLoadResponse response;
    grpc::ClientContext c;
    with(&c, token);
    return stub_->RepositoryModelLoad(&c, request, &response).error_code();
  };
  auto infer = [&](const char* token) {
    inference::ModelInferResponse response;
    grpc::ClientContext c;
    with(&c, token);
    return stub_->ModelInfer(&c, MlpRequest("mlp", {1, 2, 3, 4}), &response)
        .error_code();
  };
  auto live = [&](const char* token) {
    inference::ServerLiveResponse response;
    grpc::ClientContext c;
    with(&c, token);
    return stub_->ServerLive(&c, inference::ServerLiveRequest(), &response)
        .error_code();
  };
  auto stream = [&](const char* token) {
    grpc::ClientContext c;
    with(&c, token);
    auto s = stub_->ModelStreamInfer(&c);
    s->WritesDone();
    return s->Finish().error_code();
  };
  EXPECT_EQ(load(nullptr), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(load("not-a-known-token-000"), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(load(kInfer), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(host_manager_->GetNetwork("mlp").ok());
  EXPECT_EQ(load(kAdmin), grpc::StatusCode::OK);
  EXPECT_EQ(infer(nullptr), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(infer(kAdmin), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(infer(kInfer), grpc::StatusCode::OK);
  EXPECT_EQ(live(nullptr), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(live(kInfer), grpc::StatusCode::OK);
  EXPECT_EQ(stream(nullptr), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(stream(kInfer), grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace glint
