#include "devices/sim/sim_device.h"

#include <vector>

#include "gtest/gtest.h"

namespace glint {
namespace {

std::unique_ptr<SimDevice> MakeDevice(int id, uint64_t memory) {
  DeviceConfig config;
  config.memory_bytes = memory;
  auto d = SimDevice::Create(id, config);
  EXPECT_TRUE(d.ok()) << d.status();
  return *std::move(d);
}

TEST(SimDeviceTest, MemoryFillsToTheLastByte) {
  auto device = MakeDevice(0, 4096);
  auto all = device->Allocate(4096);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(device->AvailableMemory(), 0u);
  EXPECT_EQ(device->Allocate(1).status().code(),
            absl::StatusCode::kResourceExhausted);
  all->reset();
  EXPECT_EQ(device->AvailableMemory(), 4096u);
  auto a = device->Allocate(4095);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(device->Allocate(1).ok());  // Freed immediately again.
}

TEST(SimDeviceTest, RejectsUnknownParameters) {
  DeviceConfig config;
  config.params["turbo"] = "on";
  EXPECT_EQ(SimDevice::Create(0, config).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SimDeviceTest, CopiesRoundTripThroughTwoDevices) {
  auto a = MakeDevice(0, 1 << 20), b = MakeDevice(1, 1 << 20);
  Tensor host =
      Tensor::FromVector<float>(DType::kFloat32, Shape({2, 2}), {1, 2, 3, 4});
  DeviceTensor on_a, on_b;
  Tensor back;
  Stream* sa = *a->AcquireStream();
  Stream* sb = *b->AcquireStream();
  a->CopyToDevice(*sa, &host, &on_a);
  Event copied;
  sa->Record(copied);
  sb->Wait(copied);
  b->CopyFromPeer(*sb, &on_a, &on_b);
  b->CopyToHost(*sb, &on_b, &back);
  ASSERT_TRUE(sb->Synchronize().ok());
  ASSERT_EQ(back.shape(), Shape({2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(back.data<float>()[i], i + 1.0f);
  EXPECT_EQ(a->AvailableMemory(), (1u << 20) - 16);
  EXPECT_EQ(b->AvailableMemory(), (1u << 20) - 16);
  a->ReleaseStream(sa);
  b->ReleaseStream(sb);
}

Graph ReluGraph() {
  Graph g;
  g.opset_version = 13;
  g.inputs = {{"x", DType::kFloat32, Shape({4})}};
  g.outputs = {{"y", DType::kFloat32, Shape({4})}};
  g.initializers["b"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, 1, -1, -1});
  g.nodes = {Node{"add", "Add", "", {"x", "b"}, {"t"}, {}},
             Node{"relu", "Relu", "", {"t"}, {"y"}, {}}};
  for (const char* v : {"x", "b", "t", "y"}) {
    g.values[v] = {v, DType::kFloat32, Shape({4})};
  }
  return g;
}

TEST(SimDeviceTest, LoadAndLaunchComputesAndAccountsMemory) {
  auto device = MakeDevice(0, 1 << 20);
  auto compiled = device->backend().Compile(ReluGraph());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_EQ((*compiled)->constant_bytes(), 64u);  // One aligned constant.
  EXPECT_EQ((*compiled)->arena_bytes(), 64u);     // "t".
  auto loaded = device->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(device->AvailableMemory(), (1u << 20) - 128);

  Tensor x =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {-2, 0, 2, 0.5});
  DeviceTensor dx, dy;
  Tensor y;
  Stream* s = *device->AcquireStream();
  device->CopyToDevice(*s, &x, &dx);
  device->Launch(*s, **loaded, {&dx}, {&dy});
  device->CopyToHost(*s, &dy, &y);
  ASSERT_TRUE(s->Synchronize().ok());
  const std::vector<float> want = {0, 1, 1, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], want[i]);
  device->ReleaseStream(s);
  dx.buffer.reset();
  dy.buffer.reset();
  loaded->reset();
  EXPECT_EQ(device->AvailableMemory(), 1u << 20);
}

TEST(SimDeviceTest, LoadThatDoesNotFitIsResourceExhausted) {
  auto device = MakeDevice(0, 100);
  auto compiled = device->backend().Compile(ReluGraph());
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ(device->Load(*compiled).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(device->AvailableMemory(), 100u);
}

TEST(SimDeviceTest, UnsupportedOpIsUnimplemented) {
  DeviceConfig config;
  config.params["unsupported_ops"] = "Relu";
  auto device = SimDevice::Create(0, config);
  ASSERT_TRUE(device.ok());
  EXPECT_FALSE((*device)->backend().IsOpSupported("Relu"));
  absl::Status s = (*device)->backend().Compile(ReluGraph()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("relu"), absl::string_view::npos) << s;
}

TEST(SimDeviceTest, StoppedDeviceFailsFast) {
  auto device = MakeDevice(0, 1 << 20);
  Stream* s = *device->AcquireStream();
  device->Stop();
  Tensor x = Tensor::FromVector<float>(DType::kFloat32, Shape({1}), {1});
  DeviceTensor dx;
  device->CopyToDevice(*s, &x, &dx);
  EXPECT_EQ(s->Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(device->Allocate(8).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(device->AcquireStream().status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace glint
