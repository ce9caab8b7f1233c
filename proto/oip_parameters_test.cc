#include "proto/oip_parameters.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

const absl::Time kNow = absl::FromUnixSeconds(1'000'000);

TEST(OipRequestParametersTest, NoneKeepTheTransportDeadline) {
  RunOptions options;
  const absl::Time call = kNow + absl::Seconds(3);
  ASSERT_TRUE(ApplyOipRequestParameters({}, kNow, call, &options).ok());
  EXPECT_EQ(options.deadline, call);
  EXPECT_EQ(options.priority, 0);
}

TEST(OipRequestParametersTest, PriorityAndTimeoutInEitherIntegerType) {
  for (const OipParameters& parameters :
       {OipParameters{{"priority", int64_t{2}}, {"timeout", int64_t{2500}}},
        OipParameters{{"priority", uint64_t{2}},
                      {"timeout", uint64_t{2500}}}}) {
    RunOptions options;
    ASSERT_TRUE(ApplyOipRequestParameters(parameters, kNow,
                                          absl::InfiniteFuture(), &options)
                    .ok());
    EXPECT_EQ(options.priority, 1'000'000 + 1 - 2);
    EXPECT_EQ(options.deadline, kNow + absl::Microseconds(2500));
  }
}

TEST(OipRequestParametersTest, TheEarlierOfTimeoutAndTransportDeadlineWins) {
  RunOptions options;
  const absl::Time call = kNow + absl::Milliseconds(1);
  ASSERT_TRUE(ApplyOipRequestParameters({{"timeout", int64_t{5'000'000}}},
                                        kNow, call, &options)
                  .ok());
  EXPECT_EQ(options.deadline, call);
  ASSERT_TRUE(ApplyOipRequestParameters({{"timeout", int64_t{500}}}, kNow,
                                        call, &options)
                  .ok());
  EXPECT_EQ(options.deadline, kNow + absl::Microseconds(500));
  // 0 is "no timeout": the call's deadline stays.
  ASSERT_TRUE(ApplyOipRequestParameters({{"timeout", int64_t{0}}}, kNow, call,
                                        &options)
                  .ok());
  EXPECT_EQ(options.deadline, call);
}

TEST(OipRequestParametersTest, BinaryDataOutputIsAcceptedAsABool) {
  RunOptions options;
  EXPECT_TRUE(ApplyOipRequestParameters({{"binary_data_output", true}}, kNow,
                                        absl::InfiniteFuture(), &options)
                  .ok());
  EXPECT_EQ(ApplyOipRequestParameters({{"binary_data_output", int64_t{1}}},
                                      kNow, absl::InfiniteFuture(), &options)
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OipRequestParametersTest, BadValuesAndUnknownKeys) {
  struct Case {
    OipParameters parameters;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {{{"priority", std::string("1")}},
       absl::StatusCode::kInvalidArgument,
       "'priority' must be an int64 or uint64"},
      {{{"priority", 1.5}}, absl::StatusCode::kInvalidArgument, "'priority'"},
      {{{"priority", int64_t{-1}}}, absl::StatusCode::kInvalidArgument,
       "'priority' is -1"},
      {{{"timeout", uint64_t{1} << 63}}, absl::StatusCode::kInvalidArgument,
       "'timeout' must be an int64"},
      {{{"timeout", int64_t{-1}}}, absl::StatusCode::kInvalidArgument,
       "'timeout' is -1"},
      {{{"timeout", OipParameterValue()}}, absl::StatusCode::kInvalidArgument,
       "'timeout'"},
      {{{"timout", int64_t{5}}}, absl::StatusCode::kInvalidArgument,
       "unknown request parameter 'timout'"},
      {{{"sequence_id", int64_t{7}}}, absl::StatusCode::kUnimplemented,
       "sequence batching"},
  };
  for (const Case& c : cases) {
    RunOptions options;
    const absl::Status s = ApplyOipRequestParameters(
        c.parameters, kNow, absl::InfiniteFuture(), &options);
    EXPECT_EQ(s.code(), c.code) << c.message << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

TEST(OipTensorParametersTest, AWindowWithOrWithoutOffset) {
  absl::StatusOr<std::optional<SharedMemoryRef>> window =
      ParseOipInputParameters({{"shared_memory_region", std::string("r")},
                               {"shared_memory_byte_size", uint64_t{64}},
                               {"shared_memory_offset", int64_t{16}}},
                              "input 'x'");
  ASSERT_TRUE(window.ok()) << window.status();
  ASSERT_TRUE(window->has_value());
  EXPECT_EQ((*window)->region, "r");
  EXPECT_EQ((*window)->byte_size, 64u);
  EXPECT_EQ((*window)->offset, 16u);

  window = ParseOipOutputParameters({{"binary_data", false},
                                     {"shared_memory_region", std::string("o")},
                                     {"shared_memory_byte_size", int64_t{8}}},
                                    "output 'y'");
  ASSERT_TRUE(window.ok()) << window.status();
  ASSERT_TRUE(window->has_value());
  EXPECT_EQ((*window)->offset, 0u);

  window = ParseOipInputParameters({}, "input 'x'");
  ASSERT_TRUE(window.ok());
  EXPECT_FALSE(window->has_value());
}

TEST(OipTensorParametersTest, BadTensorParameters) {
  struct Case {
    bool output;
    OipParameters parameters;
    absl::StatusCode code;
    const char* message;
  };
  const Case cases[] = {
      {false, {{"layout", std::string("nchw")}},
       absl::StatusCode::kInvalidArgument, "input 'x': unknown parameter 'layout'"},
      {false, {{"binary_data_size", int64_t{4}}},
       absl::StatusCode::kUnimplemented, "binary tensor data extension"},
      {false, {{"shared_memory_key", std::string("/k")}},
       absl::StatusCode::kInvalidArgument,
       "unknown parameter 'shared_memory_key'"},
      {false, {{"shared_memory_region", std::string("r")}},
       absl::StatusCode::kInvalidArgument, "needs shared_memory_byte_size"},
      {false, {{"shared_memory_offset", int64_t{0}}},
       absl::StatusCode::kInvalidArgument, "need shared_memory_region"},
      {false,
       {{"shared_memory_region", std::string("")},
        {"shared_memory_byte_size", int64_t{8}}},
       absl::StatusCode::kInvalidArgument, "non-empty string"},
      {false,
       {{"shared_memory_region", std::string("r")},
        {"shared_memory_byte_size", int64_t{8}},
        {"shared_memory_offset", int64_t{-8}}},
       absl::StatusCode::kInvalidArgument, "'shared_memory_offset' is -8"},
      {false,
       {{"shared_memory_region", std::string("r")},
        {"shared_memory_byte_size", 8.0}},
       absl::StatusCode::kInvalidArgument,
       "'shared_memory_byte_size' must be an int64"},
      {true, {{"binary_data", int64_t{1}}},
       absl::StatusCode::kInvalidArgument, "must be a bool"},
      {true, {{"classification", int64_t{3}}},
       absl::StatusCode::kUnimplemented, "classification"},
      {true, {{"top_k", int64_t{1}}}, absl::StatusCode::kInvalidArgument,
       "output 'x': unknown parameter 'top_k'"},
  };
  for (const Case& c : cases) {
    const absl::Status s =
        c.output ? ParseOipOutputParameters(c.parameters, "output 'x'").status()
                 : ParseOipInputParameters(c.parameters, "input 'x'").status();
    EXPECT_EQ(s.code(), c.code) << c.message << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace glint
