// WorkerPool: a few threads of glintd's own for calls that block — adding a
// network (import, compile, load) and removing one (it waits for the
// network's runs) — so that they never hold gRPC's callback threads, which
// must only ever do short work.
//
// Bounded twice: `threads` run at once, at most `max_queued` wait; a task
// beyond that is refused at once (RESOURCE_EXHAUSTED), never queued without
// bound and never blocking the caller.
//
// Thread-safe.
#ifndef GLINT_RUNTIME_SERVER_GRPC_WORKER_POOL_H_
#define GLINT_RUNTIME_SERVER_GRPC_WORKER_POOL_H_

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace glint {

struct WorkerPoolOptions {
  // Tasks running at once (each on a thread started with the pool).
  int threads = 2;
  // Tasks waiting for a thread; beyond it Schedule fails.
  int max_queued = 64;
  // Thread name prefix (as `ps -T` and /proc/PID/task/*/comm show it; at
  // most 12 characters are kept).
  std::string name = "glint-worker";
};

class WorkerPool {
 public:
  // INVALID_ARGUMENT unless threads >= 1 and max_queued >= 0.
  static absl::Status Validate(const WorkerPoolOptions& options);

  // Starts the threads; `options` must be valid (see Validate).
  explicit WorkerPool(WorkerPoolOptions options);
  // Shutdown().
  ~WorkerPool();

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task` for a thread. RESOURCE_EXHAUSTED when max_queued tasks
  // wait already, UNAVAILABLE once shutting down; `task` is then dropped
  // without running.
  absl::Status Schedule(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_);

  // Refuses new tasks, runs the queued ones and joins the threads.
  // Idempotent; must not be called from a task.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Work() ABSL_LOCKS_EXCLUDED(mu_);
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !queue_.empty() || stopping_;
  }

  const WorkerPoolOptions options_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
  absl::Mutex join_mu_;  // Serialises Shutdown's joins.
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_WORKER_POOL_H_
