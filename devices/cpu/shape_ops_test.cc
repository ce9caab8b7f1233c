#include <omp.h>

#include <cstring>
#include <optional>
#include <vector>

#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ScopedOmpThreads;
using testing::ToVector;

using Ints = std::vector<int64_t>;

std::vector<float> Ramp(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

absl::StatusOr<Shape> ReshapeTo(const Shape& in, Ints shape,
                                bool allow_zero = false) {
  Tensor x = *Tensor::Create(DType::kFloat32, in);
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Reshape", {"x", "s"}, {"y"},
                                {{"allowzero", int64_t{allow_zero}}}),
                       {x, MakeTensor<int64_t>({static_cast<int64_t>(shape.size())},
                                               shape)});
  if (!out.ok()) return out.status();
  return (*out)[0].shape();
}

TEST(ReshapeTest, ZeroAndMinusOne) {
  EXPECT_EQ(ReshapeTo(Shape({2, 3, 4}), {4, -1})->ToString(), "[4, 6]");
  EXPECT_EQ(ReshapeTo(Shape({2, 3, 4}), {0, -1})->ToString(), "[2, 12]");
  EXPECT_EQ(ReshapeTo(Shape({2, 3, 4}), {0, 0, 2, 2})->ToString(),
            "[2, 3, 2, 2]");
  EXPECT_EQ(ReshapeTo(Shape({2, 3, 4}), {-1})->ToString(), "[24]");
  EXPECT_EQ(ReshapeTo(Shape({0, 3}), {3, 0}, true)->ToString(), "[3, 0]");
  EXPECT_EQ(ReshapeTo(Shape({1}), {})->ToString(), "[]");
}

TEST(ReshapeTest, Errors) {
  EXPECT_EQ(ReshapeTo(Shape({2, 3}), {4, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReshapeTo(Shape({2, 3}), {-1, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReshapeTo(Shape({2, 3}), {7}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReshapeTo(Shape({2, 3}), {0, 0, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReshapeTo(Shape({0, 3}), {0, -1}, true).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status s = ReshapeTo(Shape({2, 3}), {-2, 3}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("reshape_node"));
}

TEST(ReshapeTest, KeepsDataAndSupportsOldOpsetAttribute) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Reshape", {"x", "s"}, {"y"}),
                       {MakeTensor<int32_t>({2, 2}, {1, 2, 3, 4}),
                        MakeTensor<int64_t>({1}, {4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<int32_t>((*out)[0]), ElementsAre(1, 2, 3, 4));
  RunKernelOptions v1;
  v1.opset_version = 1;
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Reshape", {"x"}, {"y"}, {{"shape", Ints{4, 1}}}),
                  {MakeTensor<float>({2, 2}, {1, 2, 3, 4})}, v1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({4, 1}));
}

TEST(FlattenTest, Axes) {
  const Tensor x = MakeTensor<float>({2, 3, 4}, Ramp(24));
  const std::pair<int64_t, Ints> cases[] = {
      {0, {1, 24}}, {1, {2, 12}}, {3, {24, 1}}, {-1, {6, 4}}, {-3, {1, 24}}};
  for (const auto& [axis, want] : cases) {
    auto out = RunKernel(CpuKernelRegistry(),
                         MakeNode("Flatten", {"x"}, {"y"}, {{"axis", axis}}),
                         {x});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), Shape(want)) << axis;
    EXPECT_EQ(ToVector<float>((*out)[0]), Ramp(24));
  }
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Flatten", {"x"}, {"y"}, {{"axis", int64_t{4}}}),
                       {x});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TransposeTest, DefaultAndExplicitPerm) {
  const Tensor x = MakeTensor<float>({2, 3}, Ramp(6));
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Transpose", {"x"}, {"y"}), {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({3, 2}));
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(0, 3, 1, 4, 2, 5));
  // [2, 3, 4] with perm (1, 2, 0): y[j][k][i] = x[i][j][k].
  const Tensor x3 = MakeTensor<int64_t>(
      {2, 3, 4}, std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                      12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                      22, 23});
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Transpose", {"x"}, {"y"}, {{"perm", Ints{1, 2, 0}}}),
                  {x3});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({3, 4, 2}));
  std::vector<int64_t> y = ToVector<int64_t>((*out)[0]);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        EXPECT_EQ(y[(j * 4 + k) * 2 + i], (i * 3 + j) * 4 + k);
      }
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Transpose", {"x"}, {"y"}, {{"perm", Ints{0, 0, 1}}}),
                  {x3});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// Large enough to be split across threads, with chunk boundaries that fall
// inside every output axis (odd sizes): each chunk must find its own start.
// Four threads even on a one-core machine, so that the rows are chunked
// (sanitizer builds run ParallelFor serially).
TEST(TransposeTest, LargeFourDimensionalPermutations) {
  ScopedOmpThreads four(4);
  // Size-1 axes too: the reorders of a channels-last region (the first two
  // perms) take the tiled 2-D path with or without a batch.
  for (const Ints& dims : {Ints{3, 37, 41, 29}, Ints{1, 37, 41, 29},
                           Ints{3, 1, 41, 29}, Ints{1, 37, 1, 29}}) {
    const int n = static_cast<int>(dims[0] * dims[1] * dims[2] * dims[3]);
    const Tensor x = MakeTensor<float>(dims, Ramp(n));
    const Ints perms[] = {{0, 2, 3, 1}, {0, 3, 1, 2}, {3, 2, 1, 0},
                          {1, 0, 3, 2}, {0, 1, 3, 2}, {2, 3, 0, 1}};
    for (const Ints& perm : perms) {
      auto out =
          RunKernel(CpuKernelRegistry(),
                    MakeNode("Transpose", {"x"}, {"y"}, {{"perm", perm}}), {x});
      ASSERT_TRUE(out.ok()) << out.status();
      Ints out_dims(4), in_strides = {dims[1] * dims[2] * dims[3],
                                      dims[2] * dims[3], dims[3], 1};
      for (int i = 0; i < 4; ++i) out_dims[i] = dims[perm[i]];
      ASSERT_EQ((*out)[0].shape(), Shape(out_dims));
      const std::vector<float> y = ToVector<float>((*out)[0]);
      int64_t o = 0, mismatches = 0;
      for (int64_t a = 0; a < out_dims[0]; ++a)
        for (int64_t b = 0; b < out_dims[1]; ++b)
          for (int64_t c = 0; c < out_dims[2]; ++c)
            for (int64_t d = 0; d < out_dims[3]; ++d, ++o) {
              const int64_t want =
                  a * in_strides[perm[0]] + b * in_strides[perm[1]] +
                  c * in_strides[perm[2]] + d * in_strides[perm[3]];
              if (y[o] != static_cast<float>(want)) ++mismatches;
            }
      EXPECT_EQ(mismatches, 0) << "perm " << perm[0] << perm[1] << perm[2]
                               << perm[3] << " of " << Shape(dims).ToString();
    }
  }
}

TEST(ConcatTest, NegativeAxisAndErrors) {
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Concat", {"a", "b"}, {"y"},
                                {{"axis", int64_t{-1}}}),
                       {MakeTensor<float>({2, 1}, {1, 2}),
                        MakeTensor<float>({2, 2}, {3, 4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(1, 3, 4, 2, 5, 6));
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Concat", {"a", "b", "c"}, {"y"},
                           {{"axis", int64_t{0}}}),
                  {MakeTensor<uint8_t>({1}, {1}), MakeTensor<uint8_t>({0}, {}),
                   MakeTensor<uint8_t>({2}, {2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<uint8_t>((*out)[0]), ElementsAre(1, 2, 3));
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Concat", {"a", "b"}, {"y"}, {{"axis", int64_t{1}}}),
                  {MakeTensor<float>({2, 1}, {1, 2}),
                   MakeTensor<float>({3, 1}, {3, 4, 5})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("concat_node"));
  out = RunKernel(CpuKernelRegistry(), MakeNode("Concat", {"a"}, {"y"}),
                  {MakeTensor<float>({1}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// Concat copies its output in parallel byte ranges that start and end
// inside chunks and rows: every split, with empty inputs among them, gives
// the reference's bytes.
TEST(ConcatTest, ParallelRangesGiveTheReferenceBytes) {
  struct Case {
    std::vector<Ints> shapes;
    int64_t axis;
  };
  // Channels-last concatenation (one short chunk per pixel per input), one
  // row (axis 0), and a middle axis.
  const std::vector<Case> cases = {
      {{{1, 37, 41, 5}, {1, 37, 41, 0}, {1, 37, 41, 32}, {1, 37, 41, 3}}, 3},
      {{{3001, 17}, {0, 17}, {4999, 17}}, 0},
      {{{2, 7, 3, 1031}, {2, 1, 3, 1031}, {2, 13, 3, 1031}}, 1},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> inputs;
    std::vector<std::string> names;
    float next = 0;
    for (const Ints& shape : c.shapes) {
      int64_t count = 1;
      for (int64_t d : shape) count *= d;
      std::vector<float> values(count);
      for (float& v : values) v = next++;
      inputs.push_back(MakeTensor<float>(shape, values));
      names.push_back("x" + std::to_string(names.size()));
    }
    // The reference: row by row, input by input.
    const int rank = static_cast<int>(c.shapes[0].size());
    int64_t outer = 1;
    for (int d = 0; d < c.axis; ++d) outer *= c.shapes[0][d];
    std::vector<float> want;
    for (int64_t o = 0; o < outer; ++o) {
      for (const Tensor& t : inputs) {
        const int64_t chunk = t.num_elements() / outer;
        const float* x = t.data<float>() + o * chunk;
        want.insert(want.end(), x, x + chunk);
      }
    }
    for (int threads : {1, 2, 3, 4}) {
      ScopedOmpThreads scoped(threads);
      auto out = RunKernel(CpuKernelRegistry(),
                           MakeNode("Concat", names, {"y"}, {{"axis", c.axis}}),
                           inputs);
      ASSERT_TRUE(out.ok()) << out.status();
      ASSERT_EQ((*out)[0].shape().rank(), rank);
      EXPECT_EQ(ToVector<float>((*out)[0]), want)
          << "axis " << c.axis << ", " << threads << " threads";
    }
  }
}

// ConstantOfShape fills in parallel ranges by element width: every element
// of a large output holds the value, for each width and for the default
// zero, on 1 to 3 kernel threads.
TEST(ConstantOfShapeTest, EveryElementHoldsTheValueAtEveryWidth) {
  const Ints dims = {3, 517, 331};  // 513,381 elements: several ranges.
  const Tensor shape = MakeTensor<int64_t>({3}, dims);
  const int64_t count = dims[0] * dims[1] * dims[2];
  struct Case {
    std::optional<Tensor> value;
    std::vector<uint8_t> bytes;  // One element's.
  };
  std::vector<Case> cases;
  cases.push_back({std::nullopt, {0, 0, 0, 0}});  // float32 0
  for (Tensor t :
       {MakeTensor<float>({1}, {1.5f}), MakeTensor<int64_t>({1}, {-7}),
        MakeTensor<uint8_t>({1}, {200}), MakeTensor<int16_t>({1}, {-300})}) {
    const auto* b = static_cast<const uint8_t*>(t.raw_data());
    cases.push_back({t, std::vector<uint8_t>(b, b + t.num_bytes())});
  }
  for (const Case& c : cases) {
    Node node = MakeNode("ConstantOfShape", {"shape"}, {"y"});
    if (c.value.has_value()) node.attributes["value"] = *c.value;
    RunKernelOptions options;
    options.output_dtypes = {c.value.has_value() ? c.value->dtype()
                                                 : DType::kFloat32};
    for (int threads : {1, 2, 3}) {
      ScopedOmpThreads scoped(threads);
      auto out = RunKernel(CpuKernelRegistry(), node, {shape}, options);
      ASSERT_TRUE(out.ok()) << out.status();
      const Tensor& y = (*out)[0];
      ASSERT_EQ(y.num_elements(), count);
      ASSERT_EQ(y.num_bytes(), count * c.bytes.size());
      const auto* got = static_cast<const uint8_t*>(y.raw_data());
      int64_t wrong = 0;
      for (int64_t i = 0; i < count; ++i) {
        wrong += std::memcmp(got + i * c.bytes.size(), c.bytes.data(),
                             c.bytes.size()) != 0;
      }
      EXPECT_EQ(wrong, 0) << c.bytes.size() << "-byte value, " << threads
                          << " threads";
    }
  }
}

TEST(IdentityTest, CopiesAnyDType) {
  Tensor b = *Tensor::Create(DType::kBool, Shape({3}));
  b.data<uint8_t>()[1] = 1;
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("Identity", {"x"}, {"y"}),
                       {b});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kBool);
  EXPECT_THAT(ToVector<uint8_t>((*out)[0]), ElementsAre(0, 1, 0));
}

TEST(ConstantTest, EveryValueForm) {
  const Tensor value = MakeTensor<int32_t>({2}, {7, 8});
  auto out = RunKernel(CpuKernelRegistry(),
                       MakeNode("Constant", {}, {"y"}, {{"value", value}}), {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kInt32);
  EXPECT_THAT(ToVector<int32_t>((*out)[0]), ElementsAre(7, 8));

  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Constant", {}, {"y"}, {{"value_float", 2.5f}}), {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape());
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(2.5f));

  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Constant", {}, {"y"},
                           {{"value_floats", std::vector<float>{1, 2}}}),
                  {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(1, 2));

  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Constant", {}, {"y"}, {{"value_int", int64_t{-4}}}),
                  {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), DType::kInt64);
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(-4));

  out = RunKernel(CpuKernelRegistry(),
                  MakeNode("Constant", {}, {"y"}, {{"value_ints", Ints{3, 4, 5}}}),
                  {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({3}));
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(3, 4, 5));
}

TEST(ConstantTest, Refusals) {
  EXPECT_EQ(RunKernel(CpuKernelRegistry(), MakeNode("Constant", {}, {"y"}), {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunKernel(CpuKernelRegistry(),
                      MakeNode("Constant", {}, {"y"},
                               {{"value_string", std::string("hi")}}),
                      {})
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(RunKernel(CpuKernelRegistry(),
                      MakeNode("Constant", {}, {"y"},
                               {{"value_int", int64_t{1}},
                                {"value_float", 1.0f}}),
                      {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
