// SharedMemoryRegistry: the POSIX shared-memory regions local clients have
// registered with glintd (Triton's system shared memory extension), so that
// a run's inputs and outputs travel by (region, offset, byte size) instead
// of inside the message.
//
// A client creates an object (shm_open + ftruncate), registers part of it
// under a name, writes inputs there and names windows of it in its runs.
// glintd maps each registered region once, read-write, between two
// PROT_NONE guard pages: a window is bounds-checked against its region
// before any byte is touched, and an access past the mapping faults rather
// than reaching other memory. Inputs are borrowed from the mapping for the
// run (no copy); outputs are written into their windows straight from the
// device that computes them when the device can (RunOptions::
// output_buffers; the sim devices do), else copied in once the run is
// done.
//
// Lifetime: a run holds its regions (SharedMemoryView keeps a reference),
// so Unregister while a run uses a region only takes the name away; the
// mapping goes when the last run using it ends.
//
// Trust: regions are for local clients. glintd opens the object with its
// own permissions, and a client that shrinks (ftruncate) an object while a
// run reads it makes the kernel fault glintd (SIGBUS), as in Triton; a
// shrink before a run is caught (FAILED_PRECONDITION).
//
// Thread-safe: every method may be called concurrently.
#ifndef GLINT_SERVING_SHARED_MEMORY_H_
#define GLINT_SERVING_SHARED_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "api/types.h"
#include "core/tensor.h"

namespace glint {

struct SharedMemoryRegistryOptions {
  // Regions registered at once; one more is RESOURCE_EXHAUSTED. Each holds
  // a mapping and an open descriptor of its object.
  int max_regions = 512;
};

// The longest region name and shm key accepted.
inline constexpr size_t kMaxSharedMemoryNameBytes = 255;

class MappedSharedMemory;  // One registered region's mapping (internal).

// A bounds-checked window of a registered region. Holds the region: the
// memory stays mapped while the view (or a tensor borrowed from it) lives.
// Thread-compatible.
class SharedMemoryView {
 public:
  SharedMemoryView() = default;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  // Keeps the region mapped; for Tensor::Borrow's keep-alive.
  std::shared_ptr<void> keep_alive() const;

 private:
  friend class SharedMemoryRegistry;
  std::shared_ptr<const MappedSharedMemory> region_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Owner tags of the two services sharing glintd's registry (Register).
inline constexpr absl::string_view kGlintSharedMemoryOwner = "glint.v1";
inline constexpr absl::string_view kOipSharedMemoryOwner = "inference";

class SharedMemoryRegistry {
 public:
  explicit SharedMemoryRegistry(SharedMemoryRegistryOptions options = {});
  ~SharedMemoryRegistry();

  SharedMemoryRegistry(const SharedMemoryRegistry&) = delete;
  SharedMemoryRegistry& operator=(const SharedMemoryRegistry&) = delete;

  // Maps [offset, offset + byte_size) of the object `key` (shm_open's
  // name: an optional '/' then 1-254 of [A-Za-z0-9._-], not "." or "..")
  // under `name` (1-255 printable ASCII characters, no space).
  // INVALID_ARGUMENT: a bad name or key, byte_size 0, or an object smaller
  // than offset + byte_size (or not a regular object). ALREADY_EXISTS: the
  // name is taken. NOT_FOUND: no such object. PERMISSION_DENIED: glintd may
  // not open it read-write. RESOURCE_EXHAUSTED: options.max_regions, or no
  // descriptors or address space left. `owner` tags the region with who
  // registered it (a service: kOipSharedMemoryOwner, kGlintSharedMemoryOwner)
  // for UnregisterAllOf; names are shared by all owners.
  absl::Status Register(absl::string_view name, absl::string_view key,
                        uint64_t offset, uint64_t byte_size,
                        absl::string_view owner = "")
      ABSL_LOCKS_EXCLUDED(mu_);

  // Takes the name away (runs using the region keep it until they end),
  // whoever registered it. NOT_FOUND if no region has that name.
  absl::Status Unregister(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);
  // Every region, whoever registered it.
  void UnregisterAll() ABSL_LOCKS_EXCLUDED(mu_);
  // Only the regions registered with `owner`: a service's "unregister all"
  // leaves the other service's clients' regions alone.
  void UnregisterAllOf(absl::string_view owner) ABSL_LOCKS_EXCLUDED(mu_);

  // The region `name`, or every region sorted by name when `name` is
  // empty. NOT_FOUND for an unknown name.
  absl::StatusOr<std::vector<SharedMemoryRegionInfo>> Regions(
      absl::string_view name) const ABSL_LOCKS_EXCLUDED(mu_);
  int size() const ABSL_LOCKS_EXCLUDED(mu_);

  // [ref.offset, ref.offset + ref.byte_size) of region ref.region.
  // INVALID_ARGUMENT: the name is not registered, or the window does not
  // lie inside the region. FAILED_PRECONDITION: the object was shrunk
  // below the region since it was registered. `what` names the tensor in
  // messages ("input 'x'").
  absl::StatusOr<SharedMemoryView> View(const SharedMemoryRef& ref,
                                        absl::string_view what) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // An input tensor borrowed from the window `ref` (no copy; the tensor
  // holds the region). INVALID_ARGUMENT, besides View's cases: a dtype
  // without a size, a shape that is not static or over the limits, or a
  // window whose size is not exactly the tensor's bytes.
  absl::StatusOr<Tensor> BorrowTensor(const SharedMemoryRef& ref, DType dtype,
                                      const Shape& shape,
                                      absl::string_view what) const;

 private:
  // ALREADY_EXISTS / RESOURCE_EXHAUSTED when `name` cannot be added now.
  absl::Status CheckFreeLocked(absl::string_view name) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SharedMemoryRegistryOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const MappedSharedMemory>>
      regions_ ABSL_GUARDED_BY(mu_);
  // Who registered each region of regions_ (same keys).
  absl::flat_hash_map<std::string, std::string> owners_ ABSL_GUARDED_BY(mu_);
};

// Copies `tensor` to the start of `window`. INVALID_ARGUMENT (naming
// `what`) if it needs more bytes than the window holds; nothing is written
// then.
absl::Status CopyTensorToWindow(const Tensor& tensor,
                                const SharedMemoryView& window,
                                absl::string_view what);

// OK if `name` may name a region / `key` an object (see Register);
// INVALID_ARGUMENT saying why otherwise.
absl::Status ValidateSharedMemoryName(absl::string_view name);
absl::Status ValidateSharedMemoryKey(absl::string_view key);

}  // namespace glint

#endif  // GLINT_SERVING_SHARED_MEMORY_H_
