// Execution states: what one run of a network needs on the devices (the
// device tensors crossing partition borders, the partitions' done-events),
// pooled per network replica so that a warm network allocates nothing on
// the hot path.
#ifndef GLINT_EXECUTOR_EXECUTION_STATE_H_
#define GLINT_EXECUTOR_EXECUTION_STATE_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "devices/device_manager.h"

namespace glint {

// Owned by one run at a time. Thread-compatible.
struct ExecutionState {
  // (value name, device) → its tensor on that device. Buffers stay between
  // runs and are reused when large enough; std::map keeps addresses stable
  // while enqueued work points at them.
  std::map<std::pair<std::string, DeviceManager*>, DeviceTensor> tensors;
  std::vector<std::unique_ptr<Event>> done_events;  // One per partition.
  // Whether the state served a run before (it then holds its buffers).
  bool warm = false;
};

// Idle execution states of one replica. Thread-safe.
class ExecutionStatePool {
 public:
  // Idle states kept at most; states beyond it are freed on release, so a
  // burst of concurrent runs does not pin its memory for ever.
  static constexpr size_t kMaxIdle = 8;

  // An idle state, or a new empty one.
  std::unique_ptr<ExecutionState> Acquire() {
    absl::MutexLock lock(&mu_);
    if (idle_.empty()) return std::make_unique<ExecutionState>();
    std::unique_ptr<ExecutionState> state = std::move(idle_.back());
    idle_.pop_back();
    return state;
  }

  // Returns a state whose run has finished (every enqueued item done).
  void Release(std::unique_ptr<ExecutionState> state) {
    state->warm = true;
    absl::MutexLock lock(&mu_);
    if (idle_.size() < kMaxIdle) idle_.push_back(std::move(state));
  }

  size_t idle() const {
    absl::MutexLock lock(&mu_);
    return idle_.size();
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<ExecutionState>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace glint

#endif  // GLINT_EXECUTOR_EXECUTION_STATE_H_
