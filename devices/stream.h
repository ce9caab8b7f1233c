// Streams: in-order queues of work on one device (as CUDA streams or IREE
// queues). See docs/ARCHITECTURE.md, Devices, for the contract.
#ifndef GLINT_DEVICES_STREAM_H_
#define GLINT_DEVICES_STREAM_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "devices/event.h"

namespace glint {

namespace devices_internal {
class StreamInternal;
}  // namespace devices_internal

// Work a stream runs. Returning an error fails the stream (sticky): later
// items are skipped and events recorded after it carry the error.
using StreamWork = std::function<absl::Status()>;

// An in-order queue of work on one device. Thread-safe: any thread may
// enqueue; items run one after another in enqueue order.
class Stream {
 public:
  virtual ~Stream() = default;

  virtual int device_id() const = 0;
  virtual int priority() const = 0;

  // Appends a host function, as cudaLaunchHostFunc does: `callback` runs
  // on a host thread once every item enqueued before it has finished, and
  // items enqueued after it wait for it. An error it returns fails the
  // stream like a failing item (later items are skipped; events recorded
  // after it carry the error); it is skipped when the stream has failed
  // already. For host-side work in stream order (trace timestamps, a check
  // that the run is still wanted): it must not touch device memory (copy
  // through the DeviceManager) and must not block on this stream.
  void EnqueueHostCallback(StreamWork callback) {
    Enqueue(std::move(callback));
  }

  // Captures all work enqueued so far; `event` completes when it finishes.
  // Re-recording makes a new version (earlier waiters keep theirs).
  virtual void Record(Event& event) = 0;
  // Later items wait for the version of `event` recorded at this call; a
  // never-recorded event is a no-op. Never blocks the caller. An error
  // carried by the event fails this stream.
  virtual void Wait(const Event& event) = 0;
  // Later items wait for the version of `event` recorded at this call, as
  // with Wait, but its outcome does not matter: the event's error does not
  // fail this stream, and a stream that has failed still waits for it (its
  // later items are then skipped as usual). For memory another stream's
  // work may still be touching, whether that work succeeds or not (the
  // executor's reuse of a partition's execution state).
  virtual void WaitForCompletion(const Event& event) = 0;

  // Calls `callback` on a device thread once every item enqueued before it
  // has finished, with the stream's sticky status; it runs also when the
  // stream has failed or stopped (then with that error), exactly once. The
  // callback counts as finished when it starts, so it may release the
  // stream (ClearError, ReleaseStream); it must not block on this stream.
  virtual void OnDone(std::function<void(absl::Status)> callback) = 0;

  // True only when every enqueued item has finished.
  virtual bool Query() const = 0;
  // Blocks until every item enqueued before the call has finished (or the
  // deadline passes: DEADLINE_EXCEEDED); returns the stream's sticky error.
  virtual absl::Status Synchronize(
      absl::Time deadline = absl::InfiniteFuture()) = 0;

  // The sticky error (OK if none).
  virtual absl::Status status() const = 0;
  // Clears the sticky error once its owner has seen it, so that a pooled
  // stream can serve the next run. FAILED_PRECONDITION with work pending.
  virtual absl::Status ClearError() = 0;

  // A check the device makes right before a launch of this stream starts
  // computing and before a copy starts moving bytes, after any wait for the
  // device's compute or copy engine: an error fails the item (and so the
  // stream, or the view) without doing it. A run that is cancelled or shut
  // down then stops even where its work was already queued behind other
  // runs' (on a slow link, their copies). Per view of a shared stream:
  // given when the view is opened (SharedStreamOptions::work_check);
  // other streams have none.
  virtual absl::Status CheckWork() const { return absl::OkStatus(); }

  // Items enqueued between BeginBatch() and EndBatch() start no earlier
  // than EndBatch(): a user that enqueues a run's work item by item (the
  // executor) wakes the device once rather than once per item. Order and
  // errors are as without it; every BeginBatch() needs its EndBatch(), and
  // nothing may block on the batch's work before it (Synchronize, a host
  // waiting for an event recorded in it; other streams' Waits are fine:
  // they complete once it runs). A hint: streams with a thread of their
  // own ignore it.
  virtual void BeginBatch() {}
  virtual void EndBatch() {}

 protected:
  // Appends `work`, which the device runs in stream order. Device-internal:
  // device implementations reach it through devices_internal::
  // StreamInternal (devices/stream_internal.h, visible in devices/ only);
  // everyone else enqueues through the DeviceManager (copies, launches) or
  // EnqueueHostCallback.
  virtual void Enqueue(StreamWork work) = 0;
  // Appends work that computes (a launch, or what stands for one, such as
  // an injected hang). Streams that treat all work alike enqueue it as
  // any; a view of a SharedStream runs it on the device's compute thread.
  virtual void EnqueueLaunch(StreamWork work) { Enqueue(std::move(work)); }

 private:
  friend class devices_internal::StreamInternal;
};

// How a user opens a view of a device's shared stream
// (DeviceManager::OpenSharedStream, SharedStream::OpenView).
struct SharedStreamOptions {
  // Larger is more urgent. The shared stream runs the most urgent ready
  // item first (first come, first served among equals), and the view's
  // launches meet other streams' at the compute engine with it. What the
  // view's Stream::priority() says.
  int priority = 0;
  // Stream::CheckWork of the view: checked right before each of its
  // launches computes and each of its copies moves bytes. Null: none. Called on
  // a device thread; must not block.
  std::function<absl::Status()> work_check;
};

// A stream backed by one host worker thread: the simulated devices' stream.
// Stop() fails pending work with UNAVAILABLE and joins the worker; it is
// called by the destructor and never hangs, also with waits outstanding.
// A HostStream must not be destroyed from its own worker (its callbacks).
//
// A Wait blocks the worker until the event version completes. Waits among
// streams cannot deadlock, because a Wait can only capture a version that
// is already enqueued (Record enqueues its marker before publishing it in
// the Event): number all items in the order they were enqueued; each
// depends only on items numbered lower (those ahead of it on its stream
// and, for a Wait, its marker); so the lowest-numbered unfinished item is
// at the head of its stream with all it depends on finished, and runs.
// (Work that blocks by itself, such as an injected hang, is another
// matter.)
class HostStream : public Stream {
 public:
  HostStream(int device_id, int priority, std::string name);
  ~HostStream() override;

  int device_id() const override { return device_id_; }
  int priority() const override { return priority_; }
  void Record(Event& event) override;
  void Wait(const Event& event) override;
  void WaitForCompletion(const Event& event) override;
  void OnDone(std::function<void(absl::Status)> callback) override;
  bool Query() const override;
  absl::Status Synchronize(
      absl::Time deadline = absl::InfiniteFuture()) override;
  absl::Status status() const override;
  absl::Status ClearError() override;

  // Fails queued items (and later ones) with `reason` and stops the worker.
  void Stop(absl::Status reason);

 protected:
  void Enqueue(StreamWork work) override;

 private:
  struct Item {
    StreamWork work;                          // Run if the stream is healthy.
    std::shared_ptr<EventMarker> signal;      // Completed with the status.
    std::shared_ptr<const EventMarker> wait;  // Waited for before anything.
    std::function<void(absl::Status)> callback;  // Always called.
    // With `wait`: waited for even when the stream has failed, and its
    // status ignored (WaitForCompletion).
    bool wait_any_status = false;
  };

  void Push(Item item) ABSL_LOCKS_EXCLUDED(mu_);
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for `marker` or Stop(); returns the marker's status or the reason.
  absl::Status AwaitMarker(const EventMarker& marker) ABSL_LOCKS_EXCLUDED(mu_);

  const int device_id_;
  const int priority_;
  const std::string name_;

  mutable absl::Mutex mu_;
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  absl::Status stop_reason_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::thread worker_;
  std::once_flag joined_;
};

}  // namespace glint

#endif  // GLINT_DEVICES_STREAM_H_
