#include "runtime/request_binding.h"

#include <map>
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

// a: float32[?, ?] and b: int64[?], the first dims named "n" and a's
// second one unnamed, as ResolveDynamicDims makes them with `max_dims`.
NetworkInfo DynamicNet(const std::map<std::string, int64_t>& max_dims = {}) {
  NetworkInfo info = Net();
  info.inputs[0].shape = Shape({Shape::kUnknownDim, Shape::kUnknownDim});
  info.inputs[0].dim_names = {"n", ""};
  info.inputs[1].shape = Shape({Shape::kUnknownDim});
  info.inputs[1].dim_names = {"n"};
  absl::StatusOr<std::vector<DynamicDim>> dims =
      ResolveDynamicDims(info.inputs, max_dims);
  EXPECT_TRUE(dims.ok()) << dims.status();
  if (dims.ok()) info.dynamic_dims = *dims;
  return info;
}

TEST(ResolveDynamicDimsTest, NamesKeysAndBounds) {
  NetworkInfo info = DynamicNet({{"n", 5}, {"a:1", 9}});
  ASSERT_EQ(info.dynamic_dims.size(), 3u);
  EXPECT_EQ(info.dynamic_dims[0].Key(), "n");
  EXPECT_EQ(info.dynamic_dims[0].max, 5);
  EXPECT_EQ(info.dynamic_dims[1].Key(), "a:1");
  EXPECT_EQ(info.dynamic_dims[1].max, 9);
  EXPECT_EQ(info.dynamic_dims[2].input, "b");
  EXPECT_EQ(info.dynamic_dims[2].max, 5);
  EXPECT_EQ(DynamicNet().dynamic_dims[1].max, kDefaultMaxDim);

  absl::StatusOr<std::vector<DynamicDim>> bad =
      ResolveDynamicDims(info.inputs, {{"seq", 4}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "max_dims names 'seq', which is no dynamic dim of the model (its "
            "dynamic dims: n, a:1)");
  bad = ResolveDynamicDims(info.inputs, {{"a:1", kMaxDimBound + 1}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  bad = ResolveDynamicDims(Net().inputs, {{"a:0", 4}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BindInputsTest, DynamicDimsTakeAnySizeWithinBoundsOneSizePerName) {
  const NetworkInfo info = DynamicNet({{"n", 4}});
  for (int64_t n : {0, 1, 4}) {
    for (int64_t m : {1, 7}) {
      EXPECT_TRUE(BindInputs(info, {A({n, m}), B(n)}).ok()) << n << "x" << m;
    }
  }
  EXPECT_EQ(Error(BindInputs(info, {A({5, 3}), B(5)})),
            "input 'a' has shape [5, 3]: its dim 0 ('n') is 5, over its bound "
            "4 (max_dims['n'])");
  EXPECT_EQ(Error(BindInputs(info, {A({2, 3}), B(3)})),
            "input 'b' dim 0 ('n') is 3 but input 'a' dim 0 ('n') is 2: dims "
            "of one name are one size");
  EXPECT_EQ(Error(BindInputs(info, {A({2}), B(2)})),
            "input 'a' has shape [2], expected [?, ?]");
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
  // A duplicate is refused at once, whatever the list's length (issue 31,
  // point 3: 100,000 copies of one name used to cost 40 s).
  EXPECT_EQ(*BindOutputs(Net(), {"z", "y"}), (std::vector<int>{1, 0}));
  absl::StatusOr<std::vector<int>> twice =
      BindOutputs(Net(), std::vector<std::string>(100000, "y"));
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(twice.status().message(), "output 'y' is requested twice");
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
