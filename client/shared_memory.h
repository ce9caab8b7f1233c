// Shared-memory tensors on the client's side: a POSIX shared-memory object
// this process creates (SharedMemoryRegion), and a registered region laid
// out for a network's runs (SharedMemorySession): inputs written once into
// their windows, outputs written by glintd into per-run windows, so that
// no tensor byte travels through gRPC.
//
// Only for a client on glintd's host (the object lives in /dev/shm).
#ifndef GLINT_CLIENT_SHARED_MEMORY_H_
#define GLINT_CLIENT_SHARED_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "api/types.h"
#include "client/glint_client.h"
#include "core/graph.h"

namespace glint {

// A POSIX shared-memory object created (shm_open + ftruncate) and mapped
// read-write by this process, zero-filled. The destructor unmaps it and
// removes its name (unless Unlink did already); glintd's own mapping of
// it stays valid until glintd unregisters it. Thread-compatible.
class SharedMemoryRegion {
 public:
  // A new object `key` (empty: a fresh "/glint_<pid>_<n>_<random>") of
  // `byte_size` > 0 bytes. ALREADY_EXISTS if `key` exists;
  // INVALID_ARGUMENT for a bad key or size; RESOURCE_EXHAUSTED when
  // /dev/shm has no room.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Create(
      size_t byte_size, std::string key = "");
  ~SharedMemoryRegion();

  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  const std::string& key() const { return key_; }
  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

  // Removes the object's name now: once glintd has mapped it, nothing is
  // left in /dev/shm even if this process dies (the memory goes when both
  // mappings do). Idempotent.
  void Unlink();

 private:
  SharedMemoryRegion() = default;

  std::string key_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool linked_ = false;
};

// One region registered with glintd and laid out for runs of a network:
// a window per input (shared by every run: inputs are only read) and
// `slots` sets of output windows, so that that many runs may be in flight
// at once. Outputs whose shape is not static (data-dependent) have no
// window and come back in the reply. The destructor unregisters the region
// (best effort) and removes it.
//
// Thread-safe for concurrent runs on distinct slots; WriteInput must not
// race with runs.
class SharedMemorySession {
 public:
  // Creates the region (sized for `inputs` and `slots` x `outputs`, each
  // window 64-byte aligned), registers it through `client` under a fresh
  // name and unlinks its key (nothing is left behind if this process
  // dies). `client` must outlive the session.
  static absl::StatusOr<std::unique_ptr<SharedMemorySession>> Create(
      GlintClient* client, std::vector<ValueInfo> inputs,
      std::vector<ValueInfo> outputs, int slots = 1);
  ~SharedMemorySession();

  // Copies `input` into its window. INVALID_ARGUMENT for a name, dtype or
  // shape the session was not made for.
  absl::Status WriteInput(const NamedTensor& input);

  // A call running on the inputs written and writing the outputs into
  // slot `slot`'s windows; `requested_outputs` are the outputs given at
  // Create.
  RunNetworkCall MakeCall(int slot) const;

  // The run's outputs in the reply's order, those written to shared
  // memory copied out of slot `slot`. INTERNAL when the reply names a
  // window that is not the slot's or of another size than its header.
  absl::StatusOr<std::vector<NamedTensor>> ReadOutputs(
      const RunNetworkReply& reply, int slot) const;

  const std::string& region_name() const { return name_; }
  const SharedMemoryRegion& region() const { return *region_; }

 private:
  struct Window {
    ValueInfo info;
    uint64_t offset = 0;
    uint64_t byte_size = 0;
  };

  SharedMemorySession() = default;

  GlintClient* client_ = nullptr;
  std::unique_ptr<SharedMemoryRegion> region_;
  std::string name_;
  bool registered_ = false;
  std::vector<Window> inputs_;
  std::vector<ValueInfo> unplaced_outputs_;  // No static shape.
  // Per slot, the output windows (same order in every slot).
  std::vector<std::vector<Window>> slots_;
  std::vector<std::string> requested_outputs_;
};

// One run with every input and every output GetNetwork can size in a
// fresh region (created, registered, removed, unregistered also on
// failure): what `glint run --shm` does. Same outputs as
// GlintClient::RunNetwork (`trace_json`: the same too; with `profile`,
// the trace is a per-op profile, RunNetworkCall::profile, and `trace_json`
// must be set).
absl::StatusOr<std::vector<NamedTensor>> RunNetworkInSharedMemory(
    GlintClient& client, absl::string_view name,
    const std::vector<NamedTensor>& inputs,
    const std::vector<std::string>& requested_outputs = {},
    absl::Duration timeout = absl::InfiniteDuration(),
    std::string* trace_json = nullptr, bool profile = false);

}  // namespace glint

#endif  // GLINT_CLIENT_SHARED_MEMORY_H_
