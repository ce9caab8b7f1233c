// ModelInfer requests with Triton's shared-memory parameters, resolved
// against a registry holding a real POSIX shared-memory object, without
// gRPC: inputs borrowed from their windows, outputs written into theirs,
// and every bounds error INVALID_ARGUMENT with the memory untouched.
#include "runtime/server/grpc/oip_infer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

using inference::ModelInferRequest;
using ::testing::HasSubstr;

constexpr size_t kObjectBytes = 4096;

// A registry holding region "r": bytes [256, 4096) of a fresh one-page
// object, which the test maps too (so region offset 0 is object byte 256).
class OipInferTest : public ::testing::Test {
 protected:
  static constexpr size_t kRegionOffset = 256;
  static constexpr size_t kRegionBytes = kObjectBytes - kRegionOffset;

  void SetUp() override {
    key_ = absl::StrCat("/glint_oip_infer_test_", getpid());
    const int fd = shm_open(key_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, kObjectBytes), 0);
    void* p =
        mmap(nullptr, kObjectBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    ASSERT_NE(p, MAP_FAILED);
    memory_ = static_cast<uint8_t*>(p);
    std::memset(memory_, 0xEE, kObjectBytes);
    ASSERT_TRUE(
        registry_.Register("r", key_, kRegionOffset, kRegionBytes).ok());
  }
  void TearDown() override {
    if (memory_ != nullptr) munmap(memory_, kObjectBytes);
    shm_unlink(key_.c_str());
  }

  // Region offset -> the test's own view of those bytes.
  float* floats(size_t offset) {
    return reinterpret_cast<float*>(memory_ + kRegionOffset + offset);
  }

  std::string key_;
  uint8_t* memory_ = nullptr;
  SharedMemoryRegistry registry_;
};

void SetWindow(
    google::protobuf::Map<std::string, inference::InferParameter>* parameters,
    const std::string& region, int64_t offset, int64_t byte_size) {
  (*parameters)["shared_memory_region"].set_string_param(region);
  (*parameters)["shared_memory_offset"].set_int64_param(offset);
  (*parameters)["shared_memory_byte_size"].set_int64_param(byte_size);
}

// x: FP32[2, 2] in the region at `offset`, z: FP32[2] in the message.
ModelInferRequest Request(int64_t offset = 128, int64_t byte_size = 16) {
  ModelInferRequest r;
  r.set_model_name("m");
  r.set_id("req");
  auto* x = r.add_inputs();
  x->set_name("x");
  x->set_datatype("FP32");
  x->add_shape(2);
  x->add_shape(2);
  SetWindow(x->mutable_parameters(), "r", offset, byte_size);
  auto* z = r.add_inputs();
  z->set_name("z");
  z->set_datatype("FP32");
  z->add_shape(2);
  const float zs[] = {7, 8};
  r.add_raw_input_contents(std::string(reinterpret_cast<const char*>(zs), 8));
  return r;
}

NamedTensor Floats(const std::string& name, std::vector<float> v) {
  Tensor t =
      *Tensor::Create(DType::kFloat32, Shape({static_cast<int64_t>(v.size())}));
  std::memcpy(t.raw_data(), v.data(), v.size() * sizeof(float));
  return {name, std::move(t)};
}

TEST_F(OipInferTest, InputsComeFromTheRegionAndTheMessage) {
  const float xs[] = {1, 2, 3, 4};
  std::memcpy(floats(128), xs, sizeof(xs));
  absl::StatusOr<PreparedOipInfer> run = PrepareOipInfer(
      Request(), registry_, absl::Now(), absl::InfiniteFuture());
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->inputs.size(), 2u);
  EXPECT_EQ(run->inputs[0].name, "z");
  EXPECT_EQ(run->inputs[0].tensor.data<float>()[1], 8);
  EXPECT_EQ(run->inputs[1].name, "x");
  EXPECT_EQ(run->inputs[1].tensor.shape(), Shape({2, 2}));
  EXPECT_EQ(run->inputs[1].tensor.data<float>()[3], 4);
  // Borrowed, not copied: the tensor reads the region itself.
  floats(128)[3] = 40;
  EXPECT_EQ(run->inputs[1].tensor.data<float>()[3], 40);
}

TEST_F(OipInferTest, OutputsAreWrittenIntoTheirWindows) {
  ModelInferRequest request = Request();
  auto* y = request.add_outputs();
  y->set_name("y");
  SetWindow(y->mutable_parameters(), "r", 512, 64);
  request.add_outputs()->set_name("w");
  absl::StatusOr<PreparedOipInfer> run =
      PrepareOipInfer(request, registry_, absl::Now(), absl::InfiniteFuture());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_THAT(run->options.requested_outputs, ::testing::ElementsAre("y", "w"));
  inference::ModelInferResponse response;
  ASSERT_TRUE(FinishOipInfer(request, *run,
                             {Floats("y", {5, 6, 7}), Floats("w", {9})},
                             &response)
                  .ok());
  EXPECT_EQ(floats(512)[0], 5);
  EXPECT_EQ(floats(512)[2], 7);
  // Past the output, the window is untouched.
  EXPECT_EQ(memory_[kRegionOffset + 512 + 12], 0xEE);
  ASSERT_EQ(response.outputs_size(), 2);
  EXPECT_EQ(response.outputs(0).name(), "y");
  EXPECT_EQ(response.outputs(0).datatype(), "FP32");
  EXPECT_THAT(response.outputs(0).shape(), ::testing::ElementsAre(3));
  // One entry per output: y's empty (its bytes are in the window).
  ASSERT_EQ(response.raw_output_contents_size(), 2);
  EXPECT_TRUE(response.raw_output_contents(0).empty());
  EXPECT_EQ(response.raw_output_contents(1).size(), 4u);
  EXPECT_EQ(response.id(), "req");
}

TEST_F(OipInferTest, BoundsErrorsAreInvalidArgument) {
  struct Case {
    const char* what;
    ModelInferRequest request;
    const char* message;
  };
  ModelInferRequest unregistered = Request();
  (*unregistered.mutable_inputs(0)
        ->mutable_parameters())["shared_memory_region"]
      .set_string_param("nope");
  ModelInferRequest output_past_end = Request();
  auto* y = output_past_end.add_outputs();
  y->set_name("y");
  SetWindow(y->mutable_parameters(), "r", kRegionBytes + 4, 4);
  ModelInferRequest output_too_long = Request();
  y = output_too_long.add_outputs();
  y->set_name("y");
  SetWindow(y->mutable_parameters(), "r", kRegionBytes - 8, 16);
  const std::vector<Case> cases = {
      {"unregistered region", unregistered, "nope"},
      {"offset past the end", Request(kRegionBytes + 16, 16), "x"},
      {"region too small", Request(kRegionBytes - 8, 16), "x"},
      {"window not the tensor's size", Request(0, 12), "needs 16"},
      {"output offset past the end", output_past_end, "y"},
      {"output window past the end", output_too_long, "y"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<PreparedOipInfer> run = PrepareOipInfer(
        c.request, registry_, absl::Now(), absl::InfiniteFuture());
    EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument)
        << c.what << ": " << run.status();
    EXPECT_THAT(run.status().message(), HasSubstr(c.message)) << c.what;
  }
}

TEST_F(OipInferTest, SharedMemoryWithContentsIsInvalid) {
  ModelInferRequest with_contents = Request();
  for (int i = 0; i < 4; ++i) {
    with_contents.mutable_inputs(0)->mutable_contents()->add_fp32_contents(1);
  }
  // Raw bytes for x too: one entry per input, where one per input outside
  // shared memory is due.
  ModelInferRequest with_raw = Request();
  with_raw.add_raw_input_contents(std::string(16, '\0'));
  ModelInferRequest offset_alone = Request();
  offset_alone.mutable_inputs(1)
      ->mutable_parameters()
      ->
      operator[]("shared_memory_offset")
      .set_int64_param(0);
  ModelInferRequest no_size = Request();
  no_size.mutable_inputs(0)->mutable_parameters()->erase(
      "shared_memory_byte_size");
  for (const ModelInferRequest* r :
       {&with_contents, &with_raw, &offset_alone, &no_size}) {
    absl::StatusOr<PreparedOipInfer> run =
        PrepareOipInfer(*r, registry_, absl::Now(), absl::InfiniteFuture());
    EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument)
        << run.status();
  }
}

TEST_F(OipInferTest, AnOutputTooLargeForItsWindowWritesNothing) {
  ModelInferRequest request = Request();
  auto* y = request.add_outputs();
  y->set_name("y");
  SetWindow(y->mutable_parameters(), "r", 0, 64);
  auto* w = request.add_outputs();
  w->set_name("w");
  SetWindow(w->mutable_parameters(), "r", 64, 4);
  absl::StatusOr<PreparedOipInfer> run =
      PrepareOipInfer(request, registry_, absl::Now(), absl::InfiniteFuture());
  ASSERT_TRUE(run.ok()) << run.status();
  inference::ModelInferResponse response;
  absl::Status s = FinishOipInfer(
      request, *run, {Floats("y", {1}), Floats("w", {1, 2})}, &response);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'w'"));
  // y fitted, but no window is written when one is refused.
  EXPECT_EQ(memory_[kRegionOffset], 0xEE);
  EXPECT_EQ(memory_[kRegionOffset + 64], 0xEE);
}

TEST_F(OipInferTest, RunsKeepTheirRegionsAfterUnregister) {
  const float xs[] = {1, 2, 3, 4};
  std::memcpy(floats(128), xs, sizeof(xs));
  absl::StatusOr<PreparedOipInfer> run = PrepareOipInfer(
      Request(), registry_, absl::Now(), absl::InfiniteFuture());
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(registry_.Unregister("r").ok());
  EXPECT_EQ(run->inputs[1].tensor.data<float>()[2], 3);
  EXPECT_EQ(
      PrepareOipInfer(Request(), registry_, absl::Now(), absl::InfiniteFuture())
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint
