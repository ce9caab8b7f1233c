// The handlers' logic without a network: GlintServiceImpl called directly
// with a default ServerContext over an in-process HostManager.
#include "runtime/server/service.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"
#include "proto/proto_convert.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

TEST(DeadlineFromGrpcTest, NoDeadlineIsInfinite) {
  EXPECT_EQ(DeadlineFromGrpc(std::chrono::system_clock::time_point::max()),
            absl::InfiniteFuture());
  // What a ServerContext without a client deadline reports.
  grpc::ServerContext context;
  EXPECT_EQ(DeadlineFromGrpc(context.deadline()), absl::InfiniteFuture());
}

TEST(DeadlineFromGrpcTest, FiniteDeadlineIsKept) {
  const auto d = std::chrono::system_clock::now() + std::chrono::seconds(3);
  EXPECT_LT(absl::AbsDuration(DeadlineFromGrpc(d) - absl::FromChrono(d)),
            absl::Milliseconds(1));
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DeviceConfig device;
    device.memory_bytes = 64 * kMiB;
    absl::StatusOr<std::unique_ptr<HostManager>> hm =
        HostManager::CreateFromConfigs(HostManagerOptions(), {device});
    ASSERT_TRUE(hm.ok()) << hm.status();
    host_manager_ = *std::move(hm);
    service_ = std::make_unique<GlintServiceImpl>(host_manager_.get());
  }

  grpc::Status Add(const std::string& name, std::string model) {
    v1::AddNetworkRequest request;
    request.set_name(name);
    request.set_model(std::move(model));
    v1::AddNetworkResponse response;
    grpc::ServerContext context;
    return service_->AddNetwork(&context, &request, &response);
  }

  std::unique_ptr<HostManager> host_manager_;
  std::unique_ptr<GlintServiceImpl> service_;
};

TEST_F(ServiceTest, AddRunListRemove) {
  v1::AddNetworkRequest add;
  add.set_name("mlp");
  add.set_model(testing::MakeMlpModel(1, 4, 3));
  v1::AddNetworkResponse added;
  grpc::ServerContext c1;
  ASSERT_TRUE(service_->AddNetwork(&c1, &add, &added).ok());
  EXPECT_EQ(added.network().name(), "mlp");
  ASSERT_EQ(added.network().inputs_size(), 1);
  EXPECT_FALSE(added.network().partitions().empty());

  const std::vector<float> x = {1, 2, 3, 4};
  v1::RunNetworkRequest run;
  run.set_name("mlp");
  ASSERT_TRUE(TensorToProto({added.network().inputs(0).name(),
                             Tensor::FromVector<float>(DType::kFloat32,
                                                       Shape({1, 4}), x)},
                            run.add_inputs())
                  .ok());
  v1::RunNetworkResponse ran;
  grpc::ServerContext c2;
  grpc::Status s = service_->RunNetwork(&c2, &run, &ran);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(ran.outputs_size(), 1);
  absl::StatusOr<Tensor> y = TensorFromProto(ran.outputs(0));
  ASSERT_TRUE(y.ok()) << y.status();
  const std::vector<float> expected = testing::MlpReference(x, 1, 4, 3);
  ASSERT_EQ(y->num_elements(), 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(y->data<float>()[i], expected[i], 1e-5);
  }

  v1::ListNetworksRequest list_request;
  v1::ListNetworksResponse list;
  grpc::ServerContext c4;
  ASSERT_TRUE(service_->ListNetworks(&c4, &list_request, &list).ok());
  ASSERT_EQ(list.networks_size(), 1);

  v1::RemoveNetworkRequest remove;
  remove.set_name("mlp");
  v1::RemoveNetworkResponse removed;
  grpc::ServerContext c5;
  EXPECT_TRUE(service_->RemoveNetwork(&c5, &remove, &removed).ok());
  grpc::ServerContext c6;
  EXPECT_EQ(service_->RemoveNetwork(&c6, &remove, &removed).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, StatusesKeepCodeAndMessage) {
  EXPECT_EQ(Add("bad", "not a model").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Add("m", testing::MakeMlpModel(1, 2, 2)).ok());
  grpc::Status dup = Add("m", testing::MakeMlpModel(1, 2, 2));
  EXPECT_EQ(dup.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(dup.error_message(), HasSubstr("m"));

  v1::GetNetworkRequest get;
  get.set_name("absent");
  v1::GetNetworkResponse got;
  grpc::ServerContext context;
  EXPECT_EQ(service_->GetNetwork(&context, &get, &got).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ServiceTest, BadTensorIsRefusedBeforeHostManager) {
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
  grpc::ServerContext context;
  grpc::Status s = service_->RunNetwork(&context, &run, &ran);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("needs 8 bytes"));
}

TEST_F(ServiceTest, GetDevices) {
  v1::GetDevicesRequest request;
  v1::GetDevicesResponse response;
  grpc::ServerContext context;
  ASSERT_TRUE(service_->GetDevices(&context, &request, &response).ok());
  ASSERT_EQ(response.devices_size(), 1);
  EXPECT_EQ(response.devices(0).memory_bytes(), 64 * kMiB);
  EXPECT_EQ(response.devices(0).type(), "sim");
}

// With an Authorizer, a call without a token is refused before it reaches
// HostManager, whatever it asks. (Calls with tokens need real metadata:
// tests/e2e_auth_test.)
TEST_F(ServiceTest, WithTokensEveryHandlerRefusesAnonymousCalls) {
  ASSERT_TRUE(Add("m", testing::MakeMlpModel(1, 2, 2)).ok());
  absl::StatusOr<std::unique_ptr<Authorizer>> authorizer =
      Authorizer::Parse("token0123456789abcdef infer,admin\n");
  ASSERT_TRUE(authorizer.ok()) << authorizer.status();
  GlintServiceImpl guarded(host_manager_.get(), authorizer->get());
  const auto refused = [](const grpc::Status& s) {
    return s.error_code() == grpc::StatusCode::UNAUTHENTICATED;
  };
  {
    v1::AddNetworkRequest request;
    request.set_name("n");
    request.set_model(testing::MakeMlpModel(1, 2, 2));
    v1::AddNetworkResponse response;
    grpc::ServerContext context;
    EXPECT_TRUE(refused(guarded.AddNetwork(&context, &request, &response)));
  }
  {
    v1::RemoveNetworkRequest request;
    request.set_name("m");
    v1::RemoveNetworkResponse response;
    grpc::ServerContext context;
    EXPECT_TRUE(
        refused(guarded.RemoveNetwork(&context, &request, &response)));
  }
  {
    v1::ListNetworksResponse response;
    grpc::ServerContext context;
    EXPECT_TRUE(refused(guarded.ListNetworks(
        &context, &v1::ListNetworksRequest::default_instance(), &response)));
    EXPECT_EQ(response.networks_size(), 0);
  }
  {
    v1::GetNetworkRequest request;
    request.set_name("m");
    v1::GetNetworkResponse response;
    grpc::ServerContext context;
    EXPECT_TRUE(refused(guarded.GetNetwork(&context, &request, &response)));
  }
  {
    v1::RunNetworkRequest request;
    request.set_name("m");
    v1::RunNetworkResponse response;
    grpc::ServerContext context;
    EXPECT_TRUE(refused(guarded.RunNetwork(&context, &request, &response)));
  }
  {
    v1::GetDevicesResponse response;
    grpc::ServerContext context;
    EXPECT_TRUE(refused(guarded.GetDevices(
        &context, &v1::GetDevicesRequest::default_instance(), &response)));
    EXPECT_EQ(response.devices_size(), 0);
  }
  // Nothing was added or removed.
  std::vector<NetworkInfo> networks = host_manager_->ListNetworks();
  ASSERT_EQ(networks.size(), 1u);
  EXPECT_EQ(networks[0].name, "m");
}

// A gone client cancels its run: on devices slow enough that each of the
// two partitions takes seconds of simulated compute, the run returns
// CANCELLED long before the second could have finished.
TEST(RunUntilDoneOrCancelledTest, ClientGoneCancelsTheRun) {
  std::vector<DeviceConfig> devices(2);
  for (DeviceConfig& d : devices) {
    d.memory_bytes = 64 * kMiB;
    d.params["compute_gflops"] = "0.00000004";  // 40 FLOP/s.
  }
  auto host = HostManager::CreateFromConfigs(HostManagerOptions(), devices);
  ASSERT_TRUE(host.ok()) << host.status();
  AddNetworkOptions options;
  options.partition.strategy = PartitionStrategy::kLoadBalanced;
  options.partition.plan_devices = 2;
  // Each 8x8 MatMul layer is 128 FLOPs: about 3 s per partition.
  ASSERT_TRUE(
      (*host)
          ->AddNetwork("slow", testing::MakeDeepMlpModel(1, 8, 2), options)
          .ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<NamedTensor>> out = RunUntilDoneOrCancelled(
      **host, "slow",
      {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 8}),
                                std::vector<float>(8, 1.0f))}},
      RunOptions(), [] { return true; });
  EXPECT_EQ(out.status().code(), absl::StatusCode::kCancelled) << out.status();
  // At most the first partition ran (the cancel lands within milliseconds).
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST(RunUntilDoneOrCancelledTest, ClientStillThereGetsTheOutputs) {
  auto host = HostManager::CreateFromConfigs(HostManagerOptions(),
                                             {DeviceConfig()});
  ASSERT_TRUE(host.ok());
  ASSERT_TRUE((*host)
                  ->AddNetwork("mlp", testing::MakeMlpModel(1, 4, 4), {})
                  .ok());
  absl::StatusOr<std::vector<NamedTensor>> out = RunUntilDoneOrCancelled(
      **host, "mlp",
      {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 4}),
                                std::vector<float>(4, 1.0f))}},
      RunOptions(), [] { return false; });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(
      (*out)[0].tensor.data<float>()[0],
      testing::MlpReference(std::vector<float>(4, 1.0f), 1, 4, 4)[0]);
}

}  // namespace
}  // namespace glint
