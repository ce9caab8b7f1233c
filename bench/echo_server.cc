// serving_bench's floor: a gRPC server of glint.v1's HostManager whose
// RunNetwork answers with the request's tensors, renamed "y", and nothing
// else. It is built the way glintd builds its server, so that the two
// differ only by what glintd does per call:
//  - the same ServerBuilder settings (ConfigureServerBuilder: message
//    limits, resource quota) on 127.0.0.1 with a free port;
//  - the same server model: gRPC's callback API, each call finished from
//    a thread of the server's own (glintd's reactors finish from the
//    runtime's threads);
//  - a process of its own, started the same way (exec'd, not forked from
//    the client), with glintd's malloc settings (allocator_policy.h),
//    which decide whether a large message's buffers are reused or mapped
//    afresh on every call.
// The response is built by copying the request's tensors into it, as
// glintd copies its outputs into the reply.
//
//   echo_server   # prints "port N" on stdout once serving; runs until killed
#include <cstdio>
#include <deque>
#include <memory>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "core/allocator_policy.h"
#include "proto/glint.grpc.pb.h"
#include "runtime/server/grpc/server_setup.h"

namespace glint {
namespace {

// Answers each call from a thread of its own, as glintd's reactors finish
// from the runtime's threads rather than gRPC's. Thread-safe: gRPC's
// threads queue calls, the finisher thread answers them.
class EchoService final : public v1::HostManager::CallbackService {
 public:
  EchoService() : finisher_([this] { FinishLoop(); }) {}
  ~EchoService() override {
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
    }
    finisher_.join();
  }

  grpc::ServerUnaryReactor* RunNetwork(grpc::CallbackServerContext* context,
                                       const v1::RunNetworkRequest* request,
                                       v1::RunNetworkResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::MutexLock lock(&mu_);
    pending_.push_back({reactor, request, response});
    return reactor;
  }

 private:
  struct Call {
    grpc::ServerUnaryReactor* reactor;
    const v1::RunNetworkRequest* request;
    v1::RunNetworkResponse* response;
  };

  void FinishLoop() {
    for (;;) {
      std::deque<Call> calls;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](EchoService* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
              return s->done_ || !s->pending_.empty();
            },
            this));
        if (done_) return;
        calls.swap(pending_);
      }
      for (Call& c : calls) {
        *c.response->mutable_outputs() = c.request->inputs();
        for (v1::Tensor& t : *c.response->mutable_outputs()) t.set_name("y");
        c.reactor->Finish(grpc::Status::OK);
      }
    }
  }

  absl::Mutex mu_;
  std::deque<Call> pending_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread finisher_;
};

int Run() {
  ConfigureAllocatorForTensors();
  GrpcServerOptions options;
  options.listen = "127.0.0.1:0";
  grpc::ServerBuilder builder;
  int port = 0;
  ConfigureServerBuilder(options, &builder, &port);
  EchoService echo;
  builder.RegisterService(&echo);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "echo_server: cannot start a server on 127.0.0.1\n");
    return 1;
  }
  std::printf("port %d\n", port);
  std::fflush(stdout);
  server->Wait();
  return 0;
}

}  // namespace
}  // namespace glint

int main() { return glint::Run(); }
