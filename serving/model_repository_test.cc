#include "serving/model_repository.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "onnx/test_models.h"

namespace glint {
namespace {

namespace fs = std::filesystem;
using ::glint::testing::MakeMlpModel;
using ::glint::testing::MlpReference;

std::string NewRepo(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir =
      fs::path(tmp != nullptr ? tmp : "/tmp") / absl::StrCat("repo_", name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void Write(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

std::unique_ptr<HostManager> MakeHost() {
  DeviceConfig config;
  config.memory_bytes = 64 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, {config, config});
  EXPECT_TRUE(host.ok()) << host.status();
  return *std::move(host);
}

// The number of values `name` answers for x[1, 4], checked against the
// MLP reference of that width.
int OutputWidth(HostManager& host, const std::string& name) {
  std::vector<float> x = {1, -2, 3, 0.5f};
  absl::StatusOr<std::vector<NamedTensor>> out = host.RunNetwork(
      name, {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 4}), x)}});
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return -1;
  const Tensor& y = (*out)[0].tensor;
  const int width = static_cast<int>(y.num_elements());
  const std::vector<float> want = MlpReference(x, 1, 4, width);
  for (int i = 0; i < width; ++i) {
    EXPECT_NEAR(y.data<float>()[i], want[i], 1e-4f * (1 + std::abs(want[i])));
  }
  return width;
}

const RepositoryIndexEntry* Find(const std::vector<RepositoryIndexEntry>& index,
                                 const std::string& name) {
  for (const RepositoryIndexEntry& e : index) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

TEST(ModelRepositoryTest, ParsesControlModes) {
  EXPECT_EQ(*ParseModelControlMode("none"), ModelControlMode::kNone);
  EXPECT_EQ(*ParseModelControlMode("explicit"), ModelControlMode::kExplicit);
  EXPECT_EQ(*ParseModelControlMode("poll"), ModelControlMode::kPoll);
  EXPECT_EQ(ParseModelControlMode("POLL").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ModelRepositoryTest, ScanPicksTheNewestNumericVersion) {
  const std::string repo = NewRepo("scan");
  Write(repo + "/a/1/model.onnx", "one");
  Write(repo + "/a/9/model.onnx", "nine");
  Write(repo + "/a/10/model.onnx", "ten");  // Numerically newest.
  Write(repo + "/a/11/other.onnx", "no model.onnx here");
  Write(repo + "/a/latest/model.onnx", "not a number");
  Write(repo + "/a/config.json", "{}");
  Write(repo + "/b/0/model.onnx", "0 is not a version");
  Write(repo + "/c/2/model.onnx", "c");
  Write(repo + "/c/config.pbtxt", "name: \"c\"");
  Write(repo + "/README", "a stray file");
  std::vector<std::string> skipped;
  absl::StatusOr<std::vector<RepositoryModel>> models =
      ScanModelRepository(repo, &skipped);
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[0].name, "a");
  EXPECT_EQ((*models)[0].version, 10);
  EXPECT_EQ((*models)[0].model_path, repo + "/a/10/model.onnx");
  EXPECT_EQ((*models)[0].config_path, repo + "/a/config.json");
  EXPECT_FALSE((*models)[0].has_pbtxt_only);
  EXPECT_EQ((*models)[1].name, "c");
  EXPECT_TRUE((*models)[1].config_path.empty());
  EXPECT_TRUE((*models)[1].has_pbtxt_only);
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("'b'"), std::string::npos) << skipped[0];

  EXPECT_EQ(ScanModelRepository(repo + "/missing").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(ScanModelRepository(repo + "/README").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Poll mode's cycle: a model appears, a new version replaces it, a broken
// version keeps the old one serving (and is not retried until it changes),
// and a model taken away is unloaded.
TEST(ModelRepositoryTest, SyncLoadsReloadsKeepsOldOnFailureAndUnloads) {
  const std::string repo = NewRepo("sync");
  auto host = MakeHost();
  ModelRepository repository(host.get(), {repo, ModelControlMode::kPoll});
  Write(repo + "/m/1/model.onnx", MakeMlpModel(1, 4, 4));

  absl::StatusOr<RepositorySyncReport> report = repository.Sync();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->loaded, 1);
  EXPECT_EQ(OutputWidth(*host, "m"), 4);
  EXPECT_TRUE(repository.IsLoaded("m"));

  report = repository.Sync();  // Nothing changed.
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->unchanged, 1);
  EXPECT_EQ(report->loaded + report->reloaded + report->failed, 0);

  Write(repo + "/m/2/model.onnx", MakeMlpModel(1, 4, 3));
  report = repository.Sync();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->reloaded, 1);
  EXPECT_EQ(OutputWidth(*host, "m"), 3);

  Write(repo + "/m/3/model.onnx", "not an ONNX model");
  report = repository.Sync();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->failed, 1);
  EXPECT_EQ(OutputWidth(*host, "m"), 3);  // Version 2 still serves.
  std::vector<RepositoryIndexEntry> index = repository.Index();
  const RepositoryIndexEntry* m = Find(index, "m");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->state, "READY");
  EXPECT_EQ(m->version, 2);
  EXPECT_NE(m->reason.find("version 3 failed to load"), std::string::npos)
      << m->reason;
  report = repository.Sync();  // The broken version is not tried again.
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->failed, 0);
  EXPECT_EQ(report->unchanged, 1);

  fs::remove_all(repo + "/m");
  report = repository.Sync();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->unloaded, 1);
  EXPECT_EQ(host->GetNetwork("m").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(repository.IsLoaded("m"));
  EXPECT_EQ(Find(repository.Index(), "m"), nullptr);
}

TEST(ModelRepositoryTest, ConfigJsonSetsPlacementAndBadConfigsFail) {
  const std::string repo = NewRepo("config");
  auto host = MakeHost();
  ModelRepository repository(host.get(), {repo, ModelControlMode::kNone});
  Write(repo + "/two/1/model.onnx", MakeMlpModel(1, 4, 4));
  Write(repo + "/two/config.json",
        R"({"instance_group": [{"count": 2}],
            "parameters": {"partition_strategy": {"string_value": "whole"}}})");
  Write(repo + "/typo/1/model.onnx", MakeMlpModel(1, 4, 4));
  Write(repo + "/typo/config.json", R"({"instance_groups": []})");
  Write(repo + "/wrong/1/model.onnx", MakeMlpModel(1, 4, 4));
  Write(repo + "/wrong/config.json",
        R"({"input": [{"name": "x", "data_type": "TYPE_FP32",
                       "dims": [1, 5]}]})");
  Write(repo + "/pb/1/model.onnx", MakeMlpModel(1, 4, 4));
  Write(repo + "/pb/config.pbtxt", "max_batch_size: 8");

  absl::StatusOr<RepositorySyncReport> report = repository.Sync();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->loaded, 1);
  EXPECT_EQ(report->failed, 3);
  absl::StatusOr<NetworkInfo> two = host->GetNetwork("two");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->replicas, 2);
  EXPECT_EQ(two->strategy, "whole");
  EXPECT_EQ(OutputWidth(*host, "two"), 4);
  // None of the failed ones is left half-loaded.
  ASSERT_EQ(host->ListNetworks().size(), 1u);
  const std::vector<RepositoryIndexEntry> index = repository.Index();
  for (const char* name : {"typo", "wrong", "pb"}) {
    const RepositoryIndexEntry* e = Find(index, name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->state, "UNAVAILABLE") << name;
    EXPECT_FALSE(e->reason.empty()) << name;
  }
  EXPECT_NE(Find(index, "typo")->reason.find("instance_groups"),
            std::string::npos)
      << Find(index, "typo")->reason;
  EXPECT_NE(Find(index, "pb")->reason.find("config.pbtxt"), std::string::npos);
}

TEST(ModelRepositoryTest, ExplicitLoadAndUnload) {
  const std::string repo = NewRepo("explicit");
  auto host = MakeHost();
  ModelRepository repository(host.get(), {repo, ModelControlMode::kExplicit});
  Write(repo + "/m/1/model.onnx", MakeMlpModel(1, 4, 4));
  EXPECT_EQ(repository.Load("absent").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(repository.Unload("m").code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(repository.Load("m").ok());
  EXPECT_EQ(OutputWidth(*host, "m"), 4);
  // Loading again reloads what is on disk now.
  Write(repo + "/m/7/model.onnx", MakeMlpModel(1, 4, 2));
  ASSERT_TRUE(repository.Load("m").ok());
  EXPECT_EQ(OutputWidth(*host, "m"), 2);
  EXPECT_EQ(Find(repository.Index(), "m")->version, 7);
  ASSERT_TRUE(repository.Unload("m").ok());
  EXPECT_EQ(host->GetNetwork("m").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Find(repository.Index(), "m")->state, "UNLOADED");
  // A network added otherwise is not the repository's to unload.
  ASSERT_TRUE(host->AddNetwork("other", MakeMlpModel(1, 4, 4), {}).ok());
  EXPECT_EQ(repository.Unload("other").code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(host->GetNetwork("other").ok());
}

}  // namespace
}  // namespace glint
