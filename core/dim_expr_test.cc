#include "core/dim_expr.h"

#include <map>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace glint {
namespace {

const std::map<std::string, int64_t> kBounds = {
    {"batch", 8}, {"height", 224}, {"width", 200}, {"seq", 512}};

TEST(DimExprTest, NamesAreLookedUpBeforeTheyAreParsed) {
  // A model's own dim may be named anything, operators included.
  EXPECT_EQ(EvaluateDim("batch", kBounds), 8);
  EXPECT_EQ(EvaluateDim("a-b", {{"a-b", 3}}), 3);
  EXPECT_EQ(EvaluateDim("other", kBounds), std::nullopt);
  EXPECT_EQ(EvaluateDim("", kBounds), std::nullopt);
}

TEST(DimExprTest, EvaluatesFloorDivisionsSumsAndProducts) {
  EXPECT_EQ(EvaluateDim("(height+1)/2", kBounds), 112);
  EXPECT_EQ(EvaluateDim("(width-1)/2+1", kBounds), 100);
  EXPECT_EQ(EvaluateDim("64*batch", kBounds), 512);
  EXPECT_EQ(EvaluateDim("batch*seq", kBounds), 4096);
  EXPECT_EQ(EvaluateDim("((height+1)/2)*batch", kBounds), 896);
  EXPECT_EQ(EvaluateDim("seq-1", kBounds), 511);
  EXPECT_EQ(EvaluateDim("height-(width-10)", kBounds), 34);
  // A size below 0 is one no run has.
  EXPECT_EQ(EvaluateDim("(batch-9)/2", kBounds), 0);
}

TEST(DimExprTest, RefusesWhatTheGrammarDoesNot) {
  for (const char* bad : {"height/batch", "height/0", "(height+1", "height+",
                          "2 * batch", "height%2", "-batch", "batch)", "h\xff",
                          "((((((((((((((((((((((((((("
                          "(((((((batch)))))))))))))))))))))))))))))))))"}) {
    EXPECT_EQ(EvaluateDim(bad, kBounds), std::nullopt) << bad;
  }
  // Constants and products past 2^62 are refused, not wrapped.
  EXPECT_EQ(EvaluateDim("99999999999999999999*batch", kBounds), std::nullopt);
  EXPECT_EQ(EvaluateDim("4611686018427387904*batch", kBounds), std::nullopt);
  EXPECT_EQ(EvaluateDim(std::string(300, 'a'), kBounds), std::nullopt);
}

TEST(DimExprTest, AffineFormsComposeIntoOneCanonicalName) {
  // A 3x3 stride-2 convolution padded by 1: floor((h + 2 - 3) / 2) + 1.
  const std::optional<std::string> once = DimAffine("height", 1, 2);
  ASSERT_TRUE(once.has_value());
  EXPECT_EQ(*once, "(height+1)/2");
  // Twice: floor((floor((h+1)/2) + 1) / 2) = floor((h+3)/4).
  EXPECT_EQ(DimAffine(*once, 1, 2), "(height+3)/4");
  // A 1x1 stride-2 convolution of the same input has the same size, so the
  // same name: floor((h - 1) / 2) + 1 = floor((h + 1) / 2).
  EXPECT_EQ(DimAffine("height", -1 + 2, 2), *once);
  EXPECT_EQ(DimAffine("height", 0, 1), "height");
  EXPECT_EQ(DimAffine("seq", -3, 1), "seq-3");
  EXPECT_EQ(DimAffine("seq-3", 3, 1), "seq");
  // A common factor goes: 64*batch/64 is batch, (4*seq+2)/6 is (2*seq+1)/3.
  EXPECT_EQ(DimAffine("64*batch", 0, 2), "32*batch");
  EXPECT_EQ(DimAffine("64*batch", 0, 64), "batch");
  EXPECT_EQ(DimAffine("4*seq", 2, 6), "(2*seq+1)/3");
  EXPECT_EQ(DimAffine("batch*seq", 0, 2), "batch*seq/2");
  EXPECT_EQ(DimAffine("a b", 0, 2), std::nullopt);
  EXPECT_EQ(DimAffine("height", 0, 0), std::nullopt);
  // Each evaluates to the arithmetic it names, at every size.
  for (int64_t h = 1; h < 300; ++h) {
    const std::map<std::string, int64_t> at = {{"height", h}};
    EXPECT_EQ(EvaluateDim("(height+3)/4", at), ((h + 1) / 2 + 1) / 2) << h;
  }
}

TEST(DimExprTest, ProductsSplitIntoSortedFactors) {
  std::optional<DimProduct> p = DimFactors("seq*64*batch");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->coefficient, 64);
  EXPECT_EQ(p->factors, (std::vector<std::string>{"batch", "seq"}));
  EXPECT_EQ(DimProductName(*p), "64*batch*seq");
  p = DimFactors("((height+1)/2)*batch");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->factors, (std::vector<std::string>{"(height+1)/2", "batch"}));
  EXPECT_EQ(DimProductName(*p), "((height+1)/2)*batch");
  EXPECT_EQ(DimProductName({1, {"(height+1)/2"}}), "(height+1)/2");
  EXPECT_EQ(DimProductName({12, {}}), "12");
  EXPECT_EQ(EvaluateDim(DimProductName(*p), kBounds), 112 * 8);
  EXPECT_EQ(DimFactors("a b"), std::nullopt);
}

TEST(DimExprTest, BoundedDimsEvaluateToTheirBound) {
  // NonZero over a 3 x height x width value finds at most that many.
  EXPECT_EQ(EvaluateDim("nonzero_1<=3*height*width", kBounds), 3 * 224 * 200);
  // Its tag is no dim of the network's: a value given for it is not read.
  EXPECT_EQ(EvaluateDim("nonzero_1<=3", {{"nonzero_1", 7}}), 3);
  // As a factor it is parenthesised, and its bound stands for it.
  EXPECT_EQ(EvaluateDim("4*(topk_2<=seq)+1", kBounds), 4 * 512 + 1);
  EXPECT_EQ(EvaluateDim("((topk_2<=seq)+1)/2", kBounds), 256);
  EXPECT_EQ(EvaluateDim("t<=batch-9", kBounds), 0);
  for (const char* bad :
       {"t<=", "<=5", "4*t<=5", "t<=5<=6", "(t<=5", "t< =5", "2<=5", "t<=x"}) {
    EXPECT_EQ(EvaluateDim(bad, kBounds), std::nullopt) << bad;
  }
  EXPECT_TRUE(IsDimExpression("4*(topk_2<=seq)"));
  EXPECT_TRUE(IsDimExpression("99999999*99999999*batch"));  // Too large, read.
  EXPECT_FALSE(IsDimExpression("t<=5<=6"));
  EXPECT_TRUE(IsDataDependentDim("4*(topk_2<=seq)"));
  EXPECT_FALSE(IsDataDependentDim("4*seq"));
  EXPECT_FALSE(IsDataDependentDim("t<="));
}

TEST(DimExprTest, BoundedDimsFlattenAndCompose) {
  // A TopK over NonZero's count is at most what NonZero is at most.
  EXPECT_EQ(DimBounded("topk_2", "nonzero_1<=3*height"), "topk_2<=3*height");
  EXPECT_EQ(DimBounded("slice_3", "2*(topk_2<=seq)+1"), "slice_3<=2*seq+1");
  EXPECT_EQ(DimBounded("nms_4", "90*(t<=10125)"), "nms_4<=911250");
  EXPECT_EQ(DimBounded("not a name", "seq"), std::nullopt);
  EXPECT_EQ(DimBounded("t", "seq)"), std::nullopt);
  EXPECT_EQ(DimBounded("t", std::string(300, 'a')), std::nullopt);
  EXPECT_EQ(DimUpperBound("(nonzero_1<=height)*batch"), "height*batch");
  EXPECT_EQ(DimUpperBound("seq"), "seq");
  // A bound that is bounded prints back as it reads.
  EXPECT_EQ(DimSum({"t<=(u<=5)"}), "t<=(u<=5)");
  EXPECT_EQ(DimUpperBound("t<=(u<=5)"), "5");
  // Affine forms of a bounded dim keep it as a factor.
  EXPECT_EQ(DimAffine("t<=seq", 1, 2), "((t<=seq)+1)/2");
  std::optional<DimProduct> p = DimFactors("4*(t<=seq)");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->coefficient, 4);
  EXPECT_EQ(p->factors, (std::vector<std::string>{"t<=seq"}));
  EXPECT_EQ(DimProductName(*p), "4*(t<=seq)");
  EXPECT_EQ(DimProductName({1, {"t<=seq"}}), "t<=seq");
}

TEST(DimExprTest, SumsAddLikeProducts) {
  // A Concat of a residual's two halves and a constant block.
  EXPECT_EQ(DimSum({"(height+1)/2", "(height+1)/2", "4"}),
            "2*((height+1)/2)+4");
  EXPECT_EQ(DimSum({"3", "5"}), "8");
  EXPECT_EQ(DimSum({"seq", "batch*seq", "2*seq"}), "batch*seq+3*seq");
  EXPECT_EQ(DimSum({"a-b", "c"}), "a-b+c");
  EXPECT_EQ(EvaluateDim(*DimSum({"a-b", "c"}), {{"a", 5}, {"b", 2}, {"c", 1}}),
            4);
  EXPECT_EQ(DimSum({"t<=seq", "u<=seq"}), "(t<=seq)+(u<=seq)");
  EXPECT_EQ(EvaluateDim(*DimSum({"t<=seq", "u<=seq"}), kBounds), 1024);
  EXPECT_EQ(DimSum({}), "0");
  EXPECT_EQ(DimSum({"seq", "x)"}), std::nullopt);
  EXPECT_EQ(DimSum({"4611686018427387904", "4611686018427387904"}),
            std::nullopt);
}

}  // namespace
}  // namespace glint
