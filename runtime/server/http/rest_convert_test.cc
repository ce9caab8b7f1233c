#include "runtime/server/http/rest_convert.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1000000);

absl::StatusOr<Tensor> FromJsonText(const std::string& data, DType dtype,
                                    Shape shape) {
  return TensorFromJson(json::parse(data), dtype, shape, "input 'x'");
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.num_elements());
}

// The JSON object AppendTensorJson writes, parsed back.
json TensorJson(const NamedTensor& tensor) {
  std::string text;
  const absl::Status s = AppendTensorJson(tensor, &text);
  EXPECT_TRUE(s.ok()) << s;
  return json::parse(text);
}

TEST(OipDatatypeTest, EveryDatatypeRoundTrips) {
  for (const char* name : {"BOOL", "UINT8", "UINT16", "UINT32", "UINT64",
                           "INT8", "INT16", "INT32", "INT64", "FP16", "BF16",
                           "FP32", "FP64"}) {
    absl::StatusOr<DType> dtype = DTypeFromOipDatatype(name);
    ASSERT_TRUE(dtype.ok()) << name << ": " << dtype.status();
    EXPECT_EQ(OipDatatype(*dtype), name);
  }
  EXPECT_EQ(*DTypeFromOipDatatype("FP32"), DType::kFloat32);
  EXPECT_EQ(*DTypeFromOipDatatype("BF16"), DType::kBFloat16);
  EXPECT_EQ(OipDatatype(DType::kString), "BYTES");
}

// The shared vocabulary refuses BYTES (INVALID_ARGUMENT); the REST request
// parser answers it UNIMPLEMENTED (501), see
// ParseInferRequestTest.ExtensionsGlintLacksAreUnimplemented.
TEST(OipDatatypeTest, BytesAndOthersAreRefused) {
  EXPECT_EQ(DTypeFromOipDatatype("BYTES").status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const char* bad : {"fp32", "FLOAT32", "", "FP8", "INT4"}) {
    const absl::Status s = DTypeFromOipDatatype(bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(TensorFromJsonTest, FlatAndNestedGiveTheSameTensor) {
  absl::StatusOr<Tensor> flat =
      FromJsonText("[1, 2, 3, 4, 5, 6]", DType::kInt32, Shape({2, 3}));
  absl::StatusOr<Tensor> nested =
      FromJsonText("[[1, 2, 3], [4, 5, 6]]", DType::kInt32, Shape({2, 3}));
  ASSERT_TRUE(flat.ok()) << flat.status();
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(flat->shape(), Shape({2, 3}));
  EXPECT_THAT(Values<int32_t>(*flat), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(Values<int32_t>(*flat), Values<int32_t>(*nested));

  absl::StatusOr<Tensor> deep = FromJsonText(
      "[[[1.5], [2.5]], [[3.5], [4.5]]]", DType::kFloat32, Shape({2, 2, 1}));
  ASSERT_TRUE(deep.ok()) << deep.status();
  EXPECT_THAT(Values<float>(*deep), ElementsAre(1.5f, 2.5f, 3.5f, 4.5f));
}

TEST(TensorFromJsonTest, ScalarsAndEmptyTensors) {
  absl::StatusOr<Tensor> scalar =
      FromJsonText("[7]", DType::kInt64, Shape());
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(scalar->shape().rank(), 0);
  EXPECT_EQ(Values<int64_t>(*scalar), std::vector<int64_t>{7});

  absl::StatusOr<Tensor> empty = FromJsonText("[]", DType::kFloat32, Shape({0, 3}));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_elements(), 0);
  absl::StatusOr<Tensor> empty_nested =
      FromJsonText("[[], []]", DType::kFloat32, Shape({2, 0}));
  ASSERT_TRUE(empty_nested.ok()) << empty_nested.status();
  EXPECT_EQ(empty_nested->shape(), Shape({2, 0}));
}

TEST(TensorFromJsonTest, SizeMismatchesNameTheInput) {
  absl::Status s =
      FromJsonText("[1, 2, 3, 4, 5]", DType::kInt32, Shape({2, 3})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("input 'x'"));
  EXPECT_THAT(s.message(), HasSubstr("6 elements"));
  EXPECT_THAT(s.message(), HasSubstr("has 5"));

  // Nested, one row short.
  s = FromJsonText("[[1, 2, 3], [4, 5]]", DType::kInt32, Shape({2, 3}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("data[1]"));
  // Nested deeper than the shape.
  s = FromJsonText("[[[1], [2]], [[3], [4]]]", DType::kInt32, Shape({2, 2}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("data[0][0]"));
  // Nested, but not as deep as the shape.
  s = FromJsonText("[[1, 2, 3, 4]]", DType::kInt32, Shape({1, 2, 2})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  // A scalar given as [[x]].
  s = FromJsonText("[[7]]", DType::kInt32, Shape()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  // Flat with an array inside.
  s = FromJsonText("[1, [2], 3]", DType::kInt32, Shape({3})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("element 1"));
  // Not an array at all.
  s = FromJsonText("{\"a\": 1}", DType::kInt32, Shape({1})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = FromJsonText("3", DType::kInt32, Shape()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorFromJsonTest, HugeShapesAreRefusedBeforeAllocating) {
  // 10^12 floats claimed, one given: refused by the count, no 4 TB buffer.
  absl::Status s =
      FromJsonText("[1]", DType::kFloat32, Shape({1000000, 1000000})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = FromJsonText("[[1]]", DType::kFloat32, Shape({1000000, 1000000}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  // Beyond the tensor ceilings whatever the data.
  s = FromJsonText("[1]", DType::kFloat32,
                   Shape({int64_t{1} << 40, int64_t{1} << 40}))
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(TensorFromJsonTest, IntegerRangesAndTypes) {
  absl::StatusOr<Tensor> i8 =
      FromJsonText("[-128, 127, 0]", DType::kInt8, Shape({3}));
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_THAT(Values<int8_t>(*i8), ElementsAre(-128, 127, 0));
  EXPECT_FALSE(FromJsonText("[128]", DType::kInt8, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[-129]", DType::kInt8, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[-1]", DType::kUInt8, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[256]", DType::kUInt8, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[65536]", DType::kUInt16, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[4294967296]", DType::kUInt32, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[2147483648]", DType::kInt32, Shape({1})).ok());

  absl::StatusOr<Tensor> u64 = FromJsonText("[0, 18446744073709551615]",
                                            DType::kUInt64, Shape({2}));
  ASSERT_TRUE(u64.ok()) << u64.status();
  EXPECT_THAT(Values<uint64_t>(*u64),
              ElementsAre(0u, std::numeric_limits<uint64_t>::max()));
  absl::StatusOr<Tensor> i64 =
      FromJsonText("[-9223372036854775808, 9223372036854775807]",
                   DType::kInt64, Shape({2}));
  ASSERT_TRUE(i64.ok()) << i64.status();
  EXPECT_THAT(Values<int64_t>(*i64),
              ElementsAre(std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max()));
  EXPECT_FALSE(
      FromJsonText("[9223372036854775808]", DType::kInt64, Shape({1})).ok());

  // Integers must be JSON integers.
  absl::Status s = FromJsonText("[1, 2.5]", DType::kInt32, Shape({2})).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("element 1"));
  EXPECT_THAT(s.message(), HasSubstr("2.5"));
  EXPECT_FALSE(FromJsonText("[true]", DType::kInt32, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[\"1\"]", DType::kInt32, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[null]", DType::kInt32, Shape({1})).ok());
}

TEST(TensorFromJsonTest, BoolsAreBooleans) {
  absl::StatusOr<Tensor> b =
      FromJsonText("[true, false, true]", DType::kBool, Shape({3}));
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_THAT(Values<uint8_t>(*b), ElementsAre(1, 0, 1));
  EXPECT_FALSE(FromJsonText("[1]", DType::kBool, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[\"true\"]", DType::kBool, Shape({1})).ok());
}

TEST(TensorFromJsonTest, FloatsTakeNumbersAndTheNonFiniteNames) {
  absl::StatusOr<Tensor> f32 = FromJsonText(
      "[1, -2.5, 1e-3, \"NaN\", \"Infinity\", \"-Infinity\"]",
      DType::kFloat32, Shape({6}));
  ASSERT_TRUE(f32.ok()) << f32.status();
  const std::vector<float> v = Values<float>(*f32);
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], -2.5f);
  EXPECT_EQ(v[2], 1e-3f);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(v[4], std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[5], -std::numeric_limits<float>::infinity());

  absl::StatusOr<Tensor> f64 =
      FromJsonText("[0.1, 1e300]", DType::kFloat64, Shape({2}));
  ASSERT_TRUE(f64.ok()) << f64.status();
  EXPECT_THAT(Values<double>(*f64), ElementsAre(0.1, 1e300));

  absl::StatusOr<Tensor> f16 =
      FromJsonText("[1.5, -0.1, 65504]", DType::kFloat16, Shape({3}));
  ASSERT_TRUE(f16.ok()) << f16.status();
  EXPECT_THAT(Values<uint16_t>(*f16),
              ElementsAre(FloatToFloat16(1.5f), FloatToFloat16(-0.1f),
                          FloatToFloat16(65504.0f)));
  absl::StatusOr<Tensor> bf16 =
      FromJsonText("[1.5, 3.0e38]", DType::kBFloat16, Shape({2}));
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_THAT(Values<uint16_t>(*bf16),
              ElementsAre(FloatToBFloat16(1.5f), FloatToBFloat16(3.0e38f)));

  EXPECT_FALSE(FromJsonText("[\"nan\"]", DType::kFloat32, Shape({1})).ok());
  EXPECT_FALSE(FromJsonText("[true]", DType::kFloat32, Shape({1})).ok());
}

// Every datatype written by AppendTensorJson reads back, bit for bit,
// through TensorFromJson: what glintd returns a client can send again.
TEST(TensorJsonTest, EveryDatatypeRoundTrips) {
  const std::vector<NamedTensor> tensors = {
      {"b", Tensor::FromVector<uint8_t>(DType::kBool, Shape({3}), {1, 0, 1})},
      {"u8", Tensor::FromVector<uint8_t>(DType::kUInt8, Shape({2}), {0, 255})},
      {"u16", Tensor::FromVector<uint16_t>(DType::kUInt16, Shape({2}),
                                           {0, 65535})},
      {"u32", Tensor::FromVector<uint32_t>(DType::kUInt32, Shape({2}),
                                           {0, 4294967295u})},
      {"u64", Tensor::FromVector<uint64_t>(
                  DType::kUInt64, Shape({2}),
                  {0, std::numeric_limits<uint64_t>::max()})},
      {"i8", Tensor::FromVector<int8_t>(DType::kInt8, Shape({2}), {-128, 127})},
      {"i16", Tensor::FromVector<int16_t>(DType::kInt16, Shape({2}),
                                          {-32768, 32767})},
      {"i32", Tensor::FromVector<int32_t>(
                  DType::kInt32, Shape({2}),
                  {std::numeric_limits<int32_t>::min(), 7})},
      {"i64", Tensor::FromVector<int64_t>(
                  DType::kInt64, Shape({2}),
                  {std::numeric_limits<int64_t>::min(),
                   std::numeric_limits<int64_t>::max()})},
      {"f16", Tensor::FromVector<uint16_t>(
                  DType::kFloat16, Shape({4}),
                  {FloatToFloat16(0.1f), FloatToFloat16(-65504.0f), 0x7c00,
                   0x0001 /* smallest subnormal */})},
      {"bf16", Tensor::FromVector<uint16_t>(
                   DType::kBFloat16, Shape({3}),
                   {FloatToBFloat16(0.1f), FloatToBFloat16(-3.0e38f), 0xff80})},
      {"f32", Tensor::FromVector<float>(
                  DType::kFloat32, Shape({2, 3}),
                  {0.1f, -1.0f / 3, 1e-45f, 3.4028235e38f,
                   std::numeric_limits<float>::quiet_NaN(),
                   -std::numeric_limits<float>::infinity()})},
      {"f64", Tensor::FromVector<double>(DType::kFloat64, Shape({4}),
                                         {0.1, -1.0 / 3, 5e-324, -0.0})},
      {"negative_zeros",
       Tensor::FromVector<uint16_t>(DType::kFloat16, Shape({1}), {0x8000})},
      {"scalar", Tensor::FromVector<int64_t>(DType::kInt64, Shape(), {42})},
  };
  for (const NamedTensor& t : tensors) {
    SCOPED_TRACE(t.name);
    const json doc = TensorJson(t);
    EXPECT_EQ(doc["name"], t.name);
    EXPECT_EQ(doc["datatype"], std::string(OipDatatype(t.tensor.dtype())));
    EXPECT_EQ(doc["shape"].get<std::vector<int64_t>>(), t.tensor.shape().dims());
    absl::StatusOr<Tensor> back =
        TensorFromJson(doc["data"], t.tensor.dtype(), t.tensor.shape(), t.name);
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(back->num_bytes(), t.tensor.num_bytes());
    if (t.name == "f32") {
      // NaN's payload is not kept; compare the other elements exactly.
      const std::vector<float> a = Values<float>(t.tensor),
                               b = Values<float>(*back);
      for (size_t i = 0; i < a.size(); ++i) {
        if (std::isnan(a[i])) {
          EXPECT_TRUE(std::isnan(b[i]));
        } else {
          EXPECT_EQ(a[i], b[i]) << i;
        }
      }
    } else {
      EXPECT_EQ(std::memcmp(back->raw_data(), t.tensor.raw_data(),
                            t.tensor.num_bytes()),
                0);
    }
  }
}

TEST(TensorJsonTest, FloatsAreShortestAndNonFiniteAreNamed) {
  std::string text;
  ASSERT_TRUE(AppendTensorJson({"y", Tensor::FromVector<float>(
                                         DType::kFloat32, Shape({5}),
                                         {0.1f, 2.0f,
                                          std::numeric_limits<float>::infinity(),
                                          std::numeric_limits<float>::quiet_NaN(),
                                          -0.0f})},
                               &text)
                  .ok());
  EXPECT_EQ(text,
            "{\"name\":\"y\",\"datatype\":\"FP32\",\"shape\":[5],"
            "\"data\":[0.1,2,\"Infinity\",\"NaN\",-0.0]}");
}

TEST(TensorJsonTest, TensorsWithoutJsonFormAreRefused) {
  std::string text;
  // A tensor without a buffer.
  EXPECT_EQ(AppendTensorJson({"s", Tensor()}, &text).code(),
            absl::StatusCode::kInvalidArgument);
  Tensor undefined = Tensor::Borrow(DType::kUndefined, Shape({1}), &text);
  EXPECT_EQ(AppendTensorJson({"u", undefined}, &text).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ParseInferRequestTest, FullRequest) {
  absl::StatusOr<RestInferRequest> r = ParseInferRequest(R"({
    "id": "42",
    "parameters": {"priority": 3, "timeout": 2500000, "binary_data_output": true},
    "inputs": [
      {"name": "a", "shape": [2, 2], "datatype": "UINT32", "data": [1, 2, 3, 4]},
      {"name": "b", "shape": [3], "datatype": "BOOL",
       "parameters": {}, "data": [true, false, true]}
    ],
    "outputs": [{"name": "y"}, {"name": "z", "parameters": {"binary_data": true}}]
  })",
                                                         kNow);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->id.has_value());
  EXPECT_EQ(*r->id, "42");
  // Triton's level 3: behind levels 1 and 2, ahead of the default (0).
  EXPECT_EQ(r->options.priority, 1'000'000 + 1 - 3);
  EXPECT_EQ(r->options.deadline, kNow + absl::Seconds(2.5));
  EXPECT_THAT(r->options.requested_outputs, ElementsAre("y", "z"));
  ASSERT_EQ(r->inputs.size(), 2u);
  EXPECT_EQ(r->inputs[0].name, "a");
  EXPECT_EQ(r->inputs[0].tensor.dtype(), DType::kUInt32);
  EXPECT_EQ(r->inputs[0].tensor.shape(), Shape({2, 2}));
  EXPECT_THAT(Values<uint32_t>(r->inputs[0].tensor), ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(r->inputs[1].tensor.dtype(), DType::kBool);
}

TEST(ParseInferRequestTest, MinimalRequestHasDefaults) {
  absl::StatusOr<RestInferRequest> r = ParseInferRequest(
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})",
      kNow);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->id.has_value());
  EXPECT_EQ(r->options.priority, 0);
  EXPECT_EQ(r->options.deadline, absl::InfiniteFuture());
  EXPECT_TRUE(r->options.requested_outputs.empty());
  // Triton's timeout 0 is "none".
  r = ParseInferRequest(
      R"({"parameters": {"timeout": 0}, "inputs": []})", kNow);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->options.deadline, absl::InfiniteFuture());
}

// REST reads the protocol's rules from proto/oip_types.h, as the gRPC
// service does: the same ten-year ceiling (REST had its own, with 366-day
// years), the same priority levels.
TEST(ParseInferRequestTest, TimeoutAndPriorityFollowTheGrpcRules) {
  const int64_t ten_years_us = int64_t{10} * 365 * 24 * 3600 * 1'000'000;
  for (const int64_t us : {ten_years_us, ten_years_us + 1}) {
    const auto r = ParseInferRequest(
        absl::StrCat(R"({"inputs": [], "parameters": {"timeout": )", us,
                     "}}"),
        kNow);
    const absl::StatusOr<absl::Time> grpc =
        DeadlineFromOipTimeout(us, kNow, absl::InfiniteFuture());
    EXPECT_EQ(r.status().code(), grpc.status().code()) << us;
    if (r.ok() && grpc.ok()) {
      EXPECT_EQ(r->options.deadline, *grpc);
    }
  }
  for (const int64_t level : {int64_t{0}, int64_t{1}, kOipMaxPriorityLevel,
                              kOipMaxPriorityLevel + 1}) {
    const auto r = ParseInferRequest(
        absl::StrCat(R"({"inputs": [], "parameters": {"priority": )", level,
                     "}}"),
        kNow);
    const absl::StatusOr<int> grpc = RunPriorityFromOip(level);
    EXPECT_EQ(r.status().code(), grpc.status().code()) << level;
    if (r.ok() && grpc.ok()) {
      EXPECT_EQ(r->options.priority, *grpc);
    }
  }
}

TEST(ParseInferRequestTest, PriorityLevelsAsTritons) {
  auto priority = [](int64_t level) {
    absl::StatusOr<RestInferRequest> r = ParseInferRequest(
        absl::StrCat(R"({"inputs": [], "parameters": {"priority": )", level,
                     "}}"),
        kNow);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->options.priority : -1;
  };
  EXPECT_EQ(priority(0), 0);
  EXPECT_GT(priority(1), priority(2));
  EXPECT_GT(priority(2), priority(1'000'000));
  EXPECT_GT(priority(1'000'000), priority(0));
}

TEST(ParseInferRequestTest, BadJsonGivesTheParsersMessage) {
  for (const char* body : {"", "{", "{\"inputs\": [}", "nul", "{\"a\":1,}",
                           "\xff\xfe", "[1, 2] trailing"}) {
    const absl::Status s = ParseInferRequest(body, kNow).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(s.message(), HasSubstr("not valid JSON")) << body;
  }
}

TEST(ParseInferRequestTest, MalformedRequestsAreInvalid) {
  const char* const bodies[] = {
      "[]",
      "\"text\"",
      "{}",
      R"({"inputs": {}})",
      R"({"inputs": [3]})",
      R"({"id": 7, "inputs": []})",
      R"({"inputs": [{"shape": [1], "datatype": "FP32", "data": [1]}]})",
      R"({"inputs": [{"name": 1, "shape": [1], "datatype": "FP32", "data": [1]}]})",
      R"({"inputs": [{"name": "x", "datatype": "FP32", "data": [1]}]})",
      R"({"inputs": [{"name": "x", "shape": 1, "datatype": "FP32", "data": [1]}]})",
      R"({"inputs": [{"name": "x", "shape": [-1], "datatype": "FP32", "data": [1]}]})",
      R"({"inputs": [{"name": "x", "shape": [1.5], "datatype": "FP32", "data": [1]}]})",
      R"({"inputs": [{"name": "x", "shape": [1], "data": [1]}]})",
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "float", "data": [1]}]})",
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32"}]})",
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}], "outputs": {}})",
      R"({"inputs": [], "outputs": [{"nom": "y"}]})",
      R"({"inputs": [], "outputs": ["y"]})",
      R"({"inputs": [], "parameters": []})",
      R"({"inputs": [], "parameters": {"priority": "high"}})",
      R"({"inputs": [], "parameters": {"priority": 1.5}})",
      R"({"inputs": [], "parameters": {"timeout": -1}})",
      R"({"inputs": [], "parameters": {"timeout": 400000000000000}})",
      R"({"inputs": [], "parameters": {"priority": -1}})",
      R"({"inputs": [], "parameters": {"priority": 1000001}})",
      R"({"inputs": [], "parameters": {"nested": {"a": 1}}})",
  };
  for (const char* body : bodies) {
    const absl::Status s = ParseInferRequest(body, kNow).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << body << ": " << s;
  }
  // The rank limit, before any dimension is looked at.
  std::string deep = R"({"inputs": [{"name": "x", "datatype": "FP32", "data": [1], "shape": [)";
  for (int i = 0; i < 100; ++i) deep += i ? ",1" : "1";
  deep += "]}]}";
  EXPECT_THAT(ParseInferRequest(deep, kNow).status().message(),
              HasSubstr("rank 100"));
}

// The parameter rules are the gRPC port's (proto/oip_parameters.h): a key
// the protocol does not define is refused rather than ignored.
TEST(ParseInferRequestTest, UnknownParametersAreRefusedAsOverGrpc) {
  const char* const bodies[] = {
      R"({"inputs": [], "parameters": {"timout": 5}})",
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32",
          "parameters": {"layout": "nchw"}, "data": [1]}]})",
      R"({"inputs": [], "outputs": [{"name": "y", "parameters": {"top_k": 1}}]})",
      R"({"inputs": [], "outputs": [{"name": "y", "parameters": {"binary_data": 1}}]})",
      R"({"inputs": [], "outputs": [{"name": "y", "parameters": []}]})",
  };
  for (const char* body : bodies) {
    const absl::Status s = ParseInferRequest(body, kNow).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << body << ": " << s;
  }
  EXPECT_THAT(
      ParseInferRequest(R"({"inputs": [], "parameters": {"timout": 5}})", kNow)
          .status()
          .message(),
      HasSubstr("unknown request parameter 'timout'"));
  EXPECT_EQ(ParseInferRequest(
                R"({"inputs": [], "parameters": {"sequence_id": 7}})", kNow)
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
}

TEST(ParseInferRequestTest, ExtensionsGlintLacksAreUnimplemented) {
  const char* const bodies[] = {
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32",
          "parameters": {"binary_data_size": 4}}]})",
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32",
          "parameters": {"shared_memory_region": "r"}, "data": [1]}]})",
      R"({"inputs": [], "outputs": [{"name": "y", "parameters": {"classification": 3}}]})",
      R"({"inputs": [{"name": "x", "shape": [1], "datatype": "BYTES", "data": ["a"]}]})",
  };
  for (const char* body : bodies) {
    const absl::Status s = ParseInferRequest(body, kNow).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << body << ": " << s;
  }
}

TEST(InferResponseJsonTest, EchoesIdAndListsOutputs) {
  const std::vector<NamedTensor> outputs = {
      {"y", Tensor::FromVector<float>(DType::kFloat32, Shape({2}), {1, 2})},
      {"n", Tensor::FromVector<int64_t>(DType::kInt64, Shape({1}), {-3})}};
  absl::StatusOr<std::string> text = InferResponseJson("mlp", "req-1", outputs);
  ASSERT_TRUE(text.ok()) << text.status();
  const json doc = json::parse(*text);
  EXPECT_EQ(doc["model_name"], "mlp");
  EXPECT_EQ(doc["model_version"], "1");
  EXPECT_EQ(doc["id"], "req-1");
  ASSERT_EQ(doc["outputs"].size(), 2u);
  EXPECT_EQ(doc["outputs"][0]["data"], json::parse("[1, 2]"));
  EXPECT_EQ(doc["outputs"][1]["datatype"], "INT64");

  text = InferResponseJson("mlp", std::nullopt, {});
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(json::parse(*text).contains("id"));
}

TEST(MetadataJsonTest, ModelMetadataHasOipTypesAndDynamicDims) {
  NetworkInfo info;
  info.name = "net";
  info.inputs = {{"x", DType::kFloat32, Shape({1, 3})}};
  info.outputs = {{"y", DType::kInt64, Shape({Shape::kUnknownDim, 2})}};
  const json doc = json::parse(ModelMetadataJson(info));
  EXPECT_EQ(doc["name"], "net");
  EXPECT_EQ(doc["versions"], json::parse("[\"1\"]"));
  EXPECT_EQ(doc["platform"], "glint_onnx");
  EXPECT_EQ(doc["inputs"],
            json::parse(R"([{"name": "x", "datatype": "FP32", "shape": [1, 3]}])"));
  EXPECT_EQ(doc["outputs"], json::parse(
                                R"([{"name": "y", "datatype": "INT64", "shape": [-1, 2]}])"));
  EXPECT_FALSE(doc.contains("parameters"));

  // As the gRPC metadata: the batch dim of a batching network and an
  // unknown rank are -1; dynamic dims' bounds come as max_dims.
  info.batching.max_batch_size = 8;
  info.inputs = {{"x", DType::kFloat32, Shape({8, Shape::kUnknownDim})}};
  info.outputs = {{"y", DType::kFloat32, Shape::UnknownRank()}};
  info.dynamic_dims = {{"x", 1, "seq", 128}};
  const json batched = json::parse(ModelMetadataJson(info));
  EXPECT_EQ(batched["inputs"][0]["shape"], json::parse("[-1, -1]"));
  EXPECT_EQ(batched["outputs"][0]["shape"], json::parse("[-1]"));
  EXPECT_EQ(batched["parameters"], json::parse(R"({"max_dims": "seq=128"})"));
}

TEST(MetadataJsonTest, ServerMetadata) {
  const json doc = json::parse(ServerMetadataJson());
  EXPECT_EQ(doc["name"], "glint");
  EXPECT_TRUE(doc["version"].is_string());
  EXPECT_EQ(doc["extensions"], json::parse(R"(["schedule_policy"])"));
}

TEST(JsonQuoteTest, EscapesAndReplacesInvalidUtf8) {
  EXPECT_EQ(JsonQuote("a\"b\\c\n"), R"("a\"b\\c\n")");
  EXPECT_EQ(JsonQuote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(JsonQuote("x\xffy"), "\"x\xef\xbf\xbdy\"");
  EXPECT_EQ(json::parse(ErrorJson("bad \"thing\""))["error"], "bad \"thing\"");
}

}  // namespace
}  // namespace glint
