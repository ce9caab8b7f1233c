#include "proto/status_util.h"

#include <iterator>
#include <utility>

#include "gtest/gtest.h"

namespace glint {
namespace {

TEST(StatusUtilTest, EveryCodeRoundTripsWithItsMessage) {
  for (int c = 0; c <= 16; ++c) {
    const auto code = static_cast<absl::StatusCode>(c);
    const absl::Status in(code, code == absl::StatusCode::kOk ? "" : "why");
    const grpc::Status wire = ToGrpcStatus(in);
    EXPECT_EQ(static_cast<int>(wire.error_code()), c);
    const absl::Status out = FromGrpcStatus(wire);
    EXPECT_EQ(out, in) << c;
  }
}

TEST(StatusUtilTest, NamedCodes) {
  EXPECT_EQ(ToGrpcCode(absl::StatusCode::kResourceExhausted),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(FromGrpcCode(grpc::StatusCode::UNIMPLEMENTED),
            absl::StatusCode::kUnimplemented);
  const grpc::Status g = ToGrpcStatus(absl::NotFoundError("no network 'x'"));
  EXPECT_EQ(g.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(g.error_message(), "no network 'x'");
}

TEST(StatusUtilTest, OutOfRangeCodesBecomeUnknown) {
  EXPECT_EQ(ToGrpcCode(static_cast<absl::StatusCode>(99)),
            grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(FromGrpcCode(static_cast<grpc::StatusCode>(99)),
            absl::StatusCode::kUnknown);
}

TEST(StatusUtilTest, HttpStatusOfEveryCode) {
  const std::pair<absl::StatusCode, int> expected[] = {
      {absl::StatusCode::kOk, 200},
      {absl::StatusCode::kCancelled, 499},
      {absl::StatusCode::kUnknown, 500},
      {absl::StatusCode::kInvalidArgument, 400},
      {absl::StatusCode::kDeadlineExceeded, 504},
      {absl::StatusCode::kNotFound, 404},
      {absl::StatusCode::kAlreadyExists, 409},
      {absl::StatusCode::kPermissionDenied, 403},
      {absl::StatusCode::kResourceExhausted, 429},
      {absl::StatusCode::kFailedPrecondition, 400},
      {absl::StatusCode::kAborted, 409},
      {absl::StatusCode::kOutOfRange, 400},
      {absl::StatusCode::kUnimplemented, 501},
      {absl::StatusCode::kInternal, 500},
      {absl::StatusCode::kUnavailable, 503},
      {absl::StatusCode::kDataLoss, 500},
      {absl::StatusCode::kUnauthenticated, 401},
  };
  ASSERT_EQ(std::size(expected), 17u);  // Every canonical code once.
  for (const auto& [code, http] : expected) {
    EXPECT_EQ(ToHttpStatus(code), http) << absl::StatusCodeToString(code);
  }
  EXPECT_EQ(ToHttpStatus(static_cast<absl::StatusCode>(99)), 500);
}

}  // namespace
}  // namespace glint
