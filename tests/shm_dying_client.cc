// A client that dies without unregistering its shared memory, for
// e2e_shared_memory_test:
//
//   shm_dying_client ADDRESS NETWORK
//
// Registers a region laid out for NETWORK (an MLP with input x:
// float32[4, 16], x[i] = i / 64), runs once through it (exit 3 if that
// fails), prints the region's name, fires one more run and kills itself
// with SIGKILL before the reply: no destructor, no UnregisterSharedMemory.
#include <signal.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "client/glint_client.h"
#include "client/shared_memory.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: shm_dying_client ADDRESS NETWORK\n";
    return 2;
  }
  using namespace glint;  // NOLINT: a test helper's main.
  absl::StatusOr<std::unique_ptr<GlintClient>> client =
      GlintClient::Connect(argv[1]);
  if (!client.ok()) {
    std::cerr << client.status() << "\n";
    return 3;
  }
  const std::string network = argv[2];
  absl::StatusOr<NetworkInfo> info = (*client)->GetNetwork(network);
  if (!info.ok()) {
    std::cerr << info.status() << "\n";
    return 3;
  }
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) / 64;
  const NamedTensor input{
      "x", Tensor::FromVector<float>(DType::kFloat32, Shape({4, 16}), x)};
  absl::StatusOr<std::unique_ptr<SharedMemorySession>> session =
      SharedMemorySession::Create(client->get(),
                                  {{"x", DType::kFloat32, Shape({4, 16})}},
                                  info->outputs);
  if (!session.ok()) {
    std::cerr << session.status() << "\n";
    return 3;
  }
  absl::Status s = (*session)->WriteInput(input);
  absl::StatusOr<RunNetworkReply> reply =
      s.ok() ? (*client)->Run(network, (*session)->MakeCall(0))
             : absl::StatusOr<RunNetworkReply>(s);
  if (!reply.ok() || reply->shared_memory_outputs.size() != 1) {
    std::cerr << "run through shared memory failed: " << reply.status()
              << "\n";
    return 3;
  }
  std::cout << (*session)->region_name() << std::endl;

  // One more run in flight, then death.
  absl::StatusOr<v1::RunNetworkRequest> request =
      GlintClient::MakeRunRequest(network, (*session)->MakeCall(0));
  if (!request.ok()) return 3;
  auto* context = new grpc::ClientContext();
  auto* response = new v1::RunNetworkResponse();
  (*client)->stub()->async()->RunNetwork(context, &*request, response,
                                         [](grpc::Status) {});
  raise(SIGKILL);
  return 4;  // Not reached.
}
