#include "devices/compute_engine.h"

namespace glint {

ComputeEngine::ComputeEngine(std::function<void()> on_start)
    : thread_([this, on_start = std::move(on_start)] { Loop(on_start); }) {}

ComputeEngine::~ComputeEngine() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

absl::Status ComputeEngine::Run(int priority,
                                absl::FunctionRef<absl::Status()> job) {
  Job j{job};
  absl::MutexLock lock(&mu_);
  queue_.emplace(Key{-priority, next_ticket_++}, &j);
  mu_.Await(absl::Condition(&j.done));
  return std::move(j.result);
}

int ComputeEngine::waiting() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

void ComputeEngine::Loop(const std::function<void()>& on_start) {
  if (on_start) on_start();
  absl::MutexLock lock(&mu_);
  while (true) {
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || !queue_.empty();
    };
    mu_.Await(absl::Condition(&ready));
    if (queue_.empty()) return;  // Stopping, with nothing left to run.
    Job* job = queue_.begin()->second;
    queue_.erase(queue_.begin());
    mu_.Unlock();
    absl::Status result = job->fn();
    mu_.Lock();
    job->result = std::move(result);
    job->done = true;  // The owner wakes once mu_ is released.
  }
}

}  // namespace glint
