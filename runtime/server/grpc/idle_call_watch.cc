#include "runtime/server/grpc/idle_call_watch.h"

#include <algorithm>
#include <utility>

#include "core/thread_name.h"

namespace glint {

void IdleCallWatch::Call::Waiting() {
  const absl::Time now = clock_();
  absl::MutexLock lock(&mu_);
  waiting_since_ = now;
}

void IdleCallWatch::Call::Working() {
  absl::MutexLock lock(&mu_);
  waiting_since_ = absl::InfiniteFuture();
}

void IdleCallWatch::Call::Done() {
  std::function<void()> cancel;
  {
    absl::MutexLock lock(&mu_);
    cancel = std::move(cancel_);
    cancel_ = nullptr;
    waiting_since_ = absl::InfiniteFuture();
  }
  // Destroyed outside the lock: what it captured may be large, or own
  // things that lock.
}

bool IdleCallWatch::Call::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

IdleCallWatch::Call::Check IdleCallWatch::Call::CancelIfIdleSince(
    absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (!cancel_) return Check::kOver;
  if (cancelled_ || waiting_since_ > deadline) return Check::kAlive;
  cancelled_ = true;
  cancel_();
  return Check::kCancelledNow;
}

IdleCallWatch::IdleCallWatch(IdleCallWatchOptions options)
    : options_(std::move(options)) {
  if (options_.start_thread) thread_ = std::thread([this] { Loop(); });
}

IdleCallWatch::~IdleCallWatch() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<IdleCallWatch::Call> IdleCallWatch::Watch(
    std::function<void()> cancel) {
  auto call = std::make_shared<Call>(std::move(cancel), options_.clock);
  absl::MutexLock lock(&mu_);
  calls_.push_back(call);
  return call;
}

void IdleCallWatch::CheckNow() {
  std::vector<std::shared_ptr<Call>> calls;
  {
    absl::MutexLock lock(&mu_);
    calls = calls_;
  }
  // Outside mu_: a cancel may take a while, and Watch must not wait on it.
  const absl::Time deadline = options_.clock() - options_.idle_timeout;
  std::vector<Call*> over;
  int64_t cancelled = 0;
  for (const std::shared_ptr<Call>& call : calls) {
    switch (call->CancelIfIdleSince(deadline)) {
      case Call::Check::kOver:
        over.push_back(call.get());
        break;
      case Call::Check::kCancelledNow:
        ++cancelled;
        break;
      case Call::Check::kAlive:
        break;
    }
  }
  absl::MutexLock lock(&mu_);
  cancelled_ += cancelled;
  calls_.erase(std::remove_if(calls_.begin(), calls_.end(),
                              [&](const std::shared_ptr<Call>& c) {
                                return std::find(over.begin(), over.end(),
                                                 c.get()) != over.end();
                              }),
               calls_.end());
}

size_t IdleCallWatch::watched() const {
  absl::MutexLock lock(&mu_);
  return calls_.size();
}

int64_t IdleCallWatch::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

void IdleCallWatch::Loop() {
  SetCurrentThreadName("glint-idle-call");
  const absl::Duration every =
      std::max(options_.check_interval, absl::Milliseconds(1));
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      // Wakes early only to stop.
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), every);
      if (stopping_) return;
    }
    CheckNow();
  }
}

}  // namespace glint
