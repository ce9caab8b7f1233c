// Serving overhead: what glintd adds to a bare gRPC call of the same bytes.
// Prints figures and ratios; asserts nothing.
//
//   bazel run //bench:serving_bench -- [iters] [rounds] [kib,kib,...]
//
// For each tensor size (default 4 KiB, 64 KiB, 1 MiB, 16 MiB), five ways
// move the same bytes:
//  - tcp:       the tensor's bytes alone, there and back over a loopback TCP
//               connection: what the machine's loopback moves.
//  - echo:      bench/echo_server, a gRPC server process built as glintd
//               builds its own (same ServerBuilder settings, callback API,
//               exec'd) whose RunNetwork returns the request's tensors as
//               outputs; no runtime. The floor: gRPC, HTTP/2 over loopback
//               and protobuf on both sides, as glintd pays them.
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
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "bench/timing.h"
#include "client/glint_client.h"
#include "core/allocator_policy.h"
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

// Starts bench/echo_server (the floor: glintd's server settings and model,
// no runtime) and reads the port it prints.
absl::StatusOr<std::unique_ptr<testing::ChildProcess>> StartEchoServer(
    int* port) {
  const std::string log = testing::NewTempDir("echo") + "/echo.log";
  absl::StatusOr<std::unique_ptr<testing::ChildProcess>> echo =
      testing::ChildProcess::Start({testing::RunfilePath("bench/echo_server")},
                                   log);
  if (!echo.ok()) return echo.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline && !(*echo)->Exited()) {
    const std::string text = (*echo)->Log();
    const size_t at = text.find("port ");
    const size_t end = text.find('\n', at);
    if (at != std::string::npos && end != std::string::npos &&
        absl::SimpleAtoi(text.substr(at + 5, end - at - 5), port)) {
      return echo;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::UnavailableError(
      absl::StrCat("echo_server did not start: ", (*echo)->Log()));
}

// A TCP echo over 127.0.0.1 inside this process, no gRPC and no protobuf:
// what the loopback itself moves. Each round trip sends an 8-byte length
// and the bytes, and reads the same bytes back. Thread-compatible: one
// caller at a time.
class LoopbackEcho {
 public:
  static absl::StatusOr<std::unique_ptr<LoopbackEcho>> Start() {
    auto echo = std::unique_ptr<LoopbackEcho>(new LoopbackEcho());
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (listener < 0 ||
        bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      if (listener >= 0) close(listener);
      return absl::UnavailableError("cannot listen on 127.0.0.1");
    }
    echo->fd_ = socket(AF_INET, SOCK_STREAM, 0);
    if (echo->fd_ < 0 ||
        connect(echo->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
            0) {
      close(listener);
      return absl::UnavailableError("cannot connect to 127.0.0.1");
    }
    const int peer = accept(listener, nullptr, nullptr);
    close(listener);
    if (peer < 0) return absl::UnavailableError("accept failed");
    const int one = 1;
    setsockopt(echo->fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(peer, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    echo->server_ = std::thread([peer] {
      std::string buf;
      uint64_t n = 0;
      while (ReadAll(peer, &n, sizeof(n))) {
        buf.resize(n);
        if (!ReadAll(peer, buf.data(), n) || !WriteAll(peer, buf.data(), n)) {
          break;
        }
      }
      close(peer);
    });
    return echo;
  }

  ~LoopbackEcho() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    if (server_.joinable()) server_.join();
  }

  absl::Status RoundTrip(const std::string& bytes, std::string* back) {
    const uint64_t n = bytes.size();
    back->resize(n);
    if (!WriteAll(fd_, &n, sizeof(n)) || !WriteAll(fd_, bytes.data(), n) ||
        !ReadAll(fd_, back->data(), n)) {
      return absl::UnavailableError("loopback echo failed");
    }
    return absl::OkStatus();
  }

 private:
  LoopbackEcho() = default;

  static bool ReadAll(int fd, void* data, size_t n) {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t got = read(fd, p, n);
      if (got <= 0) return false;
      p += got;
      n -= static_cast<size_t>(got);
    }
    return true;
  }
  static bool WriteAll(int fd, const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t put = write(fd, p, n);
      if (put <= 0) return false;
      p += put;
      n -= static_cast<size_t>(put);
    }
    return true;
  }

  int fd_ = -1;
  std::thread server_;
};

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
  absl::StatusOr<std::unique_ptr<testing::ChildProcess>> echo_server =
      StartEchoServer(&echo_port);
  if (!echo_server.ok()) {
    std::cerr << echo_server.status() << "\n";
    return 1;
  }
  absl::StatusOr<std::unique_ptr<LoopbackEcho>> loopback =
      LoopbackEcho::Start();
  if (!loopback.ok()) {
    std::cerr << loopback.status() << "\n";
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

  std::printf("%9s %9s %9s %9s %9s %11s %11s %7s %7s %9s %9s\n", "size_kib",
              "tcp_us", "echo_us", "glintd_us", "oip_us", "in_proc_us",
              "overhead_us", "ratio", "oip/v1", "glintd_MBs", "tcp_MBs");
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
    std::string raw_bytes(static_cast<const char*>(x.raw_data()),
                          x.num_bytes());
    std::string raw_back;
    std::vector<double> tcp_us, echo_us, glintd_us, oip_us, local_us;
    std::vector<NamedTensor> echo_out, glintd_out, oip_out, local_out;
    absl::Status status;
    // The ways take turns so that this machine's slow spells fall on each.
    for (int r = 0; r < rounds && status.ok(); ++r) {
      status.Update(TimeRuns(
          iters,
          [&]() -> absl::StatusOr<std::vector<NamedTensor>> {
            absl::Status s = (*loopback)->RoundTrip(raw_bytes, &raw_back);
            if (!s.ok()) return s;
            return std::vector<NamedTensor>{};
          },
          nullptr, &tcp_us));
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
      if (raw_back != raw_bytes) {
        status.Update(absl::InternalError("the loopback echo changed bytes"));
      }
      status.Update(CheckOutput(echo_out, x, /*relu=*/false));
      status.Update(CheckOutput(glintd_out, x, /*relu=*/true));
      status.Update(CheckOutput(oip_out, x, /*relu=*/true));
      status.Update(CheckOutput(local_out, x, /*relu=*/true));
    }
    if (!status.ok()) {
      std::cerr << name << ": " << status << "\n";
      return 1;
    }
    const double t = Median(tcp_us), e = Median(echo_us),
                 g = Median(glintd_us), o = Median(oip_us);
    // MB/s of the tensor's bytes: one round trip carries them each way.
    const double mb = static_cast<double>(x.num_bytes()) / 1e6;
    std::printf(
        "%9lld %9.0f %9.0f %9.0f %9.0f %11.0f %11.0f %7.2f %7.2f %9.0f "
        "%9.0f\n",
        static_cast<long long>(kib), t, e, g, o, Median(local_us), g - e,
        g / e, o / g, mb / (g / 1e6), mb / (t / 1e6));
    (void)(*host)->RemoveNetwork(name);
    (void)(*glintd)->client().RemoveNetwork(name);
  }
  std::printf(
      "%d rounds of %d calls each way, median latency; tcp = the bytes "
      "alone over a loopback TCP connection; echo = bench/echo_server (gRPC "
      "server built as glintd's, answering with the request); overhead = "
      "glintd - echo, ratio = glintd / echo (same client, same bytes each "
      "way; aim <= 1.3 at 4 KiB, <= 1.1 above); MB/s = tensor bytes / "
      "latency; "
      "oip/v1 = ModelInfer (inference protocol) / RunNetwork (glint.v1), "
      "same daemon and network\n",
      rounds, iters);
  return 0;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 200;
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  std::vector<int64_t> sizes = {4, 64, 1024, 16384};
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
  glint::ConfigureAllocatorForTensors();  // As glintd and the CLI do.
  return glint::Run(iters, rounds, sizes);
}
