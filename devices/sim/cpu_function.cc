#include "devices/sim/cpu_function.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/allocator_policy.h"
#include "core/op_cost.h"
#include "core/status_macros.h"
#include "devices/cpu/compile_steps.h"
#include "devices/cpu/cpu_rewrites.h"
#include "devices/cpu/kernel_util.h"

namespace glint {
namespace {

size_t AlignUp(size_t n) {
  return (n + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

size_t StaticBytes(const ValueInfo& info) {
  return static_cast<size_t>(info.shape.NumElements()) * DTypeSize(info.dtype);
}

// Lifetime of an arena value in step indices, inclusive.
struct Interval {
  int slot;
  int first;
  int last;
  size_t bytes;
  size_t offset = 0;
};

// Places the values in one arena: values whose lifetimes overlap never share
// bytes. Largest first, each at the lowest offset that fits (first fit);
// returns the arena size.
size_t PlanArena(std::vector<Interval>& values) {
  std::vector<Interval*> order;
  for (Interval& v : values) order.push_back(&v);
  std::stable_sort(order.begin(), order.end(),
                   [](const Interval* a, const Interval* b) {
                     return a->bytes > b->bytes;
                   });
  std::vector<const Interval*> placed;
  size_t total = 0;
  for (Interval* v : order) {
    std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) in bytes.
    for (const Interval* p : placed) {
      if (p->first <= v->last && v->first <= p->last) {
        busy.emplace_back(p->offset, p->offset + AlignUp(p->bytes));
      }
    }
    std::sort(busy.begin(), busy.end());
    size_t candidate = 0;
    const size_t need = AlignUp(v->bytes);
    for (const auto& [begin, end] : busy) {
      if (candidate + need <= begin) break;
      candidate = std::max(candidate, end);
    }
    v->offset = candidate;
    total = std::max(total, candidate + need);
    placed.push_back(v);
  }
  return total;
}

// The KernelContext of one step of one execution.
class StepContext : public cpu::KernelContext {
 public:
  StepContext(const Node& node, const std::vector<int>& inputs,
              const std::vector<int>& outputs,
              const std::vector<ValueSlot>& slots,
              std::vector<cpu::TensorView>& views,
              std::vector<bool>& produced, const CpuExecutionMemory& memory,
              const std::vector<DeviceTensor*>& function_outputs,
              std::vector<std::unique_ptr<DeviceBuffer>>& dynamic_buffers)
      : node_(node),
        inputs_(inputs),
        outputs_(outputs),
        slots_(slots),
        views_(views),
        produced_(produced),
        memory_(memory),
        function_outputs_(function_outputs),
        dynamic_buffers_(dynamic_buffers) {}

  int num_inputs() const override { return static_cast<int>(inputs_.size()); }
  const cpu::TensorView* input(int i) const override {
    if (i < 0 || i >= num_inputs() || inputs_[i] < 0) return nullptr;
    return &views_[inputs_[i]];
  }
  int num_outputs() const override {
    return static_cast<int>(outputs_.size());
  }
  bool output_used(int i) const override {
    return i >= 0 && i < num_outputs() && outputs_[i] >= 0;
  }

  absl::StatusOr<cpu::TensorView> AllocateOutput(int i,
                                                 const Shape& shape) override {
    if (!output_used(i)) {
      return absl::InternalError(absl::StrCat(
          node_.Describe(), " allocated output ", i, ", which is unused"));
    }
    const int slot_id = outputs_[i];
    const ValueSlot& slot = slots_[slot_id];
    if (produced_[slot_id]) {
      return absl::InternalError(absl::StrCat(
          node_.Describe(), " allocated output ", i, " twice"));
    }
    // Shapes computed from run-time data (Resize sizes, Tile repeats,
    // Expand shapes...) are the request's doing: a negative dimension or a
    // tensor over the ceilings is a bad input, never an internal error.
    if (!shape.IsStatic()) {
      return absl::InvalidArgumentError(
          absl::StrCat(node_.Describe(), " computed shape ", shape.ToString(),
                       " for output '", slot.info.name,
                       "' from its inputs: dimensions must not be negative"));
    }
    if (absl::Status s = CheckTensorSize(
            slot.info.dtype, shape,
            absl::StrCat(node_.Describe(), ": output '", slot.info.name, "'"));
        !s.ok()) {
      return s;
    }
    // A known inferred rank and dims must match what the kernel computed.
    if (!slot.info.shape.Admits(shape)) {
      return absl::InvalidArgumentError(absl::StrCat(
          node_.Describe(), " computed shape ", shape.ToString(),
          " for output '", slot.info.name, "', but its inferred shape is ",
          slot.info.shape.ToString()));
    }
    cpu::TensorView& view = views_[slot_id];
    view.dtype = slot.info.dtype;
    view.shape = shape;
    const size_t bytes =
        static_cast<size_t>(shape.NumElements()) * DTypeSize(slot.info.dtype);
    switch (slot.kind) {
      case ValueSlot::Kind::kArena:
        view.data = static_cast<char*>(memory_.arena) + slot.offset;
        break;
      case ValueSlot::Kind::kOutput: {
        DeviceTensor* out = function_outputs_[slot.index];
        // A buffer the caller keeps between runs (an execution state) is
        // reused when large enough: no allocation on the hot path.
        if (out->buffer == nullptr || out->buffer->size() < bytes) {
          GLINT_ASSIGN_OR_RETURN(out->buffer, memory_.allocate(bytes));
        }
        view.data = memory_.resolve(*out->buffer);
        out->dtype = view.dtype;
        out->shape = shape;
        break;
      }
      case ValueSlot::Kind::kDynamic: {
        GLINT_ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> buffer,
                               AllocateScratch(bytes));
        view.data = memory_.resolve(*buffer);
        dynamic_buffers_[slot_id] = std::move(buffer);
        break;
      }
      default:
        return absl::InternalError(absl::StrCat(
            "output '", slot.info.name, "' has an input or constant slot"));
    }
    produced_[slot_id] = true;
    return view;
  }

  // A control-flow body's values: device memory, like dynamic values.
  absl::StatusOr<Tensor> AllocateTemporary(DType dtype,
                                           const Shape& shape) override {
    if (!shape.IsStatic()) {
      return absl::InvalidArgumentError(
          absl::StrCat(node_.Describe(), " computed shape ", shape.ToString(),
                       ": dimensions must not be negative"));
    }
    if (absl::Status s = CheckTensorSize(dtype, shape, node_.Describe());
        !s.ok()) {
      return s;
    }
    const size_t bytes =
        static_cast<size_t>(shape.NumElements()) * DTypeSize(dtype);
    if (bytes == 0) return Tensor::Create(dtype, shape);
    GLINT_ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> buffer,
                           AllocateScratch(bytes));
    void* data = memory_.resolve(*buffer);
    return Tensor::Borrow(dtype, shape, data,
                          std::shared_ptr<DeviceBuffer>(std::move(buffer)));
  }

 private:
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateScratch(
      size_t bytes) const {
    return memory_.allocate_scratch ? memory_.allocate_scratch(bytes)
                                    : memory_.allocate(bytes);
  }

  const Node& node_;
  const std::vector<int>& inputs_;
  const std::vector<int>& outputs_;
  const std::vector<ValueSlot>& slots_;
  std::vector<cpu::TensorView>& views_;
  std::vector<bool>& produced_;
  const CpuExecutionMemory& memory_;
  const std::vector<DeviceTensor*>& function_outputs_;
  std::vector<std::unique_ptr<DeviceBuffer>>& dynamic_buffers_;
};

// "float32[1,3,8,8], -, int64[2]": the dtypes and shapes of the views of
// `slot_ids` (a profiled step's inputs or outputs) as the run has them;
// "-" for an absent input or an output not produced.
std::string DescribeViews(const std::vector<cpu::TensorView>& views,
                          const std::vector<bool>& produced,
                          const std::vector<int>& slot_ids) {
  std::string out;
  for (size_t i = 0; i < slot_ids.size(); ++i) {
    if (i > 0) out += ", ";
    const int id = slot_ids[i];
    if (id < 0 || !produced[id]) {
      out += "-";
      continue;
    }
    const cpu::TensorView& v = views[id];
    absl::StrAppend(&out, DTypeName(v.dtype), "[",
                    absl::StrJoin(v.shape.dims(), ","), "]");
  }
  return out;
}

}  // namespace

// A host constant this large, once dropped, has its heap pages given back
// to the OS at once (ReleaseFreeMemory): a freed block below malloc's mmap
// threshold would stay in the process, and what comes next while a
// network loads (packed weights, the device's constant block) is of other
// sizes and does not reuse it, so the weights would be held twice after
// all. A heap walk per such constant is nothing next to packing it.
constexpr size_t kTrimAfterBytes = size_t{1} << 20;

absl::StatusOr<std::shared_ptr<const CpuFunction>> CpuFunction::Create(
    Graph partition, const cpu::KernelRegistry& kernels, Precision precision) {
  std::shared_ptr<CpuFunction> f(new CpuFunction());
  f->graph_ = std::move(partition);
  const Graph& g = f->graph_;
  f->inputs_ = g.inputs;
  f->outputs_ = g.outputs;

  absl::flat_hash_map<std::string, int> slot_of;
  GLINT_RETURN_IF_ERROR(f->AssignSlots(&slot_of));
  GLINT_RETURN_IF_ERROR(f->BuildSteps(kernels, precision, slot_of));
  f->PlaceConstants(slot_of);
  // Kernels borrowed the constants only while they were built: constants_
  // now holds the function's one reference to each plain value (packed
  // ones are dropped here), until ReleaseHostConstants.
  f->graph_.initializers.clear();
  return std::shared_ptr<const CpuFunction>(std::move(f));
}

absl::Status CpuFunction::AssignSlots(
    absl::flat_hash_map<std::string, int>* slot_of_out) {
  const Graph& g = graph_;
  absl::flat_hash_map<std::string, int>& slot_of = *slot_of_out;
  auto add_slot = [&](ValueSlot slot) {
    const int id = static_cast<int>(slots_.size());
    slot_of[slot.info.name] = id;
    slots_.push_back(std::move(slot));
    return id;
  };
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    add_slot({ValueSlot::Kind::kInput, i, 0, g.inputs[i]});
  }
  for (const auto& [name, tensor] : g.initializers) {
    const ValueInfo* info = g.FindValue(name);
    ValueInfo v = info != nullptr
                      ? *info
                      : ValueInfo{name, tensor.dtype(), tensor.shape()};
    // Placed in the constant block once the kernels say what they packed.
    add_slot({ValueSlot::Kind::kConstant, 0, 0, v});
  }
  absl::flat_hash_map<std::string, size_t> output_index;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    output_index.emplace(g.outputs[i].name, i);
  }

  // Slots for node outputs, and lifetimes of the arena ones.
  std::vector<Interval> intervals;
  absl::flat_hash_map<int, size_t> interval_of;  // slot → intervals index.
  for (int s = 0; s < static_cast<int>(g.nodes.size()); ++s) {
    const Node& node = g.nodes[s];
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      const ValueInfo* info = g.FindValue(out);
      if (info == nullptr || info->dtype == DType::kUndefined) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the type of '", out, "' (", node.Describe(), ") is unknown"));
      }
      ValueSlot slot{ValueSlot::Kind::kDynamic, 0, 0, *info};
      auto it = output_index.find(out);
      if (it != output_index.end()) {
        slot.kind = ValueSlot::Kind::kOutput;
        slot.index = it->second;
      } else if (info->shape.IsStatic()) {
        slot.kind = ValueSlot::Kind::kArena;
      }
      const int id = add_slot(std::move(slot));
      if (slots_[id].kind == ValueSlot::Kind::kArena) {
        interval_of[id] = intervals.size();
        intervals.push_back({id, s, s, StaticBytes(*info)});
      }
    }
    for (const std::string& in : node.inputs) {
      if (in.empty()) continue;
      auto it = slot_of.find(in);
      if (it == slot_of.end()) continue;  // Validate() reports it below.
      auto iv = interval_of.find(it->second);
      if (iv != interval_of.end()) intervals[iv->second].last = s;
    }
  }
  GLINT_RETURN_IF_ERROR(g.Validate());
  arena_bytes_ = PlanArena(intervals);
  for (const Interval& v : intervals) slots_[v.slot].offset = v.offset;

  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const int id = slot_of.at(g.outputs[i].name);
    const ValueSlot::Kind kind = slots_[id].kind;
    if (kind == ValueSlot::Kind::kInput || kind == ValueSlot::Kind::kConstant) {
      passthrough_outputs_.emplace_back(i, id);
    }
  }

  return absl::OkStatus();
}

absl::Status CpuFunction::BuildSteps(
    const cpu::KernelRegistry& kernels, Precision precision,
    const absl::flat_hash_map<std::string, int>& slot_of) {
  const Graph& g = graph_;
  // A constant that a single kernel reads, and only in the form it packed
  // at build time, is held packed: the plain value is then needed by
  // nobody, and the weights exist once (on the device, in the layout the
  // kernel reads) instead of twice. It leaves graph_ as soon as its kernel
  // is built, so that while a network compiles its weights are not held
  // both plain and packed (when the caller gave the partition over:
  // Backend::CompileConsuming).
  absl::flat_hash_map<std::string, int> uses;
  for (const Node& node : g.nodes) {
    for (const std::string& in : node.inputs) {
      if (!in.empty()) ++uses[in];
    }
  }
  for (const ValueInfo& out : g.outputs) ++uses[out.name];
  auto hold_packed = [&](cpu::CompiledStep& step) {
    for (const cpu::PackedConstant& p : step.kernel->PackedConstants()) {
      if (p.input < 0 || p.input >= step.node->num_inputs()) continue;
      const std::string& name = step.node->inputs[p.input];
      if (g.FindInitializer(name) == nullptr || uses[name] != 1) continue;
      step.kernel->UsePackedConstant(p.input);
      packed_[name] = {p, step.kernel.get()};
      packing_kernels_.push_back(step.kernel.get());
      const size_t bytes = g.FindInitializer(name)->num_bytes();
      graph_.initializers.erase(name);
      if (bytes >= kTrimAfterBytes) ReleaseFreeMemory();
    }
  };
  // Kernels, built once with everything known at compile time.
  GLINT_ASSIGN_OR_RETURN(
      std::vector<cpu::CompiledStep> compiled,
      cpu::CompileSteps(
          g, slot_of,
          [this](int slot) -> const ValueInfo& { return slots_[slot].info; },
          kernels, precision, hold_packed));
  for (cpu::CompiledStep& c : compiled) {
    Step step;
    step.node = c.node;
    step.kernel = std::move(c.kernel);
    step.inputs = std::move(c.inputs);
    step.outputs = std::move(c.outputs);
    step.slice_name = c.node->name.empty() ? c.node->op_type : c.node->name;
    step.category = IsLayoutReorder(*c.node) ? "reorder" : "op";
    step.kernel_description = step.kernel->Describe(*c.node);
    flops_ += EstimateOpCost(*c.node, g).flops;
    steps_.push_back(std::move(step));
  }
  PlanDynamicReleases();
  return absl::OkStatus();
}

void CpuFunction::PlanDynamicReleases() {
  // The last step that touches each dynamic value: its last reader, or its
  // producer when nothing reads it. Steps run in order, so the latest
  // index wins.
  std::vector<int> last(slots_.size(), -1);
  for (int i = 0; i < static_cast<int>(steps_.size()); ++i) {
    for (const std::vector<int>* ids :
         {&steps_[i].outputs, &steps_[i].inputs}) {
      for (int id : *ids) {
        if (id >= 0 && slots_[id].kind == ValueSlot::Kind::kDynamic) {
          last[id] = i;
        }
      }
    }
  }
  for (int id = 0; id < static_cast<int>(slots_.size()); ++id) {
    if (last[id] >= 0) steps_[last[id]].release_after.push_back(id);
  }
}

namespace {

std::optional<uint64_t> IfBodiesBytesWithin(
    const Node& node, const std::map<std::string, int64_t>& bounds, int depth);

// Bytes a run of `graph`, a control-flow node's body, allocates at `bounds`:
// every value its nodes make (a body keeps them until it returns), an If
// inside it at its larger branch. nullopt where a value has no size at the
// bounds, or a node iterates (a Loop's or Scan's iterations are as many as
// the data decides).
std::optional<uint64_t> BodyBytesWithin(
    const Graph& graph, const std::map<std::string, int64_t>& bounds,
    int depth) {
  uint64_t bytes = 0;
  for (const Node& node : graph.nodes) {
    for (const std::string& out : node.outputs) {
      if (out.empty()) continue;
      const ValueInfo* v = graph.FindValue(out);
      std::optional<uint64_t> b =
          v != nullptr ? v->BytesWithin(bounds) : std::nullopt;
      if (!b.has_value()) return std::nullopt;
      bytes = SaturatingAdd(bytes, *b);
    }
    if (node.Subgraphs().empty()) continue;
    std::optional<uint64_t> inner = IfBodiesBytesWithin(node, bounds, depth);
    if (!inner.has_value()) return std::nullopt;
    bytes = SaturatingAdd(bytes, *inner);
  }
  return bytes;
}

// Bytes an If's bodies allocate at `bounds`: its larger branch's. nullopt
// for another control-flow node, or a body BodyBytesWithin cannot size.
std::optional<uint64_t> IfBodiesBytesWithin(
    const Node& node, const std::map<std::string, int64_t>& bounds, int depth) {
  if (node.op_type != "If" || depth >= kMaxSubgraphDepth) return std::nullopt;
  uint64_t larger = 0;
  for (const auto& [name, body] : node.Subgraphs()) {
    std::optional<uint64_t> b = BodyBytesWithin(*body, bounds, depth + 1);
    if (!b.has_value()) return std::nullopt;
    larger = std::max(larger, *b);
  }
  return larger;
}

}  // namespace

DynamicMemory CpuFunction::DynamicMemoryWithin(
    const std::map<std::string, int64_t>& bounds) const {
  DynamicMemory memory;
  std::vector<uint64_t> bytes(slots_.size(), 0);
  for (size_t id = 0; id < slots_.size(); ++id) {
    if (slots_[id].kind != ValueSlot::Kind::kDynamic) continue;
    const std::optional<uint64_t> b = slots_[id].info.BytesWithin(bounds);
    if (b.has_value()) {
      bytes[id] = *b;
    } else {
      memory.unbounded.push_back(slots_[id].info.name);
    }
  }
  uint64_t live = 0;
  for (const Step& step : steps_) {
    for (int id : step.outputs) {
      if (id >= 0) live = SaturatingAdd(live, bytes[id]);
    }
    memory.peak_bytes = std::max(memory.peak_bytes, live);
    // A body's values are allocated as it runs, beside what is live: an
    // If's at its larger branch; a Loop's or Scan's iterate as many times
    // as the data decides. (The If's outputs, live already, are counted
    // again as its branch's: a safe overcount of one value's bytes.)
    if (!step.node->Subgraphs().empty()) {
      const std::optional<uint64_t> body =
          IfBodiesBytesWithin(*step.node, bounds, 0);
      if (body.has_value()) {
        memory.peak_bytes =
            std::max(memory.peak_bytes, SaturatingAdd(live, *body));
      } else {
        memory.unbounded.push_back(
            absl::StrCat("the bodies of ", step.node->Describe()));
      }
    }
    for (int id : step.release_after) live -= std::min(live, bytes[id]);
  }
  return memory;
}

void CpuFunction::PlaceConstants(
    const absl::flat_hash_map<std::string, int>& slot_of) {
  // By name, packed and plain alike, as the initializers were.
  std::map<std::string, const Tensor*> plain;
  for (const auto& [name, tensor] : graph_.initializers) plain[name] = &tensor;
  std::vector<std::string> names;
  for (const auto& [name, p] : packed_) names.push_back(name);
  for (const auto& [name, t] : plain) names.push_back(name);
  std::sort(names.begin(), names.end());
  absl::MutexLock lock(&constants_mu_);
  for (const std::string& name : names) {
    HostConstant c;
    c.offset = constant_bytes_;
    auto it = packed_.find(name);
    if (it != packed_.end()) {
      c.packed = it->second.first.data;
      c.bytes = it->second.first.bytes;
      c.packer = it->second.second;
    } else {
      c.plain = *plain.at(name);
      c.bytes = c.plain.num_bytes();
    }
    slots_[slot_of.at(name)].offset = c.offset;
    constant_bytes_ += AlignUp(c.bytes);
    constants_.push_back(std::move(c));
  }
  packed_.clear();
}

absl::Status CpuFunction::WriteConstants(void* dst) const {
  absl::MutexLock lock(&constants_mu_);
  if (constants_released_) {
    return absl::FailedPreconditionError(
        "the function's constants were released after it was loaded; "
        "compile it again to load it elsewhere");
  }
  // A kernel drops all it packed at once: it goes once its last constant
  // here is written.
  absl::flat_hash_map<cpu::Kernel*, int> unwritten;
  if (release_on_write_) {
    for (const HostConstant& c : constants_) {
      if (c.packer != nullptr) ++unwritten[c.packer];
    }
  }
  for (HostConstant& c : constants_) {
    if (c.bytes > 0) {
      std::memcpy(static_cast<char*>(dst) + c.offset,
                  c.packed != nullptr ? c.packed : c.plain.raw_data(), c.bytes);
    }
    if (release_on_write_) {
      // On the device now: the host copy goes before the next is written.
      c.plain = Tensor();
      if (c.packer != nullptr && --unwritten[c.packer] == 0) {
        c.packer->ReleasePackedConstants();
      }
      c.packed = nullptr;
      if (c.bytes >= kTrimAfterBytes) ReleaseFreeMemory();
    }
  }
  if (release_on_write_) {
    constants_released_ = true;
    constants_.clear();
  }
  return absl::OkStatus();
}

void CpuFunction::ReleaseHostConstantsOnNextLoad() const {
  absl::MutexLock lock(&constants_mu_);
  release_on_write_ = true;
}

void CpuFunction::ReleaseHostConstants() const {
  std::vector<HostConstant> dropped;
  {
    absl::MutexLock lock(&constants_mu_);
    if (constants_released_) return;
    constants_released_ = true;
    dropped.swap(constants_);
    // The loaded copies read the packed bytes from their constant block.
    for (cpu::Kernel* k : packing_kernels_) k->ReleasePackedConstants();
  }
  // The plain values are freed here, outside the lock.
}

absl::Status CpuFunction::RunStepsProfiled(
    const std::function<absl::Status(const Step&)>& run_step,
    const std::vector<cpu::TensorView>& views,
    const std::vector<bool>& produced, const TraceTrack& profile) const {
  // Slices go to the trace together at the end: one lock per launch.
  std::vector<TraceSlice> slices;
  slices.reserve(steps_.size());
  absl::Status status;
  for (const Step& step : steps_) {
    TraceSlice slice;
    slice.begin = absl::Now();
    status = run_step(step);
    slice.end = absl::Now();
    slice.name = step.slice_name;
    slice.category = step.category;
    slice.process = profile.process;
    slice.process_name = profile.process_name;
    slice.thread = profile.thread;
    slice.thread_name = profile.thread_name;
    slice.args = {
        {NodeSliceArgs::kOpType, step.node->op_type},
        {NodeSliceArgs::kKernel, step.kernel_description},
        {NodeSliceArgs::kInputs, DescribeViews(views, produced, step.inputs)},
        {NodeSliceArgs::kOutputs,
         DescribeViews(views, produced, step.outputs)}};
    slices.push_back(std::move(slice));
    if (!status.ok()) break;
  }
  profile.trace->AddSlices(std::move(slices));
  return status;
}

absl::Status CpuFunction::Execute(
    const CpuExecutionMemory& memory,
    const std::vector<const DeviceTensor*>& inputs,
    const std::vector<DeviceTensor*>& outputs,
    const TraceTrack* profile) const {
  if (inputs.size() != inputs_.size() || outputs.size() != outputs_.size()) {
    return absl::InternalError("launch with the wrong number of arguments");
  }
  const cpu::ScopedShapeBuildRecording recording(&shape_builds_);
  std::vector<cpu::TensorView> views(slots_.size());
  std::vector<bool> produced(slots_.size(), false);
  // Indexed by slot: a dynamic value's buffer, from its producer until its
  // last reader is done (Step::release_after).
  std::vector<std::unique_ptr<DeviceBuffer>> dynamic_buffers(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) {
    const ValueSlot& slot = slots_[s];
    if (slot.kind == ValueSlot::Kind::kInput) {
      const DeviceTensor* in = inputs[slot.index];
      if (in == nullptr || in->buffer == nullptr) {
        return absl::InternalError(
            absl::StrCat("input '", slot.info.name, "' has no buffer"));
      }
      views[s] = {in->dtype, in->shape, memory.resolve(*in->buffer)};
      produced[s] = true;
    } else if (slot.kind == ValueSlot::Kind::kConstant) {
      views[s] = {slot.info.dtype, slot.info.shape,
                  static_cast<char*>(memory.constants) + slot.offset};
      produced[s] = true;
    }
  }
  auto run_step = [&](const Step& step) -> absl::Status {
    StepContext ctx(*step.node, step.inputs, step.outputs, slots_, views,
                    produced, memory, outputs, dynamic_buffers);
    GLINT_RETURN_IF_ERROR(
        cpu::ComputeNoThrow(*step.kernel, ctx, step.node->Describe()));
    for (int out : step.outputs) {
      if (out >= 0 && !produced[out]) {
        return absl::InternalError(absl::StrCat(
            step.node->Describe(), " did not produce '",
            slots_[out].info.name, "'"));
      }
    }
    for (int id : step.release_after) dynamic_buffers[id].reset();
    return absl::OkStatus();
  };
  if (profile == nullptr) {
    for (const Step& step : steps_) GLINT_RETURN_IF_ERROR(run_step(step));
  } else {
    GLINT_RETURN_IF_ERROR(
        RunStepsProfiled(run_step, views, produced, *profile));
  }
  for (const auto& [index, slot_id] : passthrough_outputs_) {
    const cpu::TensorView& src = views[slot_id];
    DeviceTensor* out = outputs[index];
    if (out->buffer == nullptr || out->buffer->size() < src.num_bytes()) {
      GLINT_ASSIGN_OR_RETURN(out->buffer, memory.allocate(src.num_bytes()));
    }
    out->dtype = src.dtype;
    out->shape = src.shape;
    if (src.num_bytes() > 0) {
      std::memcpy(memory.resolve(*out->buffer), src.data, src.num_bytes());
    }
  }
  return absl::OkStatus();
}

CpuBackend::CpuBackend(std::vector<std::string> unsupported_ops,
                       int threads)
    : kernels_(cpu::CpuKernelRegistry()),
      unsupported_ops_(std::move(unsupported_ops)),
      threads_(threads) {}

bool CpuBackend::IsOpSupported(absl::string_view op_type) const {
  for (const std::string& op : unsupported_ops_) {
    if (op == op_type) return false;
  }
  return kernels_.Find(op_type) != nullptr;
}

absl::StatusOr<std::shared_ptr<const CompiledFunction>> CpuBackend::Compile(
    const Graph& partition, const CompileOptions& options) const {
  // Folding and fusion happen on a copy: the partition's interface stays
  // as the partitioner fixed it, only its inside changes.
  return CompileConsuming(partition, options);
}

absl::StatusOr<std::shared_ptr<const CompiledFunction>>
CpuBackend::CompileConsuming(Graph partition,
                             const CompileOptions& options) const {
  // Control-flow nodes run their subgraphs here too: every op inside must
  // be supported (core/graph.h bounds the nesting).
  std::function<absl::Status(const Graph&)> check =
      [&](const Graph& g) -> absl::Status {
    for (const Node& node : g.nodes) {
      if (!IsOpSupported(node.op_type)) {
        return absl::UnimplementedError(
            absl::StrCat("op '", node.op_type, "' (node '", node.name,
                         "') is not supported by the cpu backend"));
      }
      for (const auto& [attr, sub] : node.Subgraphs()) {
        GLINT_RETURN_IF_ERROR(check(*sub));
      }
    }
    return absl::OkStatus();
  };
  GLINT_RETURN_IF_ERROR(check(partition));
  // Folding constants and creating oneDNN primitives run parallel regions,
  // and OpenMP keeps a worker pool for every thread that starts one, for
  // as long as that thread lives. On the caller's thread (a gRPC handler,
  // a user's) that pool would outlive the compilation and count against
  // the cores, which makes libgomp stop spinning in every pool, the device
  // engines' included (devices/compute_engine.h). A thread that ends with
  // the compilation takes its pool with it. (Compiling with one OpenMP
  // thread instead would not do: oneDNN sizes a primitive's work split by
  // the thread count at its creation.)
  absl::StatusOr<std::shared_ptr<const CompiledFunction>> result;
  std::thread compiler([&] {
    if (threads_ > 0) cpu::SetKernelThreads(threads_);
    Graph optimized = std::move(partition);
    absl::Status s = cpu::OptimizeGraphForCpu(&optimized, kernels_);
    if (!s.ok()) {
      result = std::move(s);
      return;
    }
    absl::StatusOr<std::shared_ptr<const CpuFunction>> f =
        CpuFunction::Create(std::move(optimized), kernels_, options.precision);
    if (!f.ok()) {
      result = f.status();
      return;
    }
    result = std::shared_ptr<const CompiledFunction>(*std::move(f));
  });
  compiler.join();
  return result;
}

}  // namespace glint
