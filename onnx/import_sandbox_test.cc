// The import helper, run for real: this test binary is its own helper
// (main serves one request when started with --serve_import_helper).
#include "onnx/import_sandbox.h"

#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/hostile_models.h"
#include "onnx/onnx_importer.h"
#include "onnx/test_models.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

constexpr char kServeFlag[] = "--serve_import_helper";

std::string Message(const absl::Status& s) { return std::string(s.message()); }

ImportSandboxOptions Sandbox() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  EXPECT_GT(n, 0);
  ImportSandboxOptions options;
  options.argv = {std::string(self, n > 0 ? n : 0), kServeFlag};
  return options;
}

ImportOptions Isolated(const ImportSandboxOptions& sandbox) {
  ImportOptions options;
  options.run_inference = [sandbox](const std::string& request) {
    return RunImportHelper(sandbox, request);
  };
  return options;
}

TEST(ImportSandboxTest, IsolatedImportMatchesInProcess) {
  const std::string model = testing::MakeMlpModel(2, 8, 4);
  absl::StatusOr<Graph> local = ImportOnnxModel(model);
  absl::StatusOr<Graph> isolated = ImportOnnxModel(model, Isolated(Sandbox()));
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_TRUE(isolated.ok()) << isolated.status();
  ASSERT_EQ(isolated->nodes.size(), local->nodes.size());
  ASSERT_EQ(isolated->values.size(), local->values.size());
  for (const auto& [name, info] : local->values) {
    const ValueInfo* other = isolated->FindValue(name);
    ASSERT_NE(other, nullptr) << name;
    EXPECT_EQ(other->dtype, info.dtype) << name;
    EXPECT_EQ(other->shape, info.shape) << name;
  }
  EXPECT_EQ(isolated->initializers.size(), local->initializers.size());
}

// The helper's reply carries the types inference gave inside subgraphs.
TEST(ImportSandboxTest, IsolatedImportTypesSubgraphsAsInProcess) {
  const std::string model = testing::MakeLoopModel();
  absl::StatusOr<Graph> local = ImportOnnxModel(model);
  absl::StatusOr<Graph> isolated = ImportOnnxModel(model, Isolated(Sandbox()));
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_TRUE(isolated.ok()) << isolated.status();
  ASSERT_EQ(local->nodes.size(), 2u);
  ASSERT_EQ(isolated->nodes.size(), 2u);
  EXPECT_EQ(isolated->nodes[1].inputs, local->nodes[1].inputs);
  EXPECT_EQ(isolated->nodes[1].num_implicit_inputs, 1);
  const Graph* a = local->nodes[1].GetGraph("body");
  const Graph* b = isolated->nodes[1].GetGraph("body");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(a->values.size(), b->values.size());
  for (const auto& [name, info] : a->values) {
    const ValueInfo* other = b->FindValue(name);
    ASSERT_NE(other, nullptr) << name;
    EXPECT_EQ(other->dtype, info.dtype) << name;
    EXPECT_EQ(other->shape, info.shape) << name;
  }
  EXPECT_EQ(isolated->outputs[1].shape.rank(), 2);
}

// Large initializers travel to the helper as typed inputs, not data; the
// import must not notice.
TEST(ImportSandboxTest, LargeWeightsStayInTheDaemon) {
  const std::string model =
      testing::MakeDeepMlpModel(1, 1024, 2);  // 4 MiB/layer.
  absl::StatusOr<Graph> isolated = ImportOnnxModel(model, Isolated(Sandbox()));
  ASSERT_TRUE(isolated.ok()) << isolated.status();
  absl::StatusOr<Graph> local = ImportOnnxModel(model);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(isolated->inputs.size(), local->inputs.size());
  EXPECT_EQ(isolated->initializers.size(), local->initializers.size());
  EXPECT_EQ(isolated->outputs[0].shape, local->outputs[0].shape);
}

TEST(ImportSandboxTest, HostileModelsAreRefusedTheSameWayBothWays) {
  const ImportOptions isolated = Isolated(Sandbox());
  for (const testing::HostileModel& m : testing::HostileModels()) {
    for (bool isolate : {false, true}) {
      absl::StatusOr<Graph> g =
          ImportOnnxModel(m.bytes, isolate ? isolated : ImportOptions());
      ASSERT_FALSE(g.ok()) << m.name;
      EXPECT_EQ(g.status().code(), m.code) << m.name << ": " << g.status();
      EXPECT_THAT(Message(g.status()), HasSubstr(m.message)) << m.name;
    }
  }
}

TEST(ImportSandboxTest, ACrashInOnnxIsInvalidArgumentNamingTheSignal) {
  absl::StatusOr<Graph> g =
      ImportOnnxModel(testing::OnnxSegfaultModel(), Isolated(Sandbox()));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(g.status()),
              HasSubstr("crashed ONNX's checker or shape inference (signal"));
}

#ifndef GLINT_SANITIZER
// Sanitizer builds give the helper no address-space limit (their shadow
// memory needs terabytes of it), so this bomb would really go off there.
TEST(ImportSandboxTest, AMemoryBombIsResourceExhausted) {
  ImportSandboxOptions sandbox = Sandbox();
  sandbox.max_address_space_bytes = uint64_t{1} << 30;
  absl::StatusOr<Graph> g =
      ImportOnnxModel(testing::OnnxMemoryBombModel(), Isolated(sandbox));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kResourceExhausted)
      << g.status();
}
#endif

TEST(ImportSandboxTest, PastTheWallClockLimitIsResourceExhausted) {
  ImportSandboxOptions sandbox = Sandbox();
  sandbox.max_wall_time = absl::Nanoseconds(1);
  absl::StatusOr<Graph> g =
      ImportOnnxModel(testing::MakeMlpModel(1, 4, 4), Isolated(sandbox));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(Message(g.status()), HasSubstr("took longer than"));
}

TEST(ImportSandboxTest, AMissingHelperIsInternal) {
  ImportSandboxOptions sandbox;
  sandbox.argv = {"/nonexistent/glint-helper"};
  absl::StatusOr<std::string> reply = RunImportHelper(sandbox, "x");
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInternal);
}

TEST(ImportSandboxTest, ConcurrentImportsEachGetTheirHelper) {
  const ImportOptions isolated = Isolated(Sandbox());
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      const std::string model = i % 2 == 0 ? testing::MakeMlpModel(1, 4 + i, 3)
                                           : testing::OnnxSegfaultModel();
      results[i] = ImportOnnxModel(model, isolated).status();
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(results[i].code(), i % 2 == 0
                                     ? absl::StatusCode::kOk
                                     : absl::StatusCode::kInvalidArgument)
        << i << ": " << results[i];
  }
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == glint::kServeFlag) {
    return glint::ServeImportHelper();
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
