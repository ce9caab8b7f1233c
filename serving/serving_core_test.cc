// ServingCore without any transport: its options, the restore and the
// repository's load before it says loaded, and Triton's load/unload policy.
#include "serving/serving_core.h"

#include <stdlib.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using ::glint::testing::MakeMlpModel;
using ::glint::testing::MlpReference;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string TempDir() {
  std::string pattern = absl::StrCat(
      std::getenv("TEST_TMPDIR") != nullptr ? std::getenv("TEST_TMPDIR")
                                            : "/tmp",
      "/serving_core_test.XXXXXX");
  EXPECT_NE(mkdtemp(pattern.data()), nullptr);
  return pattern;
}

void Write(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

ServingCoreOptions SmallOptions() {
  ServingCoreOptions options;
  options.devices = "sim*2:memory=64MiB";
  return options;
}

std::unique_ptr<ServingCore> MustCreate(ServingCoreOptions options) {
  absl::StatusOr<std::unique_ptr<ServingCore>> core =
      ServingCore::Create(std::move(options));
  EXPECT_TRUE(core.ok()) << core.status();
  return core.ok() ? *std::move(core) : nullptr;
}

// Runs `name` on x[1, 4] and checks the answer against the MLP reference
// of `width` outputs.
void ExpectMlp(HostManager& host, const std::string& name, int width) {
  const std::vector<float> x = {1, -2, 3, 0.5f};
  absl::StatusOr<std::vector<NamedTensor>> out = host.RunNetwork(
      name, {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 4}), x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0].tensor;
  ASSERT_EQ(y.num_elements(), width);
  const std::vector<float> want = MlpReference(x, 1, 4, width);
  for (int i = 0; i < width; ++i) {
    EXPECT_NEAR(y.data<float>()[i], want[i], 1e-4f * (1 + std::abs(want[i])));
  }
}

TEST(ServingCoreTest, BadOptionsNameTheirFlag) {
  struct Case {
    void (*set)(ServingCoreOptions*);
    const char* message;
  };
  const Case cases[] = {
      {[](ServingCoreOptions* o) { o->devices = "sim*0"; }, "--devices: "},
      {[](ServingCoreOptions* o) {
         o->import_time_limit = absl::ZeroDuration();
       },
       "--import_time_limit must be positive"},
      {[](ServingCoreOptions* o) {
         o->model_control_mode = ModelControlMode::kExplicit;
       },
       "--model_control_mode needs --model_repository"},
      {[](ServingCoreOptions* o) {
         o->model_repository = "/nonexistent/serving_core_test/repo";
       },
       "--model_repository: "},
  };
  for (const Case& c : cases) {
    ServingCoreOptions options = SmallOptions();
    c.set(&options);
    absl::StatusOr<std::unique_ptr<ServingCore>> core =
        ServingCore::Create(options);
    ASSERT_FALSE(core.ok()) << c.message;
    EXPECT_THAT(std::string(core.status().message()), StartsWith(c.message));
  }
}

TEST(ServingCoreTest, StoredNetworksAreBackBeforeItSaysLoaded) {
  ServingCoreOptions options = SmallOptions();
  options.store_dir = TempDir();
  {
    std::unique_ptr<ServingCore> core = MustCreate(options);
    ASSERT_NE(core, nullptr);
    EXPECT_EQ(core->store_dir(), options.store_dir);
    core->StartLoading(nullptr);
    core->WaitUntilLoaded();
    ASSERT_TRUE(
        core->host_manager().AddNetwork("mlp", MakeMlpModel(1, 4, 3), {}).ok());
  }
  std::unique_ptr<ServingCore> core = MustCreate(options);
  ASSERT_NE(core, nullptr);
  std::atomic<bool> present_when_loaded{false};
  core->StartLoading([&] {
    present_when_loaded = core->host_manager().GetNetwork("mlp").ok();
  });
  core->WaitUntilLoaded();
  EXPECT_TRUE(present_when_loaded);
  ExpectMlp(core->host_manager(), "mlp", 3);
}

TEST(ServingCoreTest, RepositoryLoadsBeforeItSaysLoaded) {
  const std::string repo = TempDir();
  Write(repo + "/wide/1/model.onnx", MakeMlpModel(1, 4, 5));
  ServingCoreOptions options = SmallOptions();
  options.model_repository = repo;
  std::unique_ptr<ServingCore> core = MustCreate(options);
  ASSERT_NE(core, nullptr);
  ASSERT_NE(core->repository(), nullptr);
  std::atomic<bool> present_when_loaded{false};
  core->StartLoading([&] {
    present_when_loaded = core->host_manager().GetNetwork("wide").ok();
  });
  core->WaitUntilLoaded();
  EXPECT_TRUE(present_when_loaded);
  ExpectMlp(core->host_manager(), "wide", 5);
}

TEST(ServingCoreTest, ExplicitModeLoadsAndUnloadsOnRequest) {
  const std::string repo = TempDir();
  Write(repo + "/m/2/model.onnx", MakeMlpModel(1, 4, 2));
  ServingCoreOptions options = SmallOptions();
  options.model_repository = repo;
  options.model_control_mode = ModelControlMode::kExplicit;
  std::unique_ptr<ServingCore> core = MustCreate(options);
  ASSERT_NE(core, nullptr);
  core->StartLoading(nullptr);
  core->WaitUntilLoaded();
  EXPECT_FALSE(core->host_manager().GetNetwork("m").ok());

  OipModelLoad load;
  load.name = "m";
  load.has_config = true;
  EXPECT_EQ(core->LoadModel(load).code(), absl::StatusCode::kInvalidArgument);
  load.has_config = false;
  ASSERT_TRUE(core->LoadModel(load).ok());
  ExpectMlp(core->host_manager(), "m", 2);
  ASSERT_TRUE(core->UnloadModel("m").ok());
  EXPECT_FALSE(core->host_manager().GetNetwork("m").ok());
  EXPECT_FALSE(core->repository()->IsLoaded("m"));
  EXPECT_EQ(core->UnloadModel("m").code(), absl::StatusCode::kNotFound);
}

TEST(ServingCoreTest, LoadWithAFileChecksItsConfig) {
  std::unique_ptr<ServingCore> core = MustCreate(SmallOptions());
  ASSERT_NE(core, nullptr);
  OipModelLoad load;
  load.name = "mlp";
  EXPECT_EQ(core->LoadModel(load).code(), absl::StatusCode::kNotFound);

  load.has_file = true;
  load.onnx_model = MakeMlpModel(1, 4, 3);
  ASSERT_TRUE(core->LoadModel(load).ok());
  ExpectMlp(core->host_manager(), "mlp", 3);
  // Without a file: loaded already, but no reload in place with a config.
  OipModelLoad again;
  again.name = "mlp";
  EXPECT_TRUE(core->LoadModel(again).ok());
  again.has_config = true;
  EXPECT_EQ(core->LoadModel(again).code(), absl::StatusCode::kAlreadyExists);

  // A config that describes another model: refused, and not left loaded.
  OipModelLoad other = load;
  other.name = "other";
  other.has_config = true;
  other.config.inputs.push_back({"x", DType::kInt64, std::nullopt});
  const absl::Status s = core->LoadModel(other);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("x"));
  EXPECT_FALSE(core->host_manager().GetNetwork("other").ok());

  ASSERT_TRUE(core->UnloadModel("mlp").ok());
  EXPECT_EQ(core->UnloadModel("mlp").code(), absl::StatusCode::kNotFound);
}

TEST(ServingCoreTest, AfterShutdownNothingSaysLoaded) {
  std::unique_ptr<ServingCore> core = MustCreate(SmallOptions());
  ASSERT_NE(core, nullptr);
  core->WaitUntilLoaded();  // Never started: returns at once.
  core->Shutdown();
  core->Shutdown();  // Idempotent.
  bool called = false;
  core->StartLoading([&] { called = true; });
  core->WaitUntilLoaded();
  EXPECT_FALSE(called);
  EXPECT_EQ(core->host_manager()
                .AddNetwork("mlp", MakeMlpModel(1, 4, 3), {})
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace glint
