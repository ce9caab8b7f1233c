// Det against cofactor expansion (a naive reference) and hand-computed
// determinants, and TfIdfVectorizer against hand-counted n-grams with
// skips, each weighting, and its refusals.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
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
using ::testing::HasSubstr;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RandomTensor;
using testing::RunKernel;
using testing::RunKernelOptions;
using testing::ToVector;

// -------------------------------------------------------------------- Det

// Laplace expansion along the first row.
double Cofactor(const std::vector<double>& a, int m) {
  if (m == 1) return a[0];
  double det = 0;
  for (int c = 0; c < m; ++c) {
    std::vector<double> minor;
    for (int r = 1; r < m; ++r)
      for (int k = 0; k < m; ++k)
        if (k != c) minor.push_back(a[r * m + k]);
    det += (c % 2 == 0 ? 1 : -1) * a[c] * Cofactor(minor, m - 1);
  }
  return det;
}

TEST(DetTest, MatchesCofactorExpansion) {
  const Tensor x = RandomTensor({3, 2, 5, 5}, 11, -2, 2);
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("Det", {"x"}, {"y"}), {x});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].shape(), Shape({3, 2}));
  const std::vector<float> y = ToVector<float>((*out)[0]);
  for (int b = 0; b < 6; ++b) {
    std::vector<double> a(x.data<float>() + b * 25,
                          x.data<float>() + (b + 1) * 25);
    const double want = Cofactor(a, 5);
    EXPECT_NEAR(y[b], want, 1e-4 * (1 + std::abs(want))) << "matrix " << b;
  }
}

TEST(DetTest, PivotsSingularAndDouble) {
  // A zero leading entry needs a row swap: det [[0, 1], [2, 3]] = -2.
  auto swap =
      RunKernel(CpuKernelRegistry(), MakeNode("Det", {"x"}, {"y"}),
                {MakeTensor<double>({2, 2, 2}, {0, 1, 2, 3, 1, 2, 2, 4})});
  ASSERT_TRUE(swap.ok()) << swap.status();
  EXPECT_THAT(ToVector<double>((*swap)[0]), ElementsAre(-2.0, 0.0));
  auto three =
      RunKernel(CpuKernelRegistry(), MakeNode("Det", {"x"}, {"y"}),
                {MakeTensor<float>({3, 3}, {0, 2, 1, 3, 0, 1, 1, 1, 0})});
  ASSERT_TRUE(three.ok()) << three.status();
  EXPECT_EQ((*three)[0].shape(), Shape({}));
  // 0(0 - 1) - 2(0 - 1) + 1(3 - 0) = 5.
  EXPECT_NEAR(ToVector<float>((*three)[0])[0], 5.0f, 1e-5);
}

TEST(DetTest, RefusesNonSquareAndIntegers) {
  auto shape = RunKernel(CpuKernelRegistry(), MakeNode("Det", {"x"}, {"y"}),
                         {MakeTensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(shape.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shape.status().message(), HasSubstr("Det"));
  auto dtype = RunKernel(CpuKernelRegistry(), MakeNode("Det", {"x"}, {"y"}),
                         {MakeTensor<int32_t>({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(dtype.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(DetTest, NoMatricesOfAHugeSizeAllocateNothing) {
  // An empty batch of 2^20 x 2^20 matrices (legal for a dynamic batch
  // dim): no scratch matrix may be sized by m * m = 2^40.
  RunKernelOptions options;
  options.hide_input_shapes = true;
  const int64_t m = int64_t{1} << 20;
  auto out = RunKernel(CpuKernelRegistry(), MakeNode("Det", {"x"}, {"y"}),
                       {MakeTensor<float>({0, m, m}, {})}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({0}));
}

// -------------------------------------------------------- TfIdfVectorizer

// Pool: unigrams 1, 3; bigrams (1, 2), (1, 3); columns 0..3.
Node TfIdf(std::string mode, int64_t max_skip,
           std::vector<float> weights = {}) {
  std::map<std::string, Attribute> attrs = {
      {"mode", mode},
      {"min_gram_length", int64_t{1}},
      {"max_gram_length", int64_t{2}},
      {"max_skip_count", max_skip},
      {"ngram_counts", std::vector<int64_t>{0, 2}},
      {"ngram_indexes", std::vector<int64_t>{0, 1, 2, 3}},
      {"pool_int64s", std::vector<int64_t>{1, 3, 1, 2, 1, 3}}};
  if (!weights.empty()) attrs["weights"] = weights;
  return MakeNode("TfIdfVectorizer", {"x"}, {"y"}, std::move(attrs));
}

RunKernelOptions FloatOutput() {
  RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32};
  return options;
}

TEST(TfIdfVectorizerTest, CountsWithAndWithoutSkips) {
  const Tensor x = MakeTensor<int64_t>({5}, {1, 2, 1, 2, 3});
  // Unigrams 1 (x2), 3 (x1); bigram (1, 2) x2; (1, 3) needs a skip.
  auto plain =
      RunKernel(CpuKernelRegistry(), TfIdf("TF", 0), {x}, FloatOutput());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ((*plain)[0].shape(), Shape({4}));
  EXPECT_THAT(ToVector<float>((*plain)[0]), ElementsAre(2, 1, 2, 0));
  // Skip 1 adds the stride-2 bigrams (1, 1), (2, 2), (1, 3); unigrams
  // still count once.
  auto skip =
      RunKernel(CpuKernelRegistry(), TfIdf("TF", 1), {x}, FloatOutput());
  ASSERT_TRUE(skip.ok()) << skip.status();
  EXPECT_THAT(ToVector<float>((*skip)[0]), ElementsAre(2, 1, 2, 1));
  // A skip count far past the row length takes every stride that fits:
  // stride 3 adds (1, 2), stride 4 adds (1, 3).
  auto far =
      RunKernel(CpuKernelRegistry(), TfIdf("TF", 1000000), {x}, FloatOutput());
  ASSERT_TRUE(far.ok()) << far.status();
  EXPECT_THAT(ToVector<float>((*far)[0]), ElementsAre(2, 1, 3, 2));
}

TEST(TfIdfVectorizerTest, MaxSkipCountOfInt64MaxTakesEveryStride) {
  // max_skip_count + 1 must not overflow: INT64_MAX counts as the
  // far-past-the-row skip above.
  const Tensor x = MakeTensor<int64_t>({5}, {1, 2, 1, 2, 3});
  auto out = RunKernel(CpuKernelRegistry(),
                       TfIdf("TF", std::numeric_limits<int64_t>::max()), {x},
                       FloatOutput());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(2, 1, 3, 2));
}

TEST(TfIdfVectorizerTest, NoColumnsDoNotLoopOverHugeEmptyRows) {
  // No pooled n-grams: the output [2^40, 0] is empty, and its 2^40 rows
  // (a dim of an empty X) must not be walked one by one.
  Node empty = MakeNode("TfIdfVectorizer", {"x"}, {"y"},
                        {{"mode", std::string("TF")},
                         {"min_gram_length", int64_t{1}},
                         {"max_gram_length", int64_t{1}},
                         {"ngram_counts", std::vector<int64_t>{}},
                         {"ngram_indexes", std::vector<int64_t>{}},
                         {"pool_int64s", std::vector<int64_t>{}}});
  RunKernelOptions options = FloatOutput();
  options.hide_input_shapes = true;
  const int64_t rows = int64_t{1} << 40;
  auto out = RunKernel(CpuKernelRegistry(), empty,
                       {MakeTensor<int64_t>({rows, 0}, {})}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({rows, 0}));
}

TEST(TfIdfVectorizerTest, WeightingsAndBatchRows) {
  const Tensor x = MakeTensor<int32_t>({2, 4}, {1, 2, 1, 2, 3, 3, 3, 7});
  const std::vector<float> w = {0.5f, 1, 2, 4};
  auto idf =
      RunKernel(CpuKernelRegistry(), TfIdf("IDF", 0, w), {x}, FloatOutput());
  ASSERT_TRUE(idf.ok()) << idf.status();
  EXPECT_EQ((*idf)[0].shape(), Shape({2, 4}));
  EXPECT_THAT(ToVector<float>((*idf)[0]),
              ElementsAre(0.5f, 0, 2, 0, 0, 1, 0, 0));
  auto tfidf =
      RunKernel(CpuKernelRegistry(), TfIdf("TFIDF", 0, w), {x}, FloatOutput());
  ASSERT_TRUE(tfidf.ok()) << tfidf.status();
  EXPECT_THAT(ToVector<float>((*tfidf)[0]),
              ElementsAre(1, 0, 4, 0, 0, 3, 0, 0));
  auto unweighted =
      RunKernel(CpuKernelRegistry(), TfIdf("IDF", 0), {x}, FloatOutput());
  ASSERT_TRUE(unweighted.ok()) << unweighted.status();
  EXPECT_THAT(ToVector<float>((*unweighted)[0]),
              ElementsAre(1, 0, 1, 0, 0, 1, 0, 0));
}

TEST(TfIdfVectorizerTest, RefusesStringsAndMalformedPools) {
  auto strings =
      RunKernel(CpuKernelRegistry(),
                MakeNode("TfIdfVectorizer", {"x"}, {"y"},
                         {{"mode", std::string("TF")},
                          {"min_gram_length", int64_t{1}},
                          {"max_gram_length", int64_t{1}},
                          {"ngram_counts", std::vector<int64_t>{0}},
                          {"ngram_indexes", std::vector<int64_t>{0}},
                          {"pool_strings", std::vector<std::string>{"a"}}}),
                {MakeTensor<int64_t>({1}, {1})}, FloatOutput());
  EXPECT_EQ(strings.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(strings.status().message(), HasSubstr("string"));
  Node bad = TfIdf("TF", 0);
  bad.attributes["ngram_counts"] = std::vector<int64_t>{0, 1};  // Odd bigrams.
  auto counts = RunKernel(CpuKernelRegistry(), bad,
                          {MakeTensor<int64_t>({1}, {1})}, FloatOutput());
  EXPECT_EQ(counts.status().code(), absl::StatusCode::kInvalidArgument);
  Node wide = TfIdf("TF", 0);
  wide.attributes["ngram_indexes"] =
      std::vector<int64_t>{0, 1, 2, int64_t{1} << 40};
  auto columns = RunKernel(CpuKernelRegistry(), wide,
                           {MakeTensor<int64_t>({1}, {1})}, FloatOutput());
  EXPECT_EQ(columns.status().code(), absl::StatusCode::kInvalidArgument);
  auto mode = RunKernel(CpuKernelRegistry(), TfIdf("BM25", 0),
                        {MakeTensor<int64_t>({1}, {1})}, FloatOutput());
  EXPECT_EQ(mode.status().code(), absl::StatusCode::kInvalidArgument);
  auto rank = RunKernel(CpuKernelRegistry(), TfIdf("TF", 0),
                        {MakeTensor<int64_t>({1, 1, 1}, {1})}, FloatOutput());
  EXPECT_EQ(rank.status().code(), absl::StatusCode::kInvalidArgument);
}

// glint.ChannelGatherChannelsLast by hand: inputs concatenated, shuffled
// and cut into outputs, pixel by pixel, on both paths (inputs of C / g
// channels each, and any other split), and its refusals.
TEST(ChannelGatherTest, ConcatShuffleAndSlicesPixelByPixel) {
  // Two pixels. Equal split, g = 2: a = (1, 2 | 3, 4), b = (10, 20 | 30,
  // 40); concatenated (1, 2, 10, 20), shuffled (1, 10, 2, 20).
  const Tensor a = MakeTensor<float>({1, 2, 1, 2}, {1, 2, 3, 4});
  const Tensor b = MakeTensor<float>({1, 2, 1, 2}, {10, 20, 30, 40});
  Node node =
      MakeNode("glint.ChannelGatherChannelsLast", {"a", "b"}, {"y0", "y1"});
  node.attributes["groups"] = int64_t{2};
  node.attributes["ranges"] = std::vector<int64_t>{1, 4, 0, 1};
  auto out = RunKernel(CpuKernelRegistry(), node, {a, b});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 2, 1, 3}));
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(10, 2, 20, 30, 4, 40));
  EXPECT_THAT(ToVector<float>((*out)[1]), ElementsAre(1, 3));
  // Three inputs of 1, 2 and 3 channels, g = 3: concatenated
  // (p, q0, q1, r0, r1, r2), shuffled channel k = concatenated
  // (k % 3) * 2 + k / 3: (p, q1, r1, q0, r0, r2).
  Node three =
      MakeNode("glint.ChannelGatherChannelsLast", {"p", "q", "r"}, {"y"});
  three.attributes["groups"] = int64_t{3};
  three.attributes["ranges"] = std::vector<int64_t>{0, 6};
  out = RunKernel(CpuKernelRegistry(), three,
                  {MakeTensor<float>({1, 1, 1, 1}, {1}),
                   MakeTensor<float>({1, 1, 1, 2}, {2, 3}),
                   MakeTensor<float>({1, 1, 1, 3}, {4, 5, 6})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(1, 3, 5, 2, 4, 6));
  // Four equal inputs, g = 4, a range that starts and ends inside a group.
  Node four =
      MakeNode("glint.ChannelGatherChannelsLast", {"a", "b", "a", "b"}, {"y"});
  four.attributes["groups"] = int64_t{4};
  four.attributes["ranges"] = std::vector<int64_t>{3, 6};
  out = RunKernel(CpuKernelRegistry(), four, {a, b, a, b});
  ASSERT_TRUE(out.ok()) << out.status();
  // Shuffled (1, 10, 1, 10, 2, 20, 2, 20) per first pixel.
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(10, 2, 20, 30, 4, 40));
  four.attributes["ranges"] = std::vector<int64_t>{0, 8};  // Whole groups.
  out = RunKernel(CpuKernelRegistry(), four, {a, b, a, b});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(
      ToVector<float>((*out)[0]),
      ElementsAre(1, 10, 1, 10, 2, 20, 2, 20, 3, 30, 3, 30, 4, 40, 4, 40));

  Node past = node;
  past.attributes["ranges"] = std::vector<int64_t>{1, 5, 0, 1};
  out = RunKernel(CpuKernelRegistry(), past, {a, b});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("past"));
  Node bounds = node;
  bounds.attributes["ranges"] = std::vector<int64_t>{1, 4};
  out = RunKernel(CpuKernelRegistry(), bounds, {a, b});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("two per output"));
  out = RunKernel(CpuKernelRegistry(), node,
                  {a, MakeTensor<float>({1, 1, 1, 2}, {10, 20})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("differ off the channel axis"));
}

}  // namespace
}  // namespace glint::cpu
