// Einsum (einsum.cc) against a naive reference written per equation, on
// both the sgemm path (float32 matrix products) and the generic path.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunKernel;
using testing::ToVector;

absl::StatusOr<std::vector<Tensor>> Einsum(const std::string& eq,
                                           std::vector<Tensor> inputs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < inputs.size(); ++i) {
    names.push_back("x" + std::to_string(i));
  }
  return RunKernel(CpuKernelRegistry(),
                   MakeNode("Einsum", names, {"y"}, {{"equation", eq}}),
                   inputs);
}

TEST(EinsumTest, BatchedMatMulWithPermutedOperandsAndOutput) {
  // "bkm,bnk->nbm": A is [b, k, m], B is [b, n, k]; out[n, b, m].
  const int64_t b = 3, m = 4, k = 5, n = 2;
  const Tensor a = RandomTensor({b, k, m}, 1);
  const Tensor bt = RandomTensor({b, n, k}, 2);
  auto out = Einsum("bkm,bnk->nbm", {a, bt});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), Shape({n, b, m}));
  const float* pa = a.data<float>();
  const float* pb = bt.data<float>();
  std::vector<float> want;
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ib = 0; ib < b; ++ib)
      for (int64_t im = 0; im < m; ++im) {
        double s = 0;
        for (int64_t ik = 0; ik < k; ++ik) {
          s += pa[(ib * k + ik) * m + im] * pb[(ib * n + in) * k + ik];
        }
        want.push_back(static_cast<float>(s));
      }
  EXPECT_THAT(ToVector<float>((*out)[0]), Pointwise(FloatNear(1e-5), want));
}

TEST(EinsumTest, PlainMatMulImplicitOutput) {
  auto out = Einsum("ij,jk", {MakeTensor<float>({2, 2}, {1, 2, 3, 4}),
                              MakeTensor<float>({2, 2}, {5, 6, 7, 8})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(19, 22, 43, 50));
  // Implicit output sorts labels: "ji,kj" is (B A)^T ... = out[i, k].
  auto t = Einsum("ba,cb", {MakeTensor<float>({2, 2}, {1, 2, 3, 4}),
                            MakeTensor<float>({2, 2}, {5, 6, 7, 8})});
  ASSERT_TRUE(t.ok()) << t.status();
  // out[a, c] = sum_b A[b, a] B[c, b].
  EXPECT_THAT(ToVector<float>((*t)[0]), ElementsAre(23, 31, 34, 46));
}

TEST(EinsumTest, TransposeDiagonalTraceAndSum) {
  const Tensor x = MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto tr = Einsum("ij->ji", {x});
  ASSERT_TRUE(tr.ok()) << tr.status();
  EXPECT_EQ((*tr)[0].shape(), Shape({3, 2}));
  EXPECT_THAT(ToVector<float>((*tr)[0]), ElementsAre(1, 4, 2, 5, 3, 6));
  auto sum = Einsum("ij->i", {x});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_THAT(ToVector<float>((*sum)[0]), ElementsAre(6, 15));
  auto all = Einsum("ij->", {x});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)[0].shape(), Shape({}));
  EXPECT_THAT(ToVector<float>((*all)[0]), ElementsAre(21));
  const Tensor sq = MakeTensor<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto diag = Einsum("ii->i", {sq});
  ASSERT_TRUE(diag.ok()) << diag.status();
  EXPECT_THAT(ToVector<float>((*diag)[0]), ElementsAre(1, 5, 9));
  auto trace = Einsum("ii", {sq});
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_THAT(ToVector<float>((*trace)[0]), ElementsAre(15));
}

TEST(EinsumTest, EllipsisBroadcastsAndBatchDiagonal) {
  // "...ii->...i" on [2, 2, 2].
  auto d = Einsum("...ii->...i",
                  {MakeTensor<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)[0].shape(), Shape({2, 2}));
  EXPECT_THAT(ToVector<float>((*d)[0]), ElementsAre(1, 4, 5, 8));
  // Ellipsis [2, 1] against [3]: broadcast to [2, 3]; implicit output.
  auto b = Einsum("...i,...i",
                  {MakeTensor<float>({2, 1, 2}, {1, 2, 3, 4}),
                   MakeTensor<float>({3, 2}, {1, 0, 0, 1, 1, 1})});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(ToVector<float>((*b)[0]), ElementsAre(1, 2, 3, 3, 4, 7));
}

TEST(EinsumTest, ThreeOperandsAndIntegers) {
  auto out = Einsum("i,ij,j->", {MakeTensor<int64_t>({2}, {1, 2}),
                                 MakeTensor<int64_t>({2, 2}, {1, 2, 3, 4}),
                                 MakeTensor<int64_t>({2}, {5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  // [1 2] [[1 2][3 4]] = [7 10]; . [5 6] = 95.
  EXPECT_THAT(ToVector<int64_t>((*out)[0]), ElementsAre(95));
  // Inner product with a label summed inside one operand (generic path).
  auto outer = Einsum("ij,k->", {MakeTensor<float>({1, 2}, {1, 2}),
                                 MakeTensor<float>({3}, {1, 1, 1})});
  ASSERT_TRUE(outer.ok()) << outer.status();
  EXPECT_THAT(ToVector<float>((*outer)[0]), ElementsAre(9));
}

TEST(EinsumTest, ThreeFloatOperandsContractPairwise) {
  // "ij,jk,kl->li" with a label (k) shared by the last two only, and a
  // batch-like label kept through the intermediate.
  const Tensor a = RandomTensor({3, 4}, 3);
  const Tensor b = RandomTensor({4, 5}, 4);
  const Tensor c = RandomTensor({5, 2}, 5);
  auto out = Einsum("ij,jk,kl->li", {a, b, c});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), Shape({2, 3}));
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  const float* pc = c.data<float>();
  std::vector<float> want;
  for (int l = 0; l < 2; ++l)
    for (int i = 0; i < 3; ++i) {
      double s = 0;
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 5; ++k) {
          s += double{pa[i * 4 + j]} * pb[j * 5 + k] * pc[k * 2 + l];
        }
      want.push_back(static_cast<float>(s));
    }
  EXPECT_THAT(ToVector<float>((*out)[0]), Pointwise(FloatNear(1e-5), want));
  // A label of the first operand used again by the third: kept through.
  auto d = Einsum("ij,j,i->", {MakeTensor<float>({2, 2}, {1, 2, 3, 4}),
                               MakeTensor<float>({2}, {1, 10}),
                               MakeTensor<float>({2}, {1, 100})});
  ASSERT_TRUE(d.ok()) << d.status();
  // i=0: 1 + 20 = 21; i=1: (3 + 40) * 100 = 4300.
  EXPECT_THAT(ToVector<float>((*d)[0]), ElementsAre(4321));
}

TEST(EinsumTest, RefusesPairwiseIntermediatesOverTheCap) {
  // The first intermediate of "a,b,a,b->" keeps a and b (both needed
  // later): 2^40 elements from four 4 MiB inputs. It used to be allocated.
  const std::vector<float> ones(1 << 20, 1.0f);
  const Tensor x = MakeTensor<float>({1 << 20}, ones);
  auto out = Einsum("a,b,a,b->", {x, x, x, x});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
      << out.status();
  EXPECT_THAT(std::string(out.status().message()),
              ::testing::HasSubstr("Einsum"));
  // An intermediate with a zero label is empty whatever its other labels.
  const int64_t kHuge = int64_t{1} << 40;
  auto empty = Einsum("ab,c,ab,c->",
                      {MakeTensor<float>({0, kHuge}, {}),
                       MakeTensor<float>({2}, {1, 2}),
                       MakeTensor<float>({0, kHuge}, {}),
                       MakeTensor<float>({2}, {3, 4})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(ToVector<float>((*empty)[0]), ElementsAre(0.0f));
  // Under the cap the same shape of equation still computes:
  // sum_a sum_b x[a] y[b] x[a] y[b] = (sum x^2)(sum y^2) = 5 * 25.
  auto small = Einsum("a,b,a,b->", {MakeTensor<float>({2}, {1, 2}),
                                    MakeTensor<float>({2}, {3, 4}),
                                    MakeTensor<float>({2}, {1, 2}),
                                    MakeTensor<float>({2}, {3, 4})});
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(ToVector<float>((*small)[0]), ElementsAre(125.0f));
}

TEST(EinsumTest, RefusesMalformedEquations) {
  const Tensor x = MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(Einsum("ij,jk->ik", {x}).status().code(),
            absl::StatusCode::kInvalidArgument);  // Operand count.
  EXPECT_EQ(Einsum("i1->i", {x}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Einsum("ij->iz", {x}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Einsum("ijk->i", {x}).status().code(),
            absl::StatusCode::kInvalidArgument);  // Rank.
  EXPECT_EQ(Einsum("ii->i", {x}).status().code(),
            absl::StatusCode::kInvalidArgument);  // 2 vs 3 on one label.
  EXPECT_EQ(Einsum("ij->ii", {x}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Einsum("i..j->ij", {x}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint::cpu
