// Shared-memory tensors: what glintd adds to a run when no tensor byte
// travels through gRPC. Prints figures and ratios; asserts nothing.
//
//   bazel run -c opt //bench:shm_bench -- [iters] [rounds] [kib,kib,...]
//
// For each size (default 4 MiB), y = Relu(x) with x and y of that size runs
// four ways, taking turns for `rounds` rounds of `iters` calls:
//  - in-process: HostManager::RunNetwork in this process (the baseline);
//  - glintd shm: a real glintd (one sim device) with x and y in a region
//    registered once (SharedMemorySession): the request and the reply
//    carry headers only; y is read in place;
//  - glintd OIP shm: the same through the inference protocol (ModelInfer
//    with Triton's shared-memory parameters, a region registered with
//    SystemSharedMemoryRegister);
//  - glintd bytes: the same glintd, x and y inside glint.v1's messages.
// ratio = glintd shm / in-process (issue 15's aim: <= 1.3 at 4 MiB),
// oip_ratio = glintd OIP shm / in-process.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/timing.h"
#include "client/glint_client.h"
#include "client/shared_memory.h"
#include "core/allocator_policy.h"
#include "core/device_info.h"
#include "onnx/test_models.h"
#include "proto/inference.grpc.pb.h"
#include "runtime/host_manager.h"
#include "tests/process_util.h"

namespace glint {
namespace {

using bench::Median;
using bench::TimeRuns;

// y must be Relu(x), element for element.
absl::Status CheckRelu(const float* y, const Tensor& x) {
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (y[i] != std::max(x.data<float>()[i], 0.0f)) {
      return absl::InternalError(absl::StrCat("wrong output at ", i));
    }
  }
  return absl::OkStatus();
}

int Run(int iters, int rounds, const std::vector<int64_t>& sizes_kib) {
  absl::StatusOr<std::unique_ptr<testing::GlintdProcess>> glintd =
      testing::GlintdProcess::Start(
          {"--devices=sim:memory=4GiB", "--log_level=warning"});
  if (!glintd.ok()) {
    std::cerr << "glintd: " << glintd.status() << "\n";
    return 1;
  }
  GlintClient& client = (*glintd)->client();
  DeviceConfig device;
  device.memory_bytes = 4ull << 30;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, {device});
  if (!host.ok()) {
    std::cerr << host.status() << "\n";
    return 1;
  }

  std::unique_ptr<inference::GRPCInferenceService::Stub> oip =
      inference::GRPCInferenceService::NewStub(client.channel());
  std::printf("%9s %11s %10s %11s %12s %7s %9s %11s %11s %10s %9s\n",
              "size_kib", "in_proc_us", "shm_us", "oip_shm_us", "bytes_us",
              "ratio", "oip_ratio", "bytes_ratio", "in_proc_min", "shm_min",
              "ratio_min");
  for (int64_t kib : sizes_kib) {
    const int64_t n = kib * 1024 / static_cast<int64_t>(sizeof(float));
    const std::string name = absl::StrCat("relu", kib);
    testing::OnnxModelBuilder b;
    b.Input("x", 1, {n}).Output("y", 1, {n});
    b.Node("Relu", {"x"}, {"y"});
    const std::string onnx = b.Serialize();
    absl::StatusOr<NetworkInfo> local = (*host)->AddNetwork(name, onnx, {});
    absl::StatusOr<NetworkInfo> remote = client.AddNetwork(name, onnx);
    if (!local.ok() || !remote.ok()) {
      std::cerr << name << ": "
                << (local.ok() ? remote.status() : local.status()) << "\n";
      return 1;
    }
    Tensor x = *Tensor::Create(DType::kFloat32, Shape({n}));
    for (int64_t i = 0; i < n; ++i) {
      x.data<float>()[i] = static_cast<float>(i % 7) - 3;
    }
    const std::vector<NamedTensor> inputs = {{"x", x}};

    absl::StatusOr<std::unique_ptr<SharedMemorySession>> session =
        SharedMemorySession::Create(&client, {{"x", DType::kFloat32, {n}}},
                                    remote->outputs);
    if (!session.ok()) {
      std::cerr << name << ": " << session.status() << "\n";
      return 1;
    }
    absl::Status status = (*session)->WriteInput(inputs[0]);
    const RunNetworkCall call = (*session)->MakeCall(0);
    RunNetworkReply shm_reply;
    // The reply's y lies in the region: nothing to convert or copy.
    auto run_shm = [&]() -> absl::StatusOr<std::vector<NamedTensor>> {
      absl::StatusOr<RunNetworkReply> r = client.Run(name, call);
      if (!r.ok()) return r.status();
      if (r->shared_memory_outputs.size() != 1) {
        return absl::InternalError("y did not come in shared memory");
      }
      shm_reply = *std::move(r);
      return std::vector<NamedTensor>();
    };

    // The OIP way: its own region, [x | y], registered by the inference
    // protocol.
    const uint64_t bytes = static_cast<uint64_t>(x.num_bytes());
    absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> oip_region =
        SharedMemoryRegion::Create(2 * bytes);
    if (!oip_region.ok()) {
      std::cerr << name << ": " << oip_region.status() << "\n";
      return 1;
    }
    std::memcpy((*oip_region)->data(), x.raw_data(), bytes);
    const std::string oip_name = absl::StrCat("bench_oip_", kib);
    {
      inference::SystemSharedMemoryRegisterRequest r;
      r.set_name(oip_name);
      r.set_key((*oip_region)->key());
      r.set_byte_size(2 * bytes);
      inference::SystemSharedMemoryRegisterResponse ignored;
      grpc::ClientContext context;
      grpc::Status s = oip->SystemSharedMemoryRegister(&context, r, &ignored);
      if (!s.ok()) {
        std::cerr << name << ": " << s.error_message() << "\n";
        return 1;
      }
    }
    inference::ModelInferRequest oip_request;
    oip_request.set_model_name(name);
    {
      auto window = [&](auto* parameters, uint64_t offset) {
        (*parameters)["shared_memory_region"].set_string_param(oip_name);
        (*parameters)["shared_memory_offset"].set_uint64_param(offset);
        (*parameters)["shared_memory_byte_size"].set_uint64_param(bytes);
      };
      auto* in = oip_request.add_inputs();
      in->set_name("x");
      in->set_datatype("FP32");
      in->add_shape(n);
      window(in->mutable_parameters(), 0);
      auto* out = oip_request.add_outputs();
      out->set_name("y");
      window(out->mutable_parameters(), bytes);
    }
    auto run_oip = [&]() -> absl::StatusOr<std::vector<NamedTensor>> {
      inference::ModelInferResponse response;
      grpc::ClientContext context;
      grpc::Status s = oip->ModelInfer(&context, oip_request, &response);
      if (!s.ok()) return absl::InternalError(s.error_message());
      if (response.raw_output_contents_size() != 1 ||
          !response.raw_output_contents(0).empty()) {
        return absl::InternalError("y did not come in shared memory");
      }
      return std::vector<NamedTensor>();
    };

    std::vector<double> local_us, shm_us, oip_us, bytes_us;
    std::vector<NamedTensor> local_out, bytes_out;
    // The ways take turns so that this machine's slow spells fall on each.
    for (int r = 0; r < rounds && status.ok(); ++r) {
      status.Update(TimeRuns(
          iters, [&] { return (*host)->RunNetwork(name, inputs); },
          &local_out, &local_us));
      status.Update(TimeRuns(iters, run_shm, nullptr, &shm_us));
      status.Update(TimeRuns(iters, run_oip, nullptr, &oip_us));
      status.Update(TimeRuns(
          iters, [&] { return client.RunNetwork(name, inputs); }, &bytes_out,
          &bytes_us));
    }
    // GLINT_BENCH_TRACE=PREFIX: one traced run each way, as Chrome trace
    // JSON in PREFIX<kib>_in_process.json and PREFIX<kib>_shm.json, to see
    // where a way's time goes.
    if (const char* prefix = std::getenv("GLINT_BENCH_TRACE");
        prefix != nullptr && status.ok()) {
      RunOptions traced;
      traced.trace = std::make_shared<RunTrace>();
      status.Update((*host)->RunNetwork(name, inputs, traced).status());
      RunNetworkCall traced_call = call;
      traced_call.trace = true;
      absl::StatusOr<RunNetworkReply> r = client.Run(name, traced_call);
      status.Update(r.status());
      if (status.ok()) {
        std::ofstream(absl::StrCat(prefix, kib, "_in_process.json"))
            << traced.trace->ToChromeJson();
        std::ofstream(absl::StrCat(prefix, kib, "_shm.json")) << r->trace_json;
      }
    }
    if (status.ok()) {
      const SharedMemoryTensor& y = shm_reply.shared_memory_outputs[0];
      status.Update(CheckRelu(
          reinterpret_cast<const float*>((*session)->region().data() +
                                         y.window.offset),
          x));
      status.Update(CheckRelu(local_out.at(0).tensor.data<float>(), x));
      status.Update(CheckRelu(
          reinterpret_cast<const float*>((*oip_region)->data() + bytes), x));
      status.Update(CheckRelu(bytes_out.at(0).tensor.data<float>(), x));
    }
    if (!status.ok()) {
      std::cerr << name << ": " << status << "\n";
      return 1;
    }
    const double l = Median(local_us), s = Median(shm_us), o = Median(oip_us),
                 by = Median(bytes_us);
    // The fastest calls too: on a shared machine other processes' bursts
    // land on some calls of every way; the best of each is what the way
    // itself costs.
    const double l_min = *std::min_element(local_us.begin(), local_us.end());
    const double s_min = *std::min_element(shm_us.begin(), shm_us.end());
    std::printf(
        "%9lld %11.0f %10.0f %11.0f %12.0f %7.2f %9.2f %11.2f %11.0f %10.0f "
        "%9.2f\n",
        static_cast<long long>(kib), l, s, o, by, s / l, o / l, by / l, l_min,
        s_min, s_min / l_min);
    session->reset();  // Unregisters before the network goes.
    {
      inference::SystemSharedMemoryUnregisterRequest r;
      r.set_name(oip_name);
      inference::SystemSharedMemoryUnregisterResponse ignored;
      grpc::ClientContext context;
      (void)oip->SystemSharedMemoryUnregister(&context, r, &ignored);
    }
    (void)(*host)->RemoveNetwork(name);
    (void)client.RemoveNetwork(name);
  }
  std::printf(
      "%d rounds of %d calls each way; *_us: median latency, *_min: the "
      "fastest call; ratio = glintd with shared memory (glint.v1) / "
      "in-process, oip_ratio = the same through the inference protocol / "
      "in-process, "
      "bytes_ratio = glintd with the tensors in the messages / in-process, "
      "ratio_min = the fastest calls' ratio\n",
      rounds, iters);
  return 0;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 50;
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::vector<int64_t> sizes = {4096};
  if (argc > 3) {
    sizes.clear();
    for (absl::string_view s : absl::StrSplit(argv[3], ',')) {
      int64_t kib = 0;
      if (!absl::SimpleAtoi(s, &kib) || kib <= 0) {
        std::cerr << "bad size '" << s << "' (KiB, e.g. 64,1024,4096)\n";
        return 2;
      }
      sizes.push_back(kib);
    }
  }
  glint::ConfigureAllocatorForTensors();  // As glintd and the CLI do.
  return glint::Run(iters, rounds, sizes);
}
