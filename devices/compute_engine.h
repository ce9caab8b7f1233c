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

// Runs jobs one at a time, as a GPU's streams share its SMs: Run() blocks
// until its job has run and returns what it returned. Waiting jobs go most
// urgent first (larger priority), first come first served among equals.
//
// Where a job runs. The CPU kernels parallelise with OpenMP, and libgomp
// keeps a worker pool per thread that starts parallel regions. Every
// thread that ran launches would keep a pool of its own; once pooled
// threads outnumber the cores, libgomp stops letting idle workers spin and
// each parallel region pays a futex wake-up (seen on a 2-core VM: a 1x1
// conv took twice as long as the same primitive run alone). So jobs run on
// two kinds of threads only:
//  - Adopted threads (AdoptThread): the compute thread of the device's
//    shared stream (shared_stream.h), which every run's launches come
//    from. It runs its jobs itself: at once when the engine is free, else
//    once it is its turn. A launch then costs no thread hand-off. Before
//    runs shared a stream, each run leased a stream thread per device, and
//    every launch crossed stream thread -> engine thread -> stream thread:
//    two wake-ups per launch, most of a partition hop (executor_bench, this
//    2-core VM: 9 us per hop then, 4-5 us now, with one wake-up left: the
//    next device's compute thread, woken by the event it waited for).
//  - The engine's own thread, for every other caller (the streams an
//    owner creates or leases, used by tests and tools): Run() hands the job
//    over and waits. Started on the first such job, so a device that only
//    serves runs never starts it.
// A device serving runs therefore keeps exactly one pool, as with the
// engine thread alone; it gets a second only while owned or leased streams
// launch on it too.
//
// Thread-safe. The destructor lets every job already handed over run, then
// ends the thread; a Run() that starts after that would never return, so
// destroy the engine only once no Run() can begin. A job must not call
// Run() on its own engine (it would wait for itself).
class ComputeEngine {
 public:
  // `on_start`, when set, runs first on every thread that runs jobs (the
  // engine's own, and each adopted one when it is adopted), before any
  // job: per-thread settings of what the jobs call (a kernel thread count).
  explicit ComputeEngine(std::function<void()> on_start = nullptr);
  ~ComputeEngine();
  ComputeEngine(const ComputeEngine&) = delete;
  ComputeEngine& operator=(const ComputeEngine&) = delete;

  // Makes the calling thread one of the engine's own (see the class
  // comment): runs `on_start` on it, and from now on its Run() calls run
  // their jobs on it. A thread belongs to one engine at a time, and must
  // stop calling Run() before the engine is destroyed.
  void AdoptThread() ABSL_LOCKS_EXCLUDED(mu_);

  // Runs `job` once every job ahead of it has run; returns what it
  // returned.
  absl::Status Run(int priority, absl::FunctionRef<absl::Status()> job)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Jobs waiting for their turn (for tests of the ordering).
  int waiting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Job {
    absl::FunctionRef<absl::Status()> fn;
    bool runs_inline;  // Its caller runs it (an adopted thread).
    absl::Status result;
    bool done = false;
  };
  using Key = std::pair<int, uint64_t>;  // (-priority, arrival).

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const std::function<void()> on_start_;
  mutable absl::Mutex mu_;
  std::map<Key, Job*> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;   // A job is running.
  int handed_over_ ABSL_GUARDED_BY(mu_) = 0;  // Queued for the thread.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool thread_started_ ABSL_GUARDED_BY(mu_) = false;
  // Started under mu_ by the first Run() that hands a job over; joined by
  // the destructor, when no Run() can start it any more.
  std::thread thread_;
};

}  // namespace glint

#endif  // GLINT_DEVICES_COMPUTE_ENGINE_H_
