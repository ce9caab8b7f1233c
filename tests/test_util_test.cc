// The comparison the conformance test relies on must be able to fail.
#include "tests/test_util.h"

#include <cmath>

#include "gtest/gtest.h"

namespace glint {
namespace testing {
namespace {

Tensor F(std::vector<float> v) {
  return Tensor::FromVector<float>(DType::kFloat32,
                                   Shape({static_cast<int64_t>(v.size())}), v);
}

TEST(CompareTensorsTest, Tolerances) {
  EXPECT_EQ(CompareTensors(F({1, 2}), F({1, 2})), "");
  EXPECT_EQ(CompareTensors(F({1000.05f}), F({1000})), "");  // rtol 1e-4.
  EXPECT_NE(CompareTensors(F({1000.2f}), F({1000})), "");
  EXPECT_EQ(CompareTensors(F({5e-7f}), F({0})), "");  // atol 1e-6.
  EXPECT_NE(CompareTensors(F({1e-5f}), F({0})), "");
  EXPECT_EQ(CompareTensors(F({NAN, INFINITY}), F({NAN, INFINITY})), "");
  EXPECT_NE(CompareTensors(F({1}), F({NAN})), "");
}

TEST(CompareTensorsTest, DTypeShapeAndIntegers) {
  EXPECT_NE(CompareTensors(F({1, 2}), F({1, 2, 3})), "");
  Tensor i = Tensor::FromVector<int32_t>(DType::kInt32, Shape({2}), {1, 2});
  EXPECT_NE(CompareTensors(i, F({1, 2})), "");
  Tensor j = Tensor::FromVector<int32_t>(DType::kInt32, Shape({2}), {1, 3});
  EXPECT_NE(CompareTensors(i, j), "");
  Tensor a = Tensor::FromVector<int64_t>(DType::kInt64, Shape({1}), {1});
  Tensor b = Tensor::FromVector<int64_t>(DType::kInt64, Shape({1}), {2});
  EXPECT_NE(CompareTensors(a, b), "");
  EXPECT_EQ(CompareTensors(a, a), "");
}

TEST(RuntimeInputNamesTest, SkipsInitializers) {
  onnx::ModelProto m;
  m.mutable_graph()->add_input()->set_name("x");
  m.mutable_graph()->add_input()->set_name("w");
  m.mutable_graph()->add_initializer()->set_name("w");
  EXPECT_EQ(RuntimeInputNames(m), std::vector<std::string>{"x"});
}

}  // namespace
}  // namespace testing
}  // namespace glint
