#include "devices/sim/sim_device.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

std::unique_ptr<SimDevice> MakeDevice(int id, uint64_t memory) {
  DeviceConfig config;
  config.memory_bytes = memory;
  auto d = SimDevice::Create(id, config);
  EXPECT_TRUE(d.ok()) << d.status();
  return *std::move(d);
}

TEST(SimDeviceTest, MemoryFillsToTheLastByte) {
  auto device = MakeDevice(0, 4096);
  auto all = device->Allocate(4096);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(device->AvailableMemory(), 0u);
  EXPECT_EQ(device->Allocate(1).status().code(),
            absl::StatusCode::kResourceExhausted);
  all->reset();
  EXPECT_EQ(device->AvailableMemory(), 4096u);
  auto a = device->Allocate(4095);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(device->Allocate(1).ok());  // Freed immediately again.
}

TEST(SimDeviceTest, RejectsUnknownParameters) {
  DeviceConfig config;
  config.params["turbo"] = "on";
  EXPECT_EQ(SimDevice::Create(0, config).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SimDeviceTest, ThreadsMustBeACount) {
  for (const char* bad : {"0", "-2", "two", "1.5", "100000", ""}) {
    DeviceConfig config;
    config.params["threads"] = bad;
    EXPECT_EQ(SimDevice::Create(0, config).status().code(),
              absl::StatusCode::kInvalidArgument)
        << "threads=" << bad;
  }
}

// y = x · w for x [64, 96], w [96, 48] (a oneDNN GEMM, sized at compile
// for the device's thread count), checked against a naive product.
TEST(SimDeviceTest, KernelsComputeTheSameWithAnyThreadShare) {
  constexpr int64_t kM = 64, kK = 96, kN = 48;
  std::vector<float> xv(kM * kK), wv(kK * kN);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = (i % 13) * 0.25f - 1.5f;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = (i % 7) * 0.5f - 1.0f;
  Graph g;
  g.opset_version = 13;
  g.inputs = {{"x", DType::kFloat32, Shape({kM, kK})}};
  g.outputs = {{"y", DType::kFloat32, Shape({kM, kN})}};
  g.initializers["w"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({kK, kN}), wv);
  g.nodes = {Node{"mm", "MatMul", "", {"x", "w"}, {"y"}, {}}};
  g.values["x"] = g.inputs[0];
  g.values["w"] = {"w", DType::kFloat32, Shape({kK, kN})};
  g.values["y"] = g.outputs[0];
  const Tensor x =
      Tensor::FromVector<float>(DType::kFloat32, Shape({kM, kK}), xv);

  for (const char* threads : {"1", "3"}) {
    DeviceConfig config;
    config.memory_bytes = 1 << 20;
    config.params["threads"] = threads;
    auto device = SimDevice::Create(0, config);
    ASSERT_TRUE(device.ok()) << device.status();
    auto compiled = (*device)->backend().Compile(g);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    auto loaded = (*device)->Load(*compiled);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    DeviceTensor dx, dy;
    Tensor y;
    Stream* s = *(*device)->AcquireStream();
    (*device)->CopyToDevice(*s, &x, &dx);
    (*device)->Launch(*s, **loaded, {&dx}, {&dy});
    (*device)->CopyToHost(*s, &dy, &y);
    ASSERT_TRUE(s->Synchronize().ok());
    (*device)->ReleaseStream(s);
    ASSERT_EQ(y.shape(), Shape({kM, kN}));
    double max_error = 0;
    for (int64_t i = 0; i < kM; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        double want = 0;
        for (int64_t k = 0; k < kK; ++k) {
          want += xv[i * kK + k] * wv[k * kN + j];
        }
        max_error = std::max(
            max_error, std::abs(want - y.data<float>()[i * kN + j]));
      }
    }
    EXPECT_LT(max_error, 1e-3) << "threads=" << threads;
    dx.buffer.reset();
    dy.buffer.reset();
    loaded->reset();
  }
}

TEST(SimDeviceTest, CopiesRoundTripThroughTwoDevices) {
  auto a = MakeDevice(0, 1 << 20), b = MakeDevice(1, 1 << 20);
  Tensor host =
      Tensor::FromVector<float>(DType::kFloat32, Shape({2, 2}), {1, 2, 3, 4});
  DeviceTensor on_a, on_b;
  Tensor back;
  Stream* sa = *a->AcquireStream();
  Stream* sb = *b->AcquireStream();
  a->CopyToDevice(*sa, &host, &on_a);
  Event copied;
  sa->Record(copied);
  sb->Wait(copied);
  b->CopyFromPeer(*sb, &on_a, &on_b);
  b->CopyToHost(*sb, &on_b, &back);
  ASSERT_TRUE(sb->Synchronize().ok());
  ASSERT_EQ(back.shape(), Shape({2, 2}));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(back.data<float>()[i], i + 1.0f);
  EXPECT_EQ(a->AvailableMemory(), (1u << 20) - 16);
  EXPECT_EQ(b->AvailableMemory(), (1u << 20) - 16);
  a->ReleaseStream(sa);
  b->ReleaseStream(sb);
}

Graph ReluGraph() {
  Graph g;
  g.opset_version = 13;
  g.inputs = {{"x", DType::kFloat32, Shape({4})}};
  g.outputs = {{"y", DType::kFloat32, Shape({4})}};
  g.initializers["b"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, 1, -1, -1});
  g.nodes = {Node{"add", "Add", "", {"x", "b"}, {"t"}, {}},
             Node{"relu", "Relu", "", {"t"}, {"y"}, {}}};
  for (const char* v : {"x", "b", "t", "y"}) {
    g.values[v] = {v, DType::kFloat32, Shape({4})};
  }
  return g;
}

TEST(SimDeviceTest, LoadAndLaunchComputesAndAccountsMemory) {
  auto device = MakeDevice(0, 1 << 20);
  auto compiled = device->backend().Compile(ReluGraph());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_EQ((*compiled)->constant_bytes(), 64u);  // One aligned constant.
  EXPECT_EQ((*compiled)->arena_bytes(), 64u);     // "t".
  auto loaded = device->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(device->AvailableMemory(), (1u << 20) - 128);

  Tensor x =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {-2, 0, 2, 0.5});
  DeviceTensor dx, dy;
  Tensor y;
  Stream* s = *device->AcquireStream();
  device->CopyToDevice(*s, &x, &dx);
  device->Launch(*s, **loaded, {&dx}, {&dy});
  device->CopyToHost(*s, &dy, &y);
  ASSERT_TRUE(s->Synchronize().ok());
  const std::vector<float> want = {0, 1, 1, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], want[i]);
  device->ReleaseStream(s);
  dx.buffer.reset();
  dy.buffer.reset();
  loaded->reset();
  EXPECT_EQ(device->AvailableMemory(), 1u << 20);
}

// DeviceInfo::launches_running counts a launch while it computes (here, for
// the ~1 s its timing model takes) and not once it is done.
TEST(SimDeviceTest, LaunchesRunningCountsALaunchWhileItComputes) {
  auto compiled = MakeDevice(0, 1 << 20)->backend().Compile(ReluGraph());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const double flops = (*compiled)->flops();
  ASSERT_GT(flops, 0);
  DeviceConfig config;
  config.memory_bytes = 1 << 20;
  config.params = {{"compute_gflops", absl::StrCat(flops / 1e9)}};
  absl::StatusOr<std::unique_ptr<SimDevice>> device =
      SimDevice::Create(0, config);
  ASSERT_TRUE(device.ok()) << device.status();
  auto loaded = (*device)->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*device)->GetDeviceInfo().launches_running, 0);

  Tensor x =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {1, 2, 3, 4});
  DeviceTensor dx, dy;
  Stream* s = *(*device)->AcquireStream();
  (*device)->CopyToDevice(*s, &x, &dx);
  (*device)->Launch(*s, **loaded, {&dx}, {&dy});
  int seen = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (seen == 0 && absl::Now() < deadline) {
    seen = (*device)->GetDeviceInfo().launches_running;
    if (seen == 0) absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(seen, 1);
  ASSERT_TRUE(s->Synchronize().ok()) << s->status();
  EXPECT_EQ((*device)->GetDeviceInfo().launches_running, 0);
  (*device)->ReleaseStream(s);
}

// y = if (c) then_branch(x) else else_branch(x): the branches read x as
// their one input (a capture of the If's, num_implicit_inputs).
Graph IfGraph(ValueInfo x, ValueInfo y, std::shared_ptr<Graph> then_branch,
              std::shared_ptr<Graph> else_branch) {
  Graph g;
  g.opset_version = 13;
  g.inputs = {{"c", DType::kBool, Shape()}, x};
  g.outputs = {y};
  Node node{"if",
            "If",
            "",
            {"c", x.name},
            {y.name},
            {{"then_branch", GraphAttribute(std::move(then_branch))},
             {"else_branch", GraphAttribute(std::move(else_branch))}}};
  node.num_implicit_inputs = 1;
  g.nodes = {node};
  g.values["c"] = g.inputs[0];
  g.values[x.name] = x;
  g.values[y.name] = y;
  return g;
}

// If(c) { ReduceSum(Range(0, n, 1)) } else { 0 }: a body value whose size
// the request picks (n int64 elements), never an output of the function.
Graph SumOfRangeGraph() {
  auto body = [](bool then) {
    auto g = std::make_shared<Graph>();
    g->name = then ? "then" : "else";
    g->opset_version = 13;
    g->inputs = {{"n_in", DType::kInt64, Shape()}};
    g->values["n_in"] = g->inputs[0];
    if (then) {
      g->initializers["zero"] = Tensor::FromVector<int64_t>(
          DType::kInt64, Shape(), std::vector<int64_t>{0});
      g->initializers["one"] = Tensor::FromVector<int64_t>(
          DType::kInt64, Shape(), std::vector<int64_t>{1});
      g->values["zero"] = {"zero", DType::kInt64, Shape()};
      g->values["one"] = {"one", DType::kInt64, Shape()};
      g->nodes = {
          Node{"range", "Range", "", {"zero", "n_in", "one"}, {"r"}, {}},
          Node{"sum",
               "ReduceSum",
               "",
               {"r"},
               {"s"},
               {{"keepdims", int64_t{0}}}}};
      g->values["r"] = {"r", DType::kInt64, Shape({Shape::kUnknownDim})};
      g->values["s"] = {"s", DType::kInt64, Shape()};
      g->outputs = {g->values["s"]};
    } else {
      g->nodes = {Node{
          "zero",
          "Constant",
          "",
          {},
          {"s"},
          {{"value", Tensor::FromVector<int64_t>(DType::kInt64, Shape(),
                                                 std::vector<int64_t>{0})}}}};
      g->values["s"] = {"s", DType::kInt64, Shape()};
      g->outputs = {g->values["s"]};
    }
    return g;
  };
  return IfGraph({"n", DType::kInt64, Shape()}, {"y", DType::kInt64, Shape()},
                 body(true), body(false));
}

// Values inside a control-flow body come from the device's memory as every
// other value of a run does: a request that makes a body value larger than
// the device is RESOURCE_EXHAUSTED from the device, not host memory the
// device never counted (issue 34), and all of it comes back.
TEST(SimDeviceTest, ControlFlowBodyValuesComeFromDeviceMemory) {
  auto device = MakeDevice(0, 1 << 20);
  auto compiled = device->backend().Compile(SumOfRangeGraph());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto loaded = device->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const uint64_t available = device->AvailableMemory();
  auto run = [&](int64_t n, Tensor* y) {
    Tensor c = *Tensor::Create(DType::kBool, Shape());
    *c.data<bool>() = true;
    Tensor tn = Tensor::FromVector<int64_t>(DType::kInt64, Shape(), {n});
    DeviceTensor dc, dn, dy;
    Stream* s = *device->AcquireStream();
    device->CopyToDevice(*s, &c, &dc);
    device->CopyToDevice(*s, &tn, &dn);
    device->Launch(*s, **loaded, {&dc, &dn}, {&dy});
    device->CopyToHost(*s, &dy, y);
    absl::Status status = s->Synchronize();
    device->ReleaseStream(s);
    return status;
  };
  Tensor y;
  ASSERT_TRUE(run(1000, &y).ok());
  EXPECT_EQ(*y.data<int64_t>(), 499500);
  // 2^20 int64 elements are 8 MiB, on a device of 1 MiB.
  absl::Status big = run(int64_t{1} << 20, &y);
  EXPECT_EQ(big.code(), absl::StatusCode::kResourceExhausted) << big;
  EXPECT_TRUE(absl::StrContains(big.message(), "is out of memory")) << big;
  EXPECT_EQ(device->AvailableMemory(), available);
  ASSERT_TRUE(run(10, &y).ok());
  EXPECT_EQ(*y.data<int64_t>(), 45);
  EXPECT_EQ(device->AvailableMemory(), available);
}

// x [n] through eight Softmax nodes: seven values of dynamic shape
// between input and output. `dim` names n ("" for none).
Graph SoftmaxChainGraph(const std::string& dim = "") {
  Graph g;
  g.opset_version = 13;
  const Shape dynamic({Shape::kUnknownDim});
  const std::vector<std::string> names = {dim};
  g.inputs = {{"x", DType::kFloat32, dynamic, names}};
  g.outputs = {{"y", DType::kFloat32, dynamic, names}};
  g.values["x"] = g.inputs[0];
  std::string in = "x";
  for (int i = 0; i < 8; ++i) {
    const std::string out = i == 7 ? "y" : absl::StrCat("s", i);
    g.nodes.push_back(Node{absl::StrCat("softmax", i),
                           "Softmax",
                           "",
                           {in},
                           {out},
                           {{"axis", int64_t{0}}}});
    g.values[out] = {out, DType::kFloat32, dynamic, names};
    in = out;
  }
  return g;
}

// A function says what its launches' run-time values take at most within
// bounds (two of the seven intermediates are live at once), and which it
// cannot size. With that much reserved, a launch runs on a device whose
// every other byte is taken, drawing on the reserve alone. Reservations
// overlap (launches run one at a time): the device holds the largest.
TEST(SimDeviceTest, LaunchesDrawOnTheReserveBeforeFreeMemory) {
  constexpr int64_t kN = int64_t{1} << 18;  // 1 MiB of float32.
  constexpr uint64_t kMiB = 1 << 20;
  auto device = MakeDevice(0, 6 * kMiB);
  auto compiled = device->backend().Compile(SoftmaxChainGraph("n"));
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const DynamicMemory within = (*compiled)->DynamicMemoryWithin({{"n", kN}});
  EXPECT_EQ(within.peak_bytes, 2 * kMiB);
  EXPECT_TRUE(within.unbounded.empty());
  const DynamicMemory unbounded = (*compiled)->DynamicMemoryWithin({});
  EXPECT_EQ(unbounded.peak_bytes, 0u);
  EXPECT_EQ(unbounded.unbounded.size(), 7u);  // s0..s6; y is an output.

  auto loaded = device->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const uint64_t available = device->AvailableMemory();
  auto reserved = device->ReserveLaunchMemory(within.peak_bytes);
  ASSERT_TRUE(reserved.ok()) << reserved.status();
  auto smaller = device->ReserveLaunchMemory(kMiB);
  ASSERT_TRUE(smaller.ok()) << smaller.status();
  EXPECT_EQ(device->AvailableMemory(), available - 2 * kMiB);
  EXPECT_EQ(device->GetDeviceInfo().launch_reserved_bytes, 2 * kMiB);

  std::vector<float> xs(kN, 0.0f);
  Tensor x = Tensor::FromVector<float>(DType::kFloat32, Shape({kN}), xs);
  DeviceTensor dx, dy;
  dy.buffer = *device->Allocate(kN * 4);  // The caller's output buffer.
  Tensor y;
  Stream* s = *device->AcquireStream();
  device->CopyToDevice(*s, &x, &dx);
  ASSERT_TRUE(s->Synchronize().ok());
  auto rest = device->Allocate(device->AvailableMemory());
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(device->ReserveLaunchMemory(3 * kMiB).status().code(),
            absl::StatusCode::kResourceExhausted);
  device->Launch(*s, **loaded, {&dx}, {&dy});
  device->CopyToHost(*s, &dy, &y);
  const absl::Status status = s->Synchronize();
  device->ReleaseStream(s);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(y.shape(), Shape({kN}));
  EXPECT_FLOAT_EQ(y.data<float>()[kN - 1], 1.0f / kN);  // Uniform.
  EXPECT_EQ(device->AvailableMemory(), 0u);
  EXPECT_EQ(device->GetDeviceInfo().peak_used_memory_bytes, 6 * kMiB);

  rest->reset();
  const uint64_t free_now = device->AvailableMemory();
  reserved->reset();  // The 1 MiB one is the largest left.
  EXPECT_EQ(device->AvailableMemory(), free_now + kMiB);
  smaller->reset();
  EXPECT_EQ(device->AvailableMemory(), free_now + 2 * kMiB);
  EXPECT_EQ(device->GetDeviceInfo().launch_reserved_bytes, 0u);
}

// if (c) y = Softmax(Softmax(x)) else y = Identity(x), x [n] named by `dim`:
// the then branch makes two values of x's size, the else branch one.
Graph SoftmaxIfGraph(const std::string& dim) {
  const Shape dynamic({Shape::kUnknownDim});
  const std::vector<std::string> names = {dim};
  auto body = [&](bool then) {
    auto g = std::make_shared<Graph>();
    g->name = then ? "then" : "else";
    g->opset_version = 13;
    g->inputs = {{"x_in", DType::kFloat32, dynamic, names}};
    g->values["x_in"] = g->inputs[0];
    if (then) {
      for (int i = 0; i < 2; ++i) {
        const std::string out = absl::StrCat("t", i);
        g->nodes.push_back(Node{absl::StrCat("softmax", i),
                                "Softmax",
                                "",
                                {i == 0 ? "x_in" : "t0"},
                                {out},
                                {{"axis", int64_t{0}}}});
        g->values[out] = {out, DType::kFloat32, dynamic, names};
      }
      g->outputs = {g->values["t1"]};
    } else {
      g->nodes = {Node{"identity", "Identity", "", {"x_in"}, {"e0"}, {}}};
      g->values["e0"] = {"e0", DType::kFloat32, dynamic, names};
      g->outputs = {g->values["e0"]};
    }
    return g;
  };
  return IfGraph({"x", DType::kFloat32, dynamic, names},
                 {"y", DType::kFloat32, dynamic, names}, body(true),
                 body(false));
}

// An If's bodies allocate their values as they run: within bounds, a
// launch's peak counts its larger branch (two values of x's size), so a
// launch that takes that branch runs on a device whose every other byte is
// taken. Without a name for x's dim they are not counted.
TEST(SimDeviceTest, AnIfsLargerBranchIsCountedInTheLaunchPeak) {
  constexpr int64_t kN = int64_t{1} << 18;  // 1 MiB of float32.
  constexpr uint64_t kMiB = 1 << 20;
  auto device = MakeDevice(0, 6 * kMiB);
  auto compiled = device->backend().Compile(SoftmaxIfGraph("n"));
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const DynamicMemory within = (*compiled)->DynamicMemoryWithin({{"n", kN}});
  EXPECT_EQ(within.peak_bytes, 2 * kMiB);
  EXPECT_TRUE(within.unbounded.empty())
      << absl::StrJoin(within.unbounded, ", ");
  const DynamicMemory unnamed = (*device->backend().Compile(SoftmaxIfGraph("")))
                                    ->DynamicMemoryWithin({{"n", kN}});
  ASSERT_EQ(unnamed.unbounded.size(), 1u);
  EXPECT_TRUE(absl::StrContains(unnamed.unbounded[0], "the bodies of"))
      << unnamed.unbounded[0];

  auto loaded = device->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto reserved = device->ReserveLaunchMemory(within.peak_bytes);
  ASSERT_TRUE(reserved.ok()) << reserved.status();
  Tensor c = *Tensor::Create(DType::kBool, Shape());
  *c.data<bool>() = true;
  Tensor x = Tensor::FromVector<float>(DType::kFloat32, Shape({kN}),
                                       std::vector<float>(kN, 0.0f));
  DeviceTensor dc, dx, dy;
  dy.buffer = *device->Allocate(kN * 4);  // The caller's output buffer.
  Stream* s = *device->AcquireStream();
  device->CopyToDevice(*s, &c, &dc);
  device->CopyToDevice(*s, &x, &dx);
  ASSERT_TRUE(s->Synchronize().ok());
  auto rest = device->Allocate(device->AvailableMemory());
  ASSERT_TRUE(rest.ok()) << rest.status();
  Tensor y;
  device->Launch(*s, **loaded, {&dc, &dx}, {&dy});
  device->CopyToHost(*s, &dy, &y);
  const absl::Status status = s->Synchronize();
  device->ReleaseStream(s);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(y.shape(), Shape({kN}));
  EXPECT_FLOAT_EQ(y.data<float>()[0], 1.0f / kN);
  EXPECT_EQ(device->AvailableMemory(), 0u);
}

// A value of dynamic shape holds device memory from its producer to its
// last reader, not to the end of the run: eight chained 1 MiB values run on
// a device of 6 MiB (the input and two live values fit; all seven
// intermediates would not), compute the right answer, and give every byte
// back.
TEST(SimDeviceTest, DynamicValuesAreFreedAfterTheirLastReader) {
  constexpr int64_t kN = int64_t{1} << 18;  // 1 MiB of float32.
  auto device = MakeDevice(0, 6 << 20);
  auto compiled = device->backend().Compile(SoftmaxChainGraph());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_EQ((*compiled)->arena_bytes(), 0u);
  auto loaded = device->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const uint64_t available = device->AvailableMemory();

  std::vector<float> xs(kN);
  for (int64_t i = 0; i < kN; ++i) xs[i] = static_cast<float>(i % 7) * 0.5f;
  Tensor x = Tensor::FromVector<float>(DType::kFloat32, Shape({kN}), xs);
  DeviceTensor dx, dy;
  Tensor y;
  Stream* s = *device->AcquireStream();
  device->CopyToDevice(*s, &x, &dx);
  device->Launch(*s, **loaded, {&dx}, {&dy});
  device->CopyToHost(*s, &dy, &y);
  const absl::Status status = s->Synchronize();
  device->ReleaseStream(s);
  ASSERT_TRUE(status.ok()) << status;

  std::vector<double> want(xs.begin(), xs.end());
  for (int k = 0; k < 8; ++k) {
    const double peak = *std::max_element(want.begin(), want.end());
    double sum = 0;
    for (double& v : want) sum += (v = std::exp(v - peak));
    for (double& v : want) v /= sum;
  }
  ASSERT_EQ(y.shape(), Shape({kN}));
  for (int64_t i = 0; i < kN; i += 4099) {
    EXPECT_NEAR(y.data<float>()[i], want[i], 1e-4 * want[i]) << i;
  }
  // At most the input, one value being read, the one being written: the
  // output is the last of those. All eight would take 9 MiB.
  EXPECT_EQ(device->GetDeviceInfo().peak_used_memory_bytes, 3u << 20);
  dx.buffer.reset();
  dy.buffer.reset();
  EXPECT_EQ(device->AvailableMemory(), available);
}

// A function's host copy of its constants goes once every device has
// loaded it: what is loaded keeps computing from device memory, and a new
// load is refused rather than given garbage.
TEST(SimDeviceTest, ReleasedHostConstantsKeepLoadedCopiesWorking) {
  auto device = MakeDevice(0, 1 << 20);
  auto compiled = device->backend().Compile(ReluGraph());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto loaded = device->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  (*compiled)->ReleaseHostConstants();
  EXPECT_EQ(device->Load(*compiled).status().code(),
            absl::StatusCode::kFailedPrecondition);

  Tensor x =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {-2, 0, 2, 0.5});
  DeviceTensor dx, dy;
  Tensor y;
  Stream* s = *device->AcquireStream();
  device->CopyToDevice(*s, &x, &dx);
  device->Launch(*s, **loaded, {&dx}, {&dy});
  device->CopyToHost(*s, &dy, &y);
  ASSERT_TRUE(s->Synchronize().ok());
  const std::vector<float> want = {0, 1, 1, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], want[i]);
  device->ReleaseStream(s);
}

// Weights a MatMul packed at compile time are the device's constants: two
// devices load the function, its host copies go, and both still compute
// x · w (checked against a naive product).
TEST(SimDeviceTest, PackedWeightsOnTheDevicesAloneComputeTheProduct) {
  constexpr int64_t kM = 8, kK = 64, kN = 32;
  std::vector<float> xv(kM * kK), wv(kK * kN);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = (i % 11) * 0.25f - 1.25f;
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = (i % 5) * 0.5f - 1.0f;
  Graph g;
  g.opset_version = 13;
  g.inputs = {{"x", DType::kFloat32, Shape({kM, kK})}};
  g.outputs = {{"y", DType::kFloat32, Shape({kM, kN})}};
  g.initializers["w"] =
      Tensor::FromVector<float>(DType::kFloat32, Shape({kK, kN}), wv);
  g.nodes = {Node{"mm", "MatMul", "", {"x", "w"}, {"y"}, {}}};
  g.values["x"] = g.inputs[0];
  g.values["w"] = {"w", DType::kFloat32, Shape({kK, kN})};
  g.values["y"] = g.outputs[0];
  const Tensor x =
      Tensor::FromVector<float>(DType::kFloat32, Shape({kM, kK}), xv);

  auto a = MakeDevice(0, 1 << 20), b = MakeDevice(1, 1 << 20);
  auto compiled = a->backend().Compile(g);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto on_a = a->Load(*compiled);
  auto on_b = b->Load(*compiled);
  ASSERT_TRUE(on_a.ok()) << on_a.status();
  ASSERT_TRUE(on_b.ok()) << on_b.status();
  (*compiled)->ReleaseHostConstants();
  compiled->reset();  // The loaded copies keep what they need.

  for (SimDevice* device : {a.get(), b.get()}) {
    const LoadedFunction& f = device == a.get() ? **on_a : **on_b;
    DeviceTensor dx, dy;
    Tensor y;
    Stream* s = *device->AcquireStream();
    device->CopyToDevice(*s, &x, &dx);
    device->Launch(*s, f, {&dx}, {&dy});
    device->CopyToHost(*s, &dy, &y);
    ASSERT_TRUE(s->Synchronize().ok()) << s->status();
    device->ReleaseStream(s);
    ASSERT_EQ(y.shape(), Shape({kM, kN}));
    for (int64_t i = 0; i < kM; ++i) {
      for (int64_t j = 0; j < kN; ++j) {
        float want = 0;
        for (int64_t k = 0; k < kK; ++k) {
          want += xv[i * kK + k] * wv[k * kN + j];
        }
        EXPECT_NEAR(y.data<float>()[i * kN + j], want, 1e-3)
            << "device " << device->id() << " at " << i << "," << j;
      }
    }
  }
}

// Compiled for a caller that gives the partition over (the provisioner's
// last compile), a weight that a MatMul packs leaves the host as soon as
// that kernel is built; a constant kept plain (the bias) leaves during the
// last Load, once it is on the device. What runs is still x · w1 · w2 + b.
TEST(SimDeviceTest, ConsumedConstantsGoOnceTheKernelOrTheDeviceHoldsThem) {
  constexpr int64_t kM = 4, kK = 32, kN = 16;
  std::vector<float> xv(kM * kK), w1v(kK * kK), w2v(kK * kN), bv(kN);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = (i % 7) * 0.25f - 0.75f;
  for (size_t i = 0; i < w1v.size(); ++i) w1v[i] = (i % 5) * 0.125f - 0.25f;
  for (size_t i = 0; i < w2v.size(); ++i) w2v[i] = (i % 3) * 0.5f - 0.5f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i);
  // Each constant borrows a copy of its values kept alive by a token the
  // test watches.
  std::vector<std::weak_ptr<void>> watched;
  auto constant = [&](const std::vector<float>& values, Shape shape) {
    auto owned = std::make_shared<std::vector<float>>(values);
    watched.push_back(owned);
    return Tensor::Borrow(DType::kFloat32, std::move(shape), owned->data(),
                          owned);
  };
  Graph g;
  g.opset_version = 13;
  g.inputs = {{"x", DType::kFloat32, Shape({kM, kK})}};
  g.outputs = {{"y", DType::kFloat32, Shape({kM, kN})}};
  g.initializers["w1"] = constant(w1v, Shape({kK, kK}));
  g.initializers["w2"] = constant(w2v, Shape({kK, kN}));
  g.initializers["b"] = constant(bv, Shape({kN}));
  g.nodes = {Node{"mm1", "MatMul", "", {"x", "w1"}, {"h"}, {}},
             Node{"mm2", "MatMul", "", {"h", "w2"}, {"p"}, {}},
             Node{"add", "Add", "", {"p", "b"}, {"y"}, {}}};
  g.values["x"] = g.inputs[0];
  g.values["w1"] = {"w1", DType::kFloat32, Shape({kK, kK})};
  g.values["w2"] = {"w2", DType::kFloat32, Shape({kK, kN})};
  g.values["b"] = {"b", DType::kFloat32, Shape({kN})};
  g.values["h"] = {"h", DType::kFloat32, Shape({kM, kK})};
  g.values["p"] = {"p", DType::kFloat32, Shape({kM, kN})};
  g.values["y"] = g.outputs[0];

  auto device = MakeDevice(0, 1 << 20);
  auto compiled =
      device->backend().CompileConsuming(std::move(g), CompileOptions());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  size_t alive = 0;
  for (const auto& w : watched) alive += w.expired() ? 0 : 1;
  // The bias is read by Add in its plain form: it stays until loaded.
  EXPECT_EQ(alive, 1u) << "packed weights were kept plain after compiling";

  (*compiled)->ReleaseHostConstantsOnNextLoad();
  auto loaded = device->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  for (const auto& w : watched) {
    EXPECT_TRUE(w.expired()) << "a constant outlived the last load";
  }
  EXPECT_EQ(device->Load(*compiled).status().code(),
            absl::StatusCode::kFailedPrecondition);

  const Tensor x =
      Tensor::FromVector<float>(DType::kFloat32, Shape({kM, kK}), xv);
  DeviceTensor dx, dy;
  Tensor y;
  Stream* s = *device->AcquireStream();
  device->CopyToDevice(*s, &x, &dx);
  device->Launch(*s, **loaded, {&dx}, {&dy});
  device->CopyToHost(*s, &dy, &y);
  ASSERT_TRUE(s->Synchronize().ok()) << s->status();
  device->ReleaseStream(s);
  for (int64_t i = 0; i < kM; ++i) {
    std::vector<float> h(kK, 0.0f);
    for (int64_t j = 0; j < kK; ++j) {
      for (int64_t k = 0; k < kK; ++k) h[j] += xv[i * kK + k] * w1v[k * kK + j];
    }
    for (int64_t j = 0; j < kN; ++j) {
      float want = bv[j];
      for (int64_t k = 0; k < kK; ++k) want += h[k] * w2v[k * kN + j];
      EXPECT_NEAR(y.data<float>()[i * kN + j], want, 1e-3) << i << "," << j;
    }
  }
}

// VmRSS of this process, bytes.
int64_t RssBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// Device memory of kMappedBufferBytes or more is its own mapping: written,
// it is resident; freed, it leaves the process at once (no allocator
// keeps it), whatever small buffers stay live around it.
TEST(SimDeviceTest, LargeBuffersGoBackToTheOsWhenFreed) {
#ifdef GLINT_SANITIZER
  // ASan and TSan keep shadow memory for what was touched: RSS says
  // nothing there.
  GTEST_SKIP() << "RSS is not the program's own under sanitizers";
#endif
  constexpr size_t kBig = 64 << 20;
  static_assert(kBig >= SimDevice::kMappedBufferBytes);
  auto device = MakeDevice(0, 1ull << 30);
  auto small_before = device->Allocate(4096);
  ASSERT_TRUE(small_before.ok());
  const int64_t before = RssBytes();
  auto big = device->Allocate(kBig);
  ASSERT_TRUE(big.ok()) << big.status();
  auto small_after = device->Allocate(4096);
  ASSERT_TRUE(small_after.ok());
  // Written as a load or a copy would.
  std::memset(SimDevice::HostAddress(**big), 1, kBig);
  const int64_t written = RssBytes();
  EXPECT_GE(written - before, static_cast<int64_t>(kBig) * 9 / 10);
  big->reset();
  const int64_t freed = RssBytes();
  EXPECT_LE(freed - before, static_cast<int64_t>(kBig) / 10)
      << "before " << before << ", written " << written << ", freed "
      << freed;
  EXPECT_EQ(device->AvailableMemory(), (1ull << 30) - 2 * 4096);
}

// A run's own mapped buffers (here a copy to the device) stay mapped when
// freed and serve the next one of their size class; weights and arenas
// (Allocate) are unmapped, so a new one starts from zeroed pages. The
// cached bytes count as free device memory.
TEST(SimDeviceTest, TransientMappingsAreReusedOthersAreNot) {
  constexpr uint64_t kMemory = 64 << 20;
  auto device = MakeDevice(0, kMemory);
  constexpr int64_t kFloats = (2 << 20) / 4;  // 2 MiB: mapped.
  std::vector<float> values(kFloats, 7.0f);
  Tensor host = Tensor::FromVector(DType::kFloat32, Shape({kFloats}), values);
  Stream* stream = *device->AcquireStream();
  void* first = nullptr;
  for (int round = 0; round < 2; ++round) {
    DeviceTensor on_device;
    device->CopyToDevice(*stream, &host, &on_device);
    ASSERT_TRUE(stream->Synchronize().ok());
    void* address = SimDevice::HostAddress(*on_device.buffer);
    EXPECT_EQ(static_cast<float*>(address)[kFloats - 1], 7.0f);
    if (round == 0) {
      first = address;
    } else {
      EXPECT_EQ(address, first) << "the freed mapping was not reused";
    }
  }
  EXPECT_EQ(device->AvailableMemory(), kMemory);
  device->ReleaseStream(stream);

  auto weights = device->Allocate(2 << 20);
  ASSERT_TRUE(weights.ok());
  std::memset(SimDevice::HostAddress(**weights), 1, 2 << 20);
  weights->reset();
  auto again = device->Allocate(2 << 20);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(static_cast<const char*>(SimDevice::HostAddress(**again))[0], 0)
      << "a weights-sized buffer came back from a cache";
}

TEST(SimDeviceTest, LoadThatDoesNotFitIsResourceExhausted) {
  auto device = MakeDevice(0, 100);
  auto compiled = device->backend().Compile(ReluGraph());
  ASSERT_TRUE(compiled.ok());
  EXPECT_EQ(device->Load(*compiled).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(device->AvailableMemory(), 100u);
}

TEST(SimDeviceTest, UnsupportedOpIsUnimplemented) {
  DeviceConfig config;
  config.params["unsupported_ops"] = "Relu";
  auto device = SimDevice::Create(0, config);
  ASSERT_TRUE(device.ok());
  EXPECT_FALSE((*device)->backend().IsOpSupported("Relu"));
  absl::Status s = (*device)->backend().Compile(ReluGraph()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("relu"), absl::string_view::npos) << s;
}

TEST(SimDeviceTest, StoppedDeviceFailsFast) {
  auto device = MakeDevice(0, 1 << 20);
  Stream* s = *device->AcquireStream();
  device->Stop();
  Tensor x = Tensor::FromVector<float>(DType::kFloat32, Shape({1}), {1});
  DeviceTensor dx;
  device->CopyToDevice(*s, &x, &dx);
  EXPECT_EQ(s->Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(device->Allocate(8).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(device->AcquireStream().status().code(),
            absl::StatusCode::kUnavailable);
}

std::set<std::string> ThreadIds() {
  std::set<std::string> ids;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ids.insert(entry.path().filename().string());
  }
  return ids;
}

// Threads alive now that were not in `before`. Not a count difference: a
// thread an earlier test left (an exiting pool worker) may end meanwhile.
int NewThreads(const std::set<std::string>& before) {
  int n = 0;
  for (const std::string& id : ThreadIds()) n += before.count(id) == 0;
  return n;
}

TEST(SimDeviceTest, SharedStreamThreadsDoNotGrowWithItsViews) {
  auto device = MakeDevice(0, 1 << 20);
  auto compiled = device->backend().Compile(ReluGraph());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto loaded = device->Load(*compiled);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const std::set<std::string> before = ThreadIds();
  std::vector<std::unique_ptr<Stream>> views;
  for (int i = 0; i < 64; ++i) {
    SharedStreamOptions o;
    o.priority = i % 5 - 2;
    auto view = device->OpenSharedStream(std::move(o));
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ((*view)->priority(), i % 5 - 2);
    EXPECT_EQ((*view)->device_id(), 0);
    views.push_back(*std::move(view));
  }
  // The shared stream's compute and helper threads, and the one its views'
  // OnDone callbacks run on.
  EXPECT_EQ(NewThreads(before), 3);

  // Every view computes; launches run on the shared stream's compute
  // thread, so the compute engine never needs a thread of its own.
  const Tensor x =
      Tensor::FromVector<float>(DType::kFloat32, Shape({4}), {-2, 0, 2, 0.5});
  std::vector<DeviceTensor> dx(views.size()), dy(views.size());
  std::vector<Tensor> y(views.size());
  std::atomic<int> done{0};
  for (size_t v = 0; v < views.size(); ++v) {
    device->CopyToDevice(*views[v], &x, &dx[v]);
    device->Launch(*views[v], **loaded, {&dx[v]}, {&dy[v]});
    device->CopyToHost(*views[v], &dy[v], &y[v]);
    views[v]->OnDone([&done](absl::Status s) {
      EXPECT_TRUE(s.ok()) << s;
      ++done;
    });
  }
  const std::vector<float> want = {0, 1, 1, 0};
  for (size_t v = 0; v < views.size(); ++v) {
    ASSERT_TRUE(views[v]->Synchronize().ok()) << v;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y[v].data<float>()[i], want[i]);
  }
  EXPECT_EQ(NewThreads(before), 3);
  views.clear();
  device->Stop();  // Runs what callbacks are left (or fails them) first.
  EXPECT_EQ(done.load(), 64);
}

}  // namespace
}  // namespace glint
