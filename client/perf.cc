#include "client/perf.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/memory/memory.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "client/shared_memory.h"
#include "core/half.h"
#include "core/status_macros.h"
#include "proto/inference.grpc.pb.h"
#include "proto/oip_types.h"
#include "proto/proto_convert.h"
#include "proto/status_util.h"

namespace glint {
namespace {

// Replies later than this past the level's end mean a stuck daemon; the
// calls are then failed DEADLINE_EXCEEDED rather than waited for forever.
constexpr absl::Duration kGrace = absl::Seconds(60);

// Keeps `concurrency` runs in flight until `deadline`: each reply starts
// the slot's next call. Calls go out through gRPC's callback API, so
// replies arrive on gRPC's own few threads. A reply delivered inline (on
// the thread that issued the call, as gRPC may for a call failing at
// once) is handed to the driving thread instead of re-issued there, so
// the stack never grows with failures.
//
// The same for either protocol: `Request`/`Response` are its messages,
// `start` issues one call (through the protocol's async stub) and `check`
// tells whether a reply is what the network gives.
template <typename Request, typename Response>
class LevelRunner {
 public:
  using StartCall =
      std::function<void(grpc::ClientContext*, const Request*, Response*,
                         std::function<void(grpc::Status)>)>;
  using CheckReply = std::function<absl::Status(const Response&)>;

  LevelRunner(const GlintClient* client, const std::vector<Request>& requests,
              StartCall start, CheckReply check, int concurrency)
      : client_(client),
        requests_(requests),
        start_(std::move(start)),
        check_(std::move(check)),
        slots_(concurrency) {}

  PerfLevel Run(absl::Duration duration) ABSL_LOCKS_EXCLUDED(mu_) {
    const absl::Time start = absl::Now();
    deadline_ = start + duration;
    {
      absl::MutexLock lock(&mu_);
      active_ = static_cast<int>(slots_.size());
      last_reply_ = start;
    }
    for (size_t i = 0; i < slots_.size(); ++i) Issue(static_cast<int>(i));
    while (true) {
      std::deque<int> deferred;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &LevelRunner::HasWorkOrDone));
        if (deferred_.empty() && active_ == 0) break;
        deferred.swap(deferred_);
      }
      for (int slot : deferred) Issue(slot);
    }
    // Every call has answered; wait for the callbacks to be out of this
    // object (at most the few instructions after their last unlock).
    while (callbacks_running_.load() != 0) std::this_thread::yield();
    absl::MutexLock lock(&mu_);
    PerfLevel level;
    level.concurrency = static_cast<int>(slots_.size());
    level.runs = latencies_ms_.size();
    level.errors = errors_;
    level.seconds = absl::ToDoubleSeconds(last_reply_ - start);
    level.throughput =
        level.seconds > 0 ? static_cast<double>(level.runs) / level.seconds : 0;
    std::vector<double> latencies = std::move(latencies_ms_);
    std::sort(latencies.begin(), latencies.end());
    auto percentile = [&latencies](double p) {
      if (latencies.empty()) return 0.0;
      const size_t rank = static_cast<size_t>(
          std::ceil(p * static_cast<double>(latencies.size())));
      return latencies[std::max<size_t>(rank, 1) - 1];
    };
    level.p50_ms = percentile(0.50);
    level.p90_ms = percentile(0.90);
    level.p99_ms = percentile(0.99);
    for (const auto& [message, error] : messages_) {
      level.error_kinds.push_back(error);
    }
    std::sort(level.error_kinds.begin(), level.error_kinds.end(),
              [](const PerfError& a, const PerfError& b) {
                return a.count != b.count
                           ? a.count > b.count
                           : a.status.ToString() < b.status.ToString();
              });
    return level;
  }

 private:
  struct Slot {
    std::unique_ptr<grpc::ClientContext> context;
    Response response;
    absl::Time started;
  };

  bool HasWorkOrDone() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !deferred_.empty() || active_ == 0;
  }

  void Issue(int slot) ABSL_LOCKS_EXCLUDED(mu_) {
    Slot& s = slots_[slot];
    // A ClientContext serves one call only.
    s.context = std::make_unique<grpc::ClientContext>();
    s.context->set_deadline(absl::ToChronoTime(deadline_ + kGrace));
    client_->Authenticate(s.context.get());
    s.response.Clear();
    s.started = absl::Now();
    const Request& request =
        requests_[static_cast<size_t>(slot) % requests_.size()];
    ++issuing_depth_;
    start_(s.context.get(), &request, &s.response,
           [this, slot](grpc::Status status) { OnDone(slot, status); });
    --issuing_depth_;
  }

  void OnDone(int slot, const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_) {
    callbacks_running_.fetch_add(1);
    Slot& s = slots_[slot];
    const absl::Time now = absl::Now();
    absl::Status result = FromGrpcStatus(status);
    if (result.ok()) {
      result = check_(s.response);
    }
    bool reissue = false;
    {
      absl::MutexLock lock(&mu_);
      last_reply_ = std::max(last_reply_, now);
      if (result.ok()) {
        latencies_ms_.push_back(absl::ToDoubleMilliseconds(now - s.started));
      } else {
        ++errors_;
        PerfError& kind = messages_[result.ToString()];
        kind.status = result;
        ++kind.count;
      }
      if (now >= deadline_) {
        --active_;
      } else if (issuing_depth_ > 0) {
        deferred_.push_back(slot);  // Inline: the driving thread re-issues.
      } else {
        reissue = true;
      }
    }
    if (reissue) Issue(slot);
    // The last touch of `this`: Run waits for it before returning.
    callbacks_running_.fetch_sub(1);
  }

  const GlintClient* const client_;
  const std::vector<Request>& requests_;
  const StartCall start_;
  const CheckReply check_;
  std::vector<Slot> slots_;  // Each touched by its one call at a time.
  absl::Time deadline_;
  static thread_local int issuing_depth_;

  std::atomic<int> callbacks_running_{0};
  absl::Mutex mu_;
  int active_ ABSL_GUARDED_BY(mu_) = 0;  // Slots still issuing.
  std::deque<int> deferred_ ABSL_GUARDED_BY(mu_);
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
  uint64_t errors_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, PerfError> messages_ ABSL_GUARDED_BY(mu_);
  absl::Time last_reply_ ABSL_GUARDED_BY(mu_);
};

template <typename Request, typename Response>
thread_local int LevelRunner<Request, Response>::issuing_depth_ = 0;

// Mean of a series' additions between two snapshots, in microseconds; -1
// when nothing was added.
double MeanMicros(const DurationStats& before, const DurationStats& after) {
  if (after.count <= before.count) return -1;
  return static_cast<double>(after.total_ns - before.total_ns) / 1000.0 /
         static_cast<double>(after.count - before.count);
}

// Fills `t` (of input `info`) with values from `random`: floats uniform in
// [-1, 1); integers and booleans 0 or 1, valid as indices and flags of any
// size.
absl::Status FillRandom(const ValueInfo& info, std::mt19937_64* random,
                        Tensor* t) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const int64_t n = t->num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const float f = uniform(*random);
    const int64_t bit = f >= 0 ? 1 : 0;
    switch (info.dtype) {
      case DType::kFloat32: t->data<float>()[i] = f; break;
      case DType::kFloat64: t->data<double>()[i] = f; break;
      case DType::kFloat16: t->data<uint16_t>()[i] = FloatToFloat16(f); break;
      case DType::kBFloat16: t->data<uint16_t>()[i] = FloatToBFloat16(f); break;
      case DType::kInt8: t->data<int8_t>()[i] = bit; break;
      case DType::kUInt8: t->data<uint8_t>()[i] = bit; break;
      case DType::kBool: t->data<uint8_t>()[i] = bit; break;
      case DType::kInt16: t->data<int16_t>()[i] = bit; break;
      case DType::kUInt16: t->data<uint16_t>()[i] = bit; break;
      case DType::kInt32: t->data<int32_t>()[i] = bit; break;
      case DType::kUInt32: t->data<uint32_t>()[i] = bit; break;
      case DType::kInt64: t->data<int64_t>()[i] = bit; break;
      case DType::kUInt64: t->data<uint64_t>()[i] = bit; break;
      default:
        return absl::InvalidArgumentError(
            absl::StrCat("cannot make data for input ", info.ToString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<NamedTensor>> MakePerfInputs(
    const std::vector<ValueInfo>& inputs, int batch, uint64_t seed,
    const std::map<std::string, int64_t>& dims,
    const std::vector<DynamicDim>& dynamic_dims) {
  std::mt19937_64 random(seed);
  std::vector<NamedTensor> tensors;
  std::vector<std::string> keys;  // Every dynamic dim's, for the error.
  std::set<std::string> used;     // The --dim keys some dim took.
  for (const ValueInfo& info : inputs) {
    Shape shape = info.shape;
    if (batch > 0) {
      if (shape.rank() == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--batch: input '", info.name, "' is a scalar, without a batch "
            "dimension"));
      }
      shape.mutable_dims()[0] = batch;
    }
    for (int axis = 0; shape.has_rank() && axis < shape.rank(); ++axis) {
      if (shape.dim(axis) >= 0) continue;
      std::string key = absl::StrCat(info.name, ":", axis);
      for (const DynamicDim& d : dynamic_dims) {
        if (d.input == info.name && d.axis == axis) key = d.Key();
      }
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        keys.push_back(key);
      }
      auto it = dims.find(key);
      if (it == dims.end()) it = dims.find(absl::StrCat(info.name, ":", axis));
      if (it == dims.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", info.name, "' dim ", axis,
            " is dynamic: give its size with --dim ", key, "=SIZE",
            axis == 0 ? " (or --batch SIZE)" : ""));
      }
      shape.mutable_dims()[axis] = it->second;
      used.insert(it->first);
    }
    absl::StatusOr<Tensor> t = Tensor::Create(info.dtype, shape);
    if (!t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot make input ", info.ToString(), ": ", t.status().message()));
    }
    GLINT_RETURN_IF_ERROR(FillRandom(info, &random, &*t));
    tensors.push_back({info.name, *std::move(t)});
  }
  for (const auto& [key, size] : dims) {
    if (used.count(key) > 0) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "--dim names '", key, "', which is no dynamic dim of the network ",
        "(its dynamic dims: ", keys.empty() ? "none" : absl::StrJoin(keys, ", "),
        ")"));
  }
  return tensors;
}

std::vector<ValueInfo> ExpectedPerfOutputs(
    const std::vector<ValueInfo>& outputs, int batch) {
  std::vector<ValueInfo> expected = outputs;
  if (batch > 0) {
    for (ValueInfo& v : expected) {
      if (v.shape.rank() > 0) v.shape.mutable_dims()[0] = batch;
    }
  }
  return expected;
}

absl::Status CheckPerfReply(
    const v1::RunNetworkResponse& reply,
    const std::vector<ValueInfo>& expected,
    const std::vector<std::string>& shared_memory_outputs) {
  if (reply.outputs_size() != static_cast<int>(expected.size())) {
    return absl::InternalError(absl::StrCat(
        "reply has ", reply.outputs_size(), " outputs, expected ",
        expected.size()));
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const v1::Tensor& got = reply.outputs(static_cast<int>(i));
    const ValueInfo& want = expected[i];
    const std::string what = absl::StrCat("output '", want.name, "'");
    if (got.name() != want.name) {
      return absl::InternalError(absl::StrCat(
          "reply's output ", i, " is '", got.name(), "', expected '",
          want.name, "'"));
    }
    absl::StatusOr<DType> dtype = DTypeFromProto(got.dtype());
    const bool same_shape = want.shape.Admits(
        Shape(std::vector<int64_t>(got.shape().begin(), got.shape().end())));
    if (!dtype.ok() || *dtype != want.dtype || !same_shape) {
      return absl::InternalError(absl::StrCat(
          what, " is ", dtype.ok() ? DTypeName(*dtype) : "of unknown dtype",
          "[", absl::StrJoin(got.shape(), ", "), "], expected ",
          DTypeName(want.dtype), want.shape.ToString()));
    }
    uint64_t bytes = DTypeSize(*dtype);
    for (int64_t d : got.shape()) {
      if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d),
                                          &bytes)) {
        return absl::InternalError(absl::StrCat(what, " has a bad shape"));
      }
    }
    const bool in_shm =
        std::find(shared_memory_outputs.begin(), shared_memory_outputs.end(),
                  want.name) != shared_memory_outputs.end();
    if (in_shm != got.has_shared_memory()) {
      return absl::InternalError(absl::StrCat(
          what, in_shm ? " came in the message, not in shared memory"
                       : " came in shared memory, not in the message"));
    }
    const uint64_t carried =
        in_shm ? got.shared_memory().byte_size() : got.raw_data().size();
    if (carried != bytes) {
      return absl::InternalError(absl::StrCat(what, " carries ", carried,
                                              " bytes for ", bytes));
    }
  }
  return absl::OkStatus();
}

namespace {

// Runs every level with `run_level(concurrency)`, taking the server's
// split of each from `statistics` before and after it.
absl::StatusOr<std::vector<PerfLevel>> RunLevels(
    const PerfOptions& options, const PerfStatisticsSource& statistics,
    const std::function<void(const PerfLevel&)>& on_level,
    const std::function<PerfLevel(int)>& run_level) {
  std::vector<PerfLevel> levels;
  for (int concurrency : options.concurrency) {
    absl::StatusOr<NetworkStatistics> before =
        statistics ? statistics() : absl::UnimplementedError("");
    PerfLevel level = run_level(concurrency);
    absl::StatusOr<NetworkStatistics> after =
        before.ok() ? statistics() : before;
    if (before.ok() && after.ok()) {
      level.server_queue_us = MeanMicros(before->queue, after->queue);
      const double in = MeanMicros(before->compute_input, after->compute_input);
      const double infer =
          MeanMicros(before->compute_infer, after->compute_infer);
      const double out =
          MeanMicros(before->compute_output, after->compute_output);
      if (infer >= 0) {
        level.server_compute_us =
            std::max(in, 0.0) + infer + std::max(out, 0.0);
      }
    }
    if (on_level) on_level(level);
    levels.push_back(std::move(level));
  }
  return levels;
}

// RunGlintPerf's requests: one, or with shared memory one per slot (each
// its own output windows; the inputs' windows are shared, in `session`,
// which must outlive the runs). `shm_outputs` gets the outputs that come
// back in shared memory.
absl::StatusOr<std::vector<v1::RunNetworkRequest>> MakeGlintPerfRequests(
    GlintClient& client, const PerfOptions& options,
    std::vector<NamedTensor> inputs, const std::vector<ValueInfo>& expected,
    std::unique_ptr<SharedMemorySession>* session,
    std::vector<std::string>* shm_outputs) {
  std::vector<v1::RunNetworkRequest> requests;
  if (options.shared_memory) {
    std::vector<ValueInfo> input_infos;
    for (const NamedTensor& t : inputs) {
      input_infos.push_back({t.name, t.tensor.dtype(), t.tensor.shape()});
    }
    const int slots = *std::max_element(options.concurrency.begin(),
                                        options.concurrency.end());
    absl::StatusOr<std::unique_ptr<SharedMemorySession>> made =
        SharedMemorySession::Create(&client, input_infos, expected, slots);
    if (!made.ok()) return made.status();
    *session = *std::move(made);
    for (const NamedTensor& t : inputs) {
      if (absl::Status s = (*session)->WriteInput(t); !s.ok()) return s;
    }
    for (int slot = 0; slot < slots; ++slot) {
      absl::StatusOr<v1::RunNetworkRequest> request =
          GlintClient::MakeRunRequest(options.network,
                                      (*session)->MakeCall(slot));
      if (!request.ok()) return request.status();
      requests.push_back(*std::move(request));
    }
    for (const auto& [output, unused] :
         requests.front().output_shared_memory()) {
      shm_outputs->push_back(output);
    }
  } else {
    RunNetworkCall call;
    call.inputs = std::move(inputs);
    absl::StatusOr<v1::RunNetworkRequest> request =
        GlintClient::MakeRunRequest(options.network, call);
    if (!request.ok()) return request.status();
    requests.push_back(*std::move(request));
  }
  return requests;
}

absl::StatusOr<std::vector<PerfLevel>> RunGlintPerf(
    GlintClient& client, const PerfOptions& options,
    const PerfStatisticsSource& statistics,
    const std::function<void(const PerfLevel&)>& on_level) {
  absl::StatusOr<NetworkInfo> network = client.GetNetwork(options.network);
  if (!network.ok()) return network.status();
  absl::StatusOr<std::vector<NamedTensor>> inputs =
      MakePerfInputs(network->inputs, options.batch, options.seed,
                     options.dims, network->dynamic_dims);
  if (!inputs.ok()) return inputs.status();
  const std::vector<ValueInfo> expected =
      ExpectedPerfOutputs(network->outputs, options.batch);

  std::vector<std::string> shm_outputs;
  std::unique_ptr<SharedMemorySession> session;
  absl::StatusOr<std::vector<v1::RunNetworkRequest>> made =
      MakeGlintPerfRequests(client, options, *std::move(inputs), expected,
                            &session, &shm_outputs);
  if (!made.ok()) return made.status();
  std::vector<v1::RunNetworkRequest> requests = *std::move(made);
  using Runner = LevelRunner<v1::RunNetworkRequest, v1::RunNetworkResponse>;
  GlintClient* const glint = &client;
  const Runner::StartCall start = [glint](
                                      grpc::ClientContext* context,
                                      const v1::RunNetworkRequest* r,
                                      v1::RunNetworkResponse* response,
                                      std::function<void(grpc::Status)> done) {
    glint->stub()->async()->RunNetwork(context, r, response, std::move(done));
  };
  if (options.profile) {
    for (v1::RunNetworkRequest& request : requests) request.set_profile(true);
  }
  return RunLevels(options, statistics, on_level, [&](int concurrency) {
    // A profiled level sums its replies' node slices as they come, on
    // gRPC's threads.
    absl::Mutex profile_mu;
    OpProfileBuilder profile;
    const Runner::CheckReply check =
        [&](const v1::RunNetworkResponse& reply) -> absl::Status {
      GLINT_RETURN_IF_ERROR(CheckPerfReply(reply, expected, shm_outputs));
      if (!options.profile) return absl::OkStatus();
      absl::StatusOr<std::vector<OpSpan>> spans =
          OpSpansFromChromeJson(reply.trace_json());
      if (!spans.ok()) {
        return absl::InternalError(absl::StrCat(
            "the reply's profile: ", spans.status().message()));
      }
      absl::MutexLock lock(&profile_mu);
      profile.Add(*spans);
      return absl::OkStatus();
    };
    Runner runner(&client, requests, start, check, concurrency);
    PerfLevel level = runner.Run(options.duration);
    absl::MutexLock lock(&profile_mu);
    level.op_profile = std::move(profile);
    return level;
  });
}

// A shared-memory region registered through the inference protocol's
// SystemSharedMemoryRegister, unregistered (best effort) when it goes.
class OipRegion {
 public:
  static absl::StatusOr<std::unique_ptr<OipRegion>> Register(
      GlintClient& client, inference::GRPCInferenceService::Stub* stub,
      uint64_t bytes) {
    absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region =
        SharedMemoryRegion::Create(std::max<uint64_t>(bytes, 1));
    if (!region.ok()) return region.status();
    static std::atomic<int> counter{0};
    auto made = absl::WrapUnique(new OipRegion(&client, stub));
    made->region_ = *std::move(region);
    made->name_ = absl::StrCat("glint_perf_", getpid(), "_", counter++);
    inference::SystemSharedMemoryRegisterRequest request;
    request.set_name(made->name_);
    request.set_key(made->region_->key());
    request.set_offset(0);
    request.set_byte_size(made->region_->size());
    inference::SystemSharedMemoryRegisterResponse response;
    grpc::ClientContext context;
    client.Authenticate(&context);
    if (absl::Status s = FromGrpcStatus(
            stub->SystemSharedMemoryRegister(&context, request, &response));
        !s.ok()) {
      return s;
    }
    made->registered_ = true;
    // glintd holds it mapped now: nothing stays in /dev/shm if we die.
    made->region_->Unlink();
    return made;
  }

  ~OipRegion() {
    if (!registered_) return;
    inference::SystemSharedMemoryUnregisterRequest request;
    request.set_name(name_);
    inference::SystemSharedMemoryUnregisterResponse response;
    grpc::ClientContext context;
    client_->Authenticate(&context);
    (void)stub_->SystemSharedMemoryUnregister(&context, request, &response);
  }

  const std::string& name() const { return name_; }
  uint8_t* data() const { return region_->data(); }

 private:
  OipRegion(GlintClient* client, inference::GRPCInferenceService::Stub* stub)
      : client_(client), stub_(stub) {}

  GlintClient* const client_;
  inference::GRPCInferenceService::Stub* const stub_;
  std::unique_ptr<SharedMemoryRegion> region_;
  std::string name_;
  bool registered_ = false;
};

void SetOipWindow(
    google::protobuf::Map<std::string, inference::InferParameter>* parameters,
    const std::string& region, uint64_t offset, uint64_t byte_size) {
  (*parameters)["shared_memory_region"].set_string_param(region);
  (*parameters)["shared_memory_offset"].set_uint64_param(offset);
  (*parameters)["shared_memory_byte_size"].set_uint64_param(byte_size);
}

uint64_t AlignWindow(uint64_t n) { return (n + 63) / 64 * 64; }

// RunOipPerf's requests: one with the tensors in it, or with shared
// memory one per slot in a region registered through the protocol (kept
// in `region`, which must outlive the runs): the inputs once (only read),
// then per slot a window for every output of a static shape (the others
// come in the reply), which `shm_outputs` lists.
absl::StatusOr<std::vector<inference::ModelInferRequest>> MakeOipPerfRequests(
    GlintClient& client, inference::GRPCInferenceService::Stub* stub,
    const PerfOptions& options, const std::vector<NamedTensor>& inputs,
    const std::vector<ValueInfo>& expected,
    std::unique_ptr<OipRegion>* region,
    std::vector<std::string>* shm_outputs) {
  inference::ModelInferRequest base;
  base.set_model_name(options.network);
  for (const NamedTensor& t : inputs) {
    auto* in = base.add_inputs();
    in->set_name(t.name);
    in->set_datatype(std::string(OipDatatype(t.tensor.dtype())));
    for (int64_t d : t.tensor.shape().dims()) in->add_shape(d);
  }
  for (const ValueInfo& v : expected) base.add_outputs()->set_name(v.name);

  std::vector<inference::ModelInferRequest> requests;
  if (options.shared_memory) {
    const int slots = *std::max_element(options.concurrency.begin(),
                                        options.concurrency.end());
    std::vector<uint64_t> input_offsets;
    uint64_t offset = 0;
    for (const NamedTensor& t : inputs) {
      input_offsets.push_back(offset);
      offset = AlignWindow(offset + t.tensor.num_bytes());
    }
    std::vector<int> placed;  // Indices into expected.
    uint64_t slot_bytes = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      if (!expected[i].shape.IsStatic()) continue;
      placed.push_back(static_cast<int>(i));
      shm_outputs->push_back(expected[i].name);
      slot_bytes = AlignWindow(
          slot_bytes + static_cast<uint64_t>(expected[i].shape.NumElements()) *
                           DTypeSize(expected[i].dtype));
    }
    absl::StatusOr<std::unique_ptr<OipRegion>> made = OipRegion::Register(
        client, stub, offset + slot_bytes * static_cast<uint64_t>(slots));
    if (!made.ok()) return made.status();
    *region = *std::move(made);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i].tensor;
      std::memcpy((*region)->data() + input_offsets[i], t.raw_data(),
                  t.num_bytes());
      SetOipWindow(
          base.mutable_inputs(static_cast<int>(i))->mutable_parameters(),
          (*region)->name(), input_offsets[i], t.num_bytes());
    }
    for (int slot = 0; slot < slots; ++slot) {
      inference::ModelInferRequest r = base;
      uint64_t at = offset + slot_bytes * static_cast<uint64_t>(slot);
      for (int i : placed) {
        const uint64_t bytes =
            static_cast<uint64_t>(expected[i].shape.NumElements()) *
            DTypeSize(expected[i].dtype);
        SetOipWindow(r.mutable_outputs(i)->mutable_parameters(),
                     (*region)->name(), at, bytes);
        at = AlignWindow(at + bytes);
      }
      requests.push_back(std::move(r));
    }
  } else {
    for (const NamedTensor& t : inputs) {
      base.add_raw_input_contents(static_cast<const char*>(t.tensor.raw_data()),
                                  t.tensor.num_bytes());
    }
    requests.push_back(std::move(base));
  }
  return requests;
}

absl::StatusOr<std::vector<PerfLevel>> RunOipPerf(
    GlintClient& client, const PerfOptions& options,
    const PerfStatisticsSource& statistics,
    const std::function<void(const PerfLevel&)>& on_level) {
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub =
      inference::GRPCInferenceService::NewStub(client.channel());
  absl::StatusOr<OipModel> model =
      GetOipModel(client, stub.get(), options.network);
  if (!model.ok()) return model.status();
  // The dims' names come from glint.v1 (the inference protocol's metadata
  // has none); without them only INPUT:AXIS keys apply.
  absl::StatusOr<NetworkInfo> network = client.GetNetwork(options.network);
  absl::StatusOr<std::vector<NamedTensor>> inputs = MakePerfInputs(
      model->inputs, options.batch, options.seed, options.dims,
      network.ok() ? network->dynamic_dims : std::vector<DynamicDim>{});
  if (!inputs.ok()) return inputs.status();
  const std::vector<ValueInfo> expected =
      ExpectedPerfOutputs(model->outputs, options.batch);

  std::vector<std::string> shm_outputs;
  std::unique_ptr<OipRegion> region;
  absl::StatusOr<std::vector<inference::ModelInferRequest>> made =
      MakeOipPerfRequests(client, stub.get(), options, *inputs, expected,
                          &region, &shm_outputs);
  if (!made.ok()) return made.status();
  std::vector<inference::ModelInferRequest> requests = *std::move(made);
  using Runner =
      LevelRunner<inference::ModelInferRequest, inference::ModelInferResponse>;
  inference::GRPCInferenceService::Stub* const oip = stub.get();
  const Runner::StartCall start =
      [oip](grpc::ClientContext* context, const inference::ModelInferRequest* r,
            inference::ModelInferResponse* response,
            std::function<void(grpc::Status)> done) {
        oip->async()->ModelInfer(context, r, response, std::move(done));
      };
  const Runner::CheckReply check =
      [&expected, &shm_outputs](const inference::ModelInferResponse& reply) {
        return CheckOipPerfReply(reply, expected, shm_outputs);
      };
  return RunLevels(options, statistics, on_level, [&](int concurrency) {
    Runner runner(&client, requests, start, check, concurrency);
    return runner.Run(options.duration);
  });
}

}  // namespace

absl::StatusOr<OipModel> GetOipModel(
    GlintClient& client, inference::GRPCInferenceService::Stub* stub,
    const std::string& name) {
  inference::ModelMetadataRequest request;
  request.set_name(name);
  inference::ModelMetadataResponse response;
  grpc::ClientContext context;
  client.Authenticate(&context);
  if (absl::Status s =
          FromGrpcStatus(stub->ModelMetadata(&context, request, &response));
      !s.ok()) {
    return s;
  }
  OipModel model;
  for (const bool input : {true, false}) {
    const auto& tensors = input ? response.inputs() : response.outputs();
    for (const auto& t : tensors) {
      absl::StatusOr<DType> dtype = DTypeFromOipDatatype(t.datatype());
      if (!dtype.ok()) {
        return absl::InternalError(
            absl::StrCat("ModelMetadata's ", input ? "input '" : "output '",
                         t.name(), "': ", dtype.status().message()));
      }
      std::vector<int64_t> dims;
      for (int64_t d : t.shape())
        dims.push_back(d < 0 ? Shape::kUnknownDim : d);
      (input ? model.inputs : model.outputs)
          .push_back({t.name(), *dtype, Shape(std::move(dims))});
    }
  }
  return model;
}

absl::Status CheckOipPerfReply(
    const inference::ModelInferResponse& reply,
    const std::vector<ValueInfo>& expected,
    const std::vector<std::string>& shared_memory_outputs) {
  if (reply.outputs_size() != static_cast<int>(expected.size())) {
    return absl::InternalError(absl::StrCat("reply has ", reply.outputs_size(),
                                            " outputs, expected ",
                                            expected.size()));
  }
  if (reply.raw_output_contents_size() != reply.outputs_size()) {
    return absl::InternalError(absl::StrCat(
        "reply has ", reply.raw_output_contents_size(),
        " raw_output_contents entries for ", reply.outputs_size(), " outputs"));
  }
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& got = reply.outputs(static_cast<int>(i));
    const ValueInfo& want = expected[i];
    const std::string what = absl::StrCat("output '", want.name, "'");
    if (got.name() != want.name) {
      return absl::InternalError(absl::StrCat("reply's output ", i, " is '",
                                              got.name(), "', expected '",
                                              want.name, "'"));
    }
    absl::StatusOr<DType> dtype = DTypeFromOipDatatype(got.datatype());
    const bool same_shape = want.shape.Admits(
        Shape(std::vector<int64_t>(got.shape().begin(), got.shape().end())));
    if (!dtype.ok() || *dtype != want.dtype || !same_shape) {
      return absl::InternalError(absl::StrCat(
          what, " is ", got.datatype(), "[", absl::StrJoin(got.shape(), ", "),
          "], expected ", OipDatatype(want.dtype), want.shape.ToString()));
    }
    uint64_t bytes = DTypeSize(*dtype);
    for (int64_t d : got.shape()) {
      if (d < 0 ||
          __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
        return absl::InternalError(absl::StrCat(what, " has a bad shape"));
      }
    }
    const bool in_shm =
        std::find(shared_memory_outputs.begin(), shared_memory_outputs.end(),
                  want.name) != shared_memory_outputs.end();
    const uint64_t carried =
        reply.raw_output_contents(static_cast<int>(i)).size();
    // An output in shared memory has an empty entry (its bytes are in
    // its window); a zero-byte output is empty either way.
    if (in_shm ? carried != 0 : carried != bytes) {
      return absl::InternalError(absl::StrCat(
          what, " carries ", carried, " bytes in the reply for ",
          in_shm ? uint64_t{0} : bytes,
          in_shm ? " (it was to be written to shared memory)" : ""));
    }
  }
  return absl::OkStatus();
}

PerfStatisticsSource OipStatisticsSource(GlintClient* client,
                                         const std::string& network) {
  auto stub = std::shared_ptr<inference::GRPCInferenceService::Stub>(
      inference::GRPCInferenceService::NewStub(client->channel()));
  return [client, stub, network]() -> absl::StatusOr<NetworkStatistics> {
    inference::ModelStatisticsRequest request;
    request.set_name(network);
    inference::ModelStatisticsResponse response;
    grpc::ClientContext context;
    client->Authenticate(&context);
    if (absl::Status s =
            FromGrpcStatus(stub->ModelStatistics(&context, request, &response));
        !s.ok()) {
      return s;
    }
    if (response.model_stats_size() != 1 ||
        response.model_stats(0).name() != network) {
      return absl::InternalError("ModelStatistics answered another model");
    }
    const inference::InferStatistics& infer =
        response.model_stats(0).inference_stats();
    NetworkStatistics stats;
    stats.name = network;
    auto duration = [](const inference::StatisticDuration& d) {
      DurationStats out;
      out.count = d.count();
      out.total_ns = d.ns();
      return out;
    };
    stats.queue = duration(infer.queue());
    stats.compute_input = duration(infer.compute_input());
    stats.compute_infer = duration(infer.compute_infer());
    stats.compute_output = duration(infer.compute_output());
    stats.request = duration(infer.success());
    stats.failed = duration(infer.fail());
    return stats;
  };
}

absl::StatusOr<std::vector<PerfLevel>> RunPerf(
    GlintClient& client, const PerfOptions& options,
    const PerfStatisticsSource& statistics,
    const std::function<void(const PerfLevel&)>& on_level) {
  if (options.protocol != "glint" && options.protocol != "oip") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown --protocol '", options.protocol, "' (glint or oip)"));
  }
  if (options.concurrency.empty() ||
      *std::min_element(options.concurrency.begin(),
                        options.concurrency.end()) < 1) {
    return absl::InvalidArgumentError("concurrency levels must be >= 1");
  }
  if (options.duration <= absl::ZeroDuration() || options.batch < 0) {
    return absl::InvalidArgumentError(
        "the duration must be positive and the batch not negative");
  }
  if (options.protocol == "oip") {
    if (options.profile) {
      return absl::InvalidArgumentError(
          "--profile needs --protocol glint (the inference protocol has no "
          "per-op profile)");
    }
    return RunOipPerf(client, options, statistics, on_level);
  }
  return RunGlintPerf(client, options, statistics, on_level);
}

}  // namespace glint
