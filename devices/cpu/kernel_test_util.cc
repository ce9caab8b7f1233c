#include "devices/cpu/kernel_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/half.h"
#include "core/status_macros.h"
#include "devices/cpu/isa.h"
#include "gtest/gtest.h"

namespace glint::cpu::testing {

TestKernelContext::TestKernelContext(std::vector<Tensor> inputs,
                                     std::vector<DType> output_dtypes,
                                     std::vector<Shape> expected_shapes,
                                     std::vector<bool> output_used)
    : inputs_(std::move(inputs)),
      output_dtypes_(std::move(output_dtypes)),
      expected_shapes_(std::move(expected_shapes)),
      output_used_(std::move(output_used)) {
  for (const Tensor& t : inputs_) {
    views_.push_back(ViewOf(t));
    present_.push_back(t.valid());
  }
  if (output_used_.empty()) output_used_.assign(output_dtypes_.size(), true);
  outputs_.resize(output_dtypes_.size());
  allocated_.assign(output_dtypes_.size(), false);
}

int TestKernelContext::num_inputs() const {
  return static_cast<int>(inputs_.size());
}

const TensorView* TestKernelContext::input(int i) const {
  if (i < 0 || i >= num_inputs() || !present_[i]) return nullptr;
  return &views_[i];
}

int TestKernelContext::num_outputs() const {
  return static_cast<int>(output_dtypes_.size());
}

absl::StatusOr<TensorView> TestKernelContext::AllocateOutput(
    int i, const Shape& shape) {
  if (i < 0 || i >= num_outputs()) {
    return absl::OutOfRangeError(absl::StrCat("no output ", i));
  }
  if (allocated_[i]) {
    return absl::FailedPreconditionError(
        absl::StrCat("output ", i, " allocated twice"));
  }
  if (i < static_cast<int>(expected_shapes_.size())) {
    const Shape& want = expected_shapes_[i];
    bool ok = want.rank() == shape.rank();
    for (int d = 0; ok && d < want.rank(); ++d) {
      ok = want.dim(d) == Shape::kUnknownDim || want.dim(d) == shape.dim(d);
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("output ", i, " shape ", shape.ToString(),
                       " contradicts the inferred ", want.ToString()));
    }
  }
  if (memory_bytes_ > 0 && shape.IsStatic()) {
    GLINT_RETURN_IF_ERROR(CheckTensorSize(output_dtypes_[i], shape,
                                          absl::StrCat("output ", i)));
    GLINT_RETURN_IF_ERROR(
        Take(shape.NumElements() * DTypeSize(output_dtypes_[i])));
  }
  GLINT_ASSIGN_OR_RETURN(outputs_[i],
                         Tensor::Create(output_dtypes_[i], shape));
  allocated_[i] = true;
  // Poison the buffer: kernels must write every element.
  if (outputs_[i].num_bytes() > 0) {
    std::memset(outputs_[i].raw_data(), 0xA5, outputs_[i].num_bytes());
  }
  return ViewOf(outputs_[i]);
}

absl::Status TestKernelContext::Take(int64_t bytes) {
  const int64_t used = used_bytes_->load();
  if (bytes > memory_bytes_ - used) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "test device is out of memory: ", bytes, " bytes requested, ",
        memory_bytes_ - used, " of ", memory_bytes_, " available"));
  }
  *used_bytes_ += bytes;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> TestKernelContext::AllocateTemporary(
    DType dtype, const Shape& shape) {
  if (memory_bytes_ <= 0 || !shape.IsStatic()) {
    return Tensor::CreateUninitialized(dtype, shape);
  }
  GLINT_RETURN_IF_ERROR(CheckTensorSize(dtype, shape, "a temporary"));
  const int64_t bytes = shape.NumElements() * DTypeSize(dtype);
  GLINT_RETURN_IF_ERROR(Take(bytes));
  absl::StatusOr<Tensor> t = Tensor::CreateUninitialized(dtype, shape);
  if (!t.ok()) {
    *used_bytes_ -= bytes;
    return t.status();
  }
  // A borrow of `t` whose keep-alive holds it and gives the bytes back.
  std::shared_ptr<void> keep(
      t->raw_data(), [owner = *t, used = used_bytes_, bytes](void*) {
        *used -= bytes;
      });
  return Tensor::Borrow(dtype, shape, t->raw_data(), std::move(keep));
}

bool TestKernelContext::output_used(int i) const {
  return i >= 0 && i < static_cast<int>(output_used_.size()) &&
         output_used_[i];
}

DType DefaultOutputDType(const Node& node, int i,
                         const std::vector<Tensor>& inputs) {
  if (node.op_type == "Constant") {
    if (const Tensor* t = node.GetTensor("value")) return t->dtype();
    if (node.HasAttribute("value_float") || node.HasAttribute("value_floats"))
      return DType::kFloat32;
    return DType::kInt64;
  }
  if (node.op_type == "MaxPool" && i == 1) return DType::kInt64;
  for (const Tensor& t : inputs) {
    if (t.valid()) return t.dtype();
  }
  return DType::kUndefined;
}

KernelSpec MakeSpec(const Node& node, const std::vector<Tensor>& inputs,
                    const RunKernelOptions& options) {
  KernelSpec spec;
  spec.node = &node;
  spec.opset_version = options.opset_version;
  spec.precision = options.precision;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueInfo info;
    info.name = i < node.inputs.size() ? node.inputs[i] : "";
    if (inputs[i].valid()) {
      info.dtype = inputs[i].dtype();
      info.shape = inputs[i].shape();
      if (options.hide_input_shapes) {
        for (int64_t& d : info.shape.mutable_dims()) d = Shape::kUnknownDim;
      }
    }
    spec.inputs.push_back(std::move(info));
    const bool constant =
        inputs[i].valid() &&
        std::find(options.constant_inputs.begin(),
                  options.constant_inputs.end(),
                  static_cast<int>(i)) != options.constant_inputs.end();
    spec.constant_inputs.push_back(constant ? &inputs[i] : nullptr);
  }
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    ValueInfo info;
    info.name = node.outputs[i];
    if (i < options.output_dtypes.size()) {
      info.dtype = options.output_dtypes[i];
    }
    if (i < options.output_shapes.size()) {
      info.shape = options.output_shapes[i];
    }
    spec.outputs.push_back(std::move(info));
  }
  return spec;
}

namespace {

bool SameBytes(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].valid() != b[i].valid() || a[i].shape() != b[i].shape() ||
        a[i].dtype() != b[i].dtype()) {
      return false;
    }
    if (a[i].valid() && a[i].num_bytes() > 0 &&
        std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].num_bytes()) !=
            0) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> RunKernel(
    const KernelRegistry& registry, const Node& node,
    const std::vector<Tensor>& inputs, const RunKernelOptions& options) {
  const KernelFactory* factory = registry.Find(node.op_type);
  if (factory == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no CPU kernel for op ", node.op_type));
  }
  const KernelSpec spec = MakeSpec(node, inputs, options);
  // Built and run behind the same exception backstop as in glintd.
  GLINT_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel,
                         BuildNoThrow(*factory, spec));

  std::vector<DType> dtypes(node.outputs.size());
  std::vector<bool> used(node.outputs.size());
  for (size_t i = 0; i < dtypes.size(); ++i) {
    dtypes[i] = spec.outputs[i].dtype != DType::kUndefined
                    ? spec.outputs[i].dtype
                    : DefaultOutputDType(node, static_cast<int>(i), inputs);
    used[i] = !node.outputs[i].empty();
  }
  auto run_once = [&]() -> absl::StatusOr<std::vector<Tensor>> {
    TestKernelContext ctx(inputs, dtypes, options.output_shapes, used);
    ctx.set_memory_bytes(options.memory_bytes);
    GLINT_RETURN_IF_ERROR(ComputeNoThrow(*kernel, ctx, node.Describe()));
    return ctx.TakeOutputs();
  };
  const int runs = std::max(1, options.runs);
  const int threads = std::max(1, options.threads);
  std::vector<absl::StatusOr<std::vector<Tensor>>> results(
      static_cast<size_t>(runs) * threads,
      absl::StatusOr<std::vector<Tensor>>(absl::UnknownError("not run")));
  if (threads == 1) {
    for (int r = 0; r < runs; ++r) results[r] = run_once();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        for (int r = 0; r < runs; ++r) results[t * runs + r] = run_once();
      });
    }
    for (std::thread& th : pool) th.join();
  }
  for (size_t i = 1; i < results.size(); ++i) {
    if (results[i].ok() != results[0].ok() ||
        (results[0].ok() && !SameBytes(*results[i], *results[0]))) {
      return absl::InternalError(
          absl::StrCat("run ", i, " of ", node.Describe(),
                       " differs from run 0"));
    }
  }
  return std::move(results[0]);
}

Node MakeNode(std::string op_type, std::vector<std::string> inputs,
              std::vector<std::string> outputs,
              std::map<std::string, Attribute> attributes) {
  Node node;
  node.name = absl::StrCat(absl::AsciiStrToLower(op_type), "_node");
  node.op_type = std::move(op_type);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  node.attributes = std::move(attributes);
  return node;
}

Tensor RoundToBFloat16(const Tensor& t) {
  Tensor r = *Tensor::Create(DType::kFloat32, t.shape());
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    r.data<float>()[i] = BFloat16ToFloat(FloatToBFloat16(t.data<float>()[i]));
  }
  return r;
}

Tensor RandomTensor(std::vector<int64_t> dims, uint32_t seed, float lo,
                    float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Shape shape(std::move(dims));
  std::vector<float> v(shape.NumElements());
  for (float& x : v) x = dist(rng);
  return Tensor::FromVector(DType::kFloat32, shape, v);
}

double MaxRelativeError(const Tensor& a, const Tensor& b) {
  if (a.num_elements() != b.num_elements() || a.dtype() != DType::kFloat32 ||
      b.dtype() != DType::kFloat32) {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const double err = std::abs(static_cast<double>(pa[i]) - pb[i]) /
                       std::max(1.0, std::abs(static_cast<double>(pb[i])));
    if (std::isnan(err)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, err);
  }
  return worst;
}

void ExpectBf16Result(const Tensor& got, const Tensor& want_rounded,
                      const Tensor& want, const Tensor& magnitude,
                      const Tensor& f32) {
  if (!CpuComputesBFloat16()) {
    // No bfloat16 kernels on this CPU (AVX2): bf16 precision computes in
    // float32, bit for bit (devices/cpu/isa.h).
    ASSERT_EQ(got.shape(), f32.shape());
    EXPECT_EQ(std::memcmp(got.raw_data(), f32.raw_data(), got.num_bytes()), 0)
        << "without bf16 kernels the float32 result is expected";
    EXPECT_LT(MaxRelativeError(f32, want), 1e-4);
    return;
  }
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_LT(MaxRelativeError(got, want_rounded), 1e-4);
  int64_t beyond = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double err = std::fabs(got.data<float>()[i] - want.data<float>()[i]);
    if (err > magnitude.data<float>()[i] / 128.0 + 1e-6) ++beyond;
  }
  EXPECT_EQ(beyond, 0) << "elements beyond bfloat16's error";
  EXPECT_NE(std::memcmp(got.raw_data(), f32.raw_data(), got.num_bytes()), 0)
      << "bit-identical to float32: bf16 precision is not in effect";
  // And float32 precision is float32's accuracy.
  EXPECT_LT(MaxRelativeError(f32, want), 1e-4);
}

#if defined(_OPENMP)
ScopedOmpThreads::ScopedOmpThreads(int threads)
    : saved_(omp_get_max_threads()) {
  omp_set_num_threads(threads);
}
ScopedOmpThreads::~ScopedOmpThreads() { omp_set_num_threads(saved_); }
#else
ScopedOmpThreads::ScopedOmpThreads(int threads) : saved_(threads) {}
ScopedOmpThreads::~ScopedOmpThreads() = default;
#endif

}  // namespace glint::cpu::testing
