// The registry, and the test utility's own contract.
#include "devices/cpu/kernel.h"

#include <omp.h>

#include <atomic>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "devices/cpu/kernel_test_util.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/shape_builds.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace glint::cpu {
namespace {

using ::testing::ElementsAre;
using ::testing::IsSupersetOf;
using testing::MakeNode;
using testing::MakeTensor;
using testing::RunKernel;
using testing::ToVector;

TEST(KernelRegistryTest, CpuRegistryHasEveryOp) {
  EXPECT_THAT(
      CpuKernelRegistry().OpTypes(),
      IsSupersetOf({"Add", "AveragePool", "BatchNormalization", "Concat",
                    "Constant", "Conv", "Div", "Flatten", "Gemm",
                    "GlobalAveragePool", "Identity", "MatMul", "MaxPool",
                    "Mul", "Relu", "Reshape", "Sigmoid", "Softmax", "Sub",
                    "Tanh", "Transpose"}));
  std::vector<std::string> types = CpuKernelRegistry().OpTypes();
  EXPECT_TRUE(std::is_sorted(types.begin(), types.end()));
  EXPECT_EQ(&CpuKernelRegistry(), &CpuKernelRegistry());
  EXPECT_EQ(CpuKernelRegistry().Find("NoSuchOp"), nullptr);
}

class FixedKernel : public Kernel {
 public:
  explicit FixedKernel(float v) : v_(v) {}
  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<TensorView> out = ctx.AllocateOutput(0, Shape());
    if (!out.ok()) return out.status();
    *out->as<float>() = v_;
    return absl::OkStatus();
  }

 private:
  float v_;
};

TEST(KernelRegistryTest, SecondRegistrationReplacesFirst) {
  KernelRegistry registry;
  for (float v : {1.0f, 2.0f}) {
    registry.Register("Fixed", [v](const KernelSpec&)
                                   -> absl::StatusOr<std::unique_ptr<Kernel>> {
      return std::unique_ptr<Kernel>(new FixedKernel(v));
    });
  }
  EXPECT_THAT(registry.OpTypes(), ElementsAre("Fixed"));
  testing::RunKernelOptions options;
  options.output_dtypes = {DType::kFloat32};
  absl::StatusOr<std::vector<Tensor>> out =
      RunKernel(registry, MakeNode("Fixed", {}, {"y"}), {}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToVector<float>((*out)[0]), ElementsAre(2.0f));
}

TEST(KernelTestUtilTest, UnknownOpIsNotFound) {
  KernelRegistry empty;
  EXPECT_EQ(RunKernel(empty, MakeNode("Add", {"a", "b"}, {"y"}), {})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

TEST(KernelTestUtilTest, ContextChecksShapesAndDoubleAllocation) {
  testing::TestKernelContext ctx({MakeTensor<float>({1}, {1}), Tensor()},
                                 {DType::kFloat32}, {Shape({2, -1})});
  EXPECT_EQ(ctx.num_inputs(), 2);
  EXPECT_NE(ctx.input(0), nullptr);
  EXPECT_EQ(ctx.input(1), nullptr);  // Absent optional input.
  EXPECT_EQ(ctx.AllocateOutput(0, Shape({3, 1})).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(ctx.AllocateOutput(0, Shape({2, 7})).ok());
  EXPECT_EQ(ctx.AllocateOutput(0, Shape({2, 7})).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(KernelTestUtilTest, ShapeMismatchWithInferredShapeFailsTheKernel) {
  testing::RunKernelOptions options;
  options.output_shapes = {Shape({5})};
  absl::StatusOr<std::vector<Tensor>> out = RunKernel(
      CpuKernelRegistry(), MakeNode("Relu", {"x"}, {"y"}),
      {MakeTensor<float>({2}, {1, -1})}, options);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              ::testing::HasSubstr("relu_node"));
}

TEST(KernelTestUtilTest, DeclaredOutputDTypeMustMatch) {
  testing::RunKernelOptions options;
  options.output_dtypes = {DType::kInt32};
  EXPECT_EQ(RunKernel(CpuKernelRegistry(), MakeNode("Relu", {"x"}, {"y"}),
                      {MakeTensor<float>({1}, {1})}, options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// A kernel whose Compute throws: a stand-in for a kernel bug that lets a
// run-time value size an allocation.
class ThrowingKernel : public Kernel {
 public:
  explicit ThrowingKernel(bool bad_alloc) : bad_alloc_(bad_alloc) {}
  absl::Status Compute(KernelContext&) const override {
    if (bad_alloc_) throw std::bad_alloc();
    throw std::length_error("vector");
  }

 private:
  bool bad_alloc_;
};

TEST(ComputeNoThrowTest, ExceptionsBecomeStatusesNamingTheNode) {
  testing::TestKernelContext ctx({}, {});
  absl::Status oom = ComputeNoThrow(ThrowingKernel(true), ctx, "node 'n'");
  EXPECT_EQ(oom.code(), absl::StatusCode::kResourceExhausted) << oom;
  EXPECT_THAT(std::string(oom.message()), ::testing::HasSubstr("node 'n'"));
  absl::Status other = ComputeNoThrow(ThrowingKernel(false), ctx, "node 'n'");
  EXPECT_EQ(other.code(), absl::StatusCode::kInternal) << other;
  EXPECT_THAT(std::string(other.message()), ::testing::HasSubstr("vector"));

  const Node node = MakeNode("Relu", {"x"}, {"y"});
  KernelSpec spec;
  spec.node = &node;
  const KernelFactory throwing =
      [](const KernelSpec&) -> absl::StatusOr<std::unique_ptr<Kernel>> {
    throw std::bad_alloc();
  };
  EXPECT_EQ(BuildNoThrow(throwing, spec).status().code(),
            absl::StatusCode::kResourceExhausted);
}

// A parallel ParallelFor keeps the calling thread's OpenMP team at its full
// size however few chunks it has: a smaller team would make libgomp end the
// pool's extra threads, and the next full-size region start them again.
TEST(ParallelForTest, CoversEveryIndexOnceWithTheFullTeam) {
  SetKernelThreads(4);
  for (const int64_t n : {2, 3, 5, 64}) {
    std::vector<std::atomic<int>> seen(n);
    std::atomic<int> widest_team{0};
    ParallelFor(n, 1, [&](int64_t begin, int64_t end) {
      widest_team = std::max(widest_team.load(), omp_get_num_threads());
      for (int64_t i = begin; i < end; ++i) seen[i].fetch_add(1);
    });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[i].load(), 1) << i;
#if defined(GLINT_SANITIZER)
    EXPECT_EQ(widest_team.load(), 1) << "serial in sanitizer builds";
#else
    EXPECT_EQ(widest_team.load(), 4) << "n = " << n;
#endif
  }
  SetKernelThreads(omp_get_num_procs());
}

}  // namespace
}  // namespace glint::cpu

namespace glint::cpu {
namespace {

// A build is counted only with a recorder installed on its thread, once
// however deeply builds nest, and the previous recorder comes back when a
// scope ends.
TEST(ShapeBuildsTest, CountsOnlyRecordedOutermostBuilds) {
  { ShapeBuildTimer compile_time; }  // No recorder: nothing to count.
  ShapeBuildRecorder outer, inner;
  {
    ScopedShapeBuildRecording recording(&outer);
    { ShapeBuildTimer build; }
    {
      ShapeBuildTimer build;
      ShapeBuildTimer nested;  // A late-bound kernel building a conv.
    }
    {
      ScopedShapeBuildRecording body(&inner);  // A subgraph's function.
      ShapeBuildTimer build;
    }
    { ShapeBuildTimer build; }  // `outer` again.
  }
  { ShapeBuildTimer after; }  // Uninstalled.
  EXPECT_EQ(outer.builds(), 3u);
  EXPECT_EQ(inner.builds(), 1u);
  EXPECT_GE(outer.time(), absl::ZeroDuration());
}

}  // namespace
}  // namespace glint::cpu
