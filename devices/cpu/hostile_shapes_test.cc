// Runs every ONNX single-node case whose op has a CPU kernel with hostile
// inputs, to catch kernels that size scratch memory or loops by a dimension
// of an input that may be empty, or by a run-time shape/count value:
//  - each input in turn replaced by an empty tensor of its dtype and rank
//    whose first dimension is 0 and whose other dimensions multiply to
//    >= 2^40 (CheckTensorSize lets such a tensor through);
//  - each small integer input (a shape, size, count, axis, k...) filled
//    with huge or negative values.
// Input shapes are hidden from the spec, so kernels see them at run time.
// Every variant must end with OK or a clean refusal, and what it makes the
// process hold is measured, in every build:
//  - Outputs come from a bounded device memory, as in glintd, so an output
//    a huge value legitimately asks for (a window of 2^31 floats) is
//    refused by the device before anything is touched.
//  - Peak resident memory (VmHWM, reset before each variant) may rise by
//    at most a stated bound per variant: what a kernel allocates for itself
//    must follow the real work, whatever the allocator maps lazily.
//  - A giant allocation fails at once instead of overcommitting: the
//    address space is capped in the plain build; under sanitizers (which
//    reserve terabytes of shadow) their allocation-size limit stands in.
//    A failed scratch allocation counts as an offense.
#include <sys/resource.h>

#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_test_util.h"
#include "devices/cpu/onnx_node_case.h"
#include "gtest/gtest.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GLINT_HOSTILE_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GLINT_HOSTILE_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define GLINT_HOSTILE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GLINT_HOSTILE_TSAN 1
#endif
#endif

// Under sanitizers the allocator's own limit stands in for RLIMIT_AS (ASan
// and TSan reserve terabytes of shadow memory): malloc of more returns null
// (Tensor::Create's RESOURCE_EXHAUSTED), and a giant `new` in a kernel
// aborts the test, as it should.
#if defined(__SANITIZE_ADDRESS__)
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=2048";
}
#elif defined(GLINT_HOSTILE_TSAN)
extern "C" const char* __tsan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=2048";
}
#endif

namespace glint::cpu {
namespace {

// The address space allowed beyond what the process uses once oneDNN and
// OpenMP have started: far below any "giant" allocation (>= 2^40
// elements), above what the cases legitimately need, and below this
// machine's free memory.
constexpr rlim_t kAddressSpaceHeadroom = rlim_t{2} << 30;

// The device memory each variant's outputs come from. glintd's default
// devices have 2 GiB; the ONNX cases' outputs are kilobytes, so 64 MiB
// refuses only what a hostile value asks for, and touches little.
constexpr int64_t kDeviceMemory = int64_t{64} << 20;

// How much a variant may raise the process's peak resident memory: its
// outputs (under kDeviceMemory) and a kernel's scratch for the real work.
// ThreadSanitizer's shadow is 4x the application memory it covers, plus
// its metadata, so its bound is five times as large.
#ifdef GLINT_HOSTILE_TSAN
constexpr int64_t kResidentRiseBound = int64_t{5 * 256} << 20;
#else
constexpr int64_t kResidentRiseBound = int64_t{256} << 20;
#endif

#ifndef GLINT_HOSTILE_SANITIZER
// The process's address space (VmSize) in bytes; 0 when /proc cannot say.
rlim_t AddressSpaceInUse() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "VmSize:")) {
      return static_cast<rlim_t>(std::strtoull(line.c_str() + 7, nullptr, 10))
             << 10;  // kB
    }
  }
  return 0;
}
#endif

// Peak and current resident memory of the process, from /proc/self/status.
struct Resident {
  int64_t peak = -1;     // VmHWM, bytes
  int64_t current = -1;  // VmRSS, bytes
};

Resident ReadResident() {
  Resident r;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "VmHWM:")) {
      r.peak = std::strtoll(line.c_str() + 6, nullptr, 10) << 10;
    } else if (absl::StartsWith(line, "VmRSS:")) {
      r.current = std::strtoll(line.c_str() + 6, nullptr, 10) << 10;
    }
  }
  return r;
}

// Sets the process's peak resident memory back to what it holds now
// (Linux >= 4.0); false if the kernel refuses.
bool ResetPeakResident() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

// An empty tensor of `dtype` and `rank`: first dimension 0, the others
// 2^ceil(40 / (rank - 1)) each, so that they multiply to >= 2^40.
Tensor HostileEmpty(DType dtype, int rank) {
  std::vector<int64_t> dims(rank, 0);
  if (rank > 1) {
    const int bits = (40 + rank - 2) / (rank - 1);
    for (int i = 1; i < rank; ++i) dims[i] = int64_t{1} << bits;
  }
  absl::StatusOr<Tensor> t = Tensor::Create(dtype, Shape(std::move(dims)));
  return t.ok() ? *t : Tensor();
}

// `t` (int32 or int64) with every element set to `v` (saturated to int32).
Tensor Filled(const Tensor& t, int64_t v) {
  absl::StatusOr<Tensor> out = Tensor::Create(t.dtype(), t.shape());
  if (!out.ok()) return Tensor();
  for (int64_t i = 0; i < out->num_elements(); ++i) {
    if (t.dtype() == DType::kInt64) {
      out->data<int64_t>()[i] = v;
    } else {
      out->data<int32_t>()[i] = static_cast<int32_t>(
          std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(),
                              std::numeric_limits<int32_t>::max()));
    }
  }
  return *out;
}

// A failure that means a kernel let a hostile shape or value reach an
// allocation or an exception; empty when `s` is an acceptable outcome.
// Outputs are refused by the device memory ("out of memory") before any
// allocation, so a failed host allocation is always a kernel's own.
std::string Offense(const absl::Status& s) {
  if (s.code() == absl::StatusCode::kResourceExhausted &&
      (absl::StrContains(s.message(), "out of host memory") ||
       absl::StrContains(s.message(), "host allocation of"))) {
    return "giant allocation";
  }
  if (s.code() == absl::StatusCode::kInternal &&
      absl::StrContains(s.message(), "unexpected exception")) {
    return "escaped exception";
  }
  return "";
}

// Runs a case's hostile variants and tallies their outcomes.
class HostileRunner {
 public:
  explicit HostileRunner(const KernelRegistry& registry)
      : registry_(registry),
        verbose_(std::getenv("GLINT_HOSTILE_VERBOSE") != nullptr) {}

  // Each input in turn empty with huge dimensions, and each small integer
  // input huge or negative (at run time and as a build-time constant).
  void Run(const testing::OnnxNodeCase& c) {
    ++num_cases_;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      const Tensor& in = c.inputs[i];
      if (!in.valid()) continue;
      const int rank = in.shape().rank();
      if (rank >= 1) {
        std::vector<Tensor> inputs = c.inputs;
        inputs[i] = HostileEmpty(in.dtype(), rank);
        ASSERT_TRUE(inputs[i].valid()) << c.name << " input " << i;
        Variant(c, std::move(inputs), absl::StrCat("input ", i, " empty"));
      }
      const bool integer =
          in.dtype() == DType::kInt64 || in.dtype() == DType::kInt32;
      if (integer && in.num_elements() >= 1 && in.num_elements() <= 64) {
        for (int64_t v : {int64_t{1} << 40, std::numeric_limits<int64_t>::max(),
                          -(int64_t{1} << 40)}) {
          std::vector<Tensor> inputs = c.inputs;
          inputs[i] = Filled(in, v);
          Variant(c, inputs, absl::StrCat("input ", i, " = ", v));
          Variant(c, std::move(inputs),
                  absl::StrCat("input ", i, " = ", v, " (constant)"),
                  static_cast<int>(i));
        }
      }
    }
  }

  int num_cases() const { return num_cases_; }

  void Print() const {
    std::cout << num_cases_ << " cases, " << num_variants_
              << " hostile variants\n";
    for (const auto& [code, n] : by_code_)
      std::cout << "  " << code << ": " << n << "\n";
    for (const std::string& s : refused_by_memory_) {
      std::cout << "  (refused by the device memory) " << s << "\n";
    }
    std::cout << "  largest rises of peak resident memory (bound "
              << (kResidentRiseBound >> 20) << " MiB):\n";
    std::vector<std::pair<int64_t, std::string>> rises = rises_;
    std::sort(rises.rbegin(), rises.rend());
    for (size_t i = 0; i < rises.size() && i < 5; ++i) {
      std::cout << "    " << (rises[i].first >> 10) << " KiB  "
                << rises[i].second << "\n";
    }
  }

 private:
  // `constant_input` >= 0 also tells the kernel that input's value at build
  // time (the factory path that folds shapes and counts).
  void Variant(const testing::OnnxNodeCase& c, std::vector<Tensor> inputs,
               const std::string& variant, int constant_input = -1) {
    testing::RunKernelOptions options = c.options;
    options.hide_input_shapes = true;
    options.memory_bytes = kDeviceMemory;
    if (constant_input >= 0) options.constant_inputs = {constant_input};
    const std::string what = c.name + " " + variant;
    if (verbose_) std::cerr << what << std::endl;
    ASSERT_TRUE(ResetPeakResident()) << "cannot reset VmHWM";
    const Resident before = ReadResident();
    absl::StatusOr<std::vector<Tensor>> got =
        testing::RunKernel(registry_, c.node, inputs, options);
    const Resident after = ReadResident();
    ASSERT_GE(before.current, 0) << "no VmRSS in /proc/self/status";
    ASSERT_GE(after.peak, 0) << "no VmHWM in /proc/self/status";
    const int64_t rise = after.peak - before.current;
    rises_.emplace_back(rise, what);
    EXPECT_LE(rise, kResidentRiseBound)
        << what << " raised peak resident memory by " << (rise >> 20)
        << " MiB: " << got.status();
    ++num_variants_;
    ++by_code_[absl::StatusCodeToString(got.status().code())];
    const std::string offense = Offense(got.status());
    EXPECT_EQ(offense, "") << what << ": " << got.status();
    if (offense.empty() &&
        got.status().code() == absl::StatusCode::kResourceExhausted) {
      refused_by_memory_.push_back(what + ": " +
                                   std::string(got.status().message()));
    }
  }

  const KernelRegistry& registry_;
  const bool verbose_;
  int num_cases_ = 0, num_variants_ = 0;
  std::map<std::string, int> by_code_;
  std::vector<std::string> refused_by_memory_;
  std::vector<std::pair<int64_t, std::string>> rises_;
};

// Starts oneDNN and OpenMP (their threads, stacks and arenas), then caps
// the address space a headroom above what is in use (not under
// sanitizers, which reserve terabytes of shadow memory: their allocation
// limit above stands in) and checks that they still run under the cap. Only the soft limit moves, so a second call may set it
// again.
void CapAddressSpace(const KernelRegistry& registry) {
  Node matmul = testing::MakeNode("MatMul", {"a", "b"}, {"y"});
  const std::vector<Tensor> inputs = {testing::RandomTensor({256, 256}, 1),
                                      testing::RandomTensor({256, 256}, 2)};
  ASSERT_TRUE(testing::RunKernel(registry, matmul, inputs).ok());
#ifndef GLINT_HOSTILE_SANITIZER
  const rlim_t in_use = AddressSpaceInUse();
  ASSERT_GT(in_use, 0u) << "no VmSize in /proc/self/status";
  rlimit limit;
  ASSERT_EQ(getrlimit(RLIMIT_AS, &limit), 0);
  limit.rlim_cur = std::min(in_use + kAddressSpaceHeadroom, limit.rlim_max);
  ASSERT_EQ(setrlimit(RLIMIT_AS, &limit), 0);
#endif
  absl::StatusOr<std::vector<Tensor>> got =
      testing::RunKernel(registry, matmul, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
}

// The instrument itself: touching memory inside a measured span raises the
// peak, so a kernel that touches a giant buffer cannot pass unseen.
TEST(HostileShapesTest, PeakResidentSeesTouchedMemory) {
  ASSERT_TRUE(ResetPeakResident());
  const Resident before = ReadResident();
  {
    std::vector<char> touched(size_t{96} << 20);
    for (size_t i = 0; i < touched.size(); i += 4096) touched[i] = 1;
    ASSERT_EQ(touched[4096], 1);
  }
  const Resident after = ReadResident();
  // Less a page or two that were resident already.
  EXPECT_GE(after.peak - before.current, int64_t{90} << 20);
}

// The outputs that made this test touch 22 GB under TSan (issue 34): each
// window op asked for 2^31 - 1 floats (8 GiB), Range from INT32_MAX down by
// 3 for 715M int32 (2.7 GiB), all under the generating ops' 2^31 element
// cap. They are the request's doing, and the device refuses them as any
// output that does not fit, before anything is touched.
TEST(HostileShapesTest, HugeGeneratedOutputsAreRefusedByTheDeviceMemory) {
  const KernelRegistry& registry = CpuKernelRegistry();
  CapAddressSpace(registry);
  testing::RunKernelOptions options;
  options.memory_bytes = kDeviceMemory;
  options.opset_version = 17;
  struct Case {
    Node node;
    std::vector<Tensor> inputs;
  };
  const std::vector<Case> cases = {
      {testing::MakeNode("HannWindow", {"n"}, {"y"}),
       {testing::MakeTensor<int64_t>({}, {INT32_MAX})}},
      {testing::MakeNode("BlackmanWindow", {"n"}, {"y"},
                         {{"periodic", int64_t{0}}}),
       {testing::MakeTensor<int32_t>({}, {INT32_MAX})}},
      {testing::MakeNode("Range", {"s", "l", "d"}, {"y"}),
       {testing::MakeTensor<int32_t>({}, {INT32_MAX}),
        testing::MakeTensor<int32_t>({}, {1}),
        testing::MakeTensor<int32_t>({}, {-3})}},
  };
  for (const Case& c : cases) {
    for (bool constant : {false, true}) {
      SCOPED_TRACE(c.node.op_type + (constant ? " (constant)" : ""));
      options.constant_inputs.clear();
      if (constant) options.constant_inputs = {0};
      ASSERT_TRUE(ResetPeakResident());
      const Resident before = ReadResident();
      absl::StatusOr<std::vector<Tensor>> got =
          testing::RunKernel(registry, c.node, c.inputs, options);
      const Resident after = ReadResident();
      EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted)
          << got.status();
      EXPECT_TRUE(absl::StrContains(got.status().message(), "out of memory"))
          << got.status();
      EXPECT_LE(after.peak - before.current, kResidentRiseBound);
    }
  }
}

TEST(HostileShapesTest, EveryKernelRefusesOrCopesWithoutGiantAllocations) {
  const std::vector<std::string> cases = testing::ListOnnxNodeCases();
  if (cases.empty()) GTEST_SKIP() << testing::kOnnxNodeDataDir << " absent";
  const KernelRegistry& registry = CpuKernelRegistry();
  CapAddressSpace(registry);
  HostileRunner runner(registry);
  for (const std::string& name : cases) {
    testing::OnnxNodeCase c;
    if (!testing::LoadOnnxNodeCase(testing::kOnnxNodeDataDir, name, registry,
                                   &c)) {
      continue;
    }
    runner.Run(c);
  }
  runner.Print();
  EXPECT_GE(runner.num_cases(), 100);
}

// The opset 18-23 forms and ops, which the installed ONNX test data (opset
// 17) has no cases for: one small valid case each, then the same hostile
// variants.
std::vector<testing::OnnxNodeCase> OpsetEighteenCases() {
  using testing::MakeNode;
  using testing::MakeTensor;
  using testing::RandomTensor;
  using Ints = std::vector<int64_t>;
  std::vector<testing::OnnxNodeCase> cases;
  auto add = [&](std::string name, int64_t opset, Node node,
                 std::vector<Tensor> inputs) {
    testing::OnnxNodeCase c;
    c.name = std::move(name);
    c.node = std::move(node);
    c.inputs = std::move(inputs);
    c.options.opset_version = opset;
    cases.push_back(std::move(c));
  };
  const Tensor x4 = RandomTensor({1, 4, 6, 6}, 1);
  auto ints = [](Ints v) {
    return MakeTensor<int64_t>({static_cast<int64_t>(v.size())}, v);
  };
  add("split_num_outputs", 18,
      MakeNode("Split", {"x"}, {"a", "b", "c"},
               {{"axis", int64_t{2}}, {"num_outputs", int64_t{3}}}),
      {x4});
  add("pad_wrap_axes", 19,
      MakeNode("Pad", {"x", "p", "", "a"}, {"y"},
               {{"mode", std::string("wrap")}}),
      {x4, ints({1, -2, 3, 1}), Tensor(), ints({-1, 2})});
  add("resize_axes_antialias", 19,
      MakeNode("Resize", {"x", "", "s"}, {"y"},
               {{"mode", std::string("cubic")},
                {"antialias", int64_t{1}},
                {"axes", Ints{2, 3}}}),
      {x4, Tensor(), MakeTensor<float>({2}, {0.5f, 0.7f})});
  add("resize_sizes_not_smaller", 19,
      MakeNode("Resize", {"x", "", "", "z"}, {"y"},
               {{"mode", std::string("linear")},
                {"keep_aspect_ratio_policy", std::string("not_smaller")},
                {"coordinate_transformation_mode",
                 std::string("half_pixel_symmetric")},
                {"axes", Ints{-1, -2}}}),
      {x4, Tensor(), Tensor(), ints({3, 5})});
  add("averagepool_dilations", 19,
      MakeNode("AveragePool", {"x"}, {"y"},
               {{"kernel_shape", Ints{2, 2}},
                {"dilations", Ints{2, 2}},
                {"pads", Ints{1, 1, 1, 1}},
                {"count_include_pad", int64_t{1}}}),
      {x4});
  add("lppool_ceil", 18,
      MakeNode("LpPool", {"x"}, {"y"},
               {{"kernel_shape", Ints{3, 3}},
                {"strides", Ints{2, 2}},
                {"ceil_mode", int64_t{1}},
                {"p", int64_t{3}}}),
      {x4});
  add("mish", 18, MakeNode("Mish", {"x"}, {"y"}), {x4});
  add("bitwise_and", 18, MakeNode("BitwiseAnd", {"a", "b"}, {"y"}),
      {ints({1, 2, 3}), ints({3, 3, 3})});
  add("bitwise_not", 18, MakeNode("BitwiseNot", {"x"}, {"y"}),
      {ints({1, 2, 3})});
  add("group_norm_18", 18,
      MakeNode("GroupNormalization", {"x", "s", "b"}, {"y"},
               {{"num_groups", int64_t{2}}}),
      {x4, RandomTensor({2}, 2), RandomTensor({2}, 3)});
  add("group_norm_21", 21,
      MakeNode("GroupNormalization", {"x", "s", "b"}, {"y"},
               {{"num_groups", int64_t{2}}}),
      {x4, RandomTensor({4}, 2), RandomTensor({4}, 3)});
  add("rms_norm", 23,
      MakeNode("RMSNormalization", {"x", "s"}, {"y"}, {{"axis", int64_t{2}}}),
      {x4, RandomTensor({6, 6}, 4)});
  add("col2im", 18,
      MakeNode("Col2Im", {"x", "i", "b"}, {"y"},
               {{"strides", Ints{1, 2}}, {"pads", Ints{0, 1, 0, 1}}}),
      {RandomTensor({1, 4, 9}, 5), ints({4, 5}), ints({2, 2})});
  add("center_crop_pad", 18,
      MakeNode("CenterCropPad", {"x", "s"}, {"y"}, {{"axes", Ints{1, -1}}}),
      {x4, ints({3, 9})});
  add("rotary_positions", 23,
      MakeNode("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"},
               {{"num_heads", int64_t{2}}, {"interleaved", int64_t{1}}}),
      {RandomTensor({2, 3, 8}, 6), RandomTensor({5, 2}, 7),
       RandomTensor({5, 2}, 8),
       MakeTensor<int64_t>({2, 3}, {0, 1, 2, 4, 3, 2})});
  add("rotary_caches", 23, MakeNode("RotaryEmbedding", {"x", "c", "s"}, {"y"}),
      {RandomTensor({2, 2, 3, 4}, 6), RandomTensor({2, 3, 2}, 7),
       RandomTensor({2, 3, 2}, 8)});
  add("attention_4d_past_mask", 23,
      MakeNode("Attention", {"q", "k", "v", "m", "pk", "pv"},
               {"y", "pk_out", "pv_out", "qk"},
               {{"is_causal", int64_t{1}},
                {"softcap", 3.0f},
                {"qk_matmul_output_mode", int64_t{3}}}),
      {RandomTensor({1, 4, 3, 8}, 9), RandomTensor({1, 2, 3, 8}, 10),
       RandomTensor({1, 2, 3, 6}, 11), RandomTensor({3, 5}, 12),
       RandomTensor({1, 2, 2, 8}, 13), RandomTensor({1, 2, 2, 6}, 14)});
  add("attention_3d", 23,
      MakeNode("Attention", {"q", "k", "v"}, {"y"},
               {{"q_num_heads", int64_t{4}}, {"kv_num_heads", int64_t{2}}}),
      {RandomTensor({2, 3, 16}, 15), RandomTensor({2, 5, 8}, 16),
       RandomTensor({2, 5, 6}, 17)});
  add("dft_axis_input", 20, MakeNode("DFT", {"x", "n", "a"}, {"y"}),
      {RandomTensor({2, 8, 1}, 18), ints({6}), ints({1})});
  add("gridsample_5d", 20,
      MakeNode("GridSample", {"x", "g"}, {"y"},
               {{"mode", std::string("linear")}}),
      {RandomTensor({1, 2, 3, 4, 5}, 19), RandomTensor({1, 2, 2, 2, 3}, 20)});
  add("scatternd_max", 18,
      MakeNode("ScatterND", {"d", "i", "u"}, {"y"},
               {{"reduction", std::string("max")}}),
      {RandomTensor({4, 3}, 21), MakeTensor<int64_t>({2, 1}, {1, 1}),
       RandomTensor({2, 3}, 22)});
  add("reduce_max_axes", 18,
      MakeNode("ReduceMax", {"x", "a"}, {"y"}), {x4, ints({1, -1})});
  return cases;
}

TEST(HostileShapesTest, OpsetEighteenToTwentyThreeKernels) {
  const KernelRegistry& registry = CpuKernelRegistry();
  CapAddressSpace(registry);
  HostileRunner runner(registry);
  for (const testing::OnnxNodeCase& c : OpsetEighteenCases()) {
    // The case itself runs.
    testing::RunKernelOptions options = c.options;
    absl::StatusOr<std::vector<Tensor>> got =
        testing::RunKernel(registry, c.node, c.inputs, options);
    ASSERT_TRUE(got.ok()) << c.name << ": " << got.status();
    runner.Run(c);
  }
  runner.Print();
}

}  // namespace
}  // namespace glint::cpu
