#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/graph.h"
#include "core/precision.h"
#include "core/tensor.h"
#include "core/text.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

TEST(PrecisionTest, ParsesTheNamesAndRefusesOthersNamingTheAllowedOnes) {
  EXPECT_EQ(*ParsePrecision(""), Precision::kFloat32);
  EXPECT_EQ(*ParsePrecision("fp32"), Precision::kFloat32);
  EXPECT_EQ(*ParsePrecision("BF16"), Precision::kBFloat16);
  EXPECT_EQ(PrecisionName(Precision::kFloat32), "fp32");
  EXPECT_EQ(PrecisionName(Precision::kBFloat16), "bf16");
  for (const char* bad : {"fp16", "bfloat", "int8", " bf16"}) {
    absl::StatusOr<Precision> p = ParsePrecision(bad);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(p.status().message().find("fp32"), std::string::npos);
    EXPECT_NE(p.status().message().find("bf16"), std::string::npos);
  }
}

TEST(DTypeTest, SizesNamesAndOnnxNumbers) {
  EXPECT_EQ(DTypeSize(DType::kFloat32), 4u);
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kBool), 1u);
  EXPECT_EQ(DTypeSize(DType::kInt64), 8u);
  EXPECT_EQ(DTypeName(DType::kFloat16), "float16");
  EXPECT_EQ(*ParseDType("int8"), DType::kInt8);
  EXPECT_EQ(ParseDType("complex").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*DTypeFromOnnx(16), DType::kBFloat16);
  EXPECT_EQ(DTypeFromOnnx(8).status().code(),  // STRING.
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(*DTypeFromNumpyDescr("<f4"), DType::kFloat32);
  EXPECT_EQ(*DTypeFromNumpyDescr("|b1"), DType::kBool);
  EXPECT_EQ(DTypeFromNumpyDescr(">f4").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*NumpyDescr(DType::kInt64), "<i8");
}

// An unknown rank is not a scalar's: nothing about it is known, it admits
// every computed shape, and it equals no shape (so no pass takes two of them
// for the same shape).
TEST(ShapeTest, UnknownRankIsNotAScalar) {
  const Shape unknown = Shape::UnknownRank();
  EXPECT_FALSE(unknown.has_rank());
  EXPECT_TRUE(Shape().has_rank());
  EXPECT_FALSE(unknown.IsStatic());
  EXPECT_EQ(unknown.NumElements(), -1);
  EXPECT_EQ(unknown.ToString(), "[...]");
  EXPECT_NE(unknown, Shape());
  EXPECT_NE(unknown, Shape::UnknownRank());
  EXPECT_TRUE(unknown.Admits(Shape()));
  EXPECT_TRUE(unknown.Admits(Shape({2, 3})));
  EXPECT_FALSE(Shape().Admits(Shape({1})));
  EXPECT_TRUE(Shape({2, Shape::kUnknownDim}).Admits(Shape({2, 7})));
  EXPECT_FALSE(Shape({2, Shape::kUnknownDim}).Admits(Shape({3, 7})));
  EXPECT_FALSE(Shape({2, 3}).Admits(unknown));
  EXPECT_TRUE(CheckTensorSize(DType::kFloat32, unknown).ok());
}

// A value's most bytes within bounds: known dims times the bounds of its
// named ones; nothing for what no bound sizes; saturated past 2^62.
TEST(ValueInfoTest, BytesWithinTheBoundsOfItsNamedDims) {
  const std::map<std::string, int64_t> bounds = {{"batch", 8}, {"seq", 512}};
  const int64_t u = Shape::kUnknownDim;
  ValueInfo logits{
      "logits", DType::kFloat32, Shape({u, u, 1000}), {"batch", "seq", ""}};
  EXPECT_EQ(logits.BytesWithin(bounds), uint64_t{8 * 512 * 1000 * 4});
  EXPECT_EQ(logits.BytesWithin({{"batch", 8}}), std::nullopt);  // seq?
  ValueInfo unnamed{"nz", DType::kInt64, Shape({2, u})};
  EXPECT_EQ(unnamed.BytesWithin(bounds), std::nullopt);
  ValueInfo empty{"e", DType::kFloat32, Shape({0, u}), {"", "seq"}};
  EXPECT_EQ(empty.BytesWithin(bounds), 0u);
  ValueInfo no_rank{"r", DType::kFloat32, Shape::UnknownRank()};
  EXPECT_EQ(no_rank.BytesWithin(bounds), std::nullopt);
  const int64_t big = int64_t{1} << 31;
  ValueInfo huge{
      "h", DType::kFloat32, Shape({u, u, u}), {"batch", "seq", "seq"}};
  EXPECT_EQ(huge.BytesWithin({{"batch", big}, {"seq", big}}),
            ValueInfo::kBytesWithinLimit);
  EXPECT_EQ(SaturatingAdd(UINT64_MAX - 1, 2), UINT64_MAX);
  EXPECT_EQ(SaturatingAdd(3, 4), 7u);
}

TEST(ShapeTest, StaticAndElementCounts) {
  EXPECT_EQ(Shape().NumElements(), 1);
  EXPECT_EQ(Shape({2, 3, 4}).NumElements(), 24);
  EXPECT_EQ(Shape({2, 0}).NumElements(), 0);
  EXPECT_FALSE(Shape({2, Shape::kUnknownDim}).IsStatic());
  EXPECT_EQ(Shape({2, Shape::kUnknownDim}).NumElements(), -1);
  EXPECT_EQ(Shape({2, Shape::kUnknownDim}).ToString(), "[2, ?]");
  // The product of the leading dims overflows int64_t; the zero wins.
  // (Signed overflow: only --config=asan's UBSan sees the old failure.)
  EXPECT_EQ(Shape({3037000500, 3037000500, 0}).NumElements(), 0);
}

TEST(TensorTest, CreateRefusesSizesThatDoNotFit) {
  absl::StatusOr<Tensor> empty =
      Tensor::Create(DType::kUInt8, Shape({3037000500, 3037000500, 0}));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_bytes(), 0u);
  EXPECT_EQ(Tensor::Create(DType::kFloat32, Shape({int64_t{1} << 40,
                                                   int64_t{1} << 40}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::Create(DType::kInt64, Shape({int64_t{1} << 61}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// The uninitialized form checks as Create does and gives a buffer of the
// shape's bytes, which FromBytes fills exactly.
TEST(TensorTest, CreateUninitializedChecksAsCreateDoes) {
  EXPECT_EQ(Tensor::CreateUninitialized(DType::kInt64,
                                        Shape({int64_t{1} << 61}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Tensor::CreateUninitialized(DType::kFloat32,
                                        Shape({2, Shape::kUnknownDim}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Tensor> t =
      Tensor::CreateUninitialized(DType::kFloat32, Shape({3, 5}));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->num_bytes(), 60u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % kTensorAlignment, 0u);
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  absl::StatusOr<Tensor> from = Tensor::FromBytes(
      DType::kFloat32, Shape({2, 3}),
      absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()),
                                v.size() * sizeof(float)));
  ASSERT_TRUE(from.ok()) << from.status();
  EXPECT_EQ(std::vector<float>(from->data<float>(), from->data<float>() + 6), v);
}

TEST(ShapeTest, ElementCountsSaturateInsteadOfOverflowing) {
  const int64_t big = int64_t{1} << 31;
  EXPECT_EQ(Shape({3, big, big}).NumElements(),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Shape({big, big, big, 0}).NumElements(), 0);
  EXPECT_EQ(Shape({big, 4}).NumElements(), big * 4);
}

TEST(ShapeTest, CheckTensorSizeEnforcesTheCeilings) {
  const int64_t big = int64_t{1} << 31;
  EXPECT_TRUE(CheckTensorSize(DType::kFloat32, Shape({1024, 1024})).ok());
  // Exactly the ceiling is allowed, one element more is not.
  EXPECT_TRUE(CheckTensorSize(DType::kUInt8, Shape({kMaxTensorBytes})).ok());
  EXPECT_EQ(CheckTensorSize(DType::kUInt8, Shape({kMaxTensorBytes + 1})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      CheckTensorSize(DType::kFloat32, Shape({kMaxTensorBytes / 2})).code(),
      absl::StatusCode::kInvalidArgument);
  // Products that overflow int64 are caught, not wrapped.
  EXPECT_EQ(CheckTensorSize(DType::kFloat32, Shape({3, big, big})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckTensorSize(DType::kFloat32, Shape({(int64_t{1} << 62) + 1, 4}))
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Empty tensors are fine whatever the other dims; unknown dims are
  // skipped; other negative dims and ranks past the limit are not.
  EXPECT_TRUE(CheckTensorSize(DType::kFloat32, Shape({0, big, big, big})).ok());
  EXPECT_TRUE(CheckTensorSize(DType::kFloat32, Shape({-1, 3})).ok());
  EXPECT_EQ(CheckTensorSize(DType::kFloat32, Shape({-2, 3})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckTensorSize(DType::kFloat32,
                            Shape(std::vector<int64_t>(kMaxTensorRank + 1, 1)))
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, HugeShapesAreRefusedBeforeAllocating) {
  const int64_t big = int64_t{1} << 31;
  EXPECT_EQ(
      Tensor::Create(DType::kFloat32, Shape({3, big, big})).status().code(),
      absl::StatusCode::kInvalidArgument);
  // 16 bytes claiming 2^62+1 x 4 floats: refused without reserving them.
  const std::vector<uint8_t> bytes(16);
  EXPECT_EQ(Tensor::FromBytes(DType::kFloat32,
                              Shape({(int64_t{1} << 62) + 1, 4}), bytes)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // 40 GB claimed by 16 bytes: under the ceiling, but the size check comes
  // first, so nothing is allocated (this test would take 40 GB otherwise).
  EXPECT_EQ(Tensor::FromBytes(DType::kFloat32, Shape({10'000'000'000}), bytes)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TextTest, Utf8Validity) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(
      IsValidUtf8("gr\xc3\xbc\xc3\x9f"
                  "e \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("x\xff\xfe"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // Truncated.
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // Overlong '/'.
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // A surrogate.
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // Past U+10FFFF.
  EXPECT_FALSE(IsValidUtf8("\x80"));              // A lone continuation.
}

TEST(TextTest, ClipKeepsShortTextAndCutsLongAtCharacters) {
  EXPECT_EQ(Clip("name"), "name");
  const std::string long_name(65536, 'a');
  const std::string clipped = Clip(long_name);
  EXPECT_EQ(clipped, std::string(kMaxQuotedBytes, 'a') + "...(65536 bytes)");
  // Never cut inside a character: 'e' then 3 euro signs, cut at 3 bytes.
  const std::string clipped_euro = Clip("e\xe2\x82\xac\xe2\x82\xac", 3);
  EXPECT_EQ(clipped_euro, "e...(7 bytes)");
  EXPECT_TRUE(IsValidUtf8(clipped_euro));
}

TEST(TensorTest, CreateIsAlignedAndZeroed) {
  absl::StatusOr<Tensor> t = Tensor::Create(DType::kFloat32, Shape({3, 5}));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % kTensorAlignment, 0u);
  EXPECT_EQ(t->num_bytes(), 60u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(t->data<float>()[i], 0.0f);
  EXPECT_EQ(Tensor::Create(DType::kFloat32, Shape({-1})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, FromBytesChecksTheSize) {
  std::vector<uint8_t> bytes(12);
  EXPECT_TRUE(Tensor::FromBytes(DType::kInt32, Shape({3}), bytes).ok());
  EXPECT_EQ(Tensor::FromBytes(DType::kInt32, Shape({4}), bytes).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TensorTest, CopiesShareAndClonesDoNot) {
  Tensor a = Tensor::FromVector<float>(DType::kFloat32, Shape({2}), {1, 2});
  Tensor shared = a;
  Tensor deep = a.Clone();
  a.data<float>()[0] = 7;
  EXPECT_EQ(shared.data<float>()[0], 7);
  EXPECT_EQ(deep.data<float>()[0], 1);
  EXPECT_EQ(a.Reshaped(Shape({1, 2}))->shape(), Shape({1, 2}));
  EXPECT_FALSE(a.Reshaped(Shape({3})).ok());
}

TEST(TensorTest, ViewAsSeesTheFirstBytesOfTheBuffer) {
  std::vector<uint8_t> memory(10, 0);
  Tensor bytes = Tensor::Borrow(DType::kUInt8, Shape({10}), memory.data());
  absl::StatusOr<Tensor> floats = bytes.ViewAs(DType::kFloat32, Shape({2}));
  ASSERT_TRUE(floats.ok()) << floats.status();
  EXPECT_EQ(floats->raw_data(), static_cast<void*>(memory.data()));
  EXPECT_EQ(floats->shape(), Shape({2}));
  floats->data<float>()[1] = 1.0f;
  EXPECT_EQ(memory[7], 0x3f);  // 1.0f's top byte, little-endian.
  EXPECT_EQ(bytes.ViewAs(DType::kFloat32, Shape({3})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(bytes.ViewAs(DType::kFloat32, Shape({-1})).ok());
  EXPECT_FALSE(Tensor().ViewAs(DType::kFloat32, Shape({1})).ok());
}

Graph TwoNodeGraph() {
  Graph g;
  g.inputs = {{"x", DType::kFloat32, Shape({2})}};
  g.outputs = {{"z", DType::kFloat32, Shape({2})}};
  g.initializers["w"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({2}), {1, 2});
  Node a{"a", "Add", "", {"x", "w"}, {"y"}, {}};
  Node b{"b", "Relu", "", {"y"}, {"z"}, {}};
  g.nodes = {a, b};
  for (const char* v : {"x", "w", "y", "z"}) {
    g.values[v] = {v, DType::kFloat32, Shape({2})};
  }
  return g;
}

TEST(TensorTest, BorrowedWithAKeepAliveHoldsItUntilTheLastCopy) {
  auto buffer = std::make_shared<std::vector<float>>(4, 2.5f);
  std::weak_ptr<std::vector<float>> watch = buffer;
  Tensor copy;
  {
    Tensor t = Tensor::Borrow(DType::kFloat32, Shape({4}), buffer->data(),
                              buffer);
    buffer.reset();
    copy = t;
  }
  // The tensor and its copy were the only owners left.
  ASSERT_FALSE(watch.expired());
  EXPECT_EQ(copy.data<float>()[3], 2.5f);
  copy = Tensor();
  EXPECT_TRUE(watch.expired());
}

TEST(GraphTest, ValidateAcceptsAWellFormedGraph) {
  EXPECT_TRUE(TwoNodeGraph().Validate().ok());
}

TEST(GraphTest, ValidateRejectsUseBeforeDefinition) {
  Graph g = TwoNodeGraph();
  std::swap(g.nodes[0], g.nodes[1]);
  absl::Status s = g.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'y'"), absl::string_view::npos) << s;
}

TEST(GraphTest, ValidateRejectsDuplicatesAndMissingOutputs) {
  Graph g = TwoNodeGraph();
  g.nodes[1].name = "a";
  EXPECT_EQ(g.Validate().code(), absl::StatusCode::kInvalidArgument);
  g = TwoNodeGraph();
  g.outputs.push_back({"nowhere", DType::kFloat32, Shape({2})});
  EXPECT_EQ(g.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GraphTest, SubgraphComputesItsBorder) {
  Graph g = TwoNodeGraph();
  Graph first = g.Subgraph({0});
  ASSERT_EQ(first.inputs.size(), 1u);
  EXPECT_EQ(first.inputs[0].name, "x");
  EXPECT_EQ(first.initializers.count("w"), 1u);
  ASSERT_EQ(first.outputs.size(), 1u);
  EXPECT_EQ(first.outputs[0].name, "y");
  Graph second = g.Subgraph({1});
  ASSERT_EQ(second.inputs.size(), 1u);
  EXPECT_EQ(second.inputs[0].name, "y");
  ASSERT_EQ(second.outputs.size(), 1u);
  EXPECT_EQ(second.outputs[0].name, "z");
  EXPECT_TRUE(first.Validate().ok());
  EXPECT_TRUE(second.Validate().ok());
}

TEST(GraphTest, NodeAttributeLookups) {
  Node n;
  n.attributes["k"] = int64_t{3};
  n.attributes["f"] = 0.5f;
  n.attributes["v"] = std::vector<int64_t>{1, 2};
  EXPECT_EQ(n.GetInt("k", 0), 3);
  EXPECT_EQ(n.GetInt("missing", 9), 9);
  EXPECT_EQ(n.GetInt("f", 9), 9);  // Wrong type: fallback.
  EXPECT_EQ(n.GetFloat("f", 0), 0.5f);
  EXPECT_EQ(n.GetInts("v"), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(n.HasAttribute("k"));
}

}  // namespace
}  // namespace glint
