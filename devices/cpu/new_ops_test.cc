// The ops opsets 18-23 added: Mish, BitwiseAnd/Or/Xor/Not,
// GroupNormalization (18 and 21), RMSNormalization (23), Col2Im,
// CenterCropPad. Expected values are references computed here (loops
// written from the ONNX operator specs, or closed forms), not the kernels'
// own code.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "devices/cpu/element_types.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

using Ints = std::vector<int64_t>;
using Floats = std::vector<float>;

RunKernelOptions Opset(int64_t v) {
  RunKernelOptions o;
  o.opset_version = v;
  return o;
}

Floats Ramp(int64_t n, float start = 0.0f, float step = 1.0f) {
  Floats v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

void ExpectNear(const Tensor& got, const std::vector<double>& want,
                double tol = 1e-5) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    double g = 0;
    if (got.dtype() == DType::kFloat32) {
      g = got.data<float>()[i];
    } else if (got.dtype() == DType::kFloat64) {
      g = got.data<double>()[i];
    } else if (got.dtype() == DType::kFloat16) {
      g = Float16ToFloat(got.data<uint16_t>()[i]);
    } else {
      FAIL() << "unexpected dtype";
    }
    ASSERT_NEAR(g, want[i], tol * std::max(1.0, std::fabs(want[i])))
        << "element " << i;
  }
}

// A bool tensor (std::vector<bool> has no data()).
Tensor BoolTensor(Ints dims, const std::vector<int>& values) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  return Tensor::FromVector(DType::kBool, Shape(std::move(dims)), bytes);
}

std::vector<double> AsDoubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    v.push_back(t.dtype() == DType::kFloat64 ? t.data<double>()[i]
                                             : t.data<float>()[i]);
  }
  return v;
}

// ------------------------------------------------------ Mish, Bitwise*

TEST(NewOpsTest, MishIsXTanhSoftplus) {
  const Floats x = {-100, -20, -3, -1, -0.25f, 0, 0.5f, 1, 2.5f, 20, 100};
  std::vector<double> want;
  for (float v : x) {
    // Closed form; softplus of large |x| written so double cannot overflow.
    const double sp = v > 0 ? v + std::log1p(std::exp(-double{v}))
                            : std::log1p(std::exp(double{v}));
    want.push_back(v * std::tanh(sp));
  }
  const int64_t n = static_cast<int64_t>(x.size());
  auto f32 = RunKernel(CpuKernelRegistry(), MakeNode("Mish", {"x"}, {"y"}),
                       {MakeTensor<float>({n}, x)}, Opset(18));
  ASSERT_TRUE(f32.ok()) << f32.status();
  ExpectNear((*f32)[0], want, 1e-6);
  std::vector<double> xd(x.begin(), x.end());
  auto f64 = RunKernel(CpuKernelRegistry(), MakeNode("Mish", {"x"}, {"y"}),
                       {MakeTensor<double>({n}, xd)}, Opset(18));
  ASSERT_TRUE(f64.ok()) << f64.status();
  ExpectNear((*f64)[0], want, 1e-12);
  auto ints = RunKernel(CpuKernelRegistry(), MakeNode("Mish", {"x"}, {"y"}),
                        {MakeTensor<int32_t>({1}, {1})}, Opset(18));
  EXPECT_EQ(ints.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(NewOpsTest, BitwiseOpsOnIntegers) {
  const Tensor a = MakeTensor<int32_t>({2, 3}, {0, 1, 2, -1, 0x0f0f, -8});
  const Tensor b = MakeTensor<int32_t>({3}, {3, 5, 0x00ff});
  const std::vector<int32_t> av = ToVector<int32_t>(a);
  const std::vector<int32_t> bv = ToVector<int32_t>(b);
  for (const std::string op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    std::vector<int32_t> want;
    for (int i = 0; i < 6; ++i) {
      const int32_t x = av[i], y = bv[i % 3];
      want.push_back(op == "BitwiseAnd"  ? (x & y)
                     : op == "BitwiseOr" ? (x | y)
                                         : (x ^ y));
    }
    auto out = RunKernel(CpuKernelRegistry(), MakeNode(op, {"a", "b"}, {"y"}),
                         {a, b}, Opset(18));
    ASSERT_TRUE(out.ok()) << op << ": " << out.status();
    EXPECT_EQ((*out)[0].shape(), Shape({2, 3}));
    EXPECT_THAT(ToVector<int32_t>((*out)[0]), ElementsAreArray(want)) << op;
  }
  auto u8 = RunKernel(CpuKernelRegistry(),
                      MakeNode("BitwiseXor", {"a", "b"}, {"y"}),
                      {MakeTensor<uint8_t>({2}, {0xf0, 0xaa}),
                       MakeTensor<uint8_t>({2}, {0xff, 0x0f})},
                      Opset(18));
  ASSERT_TRUE(u8.ok()) << u8.status();
  EXPECT_THAT(ToVector<uint8_t>((*u8)[0]), ElementsAre(0x0f, 0xa5));
  auto not8 = RunKernel(CpuKernelRegistry(), MakeNode("BitwiseNot", {"x"}, {"y"}),
                        {MakeTensor<int8_t>({3}, {0, -1, 5})}, Opset(18));
  ASSERT_TRUE(not8.ok()) << not8.status();
  EXPECT_THAT(ToVector<int8_t>((*not8)[0]), ElementsAre(-1, 0, -6));
  auto not64 = RunKernel(CpuKernelRegistry(),
                         MakeNode("BitwiseNot", {"x"}, {"y"}),
                         {MakeTensor<uint64_t>({1}, {1})}, Opset(18));
  ASSERT_TRUE(not64.ok()) << not64.status();
  EXPECT_THAT(ToVector<uint64_t>((*not64)[0]),
              ElementsAre(~uint64_t{1}));
  // Integers only.
  auto f = RunKernel(CpuKernelRegistry(),
                     MakeNode("BitwiseAnd", {"a", "b"}, {"y"}),
                     {MakeTensor<float>({1}, {1}), MakeTensor<float>({1}, {1})},
                     Opset(18));
  EXPECT_EQ(f.status().code(), absl::StatusCode::kUnimplemented);
  auto b8 = RunKernel(CpuKernelRegistry(), MakeNode("BitwiseNot", {"x"}, {"y"}),
                      {BoolTensor({1}, {1})}, Opset(18));
  EXPECT_EQ(b8.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace glint::cpu
