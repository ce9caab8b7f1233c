// Dynamic batching through HostManager: batched runs give, bit for bit,
// what unbatched runs of the same requests give (ONNX node cases, a small
// CNN, and a sequence model whose requests merge by length, each on one
// device and pipelined over two), whatever the batch's
// size and the row's position in it (on every CPU with AVX2 + FMA or
// AVX-512: devices/cpu/isa.h); bad, late and cancelled requests fail
// alone; AddNetwork checks the batch dimension.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "devices/cpu/isa.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "onnx/onnx_tensor.h"
#include "onnx/test_models.h"
#include "runtime/host_manager.h"

namespace glint {
namespace {

using ::glint::testing::OnnxModelBuilder;
using ::glint::testing::SetAttribute;

constexpr char kNodeDir[] = "/usr/share/libonnx-testdata/data/node";
constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

std::unique_ptr<HostManager> MakeHost(int devices = 1) {
  std::vector<DeviceConfig> configs(devices);
  for (DeviceConfig& c : configs) c.memory_bytes = 256 * kMiB;
  auto host = HostManager::CreateFromConfigs({}, configs);
  EXPECT_TRUE(host.ok()) << host.status();
  return *std::move(host);
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

DynamicBatching Batching(int max, std::vector<int> preferred = {},
                         absl::Duration delay = kMaxQueueDelay) {
  DynamicBatching b;
  b.max_batch_size = max;
  b.max_queue_delay = delay;
  b.preferred_batch_sizes = std::move(preferred);
  return b;
}

AddNetworkOptions With(DynamicBatching batching) {
  AddNetworkOptions options;
  options.batching = std::move(batching);
  return options;
}

// Whether `a` and `b` are the same bits; else says where they differ.
// Only on a CPU with neither AVX-512 nor AVX2 + FMA, whose MatMul runs on
// oneDNN's SSE sgemm (which picks kernels by M), do float32 values this
// many representable steps apart or fewer count as the same.
constexpr int64_t kUlpsWhereKernelsDiffer = 8;

int64_t UlpDistance(float x, float y) {
  int32_t ix, iy;
  std::memcpy(&ix, &x, sizeof ix);
  std::memcpy(&iy, &y, sizeof iy);
  // Map the sign-magnitude bits onto a monotonic integer line.
  const int64_t lx = ix < 0 ? int64_t{INT32_MIN} - ix : ix;
  const int64_t ly = iy < 0 ? int64_t{INT32_MIN} - iy : iy;
  return lx > ly ? lx - ly : ly - lx;
}

::testing::AssertionResult SameBits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return ::testing::AssertionFailure()
           << "shape " << a.shape().ToString() << " vs " << b.shape().ToString();
  }
  if (std::memcmp(a.raw_data(), b.raw_data(), a.num_bytes()) == 0) {
    return ::testing::AssertionSuccess();
  }
  int differing = 0;
  double worst = 0;
  int64_t worst_ulps = 0;
  if (a.dtype() == DType::kFloat32) {
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      const float x = a.data<float>()[i], y = b.data<float>()[i];
      if (std::memcmp(&x, &y, sizeof x) != 0) {
        ++differing;
        worst = std::max(worst, static_cast<double>(std::abs(x - y)));
        worst_ulps = std::max(worst_ulps, UlpDistance(x, y));
      }
    }
    if (!CpuKernelsRoundAlikeAtEveryBatchSize() &&
        worst_ulps <= kUlpsWhereKernelsDiffer) {
      return ::testing::AssertionSuccess();
    }
  }
  return ::testing::AssertionFailure()
         << differing << " of " << a.num_elements()
         << " elements differ, by up to " << worst << " (" << worst_ulps
         << " ULP); kernels round alike at every batch size on this CPU: "
         << CpuKernelsRoundAlikeAtEveryBatchSize();
}

// Rows for a request: `rows` rows cycled from `source`'s, starting at
// `shift`, scaled by `scale` so that requests differ.
Tensor MakeRows(const Tensor& source, int64_t rows, int64_t shift,
                float scale) {
  Shape shape = source.shape();
  const int64_t n = shape.dim(0);
  shape.mutable_dims()[0] = rows;
  Tensor out = *Tensor::Create(source.dtype(), shape);
  const int64_t per_row = source.num_elements() / n;
  for (int64_t r = 0; r < rows; ++r) {
    const float* from = source.data<float>() + ((r + shift) % n) * per_row;
    for (int64_t i = 0; i < per_row; ++i) {
      out.data<float>()[r * per_row + i] = from[i] * scale;
    }
  }
  return out;
}

// One caller's run, answered asynchronously.
struct Pending {
  std::vector<NamedTensor> inputs;
  absl::Notification done;
  absl::StatusOr<std::vector<NamedTensor>> result;
};

void Start(HostManager& host, const std::string& name, Pending& p,
           RunOptions options = {}) {
  host.RunNetworkAsync(name, p.inputs, options,
                       [&p](absl::StatusOr<std::vector<NamedTensor>> r) {
                         p.result = std::move(r);
                         p.done.Notify();
                       });
}

// --- ONNX node cases -------------------------------------------------------

struct NodeCase {
  std::string name;
  // Inputs that carry the batch; the others become initializers (weights).
  std::vector<std::string> batched;
};

// The case's model with its non-batched inputs frozen into initializers
// and the first dim of the batched inputs and of every output symbolic.
std::string BatchableModel(const std::string& dir, const NodeCase& c,
                           std::map<std::string, Tensor>* batched_inputs) {
  onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(ReadFileOrDie(dir + "/model.onnx")));
  onnx::GraphProto* graph = model.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  for (int i = 0; i < graph->input_size(); ++i) {
    onnx::TensorProto data;
    EXPECT_TRUE(data.ParseFromString(ReadFileOrDie(
        absl::StrCat(dir, "/test_data_set_0/input_", i, ".pb"))));
    onnx::ValueInfoProto in = graph->input(i);
    data.set_name(in.name());
    if (std::find(c.batched.begin(), c.batched.end(), in.name()) ==
        c.batched.end()) {
      *graph->add_initializer() = data;
      continue;
    }
    absl::StatusOr<Tensor> tensor = TensorFromOnnxProto(data);
    EXPECT_TRUE(tensor.ok()) << tensor.status();
    (*batched_inputs)[in.name()] = *std::move(tensor);
    in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(
        0)->set_dim_param("N");
    *kept.Add() = in;
  }
  *graph->mutable_input() = kept;
  for (onnx::ValueInfoProto& out : *graph->mutable_output()) {
    out.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(
        0)->set_dim_param("N");
  }
  graph->clear_value_info();
  return model.SerializeAsString();
}

// Runs `requests` (row counts, in arrival order) through network `name`,
// each a pending run whose rows are made from `source`; the requests fill
// batches exactly (by size or a preferred size), so none waits for the
// delay.
std::vector<std::unique_ptr<Pending>> RunRequests(
    HostManager& host, const std::string& name,
    const std::map<std::string, Tensor>& source,
    const std::vector<int64_t>& requests, int salt) {
  std::vector<std::unique_ptr<Pending>> pending;
  for (size_t q = 0; q < requests.size(); ++q) {
    auto p = std::make_unique<Pending>();
    for (const auto& [input, tensor] : source) {
      p->inputs.push_back(
          {input, MakeRows(tensor, requests[q], q + salt,
                           1.0f + 0.125f * static_cast<float>(q + salt))});
    }
    Start(host, name, *p);
    pending.push_back(std::move(p));
  }
  for (auto& p : pending) p->done.WaitForNotification();
  return pending;
}

TEST(HostManagerBatchingTest, OnnxNodeCasesMatchUnbatchedRunsBitForBit) {
  const std::vector<NodeCase> cases = {
      {"test_relu", {"x"}},
      {"test_sigmoid", {"x"}},
      {"test_softmax_axis_2", {"x"}},
      {"test_matmul_2d", {"a"}},
      {"test_matmul_3d", {"a", "b"}},
      {"test_gemm_default_vector_bias", {"a"}},
      {"test_conv_with_strides_padding", {"x"}},
      {"test_maxpool_2d_default", {"x"}},
      {"test_averagepool_2d_default", {"x"}},
      {"test_batchnorm_example", {"x"}},
      {"test_layer_normalization_3d_axis_negative_1_epsilon", {"X"}},
  };
  std::unique_ptr<HostManager> host = MakeHost();
  constexpr int kMax = 8;
  for (const NodeCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::map<std::string, Tensor> source;
    const std::string model =
        BatchableModel(absl::StrCat(kNodeDir, "/", c.name), c, &source);
    // Batches of 8 rows in several orders, 6 rows padded to 8, 4 rows
    // padded to 5 (a preferred, so compiled, size) and 5 rows at 5: rows
    // at every position, in batches of every kind.
    ASSERT_TRUE(
        host->AddNetwork("full", model, With(Batching(kMax))).ok());
    ASSERT_TRUE(
        host->AddNetwork("partial", model, With(Batching(kMax, {5})))
            .ok());
    struct Run {
      std::string network;
      std::vector<int64_t> requests;
      int salt;
    };
    const std::vector<Run> runs = {{"full", {2, 1, 3, 1, 1}, 0},
                                   {"full", {1, 1, 3, 1, 2}, 0},
                                   {"full", {3, 3, 3, 5}, 3},
                                   {"partial", {3, 2}, 0},
                                   {"full", {8}, 5},
                                   {"partial", {4, 5}, 7}};
    // The unbatched reference of each request size: the same model,
    // compiled at that size, without batching.
    std::map<int64_t, std::string> reference;
    for (const Run& run : runs) {
      for (int64_t rows : run.requests) {
        if (reference.count(rows) > 0) continue;
        AddNetworkOptions options;
        for (const auto& [input, tensor] : source) {
          Shape shape = tensor.shape();
          shape.mutable_dims()[0] = rows;
          options.input_shapes[input] = shape;
        }
        reference[rows] = absl::StrCat("ref", rows);
        ASSERT_TRUE(host->AddNetwork(reference[rows], model, options).ok());
      }
    }
    int checked = 0;
    for (const Run& run : runs) {
      std::vector<std::unique_ptr<Pending>> got =
          RunRequests(*host, run.network, source, run.requests, run.salt);
      for (size_t q = 0; q < got.size(); ++q) {
        ASSERT_TRUE(got[q]->result.ok()) << got[q]->result.status();
        absl::StatusOr<std::vector<NamedTensor>> want =
            host->RunNetwork(reference[run.requests[q]], got[q]->inputs);
        ASSERT_TRUE(want.ok()) << want.status();
        ASSERT_EQ(got[q]->result->size(), want->size());
        for (size_t o = 0; o < want->size(); ++o) {
          EXPECT_EQ((*got[q]->result)[o].name, (*want)[o].name);
          EXPECT_TRUE(SameBits((*got[q]->result)[o].tensor, (*want)[o].tensor))
              << run.network << " request " << q << " output " << o;
          ++checked;
        }
      }
    }
    EXPECT_GT(checked, 0);
    for (const auto& [rows, name] : reference) {
      ASSERT_TRUE(host->RemoveNetwork(name).ok());
    }
    ASSERT_TRUE(host->RemoveNetwork("full").ok());
    ASSERT_TRUE(host->RemoveNetwork("partial").ok());
  }
}

// --- A small CNN ---------------------------------------------------------------

std::vector<float> Pseudo(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng) * scale;
  return v;
}

// x: float[N, 3, 16, 16] -> conv 3x3 (16) + relu -> conv 3x3 stride 2 (32)
// + relu -> conv 1x1 (32) + add (residual) + relu -> global average pool
// -> flatten -> gemm (10) -> softmax: y: float[N, 10].
std::string MakeCnn() {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {-1, 3, 16, 16}).Output("y", kFloat, {-1, 10});
  b.FloatInitializer("w1", {16, 3, 3, 3}, Pseudo(16 * 27, 0.3f, 1));
  b.FloatInitializer("b1", {16}, Pseudo(16, 0.1f, 2));
  b.FloatInitializer("w2", {32, 16, 3, 3}, Pseudo(32 * 144, 0.1f, 3));
  b.FloatInitializer("b2", {32}, Pseudo(32, 0.1f, 4));
  b.FloatInitializer("w3", {32, 32, 1, 1}, Pseudo(32 * 32, 0.2f, 5));
  b.FloatInitializer("w4", {10, 32}, Pseudo(320, 0.3f, 6));
  b.FloatInitializer("b4", {10}, Pseudo(10, 0.1f, 7));
  auto& c1 = b.Node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1");
  SetAttribute(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  b.Node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& c2 = b.Node("Conv", {"r1", "w2", "b2"}, {"c2"}, "conv2");
  SetAttribute(c2, "pads", std::vector<int64_t>{1, 1, 1, 1});
  SetAttribute(c2, "strides", std::vector<int64_t>{2, 2});
  b.Node("Relu", {"c2"}, {"r2"}, "relu2");
  b.Node("Conv", {"r2", "w3"}, {"c3"}, "conv3");
  b.Node("Add", {"c3", "r2"}, {"a3"}, "add3");
  b.Node("Relu", {"a3"}, {"r3"}, "relu3");
  b.Node("GlobalAveragePool", {"r3"}, {"p"}, "pool");
  b.Node("Flatten", {"p"}, {"f"}, "flatten");
  auto& g = b.Node("Gemm", {"f", "w4", "b4"}, {"logits"}, "fc");
  SetAttribute(g, "transB", int64_t{1});
  b.Node("Softmax", {"logits"}, {"y"}, "softmax");
  return b.Serialize();
}

Tensor CnnInput(int64_t rows, uint32_t seed) {
  return Tensor::FromVector(DType::kFloat32, Shape({rows, 3, 16, 16}),
                            Pseudo(rows * 3 * 16 * 16, 1.0f, seed));
}

// How many of a test's concurrent requests have been answered.
class Answers {
 public:
  void Add() {
    absl::MutexLock lock(&mu_);
    ++count_;
  }
  // Blocks until `n` requests have been answered.
  void AwaitAtLeast(int n) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return count_ >= n;
    };
    mu_.Await(absl::Condition(&reached));
  }

 private:
  absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

// Starts every request of `pending` on network `name`, from 4 threads at
// once (request i from thread i % 4), each answer counted in `answers`.
void StartFromFourThreads(HostManager& host, const std::string& name,
                          std::vector<std::unique_ptr<Pending>>& pending,
                          Answers* answers) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = t; i < pending.size(); i += 4) {
        Pending* p = pending[i].get();
        host.RunNetworkAsync(
            name, p->inputs, {},
            [p, answers](absl::StatusOr<std::vector<NamedTensor>> r) {
              p->result = std::move(r);
              answers->Add();
              p->done.Notify();
            });
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

// Many concurrent batch-1 requests and some of 3 rows, from 4 threads at
// once, so batches of many compositions form; every answer is bit for bit
// the unbatched network's. The delay is the longest allowed: batches form
// only when full (or at a preferred size), and removing the network at the
// end flushes the rest.
void CheckCnn(int devices, const PartitionOptions& partition,
              std::vector<int> preferred) {
  std::unique_ptr<HostManager> host = MakeHost(devices);
  const std::string cnn = MakeCnn();
  AddNetworkOptions batched;
  batched.batching = Batching(8, preferred);
  batched.partition = partition;
  absl::StatusOr<NetworkInfo> info = host->AddNetwork("cnn", cnn, batched);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->inputs[0].shape, Shape({8, 3, 16, 16}));
  EXPECT_EQ(info->outputs[0].shape, Shape({8, 10}));
  EXPECT_EQ(info->batching.max_batch_size, 8);
  if (devices > 1) {
    ASSERT_EQ(info->partitions.size(), 2u);
    EXPECT_NE(info->partitions[0].device_id, info->partitions[1].device_id);
  }
  for (int64_t rows : {1, 3}) {
    AddNetworkOptions options;
    options.input_shapes["x"] = Shape({rows, 3, 16, 16});
    ASSERT_TRUE(
        host->AddNetwork(absl::StrCat("ref", rows), cnn, options).ok());
  }
  constexpr int kRequests = 64;
  std::vector<std::unique_ptr<Pending>> pending;
  for (int i = 0; i < kRequests; ++i) {
    auto p = std::make_unique<Pending>();
    p->inputs.push_back({"x", CnnInput(i % 5 == 0 ? 3 : 1, 100 + i)});
    pending.push_back(std::move(p));
  }
  Answers answers;
  StartFromFourThreads(*host, "cnn", pending, &answers);
  if (preferred.empty()) {
    // Every batch but the last (under 8 rows, waiting) is full: 8 rows,
    // or 6 or more that the next request did not fit. So at most 7
    // requests wait, and the executions so far served several each.
    answers.AwaitAtLeast(kRequests - 7);
    absl::StatusOr<NetworkStatistics> stats = host->GetStatistics("cnn");
    ASSERT_TRUE(stats.ok());
    // 6 rows or more of 1 or 3 each: 2 requests or more per execution.
    EXPECT_GE(stats->success_count, 2 * stats->execution_count)
        << stats->execution_count << " executions";
    EXPECT_GT(stats->execution_count, 0u);
  }
  ASSERT_TRUE(host->RemoveNetwork("cnn").ok());  // Runs what waits.
  for (int i = 0; i < kRequests; ++i) {
    pending[i]->done.WaitForNotification();
    ASSERT_TRUE(pending[i]->result.ok()) << pending[i]->result.status();
    const int64_t rows = pending[i]->inputs[0].tensor.shape().dim(0);
    absl::StatusOr<std::vector<NamedTensor>> want =
        host->RunNetwork(absl::StrCat("ref", rows), pending[i]->inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_TRUE(
        SameBits((*pending[i]->result)[0].tensor, (*want)[0].tensor))
        << "request " << i;
  }
}

// Batches padded to 8 rows.
TEST(HostManagerBatchingTest, CnnMatchesUnbatchedRunsBitForBit) {
  CheckCnn(1, {}, {});
}

TEST(HostManagerBatchingTest, PipelinedCnnMatchesUnbatchedRunsBitForBit) {
  PartitionOptions partition;
  partition.strategy = PartitionStrategy::kLoadBalanced;
  partition.plan_devices = 2;
  // Compiled at 1, 4 and 8 rows: batches run at several sizes.
  CheckCnn(2, partition, {1, 4});
}

// --- A dynamic dim beside the batch ---------------------------------------------

// x [N, S, 4] -> y = Relu(x W) [N, S, 3] and z = mean of y over S [N, 3]:
// rows independent, S free per request.
std::string SequenceModel() {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {-1, -1, 4})
      .Output("y", kFloat, {-1, -1, 3})
      .Output("z", kFloat, {-1, 3});
  b.FloatInitializer("w", {4, 3}, Pseudo(12, 0.5f, 7));
  b.Node("MatMul", {"x", "w"}, {"m"}, "matmul");
  b.Node("Relu", {"m"}, {"y"}, "relu");
  auto& mean = b.Node("ReduceMean", {"y"}, {"z"}, "mean");
  SetAttribute(mean, "axes", std::vector<int64_t>{1});
  SetAttribute(mean, "keepdims", int64_t{0});
  onnx::ModelProto& proto = b.mutable_proto();
  // The builder names every -1 "N"; the sequence is "S".
  proto.mutable_graph()->mutable_input(0)->mutable_type()
      ->mutable_tensor_type()->mutable_shape()->mutable_dim(1)
      ->set_dim_param("S");
  proto.mutable_graph()->mutable_output(0)->mutable_type()
      ->mutable_tensor_type()->mutable_shape()->mutable_dim(1)
      ->set_dim_param("S");
  return proto.SerializeAsString();
}

// Requests of several sequence lengths in flight at once: each batch
// merges requests of one length only, and every answer is bit for bit the
// unbatched network's; the sequence keeps its bound. On `devices` devices,
// the network split by `partition`.
void CheckSequenceBatching(int devices, const PartitionOptions& partition) {
  std::unique_ptr<HostManager> host = MakeHost(devices);
  const std::string model = SequenceModel();
  AddNetworkOptions batched = With(Batching(4, {2}));
  batched.max_dims["S"] = 8;
  batched.partition = partition;
  absl::StatusOr<NetworkInfo> info = host->AddNetwork("seq", model, batched);
  ASSERT_TRUE(info.ok()) << info.status();
  if (devices > 1) {
    ASSERT_EQ(info->partitions.size(), 2u);
    EXPECT_NE(info->partitions[0].device_id, info->partitions[1].device_id);
  }
  EXPECT_EQ(info->inputs[0].shape, Shape({4, Shape::kUnknownDim, 4}));
  ASSERT_EQ(info->dynamic_dims.size(), 1u);  // The batch is bound.
  EXPECT_EQ(info->dynamic_dims[0].name, "S");
  EXPECT_EQ(info->dynamic_dims[0].axis, 1);
  EXPECT_EQ(info->dynamic_dims[0].max, 8);
  ASSERT_TRUE(host->AddNetwork("ref", model, AddNetworkOptions()).ok());

  constexpr int kRequests = 48;
  const int64_t lengths[] = {2, 5, 7, 5};
  std::vector<std::unique_ptr<Pending>> pending;
  for (int i = 0; i < kRequests; ++i) {
    auto p = std::make_unique<Pending>();
    const int64_t rows = i % 3 == 0 ? 2 : 1;
    const int64_t seq = lengths[i % 4];
    p->inputs.push_back(
        {"x", Tensor::FromVector(DType::kFloat32, Shape({rows, seq, 4}),
                                 Pseudo(rows * seq * 4, 1.0f, 300 + i))});
    pending.push_back(std::move(p));
  }
  Answers answers;
  StartFromFourThreads(*host, "seq", pending, &answers);
  // Batches run at 2 rows (the preferred size) or 4: a 2-row request
  // alone, or 1-row requests of one length together. So at most one
  // request per length (3) waits, and the others merged.
  answers.AwaitAtLeast(kRequests - 3);
  absl::StatusOr<NetworkStatistics> stats = host->GetStatistics("seq");
  ASSERT_TRUE(stats.ok());
  EXPECT_LT(stats->execution_count, stats->success_count);
  ASSERT_TRUE(host->RemoveNetwork("seq").ok());  // Runs what waits.
  for (int i = 0; i < kRequests; ++i) {
    pending[i]->done.WaitForNotification();
    ASSERT_TRUE(pending[i]->result.ok())
        << "request " << i << ": " << pending[i]->result.status();
    absl::StatusOr<std::vector<NamedTensor>> want =
        host->RunNetwork("ref", pending[i]->inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    ASSERT_EQ(pending[i]->result->size(), 2u);
    for (int k = 0; k < 2; ++k) {
      EXPECT_TRUE(SameBits((*pending[i]->result)[k].tensor,
                           (*want)[k].tensor))
          << "request " << i << " output " << k;
    }
  }

  // Over the bound: refused alone. (No delay now: a lone request runs.)
  batched.batching.max_queue_delay = absl::ZeroDuration();
  ASSERT_TRUE(host->AddNetwork("seq", model, batched).ok());
  absl::StatusOr<std::vector<NamedTensor>> over = host->RunNetwork(
      "seq", {{"x", Tensor::FromVector(DType::kFloat32, Shape({1, 9, 4}),
                                       Pseudo(36, 1.0f, 1))}});
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(over.status().message().find("over its bound 8"),
            absl::string_view::npos)
      << over.status();
  absl::StatusOr<std::vector<NamedTensor>> ok = host->RunNetwork(
      "seq", {{"x", Tensor::FromVector(DType::kFloat32, Shape({3, 8, 4}),
                                       Pseudo(96, 1.0f, 2))}});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)[0].tensor.shape(), Shape({3, 8, 3}));
  EXPECT_EQ((*ok)[1].tensor.shape(), Shape({3, 3}));
}

TEST(HostManagerBatchingTest, RequestsMergeOnlyWithTheirSequenceLength) {
  CheckSequenceBatching(1, {});
}

// Split after the Relu: the cut carries [rows, S, 3], S per batch.
TEST(HostManagerBatchingTest, PipelinedRequestsMergeOnlyWithTheirLength) {
  PartitionOptions partition;
  partition.strategy = PartitionStrategy::kUser;
  partition.user_plan = {{"matmul", 0}, {"relu", 0}, {"mean", 1}};
  CheckSequenceBatching(2, partition);
}

// --- Errors, one request at a time --------------------------------------------

std::string ReluModel() {
  OnnxModelBuilder b;
  b.Input("x", kFloat, {-1, 4}).Output("y", kFloat, {-1, 4});
  b.Node("Relu", {"x"}, {"y"});
  return b.Serialize();
}

Tensor Rows(int64_t rows, float first, int64_t width = 4) {
  std::vector<float> v(rows * width);
  for (size_t i = 0; i < v.size(); ++i) v[i] = first - static_cast<float>(i);
  return Tensor::FromVector(DType::kFloat32, Shape({rows, width}), v);
}

void ExpectRelu(const Pending& p) {
  ASSERT_TRUE(p.result.ok()) << p.result.status();
  const Tensor& x = p.inputs[0].tensor;
  const Tensor& y = (*p.result)[0].tensor;
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    EXPECT_EQ(y.data<float>()[i], std::max(0.0f, x.data<float>()[i]));
  }
}

TEST(HostManagerBatchingTest, AddNetworkChecksTheBatchDimension) {
  std::unique_ptr<HostManager> host = MakeHost();
  auto add = [&](const std::string& model, DynamicBatching batching) {
    return host->AddNetwork("n", model, With(std::move(batching)))
        .status();
  };
  // An output without the batch: a sum over it.
  OnnxModelBuilder sum(/*opset=*/11);
  sum.Input("x", kFloat, {-1, 4}).Output("total", kFloat, {4});
  auto& reduce = sum.Node("ReduceSum", {"x"}, {"total"});
  SetAttribute(reduce, "axes", std::vector<int64_t>{0});
  SetAttribute(reduce, "keepdims", int64_t{0});
  // (At 8 rows its [4] cannot pass for a batch; at 4 it would: the check
  // is on shapes, and rows that depend on each other are the model's
  // business, as with Triton.)
  absl::Status s = add(sum.Serialize(), Batching(8));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("output 'total'"), absl::string_view::npos) << s;
  // An input whose first dim is fixed.
  OnnxModelBuilder fixed;
  fixed.Input("x", kFloat, {1, 4}).Output("y", kFloat, {1, 4});
  fixed.Node("Relu", {"x"}, {"y"});
  s = add(fixed.Serialize(), Batching(4));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("input 'x'"), absl::string_view::npos) << s;
  // Options out of bounds.
  EXPECT_EQ(add(ReluModel(), Batching(4, {5})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(add(ReluModel(), Batching(-1)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(add(ReluModel(), Batching(4, {}, absl::Seconds(11))).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(host->ListNetworks().empty());
  // And a good one reports its batching.
  ASSERT_TRUE(add(ReluModel(), Batching(4, {2}, absl::Milliseconds(3))).ok());
  absl::StatusOr<NetworkInfo> info = host->GetNetwork("n");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->batching.max_batch_size, 4);
  EXPECT_EQ(info->batching.max_queue_delay, absl::Milliseconds(3));
  EXPECT_EQ(info->batching.preferred_batch_sizes, std::vector<int>{2});
  EXPECT_EQ(info->inputs[0].shape, Shape({4, 4}));
}

TEST(HostManagerBatchingTest, BadLateAndCancelledRequestsFailAlone) {
  std::unique_ptr<HostManager> host = MakeHost();
  ASSERT_TRUE(
      host->AddNetwork("relu", ReluModel(), With(Batching(8))).ok());
  auto make = [](std::vector<NamedTensor> inputs) {
    auto p = std::make_unique<Pending>();
    p->inputs = std::move(inputs);
    return p;
  };
  // Bad requests are refused at once, alone: too many rows, a wrong inner
  // dim, a wrong dtype, no rows.
  std::vector<std::unique_ptr<Pending>> bad;
  bad.push_back(make({{"x", Rows(9, 1)}}));
  bad.push_back(make({{"x", Rows(2, 1, 5)}}));
  bad.push_back(make({{"x", Tensor::FromVector<int64_t>(
                                DType::kInt64, Shape({1, 4}),
                                std::vector<int64_t>(4))}}));
  bad.push_back(make({{"x", Rows(0, 1)}}));
  for (const auto& p : bad) {
    Start(*host, "relu", *p);
    ASSERT_TRUE(p->done.HasBeenNotified());
    EXPECT_EQ(p->result.status().code(), absl::StatusCode::kInvalidArgument)
        << p->result.status();
  }
  // One batch of 8 rows: a late request and a cancelled one among good
  // ones. The late and the cancelled leave it; the rest still make 8 rows
  // only once two more come, and get their own rows.
  auto a = make({{"x", Rows(3, 2)}});
  auto late = make({{"x", Rows(1, 7)}});
  auto cancelled = make({{"x", Rows(1, 8)}});
  auto b = make({{"x", Rows(2, 9)}});
  auto c = make({{"x", Rows(3, 10)}});
  Start(*host, "relu", *a);
  RunOptions past;
  past.deadline = absl::Now() - absl::Seconds(1);
  Start(*host, "relu", *late, past);
  RunOptions cancel;
  auto token = std::make_shared<CancellationToken>();
  cancel.cancel = token;
  Start(*host, "relu", *cancelled, cancel);
  token->Cancel();
  Start(*host, "relu", *b);
  Start(*host, "relu", *c);  // 3 + 2 + 3 = 8 once the two left.
  for (Pending* p : {a.get(), late.get(), cancelled.get(), b.get(), c.get()}) {
    p->done.WaitForNotification();
  }
  EXPECT_EQ(late->result.status().code(), absl::StatusCode::kDeadlineExceeded)
      << late->result.status();
  EXPECT_EQ(cancelled->result.status().code(), absl::StatusCode::kCancelled)
      << cancelled->result.status();
  ExpectRelu(*a);
  ExpectRelu(*b);
  ExpectRelu(*c);
  // Statistics: one execution served the three good requests (the bad,
  // late and cancelled ones count as failed requests, not executions).
  absl::StatusOr<NetworkStatistics> stats = host->GetStatistics("relu");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->execution_count, 1u);
  EXPECT_EQ(stats->success_count, 3u);
  EXPECT_EQ(stats->failure_count, 6u);
  EXPECT_EQ(stats->inference_count, 9u);
  EXPECT_EQ(stats->queue_depth, 0);
  EXPECT_EQ(stats->in_flight, 0);
  EXPECT_EQ(stats->queue.count, 3u);
  // Requested outputs and unknown ones, as for any run.
  RunOptions unknown;
  unknown.requested_outputs = {"nope"};
  EXPECT_EQ(host->RunNetwork("relu", {{"x", Rows(8, 1)}}, unknown)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostManagerBatchingTest, RemoveAnswersWaitingRequestsAndShutdownFails) {
  std::unique_ptr<HostManager> host = MakeHost();
  ASSERT_TRUE(
      host->AddNetwork("relu", ReluModel(), With(Batching(8))).ok());
  // Waits for 7 more rows (up to the 10 s delay)...
  Pending waiting;
  waiting.inputs = {{"x", Rows(1, 3)}};
  Start(*host, "relu", waiting);
  EXPECT_FALSE(waiting.done.HasBeenNotified());
  // ...until the network is removed: then it runs at once.
  const absl::Time start = absl::Now();
  ASSERT_TRUE(host->RemoveNetwork("relu").ok());
  waiting.done.WaitForNotification();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ExpectRelu(waiting);

  ASSERT_TRUE(
      host->AddNetwork("relu", ReluModel(), With(Batching(8))).ok());
  Pending refused;
  refused.inputs = {{"x", Rows(1, 3)}};
  Start(*host, "relu", refused);
  host->Shutdown();
  ASSERT_TRUE(refused.done.HasBeenNotified());
  EXPECT_EQ(refused.result.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace glint
