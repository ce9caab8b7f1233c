#include "client/perf.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/proto_convert.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

TEST(MakePerfInputsTest, ShapesDtypesBatchAndSeed) {
  const std::vector<ValueInfo> inputs = {
      {"x", DType::kFloat32, Shape({1, 3, 4})},
      {"ids", DType::kInt64, Shape({1, 5})},
      {"h", DType::kFloat16, Shape({2})},
      {"b", DType::kBool, Shape({1, 1})}};
  absl::StatusOr<std::vector<NamedTensor>> a = MakePerfInputs(inputs, 0, 7);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->size(), 4u);
  EXPECT_EQ((*a)[0].tensor.shape(), Shape({1, 3, 4}));
  EXPECT_EQ((*a)[1].tensor.dtype(), DType::kInt64);
  for (int i = 0; i < 12; ++i) {
    const float v = (*a)[0].tensor.data<float>()[i];
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  for (int i = 0; i < 5; ++i) {
    const int64_t v = (*a)[1].tensor.data<int64_t>()[i];
    EXPECT_TRUE(v == 0 || v == 1) << v;
  }
  // The same seed gives the same data; another seed other data.
  absl::StatusOr<std::vector<NamedTensor>> again = MakePerfInputs(inputs, 0, 7);
  absl::StatusOr<std::vector<NamedTensor>> other = MakePerfInputs(inputs, 0, 8);
  ASSERT_TRUE(again.ok() && other.ok());
  EXPECT_EQ((*a)[0].tensor.bytes() == (*again)[0].tensor.bytes(), true);
  EXPECT_NE(std::vector<uint8_t>((*a)[0].tensor.bytes().begin(),
                                 (*a)[0].tensor.bytes().end()),
            std::vector<uint8_t>((*other)[0].tensor.bytes().begin(),
                                 (*other)[0].tensor.bytes().end()));

  absl::StatusOr<std::vector<NamedTensor>> batched =
      MakePerfInputs(inputs, 8, 7);
  ASSERT_TRUE(batched.ok());
  EXPECT_EQ((*batched)[0].tensor.shape(), Shape({8, 3, 4}));
  EXPECT_EQ((*batched)[2].tensor.shape(), Shape({8}));

  EXPECT_EQ(MakePerfInputs({{"s", DType::kFloat32, Shape()}}, 4, 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakePerfInputs({{"d", DType::kFloat32, Shape({-1, 2})}}, 0, 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// Dynamic dims take their sizes by name or INPUT:AXIS; one left without a
// size is refused with the key to give.
TEST(MakePerfInputsTest, DynamicDimsBySize) {
  const std::vector<ValueInfo> inputs = {
      {"ids", DType::kInt64, Shape({-1, -1})},
      {"mask", DType::kInt64, Shape({-1, -1})}};
  const std::vector<DynamicDim> dims = {{"ids", 0, "batch", 8},
                                        {"ids", 1, "seq", 64},
                                        {"mask", 0, "batch", 8},
                                        {"mask", 1, "seq", 64}};
  absl::StatusOr<std::vector<NamedTensor>> made =
      MakePerfInputs(inputs, 2, 1, {{"seq", 16}}, dims);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ((*made)[0].tensor.shape(), Shape({2, 16}));
  EXPECT_EQ((*made)[1].tensor.shape(), Shape({2, 16}));
  made = MakePerfInputs(inputs, 0, 1, {{"ids:0", 3}, {"mask:0", 3}, {"seq", 5}},
                        dims);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ((*made)[1].tensor.shape(), Shape({3, 5}));
  made = MakePerfInputs(inputs, 2, 1, {}, dims);
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(made.status().message(),
            "input 'ids' dim 1 is dynamic: give its size with --dim seq=SIZE");
  made = MakePerfInputs(inputs, 2, 1, {{"seq", 4}, {"sequence", 4}}, dims);
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(made.status().message(),
            "--dim names 'sequence', which is no dynamic dim of the network "
            "(its dynamic dims: seq)");
}

TEST(ExpectedPerfOutputsTest, BatchReplacesTheFirstDimension) {
  const std::vector<ValueInfo> outputs = {
      {"y", DType::kFloat32, Shape({1, 10})}, {"s", DType::kInt64, Shape()}};
  EXPECT_EQ(ExpectedPerfOutputs(outputs, 0)[0].shape, Shape({1, 10}));
  const std::vector<ValueInfo> batched = ExpectedPerfOutputs(outputs, 4);
  EXPECT_EQ(batched[0].shape, Shape({4, 10}));
  EXPECT_EQ(batched[1].shape, Shape());
}

class CheckPerfReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(TensorToProto({"y", *Tensor::Create(DType::kFloat32,
                                                    Shape({2, 3}))},
                              reply_.add_outputs())
                    .ok());
    SharedMemoryTensorToProto(
        {"z", DType::kInt32, Shape({4}), {"r", 64, 16}}, reply_.add_outputs());
  }

  absl::Status Check(const v1::RunNetworkResponse& reply) {
    return CheckPerfReply(reply, expected_, {"z"});
  }

  v1::RunNetworkResponse reply_;
  std::vector<ValueInfo> expected_ = {{"y", DType::kFloat32, Shape({2, 3})},
                                      {"z", DType::kInt32, Shape({-1})}};
};

TEST_F(CheckPerfReplyTest, AMatchingReplyPasses) {
  EXPECT_TRUE(Check(reply_).ok()) << Check(reply_);
}

TEST_F(CheckPerfReplyTest, EveryDifferenceIsAnError) {
  v1::RunNetworkResponse r = reply_;
  r.mutable_outputs()->RemoveLast();
  EXPECT_THAT(Check(r).message(), HasSubstr("1 outputs, expected 2"));

  r = reply_;
  r.mutable_outputs(0)->set_name("w");
  EXPECT_THAT(Check(r).message(), HasSubstr("'w', expected 'y'"));

  r = reply_;
  r.mutable_outputs(0)->set_dtype(v1::DATA_TYPE_INT32);
  EXPECT_THAT(Check(r).message(), HasSubstr("output 'y' is int32[2, 3]"));

  r = reply_;
  r.mutable_outputs(0)->set_shape(1, 4);
  EXPECT_THAT(Check(r).message(), HasSubstr("expected float32[2, 3]"));

  r = reply_;
  r.mutable_outputs(0)->set_raw_data("short");
  EXPECT_THAT(Check(r).message(), HasSubstr("carries 5 bytes for 24"));

  r = reply_;
  r.mutable_outputs(1)->mutable_shared_memory()->set_byte_size(12);
  EXPECT_THAT(Check(r).message(), HasSubstr("carries 12 bytes for 16"));

  r = reply_;
  r.mutable_outputs(1)->clear_shared_memory();
  EXPECT_THAT(Check(r).message(), HasSubstr("not in shared memory"));

  EXPECT_EQ(CheckPerfReply(reply_, expected_, {}).code(),
            absl::StatusCode::kInternal);
}

// ModelInfer's reply: y [2, 3] FP32 in the message, z INT32 [-1] (4
// values) in shared memory.
class CheckOipPerfReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto* y = reply_.add_outputs();
    y->set_name("y");
    y->set_datatype("FP32");
    y->add_shape(2);
    y->add_shape(3);
    reply_.add_raw_output_contents(std::string(24, '\0'));
    auto* z = reply_.add_outputs();
    z->set_name("z");
    z->set_datatype("INT32");
    z->add_shape(4);
    reply_.add_raw_output_contents("");
  }

  absl::Status Check(const inference::ModelInferResponse& reply) {
    return CheckOipPerfReply(reply, expected_, {"z"});
  }

  inference::ModelInferResponse reply_;
  std::vector<ValueInfo> expected_ = {{"y", DType::kFloat32, Shape({2, 3})},
                                      {"z", DType::kInt32, Shape({-1})}};
};

TEST_F(CheckOipPerfReplyTest, AMatchingReplyPasses) {
  EXPECT_TRUE(Check(reply_).ok()) << Check(reply_);
}

TEST_F(CheckOipPerfReplyTest, EveryDifferenceIsAnError) {
  inference::ModelInferResponse r = reply_;
  r.mutable_outputs()->RemoveLast();
  EXPECT_THAT(Check(r).message(), HasSubstr("1 outputs, expected 2"));

  r = reply_;
  r.mutable_raw_output_contents()->RemoveLast();
  EXPECT_THAT(Check(r).message(), HasSubstr("1 raw_output_contents entries"));

  r = reply_;
  r.mutable_outputs(0)->set_name("w");
  EXPECT_THAT(Check(r).message(), HasSubstr("'w', expected 'y'"));

  r = reply_;
  r.mutable_outputs(0)->set_datatype("INT32");
  EXPECT_THAT(Check(r).message(), HasSubstr("output 'y' is INT32[2, 3]"));

  r = reply_;
  r.mutable_outputs(0)->set_shape(1, 4);
  EXPECT_THAT(Check(r).message(), HasSubstr("expected FP32[2, 3]"));

  r = reply_;
  *r.mutable_raw_output_contents(0) = "short";
  EXPECT_THAT(Check(r).message(), HasSubstr("carries 5 bytes"));

  r = reply_;
  *r.mutable_raw_output_contents(1) = std::string(16, '\0');
  EXPECT_THAT(Check(r).message(), HasSubstr("to be written to shared memory"));

  // z expected in the message: its empty entry is 0 bytes for 16.
  EXPECT_EQ(CheckOipPerfReply(reply_, expected_, {}).code(),
            absl::StatusCode::kInternal);
}

TEST(PerfFormatTest, TableAndCsv) {
  PerfLevel known;
  known.concurrency = 8;
  known.runs = 1000;
  known.seconds = 2;
  known.throughput = 500;
  known.p50_ms = 1.5;
  known.p90_ms = 2.25;
  known.p99_ms = 4;
  known.server_queue_us = 12.5;
  known.server_compute_us = 800;
  PerfLevel unknown = known;
  unknown.concurrency = 64;
  unknown.errors = 3;
  unknown.server_queue_us = -1;
  unknown.server_compute_us = -1;

  const std::vector<std::string> header =
      absl::StrSplit(PerfTableHeader(), ' ', absl::SkipEmpty());
  EXPECT_EQ(header.size(), 9u);
  EXPECT_EQ(header[0], "concurrency");
  const std::vector<std::string> row =
      absl::StrSplit(FormatPerfRow(known), ' ', absl::SkipEmpty());
  EXPECT_EQ(row, (std::vector<std::string>{"8", "1000", "0", "500.0", "1.500",
                                           "2.250", "4.000", "12.5",
                                           "800.0"}));
  const std::vector<std::string> row2 =
      absl::StrSplit(FormatPerfRow(unknown), ' ', absl::SkipEmpty());
  EXPECT_EQ(row2[2], "3");
  EXPECT_EQ(row2[7], "-");
  EXPECT_EQ(row2[8], "-");

  const std::vector<std::string> lines =
      absl::StrSplit(FormatPerfCsv({known, unknown}), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "concurrency,runs,errors,seconds,runs_per_second,p50_ms,p90_ms,"
            "p99_ms,server_queue_us,server_compute_us");
  EXPECT_EQ(lines[1],
            "8,1000,0,2.000,500.000,1.5000,2.2500,4.0000,12.500,800.000");
  EXPECT_EQ(lines[2], "64,1000,3,2.000,500.000,1.5000,2.2500,4.0000,,");
}

TEST(RunPerfTest, OptionsAreCheckedBeforeAnyCall) {
  // A channel to nowhere: none of these may get as far as a call.
  GlintClient client(GlintClient::CreateChannel("127.0.0.1:1"),
                     ClientOptions());
  PerfOptions options;
  options.network = "n";
  options.protocol = "http";
  EXPECT_EQ(RunPerf(client, options, {}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (const char* protocol : {"glint", "oip"}) {
    options.protocol = protocol;
    options.concurrency = {1, 0};
    EXPECT_EQ(RunPerf(client, options, {}, {}).status().code(),
              absl::StatusCode::kInvalidArgument);
    options.concurrency = {1};
    options.duration = absl::ZeroDuration();
    EXPECT_EQ(RunPerf(client, options, {}, {}).status().code(),
              absl::StatusCode::kInvalidArgument);
    options.duration = absl::Seconds(1);
  }
}

}  // namespace
}  // namespace glint
