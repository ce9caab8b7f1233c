// GlintClient: a C++ client of glintd's glint.v1.HostManager service that
// speaks Glint's domain types (NamedTensor, NetworkInfo, DeviceInfo) and
// returns absl::Status, so callers never touch protobuf or grpc::Status.
//
// Thread-safe: the underlying gRPC channel and stub are, and the client
// holds no other mutable state.
#ifndef GLINT_CLIENT_GLINT_CLIENT_H_
#define GLINT_CLIENT_GLINT_CLIENT_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "core/device_info.h"
#include "proto/glint.grpc.pb.h"

namespace glint {

// GetStatistics' reply: networks sorted by name, devices by id.
struct ServingStatistics {
  std::vector<NetworkStatistics> networks;
  std::vector<DeviceStatistics> devices;
};

struct ClientOptions {
  // Connect() gives up after this long (UNAVAILABLE): a daemon that is down
  // must fail a CLI command quickly, not hang it.
  absl::Duration connect_timeout = absl::Seconds(5);
  // Deadline of every call except RunNetwork (which takes its own).
  absl::Duration rpc_timeout = absl::Minutes(10);

  // TLS (glintd's --tls_cert): on when `tls` is set or tls_ca_file is
  // given. tls_ca_file: PEM of the CA(s) that signed glintd's certificate;
  // empty = the system's trusted roots.
  bool tls = false;
  std::string tls_ca_file;
  // Mutual TLS (glintd's --tls_client_ca): this client's certificate and
  // its private key, both PEM; both or neither.
  std::string tls_cert_file;
  std::string tls_key_file;
  // The name checked against glintd's certificate, when the target's host
  // is not in it (e.g. connecting by IP to a certificate for a DNS name).
  std::string tls_server_name;

  // Sent with every call as `authorization: Bearer TOKEN` (glintd's
  // --auth_tokens); empty = none. See ReadTokenFile.
  std::string token;
};

// The token in the first line of `path` (blanks around it dropped; the rest
// of the file is ignored). INVALID_ARGUMENT when that line is empty, the
// file's read error (NOT_FOUND...) otherwise.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// One RunNetwork call in full: inputs in the message or in shared memory
// (regions registered before), and outputs to write into shared memory.
struct RunNetworkCall {
  std::vector<NamedTensor> inputs;
  std::vector<SharedMemoryTensor> shared_memory_inputs;
  // Empty: every output of the network.
  std::vector<std::string> requested_outputs;
  // Output name -> the window to write it to instead of the reply.
  std::map<std::string, SharedMemoryRef> output_shared_memory;
  // Becomes the call's gRPC deadline, which glintd applies to the run.
  absl::Duration timeout = absl::InfiniteDuration();
  bool trace = false;
  // A per-op profile: the trace (trace_json, whatever `trace` says) with a
  // slice per node executed (glint.v1 RunNetworkRequest.profile); sum it
  // with core/op_profile.h.
  bool profile = false;
};

// RunNetwork's reply: outputs that came in the message, and those written
// into shared memory (their header and the window, byte_size being the
// bytes written).
struct RunNetworkReply {
  std::vector<NamedTensor> outputs;
  std::vector<SharedMemoryTensor> shared_memory_outputs;
  std::string trace_json;  // With RunNetworkCall::trace or profile.
};

class GlintClient {
 public:
  // A plaintext channel to `target` with ChannelArgs().
  static std::shared_ptr<grpc::Channel> CreateChannel(
      const std::string& target);

  // The arguments of every channel the client opens. `target` may be any
  // gRPC target: "host:port", "dns:///name:port" (every address the name
  // resolves to, e.g. a Kubernetes headless Service) or
  // "ipv4:a:p1,a:p2". Calls are spread over all of the target's addresses
  // (round_robin) that say SERVING on grpc.health.v1 (client-side health
  // checking of the server's overall status: a daemon still loading its
  // store or repository gets no call; one without the health service counts
  // as healthy), and RunNetwork and ModelInfer, which are idempotent, are
  // retried on UNAVAILABLE (a daemon that died or is stopping): at most 4
  // attempts within the call's deadline, 50 ms backoff doubling to 0.5 s,
  // requests up to 32 MiB (larger ones are sent once). Other calls are
  // not retried: AddNetwork and RemoveNetwork change state. Reconnection
  // backoff is 0.1 s to 1 s, so a restarted daemon rejoins within about a
  // second. Plus Glint's message size limits. See docs/SCALING_OUT.md.
  static grpc::ChannelArguments ChannelArgs();

  // A channel with `options`' TLS settings (plaintext when TLS is off);
  // INVALID_ARGUMENT naming the file when a PEM file cannot be read or the
  // client certificate comes without its key. Does not connect.
  static absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(
      const std::string& target, const ClientOptions& options);

  // Opens a channel (OpenChannel) and waits until it is connected.
  // UNAVAILABLE naming the target when it does not connect within
  // options.connect_timeout (a TLS handshake that fails counts as not
  // connecting).
  static absl::StatusOr<std::unique_ptr<GlintClient>> Connect(
      const std::string& target, ClientOptions options = {});

  // Uses an existing channel without waiting for it.
  GlintClient(std::shared_ptr<grpc::Channel> channel, ClientOptions options);

  // Sends the model in pieces (AddNetworkStream, kModelChunkBytes each),
  // so no message holds it whole and models over one message's limit go
  // too (up to kMaxModelBytes, proto/limits.h).
  absl::StatusOr<NetworkInfo> AddNetwork(
      absl::string_view name, absl::string_view onnx_model,
      const AddNetworkOptions& options = AddNetworkOptions());
  // The same from the file at `path`, read a piece at a time as it is sent
  // (a pipe or device is read whole first). Errors reading it: those of
  // ReadFileToString (client/file_util.h), or DATA_LOSS if it changes
  // while sent.
  absl::StatusOr<NetworkInfo> AddNetworkFromFile(
      absl::string_view name, const std::string& path,
      const AddNetworkOptions& options = AddNetworkOptions());
  absl::Status RemoveNetwork(absl::string_view name);
  absl::StatusOr<std::vector<NetworkInfo>> ListNetworks();
  // With `include_dot`, NetworkInfo::dot holds the DAG in Graphviz DOT.
  absl::StatusOr<NetworkInfo> GetNetwork(absl::string_view name,
                                         bool include_dot = false);
  // `timeout` becomes the call's gRPC deadline, which glintd applies to the
  // run (DEADLINE_EXCEEDED).
  // With `trace_json`, the run is traced and the Chrome trace JSON lands
  // there.
  absl::StatusOr<std::vector<NamedTensor>> RunNetwork(
      absl::string_view name, const std::vector<NamedTensor>& inputs,
      const std::vector<std::string>& requested_outputs = {},
      absl::Duration timeout = absl::InfiniteDuration(),
      std::string* trace_json = nullptr);
  absl::StatusOr<std::vector<DeviceInfo>> GetDevices();
  // grpc.health.v1 Check of `service` ("" is the server's overall status;
  // glintd's --liveness_service names the one its liveness probes ask):
  // "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN", as the
  // server answers; the call's error otherwise (NOT_FOUND for a service the
  // server does not know). What Kubernetes' gRPC probes ask, for an exec
  // probe (`glint health`) where those are not available.
  absl::StatusOr<std::string> CheckHealth(absl::string_view service = "");
  // One network's statistics (every network's when `name` is empty) and
  // every device's. NOT_FOUND for an unknown name.
  absl::StatusOr<ServingStatistics> GetStatistics(absl::string_view name = "");

  // RunNetwork with everything glint.v1 offers (shared memory included).
  absl::StatusOr<RunNetworkReply> Run(absl::string_view name,
                                      const RunNetworkCall& call);
  // The request and reply of Run, for callers that issue calls themselves
  // (the async ones of `glint perf`). INVALID_ARGUMENT for an input that
  // cannot travel; INTERNAL for a malformed reply.
  static absl::StatusOr<v1::RunNetworkRequest> MakeRunRequest(
      absl::string_view name, const RunNetworkCall& call);
  static absl::StatusOr<RunNetworkReply> ParseRunReply(
      v1::RunNetworkResponse& response);

  // Shared-memory regions (see client/shared_memory.h for making one):
  // glintd maps [offset, offset + byte_size) of the POSIX object `key`
  // under `name`.
  absl::Status RegisterSharedMemory(absl::string_view name,
                                    absl::string_view key, uint64_t offset,
                                    uint64_t byte_size);
  absl::Status UnregisterSharedMemory(absl::string_view name);
  // One region, or all when `name` is empty.
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> SharedMemoryStatus(
      absl::string_view name = "");

  // For callers that need the raw messages (tests sending malformed data);
  // Authenticate() adds the token to their contexts.
  v1::HostManager::Stub* stub() { return stub_.get(); }
  // The channel, for stubs of glintd's other services (the inference
  // protocol's, in `glint perf --protocol oip`).
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  void Authenticate(grpc::ClientContext* context) const;

 private:
  // The token and, unless infinite, the deadline.
  void Prepare(grpc::ClientContext* context, absl::Duration timeout) const;
  // AddNetworkStream of a model of `size` bytes whose pieces `next` gives
  // in order (each at most kModelChunkBytes; its error ends the call and
  // is returned).
  absl::StatusOr<NetworkInfo> AddStreamed(
      absl::string_view name, const AddNetworkOptions& options, uint64_t size,
      const std::function<absl::Status(size_t max_bytes, std::string* piece)>&
          next);

  const ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::HostManager::Stub> stub_;
};

}  // namespace glint

#endif  // GLINT_CLIENT_GLINT_CLIENT_H_
