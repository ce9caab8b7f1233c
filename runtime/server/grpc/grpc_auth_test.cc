#include "runtime/server/grpc/grpc_auth.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace glint {
namespace {

using Metadata = std::multimap<grpc::string_ref, grpc::string_ref>;

TEST(BearerTokenOfCallTest, ReadsTheAuthorizationHeader) {
  EXPECT_EQ(BearerTokenOfCall(Metadata{}), "");
  EXPECT_EQ(BearerTokenOfCall(Metadata{{"authorization", "Bearer abc"}}),
            "abc");
  EXPECT_EQ(BearerTokenOfCall(
                Metadata{{"x-other", "1"}, {"authorization", "bearer  xyz"}}),
            "xyz");
  // Another scheme, or the token in another header, is no bearer token.
  EXPECT_EQ(BearerTokenOfCall(Metadata{{"authorization", "Basic abc"}}), "");
  EXPECT_EQ(BearerTokenOfCall(Metadata{{"token", "Bearer abc"}}), "");
}

TEST(AuthorizeCallTest, NoAuthorizerMeansOpen) {
  grpc::ServerContext context;
  EXPECT_TRUE(
      AuthorizeCall(nullptr, context, "/glint.v1.HostManager/AddNetwork").ok());
}

TEST(AuthorizeCallTest, WithoutTokenMapsToGrpcCodes) {
  absl::StatusOr<std::unique_ptr<Authorizer>> authorizer =
      Authorizer::Parse("infer0123456789abcdef infer\n");
  ASSERT_TRUE(authorizer.ok()) << authorizer.status();
  // A default context carries no metadata: no token.
  grpc::ServerContext context;
  grpc::Status s = AuthorizeCall(authorizer->get(), context,
                                 "/glint.v1.HostManager/AddNetwork");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_NE(s.error_message().find("AddNetwork"), std::string::npos);
  grpc::CallbackServerContext callback_context;
  EXPECT_EQ(AuthorizeCall(authorizer->get(), callback_context,
                          "/glint.v1.HostManager/RunNetwork")
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(AuthorizeCall(authorizer->get(), context,
                            "/grpc.health.v1.Health/Check")
                  .ok());
}

TEST(MakeServerCredentialsTest, InsecureWithoutMaterial) {
  EXPECT_NE(MakeServerCredentials(std::nullopt), nullptr);
  TlsMaterial material;
  material.cert_chain_pem = "cert";
  material.private_key_pem = "key";
  // Credentials are built lazily by gRPC; the PEM text is checked by
  // LoadTlsMaterial before, and the whole path in tests/e2e_auth_test.
  EXPECT_NE(MakeServerCredentials(material), nullptr);
}

}  // namespace
}  // namespace glint
