// Device benchmarks (issue 3): stream and event latencies, copy bandwidth.
// Prints figures and ratios against a baseline measured in the same run;
// asserts nothing (machines here are shared and noisy).
//
//   bazel run //bench:device_bench
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/device_registry.h"

namespace glint {
namespace {

double MedianMicros(std::vector<absl::Duration> samples) {
  std::sort(samples.begin(), samples.end());
  return absl::ToDoubleMicroseconds(samples[samples.size() / 2]);
}

std::unique_ptr<DeviceManager> MakeSim(int id) {
  DeviceConfig config;
  config.memory_bytes = 1 * kGiB;
  auto device = DeviceRegistry::Global().Create(id, config);
  if (!device.ok()) {
    std::fprintf(stderr, "device_bench: %s\n",
                 device.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(device);
}

// Baseline: handing one item to another thread and hearing back (the floor
// for any queue served by a worker thread).
double ThreadHandoffMicros(int iterations) {
  absl::Mutex mu;
  int requested = 0, served = 0;
  bool stop = false;
  std::thread worker([&] {
    absl::MutexLock lock(&mu);
    while (true) {
      auto pending = [&] { return stop || requested > served; };
      mu.Await(absl::Condition(&pending));
      if (stop) return;
      ++served;
    }
  });
  std::vector<absl::Duration> samples;
  for (int i = 0; i < iterations; ++i) {
    const absl::Time start = absl::Now();
    absl::MutexLock lock(&mu);
    ++requested;
    auto done = [&] { return served == requested; };
    mu.Await(absl::Condition(&done));
    samples.push_back(absl::Now() - start);
  }
  {
    absl::MutexLock lock(&mu);
    stop = true;
  }
  worker.join();
  return MedianMicros(samples);
}

double EmptyItemMicros(DeviceManager& device, int iterations) {
  Stream& stream = device.default_stream();
  std::vector<absl::Duration> samples;
  for (int i = 0; i < iterations; ++i) {
    const absl::Time start = absl::Now();
    stream.EnqueueHostCallback([] { return absl::OkStatus(); });
    (void)stream.Synchronize();
    samples.push_back(absl::Now() - start);
  }
  return MedianMicros(samples);
}

// From the moment an item on device A finishes to the moment an item on
// device B, waiting on A's event, starts.
double CrossDeviceWaitMicros(DeviceManager& a, DeviceManager& b,
                             int iterations) {
  std::vector<absl::Duration> samples;
  for (int i = 0; i < iterations; ++i) {
    absl::Notification go;
    absl::Time signalled, seen;
    Event event;
    a.default_stream().EnqueueHostCallback([&] {
      go.WaitForNotification();
      signalled = absl::Now();
      return absl::OkStatus();
    });
    a.default_stream().Record(event);
    b.default_stream().Wait(event);
    b.default_stream().EnqueueHostCallback([&] {
      seen = absl::Now();
      return absl::OkStatus();
    });
    go.Notify();
    (void)b.default_stream().Synchronize();
    samples.push_back(seen - signalled);
  }
  return MedianMicros(samples);
}

void CopyBandwidth(DeviceManager& device, size_t bytes, int iterations) {
  Tensor host = *Tensor::Create(DType::kUInt8,
                                Shape({static_cast<int64_t>(bytes)}));
  std::memset(host.raw_data(), 7, bytes);
  void* plain = AlignedAlloc(bytes);
  std::vector<absl::Duration> copies, memcpys;
  // One destination reused, as the baseline's: first-touch page faults of
  // fresh memory would otherwise dominate large copies.
  DeviceTensor dst;
  dst.buffer = *device.Allocate(bytes);
  for (int i = 0; i < iterations; ++i) {
    const absl::Time start = absl::Now();
    device.CopyToDevice(device.default_stream(), &host, &dst);
    (void)device.default_stream().Synchronize();
    copies.push_back(absl::Now() - start);
    const absl::Time m = absl::Now();
    std::memcpy(plain, host.raw_data(), bytes);
    memcpys.push_back(absl::Now() - m);
  }
  std::free(plain);
  const double copy_us = MedianMicros(copies);
  const double memcpy_us = MedianMicros(memcpys);
  std::printf("  H2D %6.1f MiB: %8.2f GB/s   memcpy %8.2f GB/s   ratio %.2f\n",
              bytes / double(kMiB), bytes / copy_us / 1e3,
              bytes / memcpy_us / 1e3, memcpy_us / copy_us);
}

}  // namespace
}  // namespace glint

int main() {
  using namespace glint;
  RegisterBuiltinDeviceTypes();
  auto a = MakeSim(0);
  auto b = MakeSim(1);
  constexpr int kIterations = 2000;

  const double handoff = ThreadHandoffMicros(kIterations);
  const double empty = EmptyItemMicros(*a, kIterations);
  const double wait = CrossDeviceWaitMicros(*a, *b, kIterations / 4);
  std::printf("sim device, medians (baseline: a bare thread hand-off, "
              "%.1f us)\n", handoff);
  std::printf("  empty item enqueue->completion: %7.1f us   ratio %.2f\n",
              empty, empty / handoff);
  std::printf("  cross-device event wait:        %7.1f us   ratio %.2f\n",
              wait, wait / handoff);
  CopyBandwidth(*a, 1 * kMiB, 200);
  CopyBandwidth(*a, 64 * kMiB, 10);
  return 0;
}
