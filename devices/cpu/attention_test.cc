#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "devices/cpu/cpu_rewrites.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MaxRelativeError;
using testing::RandomTensor;
using testing::RunKernel;
using testing::RunKernelOptions;

// Attention by definition, in double: for each batch b and head h,
// softmax(scale * Q_bh K_bh^T) V_bh, heads side by side in the last axis.
Tensor NaiveAttention(const Tensor& q, const Tensor& k, const Tensor& v,
                      int64_t heads, double scale) {
  const int64_t batch = q.shape().dim(0), s = q.shape().dim(1);
  const int64_t t = k.shape().dim(1), e = q.shape().dim(2), d = e / heads;
  Tensor y = *Tensor::Create(DType::kFloat32, q.shape());
  const float* pq = q.data<float>();
  const float* pk = k.data<float>();
  const float* pv = v.data<float>();
  std::vector<double> p(t);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < s; ++i) {
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < t; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) {
            dot += double(pq[(b * s + i) * e + h * d + c]) *
                   pk[(b * t + j) * e + h * d + c];
          }
          p[j] = scale * dot;
          max = std::max(max, p[j]);
        }
        for (int64_t j = 0; j < t; ++j) sum += p[j] = std::exp(p[j] - max);
        for (int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < t; ++j) {
            acc += p[j] / sum * pv[(b * t + j) * e + h * d + c];
          }
          y.data<float>()[(b * s + i) * e + h * d + c] =
              static_cast<float>(acc);
        }
      }
  return y;
}

struct AttentionCase {
  std::string name;
  int64_t batch, s, t, heads, d;
  float scale, magnitude;
};

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionTest, MatchesNaiveReference) {
  const AttentionCase& c = GetParam();
  const float m = c.magnitude;
  const Tensor q = RandomTensor({c.batch, c.s, c.heads * c.d}, 1, -m, m);
  const Tensor k = RandomTensor({c.batch, c.t, c.heads * c.d}, 2, -m, m);
  const Tensor v = RandomTensor({c.batch, c.t, c.heads * c.d}, 3);
  const Node node = MakeNode(kAttentionOp, {"q", "k", "v"}, {"y"},
                             {{"num_heads", c.heads}, {"scale", c.scale}});
  const Tensor want = NaiveAttention(q, k, v, c.heads, c.scale);
  // One thread, and three threads running it concurrently.
  std::vector<RunKernelOptions> variants(2);
  variants[1].threads = 3;
  variants[1].runs = 2;
  for (const RunKernelOptions& options : variants) {
    auto out = RunKernel(CpuKernelRegistry(), node, {q, k, v}, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), want.shape());
    EXPECT_LT(MaxRelativeError((*out)[0], want), 1e-5);
  }
  if (c.s != c.t) return;
  // Self-attention's packed form: one [B, S, 3E] input, Q K V side by side.
  const int64_t e = c.heads * c.d;
  Tensor qkv = *Tensor::Create(DType::kFloat32, Shape({c.batch, c.s, 3 * e}));
  for (int64_t row = 0; row < c.batch * c.s; ++row) {
    int i = 0;
    for (const Tensor* part : {&q, &k, &v}) {
      std::copy_n(part->data<float>() + row * e, e,
                  qkv.data<float>() + row * 3 * e + i++ * e);
    }
  }
  const Node packed = MakeNode(kAttentionOp, {"qkv"}, {"y"},
                               {{"num_heads", c.heads}, {"scale", c.scale}});
  for (const RunKernelOptions& options : variants) {
    auto out = RunKernel(CpuKernelRegistry(), packed, {qkv}, options);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), want.shape());
    EXPECT_LT(MaxRelativeError((*out)[0], want), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(
        // The bench transformer's layer.
        AttentionCase{"Encoder", 1, 128, 128, 4, 64, 0.125f, 1.0f},
        AttentionCase{"CrossAttention", 2, 5, 9, 3, 4, 0.5f, 1.0f},
        // One head: the sgemms run threaded instead of the heads.
        AttentionCase{"OneHead", 1, 33, 17, 1, 8, 0.35f, 1.0f},
        // Scores far apart: the softmax must subtract its row maximum, and
        // exp underflows to 0 for most terms.
        AttentionCase{"LargeScores", 2, 7, 31, 2, 16, 1.0f, 8.0f},
        AttentionCase{"OneKey", 3, 4, 1, 2, 3, 1.0f, 1.0f}),
    [](const ::testing::TestParamInfo<AttentionCase>& info) {
      return info.param.name;
    });

TEST(AttentionTest, EmptyKeysGiveZeros) {
  const Node node = MakeNode(kAttentionOp, {"q", "k", "v"}, {"y"},
                             {{"num_heads", int64_t{2}}});
  auto out = RunKernel(CpuKernelRegistry(), node,
                       {RandomTensor({1, 3, 4}, 1), RandomTensor({1, 0, 4}, 2),
                        RandomTensor({1, 0, 4}, 3)});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 3, 4}));
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ((*out)[0].data<float>()[i], 0);
}

TEST(AttentionTest, Errors) {
  const Node node = MakeNode(kAttentionOp, {"q", "k", "v"}, {"y"},
                             {{"num_heads", int64_t{3}}});
  // E = 8 is no multiple of 3 heads.
  auto out = RunKernel(CpuKernelRegistry(), node,
                       {RandomTensor({1, 2, 8}, 1), RandomTensor({1, 2, 8}, 2),
                        RandomTensor({1, 2, 8}, 3)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("num_heads=3"));
  // K and V of different lengths.
  out = RunKernel(CpuKernelRegistry(), node,
                  {RandomTensor({1, 2, 6}, 1), RandomTensor({1, 4, 6}, 2),
                   RandomTensor({1, 3, 6}, 3)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // No heads.
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode(kAttentionOp, {"q", "k", "v"}, {"y"}),
                  {RandomTensor({1, 2, 6}, 1), RandomTensor({1, 2, 6}, 2),
                   RandomTensor({1, 2, 6}, 3)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("num_heads must be >= 1"));
  // Packed QKV whose last axis is no multiple of 3 * num_heads.
  out = RunKernel(CpuKernelRegistry(),
                  MakeNode(kAttentionOp, {"qkv"}, {"y"},
                           {{"num_heads", int64_t{2}}}),
                  {RandomTensor({1, 2, 9}, 1)});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("packed QKV"));
  // float64 is not taken.
  out = RunKernel(CpuKernelRegistry(), node,
                  {testing::MakeTensor<double>({1, 1, 3}, {1, 2, 3}),
                   testing::MakeTensor<double>({1, 1, 3}, {1, 2, 3}),
                   testing::MakeTensor<double>({1, 1, 3}, {1, 2, 3})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace glint::cpu
