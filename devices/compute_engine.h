// A device's compute engine: the one place its launches run, one at a
// time, the most urgent first.
#ifndef GLINT_DEVICES_COMPUTE_ENGINE_H_
#define GLINT_DEVICES_COMPUTE_ENGINE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace glint {

// Runs work on one dedicated host thread, as a GPU's streams share its
// SMs: Run() hands a job over and blocks until it has run. Waiting jobs go
// most urgent first (larger priority), first come first served among
// equals.
//
// Why a thread of its own rather than a lock the streams' threads take: the
// CPU kernels parallelise with OpenMP, and libgomp keeps a worker pool per
// thread that starts parallel regions. Every stream thread that ran a
// launch would keep a pool of its own; once pooled threads outnumber the
// cores, libgomp stops letting idle workers spin and each parallel region
// pays a futex wake-up (seen on a 2-core VM: a 1x1 conv took twice as long
// as the same primitive run alone). With one engine thread per device,
// each device has exactly one pool.
//
// Thread-safe. The destructor runs every job already handed over, then
// ends the thread; a Run() that starts after that would never return, so
// destroy the engine only once no Run() can begin. A job must not call
// Run() on its own engine (it would wait for itself).
class ComputeEngine {
 public:
  // `on_start`, when set, runs first on the engine's thread, before any
  // job: per-thread settings of what the jobs call (a kernel thread count).
  explicit ComputeEngine(std::function<void()> on_start = nullptr);
  ~ComputeEngine();
  ComputeEngine(const ComputeEngine&) = delete;
  ComputeEngine& operator=(const ComputeEngine&) = delete;

  // Runs `job` on the engine's thread once every job ahead of it has run;
  // returns what it returned.
  absl::Status Run(int priority, absl::FunctionRef<absl::Status()> job)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Jobs handed over and not yet started (for tests of the ordering).
  int waiting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Job {
    absl::FunctionRef<absl::Status()> fn;
    absl::Status result;
    bool done = false;
  };
  using Key = std::pair<int, uint64_t>;  // (-priority, arrival).

  void Loop(const std::function<void()>& on_start) ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  std::map<Key, Job*> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // Started last: Loop() reads the members above.
};

}  // namespace glint

#endif  // GLINT_DEVICES_COMPUTE_ENGINE_H_
