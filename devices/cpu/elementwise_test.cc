#include <cmath>
#include <limits>
#include <vector>

#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunKernel;
using testing::ToVector;

absl::StatusOr<std::vector<Tensor>> Binary(const std::string& op, Tensor a,
                                           Tensor b) {
  return RunKernel(CpuKernelRegistry(), MakeNode(op, {"a", "b"}, {"y"}),
                   {std::move(a), std::move(b)});
}

TEST(ElementwiseTest, AddBroadcastsRowAndColumn) {
  auto out = Binary("Add", MakeTensor<float>({2, 1}, {10, 20}),
                    MakeTensor<float>({1, 3}, {1, 2, 3}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(ToVector<float>((*out)[0]),
              ElementsAre(11, 12, 13, 21, 22, 23));
}

TEST(ElementwiseTest, SubWithScalarAndLowerRank) {
  auto out = Binary("Sub", MakeTensor<int64_t>({2, 2}, {5, 6, 7, 8}),
                    MakeTensor<int64_t>({}, {1}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(4, 5, 6, 7));
  out = Binary("Sub", MakeTensor<double>({2}, {1, 2}),
               MakeTensor<double>({2, 2}, {1, 1, 2, 2}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<double>((*out)[0]), ElementsAre(0, 1, -1, 0));
}

TEST(ElementwiseTest, IntegerArithmeticWrapsAround) {
  auto out = Binary("Mul", MakeTensor<int8_t>({2}, {100, -128}),
                    MakeTensor<int8_t>({2}, {2, -1}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int8_t>((*out)[0]), ElementsAre(-56, -128));
  out = Binary("Mul", MakeTensor<uint16_t>({1}, {65535}),
               MakeTensor<uint16_t>({1}, {65535}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<uint16_t>((*out)[0]), ElementsAre(1));
  out = Binary("Add", MakeTensor<int32_t>({1}, {2147483647}),
               MakeTensor<int32_t>({1}, {1}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int32_t>((*out)[0]), ElementsAre(-2147483647 - 1));
  out = Binary("Sub", MakeTensor<uint32_t>({1}, {0}),
               MakeTensor<uint32_t>({1}, {1}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<uint32_t>((*out)[0]), ElementsAre(4294967295u));
}

TEST(ElementwiseTest, IntegerDivTruncatesAndRejectsZero) {
  auto out = Binary("Div", MakeTensor<int32_t>({4}, {7, -7, 7, -2147483647 - 1}),
                    MakeTensor<int32_t>({4}, {2, 2, -2, -1}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int32_t>((*out)[0]),
              ElementsAre(3, -3, -3, -2147483647 - 1));
  out = Binary("Div", MakeTensor<uint64_t>({2}, {9, 10}),
               MakeTensor<uint64_t>({1}, {4}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<uint64_t>((*out)[0]), ElementsAre(2, 2));
  out = Binary("Div", MakeTensor<int64_t>({2}, {1, 2}),
               MakeTensor<int64_t>({2}, {1, 0}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("node 'div_node' (Div)"));
}

TEST(ElementwiseTest, FloatDivByZeroIsIeee) {
  auto out = Binary("Div", MakeTensor<float>({3}, {1, -1, 0}),
                    MakeTensor<float>({1}, {0}));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> y = ToVector<float>((*out)[0]);
  EXPECT_EQ(y[0], std::numeric_limits<float>::infinity());
  EXPECT_EQ(y[1], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(y[2]));
}

TEST(ElementwiseTest, RandomBroadcastMatchesNaiveLoop) {
  const Tensor a = RandomTensor({2, 1, 4, 1}, 1);
  const Tensor b = RandomTensor({3, 1, 5}, 2);
  auto out = Binary("Mul", a, b);
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0];
  ASSERT_EQ(y.shape(), Shape({2, 3, 4, 5}));
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 5; ++l) {
          const float want = pa[i * 4 + k] * pb[j * 5 + l];
          EXPECT_EQ(y.data<float>()[((i * 3 + j) * 4 + k) * 5 + l], want);
        }
}

TEST(ElementwiseTest, ShapeErrorsAreInvalidArgument) {
  auto out = Binary("Add", MakeTensor<float>({2, 3}, std::vector<float>(6)),
                    MakeTensor<float>({2}, {1, 2}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("add_node"));
}

TEST(ElementwiseTest, DTypeErrors) {
  // Mixed dtypes: malformed node.
  EXPECT_EQ(Binary("Add", MakeTensor<float>({1}, {1}),
                   MakeTensor<double>({1}, {1}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // bool arithmetic is not supported.
  Tensor b = *Tensor::Create(DType::kBool, Shape({1}));
  EXPECT_EQ(Binary("Add", b, b).status().code(),
            absl::StatusCode::kUnimplemented);
  // Sigmoid on integers is not an ONNX form.
  EXPECT_EQ(RunKernel(CpuKernelRegistry(), MakeNode("Sigmoid", {"x"}, {"y"}),
                      {MakeTensor<int32_t>({1}, {1})})
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
}

TEST(ElementwiseTest, Activations) {
  const Tensor x = MakeTensor<float>({5}, {-100, -1, 0, 1, 100});
  auto relu = RunKernel(CpuKernelRegistry(), MakeNode("Relu", {"x"}, {"y"}),
                        {x});
  ASSERT_TRUE(relu.ok()) << relu.status();
  EXPECT_THAT(ToVector<float>((*relu)[0]), ElementsAre(0, 0, 0, 1, 100));
  auto sig = RunKernel(CpuKernelRegistry(),
                       MakeNode("Sigmoid", {"x"}, {"y"}), {x});
  ASSERT_TRUE(sig.ok()) << sig.status();
  const std::vector<float> want_sig = {0.0f, 0.26894142f, 0.5f, 0.73105858f,
                                       1.0f};
  EXPECT_THAT(ToVector<float>((*sig)[0]),
              Pointwise(FloatNear(1e-6), want_sig));
  auto tanh = RunKernel(CpuKernelRegistry(), MakeNode("Tanh", {"x"}, {"y"}),
                        {x});
  ASSERT_TRUE(tanh.ok()) << tanh.status();
  const std::vector<float> want_tanh = {-1.0f, -0.76159416f, 0.0f,
                                        0.76159416f, 1.0f};
  EXPECT_THAT(ToVector<float>((*tanh)[0]),
              Pointwise(FloatNear(1e-6), want_tanh));
  auto relu_int = RunKernel(CpuKernelRegistry(),
                            MakeNode("Relu", {"x"}, {"y"}),
                            {MakeTensor<int64_t>({3}, {-5, 0, 5})});
  ASSERT_TRUE(relu_int.ok()) << relu_int.status();
  EXPECT_THAT(ToVector<int64_t>((*relu_int)[0]), ElementsAre(0, 0, 5));
}

TEST(ElementwiseTest, ReluPropagatesNan) {
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("Relu", {"x"}, {"y"}),
                       {MakeTensor<float>({1}, {std::nanf("")})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(std::isnan(ToVector<float>((*out)[0])[0]));
}

TEST(ElementwiseTest, ConcurrentRunsAgree) {
  testing::RunKernelOptions options;
  options.threads = 4;
  options.runs = 5;
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Add", {"a", "b"}, {"y"}),
                       {RandomTensor({64, 33}, 3), RandomTensor({33}, 4)},
                       options);
  ASSERT_TRUE(out.ok()) << out.status();
}

}  // namespace
}  // namespace glint::cpu
