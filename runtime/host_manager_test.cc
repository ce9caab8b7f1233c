#include "runtime/host_manager.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/cancellation.h"
#include "core/test_process.h"
#include "devices/device_registry.h"
#include "devices/fault/fault_injecting_device.h"
#include "devices/sim/sim_device.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "onnx/test_models.h"

namespace glint {
namespace {

using ::glint::testing::MakeMlpModel;
using ::glint::testing::MlpReference;
using ::glint::testing::OnnxModelBuilder;

std::unique_ptr<HostManager> MakeHost(uint64_t memory = 64 * kMiB,
                                      int devices = 2) {
  std::vector<DeviceConfig> configs(devices);
  for (DeviceConfig& c : configs) c.memory_bytes = memory;
  auto host = HostManager::CreateFromConfigs({}, configs);
  EXPECT_TRUE(host.ok()) << host.status();
  return *std::move(host);
}

Tensor Input(int64_t batch, int64_t in, float scale,
             std::vector<float>* values) {
  values->resize(batch * in);
  for (size_t i = 0; i < values->size(); ++i) {
    (*values)[i] = scale * (static_cast<float>(i % 7) - 3.0f);
  }
  return Tensor::FromVector(DType::kFloat32, Shape({batch, in}), *values);
}

void ExpectNear(const Tensor& got, const std::vector<float>& want) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got.data<float>()[i], want[i], 1e-4f * (1 + std::abs(want[i])))
        << "element " << i;
  }
}

// Degenerate graphs have no partition, so no stream reports their end: each
// must still run to completion (or be refused at add time), including
// many at once, and be removable afterwards.
TEST(HostManagerTest, NetworksWithoutPartitionsRunAndEnd) {
  std::unique_ptr<HostManager> host = MakeHost();
  constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

  OnnxModelBuilder empty;
  OnnxModelBuilder pass;
  pass.Input("x", kFloat, {2}).Output("x", kFloat, {2});
  OnnxModelBuilder constant;
  constant.FloatInitializer("c", {2}, {1.0f, 2.0f}).Output("c", kFloat, {2});
  OnnxModelBuilder mixed;  // A node, a pass-through and a constant output.
  mixed.Input("x", kFloat, {2}).FloatInitializer("c", {2}, {1.0f, 2.0f});
  mixed.Node("Relu", {"x"}, {"y"});
  mixed.Output("y", kFloat, {2})
      .Output("x", kFloat, {2})
      .Output("c", kFloat, {2});
  for (auto [name, model] :
       std::vector<std::pair<std::string, const OnnxModelBuilder*>>{
           {"empty", &empty},
           {"pass", &pass},
           {"constant", &constant},
           {"mixed", &mixed}}) {
    absl::StatusOr<NetworkInfo> info =
        host->AddNetwork(name, model->Serialize(), {});
    ASSERT_TRUE(info.ok()) << name << ": " << info.status();
  }
  EXPECT_EQ(host->GetNetwork("empty")->partitions.size(), 0u);
  EXPECT_EQ(host->GetNetwork("mixed")->partitions.size(), 1u);

  OnnxModelBuilder duplicate;
  duplicate.Input("x", kFloat, {2})
      .Output("x", kFloat, {2})
      .Output("x", kFloat, {2});
  absl::StatusOr<NetworkInfo> refused =
      host->AddNetwork("duplicate", duplicate.Serialize(), {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);

  auto x = [] {
    return Tensor::FromVector(DType::kFloat32, Shape({2}),
                              std::vector<float>{-1.5f, 2.0f});
  };
  auto check =
      [](absl::StatusOr<std::vector<NamedTensor>> out,
         const std::vector<std::pair<std::string, std::vector<float>>>& want) {
        ASSERT_TRUE(out.ok()) << out.status();
        ASSERT_EQ(out->size(), want.size());
        for (size_t i = 0; i < want.size(); ++i) {
          EXPECT_EQ((*out)[i].name, want[i].first);
          ExpectNear((*out)[i].tensor, want[i].second);
        }
      };
  check(host->RunNetwork("empty", {}), {});
  check(host->RunNetwork("constant", {}), {{"c", {1.0f, 2.0f}}});
  check(host->RunNetwork("mixed", {{"x", x()}}),
        {{"y", {0.0f, 2.0f}}, {"x", {-1.5f, 2.0f}}, {"c", {1.0f, 2.0f}}});

  // Outputs are the caller's own: changing one changes no later run.
  Tensor in = x();
  absl::StatusOr<std::vector<NamedTensor>> out =
      host->RunNetwork("pass", {{"x", in}});
  ASSERT_TRUE(out.ok()) << out.status();
  (*out)[0].tensor.data<float>()[0] = 99.0f;
  EXPECT_EQ(in.data<float>()[0], -1.5f);
  absl::StatusOr<std::vector<NamedTensor>> again =
      host->RunNetwork("constant", {});
  ASSERT_TRUE(again.ok());
  (*again)[0].tensor.data<float>()[0] = 99.0f;
  check(host->RunNetwork("constant", {}), {{"c", {1.0f, 2.0f}}});

  // Far more runs than admission slots, all at once: every one ends.
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 25; ++i) {
        if (host->RunNetwork("pass", {{"x", x()}}).ok()) ++ok;
        if (host->RunNetwork("empty", {}).ok()) ++ok;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 400);
  for (const char* name : {"empty", "pass", "constant", "mixed"}) {
    EXPECT_TRUE(host->RemoveNetwork(name).ok()) << name;
  }
}

TEST(HostManagerTest, AddRunAndDescribe) {
  auto host = MakeHost();
  absl::StatusOr<NetworkInfo> info =
      host->AddNetwork("mlp", MakeMlpModel(4, 16, 8), {});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->inputs.size(), 1u);
  EXPECT_EQ(info->inputs[0].name, "x");
  EXPECT_EQ(info->inputs[0].shape, Shape({4, 16}));
  ASSERT_EQ(info->outputs.size(), 1u);
  EXPECT_EQ(info->outputs[0].shape, Shape({4, 8}));
  ASSERT_EQ(info->partitions.size(), 1u);
  EXPECT_EQ(info->partitions[0].num_nodes, 3);
  EXPECT_EQ(info->partitions[0].weight_bytes % 64, 0u);
  EXPECT_GE(info->partitions[0].weight_bytes, (16 * 8 + 8) * 4u);

  std::vector<float> x;
  absl::StatusOr<std::vector<NamedTensor>> out =
      host->RunNetwork("mlp", {{"x", Input(4, 16, 0.5f, &x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].name, "y");
  ExpectNear((*out)[0].tensor, MlpReference(x, 4, 16, 8));

  ASSERT_EQ(host->ListNetworks().size(), 1u);
  EXPECT_TRUE(host->GetNetwork("mlp").ok());
}

// RunOptions::profile: with a trace, every launch adds one slice per node
// it executes on its partition's track, inside the partition's slice; a
// traced run without it has none, and profiling without a trace is refused.
TEST(HostManagerTest, ProfiledRunsRecordASlicePerNodeInsideTheirPartition) {
  auto host = MakeHost(64 * kMiB, 2);
  AddNetworkOptions add;
  add.partition.strategy = PartitionStrategy::kLoadBalanced;
  add.partition.plan_devices = 2;
  absl::StatusOr<NetworkInfo> info =
      host->AddNetwork("deep", testing::MakeDeepMlpModel(2, 8, 4), add);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 2u);
  std::vector<float> x;

  RunOptions traced;
  traced.trace = std::make_shared<RunTrace>();
  ASSERT_TRUE(
      host->RunNetwork("deep", {{"x", Input(2, 8, 0.25f, &x)}}, traced).ok());
  for (const TraceSlice& s : traced.trace->Slices()) {
    EXPECT_NE(s.category, "op") << s.name;
    EXPECT_NE(s.category, "reorder") << s.name;
  }

  RunOptions profiled;
  profiled.trace = std::make_shared<RunTrace>();
  profiled.profile = true;
  absl::StatusOr<std::vector<NamedTensor>> out =
      host->RunNetwork("deep", {{"x", Input(2, 8, 0.25f, &x)}}, profiled);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<TraceSlice> partitions, nodes;
  for (const TraceSlice& s : profiled.trace->Slices()) {
    if (s.category == "compute") partitions.push_back(s);
    if (s.category == "op") nodes.push_back(s);
  }
  ASSERT_EQ(partitions.size(), 2u);
  // 4 MatMuls and 3 Relus: 4 nodes where each Relu fuses into its MatMul,
  // more where the partition boundary falls between the two.
  EXPECT_GE(nodes.size(), 4u);
  EXPECT_LE(nodes.size(), 7u);
  std::set<int> devices;
  for (const TraceSlice& node : nodes) {
    EXPECT_FALSE(node.args.empty());
    EXPECT_EQ(node.args[0].first, NodeSliceArgs::kOpType);
    int inside = 0;
    for (const TraceSlice& p : partitions) {
      if (p.process == node.process && p.thread == node.thread &&
          p.begin <= node.begin && node.end <= p.end) {
        ++inside;
      }
    }
    EXPECT_EQ(inside, 1) << node.name;
    devices.insert(node.process);
  }
  EXPECT_EQ(devices.size(), 2u);

  RunOptions untraced;
  untraced.profile = true;
  EXPECT_EQ(host->RunNetwork("deep", {{"x", Input(2, 8, 0.25f, &x)}},
                             untraced)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// RunOptions::output_buffers: an output that fits is written straight
// into the caller's memory (the returned tensor is a view of it); one that
// does not fit comes back in a new tensor, the memory untouched.
TEST(HostManagerTest, OutputsLandInTheCallersBuffers) {
  auto host = MakeHost();
  ASSERT_TRUE(host->AddNetwork("mlp", MakeMlpModel(4, 16, 8), {}).ok());
  std::vector<float> x;
  const Tensor input = Input(4, 16, 0.5f, &x);
  std::vector<uint8_t> memory(4 * 8 * sizeof(float) + 16, 0xEE);
  RunOptions options;
  options.output_buffers.push_back(
      {"y", Tensor::Borrow(DType::kUInt8,
                           Shape({static_cast<int64_t>(memory.size())}),
                           memory.data())});
  absl::StatusOr<std::vector<NamedTensor>> out =
      host->RunNetwork("mlp", {{"x", input}}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  const Tensor& y = (*out)[0].tensor;
  EXPECT_EQ(y.raw_data(), static_cast<void*>(memory.data()));
  EXPECT_EQ(y.shape(), Shape({4, 8}));
  ExpectNear(y, MlpReference(x, 4, 16, 8));
  EXPECT_EQ(memory[4 * 8 * sizeof(float)], 0xEE);  // Past y: untouched.

  std::vector<uint8_t> small(4 * 8 * sizeof(float) - 1, 0xEE);
  options.output_buffers[0].memory = Tensor::Borrow(
      DType::kUInt8, Shape({static_cast<int64_t>(small.size())}), small.data());
  out = host->RunNetwork("mlp", {{"x", input}}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_NE((*out)[0].tensor.raw_data(), static_cast<void*>(small.data()));
  ExpectNear((*out)[0].tensor, MlpReference(x, 4, 16, 8));
  EXPECT_EQ(small, std::vector<uint8_t>(small.size(), 0xEE));
}

TEST(HostManagerTest, MemoryIsAccountedAndReturnedOnRemove) {
  auto host = MakeHost(8 * kMiB, 1);
  const uint64_t before = host->GetDevices()[0].available_memory_bytes;
  absl::StatusOr<NetworkInfo> info =
      host->AddNetwork("mlp", MakeMlpModel(2, 256, 256), {});
  ASSERT_TRUE(info.ok()) << info.status();
  // One execution holds its input and output (2 x 256 floats each); the
  // default 8 executions are reserved with the weights (256x256 floats).
  const PartitionInfo& p = info->partitions[0];
  EXPECT_EQ(p.execution_bytes, uint64_t{(2 * 256 + 2 * 256) * 4});
  EXPECT_EQ(p.executions, 8);
  const uint64_t during = host->GetDevices()[0].available_memory_bytes;
  EXPECT_LE(during + 256 * 256 * 4 + 8 * p.execution_bytes, before);
  std::vector<float> x;
  // Runs use the reserved states: they allocate nothing.
  ASSERT_TRUE(host->RunNetwork("mlp", {{"x", Input(2, 256, 1, &x)}}).ok());
  EXPECT_EQ(host->GetDevices()[0].available_memory_bytes, during);
  ASSERT_TRUE(host->RunNetwork("mlp", {{"x", Input(2, 256, 1, &x)}}).ok());
  EXPECT_EQ(host->GetDevices()[0].available_memory_bytes, during);
  ASSERT_TRUE(host->RemoveNetwork("mlp").ok());
  EXPECT_EQ(host->GetDevices()[0].available_memory_bytes, before);
}

TEST(HostManagerTest, NetworksSpreadOverEqualDevicesByLoad) {
  auto host = MakeHost(64 * kMiB, 2);
  auto a = host->AddNetwork("a", MakeMlpModel(1, 8, 8), {});
  auto b = host->AddNetwork("b", MakeMlpModel(1, 8, 8), {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->partitions[0].device_id, b->partitions[0].device_id);
  const std::vector<DeviceInfo> devices = host->GetDevices();
  EXPECT_EQ(devices[0].loaded_functions, 1);
  EXPECT_EQ(devices[1].loaded_functions, 1);
  ASSERT_TRUE(host->RemoveNetwork("a").ok());
  EXPECT_EQ(host->GetDevices()[a->partitions[0].device_id].loaded_functions,
            0);
}

TEST(HostManagerTest, TooLargeIsResourceExhaustedAndLeavesNoTrace) {
  auto host = MakeHost(1 * kMiB, 2);
  const uint64_t before = host->GetDevices()[0].available_memory_bytes;
  absl::StatusOr<NetworkInfo> info =
      host->AddNetwork("big", MakeMlpModel(1, 1024, 512), {});  // 2 MiB.
  EXPECT_EQ(info.status().code(), absl::StatusCode::kResourceExhausted)
      << info.status();
  EXPECT_EQ(host->GetDevices()[0].available_memory_bytes, before);
  EXPECT_TRUE(host->ListNetworks().empty());
  // The name is free again.
  EXPECT_TRUE(host->AddNetwork("big", MakeMlpModel(1, 16, 16), {}).ok());
}

// A journal that keeps the model it is asked to record (the last one) and
// how much of the process's file-backed memory was resident at that
// moment: by then the add has digested and parsed the model and built the
// network.
class RecordingJournal : public NetworkJournal {
 public:
  absl::Status Record(absl::string_view name, const ModelBytes& onnx_model,
                      const AddNetworkOptions& options) override {
    resident_at_record = ResidentFileBytes();
    recorded = std::string(onnx_model.view());
    return absl::OkStatus();
  }
  absl::Status Erase(absl::string_view name) override {
    return absl::OkStatus();
  }
  // As glintd's store: the host then keeps no copy of the model.
  bool KeepsModels() const override { return true; }
  absl::StatusOr<std::string> LoadModel(absl::string_view name) override {
    return recorded;
  }

  int64_t resident_at_record = -1;
  std::string recorded;
};

// AddNetworkFromFile maps the file instead of reading it, and drops the
// mapping's pages after each pass (digest, parse): when the journal copies
// the model, the model is not resident beside the network built from it.
TEST(HostManagerTest, AddsAMappedFileWithoutKeepingItResident) {
  const std::string model = MakeMlpModel(1, 3072, 4096);  // 48 MiB.
  const std::string path = ::testing::TempDir() + "/mapped_mlp.onnx";
  {
    std::ofstream file(path, std::ios::binary);
    file << model;
    ASSERT_TRUE(file.good());
  }
  RecordingJournal journal;
  HostManagerOptions options;
  options.journal = &journal;
  std::vector<DeviceConfig> configs(1);
  configs[0].memory_bytes = 256 * kMiB;
  absl::StatusOr<std::unique_ptr<HostManager>> host =
      HostManager::CreateFromConfigs(options, configs);
  ASSERT_TRUE(host.ok()) << host.status();

  // The same add from memory first: the code an add runs (the importer,
  // the compiler, oneDNN) is file-backed too, and resident once run.
  ASSERT_TRUE((*host)->AddNetwork("warm", model, {}).ok());
  ASSERT_TRUE((*host)->RemoveNetwork("warm").ok());

  const int64_t before = ResidentFileBytes();
  ASSERT_GE(before, 0);
  absl::StatusOr<NetworkInfo> info =
      (*host)->AddNetworkFromFile("mlp", path, {});
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(journal.recorded, model);  // The file's bytes, exactly.
  EXPECT_LT(journal.resident_at_record - before,
            static_cast<int64_t>(model.size() / 2))
      << "the mapped model was still resident when the journal copied it";

  std::vector<float> x;
  absl::StatusOr<std::vector<NamedTensor>> out =
      (*host)->RunNetwork("mlp", {{"x", Input(1, 3072, 0.01f, &x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0].tensor, MlpReference(x, 1, 3072, 4096));

  // A pipe has nothing to map: it is read whole (its writer sends a small
  // model once).
  const std::string fifo = ::testing::TempDir() + "/model.fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string piped = MakeMlpModel(1, 4, 4);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << piped; });
  absl::StatusOr<NetworkInfo> from_pipe =
      (*host)->AddNetworkFromFile("piped", fifo, {});
  writer.join();
  ASSERT_TRUE(from_pipe.ok()) << from_pipe.status();
  EXPECT_EQ(journal.recorded, piped);
  ASSERT_TRUE((*host)->RemoveNetwork("piped").ok());

  // A file that is not there: NOT_FOUND naming it, nothing added or kept.
  journal.recorded.clear();
  absl::Status missing =
      (*host)
          ->AddNetworkFromFile("other", ::testing::TempDir() + "/none.onnx", {})
          .status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound) << missing;
  EXPECT_NE(missing.message().find("none.onnx"), absl::string_view::npos);
  EXPECT_TRUE(journal.recorded.empty());
  EXPECT_EQ((*host)->ListNetworks().size(), 1u);
}

TEST(HostManagerTest, AddErrors) {
  auto host = MakeHost();
  EXPECT_EQ(host->AddNetwork("bad", "not a model", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(host->AddNetwork("", MakeMlpModel(1, 2, 2), {}).status().code(),
            absl::StatusCode::kInvalidArgument);

  OnnxModelBuilder m;
  m.Input("x", onnx::TensorProto::FLOAT, {2, 2})
      .Output("y", onnx::TensorProto::FLOAT, {2, 2});
  // Random ops are ONNX ops no Glint device runs (runs are deterministic).
  m.Node("RandomNormalLike", {"x"}, {"y"}, "my_random");
  absl::Status s = host->AddNetwork("random", m.Serialize(), {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_NE(s.message().find("RandomNormalLike"), absl::string_view::npos)
      << s;
  EXPECT_NE(s.message().find("my_random"), absl::string_view::npos) << s;

  ASSERT_TRUE(host->AddNetwork("mlp", MakeMlpModel(1, 4, 4), {}).ok());
  EXPECT_EQ(host->AddNetwork("mlp", MakeMlpModel(1, 4, 4), {}).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(host->RemoveNetwork("nope").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(host->GetNetwork("nope").status().code(),
            absl::StatusCode::kNotFound);
  // Still serving.
  std::vector<float> x;
  EXPECT_TRUE(host->RunNetwork("mlp", {{"x", Input(1, 4, 1, &x)}}).ok());
}

TEST(HostManagerTest, RunInputErrorsNameTheInput) {
  auto host = MakeHost();
  ASSERT_TRUE(host->AddNetwork("mlp", MakeMlpModel(2, 4, 3), {}).ok());
  std::vector<float> x;
  auto expect_invalid = [&](std::vector<NamedTensor> inputs,
                            absl::string_view mention) {
    absl::Status s = host->RunNetwork("mlp", std::move(inputs)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(mention), absl::string_view::npos) << s;
  };
  expect_invalid({}, "missing input 'x'");
  expect_invalid({{"x", Input(2, 4, 1, &x)}, {"z", Input(2, 4, 1, &x)}},
                 "no input 'z'");
  expect_invalid({{"x", Input(3, 4, 1, &x)}}, "[2, 4]");
  expect_invalid({{"x", Tensor::FromVector<int64_t>(DType::kInt64,
                                                    Shape({2, 4}),
                                                    std::vector<int64_t>(8))}},
                 "expected float32");
  RunOptions bad_output;
  bad_output.requested_outputs = {"nope"};
  EXPECT_EQ(host->RunNetwork("mlp", {{"x", Input(2, 4, 1, &x)}}, bad_output)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  RunOptions twice;
  twice.requested_outputs = {"y", "y"};
  absl::StatusOr<std::vector<NamedTensor>> refused =
      host->RunNetwork("mlp", {{"x", Input(2, 4, 1, &x)}}, twice);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(), "output 'y' is requested twice");
  EXPECT_EQ(host->RunNetwork("other", {}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(host->RunNetwork("mlp", {{"x", Input(2, 4, 1, &x)}}).ok());
}

TEST(HostManagerTest, ConcurrentRunsGetTheirOwnOutputs) {
  auto host = MakeHost();
  ASSERT_TRUE(host->AddNetwork("a", MakeMlpModel(3, 32, 16), {}).ok());
  ASSERT_TRUE(host->AddNetwork("b", MakeMlpModel(5, 8, 4), {}).ok());
  std::vector<std::thread> threads;
  std::vector<int> failures(16, 0);
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        const bool use_a = (t + i) % 2 == 0;
        const int64_t batch = use_a ? 3 : 5, in = use_a ? 32 : 8,
                      out = use_a ? 16 : 4;
        std::vector<float> x;
        Tensor input = Input(batch, in, 0.1f * (t + 1) + i, &x);
        auto result = host->RunNetwork(use_a ? "a" : "b", {{"x", input}});
        if (!result.ok()) {
          ++failures[t];
          continue;
        }
        const std::vector<float> want = MlpReference(x, batch, in, out);
        const Tensor& got = (*result)[0].tensor;
        for (size_t k = 0; k < want.size(); ++k) {
          if (std::abs(got.data<float>()[k] - want[k]) >
              1e-3f * (1 + std::abs(want[k]))) {
            ++failures[t];
            break;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 16; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(HostManagerTest, RemovedNetworkIsNotFound) {
  auto host = MakeHost();
  ASSERT_TRUE(host->AddNetwork("mlp", MakeMlpModel(1, 4, 4), {}).ok());
  ASSERT_TRUE(host->RemoveNetwork("mlp").ok());
  std::vector<float> x;
  EXPECT_EQ(host->RunNetwork("mlp", {{"x", Input(1, 4, 1, &x)}})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(host->AddNetwork("mlp", MakeMlpModel(1, 4, 4), {}).ok());
}

TEST(HostManagerTest, ShutdownRefusesNewRuns) {
  auto host = MakeHost();
  ASSERT_TRUE(host->AddNetwork("mlp", MakeMlpModel(1, 4, 4), {}).ok());
  host->Shutdown();
  std::vector<float> x;
  EXPECT_EQ(host->RunNetwork("mlp", {{"x", Input(1, 4, 1, &x)}})
                .status()
                .code(),
            absl::StatusCode::kUnavailable);
}

TEST(HostManagerTest, AProgramsOwnDeviceTypeCanBeNamedInConfigs) {
  RegisterBuiltinDeviceTypes();
  // Registered once per process; a second registration is ALREADY_EXISTS.
  static const absl::Status registered = DeviceRegistry::Global().Register(
      "embedded-accelerator",
      [](int id, const DeviceConfig& config)
          -> absl::StatusOr<std::unique_ptr<DeviceManager>> {
        DeviceConfig inner = config;
        inner.name = "accel:" + std::to_string(id);
        auto d = SimDevice::Create(id, inner);
        if (!d.ok()) return d.status();
        return std::unique_ptr<DeviceManager>(*std::move(d));
      });
  ASSERT_TRUE(registered.ok()) << registered;
  DeviceConfig config;
  config.type = "embedded-accelerator";
  config.memory_bytes = 16 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, {config, config});
  ASSERT_TRUE(host.ok()) << host.status();
  ASSERT_EQ((*host)->GetDevices().size(), 2u);
  EXPECT_EQ((*host)->GetDevices()[1].name, "accel:1");
  ASSERT_TRUE((*host)->AddNetwork("mlp", MakeMlpModel(2, 4, 4), {}).ok());
  std::vector<float> x;
  auto out = (*host)->RunNetwork("mlp", {{"x", Input(2, 4, 1, &x)}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectNear((*out)[0].tensor, MlpReference(x, 2, 4, 4));
}

// --- Priority admission ----------------------------------------------------

// Lets launches through one at a time, as the test grants passes.
class Gate {
 public:
  void Pass() {
    absl::MutexLock lock(&mu_);
    ++waiting_;
    mu_.Await(absl::Condition(
        +[](int* permits) { return *permits > 0; }, &permits_));
    --permits_;
    --waiting_;
  }
  void Open(int n) {
    absl::MutexLock lock(&mu_);
    permits_ += n;
  }
  void AwaitWaiting(int n) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return waiting_ >= n;
    };
    mu_.Await(absl::Condition(&enough));
  }

 private:
  absl::Mutex mu_;
  int permits_ ABSL_GUARDED_BY(mu_) = 0;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
};

// A sim device whose every launch first passes the gate.
class GatedDevice : public FaultInjectingDevice {
 public:
  GatedDevice(std::unique_ptr<DeviceManager> inner, Gate* gate)
      : FaultInjectingDevice(std::move(inner)), gate_(gate) {}
  using FaultInjectingDevice::Launch;
  void Launch(Stream& stream, const LoadedFunction& function,
              std::vector<const DeviceTensor*> inputs,
              std::vector<DeviceTensor*> outputs,
              const LaunchOptions& options) override {
    stream.EnqueueHostCallback([gate = gate_] {
      gate->Pass();
      return absl::OkStatus();
    });
    FaultInjectingDevice::Launch(stream, function, std::move(inputs),
                                 std::move(outputs), options);
  }

 private:
  Gate* const gate_;
};

// One run at a time, each held at the gate until the test lets it pass;
// the runs' names in the order they finished (= were admitted).
class OrderedRuns {
 public:
  explicit OrderedRuns(int aging) {
    DeviceConfig config;
    config.memory_bytes = 64 * kMiB;
    std::vector<std::unique_ptr<DeviceManager>> devices;
    auto sim = SimDevice::Create(0, config);
    EXPECT_TRUE(sim.ok());
    devices.push_back(std::make_unique<GatedDevice>(
        std::unique_ptr<DeviceManager>(*std::move(sim)), &gate_));
    HostManagerOptions options;
    options.max_active_requests = 1;
    options.priority_aging = aging;
    auto host = HostManager::Create(options, std::move(devices));
    EXPECT_TRUE(host.ok()) << host.status();
    host_ = *std::move(host);
    EXPECT_TRUE(host_->AddNetwork("mlp", MakeMlpModel(1, 4, 4), {}).ok());
  }
  ~OrderedRuns() {
    gate_.Open(1 << 20);  // Whatever still waits ends.
    host_.reset();
  }

  void Run(const std::string& name, int priority) {
    std::vector<float> x;
    RunOptions options;
    options.priority = priority;
    host_->RunNetworkAsync(
        "mlp", {{"x", Input(1, 4, 1, &x)}}, options,
        [this, name](absl::StatusOr<std::vector<NamedTensor>> result) {
          EXPECT_TRUE(result.ok()) << name << ": " << result.status();
          absl::MutexLock lock(&mu_);
          finished_.push_back(name);
        });
  }
  // Starts a run that holds the only slot at the gate.
  void Block(const std::string& name) {
    Run(name, 0);
    gate_.AwaitWaiting(1);
  }
  // Lets the run at the gate finish; the next one is admitted (and held).
  void Step() {
    size_t before;
    {
      absl::MutexLock lock(&mu_);
      before = finished_.size();
    }
    gate_.Open(1);
    absl::MutexLock lock(&mu_);
    auto more = [this, before]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return finished_.size() > before;
    };
    mu_.Await(absl::Condition(&more));
  }
  std::vector<std::string> finished() {
    absl::MutexLock lock(&mu_);
    return finished_;
  }

 private:
  Gate gate_;
  std::unique_ptr<HostManager> host_;
  absl::Mutex mu_;
  std::vector<std::string> finished_ ABSL_GUARDED_BY(mu_);
};

TEST(HostManagerTest, QueuedRunsAreAdmittedByPriorityThenArrival) {
  OrderedRuns runs(/*aging=*/1000);
  runs.Block("blocker");
  for (auto [name, priority] : std::vector<std::pair<std::string, int>>{
           {"low", -1}, {"a0", 0}, {"b5", 5}, {"c0", 0}, {"d10", 10},
           {"e5", 5}, {"f0", 0}}) {
    runs.Run(name, priority);
  }
  for (int i = 0; i < 8; ++i) runs.Step();
  EXPECT_EQ(runs.finished(),
            (std::vector<std::string>{"blocker", "d10", "b5", "e5", "a0",
                                      "c0", "f0", "low"}));
}

// A steady stream of urgent runs: without aging the low one waits for as
// long as they come; with aging 2 it goes after two of them.
TEST(HostManagerTest, AgingKeepsLowPriorityRunsFromStarving) {
  for (int aging : {2, 1000}) {
    SCOPED_TRACE(aging);
    OrderedRuns runs(aging);
    runs.Block("blocker");
    runs.Run("low", 0);
    runs.Run("h1", 1);
    for (int i = 2; i <= 6; ++i) {
      runs.Step();  // Admits the next run, then another urgent one comes.
      runs.Run("h" + std::to_string(i), 1);
    }
    std::vector<std::string> first = runs.finished();
    if (aging == 2) {
      EXPECT_EQ(first, (std::vector<std::string>{"blocker", "h1", "h2", "low",
                                                 "h3"}));
    } else {
      EXPECT_EQ(first, (std::vector<std::string>{"blocker", "h1", "h2", "h3",
                                                 "h4"}));
    }
    for (int i = 0; i < 3; ++i) runs.Step();
    EXPECT_EQ(runs.finished().size(), 8u);
    if (aging != 2) {
      EXPECT_EQ(runs.finished().back(), "low");
    }
  }
}

// --- ReplaceNetwork --------------------------------------------------------

// A run in flight when its network is replaced finishes on the version it
// started on; runs after the swap get the new one; a replacement that
// fails leaves the serving version untouched.
TEST(HostManagerTest, ReplaceKeepsInFlightRunsOnTheirVersion) {
  Gate gate;
  DeviceConfig config;
  config.memory_bytes = 64 * kMiB;
  auto sim = SimDevice::Create(0, config);
  ASSERT_TRUE(sim.ok());
  std::vector<std::unique_ptr<DeviceManager>> devices;
  devices.push_back(std::make_unique<GatedDevice>(
      std::unique_ptr<DeviceManager>(*std::move(sim)), &gate));
  auto host = HostManager::Create({}, std::move(devices));
  ASSERT_TRUE(host.ok()) << host.status();
  // Version 1 answers 4 values, version 2 answers 3.
  ASSERT_TRUE((*host)->ReplaceNetwork("m", MakeMlpModel(1, 4, 4), {}).ok());

  std::vector<float> x;
  const Tensor input = Input(1, 4, 1, &x);
  absl::Notification first_done;
  absl::StatusOr<std::vector<NamedTensor>> first;
  (*host)->RunNetworkAsync("m", {{"x", input}}, {},
                           [&](absl::StatusOr<std::vector<NamedTensor>> out) {
                             first = std::move(out);
                             first_done.Notify();
                           });
  gate.AwaitWaiting(1);  // The run holds version 1's function.

  absl::StatusOr<NetworkInfo> replaced;
  std::thread replace([&] {
    replaced = (*host)->ReplaceNetwork("m", MakeMlpModel(1, 4, 3), {});
  });
  // The swap is visible before the old version drains.
  for (;;) {
    absl::StatusOr<NetworkInfo> info = (*host)->GetNetwork("m");
    ASSERT_TRUE(info.ok()) << info.status();
    if (info->outputs[0].shape == Shape({1, 3})) break;
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_FALSE(first_done.HasBeenNotified());
  absl::Notification second_done;
  absl::StatusOr<std::vector<NamedTensor>> second;
  (*host)->RunNetworkAsync("m", {{"x", input}}, {},
                           [&](absl::StatusOr<std::vector<NamedTensor>> out) {
                             second = std::move(out);
                             second_done.Notify();
                           });
  gate.Open(1 << 20);
  first_done.WaitForNotification();
  second_done.WaitForNotification();
  replace.join();
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectNear((*first)[0].tensor, MlpReference(x, 1, 4, 4));
  ASSERT_TRUE(second.ok()) << second.status();
  ExpectNear((*second)[0].tensor, MlpReference(x, 1, 4, 3));

  // A version that fails to import keeps version 2 serving.
  EXPECT_EQ((*host)->ReplaceNetwork("m", "not an ONNX model", {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<NamedTensor>> after =
      (*host)->RunNetwork("m", {{"x", input}});
  ASSERT_TRUE(after.ok()) << after.status();
  ExpectNear((*after)[0].tensor, MlpReference(x, 1, 4, 3));
  ASSERT_EQ((*host)->ListNetworks().size(), 1u);

  EXPECT_TRUE((*host)->RemoveNetwork("m").ok());
  EXPECT_EQ((*host)->GetNetwork("m").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(HostManagerTest, PriorityAgingMustBePositive) {
  HostManagerOptions options;
  options.priority_aging = 0;
  DeviceConfig config;
  EXPECT_EQ(HostManager::CreateFromConfigs(options, {config}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostManagerTest, UnknownDeviceTypeIsNotFound) {
  DeviceConfig c;
  c.type = "warp-drive";
  EXPECT_EQ(HostManager::CreateFromConfigs({}, {c}).status().code(),
            absl::StatusCode::kNotFound);
}

// --- Statistics ----------------------------------------------------------

// Counts after successful and failing runs, and durations no shorter than
// the timing model makes them: every copy takes the link latency, the
// launch its FLOPs at the device's rate, and the second launch fails.
TEST(HostManagerStatisticsTest, CountsAndDurationsAfterSuccessAndFailure) {
  constexpr double kFlopsPerSecond = 1500;
  constexpr absl::Duration kLatency = absl::Milliseconds(2);
  DeviceConfig device;
  device.type = "faulty";
  device.memory_bytes = 64 * kMiB;
  device.params["fail_launch"] = "2";
  device.params["compute_gflops"] = "0.0000015";
  device.params["link_latency_us"] = "2000";
  auto host = HostManager::CreateFromConfigs({}, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<NetworkInfo> info =
      (*host)->AddNetwork("mlp", MakeMlpModel(1, 4, 3), {});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->partitions.size(), 1u);
  const absl::Duration launch =
      absl::Seconds(info->partitions[0].flops / kFlopsPerSecond);
  ASSERT_GT(launch, absl::Milliseconds(5));

  absl::StatusOr<NetworkStatistics> stats = (*host)->GetStatistics("mlp");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->inference_count, 0u);
  EXPECT_EQ(stats->last_inference, absl::UnixEpoch());

  const absl::Time before = absl::Now();
  std::vector<float> x;
  std::vector<absl::StatusCode> codes;
  for (int i = 0; i < 4; ++i) {
    codes.push_back((*host)
                        ->RunNetwork("mlp", {{"x", Input(1, 4, 1, &x)}})
                        .status()
                        .code());
  }
  EXPECT_EQ(codes, (std::vector<absl::StatusCode>{
                       absl::StatusCode::kOk, absl::StatusCode::kInternal,
                       absl::StatusCode::kOk, absl::StatusCode::kOk}));
  EXPECT_EQ((*host)
                ->RunNetwork("mlp", {{"x", Input(1, 5, 1, &x)}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // Not the network's: counted nowhere.
  EXPECT_EQ((*host)
                ->RunNetwork("absent", {{"x", Input(1, 4, 1, &x)}})
                .status()
                .code(),
            absl::StatusCode::kNotFound);

  stats = (*host)->GetStatistics("mlp");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->name, "mlp");
  EXPECT_EQ(stats->success_count, 3u);
  EXPECT_EQ(stats->failure_count, 2u);
  EXPECT_EQ(stats->inference_count, 5u);
  EXPECT_EQ(stats->execution_count, 3u);
  EXPECT_GE(stats->last_inference, before);
  EXPECT_EQ(stats->request.count, 3u);
  EXPECT_EQ(stats->failed.count, 2u);
  EXPECT_EQ(stats->queue.count, 3u);
  EXPECT_EQ(stats->compute_input.count, 3u);
  EXPECT_EQ(stats->compute_infer.count, 3u);
  EXPECT_EQ(stats->compute_output.count, 3u);
  EXPECT_GE(absl::Nanoseconds(stats->compute_infer.total_ns), 3 * launch);
  EXPECT_GE(stats->compute_infer.p50_us, absl::ToDoubleMicroseconds(launch));
  EXPECT_GE(absl::Nanoseconds(stats->compute_input.total_ns), 3 * kLatency);
  EXPECT_GE(stats->compute_output.p99_us,
            absl::ToDoubleMicroseconds(kLatency));
  // One stream, one partition: the phases follow one another within each
  // request, and the partition is the whole compute.
  EXPECT_GE(stats->request.total_ns, stats->compute_input.total_ns +
                                         stats->compute_infer.total_ns +
                                         stats->compute_output.total_ns);
  // The run that failed on the device did so after its input copy.
  EXPECT_GE(absl::Nanoseconds(stats->failed.total_ns), kLatency);
  ASSERT_EQ(stats->partitions.size(), 1u);
  EXPECT_EQ(stats->partitions[0].name, info->partitions[0].name);
  EXPECT_EQ(stats->partitions[0].device_name,
            info->partitions[0].device_name);
  EXPECT_EQ(stats->partitions[0].compute.count, 3u);
  EXPECT_EQ(stats->partitions[0].compute.total_ns,
            stats->compute_infer.total_ns);
  EXPECT_EQ(stats->queue_depth, 0);
  EXPECT_EQ(stats->in_flight, 0);

  // The device saw the same three launches, and holds the network.
  std::vector<DeviceStatistics> devices = (*host)->GetDeviceStatistics();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].device.name, info->partitions[0].device_name);
  EXPECT_EQ(devices[0].compute.count, 3u);
  EXPECT_EQ(devices[0].compute.total_ns, stats->compute_infer.total_ns);
  EXPECT_LT(devices[0].device.available_memory_bytes,
            devices[0].device.memory_bytes);
}

// Queue depth and runs in flight while runs wait: one slot, a launch of
// about a second, three runs. Cancelled, they all end, and the gauges
// return to 0.
TEST(HostManagerStatisticsTest, QueueDepthAndInFlightWhileRunsWait) {
  DeviceConfig device;
  device.memory_bytes = 64 * kMiB;
  device.params["compute_gflops"] = "0.00000003";  // 30 FLOP/s.
  HostManagerOptions options;
  options.max_active_requests = 1;
  auto host = HostManager::CreateFromConfigs(options, {device});
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<NetworkInfo> info =
      (*host)->AddNetwork("slow", MakeMlpModel(1, 4, 3), {});
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_GT(info->partitions[0].flops / 30, 0.5);  // Seconds per launch.

  auto cancel = std::make_shared<CancellationToken>();
  RunOptions run;
  run.cancel = cancel;
  std::vector<absl::Notification> done(3);
  std::vector<absl::Status> status(3);
  std::vector<float> x;
  for (int i = 0; i < 3; ++i) {
    (*host)->RunNetworkAsync(
        "slow", {{"x", Input(1, 4, 1, &x)}}, run,
        [&, i](absl::StatusOr<std::vector<NamedTensor>> out) {
          status[i] = out.status();
          done[i].Notify();
        });
  }
  absl::StatusOr<NetworkStatistics> stats = (*host)->GetStatistics("slow");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->in_flight, 1);
  EXPECT_EQ(stats->queue_depth, 2);
  cancel->Cancel();
  for (int i = 0; i < 3; ++i) {
    done[i].WaitForNotification();
    EXPECT_EQ(status[i].code(), absl::StatusCode::kCancelled) << status[i];
  }
  stats = (*host)->GetStatistics("slow");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->in_flight, 0);
  EXPECT_EQ(stats->queue_depth, 0);
  EXPECT_EQ(stats->failure_count, 3u);
  EXPECT_EQ(stats->success_count, 0u);
  EXPECT_EQ(stats->execution_count, 0u);
}

TEST(HostManagerStatisticsTest, AllNetworksByNameAndResetOnReAdd) {
  auto host = MakeHost();
  ASSERT_TRUE(host->AddNetwork("b", MakeMlpModel(1, 4, 4), {}).ok());
  ASSERT_TRUE(host->AddNetwork("a", MakeMlpModel(1, 4, 4), {}).ok());
  std::vector<float> x;
  ASSERT_TRUE(host->RunNetwork("b", {{"x", Input(1, 4, 1, &x)}}).ok());
  std::vector<NetworkStatistics> all = host->GetAllStatistics();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].name, "a");
  EXPECT_EQ(all[0].success_count, 0u);
  EXPECT_EQ(all[1].name, "b");
  EXPECT_EQ(all[1].success_count, 1u);
  EXPECT_EQ(host->GetStatistics("c").status().code(),
            absl::StatusCode::kNotFound);
  // Statistics count since the network was added.
  ASSERT_TRUE(host->RemoveNetwork("b").ok());
  EXPECT_EQ(host->GetStatistics("b").status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(host->AddNetwork("b", MakeMlpModel(1, 4, 4), {}).ok());
  EXPECT_EQ(host->GetStatistics("b")->success_count, 0u);
}

}  // namespace
}  // namespace glint
