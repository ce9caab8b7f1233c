#include "core/model_bytes.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "core/test_process.h"
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

TEST(ModelFileWriterTest, PiecesBecomeOneMappedModelAndLeaveNoFile) {
  const std::string dir = FreshTestDir("uploads");
  absl::StatusOr<ModelFileWriter> writer = ModelFileWriter::Create(dir);
  ASSERT_TRUE(writer.ok()) << writer.status();
  std::string want;
  for (int piece = 0; piece < 5; ++piece) {
    const std::string bytes(100000 + piece, static_cast<char>('a' + piece));
    ASSERT_TRUE(writer->Append(bytes).ok());
    want += bytes;
  }
  ASSERT_TRUE(writer->Append("").ok());
  EXPECT_EQ(writer->size(), want.size());
  // The file has no name: nothing a crash could leave behind.
  EXPECT_TRUE(IsEmptyDir(dir));

  absl::StatusOr<ModelBytes> bytes = writer->Finish();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_TRUE(bytes->mapped());
  EXPECT_EQ(bytes->view(), want);
  bytes->Evict();
  EXPECT_EQ(bytes->view(), want);
  // Finished: the writer takes nothing more.
  EXPECT_EQ(writer->Append("x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(writer->Finish().status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(IsEmptyDir(dir));
}

TEST(ModelFileWriterTest, NothingWrittenIsAnEmptyModel) {
  absl::StatusOr<ModelFileWriter> writer =
      ModelFileWriter::Create(FreshTestDir("empty-upload"));
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::StatusOr<ModelBytes> bytes = writer->Finish();
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_TRUE(bytes->view().empty());
}

TEST(ModelFileWriterTest, AFolderThatIsNotThereIsNotFound) {
  absl::StatusOr<ModelFileWriter> writer =
      ModelFileWriter::Create(::testing::TempDir() + "/no/such/folder");
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(writer.status().message().find("no/such/folder"),
            absl::string_view::npos);
}

// A full disk as the kernel reports it: a write beyond RLIMIT_FSIZE fails
// with EFBIG (SIGXFSZ ignored, as glintd does), ENOSPC's sibling.
TEST(ModelFileWriterTest, AFullDiskIsResourceExhausted) {
  absl::StatusOr<ModelFileWriter> writer =
      ModelFileWriter::Create(FreshTestDir("full-upload"));
  ASSERT_TRUE(writer.ok()) << writer.status();
  absl::Status full;
  ASSERT_TRUE(WithFileSizeLimit(64 << 10, [&] {
                full = writer->Append(std::string(1 << 20, 'm'));
              }).ok());
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("no room"), absl::string_view::npos) << full;
}

}  // namespace
}  // namespace glint
