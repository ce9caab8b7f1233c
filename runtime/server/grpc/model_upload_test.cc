#include "runtime/server/grpc/model_upload.h"

#include <string>

#include "gtest/gtest.h"

namespace glint {
namespace {

v1::AddNetworkChunk First(const std::string& name, const std::string& bytes,
                          uint64_t model_size = 0) {
  v1::AddNetworkChunk chunk;
  chunk.set_name(name);
  chunk.mutable_options()->set_replicas(2);
  chunk.set_model(bytes);
  chunk.set_model_size(model_size);
  return chunk;
}

v1::AddNetworkChunk Piece(const std::string& bytes) {
  v1::AddNetworkChunk chunk;
  chunk.set_model(bytes);
  return chunk;
}

TEST(ModelUploadTest, PiecesBecomeTheModelWithTheFirstMessagesNameAndOptions) {
  ModelUpload upload(::testing::TempDir(), 1 << 20);
  ASSERT_TRUE(upload.Take(First("net", "ab", 7)).ok());
  EXPECT_EQ(upload.name(), "net");
  EXPECT_EQ(upload.options().replicas(), 2);
  ASSERT_TRUE(upload.Take(Piece("")).ok());
  ASSERT_TRUE(upload.Take(Piece("cde")).ok());
  ASSERT_TRUE(upload.Take(Piece("fg")).ok());
  EXPECT_EQ(upload.received(), 7u);
  absl::StatusOr<ModelBytes> model = upload.Finish();
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->view(), "abcdefg");
  EXPECT_EQ(upload.Finish().status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ModelUploadTest, WithoutASizeTheLimitBoundsTheModel) {
  ModelUpload upload(::testing::TempDir(), 4);
  ASSERT_TRUE(upload.Take(First("net", "abc")).ok());
  const absl::Status over = upload.Take(Piece("de"));
  EXPECT_EQ(over.code(), absl::StatusCode::kInvalidArgument) << over;
  EXPECT_NE(over.message().find("limit of 4 bytes"), absl::string_view::npos)
      << over;
}

TEST(ModelUploadTest, TheFirstMessageMustNameTheNetwork) {
  ModelUpload upload(::testing::TempDir(), 1 << 20);
  const absl::Status s = upload.Take(Piece("abc"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("must name the network"), absl::string_view::npos);
}

TEST(ModelUploadTest, OnlyTheFirstMessageNamesSizesOrSetsOptions) {
  for (int field = 0; field < 3; ++field) {
    ModelUpload upload(::testing::TempDir(), 1 << 20);
    ASSERT_TRUE(upload.Take(First("net", "a")).ok());
    v1::AddNetworkChunk later = Piece("b");
    if (field == 0) later.set_name("other");
    if (field == 1) later.mutable_options()->set_precision("bf16");
    if (field == 2) later.set_model_size(9);
    const absl::Status s = upload.Take(later);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(s.message().find("only the first message"),
              absl::string_view::npos)
        << s;
  }
}

TEST(ModelUploadTest, TheSizeGivenIsCheckedBothWays) {
  {
    ModelUpload upload(::testing::TempDir(), 100);
    const absl::Status s = upload.Take(First("net", "", 101));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("over the limit of 100"),
              absl::string_view::npos)
        << s;
  }
  {
    ModelUpload upload(::testing::TempDir(), 100);
    ASSERT_TRUE(upload.Take(First("net", "abc", 4)).ok());
    const absl::Status s = upload.Take(Piece("de"));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("past the model_size given (4 bytes)"),
              absl::string_view::npos)
        << s;
  }
  {
    ModelUpload upload(::testing::TempDir(), 100);
    ASSERT_TRUE(upload.Take(First("net", "abc", 5)).ok());
    const absl::Status s = upload.Finish().status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("after 3 bytes of a model of 5"),
              absl::string_view::npos)
        << s;
  }
}

TEST(ModelUploadTest, AStreamWithNoMessageIsInvalid) {
  ModelUpload upload(::testing::TempDir(), 100);
  EXPECT_EQ(upload.Finish().status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The server's fault, not the client's: INTERNAL.
TEST(ModelUploadTest, AFolderThatIsNotThereFailsTheFirstMessage) {
  ModelUpload upload(::testing::TempDir() + "/not/there", 100);
  const absl::Status s = upload.Take(First("net", "abc"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("cannot keep the model"), absl::string_view::npos)
      << s;
}

}  // namespace
}  // namespace glint
