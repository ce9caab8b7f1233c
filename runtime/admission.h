// AdmissionQueue: how many runs execute at once, and in which order the
// others wait (HostManager's admission control).
//
// A run asks to start with Admit(priority, start). Below max_active runs
// it starts at once; otherwise it waits in a queue ordered by priority
// (larger first), first come first served among equals, and starts when a
// running one calls Release(). Waiting runs age (see
// AdmissionOptions::priority_aging) so that a steady stream of urgent runs
// cannot starve the others.
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

class AdmissionQueue {
 public:
  // Called once: `admitted` true when the run may start (it then holds a
  // slot until Release), false when Shutdown refused it while it waited.
  using Start = std::function<void(bool admitted)>;

  // The options must be valid (see AdmissionOptions); the caller checks.
  explicit AdmissionQueue(AdmissionOptions options);
  AdmissionQueue(const AdmissionQueue&) = delete;
  AdmissionQueue& operator=(const AdmissionQueue&) = delete;

  // Calls `start(true)` now if fewer than max_active runs hold a slot, else
  // queues it by `priority`; never blocks. RESOURCE_EXHAUSTED when the queue
  // is full, UNAVAILABLE after Shutdown; `start` is then never called.
  absl::Status Admit(int priority, Start start) ABSL_LOCKS_EXCLUDED(mu_);

  // Gives back an admitted run's slot and starts the next queued run, if
  // any, on this thread.
  void Release() ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses further Admits (UNAVAILABLE) and calls `start(false)` for every
  // queued run. Admitted runs keep their slots. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until no run holds a slot. After Shutdown, this is when every
  // admitted run has ended.
  void WaitIdle() ABSL_LOCKS_EXCLUDED(mu_);

  // Runs holding a slot, and runs waiting, now.
  int active() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t queued() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Queued {
    Start start;
    uint64_t seq = 0;       // Arrival order.
    uint64_t enqueued = 0;  // admitted_ when it arrived: its age's origin.
  };

  // Takes the next run to admit off the non-empty queue.
  Start PopNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AdmissionOptions options_;
  mutable absl::Mutex mu_;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  // One FIFO per priority.
  std::map<int, std::deque<Queued>> pending_ ABSL_GUARDED_BY(mu_);
  size_t pending_size_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t admitted_ ABSL_GUARDED_BY(mu_) = 0;  // Runs taken off the queue.
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_ADMISSION_H_
