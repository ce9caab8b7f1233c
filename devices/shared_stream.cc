#include "devices/shared_stream.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/thread_name.h"

namespace glint {

// One user's Stream: every call goes to the shared stream, on the user's
// queue. Thread-safe.
class SharedStream::View : public Stream {
 public:
  View(std::shared_ptr<SharedStream> stream, std::shared_ptr<Queue> queue)
      : stream_(std::move(stream)), queue_(std::move(queue)) {}

  int device_id() const override { return stream_->device_id(); }
  int priority() const override { return queue_->priority; }

  void Record(Event& event) override {
    auto marker = std::make_shared<EventMarker>(stream_->device_id());
    Item item;
    item.kind = Kind::kRecord;
    item.signal = marker;
    // Enqueued before it is published: a Wait that captures this version
    // comes after it.
    stream_->Push(queue_, std::move(item));
    event.set_latest(std::move(marker));
  }
  void Wait(const Event& event) override { AddWait(event, false); }
  void WaitForCompletion(const Event& event) override { AddWait(event, true); }
  void OnDone(std::function<void(absl::Status)> callback) override {
    Item item;
    item.kind = Kind::kCallback;
    item.callback = std::move(callback);
    stream_->Push(queue_, std::move(item));
  }
  bool Query() const override { return stream_->Idle(*queue_); }
  absl::Status Synchronize(absl::Time deadline) override {
    return stream_->Synchronize(*queue_, deadline);
  }
  absl::Status status() const override { return stream_->Status(*queue_); }
  absl::Status ClearError() override { return stream_->Clear(*queue_); }
  absl::Status CheckWork() const override {
    return queue_->work_check ? queue_->work_check() : absl::OkStatus();
  }
  void BeginBatch() override { stream_->Hold(queue_, true); }
  void EndBatch() override { stream_->Hold(queue_, false); }

 protected:
  void Enqueue(StreamWork work) override { Add(Kind::kWork, std::move(work)); }
  void EnqueueLaunch(StreamWork work) override {
    Add(Kind::kLaunch, std::move(work));
  }

 private:
  void AddWait(const Event& event, bool any_status) {
    std::shared_ptr<const EventMarker> marker = event.latest();
    if (marker == nullptr) return;  // Never recorded: a no-op, as in CUDA.
    Item item;
    item.kind = Kind::kWait;
    item.wait = std::move(marker);
    item.wait_any_status = any_status;
    stream_->Push(queue_, std::move(item));
  }
  void Add(Kind kind, StreamWork work) {
    Item item;
    item.kind = kind;
    item.work = std::move(work);
    stream_->Push(queue_, std::move(item));
  }

  const std::shared_ptr<SharedStream> stream_;
  const std::shared_ptr<Queue> queue_;
};

std::shared_ptr<SharedStream> SharedStream::Create(Options options) {
  std::shared_ptr<SharedStream> stream(new SharedStream(std::move(options)));
  SharedStream* s = stream.get();
  // Started once the members are ready; joined by Stop().
  // Named per device; OpenMP's workers, started from the compute thread,
  // inherit its name.
  s->compute_ = std::thread([s] {
    SetCurrentThreadName(absl::StrCat("glint-d", s->device_id(), "-comp"));
    if (s->options_.on_compute_start) s->options_.on_compute_start();
    s->Worker(/*compute=*/true);
  });
  s->helper_ = std::thread([s] {
    SetCurrentThreadName(absl::StrCat("glint-d", s->device_id(), "-help"));
    s->Worker(/*compute=*/false);
  });
  // Set before any view exists, so before any callback can call Stop().
  s->compute_id_ = s->compute_.get_id();
  s->helper_id_ = s->helper_.get_id();
  return stream;
}

SharedStream::SharedStream(Options options) : options_(std::move(options)) {}

SharedStream::~SharedStream() {
  Stop(absl::UnavailableError("stream destroyed"));
}

std::unique_ptr<Stream> SharedStream::OpenView(SharedStreamOptions options) {
  auto queue =
      std::make_shared<Queue>(options.priority, std::move(options.work_check));
  {
    absl::MutexLock lock(&mu_);
    // Forget the queues of views gone, so that the list stays as long as
    // the views open (amortised: pruned when it has doubled).
    if (queues_.size() >= 64 && queues_.size() >= 2 * live_queues_) {
      std::vector<std::weak_ptr<Queue>> live;
      for (std::weak_ptr<Queue>& q : queues_) {
        if (!q.expired()) live.push_back(std::move(q));
      }
      queues_.swap(live);
      live_queues_ = queues_.size();
    }
    queues_.push_back(queue);
  }
  return std::make_unique<View>(shared_from_this(), std::move(queue));
}

void SharedStream::Push(const std::shared_ptr<Queue>& queue, Item item) {
  Deferred deferred;
  {
    absl::MutexLock lock(&mu_);
    ++queue->enqueued;
    queue->items.push_back(std::move(item));
    if (stopping_) {
      // Nothing runs any more: the item completes at once with the reason.
      Drain(*queue, stop_reason_, deferred);
    } else if (!queue->busy && !queue->held) {
      Advance(queue, deferred);
    }
  }
  RunDeferred(deferred);
}

void SharedStream::Hold(const std::shared_ptr<Queue>& queue, bool hold) {
  Deferred deferred;
  {
    absl::MutexLock lock(&mu_);
    queue->held = hold;
    if (!hold && !stopping_ && !queue->busy) Advance(queue, deferred);
  }
  RunDeferred(deferred);
}

void SharedStream::Advance(const std::shared_ptr<Queue>& queue,
                           Deferred& deferred) {
  Queue& q = *queue;
  while (!q.items.empty()) {
    Item& head = q.items.front();
    switch (head.kind) {
      case Kind::kRecord:
        // Completed before it counts, so that a drained view never shows
        // an incomplete event; what it wakes runs once mu_ is released.
        head.signal->Complete(q.status, absl::Now(),
                              &deferred.marker_callbacks);
        break;
      case Kind::kCallback:
        // Counts as finished once reached (see Stream::OnDone).
        deferred.callbacks.emplace_back(std::move(head.callback), q.status);
        break;
      case Kind::kWait:
        if (q.status.ok() || head.wait_any_status) {
          if (!head.wait->done()) {
            q.busy = true;  // Until WaitDone.
            deferred.waits.emplace_back(head.wait, queue);
            return;
          }
          absl::Status s = head.wait->status();
          if (!s.ok() && !head.wait_any_status) q.status = std::move(s);
        }
        break;
      case Kind::kWork:
      case Kind::kLaunch:
        if (q.status.ok()) {
          q.busy = true;  // Until a thread has run it.
          (head.kind == Kind::kLaunch ? ready_launches_ : ready_other_)
              .Push(q.priority, queue);
          return;
        }
        deferred.garbage.push_back(std::move(head.work));  // Skipped.
        break;
    }
    q.items.pop_front();
    ++q.completed;
  }
}

void SharedStream::Drain(Queue& queue, const absl::Status& reason,
                         Deferred& deferred) {
  if (!queue.items.empty() && queue.status.ok()) queue.status = reason;
  for (Item& item : queue.items) {
    switch (item.kind) {
      case Kind::kRecord:
        item.signal->Complete(reason, absl::Now(), &deferred.marker_callbacks);
        break;
      case Kind::kCallback:
        deferred.callbacks.emplace_back(std::move(item.callback), reason);
        break;
      case Kind::kWait:
        break;
      case Kind::kWork:
      case Kind::kLaunch:
        deferred.garbage.push_back(std::move(item.work));
        break;
    }
    ++queue.completed;
  }
  queue.items.clear();
  queue.busy = queue.running;  // A running item is counted by its thread.
}

void SharedStream::WaitDone(const std::shared_ptr<Queue>& queue,
                            const EventMarker& marker) {
  Deferred deferred;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;  // Stop() has drained the queue.
    Queue& q = *queue;
    q.busy = false;
    absl::Status s = marker.status();
    const bool any_status = q.items.front().wait_any_status;  // The wait.
    if (!s.ok() && q.status.ok() && !any_status) q.status = std::move(s);
    q.items.pop_front();
    ++q.completed;
    Advance(queue, deferred);
  }
  RunDeferred(deferred);
}

void SharedStream::RunDeferred(Deferred& deferred, bool callbacks_inline) {
  for (std::function<void()>& wake : deferred.marker_callbacks) wake();
  // Inline only while the callbacks stream has nothing of its own pending,
  // so that callbacks still start in the order they are reached.
  if (callbacks_inline && options_.callbacks != nullptr &&
      !deferred.callbacks.empty() && !options_.callbacks->Query()) {
    callbacks_inline = false;
  }
  for (auto& [callback, status] : deferred.callbacks) {
    if (options_.callbacks == nullptr || callbacks_inline) {
      callback(std::move(status));
      continue;
    }
    // Called exactly once either way: the callbacks stream's OnDone runs
    // it also when that stream has stopped.
    options_.callbacks->OnDone(
        [callback = std::move(callback),
         status = std::move(status)](absl::Status) { callback(status); });
  }
  for (auto& [marker, queue] : deferred.waits) {
    // The marker itself calls this (or this call, at once, if it completed
    // meanwhile), so a raw pointer to it is safe, and keeps the marker from
    // owning itself through its callback.
    const EventMarker* m = marker.get();
    marker->OnComplete([self = weak_from_this(), m, queue = queue] {
      if (std::shared_ptr<SharedStream> stream = self.lock()) {
        stream->WaitDone(queue, *m);
      }
    });
  }
  deferred.garbage.clear();
}

void SharedStream::Worker(bool compute) {
  // The compute thread takes launches first, then anything; the helper
  // only non-launch work, and only while the compute thread is busy (a lone
  // run stays on one thread: no hand-off per item).
  auto ready = [this, compute]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (stopping_) return true;
    if (compute) return !ready_launches_.empty() || !ready_other_.empty();
    return compute_busy_ && !ready_other_.empty();
  };
  // Takes the next item to run (mu_ held, ready() true, not stopping).
  auto take = [this, compute](std::shared_ptr<Queue>& queue, Item& item)
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ReadySet& from = compute && !ready_launches_.empty() ? ready_launches_
                                                          : ready_other_;
    queue = from.Pop();
    if (compute) compute_busy_ = true;
    item = std::move(queue->items.front());
    queue->items.pop_front();
    queue->running = true;
  };
  std::shared_ptr<Queue> queue;
  Item item;
  mu_.Lock();
  while (true) {
    mu_.Await(absl::Condition(&ready));
    if (stopping_) break;
    take(queue, item);
    mu_.Unlock();
    // Runs items back to back while there are ready ones, taking the lock
    // once per item.
    while (true) {
      absl::Status status = item.work();
      // Release captured state (buffers, callbacks) before reporting
      // progress, so that a Synchronize()d caller may free what it used.
      item.work = nullptr;

      Deferred deferred;
      std::shared_ptr<Queue> done = std::move(queue);
      bool more = false;
      mu_.Lock();
      if (compute) compute_busy_ = false;
      done->running = false;
      done->busy = false;
      ++done->completed;
      if (!status.ok() && done->status.ok()) done->status = std::move(status);
      if (!stopping_) {
        Advance(done, deferred);
        more = ready();
        if (more) take(queue, item);
      }
      // With no item to run next, this thread runs the OnDone callbacks
      // reached itself rather than waking the callbacks thread: a lone run
      // then ends (and its caller hears of it) without a thread hand-off.
      // Meanwhile it counts as busy, so that the helper takes other runs'
      // copies; their launches wait for the callbacks (short: they answer
      // a caller and start queued runs). Not on the helper while a launch
      // runs: the copies that the next launch needs must not wait for
      // callbacks (a pipeline of busy devices would lose its overlap).
      const bool callbacks_inline = !more && !stopping_ &&
                                    !deferred.callbacks.empty() &&
                                    (compute || !compute_busy_);
      if (callbacks_inline && compute) compute_busy_ = true;
      mu_.Unlock();
      // What the finished item woke (another device's next partition)
      // goes before this thread's next item.
      RunDeferred(deferred, callbacks_inline);
      done.reset();  // Without the lock: it may be the view's last.
      if (callbacks_inline && compute) {
        mu_.Lock();
        compute_busy_ = false;
        mu_.Unlock();
      }
      if (!more) break;
    }
    mu_.Lock();
  }
  mu_.Unlock();
}

bool SharedStream::Idle(const Queue& queue) const {
  absl::MutexLock lock(&mu_);
  return queue.completed == queue.enqueued;
}

absl::Status SharedStream::Synchronize(const Queue& queue,
                                       absl::Time deadline) const {
  absl::MutexLock lock(&mu_);
  const uint64_t target = queue.enqueued;
  auto reached = [&queue, target]() { return queue.completed >= target; };
  if (!mu_.AwaitWithDeadline(absl::Condition(&reached), deadline)) {
    return absl::DeadlineExceededError("stream did not drain in time");
  }
  return queue.status;
}

absl::Status SharedStream::Status(const Queue& queue) const {
  absl::MutexLock lock(&mu_);
  return queue.status;
}

absl::Status SharedStream::Clear(Queue& queue) {
  absl::MutexLock lock(&mu_);
  if (queue.completed != queue.enqueued) {
    return absl::FailedPreconditionError(
        "cannot clear the error of a stream with pending work");
  }
  queue.status = absl::OkStatus();
  return absl::OkStatus();
}

void SharedStream::Stop(absl::Status reason) {
  Deferred deferred;
  {
    absl::MutexLock lock(&mu_);
    if (!stopping_) {
      stopping_ = true;
      stop_reason_ = reason;
      for (std::weak_ptr<Queue>& weak : queues_) {
        if (std::shared_ptr<Queue> queue = weak.lock()) {
          Drain(*queue, reason, deferred);
        }
      }
      ready_launches_.Clear();
      ready_other_.Clear();
    }
  }
  RunDeferred(deferred);
  // Only threads other than the stream's own join: an OnDone callback run
  // inline on one of them may stop the stream while an outside Stop()
  // holds join_mu_ joining that very thread (or the other worker's
  // callback stops it too), so a worker never waits for join_mu_. The
  // outside Stop() (at the latest the destructor's) joins both.
  const std::thread::id self = std::this_thread::get_id();
  if (self == compute_id_ || self == helper_id_) return;
  absl::MutexLock lock(&join_mu_);
  for (std::thread* t : {&compute_, &helper_}) {
    if (t->joinable()) t->join();
  }
}

}  // namespace glint
