// oneDNN plumbing shared by the MatMul, Gemm and Conv kernels.
//
// Thread-safety scheme: a kernel owns one dnnl::engine and immutable
// primitives; every Compute() makes its own dnnl::stream and memory objects
// and passes a scratchpad it allocated itself (the primitives are created
// with scratchpad_mode::user), so concurrent Compute() calls share nothing
// mutable. Primitives for input shapes not known at build time are created
// on first use and kept in a ShapeKeyedCache.
#ifndef GLINT_DEVICES_CPU_DNNL_UTIL_H_
#define GLINT_DEVICES_CPU_DNNL_UTIL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/graph.h"
#include "core/precision.h"
#include "core/tensor.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace glint::cpu {

// Maps a oneDNN error to a Status naming the node: dnnl_unimplemented →
// UNIMPLEMENTED, invalid arguments → INVALID_ARGUMENT, out of memory →
// RESOURCE_EXHAUSTED, anything else → INTERNAL.
absl::Status DnnlErrorToStatus(const dnnl::error& e, absl::string_view node);

// Runs `f` (returning absl::Status) and turns the exceptions oneDNN's C++
// API throws into a Status, so none escapes a kernel.
template <typename F>
absl::Status CatchDnnl(absl::string_view node, F&& f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    return DnnlErrorToStatus(e, node);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        std::string(node) + ": out of memory in oneDNN");
  }
}

dnnl::memory::dims ToDnnlDims(const std::vector<int64_t>& dims);
// Strides of a dense row-major tensor of `dims`.
dnnl::memory::dims RowMajorStrides(const dnnl::memory::dims& dims);
// A dense row-major float32 memory descriptor (any rank oneDNN takes).
dnnl::memory::desc PlainF32(const dnnl::memory::dims& dims);
// A float32 descriptor of logical dims [N, C, spatial...] stored channels
// last ([N, spatial..., C] row-major: NWC, NHWC, NDHWC).
dnnl::memory::desc ChannelsLastF32(const dnnl::memory::dims& dims);

// `md` with another data type, same dims and layout (strides count
// elements, so a plain or blocked layout carries over as it is).
dnnl::memory::desc WithDataType(const dnnl::memory::desc& md,
                                dnnl::memory::data_type type);
// The data type MatMul/Gemm/Conv operands are computed in at `precision`
// (their user tensors and results stay float32).
dnnl::memory::data_type ComputeDataType(Precision precision);

// Calls create(precision); at bf16, when oneDNN has no bfloat16 kernel
// for the geometry (dnnl_unimplemented), calls create(kFloat32) instead.
// Other errors propagate (dnnl::error). For MatMul/Gemm/Conv primitives.
template <typename F>
void CreateAtPrecision(Precision precision, F&& create) {
  if (precision == Precision::kBFloat16) {
    try {
      create(Precision::kBFloat16);
      return;
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented) throw;
    }
  }
  create(Precision::kFloat32);
}

// A primitive attribute with a user-managed scratchpad (see file comment).
dnnl::primitive_attr UserScratchpadAttr();

// The activation a fused node (optimize.h) applies to its result, read from
// its "activation" attribute ("" or absent: none). Fused ops exist only
// after the CPU graph optimiser, which writes only values listed here.
struct Activation {
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.0f;
  float beta = 0.0f;
  bool present() const { return alg != dnnl::algorithm::undef; }
};
// UNIMPLEMENTED naming the node for an activation oneDNN is not given here.
absl::StatusOr<Activation> ParseActivation(const Node& node);
// Appends `act` (when present) to `ops`.
void AppendActivation(const Activation& act, dnnl::post_ops& ops);
// `act` applied to one value, as its oneDNN post-op computes it: for the
// paths that never reach oneDNN (an empty reduction, no input channels).
float ApplyActivation(const Activation& act, float v);

// Grow-only host buffers owned by the calling thread, one per slot: a
// kernel's Compute runs to completion on its calling thread, so concurrent
// calls never share one, and the hot path neither allocates nor page-faults
// fresh memory (large per-call allocations were mmap'd and zeroed by the OS
// on every run). They live outside device memory accounting, like oneDNN's
// own scratch space.
// kWeights: non-constant weights converted to bfloat16 (bf16 precision).
enum class ThreadBufferSlot {
  kScratchpad,
  kSource,
  kDestination,
  kWeights,
  kCount
};
// At least `bytes` (64-byte aligned), valid until this thread asks for the
// same slot again. Throws std::bad_alloc when memory runs out.
void* ThreadBuffer(ThreadBufferSlot slot, size_t bytes);

// Executes `prim` on `stream` with a scratchpad of `scratchpad_md` from
// ThreadBuffer(kScratchpad). Does not wait. Throws like oneDNN does; call
// inside CatchDnnl.
void ExecuteOnStream(const dnnl::stream& stream, const dnnl::primitive& prim,
                     const dnnl::memory::desc& scratchpad_md,
                     std::unordered_map<int, dnnl::memory> args);

// ExecuteOnStream on a fresh stream, then waits for it.
void ExecuteWithScratchpad(const dnnl::engine& engine,
                           const dnnl::primitive& prim,
                           const dnnl::memory::desc& scratchpad_md,
                           std::unordered_map<int, dnnl::memory> args);

// Copies `src` (in layout `src_md`, borrowed) into a new memory object of
// layout `dst_md` owned by oneDNN: how constant weights get packed.
dnnl::memory ReorderToOwned(const dnnl::engine& engine,
                            const dnnl::memory::desc& src_md, const void* src,
                            const dnnl::memory::desc& dst_md);

// Flattens shapes into a cache key: rank then dims, for each shape.
std::vector<int64_t> ShapeKey(std::initializer_list<const Shape*> shapes);

// Immutable entries (compiled primitives) keyed by input shapes.
// Thread-safe. Holds the kMaxEntries shapes used last: a new one evicts
// the least recently used, so memory stays bounded when shapes keep
// changing and the shapes a service meets now stay warm (keeping the first
// ones met for ever would leave a text network served at more lengths than
// that building for most of its requests). An evicted entry lives on in
// the runs still holding it.
template <typename Entry>
class ShapeKeyedCache {
 public:
  static constexpr size_t kMaxEntries = 32;

  std::shared_ptr<const Entry> Find(const std::vector<int64_t>& key) const {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    it->second.last_used = ++clock_;
    return it->second.entry;
  }

  // Returns the cached entry for `key` (the first one inserted if two
  // threads raced to create it).
  std::shared_ptr<const Entry> Insert(std::vector<int64_t> key,
                                      std::shared_ptr<const Entry> entry) {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      it->second.last_used = ++clock_;
      return it->second.entry;
    }
    if (entries_.size() >= kMaxEntries) {
      auto oldest = entries_.begin();
      for (auto e = entries_.begin(); e != entries_.end(); ++e) {
        if (e->second.last_used < oldest->second.last_used) oldest = e;
      }
      entries_.erase(oldest);
    }
    entries_.emplace(std::move(key), Used{entry, ++clock_});
    return entry;
  }

 private:
  struct Used {
    std::shared_ptr<const Entry> entry;
    uint64_t last_used = 0;  // clock_ at its last Find or Insert.
  };
  mutable absl::Mutex mu_;
  mutable uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
  mutable std::map<std::vector<int64_t>, Used> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_DNNL_UTIL_H_
