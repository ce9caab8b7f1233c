#include "devices/event.h"

#include "absl/strings/str_cat.h"

namespace glint {

void EventMarker::Complete(absl::Status status, absl::Time when,
                           std::vector<std::function<void()>>* defer) {
  std::vector<std::function<void()>> callbacks;
  {
    absl::MutexLock lock(&mu_);
    done_ = true;
    status_ = std::move(status);
    when_ = when;
    callbacks.swap(on_complete_);
  }
  if (defer != nullptr) {
    for (std::function<void()>& callback : callbacks) {
      defer->push_back(std::move(callback));
    }
    return;
  }
  for (std::function<void()>& callback : callbacks) callback();
}

void EventMarker::OnComplete(std::function<void()> callback) const {
  {
    absl::MutexLock lock(&mu_);
    if (!done_) {
      on_complete_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

bool EventMarker::done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

absl::Status EventMarker::WaitUntil(absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithDeadline(absl::Condition(&done_), deadline)) {
    return absl::DeadlineExceededError("event did not complete in time");
  }
  return status_;
}

absl::Status EventMarker::status() const {
  absl::MutexLock lock(&mu_);
  if (!done_) return absl::FailedPreconditionError("event not complete");
  return status_;
}

absl::StatusOr<absl::Time> EventMarker::completion_time() const {
  absl::MutexLock lock(&mu_);
  if (!done_) return absl::FailedPreconditionError("event not complete");
  return when_;
}

bool Event::Query() const {
  std::shared_ptr<EventMarker> m = latest();
  return m == nullptr || m->done();
}

absl::Status Event::Synchronize(absl::Time deadline) const {
  std::shared_ptr<EventMarker> m = latest();
  if (m == nullptr) return absl::OkStatus();
  return m->WaitUntil(deadline);
}

absl::StatusOr<double> Event::ElapsedMillis(const Event& start,
                                            const Event& end) {
  if (!start.timing_enabled() || !end.timing_enabled()) {
    return absl::FailedPreconditionError(
        "both events must be created with timing enabled");
  }
  std::shared_ptr<EventMarker> a = start.latest();
  std::shared_ptr<EventMarker> b = end.latest();
  if (a == nullptr || b == nullptr) {
    return absl::FailedPreconditionError("both events must be recorded");
  }
  if (a->device_id() != b->device_id()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "events were recorded on different devices (", a->device_id(), " and ",
        b->device_id(), ")"));
  }
  absl::StatusOr<absl::Time> ta = a->completion_time();
  absl::StatusOr<absl::Time> tb = b->completion_time();
  if (!ta.ok() || !tb.ok()) {
    return absl::FailedPreconditionError("both events must be complete");
  }
  return absl::ToDoubleMilliseconds(*tb - *ta);
}

std::shared_ptr<EventMarker> Event::latest() const {
  absl::MutexLock lock(&mu_);
  return latest_;
}

void Event::set_latest(std::shared_ptr<EventMarker> marker) {
  absl::MutexLock lock(&mu_);
  latest_ = std::move(marker);
}

}  // namespace glint
