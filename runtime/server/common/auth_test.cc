#include "runtime/server/common/auth.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/glint.pb.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

constexpr char kInfer[] = "infer0123456789abcdef";
constexpr char kAdmin[] = "admin0123456789abcdef";
constexpr char kBoth[] = "both-0123456789abcdef";

constexpr char kFile[] = R"(# glintd tokens
infer0123456789abcdef  infer
admin0123456789abcdef	admin   # the deploy job

both-0123456789abcdef infer,admin
)";

std::unique_ptr<Authorizer> MustParse(absl::string_view text) {
  absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::Parse(text);
  EXPECT_TRUE(a.ok()) << a.status();
  return a.ok() ? *std::move(a) : nullptr;
}

TEST(AuthorizerTest, ParsesTokensScopesAndComments) {
  auto a = MustParse(kFile);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->num_tokens(), 3u);
}

TEST(AuthorizerTest, DecisionsPerScope) {
  auto a = MustParse(kFile);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->Authorize(kInfer, Scope::kInfer).ok());
  EXPECT_EQ(a->Authorize(kInfer, Scope::kAdmin).code(),
            absl::StatusCode::kPermissionDenied);
  // Scopes are independent: admin alone does not run networks.
  EXPECT_TRUE(a->Authorize(kAdmin, Scope::kAdmin).ok());
  EXPECT_EQ(a->Authorize(kAdmin, Scope::kInfer).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(a->Authorize(kBoth, Scope::kInfer).ok());
  EXPECT_TRUE(a->Authorize(kBoth, Scope::kAdmin).ok());
}

TEST(AuthorizerTest, MissingOrUnknownTokenIsUnauthenticated) {
  auto a = MustParse(kFile);
  ASSERT_NE(a, nullptr);
  for (Scope scope : {Scope::kInfer, Scope::kAdmin}) {
    EXPECT_EQ(a->Authorize("", scope).code(),
              absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(a->Authorize("nobody0123456789abcdef", scope).code(),
              absl::StatusCode::kUnauthenticated);
    // A prefix or an extension of a real token is another token.
    EXPECT_EQ(a->Authorize("infer0123456789abcde", scope).code(),
              absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(a->Authorize("infer0123456789abcdefX", scope).code(),
              absl::StatusCode::kUnauthenticated);
  }
  absl::Status s = a->Authorize("", Scope::kAdmin);
  EXPECT_THAT(s.message(), HasSubstr("authorization: Bearer"));
}

TEST(AuthorizerTest, OpenNeedsNothing) {
  auto a = MustParse(kFile);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->Authorize("", Scope::kOpen).ok());
  EXPECT_TRUE(a->Authorize("garbage", Scope::kOpen).ok());
}

TEST(AuthorizerTest, MessagesNeverRepeatTheToken) {
  auto a = MustParse(kFile);
  ASSERT_NE(a, nullptr);
  const std::string wrong = "wrongtoken0123456789";
  EXPECT_THAT(std::string(a->Authorize(wrong, Scope::kInfer).message()),
              ::testing::Not(HasSubstr(wrong)));
  EXPECT_THAT(std::string(a->Authorize(kInfer, Scope::kAdmin).message()),
              ::testing::Not(HasSubstr(kInfer)));
}

TEST(AuthorizerTest, MethodDecisionsNameTheMethod) {
  auto a = MustParse(kFile);
  ASSERT_NE(a, nullptr);
  absl::Status s =
      a->AuthorizeMethod(kInfer, "/glint.v1.HostManager/AddNetwork");
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("AddNetwork"));
  EXPECT_THAT(s.message(), HasSubstr("admin"));
  EXPECT_TRUE(
      a->AuthorizeMethod(kInfer, "/glint.v1.HostManager/RunNetwork").ok());
  EXPECT_TRUE(a->AuthorizeMethod("", "/grpc.health.v1.Health/Check").ok());
  EXPECT_EQ(a->AuthorizeMethod("", "/glint.v1.HostManager/ListNetworks").code(),
            absl::StatusCode::kUnauthenticated);
}

struct BadFile {
  const char* text;
  const char* expected;  // In the message, after "source:LINE: ".
};

TEST(AuthorizerTest, RejectsMalformedFilesNamingTheLine) {
  const BadFile cases[] = {
      {"# only\n\ninfer0123456789abcdef\n", "tokens:3: expected"},
      {"infer0123456789abcdef infer admin\n", "tokens:1: expected"},
      {"infer0123456789abcdef read\n", "tokens:1: unknown scope 'read'"},
      {"infer0123456789abcdef infer,\n", "tokens:1: unknown scope ''"},
      {"short infer\n", "tokens:1: the token is 5 characters"},
      {"\n\ntok\"en0123456789abcdef infer\n", "tokens:3: the token has"},
      {"abc=def0123456789abcdef infer\n", "tokens:1: the token has"},
      {"infer0123456789abcdef infer\nx\ninfer0123456789abcdef admin\n",
       "tokens:2: expected"},
      {"infer0123456789abcdef infer\ninfer0123456789abcdef admin\n",
       "tokens:2: this token is listed on an earlier line"},
      {"", "tokens: no tokens"},
      {"# nothing but comments\n   \n", "tokens: no tokens"},
  };
  for (const BadFile& c : cases) {
    absl::StatusOr<std::unique_ptr<Authorizer>> a =
        Authorizer::Parse(c.text, "tokens");
    ASSERT_FALSE(a.ok()) << c.text;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(c.expected))
        << c.text;
  }
}

TEST(AuthorizerTest, AcceptsB64TokensAndCrLf) {
  auto a = MustParse("aGVsbG8td29ybGQ+Lw~_.== infer\r\n");
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->Authorize("aGVsbG8td29ybGQ+Lw~_.==", Scope::kInfer).ok());
}

TEST(AuthorizerTest, FromFileReadsAndReportsMissingFiles) {
  const std::string dir = std::getenv("TEST_TMPDIR");
  const std::string path = dir + "/tokens";
  std::ofstream(path) << kFile;
  chmod(path.c_str(), 0600);
  absl::StatusOr<std::unique_ptr<Authorizer>> a = Authorizer::FromFile(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE((*a)->Authorize(kAdmin, Scope::kAdmin).ok());

  absl::Status missing = Authorizer::FromFile(dir + "/none").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.message(), HasSubstr("/none"));

  std::ofstream(dir + "/bad") << "infer0123456789abcdef wrong\n";
  absl::Status bad = Authorizer::FromFile(dir + "/bad").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr(dir + "/bad:1: unknown scope"));
}

TEST(BearerTokenTest, ParsesTheHeaderValue) {
  EXPECT_EQ(BearerToken("Bearer abc"), "abc");
  EXPECT_EQ(BearerToken("bearer   abc  "), "abc");
  EXPECT_EQ(BearerToken("BEARER\tabc"), "abc");
  EXPECT_EQ(BearerToken("Basic abc"), "");
  EXPECT_EQ(BearerToken("Bearerabc"), "");
  EXPECT_EQ(BearerToken("Bearer"), "");
  EXPECT_EQ(BearerToken("Bearer  "), "");
  EXPECT_EQ(BearerToken(""), "");
}

TEST(MethodScopeTest, TheTable) {
  EXPECT_EQ(ScopeOfMethod("/glint.v1.HostManager/RunNetwork"), Scope::kInfer);
  EXPECT_EQ(ScopeOfMethod("/glint.v1.HostManager/AddNetwork"), Scope::kAdmin);
  EXPECT_EQ(ScopeOfMethod("/glint.v1.HostManager/RemoveNetwork"),
            Scope::kAdmin);
  EXPECT_EQ(ScopeOfMethod("/inference.GRPCInferenceService/ModelInfer"),
            Scope::kInfer);
  EXPECT_EQ(ScopeOfMethod("/inference.GRPCInferenceService/ServerLive"),
            Scope::kInfer);
  EXPECT_EQ(
      ScopeOfMethod("/inference.GRPCInferenceService/RepositoryModelLoad"),
      Scope::kAdmin);
  EXPECT_EQ(ScopeOfMethod(
                "/inference.GRPCInferenceService/SystemSharedMemoryRegister"),
            Scope::kAdmin);
  EXPECT_EQ(ScopeOfMethod("/grpc.health.v1.Health/Check"), Scope::kOpen);
  EXPECT_EQ(ScopeOfMethod("/grpc.health.v1.Health/Watch"), Scope::kOpen);
  // Not in the table: closed.
  EXPECT_EQ(ScopeOfMethod("/glint.v1.HostManager/SomethingNew"),
            Scope::kAdmin);
  EXPECT_EQ(ScopeOfMethod(""), Scope::kAdmin);
}

// A new glint.v1 RPC must get its scope by decision, not by default.
TEST(MethodScopeTest, EveryGlintV1MethodIsInTheTable) {
  const std::vector<std::string> listed = MethodsWithScopes();
  const google::protobuf::ServiceDescriptor* service =
      v1::AddNetworkRequest::descriptor()->file()->FindServiceByName(
          "HostManager");
  ASSERT_NE(service, nullptr);
  ASSERT_GT(service->method_count(), 0);
  for (int i = 0; i < service->method_count(); ++i) {
    const std::string path =
        "/" + service->full_name() + "/" + service->method(i)->name();
    EXPECT_NE(std::find(listed.begin(), listed.end(), path), listed.end())
        << path << " has no scope in auth.cc's table";
  }
}

}  // namespace
}  // namespace glint
