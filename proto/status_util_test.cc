#include "proto/status_util.h"

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

}  // namespace
}  // namespace glint
