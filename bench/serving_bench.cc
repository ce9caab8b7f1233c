// Serving overhead: what glintd adds to a bare gRPC call of the same bytes.
// Prints figures and ratios; asserts nothing.
//
//   bazel run //bench:serving_bench -- [iters] [rounds] [kib,kib,...]
//
// For each tensor size, four ways run the same request:
//  - echo:      a gRPC server (a child process) whose RunNetwork returns
//               the request's tensors as outputs; no runtime. The floor:
//               gRPC, HTTP/2 over loopback and protobuf on both sides.
//  - glintd:    a real glintd (one sim device) running y = Relu(x), through
//               glint.v1 (GlintClient::RunNetwork, as the echo).
//  - oip:       the same glintd and network through the inference protocol
//               Triton and KServe clients speak: ModelInfer with the tensor
//               in raw_input_contents, from a client compiled from Triton's
//               unmodified grpc_service.proto, converting to and from a
//               Tensor as GlintClient does.
//  - in-process: HostManager::RunNetwork on the same network, no gRPC.
// `overhead` = glintd - echo: the daemon's own cost per call (conversions,
// admission, the executor, device copies and the Relu itself, which
// `in-process` bounds); `oip/v1` = oip / glintd.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/types/span.h"
#include "bench/timing.h"
#include "client/glint_client.h"
#include "core/device_info.h"
#include "grpcpp/grpcpp.h"
#include "onnx/test_models.h"
#include "proto/glint.grpc.pb.h"
#include "proto/limits.h"
#include "runtime/host_manager.h"
#include "tests/process_util.h"
#include "third_party/protocols/triton/grpc_service.grpc.pb.h"

namespace glint {
namespace {

using bench::Median;
using bench::TimeRuns;

// RunNetwork answers with the request's tensors; nothing else is served.
class EchoService final : public v1::HostManager::Service {
 public:
  grpc::Status RunNetwork(grpc::ServerContext* /*context*/,
                          const v1::RunNetworkRequest* request,
                          v1::RunNetworkResponse* response) override {
    *response->mutable_outputs() = request->inputs();
    for (v1::Tensor& t : *response->mutable_outputs()) t.set_name("y");
    return grpc::Status::OK;
  }
};

// The one output must be x (the echo) or Relu(x).
absl::Status CheckOutput(const std::vector<NamedTensor>& out, const Tensor& x,
                         bool relu) {
  if (out.size() != 1 || out[0].tensor.dtype() != DType::kFloat32 ||
      out[0].tensor.num_elements() != x.num_elements()) {
    return absl::InternalError("expected one float output the size of x");
  }
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const float v = x.data<float>()[i];
    if (out[0].tensor.data<float>()[i] != (relu ? std::max(v, 0.0f) : v)) {
      return absl::InternalError(absl::StrCat("wrong output at ", i));
    }
  }
  return absl::OkStatus();
}

// Serves EchoService on a loopback port in a child process of its own, as
// glintd is one: a server in the client's process would share its gRPC
// threads. Forked before this process creates any gRPC state; the child
// writes its port to a pipe and dies with its parent.
pid_t StartEchoServer(int* port) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    close(fds[0]);
    EchoService echo;
    grpc::ServerBuilder builder;
    int echo_port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &echo_port);
    builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
    builder.SetMaxSendMessageSize(kMaxMessageBytes);
    builder.RegisterService(&echo);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr) echo_port = 0;
    if (write(fds[1], &echo_port, sizeof(echo_port)) != sizeof(echo_port) ||
        server == nullptr) {
      _exit(1);
    }
    close(fds[1]);
    server->Wait();
    _exit(0);
  }
  close(fds[1]);
  if (pid < 0 || read(fds[0], port, sizeof(*port)) != sizeof(*port) ||
      *port == 0) {
    close(fds[0]);
    return -1;
  }
  close(fds[0]);
  return pid;
}

// One ModelInfer of `x` (FP32, raw) through the inference protocol, its
// output as a NamedTensor: the request built and the reply converted on
// every call, as GlintClient does for glint.v1.
absl::StatusOr<std::vector<NamedTensor>> InferOip(
    inference::GRPCInferenceService::Stub& stub, const std::string& model,
    const Tensor& x) {
  inference::ModelInferRequest request;
  request.set_model_name(model);
  auto* in = request.add_inputs();
  in->set_name("x");
  in->set_datatype("FP32");
  for (int64_t d : x.shape().dims()) in->add_shape(d);
  request.add_raw_input_contents(static_cast<const char*>(x.raw_data()),
                                 x.num_bytes());
  inference::ModelInferResponse response;
  grpc::ClientContext context;
  grpc::Status s = stub.ModelInfer(&context, request, &response);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                        s.error_message());
  }
  if (response.outputs_size() != 1 || response.raw_output_contents_size() != 1 ||
      response.outputs(0).datatype() != "FP32") {
    return absl::InternalError("expected one FP32 output");
  }
  const std::string& bytes = response.raw_output_contents(0);
  absl::StatusOr<Tensor> y = Tensor::FromBytes(
      DType::kFloat32,
      Shape(std::vector<int64_t>(response.outputs(0).shape().begin(),
                                 response.outputs(0).shape().end())),
      absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                bytes.size()));
  if (!y.ok()) return y.status();
  return std::vector<NamedTensor>{{response.outputs(0).name(), *std::move(y)}};
}

int Run(int iters, int rounds, const std::vector<int64_t>& sizes_kib) {
  int echo_port = 0;
  const pid_t echo_pid = StartEchoServer(&echo_port);
  if (echo_pid < 0) {
    std::cerr << "cannot start the echo server\n";
    return 1;
  }
  absl::StatusOr<std::unique_ptr<GlintClient>> echo_client =
      GlintClient::Connect(absl::StrCat("127.0.0.1:", echo_port));
  if (!echo_client.ok()) {
    std::cerr << "echo server: " << echo_client.status() << "\n";
    return 1;
  }

  absl::StatusOr<std::unique_ptr<testing::GlintdProcess>> glintd =
      testing::GlintdProcess::Start(
          {"--devices=sim:memory=4GiB", "--log_level=warning"});
  if (!glintd.ok()) {
    std::cerr << "glintd: " << glintd.status() << "\n";
    return 1;
  }
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  channel_args.SetMaxSendMessageSize(kMaxMessageBytes);
  std::unique_ptr<inference::GRPCInferenceService::Stub> oip =
      inference::GRPCInferenceService::NewStub(grpc::CreateCustomChannel(
          (*glintd)->address(), grpc::InsecureChannelCredentials(),
          channel_args));
  DeviceConfig device;
  device.memory_bytes = 4ull << 30;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs({}, {device});
  if (!host.ok()) {
    std::cerr << host.status() << "\n";
    return 1;
  }

  std::printf("%9s %9s %9s %9s %11s %11s %7s %7s\n", "size_kib", "echo_us",
              "glintd_us", "oip_us", "in_proc_us", "overhead_us", "ratio",
              "oip/v1");
  for (int64_t kib : sizes_kib) {
    const int64_t n = kib * 1024 / sizeof(float);
    const std::string name = absl::StrCat("relu", kib);
    testing::OnnxModelBuilder b;
    b.Input("x", 1, {n}).Output("y", 1, {n});
    b.Node("Relu", {"x"}, {"y"});
    const std::string onnx = b.Serialize();
    absl::StatusOr<NetworkInfo> local = (*host)->AddNetwork(name, onnx, {});
    absl::StatusOr<NetworkInfo> remote =
        (*glintd)->client().AddNetwork(name, onnx);
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
    std::vector<double> echo_us, glintd_us, oip_us, local_us;
    std::vector<NamedTensor> echo_out, glintd_out, oip_out, local_out;
    absl::Status status;
    // The ways take turns so that this machine's slow spells fall on each.
    for (int r = 0; r < rounds && status.ok(); ++r) {
      status.Update(TimeRuns(
          iters, [&] { return (*echo_client)->RunNetwork(name, inputs); },
          &echo_out, &echo_us));
      status.Update(TimeRuns(
          iters, [&] { return (*glintd)->client().RunNetwork(name, inputs); },
          &glintd_out, &glintd_us));
      status.Update(TimeRuns(
          iters, [&] { return InferOip(*oip, name, x); }, &oip_out, &oip_us));
      status.Update(TimeRuns(
          iters, [&] { return (*host)->RunNetwork(name, inputs); },
          &local_out, &local_us));
    }
    if (status.ok()) {
      status.Update(CheckOutput(echo_out, x, /*relu=*/false));
      status.Update(CheckOutput(glintd_out, x, /*relu=*/true));
      status.Update(CheckOutput(oip_out, x, /*relu=*/true));
      status.Update(CheckOutput(local_out, x, /*relu=*/true));
    }
    if (!status.ok()) {
      std::cerr << name << ": " << status << "\n";
      return 1;
    }
    const double e = Median(echo_us), g = Median(glintd_us),
                 o = Median(oip_us);
    std::printf("%9lld %9.0f %9.0f %9.0f %11.0f %11.0f %7.2f %7.2f\n",
                static_cast<long long>(kib), e, g, o, Median(local_us), g - e,
                g / e, o / g);
    (void)(*host)->RemoveNetwork(name);
    (void)(*glintd)->client().RemoveNetwork(name);
  }
  std::printf(
      "%d rounds of %d calls each way, median latency; overhead = glintd - "
      "echo, ratio = glintd / echo (same client, same bytes each way); "
      "oip/v1 = ModelInfer (inference protocol) / RunNetwork (glint.v1), "
      "same daemon and network\n",
      rounds, iters);
  kill(echo_pid, SIGKILL);
  waitpid(echo_pid, nullptr, 0);
  return 0;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::vector<int64_t> sizes = {4, 64, 1024, 4096};
  if (argc > 3) {
    sizes.clear();
    for (absl::string_view s : absl::StrSplit(argv[3], ',')) {
      int64_t kib = 0;
      if (!absl::SimpleAtoi(s, &kib) || kib <= 0) {
        std::cerr << "bad size '" << s << "' (KiB, e.g. 4,64,1024)\n";
        return 2;
      }
      sizes.push_back(kib);
    }
  }
  return glint::Run(iters, rounds, sizes);
}
