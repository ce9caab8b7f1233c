// `glint perf`: load generation against glintd in the spirit of Triton's
// perf_analyzer. For each concurrency level, that many runs are kept in
// flight for a fixed time through gRPC's callback API (no thread per run:
// 512 in flight cost no more threads than 1); each reply is checked
// against the network's outputs (names, dtypes, shapes, byte counts), and
// the level reports throughput, client-side latency percentiles and, when
// the daemon serves statistics, the server-side split (queue, compute).
//
// Thread-safe: RunPerf may be called concurrently with distinct clients;
// it uses its own threads only through gRPC.
#ifndef GLINT_CLIENT_PERF_H_
#define GLINT_CLIENT_PERF_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "client/glint_client.h"
#include "core/graph.h"
#include "core/op_profile.h"
#include "proto/inference.grpc.pb.h"

namespace glint {

struct PerfOptions {
  std::string network;
  // Levels, run in this order.
  std::vector<int> concurrency = {1};
  // How long each level keeps its runs in flight.
  absl::Duration duration = absl::Seconds(10);
  // > 0: every input's first dimension becomes `batch` (and so does every
  // output's, in the replies' check). 0: the network's shapes.
  int batch = 0;
  // Sizes of the network's other dynamic dims, by name ("seq") or
  // "INPUT:AXIS" (MakePerfInputs).
  std::map<std::string, int64_t> dims;
  // Inputs and outputs through a shared-memory region (same host only).
  bool shared_memory = false;
  // "glint" (glint.v1) or "oip" (the Open Inference Protocol service).
  std::string protocol = "glint";
  // Seeds the random inputs.
  uint64_t seed = 1;
  // Profile every run per op (glint.v1 RunNetworkRequest.profile; protocol
  // "glint" only): each reply's trace is summed into its level's
  // PerfLevel::op_profile. The figures then include the profiling's own
  // cost (two clock reads and a slice per node).
  bool profile = false;
};

// Runs that failed alike: a status and how often it came.
struct PerfError {
  absl::Status status;
  uint64_t count = 0;
};

// One concurrency level's figures.
struct PerfLevel {
  int concurrency = 0;
  uint64_t runs = 0;    // Replies that checked out.
  uint64_t errors = 0;  // Failed calls and replies that did not check out.
  double seconds = 0;   // From the first call to the last reply.
  double throughput = 0;  // runs / seconds.
  // Client-side latency of the successful runs, in milliseconds.
  double p50_ms = 0;
  double p90_ms = 0;
  double p99_ms = 0;
  // Server-side means over the level's runs from the daemon's statistics
  // (queue = waiting for admission and batching; compute = inputs in,
  // inference, outputs out), in microseconds; negative when the daemon
  // reports none.
  double server_queue_us = -1;
  double server_compute_us = -1;
  // The distinct errors, most frequent first.
  std::vector<PerfError> error_kinds;
  // With PerfOptions::profile: the node slices of the level's successful
  // runs, summed (a reply whose trace does not parse counts as an error).
  OpProfileBuilder op_profile;
};

// Where statistics come from (glint.v1 GetStatistics, OIP's
// ModelStatistics); UNIMPLEMENTED when there are none.
using PerfStatisticsSource =
    std::function<absl::StatusOr<NetworkStatistics>()>;

// The inputs of a perf run: random data (seeded) of `inputs`' dtypes and
// shapes, with the first dimension replaced by `batch` when > 0 and each
// other dynamic dim (-1) by its size in `dims`, keyed by the dim's name
// (from `dynamic_dims`, the network's) or "INPUT:AXIS". INVALID_ARGUMENT
// for a dynamic dim with no size given (naming the key to give), or a
// scalar input with a batch.
absl::StatusOr<std::vector<NamedTensor>> MakePerfInputs(
    const std::vector<ValueInfo>& inputs, int batch, uint64_t seed,
    const std::map<std::string, int64_t>& dims = {},
    const std::vector<DynamicDim>& dynamic_dims = {});

// What replies must look like: the network's outputs with the first
// dimension replaced by `batch` when > 0.
std::vector<ValueInfo> ExpectedPerfOutputs(
    const std::vector<ValueInfo>& outputs, int batch);

// OK if `reply` holds exactly `expected` (same names in order, dtypes,
// shapes where known, byte counts; outputs listed in
// `shared_memory_outputs` written to shared memory, the others in the
// message). INTERNAL naming the first difference otherwise. Reads the
// message as it came: nothing is copied.
absl::Status CheckPerfReply(
    const v1::RunNetworkResponse& reply,
    const std::vector<ValueInfo>& expected,
    const std::vector<std::string>& shared_memory_outputs);

// A network as the inference protocol's ModelMetadata describes it
// (-1 dims: Shape::kUnknownDim).
struct OipModel {
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
};
// ModelMetadata of `name` through `stub` (on `client`'s channel, with its
// token). Its errors as they come; INTERNAL for a datatype Glint lacks.
absl::StatusOr<OipModel> GetOipModel(
    GlintClient& client, inference::GRPCInferenceService::Stub* stub,
    const std::string& name);

// CheckPerfReply for ModelInfer's reply: the outputs in order with their
// datatypes and shapes, and one raw_output_contents entry per output of
// exactly its bytes, or empty for those in `shared_memory_outputs`
// (written into their windows).
absl::Status CheckOipPerfReply(
    const inference::ModelInferResponse& reply,
    const std::vector<ValueInfo>& expected,
    const std::vector<std::string>& shared_memory_outputs);

// Statistics of `network` through the inference protocol's
// ModelStatistics (queue, compute_input/infer/output, success, fail) on
// `client`'s channel; `client` must outlive the source.
PerfStatisticsSource OipStatisticsSource(GlintClient* client,
                                         const std::string& network);

// Runs every level against `client`'s daemon; `on_level` gets each level
// as it completes. With protocol "glint" through glint.v1 (GetNetwork,
// RunNetwork, RegisterSharedMemory); with "oip" through the inference
// protocol on the same channel (ModelMetadata, ModelInfer with raw
// contents or Triton's shared-memory parameters, SystemSharedMemory*).
// INVALID_ARGUMENT for bad options (profile with protocol "oip" among
// them); errors of the network's description
// and of the shared-memory set-up as they come. Failed runs are counted,
// not returned.
absl::StatusOr<std::vector<PerfLevel>> RunPerf(
    GlintClient& client, const PerfOptions& options,
    const PerfStatisticsSource& statistics,
    const std::function<void(const PerfLevel&)>& on_level);

// The table `glint perf` prints: a header line, then one line per level
// (FormatPerfRow), with "-" for server figures the daemon did not give.
std::string PerfTableHeader();
std::string FormatPerfRow(const PerfLevel& level);
// CSV with a header line; server figures left empty when unknown.
std::string FormatPerfCsv(const std::vector<PerfLevel>& levels);

}  // namespace glint

#endif  // GLINT_CLIENT_PERF_H_
