// AdmissionQueue: how many runs execute at once, and in which order the
// others wait (HostManager's admission control).
//
// A run asks to start with Admit(priority, slots, start). It starts at
// once when fewer than max_active runs hold a slot and, if it names a
// network's execution slots (ExecutionSlots: the runs of one plan that may
// be in flight at once, their device memory reserved), one of those is
// free; otherwise it waits in a queue ordered by priority (larger first),
// first come first served among equals, and starts when a running one
// calls Release(). Waiting runs age (see AdmissionOptions::priority_aging)
// so that a steady stream of urgent runs cannot starve the others. A run
// waiting for its network's execution slot holds up no run of another
// network: the next run to start is the best waiting run that can.
//
// Thread-safe. `start` callbacks run without the queue's lock held, on the
// thread of the Admit or Release that starts them, so they may call back
// into the queue.
#ifndef GLINT_RUNTIME_ADMISSION_H_
#define GLINT_RUNTIME_ADMISSION_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace glint {

struct AdmissionOptions {
  // Runs executing at once; further runs wait in the queue. Must be >= 1.
  int max_active = 64;
  // Runs waiting; beyond it Admit fails fast with RESOURCE_EXHAUSTED rather
  // than blocking. Must be >= 0.
  int max_queue_size = 1024;
  // Every `priority_aging` runs admitted from the queue while a run waits
  // raise its priority by one, and among equal (aged) priorities the older
  // run goes first. A run of priority p is thus admitted after at most
  // priority_aging × (P − p) + max_queue_size others, P being the highest
  // priority that arrives meanwhile. Counted in admissions, not time, so
  // that the order is deterministic. Must be >= 1.
  int priority_aging = 16;
};

// The execution slots of one plan (ExecutableNetwork::executions): runs
// naming the same key share `capacity` slots.
struct ExecutionSlots {
  const void* key = nullptr;  // Null: the run needs no execution slot.
  int capacity = 0;           // At least 1 when `key` is set.
};

class AdmissionQueue {
 public:
  // Called once: `admitted` true when the run may start (it then holds a
  // slot until Release), false when Shutdown refused it while it waited.
  using Start = std::function<void(bool admitted)>;

  // The options must be valid (see AdmissionOptions); the caller checks.
  explicit AdmissionQueue(AdmissionOptions options);
  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  // Calls `start(true)` now if fewer than max_active runs hold a slot and
  // one of `slots` is free, else queues it by `priority`; never blocks.
  // `*waits_for_slot` (when given) says whether it was queued with its
  // execution slots all taken. RESOURCE_EXHAUSTED when the queue is full,
  // UNAVAILABLE after Shutdown; `start` is then never called.
  absl::Status Admit(int priority, ExecutionSlots slots, Start start,
                     bool* waits_for_slot = nullptr) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Admit(int priority, Start start) ABSL_LOCKS_EXCLUDED(mu_) {
    return Admit(priority, ExecutionSlots(), std::move(start));
  }

  // Gives back an admitted run's slot (and its execution slot, under the
  // key it was admitted with) and starts the next queued run that can
  // start, if any, on this thread.
  void Release(const void* slots_key = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses further Admits (UNAVAILABLE) and calls `start(false)` for every
  // queued run. Admitted runs keep their slots. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until no run holds a slot. After Shutdown, this is when every
  // admitted run has ended.
  void WaitIdle() ABSL_LOCKS_EXCLUDED(mu_);

  // Runs holding a slot, and runs waiting, now.
  int active() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t queued() const ABSL_LOCKS_EXCLUDED(mu_);
  // Runs holding one of the execution slots under `key`, now.
  int executing(const void* key) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Queued {
    Start start;
    uint64_t seq = 0;       // Arrival order.
    uint64_t enqueued = 0;  // admitted_ when it arrived: its age's origin.
  };

  // The runs of one ExecutionSlots key (or of none: key null, unbounded):
  // how many hold a slot, and the waiting ones, one FIFO per priority.
  // Present while a run holds or waits for one of its slots.
  struct Pool {
    int capacity = 0;  // 0: unbounded (key null).
    int in_use = 0;
    std::map<int, std::deque<Queued>> pending;
    bool Free() const { return capacity == 0 || in_use < capacity; }
  };

  // Takes the best queued run that can start now (see the class comment)
  // off the queue, its slots taken; null when none can.
  Start PopNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets `key`'s pool once no run holds or waits for its slots.
  void MaybeErase(const void* key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AdmissionOptions options_;
  mutable absl::Mutex mu_;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<const void*, Pool> pools_ ABSL_GUARDED_BY(mu_);
  size_t pending_size_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t admitted_ ABSL_GUARDED_BY(mu_) = 0;  // Runs taken off the queue.
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_ADMISSION_H_
