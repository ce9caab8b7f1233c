#include "devices/compute_engine.h"

namespace glint {
namespace {

// The engine that adopted this thread, if any.
thread_local const ComputeEngine* adopted_by = nullptr;

}  // namespace

ComputeEngine::ComputeEngine(std::function<void()> on_start)
    : on_start_(std::move(on_start)) {}

ComputeEngine::~ComputeEngine() {
  bool started = false;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    started = thread_started_;
  }
  if (started) thread_.join();
}

void ComputeEngine::AdoptThread() {
  if (on_start_) on_start_();
  adopted_by = this;
}

absl::Status ComputeEngine::Run(int priority,
                                absl::FunctionRef<absl::Status()> fn) {
  Job job{fn, adopted_by == this};
  mu_.Lock();
  if (!job.runs_inline || busy_ || !queue_.empty()) {
    queue_.emplace(Key{-priority, next_ticket_++}, &job);
    if (!job.runs_inline) {
      ++handed_over_;
      if (!thread_started_) {
        thread_started_ = true;
        thread_ = std::thread([this] { Loop(); });
      }
      mu_.Await(absl::Condition(&job.done));
      mu_.Unlock();
      return std::move(job.result);
    }
    // The caller runs its job itself once the engine is free and its job
    // is the most urgent waiting.
    auto my_turn = [this, &job]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !busy_ && queue_.begin()->second == &job;
    };
    mu_.Await(absl::Condition(&my_turn));
    queue_.erase(queue_.begin());
  }
  busy_ = true;
  mu_.Unlock();
  absl::Status result = fn();
  mu_.Lock();
  busy_ = false;  // The next in line (either kind) wakes once mu_ is free.
  mu_.Unlock();
  return result;
}

int ComputeEngine::waiting() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

void ComputeEngine::Loop() {
  if (on_start_) on_start_();
  mu_.Lock();
  while (true) {
    // The head of the queue is the thread's when it was handed over; an
    // adopted caller's job at the head is run by that caller.
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return (stopping_ && handed_over_ == 0) ||
             (!busy_ && !queue_.empty() &&
              !queue_.begin()->second->runs_inline);
    };
    mu_.Await(absl::Condition(&ready));
    if (busy_ || queue_.empty() || queue_.begin()->second->runs_inline) {
      break;  // Stopping, with nothing of the thread's left to run.
    }
    Job* job = queue_.begin()->second;
    queue_.erase(queue_.begin());
    --handed_over_;
    busy_ = true;
    mu_.Unlock();
    absl::Status result = job->fn();
    mu_.Lock();
    busy_ = false;
    job->result = std::move(result);
    job->done = true;  // The owner wakes once mu_ is released.
  }
  mu_.Unlock();
}

}  // namespace glint
