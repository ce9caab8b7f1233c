// glintd's footprint (issue 15, point 5 and bench 7(d)): its RSS idle,
// after adding a ~48 MiB network, after a run and after removing it, then
// over many add/run/remove cycles. Prints figures; asserts nothing (a
// failed call ends the run with exit status 1).
//
//   bazel run -c opt //bench:rss_bench -- [cycles=50] [width=2048]
//       [layers=3] [devices=sim*2:memory=1GiB]
//
// With cycles=1 8000 4 sim*2:memory=1GiB it is issue 31's 1 GB model
// (976 MiB of weights); "add's peak" is VmHWM over the AddNetwork call
// (reset through /proc/PID/clear_refs just before it) minus idle, against
// the model's bytes.
//
// The network is `layers` MatMul+Relu layers of width×width float weights
// (2048 wide, 3 layers: 48 MiB) at batch 64. RSS is VmRSS of
// /proc/PID/status. "weights+arenas" is what the network holds in device
// memory: the devices' used bytes after the add minus before (constants
// plus the activation arena each loaded partition reserves), read from
// GetDevices; the add's ratio is the RSS increase over it (1.0: glintd
// holds nothing beyond the device memory the model needs). Readings are
// the least over 500 ms after each call (SettledRss); the one taken as the
// AddNetwork answer arrives is printed beside.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/glint_client.h"
#include "core/tensor.h"
#include "onnx/test_models.h"
#include "tests/process_util.h"

namespace glint {
namespace {

constexpr int64_t kBatch = 64;
constexpr double kMiB = 1024.0 * 1024.0;

// Bytes allocated on every device together.
absl::StatusOr<int64_t> DeviceBytesUsed(GlintClient& client) {
  absl::StatusOr<std::vector<DeviceInfo>> devices = client.GetDevices();
  if (!devices.ok()) return devices.status();
  int64_t used = 0;
  for (const DeviceInfo& d : *devices) {
    used += static_cast<int64_t>(d.memory_bytes - d.available_memory_bytes);
  }
  return used;
}

double MiB(int64_t bytes) { return static_cast<double>(bytes) / kMiB; }

// The least RSS of `pid` over the next `window`, sampled every 10 ms: an
// answered call's request is freed by gRPC just after the answer leaves,
// so a reading taken at once may still hold an AddNetwork's model bytes.
int64_t SettledRss(pid_t pid, absl::Duration window = absl::Milliseconds(500)) {
  const absl::Time end = absl::Now() + window;
  int64_t least = testing::ProcessRssBytes(pid);
  while (absl::Now() < end) {
    absl::SleepFor(absl::Milliseconds(10));
    least = std::min(least, testing::ProcessRssBytes(pid));
  }
  return least;
}

int Run(int cycles, int64_t width, int layers, const std::string& devices) {
  absl::StatusOr<std::unique_ptr<testing::GlintdProcess>> glintd =
      testing::GlintdProcess::Start(
          {absl::StrCat("--devices=", devices), "--log_level=warning"});
  if (!glintd.ok()) {
    std::cerr << "glintd: " << glintd.status() << "\n";
    return 1;
  }
  GlintClient& client = (*glintd)->client();
  const pid_t pid = (*glintd)->pid();
  const std::string model = testing::MakeDeepMlpModel(kBatch, width, layers);
  const int64_t weights = width * width * layers * 4;
  const std::vector<NamedTensor> inputs = {
      {"x", Tensor::FromVector(DType::kFloat32, Shape({kBatch, width}),
                               std::vector<float>(kBatch * width, 0.5f))}};

  // Adds get a client of their own without the harness's 60 s deadline:
  // a 1 GB model's add takes longer on a loaded 2-core machine.
  ClientOptions slow;
  slow.rpc_timeout = absl::Minutes(15);
  absl::StatusOr<std::unique_ptr<GlintClient>> add_client =
      GlintClient::Connect((*glintd)->address(), slow);
  if (!add_client.ok()) {
    std::cerr << "connect: " << add_client.status() << "\n";
    return 1;
  }
  auto add = [&]() -> absl::Status {
    return (*add_client)->AddNetwork("mlp", model).status();
  };
  auto run = [&]() -> absl::Status {
    absl::StatusOr<std::vector<NamedTensor>> out =
        client.RunNetwork("mlp", inputs);
    if (!out.ok()) return out.status();
    if (out->size() != 1 ||
        out->front().tensor.shape() != Shape({kBatch, width})) {
      return absl::InternalError("the run gave the wrong outputs");
    }
    return absl::OkStatus();
  };
  auto remove = [&]() { return client.RemoveNetwork("mlp"); };
  auto fail = [](absl::string_view what, const absl::Status& s) {
    std::cerr << what << ": " << s << "\n";
    return 1;
  };

  std::printf(
      "glintd: %s; network: %d MatMul layers of %lldx%lld floats, batch "
      "%lld (weights %.1f MiB, model %.1f MiB)\n",
      devices.c_str(), layers, static_cast<long long>(width),
      static_cast<long long>(width), static_cast<long long>(kBatch),
      MiB(weights), MiB(static_cast<int64_t>(model.size())));
  absl::StatusOr<int64_t> used_before = DeviceBytesUsed(client);
  if (!used_before.ok()) return fail("GetDevices", used_before.status());
  const int64_t idle = testing::ProcessRssBytes(pid);
  std::printf("idle:           RSS %8.1f MiB\n", MiB(idle));

  // Without /proc/PID/clear_refs (an old kernel, a sandbox) the peak is
  // not measured; the rest is.
  const absl::Status peak_reset = testing::ResetPeakRss(pid);
  const absl::Time start = absl::Now();
  if (absl::Status s = add(); !s.ok()) return fail("AddNetwork", s);
  const absl::Duration add_time = absl::Now() - start;
  const int64_t at_answer = testing::ProcessRssBytes(pid);
  // Issue 31's point 6: the most glintd held while adding, over idle,
  // against the model's bytes (the devices' copy of the weights counts:
  // simulated device memory is glintd's own).
  const int64_t peak = testing::ProcessPeakRssBytes(pid);
  if (peak_reset.ok() && peak > 0) {
    std::printf(
        "add's peak:     RSS %8.1f MiB  (+%.1f MiB over idle; / model "
        "bytes = %.2f)\n",
        MiB(peak), MiB(peak - idle),
        static_cast<double>(peak - idle) / static_cast<double>(model.size()));
  } else {
    std::printf("add's peak:     n/a (%s)\n",
                peak_reset.ok() ? "VmHWM unreadable"
                                : std::string(peak_reset.message()).c_str());
  }
  const int64_t after_add = SettledRss(pid);
  absl::StatusOr<int64_t> used_after = DeviceBytesUsed(client);
  if (!used_after.ok()) return fail("GetDevices", used_after.status());
  const int64_t held = *used_after - *used_before;  // weights + arenas
  std::printf(
      "after add:      RSS %8.1f MiB  (+%.1f MiB; device memory held "
      "(weights+arenas) %.1f MiB; increase / (weights+arenas) = %.2f; "
      "add took %s; %.1f MiB as the answer arrived, when gRPC may not have "
      "freed the request yet)\n",
      MiB(after_add), MiB(after_add - idle), MiB(held),
      static_cast<double>(after_add - idle) / static_cast<double>(held),
      absl::FormatDuration(add_time).c_str(), MiB(at_answer));
  if (absl::Status s = run(); !s.ok()) return fail("RunNetwork", s);
  const int64_t after_run = SettledRss(pid);
  std::printf("after a run:    RSS %8.1f MiB  (+%.1f MiB over idle; "
              "/ (weights+arenas) = %.2f)\n",
              MiB(after_run), MiB(after_run - idle),
              static_cast<double>(after_run - idle) /
                  static_cast<double>(held));
  if (absl::Status s = remove(); !s.ok()) return fail("RemoveNetwork", s);
  const int64_t after_remove = SettledRss(pid);
  std::printf("after remove:   RSS %8.1f MiB  (%+.1f MiB over idle)\n",
              MiB(after_remove), MiB(after_remove - idle));

  std::printf("%6s %12s\n", "cycles", "idle_RSS_MiB");
  std::printf("%6d %12.1f\n", 1, MiB(after_remove));
  int64_t first = -1;
  int64_t last = -1;
  const absl::Time cycles_start = absl::Now();
  absl::Duration sampled;  // Not part of the cycles' time.
  for (int c = 2; c <= cycles; ++c) {
    if (absl::Status s = add(); !s.ok()) return fail("AddNetwork", s);
    if (absl::Status s = run(); !s.ok()) return fail("RunNetwork", s);
    if (absl::Status s = remove(); !s.ok()) return fail("RemoveNetwork", s);
    if (c % 10 == 0) {
      const absl::Time sampling = absl::Now();
      last = SettledRss(pid);
      sampled += absl::Now() - sampling;
      if (first < 0) first = last;
      std::printf("%6d %12.1f\n", c, MiB(last));
    }
  }
  const double per_cycle =
      absl::ToDoubleMilliseconds(absl::Now() - cycles_start - sampled) /
      std::max(1, cycles - 1);
  if (first > 0) {
    std::printf(
        "idle RSS after %d cycles / after 10: %.3f; / before any add: %.3f "
        "(%.0f ms per add/run/remove cycle)\n",
        cycles, static_cast<double>(last) / static_cast<double>(first),
        static_cast<double>(last) / static_cast<double>(idle), per_cycle);
  }
  return 0;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  int cycles = 50;
  int64_t width = 2048;
  int layers = 3;
  if ((argc > 1 && (!absl::SimpleAtoi(argv[1], &cycles) || cycles < 1)) ||
      (argc > 2 && (!absl::SimpleAtoi(argv[2], &width) || width < 1)) ||
      (argc > 3 && (!absl::SimpleAtoi(argv[3], &layers) || layers < 1))) {
    std::cerr << "usage: rss_bench [cycles=50] [width=2048] [layers=3] "
                 "[devices=sim*2:memory=1GiB]\n";
    return 2;
  }
  const std::string devices = argc > 4 ? argv[4] : "sim*2:memory=1GiB";
  return glint::Run(cycles, width, layers, devices);
}
