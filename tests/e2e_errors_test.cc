// Error paths through a real glintd: each request that must fail gets the
// exact gRPC code and a message naming what is wrong, and the daemon keeps
// serving afterwards (checked after every case).
#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/glint.grpc.pb.h"
#include "tests/process_util.h"
#include "tests/test_util.h"

namespace glint {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::GlintdProcess;

Tensor Floats(Shape shape) {
  std::vector<float> v(static_cast<size_t>(shape.NumElements()), 1.0f);
  return Tensor::FromVector<float>(DType::kFloat32, std::move(shape), v);
}

class ErrorsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
        GlintdProcess::Start({});
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = d->release();
    absl::StatusOr<NetworkInfo> add =
        daemon_->client().AddNetwork("add", testing::AddModel());
    ASSERT_TRUE(add.ok()) << add.status();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(daemon_, nullptr); }

  // The daemon still answers and still computes.
  void TearDown() override {
    if (daemon_ == nullptr) return;
    EXPECT_TRUE(daemon_->CheckHealth(absl::Seconds(5)).ok());
    absl::StatusOr<std::vector<NamedTensor>> out = client().RunNetwork(
        "add", {{"x", Floats({2, 3})}, {"y", Floats({2, 3})}});
    ASSERT_TRUE(out.ok()) << out.status() << "\n" << daemon_->Log();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].name, "z");
    EXPECT_EQ((*out)[0].tensor.data<float>()[5], 2.0f);
  }

  GlintClient& client() { return daemon_->client(); }

  absl::Status Run(std::vector<NamedTensor> inputs) {
    return client().RunNetwork("add", inputs).status();
  }

  static GlintdProcess* daemon_;
};

GlintdProcess* ErrorsTest::daemon_ = nullptr;

TEST_F(ErrorsTest, MalformedModelIsInvalidArgument) {
  absl::StatusOr<NetworkInfo> r =
      client().AddNetwork("junk", "\xff\xff this is not an ONNX model");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument)
      << r.status();
  // A failed add leaves no trace: the name is free.
  EXPECT_EQ(client().GetNetwork("junk").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ErrorsTest, EmptyModelIsInvalidArgument) {
  EXPECT_EQ(client().AddNetwork("empty", "").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ErrorsTest, UnsupportedOpIsUnimplementedNamingOpAndNode) {
  // Random ops are ONNX ops no Glint device runs (runs are deterministic).
  absl::StatusOr<NetworkInfo> r = client().AddNetwork(
      "random", testing::SingleOpModel("RandomNormalLike", "my_random_node"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented)
      << r.status();
  EXPECT_THAT(std::string(r.status().message()),
              AllOf(HasSubstr("RandomNormalLike"),
                    HasSubstr("my_random_node")));
  EXPECT_EQ(client().GetNetwork("random").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ErrorsTest, UnknownNetworkIsNotFound) {
  EXPECT_EQ(client().GetNetwork("nope").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(client().RemoveNetwork("nope").code(),
            absl::StatusCode::kNotFound);
  absl::Status run = client().RunNetwork("nope", {}).status();
  EXPECT_EQ(run.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(run.message()), HasSubstr("nope"));
}

TEST_F(ErrorsTest, DuplicateNameIsAlreadyExists) {
  absl::StatusOr<NetworkInfo> r =
      client().AddNetwork("add", testing::AddModel());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAlreadyExists)
      << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("add"));
}

TEST_F(ErrorsTest, MissingInputIsInvalidArgumentNamingIt) {
  absl::Status s = Run({{"x", Floats({2, 3})}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'y'"));
}

TEST_F(ErrorsTest, ExtraInputIsInvalidArgumentNamingIt) {
  absl::Status s = Run({{"x", Floats({2, 3})},
                        {"y", Floats({2, 3})},
                        {"bogus_input", Floats({1})}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("bogus_input"));
}

TEST_F(ErrorsTest, DuplicateInputIsInvalidArgument) {
  absl::Status s = Run({{"x", Floats({2, 3})},
                        {"x", Floats({2, 3})},
                        {"y", Floats({2, 3})}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST_F(ErrorsTest, WronglyShapedInputIsInvalidArgumentNamingIt) {
  absl::Status s = Run({{"x", Floats({3, 2})}, {"y", Floats({2, 3})}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("'x'"), HasSubstr("[2, 3]")));
}

TEST_F(ErrorsTest, WronglyTypedInputIsInvalidArgumentNamingIt) {
  Tensor ints = Tensor::FromVector<int32_t>(DType::kInt32, Shape({2, 3}),
                                            {1, 2, 3, 4, 5, 6});
  absl::Status s = Run({{"x", Floats({2, 3})}, {"y", ints}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()),
              AllOf(HasSubstr("'y'"), HasSubstr("float32")));
}

TEST_F(ErrorsTest, UnknownRequestedOutputIsInvalidArgument) {
  absl::Status s =
      client()
          .RunNetwork("add", {{"x", Floats({2, 3})}, {"y", Floats({2, 3})}},
                      {"no_such_output"})
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("no_such_output"));
}

// Wire-level malformations that the domain types cannot even express.
TEST_F(ErrorsTest, MalformedTensorMessagesAreInvalidArgument) {
  struct Case {
    const char* what;
    int dtype;
    std::vector<int64_t> shape;
    size_t bytes;
    const char* needle;
  };
  for (const Case& c : {
           Case{"byte count", 1, {2, 3}, 20, "needs 24 bytes"},
           Case{"negative dim", 1, {2, -3}, 24, "negative"},
           Case{"unknown dtype", 99, {2, 3}, 24, "dtype"},
           Case{"string dtype", 8, {2, 3}, 24, "dtype"},
       }) {
    v1::RunNetworkRequest request;
    request.set_name("add");
    v1::Tensor* x = request.add_inputs();
    x->set_name("x");
    x->set_dtype(static_cast<v1::DataType>(c.dtype));
    for (int64_t d : c.shape) x->add_shape(d);
    x->set_raw_data(std::string(c.bytes, '\0'));
    v1::RunNetworkResponse response;
    grpc::ClientContext context;
    grpc::Status s = client().stub()->RunNetwork(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.what;
    EXPECT_THAT(s.error_message(), AllOf(HasSubstr("'x'"), HasSubstr(c.needle)))
        << c.what;
  }
}

TEST_F(ErrorsTest, NegativeInputShapeOptionIsInvalidArgument) {
  AddNetworkOptions options;
  v1::AddNetworkRequest request;
  request.set_name("neg");
  request.set_model(testing::AddModel());
  (*request.mutable_options()->mutable_input_shapes())["x"].add_dims(-2);
  v1::AddNetworkResponse response;
  grpc::ClientContext context;
  grpc::Status s = client().stub()->AddNetwork(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

// A second daemon with one tiny device.
TEST(ResourceTest, ModelTooLargeForDevicesIsResourceExhausted) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
      GlintdProcess::Start({"--devices=sim:memory=1MiB"});
  ASSERT_TRUE(d.ok()) << d.status();
  GlintClient& client = (*d)->client();

  absl::StatusOr<std::vector<DeviceInfo>> devices = client.GetDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].memory_bytes, uint64_t{1} << 20);

  // 1024 x 512 float32 weights: 2 MiB on a 1 MiB device.
  absl::StatusOr<NetworkInfo> r =
      client.AddNetwork("big", testing::BigWeightsModel(1024, 512));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted)
      << r.status();
  EXPECT_EQ(client.GetNetwork("big").status().code(),
            absl::StatusCode::kNotFound);

  // Still serving, and the failed add released what it had reserved.
  devices = client.GetDevices();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ((*devices)[0].available_memory_bytes,
            (*devices)[0].memory_bytes);
  absl::StatusOr<NetworkInfo> small =
      client.AddNetwork("small", testing::AddModel());
  EXPECT_TRUE(small.ok()) << small.status();
}

TEST(StartupTest, BadDevicesFlagExitsNonZero) {
  absl::StatusOr<std::unique_ptr<GlintdProcess>> d =
      GlintdProcess::Start({"--devices=sim*0"}, absl::Seconds(20));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              AllOf(HasSubstr("exited with code 1"), HasSubstr("sim*0")));
}

}  // namespace
}  // namespace glint
