#include "devices/fault/fault_injecting_device.h"

#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "core/graph.h"
#include "devices/device_registry.h"
#include "devices/sim/sim_device.h"
#include "devices/stream_internal.h"
#include "gtest/gtest.h"

namespace glint {

using devices_internal::StreamInternal;

namespace {

constexpr uint64_t kCapacity = 1 << 20;

// y = Relu(x + [1, 1, -1, -1]).
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

DeviceRegistry& Registry() {
  RegisterBuiltinDeviceTypes();
  EXPECT_TRUE(RegisterFaultInjectingDeviceType(DeviceRegistry::Global()).ok());
  return DeviceRegistry::Global();
}

absl::StatusOr<std::unique_ptr<DeviceManager>> CreateFaulty(
    std::map<std::string, std::string> params, int id = 0) {
  DeviceConfig config;
  config.type = "faulty";
  config.memory_bytes = kCapacity;
  config.params = std::move(params);
  return Registry().Create(id, config);
}

std::unique_ptr<FaultInjectingDevice> MakeFaulty(
    std::map<std::string, std::string> params = {}) {
  absl::StatusOr<std::unique_ptr<DeviceManager>> d =
      CreateFaulty(std::move(params));
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return nullptr;
  return std::unique_ptr<FaultInjectingDevice>(
      static_cast<FaultInjectingDevice*>(d->release()));
}

// A loaded ReluGraph and the tensors of one launch of it.
struct ReluRun {
  std::unique_ptr<LoadedFunction> loaded;
  Tensor x = Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                       {-2, 0, 2, 0.5});
  DeviceTensor dx, dy;
  Tensor y;

  void Enqueue(DeviceManager& device, Stream& s) {
    device.CopyToDevice(s, &x, &dx);
    device.Launch(s, *loaded, {&dx}, {&dy});
    device.CopyToHost(s, &dy, &y);
  }
  void ExpectResult() const {
    ASSERT_EQ(y.shape(), Shape({4}));
    const std::vector<float> want = {0, 1, 1, 0};
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], want[i]) << i;
  }
};

std::unique_ptr<LoadedFunction> LoadRelu(DeviceManager& device) {
  auto compiled = device.backend().Compile(ReluGraph());
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  if (!compiled.ok()) return nullptr;
  auto loaded = device.Load(*compiled);
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return loaded.ok() ? *std::move(loaded) : nullptr;
}

TEST(FaultInjectingDeviceTest, RegistrationIsIdempotent) {
  Registry();
  EXPECT_TRUE(RegisterFaultInjectingDeviceType(DeviceRegistry::Global()).ok());
  EXPECT_TRUE(DeviceRegistry::Global().IsRegistered("faulty"));
  DeviceRegistry own;  // Any registry can hold the type.
  EXPECT_TRUE(RegisterFaultInjectingDeviceType(own).ok());
  EXPECT_TRUE(own.IsRegistered("faulty"));
}

TEST(FaultInjectingDeviceTest, PassThroughForwardsInnerParams) {
  auto device = MakeFaulty({{"compute_gflops", "5"}});
  ASSERT_NE(device, nullptr);
  DeviceInfo info = device->GetDeviceInfo();
  // Placement must treat it as the device it wraps; the name tells it apart.
  EXPECT_EQ(info.type, "sim");
  EXPECT_EQ(info.name.rfind("faulty:", 0), 0u) << info.name;
  EXPECT_EQ(info.compute_flops, 5e9);
  EXPECT_EQ(info.memory_bytes, kCapacity);
  EXPECT_NE(dynamic_cast<SimDevice*>(&device->inner()), nullptr);
}

TEST(FaultInjectingDeviceTest, BadParamsAreRefused) {
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{
           {"fail_launch", "two"},
           {"fail_launch", "-1"},
           {"hang_launch", "1.5"},
           {"fail_alloc_after_bytes", "-3"},
           {"launch_delay_ms", "soon"},
           {"launch_delay_ms", "-1"},
           {"dead", "maybe"},
           {"inner", ""},
           {"turbo", "on"},  // Passed on: the sim device refuses it.
       }) {
    EXPECT_EQ(CreateFaulty({{key, value}}).status().code(),
              absl::StatusCode::kInvalidArgument)
        << key << "=" << value;
  }
  EXPECT_EQ(CreateFaulty({{"inner", "no_such_type"}}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(FaultInjectingDeviceTest, AllocationFailsAfterNBytesCumulatively) {
  auto device = MakeFaulty({{"fail_alloc_after_bytes", "1000"}});
  ASSERT_NE(device, nullptr);
  auto a = device->Allocate(600);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = device->Allocate(400);  // Exactly the limit.
  ASSERT_TRUE(b.ok()) << b.status();
  absl::Status over = device->Allocate(1).status();
  EXPECT_EQ(over.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StartsWith(over.message(), "injected:")) << over;
  EXPECT_EQ(device->allocated_bytes(), 1000u);

  // Memory returns to the device, but the count is cumulative.
  a->reset();
  b->reset();
  EXPECT_EQ(device->AvailableMemory(), kCapacity);
  EXPECT_EQ(device->Allocate(1).status().code(),
            absl::StatusCode::kResourceExhausted);

  // Lifting the limit (or setting a new one) restarts the count.
  device->SetAllocationLimit(std::nullopt);
  EXPECT_TRUE(device->Allocate(4096).ok());
  device->SetAllocationLimit(10);
  EXPECT_TRUE(device->Allocate(10).ok());
  EXPECT_EQ(device->Allocate(1).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(device->AvailableMemory(), kCapacity);
}

TEST(FaultInjectingDeviceTest, AllocationLimitCoversCopiesAndLoads) {
  auto device = MakeFaulty();
  ASSERT_NE(device, nullptr);
  device->SetAllocationLimit(8);
  Tensor x = Tensor::FromVector<float>(DType::kFloat32, Shape({4}),
                                       {1, 2, 3, 4});  // 16 bytes.
  DeviceTensor dx;
  Stream* s = *device->AcquireStream();
  device->CopyToDevice(*s, &x, &dx);
  EXPECT_EQ(s->Synchronize().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(dx.buffer, nullptr);
  ASSERT_TRUE(s->ClearError().ok());

  auto compiled = device->backend().Compile(ReluGraph());
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ(device->Load(*compiled).status().code(),
            absl::StatusCode::kResourceExhausted);

  device->SetAllocationLimit(16);
  device->CopyToDevice(*s, &x, &dx);
  EXPECT_TRUE(s->Synchronize().ok());
  ASSERT_NE(dx.buffer, nullptr);
  EXPECT_EQ(device->allocated_bytes(), 16u);
  // A peer copy of dx (16 bytes more) is over the limit.
  DeviceTensor copy;
  device->CopyFromPeer(*s, &dx, &copy);
  EXPECT_EQ(s->Synchronize().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(copy.buffer, nullptr);
  ASSERT_TRUE(s->ClearError().ok());
  device->ReleaseStream(s);
  dx.buffer.reset();
  EXPECT_EQ(device->AvailableMemory(), kCapacity);
}

TEST(FaultInjectingDeviceTest, KthLaunchFailsAndTheDeviceKeepsWorking) {
  auto device = MakeFaulty({{"fail_launch", "2"}});
  ASSERT_NE(device, nullptr);
  ReluRun first, second, third;
  first.loaded = LoadRelu(*device);
  ASSERT_NE(first.loaded, nullptr);
  const uint64_t after_load = device->AvailableMemory();
  Stream* s = *device->AcquireStream();

  first.Enqueue(*device, *s);
  ASSERT_TRUE(s->Synchronize().ok());
  first.ExpectResult();

  second.loaded = std::move(first.loaded);
  second.Enqueue(*device, *s);
  bool skipped = true;
  StreamInternal::Enqueue(*s, [&] {
    skipped = false;
    return absl::OkStatus();
  });
  absl::Status failed = s->Synchronize();
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(failed.message(), "injected launch failure"))
      << failed;
  EXPECT_TRUE(skipped);
  EXPECT_EQ(second.dy.buffer, nullptr);  // The launch never ran.
  EXPECT_EQ(second.y.raw_data(), nullptr);  // Nor the copy after it.

  // The owner clears the error; the stream and device work again.
  ASSERT_TRUE(s->ClearError().ok());
  third.loaded = std::move(second.loaded);
  third.Enqueue(*device, *s);
  ASSERT_TRUE(s->Synchronize().ok());
  third.ExpectResult();
  EXPECT_EQ(device->launch_count(), 3);
  device->ReleaseStream(s);

  // Every buffer's memory returns.
  first.dx.buffer.reset();
  first.dy.buffer.reset();
  second.dx.buffer.reset();
  third.dx.buffer.reset();
  third.dy.buffer.reset();
  EXPECT_EQ(device->AvailableMemory(), after_load);
  third.loaded.reset();
  EXPECT_EQ(device->AvailableMemory(), kCapacity);
}

TEST(FaultInjectingDeviceTest, AFailedLaunchFailsOnlyItsViewOfASharedStream) {
  // Two users' work interleaved on one shared stream: the second user's
  // launch is the one that fails; the first's, before and after it, are
  // exactly right.
  auto device = MakeFaulty({{"fail_launch", "2"}});
  ASSERT_NE(device, nullptr);
  std::unique_ptr<LoadedFunction> loaded = LoadRelu(*device);
  ASSERT_NE(loaded, nullptr);
  auto good = device->OpenSharedStream({}), bad = device->OpenSharedStream({});
  ASSERT_TRUE(good.ok() && bad.ok());
  ReluRun first, failing, last;  // Their `loaded` is unused: one for all.
  device->CopyToDevice(**good, &first.x, &first.dx);
  device->CopyToDevice(**bad, &failing.x, &failing.dx);
  device->CopyToDevice(**good, &last.x, &last.dx);
  device->Launch(**good, *loaded, {&first.dx}, {&first.dy});      // 1
  device->Launch(**bad, *loaded, {&failing.dx}, {&failing.dy});   // 2: fails
  device->CopyToHost(**bad, &failing.dy, &failing.y);             // Skipped.
  device->Launch(**good, *loaded, {&last.dx}, {&last.dy});        // 3
  device->CopyToHost(**good, &first.dy, &first.y);
  device->CopyToHost(**good, &last.dy, &last.y);
  Event bad_done;
  (*bad)->Record(bad_done);
  const absl::Status failed = (*bad)->Synchronize();
  EXPECT_EQ(failed.code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(absl::StrContains(failed.message(), "injected launch failure"))
      << failed;
  EXPECT_EQ(bad_done.Synchronize(), failed);
  EXPECT_EQ(failing.dy.buffer, nullptr);
  EXPECT_EQ(failing.y.raw_data(), nullptr);
  ASSERT_TRUE((*good)->Synchronize().ok());
  first.ExpectResult();
  last.ExpectResult();
  EXPECT_EQ(device->launch_count(), 3);
}

TEST(FaultInjectingDeviceTest, LaunchDelaySlowsEveryLaunch) {
  auto device = MakeFaulty({{"launch_delay_ms", "30"}});
  ASSERT_NE(device, nullptr);
  ReluRun run;
  run.loaded = LoadRelu(*device);
  ASSERT_NE(run.loaded, nullptr);
  Stream* s = *device->AcquireStream();
  Event start({.enable_timing = true}), end({.enable_timing = true});
  device->CopyToDevice(*s, &run.x, &run.dx);
  s->Record(start);
  device->Launch(*s, *run.loaded, {&run.dx}, {&run.dy});
  device->Launch(*s, *run.loaded, {&run.dx}, {&run.dy});
  s->Record(end);
  device->CopyToHost(*s, &run.dy, &run.y);
  ASSERT_TRUE(s->Synchronize().ok());
  run.ExpectResult();
  absl::StatusOr<double> ms = Event::ElapsedMillis(start, end);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GE(*ms, 60.0);
  device->ReleaseStream(s);
}

TEST(FaultInjectingDeviceTest, StopCutsALongDelayShort) {
  auto device = MakeFaulty();
  ASSERT_NE(device, nullptr);
  ReluRun run;
  run.loaded = LoadRelu(*device);
  ASSERT_NE(run.loaded, nullptr);
  device->SetLaunchDelay(absl::Hours(1));
  Stream* s = *device->AcquireStream();
  run.Enqueue(*device, *s);
  EXPECT_EQ(s->Synchronize(absl::Now() + absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  device->Stop();  // Must not wait out the hour.
  EXPECT_EQ(s->Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(run.dy.buffer, nullptr);
}

TEST(FaultInjectingDeviceTest, HungLaunchBlocksItsStreamUntilKilled) {
  auto device = MakeFaulty({{"hang_launch", "1"}});
  ASSERT_NE(device, nullptr);
  ReluRun run;
  run.loaded = LoadRelu(*device);
  ASSERT_NE(run.loaded, nullptr);
  Stream* s = *device->AcquireStream();
  run.Enqueue(*device, *s);
  Event after;
  s->Record(after);
  // Another stream of the device is not affected by the hang.
  Stream* other = *device->AcquireStream();
  Tensor z = Tensor::FromVector<float>(DType::kFloat32, Shape({1}), {7});
  DeviceTensor dz;
  device->CopyToDevice(*other, &z, &dz);
  ASSERT_TRUE(other->Synchronize().ok());

  EXPECT_EQ(s->Synchronize(absl::Now() + absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(s->Query());
  EXPECT_FALSE(after.Query());
  device->Kill();
  EXPECT_TRUE(device->dead());
  EXPECT_EQ(s->Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(after.Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(run.y.raw_data(), nullptr);
  dz.buffer.reset();
}

TEST(FaultInjectingDeviceTest, HungLaunchIsReleasedByStop) {
  auto device = MakeFaulty();
  ASSERT_NE(device, nullptr);
  ReluRun run;
  run.loaded = LoadRelu(*device);
  ASSERT_NE(run.loaded, nullptr);
  Stream* s = *device->AcquireStream();
  run.Enqueue(*device, *s);  // Launch 1: not hung.
  ASSERT_TRUE(s->Synchronize().ok());
  device->SetHangLaunch(2);
  run.Enqueue(*device, *s);  // Launch 2: hangs.
  EXPECT_FALSE(s->Query());
  device->Stop();
  EXPECT_EQ(s->Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(device->dead());
  EXPECT_EQ(device->Allocate(8).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(FaultInjectingDeviceTest, KilledDeviceFailsEverythingFast) {
  auto device = MakeFaulty();
  ASSERT_NE(device, nullptr);
  ReluRun run;
  run.loaded = LoadRelu(*device);
  ASSERT_NE(run.loaded, nullptr);
  auto compiled = device->backend().Compile(ReluGraph());
  ASSERT_TRUE(compiled.ok());
  Stream* s = *device->AcquireStream();
  auto owned = device->CreateStream(1);
  ASSERT_TRUE(owned.ok());

  device->Kill();
  device->Kill();  // Idempotent.
  for (absl::Status st :
       {device->Allocate(8).status(), device->AcquireStream().status(),
        device->CreateStream(0).status(), device->Load(*compiled).status()}) {
    EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  }
  // Enqueued work fails, on any of its streams.
  for (Stream* stream : {s, owned->get(), &device->default_stream()}) {
    run.Enqueue(*device, *stream);
    EXPECT_EQ(stream->Synchronize().code(), absl::StatusCode::kUnavailable);
  }
  EXPECT_EQ(run.dx.buffer, nullptr);
}

TEST(FaultInjectingDeviceTest, DeadAtCreation) {
  auto device = MakeFaulty({{"dead", "true"}});
  ASSERT_NE(device, nullptr);
  EXPECT_TRUE(device->dead());
  EXPECT_EQ(device->Allocate(8).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(device->AcquireStream().status().code(),
            absl::StatusCode::kUnavailable);
  Tensor x = Tensor::FromVector<float>(DType::kFloat32, Shape({1}), {1});
  DeviceTensor dx;
  device->CopyToDevice(device->default_stream(), &x, &dx);
  EXPECT_EQ(device->default_stream().Synchronize().code(),
            absl::StatusCode::kUnavailable);
}

TEST(FaultInjectingDeviceTest, PeerCopiesWithAPlainSimDevice) {
  auto faulty = MakeFaulty();
  ASSERT_NE(faulty, nullptr);
  DeviceConfig config;
  config.memory_bytes = kCapacity;
  auto sim = Registry().Create(1, config);
  ASSERT_TRUE(sim.ok());
  Tensor x = Tensor::FromVector<float>(DType::kFloat32, Shape({2}), {3, 4});
  DeviceTensor on_faulty, on_sim, back;
  Tensor out;
  Stream* a = *faulty->AcquireStream();
  Stream* b = *(*sim)->AcquireStream();
  faulty->CopyToDevice(*a, &x, &on_faulty);
  Event copied;
  a->Record(copied);
  b->Wait(copied);
  (*sim)->CopyFromPeer(*b, &on_faulty, &on_sim);
  Event on_b;
  b->Record(on_b);
  a->Wait(on_b);
  faulty->CopyFromPeer(*a, &on_sim, &back);
  faulty->CopyToHost(*a, &back, &out);
  ASSERT_TRUE(a->Synchronize().ok());
  ASSERT_EQ(out.num_elements(), 2);
  EXPECT_EQ(out.data<float>()[0], 3);
  EXPECT_EQ(out.data<float>()[1], 4);
  EXPECT_EQ(faulty->allocated_bytes(), 16u);
  faulty->ReleaseStream(a);
  (*sim)->ReleaseStream(b);
}

}  // namespace
}  // namespace glint
