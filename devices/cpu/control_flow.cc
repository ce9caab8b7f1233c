// If, Loop and Scan (control_flow.h).
#include "devices/cpu/control_flow.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/graph.h"
#include "core/status_macros.h"
#include "core/tensor.h"
#include "devices/cpu/kernel.h"
#include "devices/cpu/kernel_util.h"
#include "devices/cpu/compile_steps.h"
#include "devices/cpu/cpu_rewrites.h"
#include "devices/cpu/register.h"

namespace glint::cpu {
namespace {

// The subgraph runs left to the outermost control-flow node running on this
// thread (kMaxSubgraphRuns). A nested node's kernels run inside its
// parent's Compute, on the same thread, so a thread-local total covers the
// whole nest.
thread_local int64_t* subgraph_runs_left = nullptr;
thread_local int64_t subgraph_run_limit = kMaxSubgraphRuns;
// kMaxScanOutputElements, unless a test lowered it on this thread.
thread_local int64_t scan_output_limit = kMaxScanOutputElements;

// Counts subgraph runs against the outermost node's budget. The first
// (outermost) budget on a thread owns the count; nested ones share it.
class SubgraphRunBudget {
 public:
  SubgraphRunBudget() : owner_(subgraph_runs_left == nullptr) {
    if (owner_) {
      left_ = subgraph_run_limit;
      subgraph_runs_left = &left_;
    }
  }
  ~SubgraphRunBudget() {
    if (owner_) subgraph_runs_left = nullptr;
  }
  SubgraphRunBudget(const SubgraphRunBudget&) = delete;
  SubgraphRunBudget& operator=(const SubgraphRunBudget&) = delete;

  // INVALID_ARGUMENT once the nest has run kMaxSubgraphRuns subgraphs.
  absl::Status Take(absl::string_view node) {
    if (*subgraph_runs_left <= 0) {
      return InvalidArgument(node, "control flow ran past the limit of ",
                             subgraph_run_limit,
                             " subgraph runs (nested loops included)");
    }
    --*subgraph_runs_left;
    return absl::OkStatus();
  }

 private:
  const bool owner_;
  int64_t left_ = 0;
};

// A compiled subgraph: its nodes' kernels in order, run on host tensors.
// Thread-safe (immutable after Build; Run keeps its state on the stack).
class SubgraphRunner {
 public:
  // `owner` describes the node and attribute, for messages. `precision` is
  // the owning node's (KernelSpec::precision), given to every kernel of the
  // subgraph so that MatMul/Gemm/Conv inside a body honour it too.
  static absl::StatusOr<std::unique_ptr<SubgraphRunner>> Build(
      const Graph& graph, const KernelRegistry& registry, std::string owner,
      Precision precision) {
    auto r = std::unique_ptr<SubgraphRunner>(new SubgraphRunner());
    r->owner_ = std::move(owner);
    r->graph_ = graph;
    Graph& g = r->graph_;
    // Constants (the Constant nodes of a loop body above all) are computed
    // once here rather than on every iteration.
    GLINT_RETURN_IF_ERROR(FoldConstants(&g, registry));
    RemoveUnusedInitializers(&g);
    absl::Status valid = g.Validate();
    if (!valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(r->owner_, ": ", valid.message()));
    }
    absl::flat_hash_map<std::string, int> slot_of;
    auto add = [&](const ValueInfo& info) {
      slot_of[info.name] = static_cast<int>(r->slots_.size());
      r->slots_.push_back(info);
    };
    for (const ValueInfo& in : g.inputs) add(in);
    for (const auto& [name, tensor] : g.initializers) {
      r->constants_.emplace_back(static_cast<int>(r->slots_.size()), &tensor);
      add(ValueInfo{name, tensor.dtype(), tensor.shape()});
    }
    // Every node output's slot, in node order (Validate() checked that
    // each is typed), then the kernels.
    for (const Node& node : g.nodes) {
      for (const std::string& out : node.outputs) {
        if (!out.empty()) add(*g.FindValue(out));
      }
    }
    absl::StatusOr<std::vector<CompiledStep>> compiled = CompileSteps(
        g, slot_of,
        [&r](int slot) -> const ValueInfo& { return r->slots_[slot]; },
        registry, precision);
    if (!compiled.ok()) {
      return absl::Status(
          compiled.status().code(),
          absl::StrCat(r->owner_, ": ", compiled.status().message()));
    }
    for (CompiledStep& c : *compiled) {
      r->steps_.push_back(
          {std::move(c.kernel), std::move(c.inputs), std::move(c.outputs)});
    }
    for (const ValueInfo& out : g.outputs) {
      r->output_slots_.push_back(slot_of.at(out.name));
    }
    return r;
  }

  const std::vector<ValueInfo>& inputs() const { return graph_.inputs; }
  const std::vector<ValueInfo>& outputs() const { return graph_.outputs; }
  const std::string& owner() const { return owner_; }

  // Runs the subgraph on `inputs` (one per subgraph input, borrowed) and
  // returns its outputs, owned. Every value the subgraph makes comes from
  // `outer`'s temporaries (KernelContext::AllocateTemporary): the device's
  // memory when the owning node runs on one.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<TensorView>& inputs,
                                          KernelContext& outer) const {
    if (inputs.size() != graph_.inputs.size()) {
      return absl::InternalError(absl::StrCat(
          owner_, ": ", inputs.size(), " inputs for ", graph_.inputs.size()));
    }
    State state;
    state.outer = &outer;
    state.views.resize(slots_.size());
    state.owned.resize(slots_.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const ValueInfo& info = graph_.inputs[i];
      if (inputs[i].dtype != info.dtype ||
          !info.shape.Admits(inputs[i].shape)) {
        return absl::InvalidArgumentError(absl::StrCat(
            owner_, ": input '", info.name, "' is ", DTypeName(inputs[i].dtype),
            inputs[i].shape.ToString(), ", but the subgraph declares ",
            DTypeName(info.dtype), info.shape.ToString()));
      }
      state.views[i] = inputs[i];
    }
    for (const auto& [slot, tensor] : constants_) {
      state.views[slot] = ViewOf(*tensor);
    }
    for (const Step& step : steps_) {
      StepContext ctx(*this, step, state);
      GLINT_RETURN_IF_ERROR(ComputeNoThrow(*step.kernel, ctx, owner_));
      for (int out : step.outputs) {
        if (out >= 0 && state.views[out].data == nullptr &&
            state.views[out].num_elements() != 0) {
          return absl::InternalError(absl::StrCat(
              owner_, ": '", slots_[out].name, "' was not produced"));
        }
      }
    }
    std::vector<Tensor> result;
    result.reserve(output_slots_.size());
    for (int slot : output_slots_) {
      if (state.owned[slot].valid() &&
          state.owned[slot].raw_data() == state.views[slot].data) {
        result.push_back(state.owned[slot]);  // Shares the buffer.
        continue;
      }
      // An input or a constant passed through: copied, as the caller's
      // buffers may change before the copy is read.
      const TensorView& v = state.views[slot];
      result.push_back(Tensor::Borrow(v.dtype, v.shape, v.data).Clone());
    }
    return result;
  }

 private:
  struct Step {
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;   // Slot ids; -1 for an absent input.
    std::vector<int> outputs;  // Slot ids; -1 for an unused output.
  };
  struct State {
    KernelContext* outer = nullptr;  // Where values are allocated.
    std::vector<TensorView> views;
    std::vector<Tensor> owned;
  };

  class StepContext : public KernelContext {
   public:
    StepContext(const SubgraphRunner& runner, const Step& step, State& state)
        : runner_(runner), step_(step), state_(state) {}
    int num_inputs() const override {
      return static_cast<int>(step_.inputs.size());
    }
    const TensorView* input(int i) const override {
      if (i < 0 || i >= num_inputs() || step_.inputs[i] < 0) return nullptr;
      return &state_.views[step_.inputs[i]];
    }
    int num_outputs() const override {
      return static_cast<int>(step_.outputs.size());
    }
    bool output_used(int i) const override {
      return i >= 0 && i < num_outputs() && step_.outputs[i] >= 0;
    }
    absl::StatusOr<TensorView> AllocateOutput(int i,
                                              const Shape& shape) override {
      if (!output_used(i)) {
        return absl::InternalError(
            absl::StrCat(runner_.owner_, ": unused output ", i, " allocated"));
      }
      const int slot = step_.outputs[i];
      const ValueInfo& info = runner_.slots_[slot];
      if (state_.owned[slot].valid() && state_.views[slot].data != nullptr) {
        return absl::InternalError(absl::StrCat(
            runner_.owner_, ": '", info.name, "' allocated twice"));
      }
      if (!shape.IsStatic()) {
        return absl::InvalidArgumentError(absl::StrCat(
            runner_.owner_, ": computed shape ", shape.ToString(), " for '",
            info.name, "': dimensions must not be negative"));
      }
      if (!info.shape.Admits(shape)) {
        return absl::InvalidArgumentError(absl::StrCat(
            runner_.owner_, ": computed shape ", shape.ToString(), " for '",
            info.name, "', but its inferred shape is ", info.shape.ToString()));
      }
      absl::StatusOr<Tensor> t =
          state_.outer->AllocateTemporary(info.dtype, shape);
      if (!t.ok()) {
        return absl::Status(t.status().code(),
                            absl::StrCat(runner_.owner_, ": '", info.name,
                                         "': ", t.status().message()));
      }
      state_.owned[slot] = *std::move(t);
      state_.views[slot] = ViewOf(state_.owned[slot]);
      return state_.views[slot];
    }
    // A nested control-flow node's values come from the same memory.
    absl::StatusOr<Tensor> AllocateTemporary(DType dtype,
                                             const Shape& shape) override {
      return state_.outer->AllocateTemporary(dtype, shape);
    }

   private:
    const SubgraphRunner& runner_;
    const Step& step_;
    State& state_;
  };

  SubgraphRunner() = default;

  std::string owner_;
  Graph graph_;  // Owns the nodes the kernels were built from, constants.
  std::vector<ValueInfo> slots_;
  std::vector<std::pair<int, const Tensor*>> constants_;  // Into graph_.
  std::vector<Step> steps_;
  std::vector<int> output_slots_;
};

// The runner of graph attribute `attr` of the spec's node; INVALID_ARGUMENT
// when the node has none or it lacks the node's implicit inputs.
absl::StatusOr<std::unique_ptr<SubgraphRunner>> BuildBody(
    const KernelSpec& spec, const KernelRegistry& registry,
    absl::string_view attr, int formal_inputs, int outputs) {
  const Node& node = *spec.node;
  const Graph* g = node.GetGraph(attr);
  if (g == nullptr) {
    return InvalidArgument(node.Describe(), "graph attribute '", attr,
                           "' is missing");
  }
  const int want_inputs = formal_inputs + node.num_implicit_inputs;
  if (static_cast<int>(g->inputs.size()) != want_inputs ||
      static_cast<int>(g->outputs.size()) != outputs) {
    return InvalidArgument(node.Describe(), "subgraph '", attr, "' has ",
                           g->inputs.size(), " inputs and ", g->outputs.size(),
                           " outputs; the node needs ", want_inputs, " and ",
                           outputs);
  }
  return SubgraphRunner::Build(
      *g, registry, absl::StrCat(node.Describe(), " subgraph '", attr, "'"),
      spec.precision);
}

// Copies `t` into output `i`.
absl::Status EmitOutput(KernelContext& ctx, int i, const Tensor& t,
                        const std::string& node) {
  if (!ctx.output_used(i)) return absl::OkStatus();
  GLINT_ASSIGN_OR_RETURN(TensorView out,
                         AllocateOutput(ctx, i, t.shape(), t.dtype(), node));
  if (t.num_bytes() > 0) std::memcpy(out.data, t.raw_data(), t.num_bytes());
  return absl::OkStatus();
}

// The views of inputs [begin, end) of `ctx`; INVALID_ARGUMENT for an
// absent one.
absl::StatusOr<std::vector<TensorView>> InputViews(const KernelContext& ctx,
                                                   int begin, int end,
                                                   const std::string& node) {
  std::vector<TensorView> views;
  for (int i = begin; i < end; ++i) {
    GLINT_ASSIGN_OR_RETURN(const TensorView* v,
                           GetInput(ctx, i, DType::kUndefined, node));
    views.push_back(*v);
  }
  return views;
}

absl::StatusOr<bool> ReadCondition(const TensorView& t, absl::string_view what,
                                   const std::string& node) {
  if (t.dtype != DType::kBool || t.num_elements() != 1) {
    return InvalidArgument(node, what, " must be one bool, not ",
                           DTypeName(t.dtype), t.shape.ToString());
  }
  return *t.as<bool>() != 0;
}

// Stacks `parts` (equal shapes) along a new axis `axis` of the result, part
// t at position t (or count-1-t when `reverse`). `fallback` gives the part
// shape when there are none (unknown dims as 0).
absl::StatusOr<Tensor> Stack(KernelContext& ctx,
                             const std::vector<Tensor>& parts, int64_t axis,
                             bool reverse, DType dtype, const Shape& fallback,
                             const std::string& node, absl::string_view what) {
  Shape part_shape = fallback;
  if (!parts.empty()) {
    part_shape = parts[0].shape();
  } else {
    for (int64_t& d : part_shape.mutable_dims()) d = std::max<int64_t>(d, 0);
  }
  const int rank = part_shape.rank();
  GLINT_ASSIGN_OR_RETURN(const int a,
                         NormalizeAxis(axis, rank + 1, false, node));
  const int64_t count = static_cast<int64_t>(parts.size());
  for (const Tensor& p : parts) {
    if (p.shape() != part_shape || p.dtype() != dtype) {
      return InvalidArgument(node, what, " changes from ",
                             part_shape.ToString(), " to ",
                             p.shape().ToString(),
                             " between iterations; scan outputs must keep "
                             "their shape");
    }
  }
  std::vector<int64_t> dims = part_shape.dims();
  dims.insert(dims.begin() + a, count);
  Shape shape(std::move(dims));
  const int64_t part_elements = part_shape.NumElements();
  if (count > 0 && part_elements > scan_output_limit / count) {
    return InvalidArgument(node, what, " would hold ", shape.ToString(),
                           ", over the limit of ", scan_output_limit,
                           " elements");
  }
  GLINT_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateTemporary(dtype, shape));
  const size_t es = DTypeSize(dtype);
  const int64_t outer = Product(part_shape.dims(), 0, a);
  const size_t inner =
      static_cast<size_t>(Product(part_shape.dims(), a, rank)) * es;
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t t = 0; t < count; ++t) {
    const int64_t pos = reverse ? count - 1 - t : t;
    const char* src = static_cast<const char*>(parts[t].raw_data());
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(dst + (o * count + pos) * inner, src + o * inner, inner);
    }
  }
  return out;
}

// Element `index` of `t` along `axis`, as a tensor of its own.
absl::StatusOr<Tensor> SliceAt(KernelContext& ctx, const TensorView& t,
                               int axis, int64_t index) {
  std::vector<int64_t> dims = t.shape.dims();
  const int64_t len = dims[axis];
  dims.erase(dims.begin() + axis);
  GLINT_ASSIGN_OR_RETURN(Tensor out,
                         ctx.AllocateTemporary(t.dtype, Shape(dims)));
  const size_t es = DTypeSize(t.dtype);
  const int64_t outer = Product(t.shape.dims(), 0, axis);
  const size_t inner =
      static_cast<size_t>(Product(t.shape.dims(), axis + 1, t.shape.rank())) *
      es;
  const char* src = static_cast<const char*>(t.data);
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + o * inner, src + (o * len + index) * inner, inner);
  }
  return out;
}

absl::Status CheckOutputDTypes(const KernelSpec& spec,
                               const SubgraphRunner& body, int body_first,
                               int node_first, int count) {
  for (int k = 0; k < count; ++k) {
    const DType want = body.outputs()[body_first + k].dtype;
    GLINT_RETURN_IF_ERROR(SpecOutputDType(spec, node_first + k, want).status());
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// If: then_branch or else_branch, chosen by the bool input; the branches'
// outputs may differ in shape.

class IfKernel : public KernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(
      const KernelSpec& spec, const KernelRegistry& registry) {
    const Node& node = *spec.node;
    if (node.num_explicit_inputs() != 1 || !spec.has_input(0)) {
      return InvalidArgument(node.Describe(),
                             "If takes exactly one input, its condition");
    }
    if (spec.inputs[0].dtype != DType::kBool) {
      return InvalidArgument(node.Describe(), "the condition must be bool");
    }
    const int n = static_cast<int>(node.outputs.size());
    auto k = std::unique_ptr<IfKernel>(new IfKernel(spec));
    GLINT_ASSIGN_OR_RETURN(k->then_,
                           BuildBody(spec, registry, "then_branch", 0, n));
    GLINT_ASSIGN_OR_RETURN(k->else_,
                           BuildBody(spec, registry, "else_branch", 0, n));
    for (const SubgraphRunner* b : {k->then_.get(), k->else_.get()}) {
      GLINT_RETURN_IF_ERROR(CheckOutputDTypes(spec, *b, 0, 0, n));
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    GLINT_ASSIGN_OR_RETURN(const TensorView* c,
                           GetInput(ctx, 0, DType::kBool, node()));
    GLINT_ASSIGN_OR_RETURN(const bool cond,
                           ReadCondition(*c, "the condition", node()));
    GLINT_ASSIGN_OR_RETURN(std::vector<TensorView> captures,
                           InputViews(ctx, 1, ctx.num_inputs(), node()));
    const SubgraphRunner& branch = cond ? *then_ : *else_;
    GLINT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, branch.Run(captures, ctx));
    for (size_t i = 0; i < outs.size(); ++i) {
      GLINT_RETURN_IF_ERROR(
          EmitOutput(ctx, static_cast<int>(i), outs[i], node()));
    }
    return absl::OkStatus();
  }

 private:
  explicit IfKernel(const KernelSpec& spec) : KernelBase(spec) {}
  std::unique_ptr<SubgraphRunner> then_;
  std::unique_ptr<SubgraphRunner> else_;
};

// ---------------------------------------------------------------------------
// Loop: inputs M (trip count), cond, N loop-carried values; the body maps
// (iteration, cond, carried...) to (cond, carried..., scan outputs...).

class LoopKernel : public KernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(
      const KernelSpec& spec, const KernelRegistry& registry) {
    const Node& node = *spec.node;
    const int explicit_inputs = node.num_explicit_inputs();
    if (explicit_inputs < 2) {
      return InvalidArgument(node.Describe(),
                             "Loop takes M, cond and the loop-carried values");
    }
    auto k = std::unique_ptr<LoopKernel>(new LoopKernel(spec));
    k->carried_ = explicit_inputs - 2;
    const int outputs = static_cast<int>(node.outputs.size());
    if (outputs < k->carried_) {
      return InvalidArgument(node.Describe(), "Loop has ", outputs,
                             " outputs for ", k->carried_,
                             " loop-carried values");
    }
    k->scans_ = outputs - k->carried_;
    if (spec.has_input(0) && spec.inputs[0].dtype != DType::kInt64) {
      return InvalidArgument(node.Describe(), "M must be int64");
    }
    if (spec.has_input(1) && spec.inputs[1].dtype != DType::kBool) {
      return InvalidArgument(node.Describe(), "cond must be bool");
    }
    GLINT_ASSIGN_OR_RETURN(k->body_,
                           BuildBody(spec, registry, "body", 2 + k->carried_,
                                     1 + k->carried_ + k->scans_));
    const auto& in = k->body_->inputs();
    const auto& out = k->body_->outputs();
    if (in[0].dtype != DType::kInt64 || in[1].dtype != DType::kBool ||
        out[0].dtype != DType::kBool) {
      return InvalidArgument(node.Describe(),
                             "the body must take an int64 iteration number "
                             "and a bool condition and give a bool condition");
    }
    for (int j = 0; j < k->carried_; ++j) {
      if (in[2 + j].dtype != out[1 + j].dtype ||
          (spec.has_input(2 + j) &&
           spec.inputs[2 + j].dtype != in[2 + j].dtype)) {
        return InvalidArgument(node.Describe(), "loop-carried value ", j,
                               " changes dtype");
      }
    }
    GLINT_RETURN_IF_ERROR(
        CheckOutputDTypes(spec, *k->body_, 1, 0, k->carried_ + k->scans_));
    for (int j = 0; j < k->scans_; ++j) {
      k->scan_shapes_.push_back(out[1 + k->carried_ + j].shape);
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    int64_t trip_count = std::numeric_limits<int64_t>::max();
    bool cond = true;
    GLINT_ASSIGN_OR_RETURN(const TensorView* m,
                           GetOptionalInput(ctx, 0, DType::kInt64, node()));
    if (m != nullptr) {
      if (m->num_elements() != 1) {
        return InvalidArgument(node(), "M must be one int64, not ",
                               m->shape.ToString());
      }
      trip_count = *m->as<int64_t>();
    }
    GLINT_ASSIGN_OR_RETURN(const TensorView* c,
                           GetOptionalInput(ctx, 1, DType::kBool, node()));
    if (c != nullptr) {
      GLINT_ASSIGN_OR_RETURN(cond, ReadCondition(*c, "cond", node()));
    }
    if (trip_count > kMaxLoopIterations && c == nullptr) {
      return InvalidArgument(node(), "trip count ", trip_count,
                             " is over the limit of ", kMaxLoopIterations,
                             " iterations");
    }
    GLINT_ASSIGN_OR_RETURN(std::vector<TensorView> initial,
                           InputViews(ctx, 2, 2 + carried_, node()));
    GLINT_ASSIGN_OR_RETURN(
        std::vector<TensorView> captures,
        InputViews(ctx, 2 + carried_, ctx.num_inputs(), node()));
    GLINT_ASSIGN_OR_RETURN(Tensor iteration,
                           Tensor::Create(DType::kInt64, Shape()));
    GLINT_ASSIGN_OR_RETURN(Tensor cond_in,
                           Tensor::Create(DType::kBool, Shape()));
    std::vector<Tensor> carried;  // Empty until the first iteration.
    std::vector<std::vector<Tensor>> scans(scans_);
    std::vector<int64_t> scan_elements(scans_, 0);
    std::vector<TensorView> args(2 + carried_ + captures.size());
    SubgraphRunBudget budget;
    for (int64_t i = 0; i < trip_count && cond; ++i) {
      if (i >= kMaxLoopIterations) {
        return InvalidArgument(node(), "the loop runs past the limit of ",
                               kMaxLoopIterations, " iterations");
      }
      GLINT_RETURN_IF_ERROR(budget.Take(node()));
      *iteration.data<int64_t>() = i;
      *cond_in.data<bool>() = cond;
      args[0] = ViewOf(iteration);
      args[1] = ViewOf(cond_in);
      for (int j = 0; j < carried_; ++j) {
        args[2 + j] = i == 0 ? initial[j] : ViewOf(carried[j]);
      }
      std::copy(captures.begin(), captures.end(), args.begin() + 2 + carried_);
      GLINT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, body_->Run(args, ctx));
      GLINT_ASSIGN_OR_RETURN(cond, ReadCondition(ViewOf(outs[0]),
                                                 "the body's "
                                                 "condition",
                                                 node()));
      carried.assign(outs.begin() + 1, outs.begin() + 1 + carried_);
      for (int j = 0; j < scans_; ++j) {
        Tensor& t = outs[1 + carried_ + j];
        scan_elements[j] += t.num_elements();
        if (scan_elements[j] > scan_output_limit) {
          return InvalidArgument(node(), "scan output ", j,
                                 " grows past the limit of ",
                                 scan_output_limit, " elements");
        }
        scans[j].push_back(std::move(t));
      }
    }
    for (int j = 0; j < carried_; ++j) {
      if (carried.empty()) {
        // No iteration ran: the initial values are the results.
        const TensorView& v = initial[j];
        GLINT_RETURN_IF_ERROR(EmitOutput(
            ctx, j, Tensor::Borrow(v.dtype, v.shape, v.data), node()));
      } else {
        GLINT_RETURN_IF_ERROR(EmitOutput(ctx, j, carried[j], node()));
      }
    }
    for (int j = 0; j < scans_; ++j) {
      if (!ctx.output_used(carried_ + j)) continue;
      GLINT_ASSIGN_OR_RETURN(
          Tensor stacked,
          Stack(ctx, scans[j], 0, false,
                body_->outputs()[1 + carried_ + j].dtype, scan_shapes_[j],
                node(), absl::StrCat("scan output ", j)));
      GLINT_RETURN_IF_ERROR(EmitOutput(ctx, carried_ + j, stacked, node()));
    }
    return absl::OkStatus();
  }

 private:
  explicit LoopKernel(const KernelSpec& spec) : KernelBase(spec) {}
  int carried_ = 0;
  int scans_ = 0;
  std::vector<Shape> scan_shapes_;
  std::unique_ptr<SubgraphRunner> body_;
};

// ---------------------------------------------------------------------------
// Scan: N state values and M scan inputs, each sliced along its scan axis;
// the body maps (states..., slices...) to (states..., scan outputs...).
// Opset 8 has a batch axis first on every input and output, an optional
// sequence_lens input first, and scans axis 1.

class ScanKernel : public KernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<Kernel>> Create(
      const KernelSpec& spec, const KernelRegistry& registry) {
    const Node& node = *spec.node;
    auto k = std::unique_ptr<ScanKernel>(new ScanKernel(spec));
    k->batched_ = spec.opset_version < 9;
    const int first = k->batched_ ? 1 : 0;  // sequence_lens in opset 8.
    const int explicit_inputs = node.num_explicit_inputs() - first;
    const int64_t m = node.GetInt("num_scan_inputs", -1);
    if (m < 1 || m > explicit_inputs) {
      return InvalidArgument(node.Describe(), "num_scan_inputs is ", m,
                             "; it must be in [1, ", explicit_inputs, "]");
    }
    k->first_ = first;
    k->scan_inputs_ = static_cast<int>(m);
    k->states_ = explicit_inputs - k->scan_inputs_;
    const int outputs = static_cast<int>(node.outputs.size());
    if (outputs < k->states_) {
      return InvalidArgument(node.Describe(), "Scan has ", outputs,
                             " outputs for ", k->states_, " states");
    }
    k->scan_outputs_ = outputs - k->states_;
    auto ints = [&](const char* name, int count,
                    std::vector<int64_t>* out) -> absl::Status {
      *out = node.GetInts(name, std::vector<int64_t>(count, 0));
      if (static_cast<int>(out->size()) != count) {
        return InvalidArgument(node.Describe(), "attribute '", name, "' has ",
                               out->size(), " values for ", count);
      }
      return absl::OkStatus();
    };
    if (k->batched_) {
      GLINT_RETURN_IF_ERROR(ints("directions", k->scan_inputs_, &k->in_dirs_));
      k->in_axes_.assign(k->scan_inputs_, 0);
      k->out_dirs_.assign(k->scan_outputs_, 0);
      k->out_axes_.assign(k->scan_outputs_, 0);
    } else {
      GLINT_RETURN_IF_ERROR(
          ints("scan_input_directions", k->scan_inputs_, &k->in_dirs_));
      GLINT_RETURN_IF_ERROR(
          ints("scan_input_axes", k->scan_inputs_, &k->in_axes_));
      GLINT_RETURN_IF_ERROR(
          ints("scan_output_directions", k->scan_outputs_, &k->out_dirs_));
      GLINT_RETURN_IF_ERROR(
          ints("scan_output_axes", k->scan_outputs_, &k->out_axes_));
    }
    GLINT_ASSIGN_OR_RETURN(k->body_, BuildBody(spec, registry, "body",
                                               k->states_ + k->scan_inputs_,
                                               k->states_ + k->scan_outputs_));
    for (int j = 0; j < k->states_; ++j) {
      if (k->body_->inputs()[j].dtype != k->body_->outputs()[j].dtype) {
        return InvalidArgument(node.Describe(), "state ", j,
                               " changes dtype in the body");
      }
    }
    GLINT_RETURN_IF_ERROR(CheckOutputDTypes(spec, *k->body_, 0, 0,
                                            k->states_ + k->scan_outputs_));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const int data_begin = first_;
    const int data_end = first_ + states_ + scan_inputs_;
    GLINT_ASSIGN_OR_RETURN(std::vector<TensorView> data,
                           InputViews(ctx, data_begin, data_end, node()));
    GLINT_ASSIGN_OR_RETURN(std::vector<TensorView> captures,
                           InputViews(ctx, data_end, ctx.num_inputs(), node()));
    // One budget and one count of scan output elements for the whole node:
    // opset 8 runs a scan per batch entry, and each must not start afresh.
    SubgraphRunBudget budget;
    std::vector<int64_t> scan_elements(scan_outputs_, 0);
    if (!batched_) {
      GLINT_ASSIGN_OR_RETURN(
          std::vector<Tensor> outs,
          RunScan(ctx, data, captures, budget, scan_elements));
      for (size_t i = 0; i < outs.size(); ++i) {
        GLINT_RETURN_IF_ERROR(
            EmitOutput(ctx, static_cast<int>(i), outs[i], node()));
      }
      return absl::OkStatus();
    }
    // Opset 8: every input has the batch first; each batch entry is one
    // scan over axis 0 of its slices.
    int64_t batch = -1;
    for (const TensorView& v : data) {
      if (v.shape.rank() < 1 || (batch >= 0 && v.shape.dim(0) != batch)) {
        return InvalidArgument(node(),
                               "every input needs the same batch size first");
      }
      batch = v.shape.dim(0);
    }
    GLINT_ASSIGN_OR_RETURN(const TensorView* lens,
                           GetOptionalInput(ctx, 0, DType::kUndefined, node()));
    std::vector<std::vector<Tensor>> per_batch;
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> slices;
      std::vector<TensorView> views;
      for (const TensorView& v : data) {
        GLINT_ASSIGN_OR_RETURN(Tensor s, SliceAt(ctx, v, 0, b));
        views.push_back(ViewOf(s));
        slices.push_back(std::move(s));
      }
      if (lens != nullptr) {
        GLINT_ASSIGN_OR_RETURN(std::vector<int64_t> l,
                               ReadInt64s(*lens, "sequence_lens", node()));
        const int64_t full =
            views[states_].shape.rank() > 0 ? views[states_].shape.dim(0) : 0;
        if (static_cast<int64_t>(l.size()) != batch || l[b] != full) {
          return Unimplemented(node(),
                               "sequence_lens shorter than the "
                               "scan inputs are not supported");
        }
      }
      GLINT_ASSIGN_OR_RETURN(
          std::vector<Tensor> outs,
          RunScan(ctx, views, captures, budget, scan_elements));
      per_batch.push_back(std::move(outs));
    }
    const int outputs = states_ + scan_outputs_;
    for (int i = 0; i < outputs; ++i) {
      if (!ctx.output_used(i)) continue;
      std::vector<Tensor> parts;
      for (auto& outs : per_batch) parts.push_back(std::move(outs[i]));
      const ValueInfo& body_out = body_->outputs()[i];
      Shape fallback = body_out.shape;
      if (i >= states_) {
        fallback.mutable_dims().insert(fallback.mutable_dims().begin(), 0);
      }
      GLINT_ASSIGN_OR_RETURN(
          Tensor stacked, Stack(ctx, parts, 0, false, body_out.dtype, fallback,
                                node(), absl::StrCat("output ", i)));
      GLINT_RETURN_IF_ERROR(EmitOutput(ctx, i, stacked, node()));
    }
    return absl::OkStatus();
  }

 private:
  explicit ScanKernel(const KernelSpec& spec) : KernelBase(spec) {}

  // One scan (opset 9's semantics) over `data` (states, then scan inputs):
  // the final states, then the scan outputs, allocated as `ctx`'s
  // temporaries. Iterations take from `budget`; `scan_elements` counts each
  // scan output's elements so far (across batch entries) against the limit
  // as they are made.
  absl::StatusOr<std::vector<Tensor>> RunScan(
      KernelContext& ctx, const std::vector<TensorView>& data,
      const std::vector<TensorView>& captures, SubgraphRunBudget& budget,
      std::vector<int64_t>& scan_elements) const {
    int64_t length = -1;
    std::vector<int> axes(scan_inputs_);
    for (int j = 0; j < scan_inputs_; ++j) {
      const TensorView& v = data[states_ + j];
      GLINT_ASSIGN_OR_RETURN(
          axes[j], NormalizeAxis(in_axes_[j], v.shape.rank(), false, node()));
      const int64_t len = v.shape.dim(axes[j]);
      if (length >= 0 && len != length) {
        return InvalidArgument(node(), "scan inputs have lengths ", length,
                               " and ", len, " along their scan axes");
      }
      length = len;
    }
    std::vector<Tensor> states;
    std::vector<std::vector<Tensor>> scans(scan_outputs_);
    std::vector<TensorView> args(states_ + scan_inputs_ + captures.size());
    std::copy(captures.begin(), captures.end(),
              args.begin() + states_ + scan_inputs_);
    for (int64_t t = 0; t < length; ++t) {
      GLINT_RETURN_IF_ERROR(budget.Take(node()));
      for (int j = 0; j < states_; ++j) {
        args[j] = t == 0 ? data[j] : ViewOf(states[j]);
      }
      std::vector<Tensor> slices;
      for (int j = 0; j < scan_inputs_; ++j) {
        const int64_t index = in_dirs_[j] != 0 ? length - 1 - t : t;
        GLINT_ASSIGN_OR_RETURN(Tensor s,
                               SliceAt(ctx, data[states_ + j], axes[j], index));
        slices.push_back(std::move(s));
        args[states_ + j] = ViewOf(slices.back());
      }
      GLINT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, body_->Run(args, ctx));
      states.assign(outs.begin(), outs.begin() + states_);
      for (int j = 0; j < scan_outputs_; ++j) {
        Tensor& part = outs[states_ + j];
        scan_elements[j] += part.num_elements();
        if (scan_elements[j] > scan_output_limit) {
          return InvalidArgument(node(), "scan output ", j,
                                 " grows past the limit of ",
                                 scan_output_limit, " elements");
        }
        scans[j].push_back(std::move(part));
      }
    }
    std::vector<Tensor> result;
    for (int j = 0; j < states_; ++j) {
      if (states.empty()) {
        const TensorView& v = data[j];
        result.push_back(Tensor::Borrow(v.dtype, v.shape, v.data).Clone());
      } else {
        result.push_back(std::move(states[j]));
      }
    }
    for (int j = 0; j < scan_outputs_; ++j) {
      const ValueInfo& out = body_->outputs()[states_ + j];
      GLINT_ASSIGN_OR_RETURN(
          Tensor stacked,
          Stack(ctx, scans[j], out_axes_[j], out_dirs_[j] != 0, out.dtype,
                out.shape, node(), absl::StrCat("scan output ", j)));
      result.push_back(std::move(stacked));
    }
    return result;
  }

  bool batched_ = false;
  int first_ = 0;
  int states_ = 0;
  int scan_inputs_ = 0;
  int scan_outputs_ = 0;
  std::vector<int64_t> in_dirs_, in_axes_, out_dirs_, out_axes_;
  std::unique_ptr<SubgraphRunner> body_;
};

}  // namespace

ScopedSubgraphRunLimitForTesting::ScopedSubgraphRunLimitForTesting(
    int64_t limit)
    : previous_(subgraph_run_limit) {
  subgraph_run_limit = limit;
}

ScopedSubgraphRunLimitForTesting::~ScopedSubgraphRunLimitForTesting() {
  subgraph_run_limit = previous_;
}

ScopedScanOutputLimitForTesting::ScopedScanOutputLimitForTesting(int64_t limit)
    : previous_(scan_output_limit) {
  scan_output_limit = limit;
}

ScopedScanOutputLimitForTesting::~ScopedScanOutputLimitForTesting() {
  scan_output_limit = previous_;
}

void RegisterControlFlowKernels(KernelRegistry* registry) {
  // The subgraphs' kernels come from the registry these are registered in,
  // which must outlive every kernel built from it.
  const KernelRegistry* r = registry;
  registry->Register(
      "If", [r](const KernelSpec& spec) { return IfKernel::Create(spec, *r); });
  registry->Register("Loop", [r](const KernelSpec& spec) {
    return LoopKernel::Create(spec, *r);
  });
  registry->Register("Scan", [r](const KernelSpec& spec) {
    return ScanKernel::Create(spec, *r);
  });
}

}  // namespace glint::cpu
