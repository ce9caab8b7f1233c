#include "devices/cpu/late_kernel.h"

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "devices/cpu/shape_builds.h"

namespace glint::cpu {
namespace {

// Distinct input shapes a node keeps kernels for. A node whose ranks are
// unknown sees few of them (one per If branch, per request shape); beyond
// this the oldest build is dropped and rebuilt if its shapes come back.
constexpr size_t kMaxBuilds = 8;

// Thread-safe: Compute may run concurrently; the cache is behind mu_, and
// each cached kernel is shared so that an eviction never frees a kernel a
// concurrent Compute is running.
class LateBoundKernel final : public Kernel {
 public:
  LateBoundKernel(KernelFactory factory, const KernelSpec& spec)
      : factory_(std::move(factory)),
        node_(*spec.node),
        opset_version_(spec.opset_version),
        precision_(spec.precision),
        inputs_(spec.inputs),
        outputs_(spec.outputs) {
    constants_.resize(spec.inputs.size());
    for (size_t i = 0; i < spec.inputs.size(); ++i) {
      if (const Tensor* c = spec.constant(static_cast<int>(i))) {
        constants_[i] = *c;  // Shares the buffer (Tensor copies are cheap).
      }
    }
  }

  absl::Status Compute(KernelContext& ctx) const override {
    std::vector<Shape> shapes(inputs_.size());
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const TensorView* in = ctx.input(static_cast<int>(i));
      if (in != nullptr) shapes[i] = in->shape;
    }
    absl::StatusOr<std::shared_ptr<const Kernel>> kernel = KernelFor(shapes);
    if (!kernel.ok()) return kernel.status();
    return (*kernel)->Compute(ctx);
  }

  std::string Describe(const Node& node) const override {
    return absl::StrCat(node.op_type, " (built per run's shapes)");
  }

 private:
  struct Build {
    std::vector<Shape> shapes;
    std::shared_ptr<const Kernel> kernel;
  };

  absl::StatusOr<std::shared_ptr<const Kernel>> KernelFor(
      const std::vector<Shape>& shapes) const {
    {
      absl::MutexLock lock(&mu_);
      for (const Build& b : builds_) {
        if (b.shapes == shapes) return b.kernel;
      }
    }
    // Built outside the lock: a build may take long (oneDNN primitives),
    // and two runs racing to build the same shapes both succeed.
    ShapeBuildTimer timing;  // Counted as one build, whatever it builds.
    KernelSpec spec;
    spec.node = &node_;
    spec.opset_version = opset_version_;
    spec.precision = precision_;
    spec.inputs = inputs_;
    spec.outputs = outputs_;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (inputs_[i].dtype != DType::kUndefined) spec.inputs[i].shape = shapes[i];
      spec.constant_inputs.push_back(
          constants_[i].has_value() ? &*constants_[i] : nullptr);
    }
    absl::StatusOr<std::unique_ptr<Kernel>> built =
        BuildNoThrow(factory_, spec);
    if (!built.ok()) return built.status();
    std::shared_ptr<const Kernel> kernel(std::move(*built));
    absl::MutexLock lock(&mu_);
    if (builds_.size() >= kMaxBuilds) builds_.pop_front();
    builds_.push_back({shapes, kernel});
    return kernel;
  }

  const KernelFactory factory_;
  const Node node_;  // A copy: kernels keep no pointer into the graph.
  const int64_t opset_version_;
  const Precision precision_;
  const std::vector<ValueInfo> inputs_;
  const std::vector<ValueInfo> outputs_;
  std::vector<std::optional<Tensor>> constants_;  // Per input, if constant.

  mutable absl::Mutex mu_;
  mutable std::deque<Build> builds_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

bool NeedsRunTimeShapes(const KernelSpec& spec) {
  for (const ValueInfo& in : spec.inputs) {
    if (in.dtype != DType::kUndefined && !in.shape.has_rank()) return true;
  }
  return false;
}

std::unique_ptr<Kernel> MakeLateBoundKernel(KernelFactory factory,
                                            const KernelSpec& spec) {
  return std::make_unique<LateBoundKernel>(std::move(factory), spec);
}

}  // namespace glint::cpu
