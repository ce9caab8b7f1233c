// Interop with a second-language client: tests/node/oip_client.js (Node's
// @grpc/grpc-js and @grpc/proto-loader loading Triton's unmodified
// grpc_service.proto) loads ONNX node cases into a real glintd and runs
// ModelInfer with raw and typed contents, comparing each output with the
// case's expected output, and reads ModelStatistics. This test starts
// glintd, runs the script, and checks through glint.v1 that the networks
// it loaded are glintd's.
//
// The script's packages come from tests/node/package-lock.json through
// `npm ci` (scripts/install_deps.sh runs it); without them the test fails
// saying so.
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/process_util.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using testing::GlintdProcess;
using ::testing::HasSubstr;

constexpr char kNodeCases[] = "/usr/share/libonnx-testdata/data/node/";
constexpr char kOnnxProto[] = "/usr/include/onnx/onnx.proto";

// The cases the script runs: FP32 (MatMul), BOOL and FP32 (Where), INT32
// and INT64 (GatherND).
const char* const kCases[] = {"test_matmul_2d", "test_where_example",
                              "test_gathernd_example_int32"};

// `node` on $PATH (posix_spawn takes a path).
std::string FindNode() {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "/usr/local/bin:/usr/bin", ':')) {
    const std::string candidate = absl::StrCat(dir, "/node");
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

TEST(NodeInteropTest, GrpcJsClientInfersOnnxNodeCases) {
  const std::string node = FindNode();
  ASSERT_FALSE(node.empty()) << "node is not on PATH (Debian package nodejs)";
  const std::string script = testing::RunfilePath("tests/node/oip_client.js");
  // Node resolves packages from the script's real location: the source
  // tree's tests/node/node_modules.
  const fs::path modules =
      fs::canonical(script).parent_path() / "node_modules" / "@grpc" / "grpc-js";
  ASSERT_TRUE(fs::exists(modules))
      << modules << " is missing: run `npm ci --prefix tests/node` "
      << "(scripts/install_deps.sh does)";
  const std::string protos =
      fs::path(testing::RunfilePath(
                   "third_party/protocols/triton/grpc_service.proto"))
          .parent_path()
          .string();

  absl::StatusOr<std::unique_ptr<GlintdProcess>> daemon =
      GlintdProcess::Start({});
  ASSERT_TRUE(daemon.ok()) << daemon.status();

  std::vector<std::string> argv = {
      node, script, absl::StrCat("--address=", (*daemon)->address()),
      absl::StrCat("--protos=", protos),
      absl::StrCat("--onnx_proto=", kOnnxProto)};
  for (const char* c : kCases) argv.push_back(absl::StrCat(kNodeCases, c));
  absl::StatusOr<testing::CommandResult> run =
      testing::RunCommand(argv, absl::Seconds(120));
  ASSERT_TRUE(run.ok()) << run.status();
  std::cout << run->stdout_text;
  ASSERT_EQ(run->exit_code, 0) << "stdout:\n"
                               << run->stdout_text << "stderr:\n"
                               << run->stderr_text << "glintd:\n"
                               << (*daemon)->Log();
  for (const char* c : kCases) {
    EXPECT_THAT(run->stdout_text,
                HasSubstr(absl::StrCat("ok ModelInfer raw ", c)));
  }
  EXPECT_THAT(run->stdout_text, HasSubstr("ok ModelInfer typed test_where_example"));
  EXPECT_THAT(run->stdout_text, HasSubstr("node client: all checks passed"));

  // What the script loaded is glintd's, seen through glint.v1.
  GlintClient& client = (*daemon)->client();
  for (const char* c : kCases) {
    absl::StatusOr<NetworkInfo> info = client.GetNetwork(c);
    ASSERT_TRUE(info.ok()) << c << ": " << info.status();
    EXPECT_TRUE(info->unavailable_reason.empty());
    EXPECT_TRUE(client.RemoveNetwork(c).ok());
  }
  absl::StatusOr<int> code = (*daemon)->Stop(SIGTERM, absl::Seconds(20));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
}

}  // namespace
}  // namespace glint
