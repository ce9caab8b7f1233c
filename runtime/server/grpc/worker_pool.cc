#include "runtime/server/grpc/worker_pool.h"

#include <pthread.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace glint {

absl::Status WorkerPool::Validate(const WorkerPoolOptions& options) {
  if (options.threads < 1 || options.max_queued < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a worker pool needs at least one thread and a queue bound of at "
        "least 0 (got threads=",
        options.threads, ", max_queued=", options.max_queued, ")"));
  }
  return absl::OkStatus();
}

WorkerPool::WorkerPool(WorkerPoolOptions options)
    : options_(std::move(options)) {
  for (int i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this, i] {
      // Linux keeps 15 characters of a thread's name.
      const std::string name =
          absl::StrCat(options_.name.substr(0, 12), "-", i).substr(0, 15);
      pthread_setname_np(pthread_self(), name.c_str());
      Work();
    });
  }
}

WorkerPool::~WorkerPool() { Shutdown(); }

absl::Status WorkerPool::Schedule(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    return absl::UnavailableError("the server is shutting down");
  }
  if (static_cast<int>(queue_.size()) >= options_.max_queued) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many calls waiting for a worker: ", queue_.size(),
        " queued behind ", options_.threads, " running (", options_.name,
        ")"));
  }
  queue_.push_back(std::move(task));
  return absl::OkStatus();
}

void WorkerPool::Work() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &WorkerPool::HasWork));
      // Queued tasks still run when stopping: each owes its caller an
      // answer.
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

void WorkerPool::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  absl::MutexLock lock(&join_mu_);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

}  // namespace glint
