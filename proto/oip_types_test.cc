#include "proto/oip_types.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(OipDatatypeTest, EveryDatatypeRoundTrips) {
  const std::vector<std::pair<std::string, DType>> cases = {
      {"BOOL", DType::kBool},       {"UINT8", DType::kUInt8},
      {"UINT16", DType::kUInt16},   {"UINT32", DType::kUInt32},
      {"UINT64", DType::kUInt64},   {"INT8", DType::kInt8},
      {"INT16", DType::kInt16},     {"INT32", DType::kInt32},
      {"INT64", DType::kInt64},     {"FP16", DType::kFloat16},
      {"FP32", DType::kFloat32},    {"FP64", DType::kFloat64},
      {"BF16", DType::kBFloat16},
  };
  for (const auto& [name, dtype] : cases) {
    absl::StatusOr<DType> parsed = DTypeFromOipDatatype(name);
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.status();
    EXPECT_EQ(*parsed, dtype) << name;
    EXPECT_EQ(OipDatatype(dtype), name);
  }
}

TEST(OipDatatypeTest, BytesAndUnknownAreRefusedClearly) {
  absl::StatusOr<DType> bytes = DTypeFromOipDatatype("BYTES");
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bytes.status().message(), HasSubstr("BYTES is not supported"));
  for (const char* bad : {"", "fp32", "FLOAT", "TYPE_FP32", "INT128"}) {
    absl::StatusOr<DType> parsed = DTypeFromOipDatatype(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("expected one of"));
  }
  EXPECT_EQ(OipDatatype(DType::kString), "BYTES");
  EXPECT_EQ(OipDatatype(DType::kUndefined), "");
}

TEST(OipDatatypeTest, TritonConfigTypesUseModelConfigNumbers) {
  // model_config.proto: TYPE_BOOL = 1 ... TYPE_FP32 = 11, TYPE_BF16 = 14.
  EXPECT_EQ(TritonDataType(DType::kBool), 1);
  EXPECT_EQ(TritonDataType(DType::kUInt64), 5);
  EXPECT_EQ(TritonDataType(DType::kInt8), 6);
  EXPECT_EQ(TritonDataType(DType::kInt64), 9);
  EXPECT_EQ(TritonDataType(DType::kFloat32), 11);
  EXPECT_EQ(TritonDataType(DType::kFloat64), 12);
  EXPECT_EQ(TritonDataType(DType::kBFloat16), 14);
  EXPECT_EQ(TritonDataType(DType::kString), 0);
  EXPECT_EQ(*DTypeFromTritonDataTypeName("TYPE_FP16"), DType::kFloat16);
  EXPECT_FALSE(DTypeFromTritonDataTypeName("TYPE_STRING").ok());
  EXPECT_FALSE(DTypeFromTritonDataTypeName("FP32").ok());
}

TEST(OipVersionTest, OnlyVersionOneExists) {
  EXPECT_TRUE(CheckOipModelVersion("m", "").ok());
  EXPECT_TRUE(CheckOipModelVersion("m", "1").ok());
  for (const char* v : {"2", "0", "01", "latest"}) {
    absl::Status s = CheckOipModelVersion("m", v);
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << v;
    EXPECT_THAT(s.message(), HasSubstr("one version"));
  }
}

TEST(OipPriorityTest, LevelOneIsMostUrgentAndZeroIsTheDefault) {
  EXPECT_EQ(*RunPriorityFromOip(0), 0);
  const int one = *RunPriorityFromOip(1);
  const int two = *RunPriorityFromOip(2);
  const int last = *RunPriorityFromOip(kOipMaxPriorityLevel);
  EXPECT_GT(one, two);
  EXPECT_GT(two, last);
  EXPECT_GT(last, 0);  // Any explicit level runs ahead of the default.
  EXPECT_EQ(RunPriorityFromOip(-1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunPriorityFromOip(kOipMaxPriorityLevel + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OipTimeoutTest, MicrosecondsBecomeADeadline) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  EXPECT_EQ(*DeadlineFromOipTimeout(0, now, absl::InfiniteFuture()),
            absl::InfiniteFuture());
  EXPECT_EQ(*DeadlineFromOipTimeout(2500, now, absl::InfiniteFuture()),
            now + absl::Microseconds(2500));
  // The earlier of the two wins.
  const absl::Time grpc = now + absl::Milliseconds(1);
  EXPECT_EQ(*DeadlineFromOipTimeout(5000, now, grpc), grpc);
  EXPECT_EQ(*DeadlineFromOipTimeout(0, now, grpc), grpc);
  EXPECT_EQ(DeadlineFromOipTimeout(-1, now, grpc).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeadlineFromOipTimeout(int64_t{1} << 62, now, grpc).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TritonConfigTest, EmptyIsTheDefault) {
  for (const char* json : {"", "  ", "{}"}) {
    absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(json, "m");
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->options.batching.max_batch_size, 0);
    EXPECT_EQ(c->options.partition.replicas, 1);
    EXPECT_EQ(c->options.precision, Precision::kFloat32);
    EXPECT_TRUE(c->options.input_shapes.empty());
  }
}

TEST(TritonConfigTest, FullConfigMapsToOptions) {
  const char* json = R"({
    "name": "resnet",
    "platform": "onnxruntime_onnx",
    "max_batch_size": 8,
    "dynamic_batching": {
      "max_queue_delay_microseconds": "250",
      "preferred_batch_size": [4, 8]
    },
    "instance_group": [{"count": 2, "kind": "KIND_GPU"}, {"kind": "KIND_CPU"}],
    "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, 4]},
              {"name": "len", "data_type": "TYPE_INT64", "dims": [-1]}],
    "output": [{"name": "y", "data_type": "TYPE_FP32"}],
    "parameters": {
      "partition_strategy": {"string_value": "load_balanced"},
      "plan_devices": {"string_value": "2"},
      "input_shapes": "mask=2,3; other=5",
      "max_dims": "seq=512; len:0 = 64",
      "reuse": {"string_value": "override"},
      "user_config": {"string_value": "v7"},
      "precision": {"string_value": "bf16"}
    }
  })";
  absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(json, "resnet");
  ASSERT_TRUE(c.ok()) << c.status();
  const AddNetworkOptions& o = c->options;
  EXPECT_EQ(o.batching.max_batch_size, 8);
  EXPECT_EQ(o.batching.max_queue_delay, absl::Microseconds(250));
  EXPECT_THAT(o.batching.preferred_batch_sizes, ElementsAre(4, 8));
  EXPECT_EQ(o.partition.replicas, 3);  // 2 + Triton's default count of 1.
  EXPECT_EQ(o.partition.strategy, PartitionStrategy::kLoadBalanced);
  EXPECT_EQ(o.partition.plan_devices, 2);
  EXPECT_EQ(o.reuse, PlanReuse::kOverride);
  EXPECT_EQ(o.user_config, "v7");
  EXPECT_EQ(o.precision, Precision::kBFloat16);
  // x's dims are known: bound behind the batch dimension; len's are not.
  ASSERT_EQ(o.input_shapes.count("x"), 1u);
  EXPECT_EQ(o.input_shapes.at("x"), Shape({8, 3, 4}));
  EXPECT_EQ(o.input_shapes.count("len"), 0u);
  EXPECT_EQ(o.input_shapes.at("mask"), Shape({2, 3}));
  EXPECT_EQ(o.input_shapes.at("other"), Shape({5}));
  EXPECT_THAT(o.max_dims, ElementsAre(std::pair<const std::string, int64_t>(
                                          "len:0", 64),
                                      std::pair<const std::string, int64_t>(
                                          "seq", 512)));
  ASSERT_EQ(c->inputs.size(), 2u);
  EXPECT_EQ(c->inputs[1].dtype, DType::kInt64);
  ASSERT_EQ(c->outputs.size(), 1u);
  EXPECT_FALSE(c->outputs[0].dims.has_value());
}

TEST(TritonConfigTest, MaxDimsMustBeBoundsByName) {
  for (const char* bad : {"seq", "seq=0", "=4", "seq=x", "seq=4294967296"}) {
    absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(
        absl::StrCat(R"({"parameters": {"max_dims": ")", bad, R"("}})"), "m");
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(c.status().message(), HasSubstr("parameters.max_dims"))
        << bad;
  }
}

TEST(TritonConfigTest, CamelCaseAndNumbersAsProtobufJsonWritesThem) {
  absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(
      R"({"maxBatchSize": "4", "dynamicBatching": {"maxQueueDelayMicroseconds": 100}})",
      "m");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->options.batching.max_batch_size, 4);
  EXPECT_EQ(c->options.batching.max_queue_delay, absl::Microseconds(100));
}

TEST(TritonConfigTest, UnbatchedInputDimsAreTheWholeShape) {
  absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(
      R"({"input": [{"name": "x", "dims": [2, 5]}],
          "parameters": {"input_shapes": "x=7,5"}})",
      "m");
  ASSERT_TRUE(c.ok()) << c.status();
  // The explicit Glint parameter wins over the Triton dims.
  EXPECT_EQ(c->options.input_shapes.at("x"), Shape({7, 5}));
  c = TritonModelConfigFromJson(R"({"input": [{"name": "x", "dims": [2, 5]}]})",
                                "m");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->options.input_shapes.at("x"), Shape({2, 5}));
}

TEST(TritonConfigTest, PlaceRulesImplyTheUserStrategy) {
  absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(
      R"({"parameters": {"place": {"string_value": "conv*=0;fc*=1"},
                         "replicas": "2"}})",
      "m");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->options.partition.strategy, PartitionStrategy::kUser);
  ASSERT_EQ(c->options.partition.user_plan.size(), 2u);
  EXPECT_EQ(c->options.partition.user_plan[1].pattern, "fc*");
  EXPECT_EQ(c->options.partition.user_plan[1].logical_device, 1);
  EXPECT_EQ(c->options.partition.replicas, 2);
}

// Each bad configuration is INVALID_ARGUMENT with a message naming what is
// wrong.
TEST(TritonConfigTest, BadConfigsAreRefusedNamingTheProblem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not valid JSON"},
      {R"({"max_batch_size": 1e999})", "not valid JSON"},  // Out of range.
      {"[1, 2]", "must be a JSON object"},
      {R"({"name": "other"})", "differs from the model name"},
      {R"({"platform": "tensorflow_savedmodel"})", "not one Glint runs"},
      {R"({"backend": "python"})", "not one Glint runs"},
      {R"({"sequence_batching": {}})", "'sequence_batching' is not supported"},
      {R"({"parameters": {"precision": {"string_value": "int8"}}})",
       "parameters.precision: precision 'int8' is not one of: fp32 (the "
       "default), bf16"},
      {R"({"version_policy": {"all": {}}})", "'version_policy' is not supported"},
      {R"({"max_batch_size": -1})", "outside"},
      {R"({"max_batch_size": 2.5})", "must be an integer"},
      {R"({"max_batch_size": "many"})", "must be an integer"},
      {R"({"dynamic_batching": {}})", "needs max_batch_size > 0"},
      {R"({"max_batch_size": 4, "dynamic_batching": {"priority_levels": 2}})",
       "'priority_levels' is not supported"},
      {R"({"max_batch_size": 4, "dynamic_batching": {"preferred_batch_size": [8]}})",
       "exceeds max_batch_size"},
      {R"({"max_batch_size": 4, "dynamic_batching": {"preserve_ordering": true}})",
       "preserve_ordering must be false"},
      {R"({"instance_group": [{"count": 1, "gpus": [0]}]})", "gpus is not supported"},
      {R"({"instance_group": [{"count": 0}]})", "outside"},
      {R"({"instance_group": [{"kind": "KIND_TPU"}]})", "kind must be one of"},
      {R"({"instance_group": [{"count": 2}], "parameters": {"replicas": "3"}})",
       "instance_group asks for 2"},
      {R"({"input": [{"data_type": "TYPE_FP32"}]})", "has no name"},
      {R"({"input": [{"name": "x", "data_type": "TYPE_STRING"}]})",
       "TYPE_STRING is not supported"},
      {R"({"input": [{"name": "x", "format": "FORMAT_NCHW"}]})",
       "'format' is not supported"},
      {R"({"input": [{"name": "x", "dims": [-2]}]})", "outside"},
      {R"({"input": {"name": "x"}})", "input must be an array"},
      {R"({"parameters": {"colour": {"string_value": "red"}}})",
       "parameters.colour is not a Glint parameter"},
      {R"({"parameters": {"replicas": {"string_value": "0"}}})", "outside"},
      {R"({"parameters": {"replicas": {"int_value": 2}}})", "'int_value' is not supported"},
      {R"({"parameters": {"partition_strategy": "fastest"}})", "partition_strategy"},
      {R"({"parameters": {"input_shapes": "x:1,2"}})", "bad entry"},
      {R"({"parameters": {"input_shapes": "x=1,-2"}})", "bad dimension"},
      {R"({"parameters": {"place": "conv*"}})", "bad rule"},
      {R"({"parameters": {"reuse": "sometimes"}})", "reuse"},
      {R"({"parameters": 7})", "parameters must be an object"},
  };
  for (const auto& [json, message] : cases) {
    absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(json, "m");
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(c.status().message(), HasSubstr(message)) << json;
  }
}

// Hostile nesting costs an error, not the daemon's stack (nothing walks a
// value recursively to describe it).
TEST(TritonConfigTest, DeepNestingIsRefusedWithoutRecursion) {
  const int depth = 200000;
  std::string json = R"({"max_batch_size": )";
  json += std::string(depth, '[') + std::string(depth, ']') + "}";
  absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(json, "m");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("deeper than"));
  // Brackets inside strings do not count; moderate nesting is described by
  // kind.
  c = TritonModelConfigFromJson(
      absl::StrCat(R"({"name": ")", std::string(100, '['), R"("})"), "m");
  EXPECT_THAT(c.status().message(), HasSubstr("differs from the model name"));
  c = TritonModelConfigFromJson(R"({"max_batch_size": [[[1]]]})", "m");
  EXPECT_THAT(c.status().message(), HasSubstr("must be an integer, not an array"));
}

NetworkInfo TwoInOneOut() {
  NetworkInfo info;
  info.name = "m";
  info.inputs = {{"x", DType::kFloat32, Shape({1, 3, 4})},
                 {"n", DType::kInt64, Shape({1})}};
  info.outputs = {{"y", DType::kFloat32, Shape({1, Shape::kUnknownDim})}};
  return info;
}

TEST(CheckNetworkAgainstConfigTest, MatchingEntriesPass) {
  absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(
      R"({"max_batch_size": 2,
          "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, -1]}],
          "output": [{"name": "y", "dims": [6]}]})",
      "m");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(CheckNetworkAgainstConfig(*c, TwoInOneOut()).ok());
}

TEST(CheckNetworkAgainstConfigTest, DifferencesAreNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"input": [{"name": "z"}]})", "no input 'z'"},
      {R"({"output": [{"name": "x"}]})", "no output 'x'"},
      {R"({"input": [{"name": "n", "data_type": "TYPE_INT32"}]})",
       "is int64 in the model"},
      {R"({"input": [{"name": "x", "dims": [3, 4]}]})", "do not match"},
      {R"({"max_batch_size": 1, "input": [{"name": "x", "dims": [3, 5]}]})",
       "behind the batch dimension"},
  };
  for (const auto& [json, message] : cases) {
    absl::StatusOr<TritonModelConfig> c = TritonModelConfigFromJson(json, "m");
    ASSERT_TRUE(c.ok()) << json << ": " << c.status();
    absl::Status s = CheckNetworkAgainstConfig(*c, TwoInOneOut());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << json;
    EXPECT_THAT(s.message(), HasSubstr(message)) << json;
  }
}

}  // namespace
}  // namespace glint
