#include "runtime/server/grpc/run_request.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/proto_convert.h"

namespace glint {
namespace {

using ::testing::HasSubstr;

constexpr size_t kObjectBytes = 4096;

// A registry holding region "r": all of a fresh one-page object, which the
// test maps too.
class RunRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    key_ = absl::StrCat("/glint_run_request_test_", getpid());
    const int fd = shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, kObjectBytes), 0);
    void* p =
        mmap(nullptr, kObjectBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    ASSERT_NE(p, MAP_FAILED);
    memory_ = static_cast<uint8_t*>(p);
    std::memset(memory_, 0xEE, kObjectBytes);
    ASSERT_TRUE(registry_.Register("r", key_, 0, kObjectBytes).ok());
  }
  void TearDown() override {
    if (memory_ != nullptr) munmap(memory_, kObjectBytes);
    shm_unlink(key_.c_str());
  }

  float* floats(size_t offset) {
    return reinterpret_cast<float*>(memory_ + offset);
  }

  std::string key_;
  uint8_t* memory_ = nullptr;
  SharedMemoryRegistry registry_;
};

v1::Tensor ShmInput(const std::string& name, std::vector<int64_t> shape,
                    SharedMemoryRef ref) {
  v1::Tensor p;
  SharedMemoryTensorToProto(
      {name, DType::kFloat32, Shape(std::move(shape)), std::move(ref)}, &p);
  return p;
}

TEST_F(RunRequestTest, InputsComeFromBytesAndSharedMemory) {
  for (int i = 0; i < 4; ++i) floats(128)[i] = 10.0f + i;
  v1::RunNetworkRequest request;
  request.set_name("n");
  *request.add_inputs() = ShmInput("a", {2, 2}, {"r", 128, 16});
  ASSERT_TRUE(TensorToProto({"b", Tensor::FromVector<float>(
                                      DType::kFloat32, Shape({1}), {7.0f})},
                            request.add_inputs())
                  .ok());
  request.add_requested_outputs("y");
  request.set_trace(true);
  absl::StatusOr<DecodedRunRequest> run = DecodeRunRequest(request, registry_);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->inputs.size(), 2u);
  EXPECT_EQ(run->inputs[0].name, "a");
  EXPECT_EQ(run->inputs[0].tensor.shape(), Shape({2, 2}));
  EXPECT_EQ(run->inputs[0].tensor.data<float>()[3], 13.0f);
  // Borrowed from glintd's mapping, not copied: the client's writes show.
  floats(128)[3] = -1.0f;
  EXPECT_EQ(run->inputs[0].tensor.data<float>()[3], -1.0f);
  EXPECT_EQ(run->inputs[1].tensor.data<float>()[0], 7.0f);
  EXPECT_EQ(run->options.requested_outputs, std::vector<std::string>{"y"});
  EXPECT_NE(run->options.trace, nullptr);
  EXPECT_FALSE(run->options.profile);
}

// profile implies a trace to hold the node slices.
TEST_F(RunRequestTest, ProfileTracesTheRun) {
  v1::RunNetworkRequest request;
  request.set_name("n");
  request.set_profile(true);
  absl::StatusOr<DecodedRunRequest> run = DecodeRunRequest(request, registry_);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(run->options.profile);
  EXPECT_NE(run->options.trace, nullptr);
  request.set_profile(false);
  run = DecodeRunRequest(request, registry_);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_FALSE(run->options.profile);
  EXPECT_EQ(run->options.trace, nullptr);
}

TEST_F(RunRequestTest, BadInputWindowsAreInvalidArgument) {
  const std::vector<std::pair<SharedMemoryRef, std::string>> cases = {
      {{"nope", 0, 16}, "no shared-memory region named 'nope'"},
      {{"r", kObjectBytes - 8, 16}, "do not fit"},
      {{"r", kObjectBytes + 1, 0}, "do not fit"},
      {{"r", 0, 12}, "holds 12"},
  };
  for (const auto& [ref, message] : cases) {
    v1::RunNetworkRequest request;
    *request.add_inputs() = ShmInput("a", {2, 2}, ref);
    if (ref.byte_size == 0) request.mutable_inputs(0)->set_shape(0, 0);
    absl::StatusOr<DecodedRunRequest> run = DecodeRunRequest(request, registry_);
    EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument)
        << ref.region << " " << ref.offset;
    EXPECT_THAT(run.status().message(), HasSubstr(message));
  }
}

TEST_F(RunRequestTest, OutputsGoToTheirWindowsAndTheRestToTheReply) {
  v1::RunNetworkRequest request;
  SharedMemoryRef window{"r", 256, 64};
  SharedMemoryRefToProto(window, &(*request.mutable_output_shared_memory())["y"]);
  absl::StatusOr<DecodedRunRequest> run = DecodeRunRequest(request, registry_);
  ASSERT_TRUE(run.ok()) << run.status();

  const std::vector<NamedTensor> outputs = {
      {"y", Tensor::FromVector<float>(DType::kFloat32, Shape({2, 2}),
                                      {1, 2, 3, 4})},
      {"z", Tensor::FromVector<float>(DType::kFloat32, Shape({1}), {9})}};
  v1::RunNetworkResponse response;
  ASSERT_TRUE(EncodeRunResponse(*run, outputs, &response).ok());
  ASSERT_EQ(response.outputs_size(), 2);
  const v1::Tensor& y = response.outputs(0);
  EXPECT_EQ(y.name(), "y");
  EXPECT_TRUE(y.raw_data().empty());
  EXPECT_EQ(y.shape_size(), 2);
  EXPECT_EQ(y.shared_memory().region(), "r");
  EXPECT_EQ(y.shared_memory().offset(), 256u);
  EXPECT_EQ(y.shared_memory().byte_size(), 16u);  // Written, not the window.
  EXPECT_EQ(floats(256)[3], 4.0f);
  EXPECT_EQ(memory_[256 + 16], 0xEE);  // Nothing past the tensor.
  EXPECT_EQ(memory_[255], 0xEE);
  EXPECT_EQ(response.outputs(1).raw_data().size(), 4u);
}

TEST_F(RunRequestTest, OutputWindowsAreCheckedBeforeAnyIsWritten) {
  v1::RunNetworkRequest request;
  auto& windows = *request.mutable_output_shared_memory();
  SharedMemoryRefToProto({"r", 0, 64}, &windows["y"]);
  SharedMemoryRefToProto({"r", 64, 8}, &windows["z"]);  // z needs 16.
  absl::StatusOr<DecodedRunRequest> run = DecodeRunRequest(request, registry_);
  ASSERT_TRUE(run.ok()) << run.status();
  const std::vector<NamedTensor> outputs = {
      {"y", Tensor::FromVector<float>(DType::kFloat32, Shape({1}), {1})},
      {"z", Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                      {1, 2, 3, 4})}};
  v1::RunNetworkResponse response;
  absl::Status s = EncodeRunResponse(*run, outputs, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("output 'z'"));
  for (size_t i = 0; i < kObjectBytes; ++i) ASSERT_EQ(memory_[i], 0xEE) << i;

  // A window for an output the network does not have.
  v1::RunNetworkRequest unknown;
  SharedMemoryRefToProto({"r", 0, 64},
                         &(*unknown.mutable_output_shared_memory())["w"]);
  run = DecodeRunRequest(unknown, registry_);
  ASSERT_TRUE(run.ok());
  s = EncodeRunResponse(*run, outputs, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("'w'"));
}

TEST_F(RunRequestTest, OutputWindowsAreResolvedBeforeTheRun) {
  v1::RunNetworkRequest request;
  SharedMemoryRefToProto({"r", kObjectBytes, 1},
                         &(*request.mutable_output_shared_memory())["y"]);
  EXPECT_EQ(DecodeRunRequest(request, registry_).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A window for an output not requested.
  v1::RunNetworkRequest not_requested;
  not_requested.add_requested_outputs("z");
  SharedMemoryRefToProto({"r", 0, 4},
                         &(*not_requested.mutable_output_shared_memory())["y"]);
  absl::StatusOr<DecodedRunRequest> run = DecodeRunRequest(not_requested, registry_);
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(run.status().message(), HasSubstr("not requested"));
}

TEST_F(RunRequestTest, AnOutputWindowOverlappingAnInputIsCopiedInAfterTheRun) {
  // Devices write offered windows during the run: a window sharing bytes
  // with an input could be written before a later partition reads that
  // input, so only windows clear of every input are offered.
  v1::RunNetworkRequest request;
  *request.add_inputs() = ShmInput("a", {2}, {"r", 0, 8});
  auto& windows = *request.mutable_output_shared_memory();
  SharedMemoryRefToProto({"r", 4, 8}, &windows["overlapping"]);
  SharedMemoryRefToProto({"r", 0, 8}, &windows["same_bytes"]);
  SharedMemoryRefToProto({"r", 8, 4}, &windows["adjacent"]);
  SharedMemoryRefToProto({"r", 64, 8}, &windows["apart"]);
  absl::StatusOr<DecodedRunRequest> run = DecodeRunRequest(request, registry_);
  ASSERT_TRUE(run.ok()) << run.status();
  std::vector<std::string> offered;
  for (const RunOptions::OutputBuffer& b : run->options.output_buffers) {
    offered.push_back(b.output);
  }
  std::sort(offered.begin(), offered.end());
  EXPECT_EQ(offered, (std::vector<std::string>{"adjacent", "apart"}));
  EXPECT_EQ(run->output_windows.size(), 4u);  // All still answered.

}

TEST_F(RunRequestTest, APreparedRunKeepsItsRegionsAfterUnregister) {
  floats(0)[0] = 3.5f;
  v1::RunNetworkRequest request;
  *request.add_inputs() = ShmInput("a", {1}, {"r", 0, 4});
  SharedMemoryRefToProto({"r", 8, 4},
                         &(*request.mutable_output_shared_memory())["y"]);
  absl::StatusOr<DecodedRunRequest> run = DecodeRunRequest(request, registry_);
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(registry_.Unregister("r").ok());
  munmap(memory_, kObjectBytes);  // Only glintd's mapping is left.
  memory_ = nullptr;
  EXPECT_EQ(run->inputs[0].tensor.data<float>()[0], 3.5f);
  v1::RunNetworkResponse response;
  ASSERT_TRUE(EncodeRunResponse(*run,
                              {{"y", Tensor::FromVector<float>(
                                         DType::kFloat32, Shape({1}), {2})}},
                              &response)
                  .ok());
  EXPECT_EQ(response.outputs(0).shared_memory().byte_size(), 4u);
}

}  // namespace
}  // namespace glint
