// glint.v1's handler logic without a network (GlintHandlers over an
// in-process HostManager), then the callback service's wiring through a
// real gRPC server on loopback: reactors, cancellation, refusals.
#include "runtime/server/grpc/service.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/test_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "proto/proto_convert.h"
#include "runtime/server/grpc/server_setup.h"
#include "runtime/server/grpc/worker_pool.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

TEST(DeadlineFromGrpcTest, NoDeadlineIsInfinite) {
  EXPECT_EQ(DeadlineFromGrpc(std::chrono::system_clock::time_point::max()),
            absl::InfiniteFuture());
  // What a call without a client deadline reports.
  grpc::CallbackServerContext context;
  EXPECT_EQ(DeadlineFromGrpc(context.deadline()), absl::InfiniteFuture());
}

TEST(DeadlineFromGrpcTest, FiniteDeadlineIsKept) {
  const auto d = std::chrono::system_clock::now() + std::chrono::seconds(3);
  EXPECT_LT(absl::AbsDuration(DeadlineFromGrpc(d) - absl::FromChrono(d)),
            absl::Milliseconds(1));
}

v1::RunNetworkRequest RunRequest(const std::string& name,
                                 const std::vector<float>& x,
                                 int64_t batch) {
  v1::RunNetworkRequest run;
  run.set_name(name);
  const int64_t width = static_cast<int64_t>(x.size()) / batch;
  EXPECT_TRUE(TensorToProto({"x", Tensor::FromVector<float>(
                                      DType::kFloat32, Shape({batch, width}),
                                      x)},
                            run.add_inputs())
                  .ok());
  return run;
}

// Runs through the handler and waits for its finish.
grpc::Status RunAndWait(const GlintHandlers& handlers,
                        const v1::RunNetworkRequest& request,
                        v1::RunNetworkResponse* response,
                        std::shared_ptr<const CancellationToken> cancel =
                            std::make_shared<CancellationToken>()) {
  absl::Notification done;
  grpc::Status status;
  handlers.RunNetwork(request, response, absl::InfiniteFuture(),
                      std::move(cancel), [&](grpc::Status s) {
                        status = std::move(s);
                        done.Notify();
                      });
  done.WaitForNotification();
  return status;
}

// Two partitions of about 3 s each on two devices computing 40 FLOP/s.
std::unique_ptr<HostManager> MakeSlowHost(HostManagerOptions options = {}) {
  std::vector<DeviceConfig> devices(2);
  for (DeviceConfig& d : devices) {
    d.memory_bytes = 64 * kMiB;
    d.params["compute_gflops"] = "0.00000004";  // 40 FLOP/s.
  }
  auto host = HostManager::CreateFromConfigs(options, devices);
  EXPECT_TRUE(host.ok()) << host.status();
  AddNetworkOptions add;
  add.partition.strategy = PartitionStrategy::kLoadBalanced;
  add.partition.plan_devices = 2;
  // Each 8x8 MatMul layer is 128 FLOPs: about 3 s per partition.
  EXPECT_TRUE(
      (*host)->AddNetwork("slow", testing::MakeDeepMlpModel(1, 8, 2), add).ok());
  return *std::move(host);
}

class HandlersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceConfig device;
    device.memory_bytes = 64 * kMiB;
    absl::StatusOr<std::unique_ptr<HostManager>> hm =
        HostManager::CreateFromConfigs(HostManagerOptions(), {device});
    ASSERT_TRUE(hm.ok()) << hm.status();
    host_manager_ = *std::move(hm);
    handlers_ =
        std::make_unique<GlintHandlers>(host_manager_.get(), &shared_memory_);
  }

  grpc::Status Add(const std::string& name, std::string model) {
    v1::AddNetworkRequest request;
    request.set_name(name);
    request.set_model(std::move(model));
    v1::AddNetworkResponse response;
    return handlers_->AddNetwork(request, &response);
  }

  SharedMemoryRegistry shared_memory_;
  std::unique_ptr<HostManager> host_manager_;
  std::unique_ptr<GlintHandlers> handlers_;
};

TEST_F(HandlersTest, AddRunListRemove) {
  v1::AddNetworkRequest add;
  add.set_name("mlp");
  add.set_model(testing::MakeMlpModel(1, 4, 3));
  v1::AddNetworkResponse added;
  ASSERT_TRUE(handlers_->AddNetwork(add, &added).ok());
  EXPECT_EQ(added.network().name(), "mlp");
  ASSERT_EQ(added.network().inputs_size(), 1);
  EXPECT_FALSE(added.network().partitions().empty());

  const std::vector<float> x = {1, 2, 3, 4};
  v1::RunNetworkResponse ran;
  grpc::Status s = RunAndWait(*handlers_, RunRequest("mlp", x, 1), &ran);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(ran.outputs_size(), 1);
  absl::StatusOr<Tensor> y = TensorFromProto(ran.outputs(0));
  ASSERT_TRUE(y.ok()) << y.status();
  const std::vector<float> expected = testing::MlpReference(x, 1, 4, 3);
  ASSERT_EQ(y->num_elements(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(y->data<float>()[i], expected[i], 1e-5);
  }

  v1::ListNetworksResponse list;
  ASSERT_TRUE(handlers_->ListNetworks({}, &list).ok());
  ASSERT_EQ(list.networks_size(), 1);

  v1::RemoveNetworkRequest remove;
  remove.set_name("mlp");
  v1::RemoveNetworkResponse removed;
  EXPECT_TRUE(handlers_->RemoveNetwork(remove, &removed).ok());
  EXPECT_EQ(handlers_->RemoveNetwork(remove, &removed).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(HandlersTest, StatusesKeepCodeAndMessage) {
  EXPECT_EQ(Add("bad", "not a model").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Add("m", testing::MakeMlpModel(1, 2, 2)).ok());
  grpc::Status dup = Add("m", testing::MakeMlpModel(1, 2, 2));
  EXPECT_EQ(dup.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(dup.error_message(), HasSubstr("m"));

  v1::GetNetworkRequest get;
  get.set_name("absent");
  v1::GetNetworkResponse got;
  EXPECT_EQ(handlers_->GetNetwork(get, &got).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::RunNetworkResponse ran;
  EXPECT_EQ(RunAndWait(*handlers_, RunRequest("absent", {1, 2}, 1), &ran)
                .error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(HandlersTest, BadTensorIsRefusedBeforeHostManager) {
  ASSERT_TRUE(Add("m", testing::MakeMlpModel(1, 2, 2)).ok());
  v1::RunNetworkRequest run;
  run.set_name("m");
  v1::Tensor* t = run.add_inputs();
  t->set_name("x");
  t->set_dtype(v1::DATA_TYPE_FLOAT32);
  t->add_shape(1);
  t->add_shape(2);
  t->set_raw_data("abc");
  v1::RunNetworkResponse ran;
  grpc::Status s = RunAndWait(*handlers_, run, &ran);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("needs 8 bytes"));
  // Refused before the network was looked at: not a request of it.
  v1::GetStatisticsRequest request;
  request.set_name("m");
  v1::GetStatisticsResponse stats;
  ASSERT_TRUE(handlers_->GetStatistics(request, &stats).ok());
  EXPECT_EQ(stats.networks(0).inference_count(), 0u);
}

TEST_F(HandlersTest, GetDevices) {
  v1::GetDevicesResponse response;
  ASSERT_TRUE(handlers_->GetDevices({}, &response).ok());
  ASSERT_EQ(response.devices_size(), 1);
  EXPECT_EQ(response.devices(0).memory_bytes(), 64 * kMiB);
  EXPECT_EQ(response.devices(0).type(), "sim");
}

TEST_F(HandlersTest, GetStatisticsPerNetworkAndDevice) {
  ASSERT_TRUE(Add("b", testing::MakeMlpModel(1, 4, 3)).ok());
  ASSERT_TRUE(Add("a", testing::MakeMlpModel(1, 4, 3)).ok());
  v1::RunNetworkResponse ran;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(RunAndWait(*handlers_, RunRequest("b", {1, 2, 3, 4}, 1), &ran)
                    .ok());
  }
  EXPECT_EQ(RunAndWait(*handlers_, RunRequest("b", {1, 2, 3}, 1), &ran)
                .error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  v1::GetStatisticsRequest request;
  request.set_name("b");
  v1::GetStatisticsResponse one;
  ASSERT_TRUE(handlers_->GetStatistics(request, &one).ok());
  ASSERT_EQ(one.networks_size(), 1);
  const v1::NetworkStatistics& b = one.networks(0);
  EXPECT_EQ(b.name(), "b");
  EXPECT_EQ(b.success_count(), 3u);
  EXPECT_EQ(b.failure_count(), 1u);
  EXPECT_EQ(b.inference_count(), 4u);
  EXPECT_EQ(b.execution_count(), 3u);
  EXPECT_GT(b.last_inference_unix_ns(), 0);
  EXPECT_EQ(b.queue().count(), 3u);
  EXPECT_EQ(b.compute_infer().count(), 3u);
  EXPECT_GT(b.compute_infer().p50_us(), 0);
  ASSERT_EQ(b.partitions_size(), 1);
  EXPECT_EQ(b.partitions(0).compute().count(), 3u);
  ASSERT_EQ(one.devices_size(), 1);
  EXPECT_EQ(one.devices(0).compute().count(), 3u);
  EXPECT_EQ(one.devices(0).device().memory_bytes(), 64 * kMiB);
  EXPECT_LT(one.devices(0).device().available_memory_bytes(), 64 * kMiB);

  v1::GetStatisticsResponse all;
  ASSERT_TRUE(handlers_->GetStatistics({}, &all).ok());
  ASSERT_EQ(all.networks_size(), 2);
  EXPECT_EQ(all.networks(0).name(), "a");
  EXPECT_EQ(all.networks(0).inference_count(), 0u);
  EXPECT_EQ(all.networks(1).name(), "b");

  request.set_name("absent");
  v1::GetStatisticsResponse none;
  EXPECT_EQ(handlers_->GetStatistics(request, &none).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

// A run through shared memory: the handlers register the client's object,
// borrow x from it and write y into it; the reply carries y's header only.
TEST_F(HandlersTest, SharedMemoryRegisterRunUnregister) {
  ASSERT_TRUE(Add("mlp", testing::MakeMlpModel(1, 4, 3)).ok());
  const std::string key = absl::StrCat("/glint_service_test_", getpid());
  const int fd = shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(p, MAP_FAILED);
  float* memory = static_cast<float*>(p);
  const std::vector<float> x = {1, 2, 3, 4};
  std::copy(x.begin(), x.end(), memory);

  v1::RegisterSharedMemoryRequest reg;
  reg.set_name("client");
  reg.set_key(key);
  reg.set_byte_size(4096);
  v1::RegisterSharedMemoryResponse registered;
  ASSERT_TRUE(handlers_->RegisterSharedMemory(reg, &registered).ok());
  EXPECT_EQ(handlers_->RegisterSharedMemory(reg, &registered).error_code(),
            grpc::StatusCode::ALREADY_EXISTS);

  v1::RunNetworkRequest run;
  run.set_name("mlp");
  SharedMemoryTensorToProto(
      {"x", DType::kFloat32, Shape({1, 4}), {"client", 0, 16}},
      run.add_inputs());
  SharedMemoryRefToProto({"client", 64, 64},
                         &(*run.mutable_output_shared_memory())["y"]);
  v1::RunNetworkResponse ran;
  grpc::Status s = RunAndWait(*handlers_, run, &ran);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(ran.outputs_size(), 1);
  EXPECT_TRUE(ran.outputs(0).raw_data().empty());
  EXPECT_EQ(ran.outputs(0).shared_memory().byte_size(), 12u);
  const std::vector<float> want = testing::MlpReference(x, 1, 4, 3);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(memory[16 + i], want[i], 1e-5);

  v1::SharedMemoryStatusRequest status_request;
  v1::SharedMemoryStatusResponse status;
  ASSERT_TRUE(handlers_->SharedMemoryStatus(status_request, &status).ok());
  ASSERT_EQ(status.regions_size(), 1);
  EXPECT_EQ(status.regions(0).key(), key);

  v1::UnregisterSharedMemoryRequest unreg;
  unreg.set_name("client");
  v1::UnregisterSharedMemoryResponse unregistered;
  ASSERT_TRUE(handlers_->UnregisterSharedMemory(unreg, &unregistered).ok());
  v1::RunNetworkResponse refused;
  s = RunAndWait(*handlers_, run, &refused);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("'client'"));
  munmap(p, 4096);
  shm_unlink(key.c_str());
}

// A cancelled token cancels the run: with partitions of seconds each, the
// run ends CANCELLED long before the second could have finished.
TEST(HandlersCancelTest, CancelledTokenCancelsTheRun) {
  std::unique_ptr<HostManager> host = MakeSlowHost();
  SharedMemoryRegistry shared_memory;
  GlintHandlers handlers(host.get(), &shared_memory);
  auto cancel = std::make_shared<CancellationToken>();
  cancel->Cancel();
  const absl::Time start = absl::Now();
  v1::RunNetworkResponse ran;
  grpc::Status s = RunAndWait(
      handlers, RunRequest("slow", std::vector<float>(8, 1.0f), 1), &ran,
      cancel);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(ran.outputs_size(), 0);
}

// --- Through gRPC --------------------------------------------------------

// GlintServiceImpl served on loopback with glintd's settings.
class ServiceTest : public ::testing::Test {
 protected:
  void Serve(HostManager* host, const Authorizer* authorizer = nullptr,
             UploadOptions uploads = UploadOptions()) {
    WorkerPoolOptions pool;
    pool.threads = 1;
    blocking_ = std::make_unique<WorkerPool>(pool);
    service_ = std::make_unique<GlintServiceImpl>(
        host, blocking_.get(), authorizer, /*shared_memory=*/nullptr,
        /*request_budget=*/nullptr, std::move(uploads));
    GrpcServerOptions options;
    options.listen = "127.0.0.1:0";
    ASSERT_TRUE(ValidateGrpcServerOptions(options).ok());
    grpc::ServerBuilder builder;
    int port = 0;
    ConfigureServerBuilder(options, &builder, &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    stub_ = v1::HostManager::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    if (blocking_ != nullptr) blocking_->Shutdown();
  }

  std::unique_ptr<WorkerPool> blocking_;
  std::unique_ptr<GlintServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::HostManager::Stub> stub_;
};

TEST_F(ServiceTest, AddRunAndStatisticsOverTheWire) {
  DeviceConfig device;
  device.memory_bytes = 64 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  Serve(host->get());

  v1::AddNetworkRequest add;
  add.set_name("mlp");
  add.set_model(testing::MakeMlpModel(2, 4, 3));
  v1::AddNetworkResponse added;
  grpc::ClientContext add_context;
  ASSERT_TRUE(stub_->AddNetwork(&add_context, add, &added).ok());

  const std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, -4};
  for (int i = 0; i < 4; ++i) {
    v1::RunNetworkResponse ran;
    grpc::ClientContext context;
    v1::RunNetworkRequest run = RunRequest("mlp", x, 2);
    run.set_priority(i);  // Any priority runs.
    grpc::Status s = stub_->RunNetwork(&context, run, &ran);
    ASSERT_TRUE(s.ok()) << s.error_message();
    absl::StatusOr<Tensor> y = TensorFromProto(ran.outputs(0));
    ASSERT_TRUE(y.ok()) << y.status();
    const std::vector<float> expected = testing::MlpReference(x, 2, 4, 3);
    for (int j = 0; j < 6; ++j) {
      EXPECT_NEAR(y->data<float>()[j], expected[j], 1e-5);
    }
  }
  v1::GetStatisticsRequest request;
  request.set_name("mlp");
  v1::GetStatisticsResponse stats;
  grpc::ClientContext stats_context;
  ASSERT_TRUE(stub_->GetStatistics(&stats_context, request, &stats).ok());
  ASSERT_EQ(stats.networks_size(), 1);
  EXPECT_EQ(stats.networks(0).success_count(), 4u);
  EXPECT_EQ(stats.networks(0).in_flight(), 0);
}

// Streams `model` as AddNetworkStream does: the first message names the
// network (and gives `model_size` when non-zero), the bytes follow in
// pieces of `piece` bytes.
grpc::Status StreamAdd(v1::HostManager::Stub& stub, const std::string& name,
                       const std::string& model, size_t piece,
                       uint64_t model_size, v1::AddNetworkResponse* response,
                       const std::string& precision = "") {
  grpc::ClientContext context;
  auto writer = stub.AddNetworkStream(&context, response);
  v1::AddNetworkChunk chunk;
  chunk.set_name(name);
  chunk.set_model_size(model_size);
  if (!precision.empty()) chunk.mutable_options()->set_precision(precision);
  for (size_t offset = 0;; offset += piece) {
    chunk.set_model(model.substr(std::min(offset, model.size()), piece));
    if (!writer->Write(chunk)) break;
    chunk.Clear();
    if (offset + piece >= model.size()) break;
  }
  writer->WritesDone();
  return writer->Finish();
}

TEST_F(ServiceTest, AStreamedModelIsAddedAndLeavesNoFile) {
  DeviceConfig device;
  device.memory_bytes = 64 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  UploadOptions uploads;
  uploads.dir = FreshTestDir("stream-add");
  Serve(host->get(), nullptr, uploads);

  const std::string model = testing::MakeMlpModel(2, 4, 3);
  v1::AddNetworkResponse added;
  grpc::Status s = StreamAdd(*stub_, "mlp", model, model.size() / 3 + 1,
                             model.size(), &added);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(added.network().name(), "mlp");
  // Without model_size too, in pieces of 7 bytes.
  s = StreamAdd(*stub_, "mlp7", model, 7, 0, &added);
  ASSERT_TRUE(s.ok()) << s.error_message();

  const std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, -4};
  const std::vector<float> expected = testing::MlpReference(x, 2, 4, 3);
  for (const char* name : {"mlp", "mlp7"}) {
    v1::RunNetworkResponse ran;
    grpc::ClientContext context;
    s = stub_->RunNetwork(&context, RunRequest(name, x, 2), &ran);
    ASSERT_TRUE(s.ok()) << s.error_message();
    absl::StatusOr<Tensor> y = TensorFromProto(ran.outputs(0));
    ASSERT_TRUE(y.ok()) << y.status();
    for (int j = 0; j < 6; ++j) {
      EXPECT_NEAR(y->data<float>()[j], expected[j], 1e-5) << name;
    }
  }
  EXPECT_TRUE(IsEmptyDir(uploads.dir));
}

// Each refusal names what is wrong, adds nothing and leaves no file.
TEST_F(ServiceTest, AStreamThatIsWrongAddsNothing) {
  DeviceConfig device;
  device.memory_bytes = 64 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  UploadOptions uploads;
  uploads.dir = FreshTestDir("stream-errors");
  Serve(host->get(), nullptr, uploads);
  const std::string model = testing::MakeMlpModel(2, 4, 3);
  v1::AddNetworkResponse response;

  // No name.
  grpc::Status s = StreamAdd(*stub_, "", model, 64, 0, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("must name"));
  // Bad options: refused at the first message.
  s = StreamAdd(*stub_, "a", model, 64, 0, &response, "fp8");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("fp8"));
  // Shorter and longer than the size given.
  s = StreamAdd(*stub_, "b", model, 64, model.size() + 1, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("stream ended after"));
  s = StreamAdd(*stub_, "c", model, 64, model.size() - 1, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("past the model_size"));
  // Over the 2 GiB a ModelProto can be, said before any byte is sent.
  s = StreamAdd(*stub_, "d", "", 64, uint64_t{1} << 31, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("external data"));
  // Not a model.
  s = StreamAdd(*stub_, "e", "not a model", 4, 0, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  EXPECT_TRUE((*host)->ListNetworks().empty());
  EXPECT_TRUE(IsEmptyDir(uploads.dir));
}

// Uploads beyond UploadOptions::max_concurrent are refused at once; one
// that ends (here cancelled by its client) makes room again.
TEST_F(ServiceTest, UploadsAtOnceAreBoundedAndACancelledOneAddsNothing) {
  DeviceConfig device;
  device.memory_bytes = 64 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  UploadOptions uploads;
  uploads.dir = FreshTestDir("stream-bound");
  uploads.max_concurrent = 1;
  Serve(host->get(), nullptr, uploads);
  const std::string model = testing::MakeMlpModel(2, 4, 3);

  grpc::ClientContext first_context;
  v1::AddNetworkResponse first_response;
  auto first = stub_->AddNetworkStream(&first_context, &first_response);
  v1::AddNetworkChunk chunk;
  chunk.set_name("first");
  chunk.set_model(model.substr(0, 10));
  ASSERT_TRUE(first->Write(chunk));

  v1::AddNetworkResponse response;
  grpc::Status s = StreamAdd(*stub_, "second", model, 64, 0, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), ::testing::HasSubstr("at most 1"));

  first_context.TryCancel();
  EXPECT_EQ(first->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The server learns of the cancel on its own time: the slot is free once
  // its reactor is done.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  do {
    s = StreamAdd(*stub_, "second", model, 64, 0, &response);
  } while (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
           absl::Now() < deadline);
  EXPECT_TRUE(s.ok()) << s.error_message();
  std::vector<NetworkInfo> networks = (*host)->ListNetworks();
  ASSERT_EQ(networks.size(), 1u);
  EXPECT_EQ(networks[0].name, "second");
  EXPECT_TRUE(IsEmptyDir(uploads.dir));
}

// An upload whose client stops sending is cancelled once it has waited
// UploadOptions::idle_timeout for the next message: its place is free
// again, nothing was added and no file is left. One that keeps sending,
// each piece within the timeout, is added however long it takes in all.
TEST_F(ServiceTest, AQuietUploadIsCancelledAndFreesItsPlace) {
  DeviceConfig device;
  device.memory_bytes = 64 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  UploadOptions uploads;
  uploads.dir = FreshTestDir("stream-idle");
  uploads.max_concurrent = 1;
  uploads.idle_timeout = absl::Seconds(1);
  Serve(host->get(), nullptr, uploads);
  const std::string model = testing::MakeMlpModel(2, 4, 3);

  grpc::ClientContext quiet_context;
  // Without the watch the call would never end: fail rather than hang.
  quiet_context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(60));
  v1::AddNetworkResponse quiet_response;
  auto quiet = stub_->AddNetworkStream(&quiet_context, &quiet_response);
  v1::AddNetworkChunk chunk;
  chunk.set_name("quiet");
  chunk.set_model(model.substr(0, 10));
  ASSERT_TRUE(quiet->Write(chunk));
  // Returns once the server has given up on it: the server cancels the
  // call, which its client sees as CANCELLED.
  EXPECT_EQ(quiet->Finish().error_code(), grpc::StatusCode::CANCELLED);

  // The slow client sends a piece every 200 ms, 2.4 s in all. The quiet
  // call's place may still be held for a moment after its client saw it
  // end (the server's reactor ends on gRPC's time): an upload refused for
  // that starts again, at the same pace.
  const size_t piece = (model.size() + 11) / 12;
  auto paced_add = [&]() {
    grpc::ClientContext context;
    v1::AddNetworkResponse response;
    auto slow = stub_->AddNetworkStream(&context, &response);
    for (size_t offset = 0; offset < model.size(); offset += piece) {
      v1::AddNetworkChunk next;
      if (offset == 0) next.set_name("slow");
      next.set_model(model.substr(offset, piece));
      if (offset > 0) absl::SleepFor(absl::Milliseconds(200));  // Its pace.
      if (!slow->Write(next)) break;
    }
    slow->WritesDone();
    return slow->Finish();
  };
  grpc::Status added = paced_add();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (added.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));  // Polls the server's state.
    added = paced_add();
  }
  EXPECT_TRUE(added.ok()) << added.error_message();
  std::vector<NetworkInfo> networks = (*host)->ListNetworks();
  ASSERT_EQ(networks.size(), 1u);
  EXPECT_EQ(networks[0].name, "slow");
  EXPECT_TRUE(IsEmptyDir(uploads.dir));
}

// With an Authorizer, a call without a token is refused before it reaches
// HostManager, whatever it asks. (Calls with tokens: tests/e2e_auth_test.)
TEST_F(ServiceTest, WithTokensEveryHandlerRefusesAnonymousCalls) {
  DeviceConfig device;
  device.memory_bytes = 64 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_TRUE((*host)->AddNetwork("m", testing::MakeMlpModel(1, 2, 2), {}).ok());
  absl::StatusOr<std::unique_ptr<Authorizer>> authorizer =
      Authorizer::Parse("token0123456789abcdef infer,admin\n");
  ASSERT_TRUE(authorizer.ok()) << authorizer.status();
  Serve(host->get(), authorizer->get());
  auto refused = [](const grpc::Status& s) {
    return s.error_code() == grpc::StatusCode::UNAUTHENTICATED;
  };
  {
    v1::AddNetworkRequest request;
    request.set_name("n");
    request.set_model(testing::MakeMlpModel(1, 2, 2));
    v1::AddNetworkResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(refused(stub_->AddNetwork(&context, request, &response)));
  }
  {
    v1::AddNetworkResponse response;
    grpc::ClientContext context;
    auto writer = stub_->AddNetworkStream(&context, &response);
    v1::AddNetworkChunk chunk;
    chunk.set_name("n");
    chunk.set_model(testing::MakeMlpModel(1, 2, 2));
    writer->Write(chunk);  // Refused before or after it arrives.
    writer->WritesDone();
    EXPECT_TRUE(refused(writer->Finish()));
  }
  {
    v1::RemoveNetworkRequest request;
    request.set_name("m");
    v1::RemoveNetworkResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(refused(stub_->RemoveNetwork(&context, request, &response)));
  }
  {
    v1::ListNetworksResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(refused(stub_->ListNetworks(&context, {}, &response)));
    EXPECT_EQ(response.networks_size(), 0);
  }
  {
    v1::GetNetworkRequest request;
    request.set_name("m");
    v1::GetNetworkResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(refused(stub_->GetNetwork(&context, request, &response)));
  }
  {
    v1::RunNetworkResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(refused(stub_->RunNetwork(
        &context, RunRequest("m", {1, 2}, 1), &response)));
    EXPECT_EQ(response.outputs_size(), 0);
  }
  {
    v1::GetDevicesResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(refused(stub_->GetDevices(&context, {}, &response)));
    EXPECT_EQ(response.devices_size(), 0);
  }
  {
    v1::GetStatisticsResponse response;
    grpc::ClientContext context;
    EXPECT_TRUE(refused(stub_->GetStatistics(&context, {}, &response)));
    EXPECT_EQ(response.networks_size(), 0);
  }
  // Nothing was added, removed or run.
  std::vector<NetworkInfo> networks = (*host)->ListNetworks();
  ASSERT_EQ(networks.size(), 1u);
  EXPECT_EQ(networks[0].name, "m");
  EXPECT_EQ((*host)->GetStatistics("m")->inference_count, 0u);
}

// The client cancels a run the server holds: OnCancel cancels it, so its
// second partition never starts and the network can be removed after about
// one partition's time, not two.
TEST_F(ServiceTest, ClientCancellationReachesTheRun) {
  std::unique_ptr<HostManager> host = MakeSlowHost();
  Serve(host.get());
  const absl::Time start = absl::Now();
  grpc::ClientContext context;
  v1::RunNetworkRequest run =
      RunRequest("slow", std::vector<float>(8, 1.0f), 1);
  v1::RunNetworkResponse ran;
  absl::Notification answered;
  grpc::Status status;
  stub_->async()->RunNetwork(&context, &run, &ran, [&](grpc::Status s) {
    status = std::move(s);
    answered.Notify();
  });
  // The server holds the run once it is in flight (a state, waited for:
  // no timing assumed).
  const absl::Time limit = absl::Now() + absl::Seconds(20);
  while (host->GetStatistics("slow")->in_flight == 0 && absl::Now() < limit) {
    std::this_thread::yield();
  }
  ASSERT_EQ(host->GetStatistics("slow")->in_flight, 1);
  context.TryCancel();
  answered.WaitForNotification();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  // Waits for the run to end on the server.
  ASSERT_TRUE(host->RemoveNetwork("slow").ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// Beyond HostManager's queue, a run is refused at once, while the run that
// fills it is still computing.
TEST_F(ServiceTest, FullAdmissionQueueIsResourceExhaustedAtOnce) {
  HostManagerOptions options;
  options.max_active_requests = 1;
  options.max_queue_size = 0;
  std::unique_ptr<HostManager> host = MakeSlowHost(options);
  Serve(host.get());
  auto cancel = std::make_shared<CancellationToken>();
  RunOptions blocker_options;
  blocker_options.cancel = cancel;
  absl::Notification blocker_done;
  host->RunNetworkAsync(
      "slow",
      {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 8}),
                                std::vector<float>(8, 1.0f))}},
      blocker_options,
      [&](absl::StatusOr<std::vector<NamedTensor>>) { blocker_done.Notify(); });

  grpc::ClientContext context;
  v1::RunNetworkResponse ran;
  grpc::Status s = stub_->RunNetwork(
      &context, RunRequest("slow", std::vector<float>(8, 1.0f), 1), &ran);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << s.error_message();
  EXPECT_FALSE(blocker_done.HasBeenNotified());
  cancel->Cancel();
  blocker_done.WaitForNotification();
}

}  // namespace
}  // namespace glint
