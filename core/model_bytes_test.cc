#include "core/model_bytes.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "core/resident_memory.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

std::string WriteFile(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << contents;
  return path;
}

TEST(ModelBytesTest, BorrowedBytesAreTheCallers) {
  const std::string model = "model bytes";
  ModelBytes bytes(model);
  EXPECT_FALSE(bytes.mapped());
  EXPECT_EQ(bytes.view().data(), model.data());
  EXPECT_EQ(bytes.size(), model.size());
  bytes.Evict();  // Nothing to drop; the caller's bytes stay as they are.
  EXPECT_EQ(bytes.view(), "model bytes");
}

TEST(ModelBytesTest, MapsAFileAndReadsItAgainAfterEvict) {
  std::string contents(3 << 20, '\0');
  for (size_t i = 0; i < contents.size(); ++i) {
    contents[i] = static_cast<char>(i * 7 + 3);
  }
  absl::StatusOr<ModelBytes> bytes =
      ModelBytes::MapFile(WriteFile("model.onnx", contents));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_TRUE(bytes->mapped());
  EXPECT_EQ(bytes->view(), contents);
  bytes->Evict();
  EXPECT_EQ(bytes->view(), contents);  // Read from the file again.

  // Moving hands the mapping over: the moved-from object unmaps nothing.
  ModelBytes moved = *std::move(bytes);
  EXPECT_TRUE(moved.mapped());
  EXPECT_EQ(moved.view(), contents);
}

TEST(ModelBytesTest, EvictDropsTheResidentPages) {
  constexpr size_t kSize = size_t{64} << 20;
  absl::StatusOr<ModelBytes> bytes =
      ModelBytes::MapFile(WriteFile("large.onnx", std::string(kSize, 'x')));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const int64_t before = ResidentFileBytes();
  ASSERT_GE(before, 0) << "no RssFile in /proc/self/status";
  uint64_t sum = 0;
  for (size_t i = 0; i < kSize; i += 4096) sum += bytes->view()[i];
  EXPECT_EQ(sum, uint64_t{'x'} * (kSize / 4096));
  const int64_t read = ResidentFileBytes();
  EXPECT_GE(read - before, static_cast<int64_t>(kSize) * 9 / 10)
      << "a pass over the mapping should make it resident";
  bytes->Evict();
  EXPECT_LE(ResidentFileBytes() - before, static_cast<int64_t>(kSize) / 10)
      << "Evict should drop the mapping's pages";
}

TEST(ModelBytesTest, AnEmptyFileIsEmptyBytes) {
  absl::StatusOr<ModelBytes> bytes =
      ModelBytes::MapFile(WriteFile("empty.onnx", ""));
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_TRUE(bytes->view().empty());
  bytes->Evict();
}

TEST(ModelBytesTest, ErrorsNameThePath) {
  absl::StatusOr<ModelBytes> missing =
      ModelBytes::MapFile(::testing::TempDir() + "/no-such-model.onnx");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no-such-model.onnx"),
            absl::string_view::npos);

  absl::StatusOr<ModelBytes> folder = ModelBytes::MapFile(::testing::TempDir());
  EXPECT_EQ(folder.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(folder.status().message().find("not a regular file"),
            absl::string_view::npos);
}

}  // namespace
}  // namespace glint
