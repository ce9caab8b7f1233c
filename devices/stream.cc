#include "devices/stream.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/thread_name.h"

namespace glint {
namespace {

// How often a worker blocked on another stream's event re-checks for Stop().
// The wait itself wakes as soon as the event completes.
constexpr absl::Duration kStopPollInterval = absl::Milliseconds(20);

}  // namespace

HostStream::HostStream(int device_id, int priority, std::string name)
    : device_id_(device_id), priority_(priority), name_(std::move(name)) {
  worker_ = std::thread([this] {
    SetCurrentThreadName(absl::StrCat("glint-d", device_id_, "-strm"));
    WorkerLoop();
  });
}

HostStream::~HostStream() {
  Stop(absl::UnavailableError("stream destroyed"));
}

void HostStream::Push(Item item) {
  absl::Status stopped;
  {
    absl::MutexLock lock(&mu_);
    ++enqueued_;
    if (!stopping_) {
      queue_.push_back(std::move(item));
      return;
    }
    // Nothing runs any more: the item completes at once with the reason.
    ++completed_;
    stopped = stop_reason_;
  }
  if (item.signal != nullptr) item.signal->Complete(stopped, absl::Now());
  if (item.callback) item.callback(stopped);
}

void HostStream::Enqueue(StreamWork work) {
  Push(Item{std::move(work), nullptr, nullptr});
}

void HostStream::Record(Event& event) {
  auto marker = std::make_shared<EventMarker>(device_id_);
  // Enqueued before it is published: a Wait that captures this version
  // comes after it, which keeps waits between streams free of cycles.
  Push(Item{nullptr, marker, nullptr});
  event.set_latest(std::move(marker));
}

void HostStream::Wait(const Event& event) {
  std::shared_ptr<const EventMarker> marker = event.latest();
  if (marker == nullptr) return;  // Never recorded: a no-op, as in CUDA.
  Push(Item{nullptr, nullptr, std::move(marker)});
}

void HostStream::WaitForCompletion(const Event& event) {
  std::shared_ptr<const EventMarker> marker = event.latest();
  if (marker == nullptr) return;
  Item item;
  item.wait = std::move(marker);
  item.wait_any_status = true;
  Push(std::move(item));
}

void HostStream::OnDone(std::function<void(absl::Status)> callback) {
  Item item;
  item.callback = std::move(callback);
  Push(std::move(item));
}

bool HostStream::Query() const {
  absl::MutexLock lock(&mu_);
  return completed_ == enqueued_;
}

absl::Status HostStream::Synchronize(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  const uint64_t target = enqueued_;
  auto reached = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return completed_ >= target;
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&reached), deadline)) {
    return absl::DeadlineExceededError("stream did not drain in time");
  }
  return error_;
}

absl::Status HostStream::status() const {
  absl::MutexLock lock(&mu_);
  return error_;
}

absl::Status HostStream::ClearError() {
  absl::MutexLock lock(&mu_);
  if (completed_ != enqueued_) {
    return absl::FailedPreconditionError(
        "cannot clear the error of a stream with pending work");
  }
  if (!stopping_) error_ = absl::OkStatus();
  return absl::OkStatus();
}

void HostStream::Stop(absl::Status reason) {
  std::deque<Item> dropped;
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_reason_ = reason;
      if (error_.ok()) error_ = reason;
      dropped.swap(queue_);
    }
  }
  // Complete the dropped items before counting them, as the worker does, so
  // that a drained stream never shows an incomplete event. Callbacks count
  // as finished when they start (see OnDone).
  for (Item& item : dropped) {
    if (item.signal != nullptr) item.signal->Complete(reason, absl::Now());
    if (item.callback) {
      {
        absl::MutexLock lock(&mu_);
        ++completed_;
      }
      item.callback(reason);
    }
  }
  {
    absl::MutexLock lock(&mu_);
    for (const Item& item : dropped) {
      if (!item.callback) ++completed_;
    }
  }
  // Joined once, whoever stops first (concurrent joins of one thread are
  // undefined); the worker itself never joins itself.
  if (worker_.get_id() != std::this_thread::get_id()) {
    std::call_once(joined_, [this] {
      if (worker_.joinable()) worker_.join();
    });
  }
}

absl::Status HostStream::AwaitMarker(const EventMarker& marker) {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return stop_reason_;
    }
    absl::Status s = marker.WaitUntil(absl::Now() + kStopPollInterval);
    if (!absl::IsDeadlineExceeded(s) || marker.done()) return marker.status();
  }
}

void HostStream::WorkerLoop() {
  while (true) {
    Item item;
    absl::Status error;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // Stopping and drained.
      item = std::move(queue_.front());
      queue_.pop_front();
      error = error_;
      if (item.callback) ++completed_;  // Finished as it starts; see OnDone.
    }
    if (item.callback) {
      item.callback(error);
      continue;
    }
    if (item.wait != nullptr && item.wait_any_status) {
      AwaitMarker(*item.wait).IgnoreError();  // Its outcome does not matter.
    } else if (item.wait != nullptr && error.ok()) {
      error = AwaitMarker(*item.wait);
    }
    if (item.work && error.ok()) {
      error = item.work();
    }
    // Release captured state (buffers, callbacks) before reporting progress,
    // so that a Synchronize()d caller may free what the work referenced.
    item.work = nullptr;
    item.wait = nullptr;
    if (item.signal != nullptr) item.signal->Complete(error, absl::Now());
    absl::MutexLock lock(&mu_);
    if (!error.ok() && error_.ok()) error_ = error;
    ++completed_;
  }
}

}  // namespace glint
