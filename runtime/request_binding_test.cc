#include "runtime/request_binding.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace glint {
namespace {

// A network "net" with inputs a: float32[2, 3] and b: int64[2], and outputs
// y, z.
NetworkInfo Net(int max_batch_size = 0) {
  NetworkInfo info;
  info.name = "net";
  info.inputs = {{"a", DType::kFloat32, Shape({2, 3})},
                 {"b", DType::kInt64, Shape({2})}};
  info.outputs = {{"y", DType::kFloat32, Shape({2, 3})},
                  {"z", DType::kFloat32, Shape({2})}};
  info.batching.max_batch_size = max_batch_size;
  return info;
}

NamedTensor A(std::vector<int64_t> dims = {2, 3}) {
  Shape shape(dims);
  std::vector<float> v(static_cast<size_t>(shape.NumElements()), 1.0f);
  return {"a", Tensor::FromVector(DType::kFloat32, shape, v)};
}

NamedTensor B(int64_t rows = 2) {
  std::vector<int64_t> v(static_cast<size_t>(rows), 7);
  return {"b", Tensor::FromVector(DType::kInt64, Shape({rows}), v)};
}

std::string Error(const absl::StatusOr<std::vector<Tensor>>& bound) {
  EXPECT_EQ(bound.status().code(), absl::StatusCode::kInvalidArgument)
      << bound.status();
  return std::string(bound.status().message());
}

TEST(BindInputsTest, InputsComeBackInTheNetworksOrder) {
  absl::StatusOr<std::vector<Tensor>> bound = BindInputs(Net(), {B(), A()});
  ASSERT_TRUE(bound.ok()) << bound.status();
  ASSERT_EQ(bound->size(), 2u);
  EXPECT_EQ((*bound)[0].dtype(), DType::kFloat32);
  EXPECT_EQ((*bound)[1].data<int64_t>()[1], 7);
}

TEST(BindInputsTest, EachMismatchIsNamed) {
  EXPECT_EQ(Error(BindInputs(Net(), {A(), B(), {"c", Tensor()}})),
            "network 'net' has no input 'c' (inputs: a, b)");
  EXPECT_EQ(Error(BindInputs(Net(), {A(), A(), B()})),
            "input 'a' is given twice");
  EXPECT_EQ(Error(BindInputs(Net(), {A()})), "missing input 'b' (int64[2])");
  EXPECT_EQ(Error(BindInputs(Net(), {A({3, 2}), B()})),
            "input 'a' has shape [3, 2], expected [2, 3]");
  NamedTensor wrong_type = {"b", A().tensor};
  EXPECT_EQ(Error(BindInputs(Net(), {A(), wrong_type})),
            "input 'b' has dtype float32, expected int64");
}

TEST(BindInputsTest, ABatchingNetworkTakesOneToMaxRowsTheSameForAll) {
  NetworkInfo info = Net(/*max_batch_size=*/2);
  EXPECT_TRUE(BindInputs(info, {A({1, 3}), B(1)}).ok());
  EXPECT_EQ(Error(BindInputs(info, {A({3, 3}), B(3)})),
            "input 'a' has shape [3, 3], expected [?, 3] with 1..2 rows "
            "(max_batch_size)");
  EXPECT_EQ(Error(BindInputs(info, {A({1, 3}), B(2)})),
            "input 'b' has 2 rows but input 'a' has 1: a batched run's "
            "inputs share their first (batch) dimension");
}

TEST(BindOutputsTest, EveryOutputByDefaultElseThoseNamed) {
  EXPECT_EQ(*BindOutputs(Net(), {}), (std::vector<int>{0, 1}));
  EXPECT_EQ(*BindOutputs(Net(), {"z"}), (std::vector<int>{1}));
  absl::StatusOr<std::vector<int>> unknown = BindOutputs(Net(), {"w"});
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(unknown.status().message(), "network 'net' has no output 'w'");
}

TEST(NameOutputsTest, ResultsTakeTheNamesOfTheOutputsAskedFor) {
  absl::StatusOr<std::vector<NamedTensor>> named =
      NameOutputs(Net(), {1}, std::vector<Tensor>{B().tensor});
  ASSERT_TRUE(named.ok());
  ASSERT_EQ(named->size(), 1u);
  EXPECT_EQ((*named)[0].name, "z");
  EXPECT_EQ(NameOutputs(Net(), {0}, absl::CancelledError("stop"))
                .status()
                .code(),
            absl::StatusCode::kCancelled);
}

TEST(BindRequestTest, ProfileNeedsATrace) {
  RunOptions options;
  options.profile = true;
  absl::StatusOr<std::shared_ptr<ExecutionRequest>> request =
      BindRequest(Net(), {A(), B()}, options, nullptr);
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BindRequestTest, CarriesTheRunsOptions) {
  RunOptions options;
  options.requested_outputs = {"y"};
  options.priority = 3;
  options.deadline = absl::UnixEpoch() + absl::Hours(1);
  absl::StatusOr<std::shared_ptr<ExecutionRequest>> request =
      BindRequest(Net(), {A(), B()}, options, nullptr);
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ((*request)->inputs.size(), 2u);
  EXPECT_EQ((*request)->outputs, (std::vector<int>{0}));
  EXPECT_EQ((*request)->priority, 3);
  EXPECT_EQ((*request)->deadline, options.deadline);
}

}  // namespace
}  // namespace glint
