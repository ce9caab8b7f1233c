// The stream a device shares between runs: one queue per user (a view),
// served by two host threads however many users there are. See
// docs/ARCHITECTURE.md, Devices.
#ifndef GLINT_DEVICES_SHARED_STREAM_H_
#define GLINT_DEVICES_SHARED_STREAM_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "devices/event.h"
#include "devices/stream.h"

namespace glint {

// A device's shared stream. Each user (a run) opens a view (OpenView): a
// Stream of its own whose items run in order, with an error scope of its
// own. Views are independent queues: the shared stream interleaves their
// items, the most urgent ready item first (SharedStreamOptions::priority;
// first ready first among equals), on two host threads whatever the
// number of views:
//  - the compute thread runs every launch (Stream::EnqueueLaunch), so the
//    device computes on this one thread (one OpenMP pool; the device's
//    ComputeEngine adopts it, see compute_engine.h), and any other ready
//    item while no launch is ready: a lone run flows on this thread alone,
//    one thread wake-up per partition hop;
//  - the helper thread runs other items (copies, host callbacks) while the
//    compute thread is busy, so that one run's copies overlap another's
//    launch.
// Waits hold no thread: a view whose next item waits for an event version
// sits aside until that version completes (EventMarker::OnComplete), so a
// waiting run never holds up another. Hence no set of waits can deadlock
// the device: only a view whose own waits can never complete (an event
// recorded after the wait, on a view that waits for this one) stalls, and
// it stalls alone. The executor records every event before the waits on
// it (it enqueues each run's DAG in topological order), so its runs always
// finish. Items that block by themselves (an injected hang, a long timed
// copy) hold their thread; with both threads held, the device's views
// wait, as a hung GPU's queues do.
//
// Errors are per view: a failing item fails its view only (its later
// items are skipped, events recorded through it carry the error, its
// OnDone callbacks get it); other views never see it. OnDone callbacks
// (they finish runs, answer clients and start the next runs) run on
// `Options::callbacks` when given, so that they do not hold up a busy
// device; but a worker that reaches them with nothing else to run, while
// `callbacks` has nothing pending, runs them itself: a lone run then ends
// without waking another thread. Either way they start in the order they
// are reached, and each counts as finished once reached.
//
// Stop() fails every view's pending and later items with the reason (a
// view with nothing pending keeps its status until it enqueues more) and
// joins the threads, each once and only from outside them; it never hangs,
// and the destructor calls it. OnDone callbacks may stop the stream (a
// Stop() on one of its own threads only drains, and returns without
// joining: a Stop() from outside, at the latest the destructor's, joins);
// nothing run on its threads may destroy it.
// Thread-safe.
class SharedStream : public std::enable_shared_from_this<SharedStream> {
 public:
  struct Options {
    int device_id = 0;
    std::string name;
    // Runs first on the compute thread: per-thread settings of what the
    // launches call (the device's compute engine adopts the thread).
    std::function<void()> on_compute_start;
    // Where OnDone callbacks run (HostStream::OnDone); null: on the thread
    // that reaches them. Must outlive this stream's threads.
    std::shared_ptr<HostStream> callbacks;
  };

  // Made only as a shared_ptr (views and waits keep it alive).
  static std::shared_ptr<SharedStream> Create(Options options);
  ~SharedStream();
  SharedStream(const SharedStream&) = delete;
  SharedStream& operator=(const SharedStream&) = delete;

  // A view for one user (see the class comment); its priority() and
  // CheckWork() come from `options`. Destroy it, as any stream, only once
  // its work is done.
  std::unique_ptr<Stream> OpenView(SharedStreamOptions options);

  int device_id() const { return options_.device_id; }

  // Fails every view's pending and later items with `reason` and joins the
  // threads (see the class comment). Idempotent.
  void Stop(absl::Status reason) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class View;

  enum class Kind { kWork, kLaunch, kWait, kRecord, kCallback };
  struct Item {
    Kind kind = Kind::kWork;
    StreamWork work;                             // kWork, kLaunch.
    std::shared_ptr<const EventMarker> wait;     // kWait.
    // kWait: waited for even after the view has failed, its status
    // ignored (Stream::WaitForCompletion).
    bool wait_any_status = false;
    std::shared_ptr<EventMarker> signal;         // kRecord.
    std::function<void(absl::Status)> callback;  // kCallback.
  };
  // One view's queue and error scope. Its mutable state is guarded by the
  // stream's mu_ (which the annotations cannot name from here).
  struct Queue {
    Queue(int priority, std::function<absl::Status()> check)
        : priority(priority), work_check(std::move(check)) {}
    const int priority;
    const std::function<absl::Status()> work_check;
    std::deque<Item> items;  // Pending, oldest first; not the running one.
    // Its next item is running, ready to run or waiting for an event:
    // nothing else of the view may start meanwhile.
    bool busy = false;
    bool running = false;  // A thread runs its item (taken off `items`).
    // Between the view's BeginBatch and EndBatch: items queue up but none
    // starts, so that a run enqueued item by item wakes the device once.
    bool held = false;
    uint64_t enqueued = 0;
    uint64_t completed = 0;
    absl::Status status;  // The view's sticky error.
  };
  // Views whose next item is work ready to run, most urgent level first,
  // first ready first within a level. A view is in at most one of them at
  // a time (it is busy meanwhile); empty levels are kept, so that a lone
  // run does not allocate per item. Guarded by the stream's mu_.
  class ReadySet {
   public:
    bool empty() const { return size_ == 0; }
    void Push(int priority, std::shared_ptr<Queue> queue) {
      levels_[priority].push_back(std::move(queue));
      ++size_;
    }
    std::shared_ptr<Queue> Pop() {
      for (auto& [priority, level] : levels_) {
        if (level.empty()) continue;
        std::shared_ptr<Queue> queue = std::move(level.front());
        level.pop_front();
        --size_;
        return queue;
      }
      return nullptr;
    }
    void Clear() {
      levels_.clear();
      size_ = 0;
    }

   private:
    std::map<int, std::deque<std::shared_ptr<Queue>>, std::greater<int>>
        levels_;
    size_t size_ = 0;
  };
  // What to do once mu_ is released: what completed markers call (it
  // reaches other views' and streams' locks), OnDone callbacks, waits to
  // register, work skipped (its captures are freed outside the lock).
  // Inlined: one per item run, usually with one entry or none.
  struct Deferred {
    std::vector<std::function<void()>> marker_callbacks;  // Complete()'s.
    absl::InlinedVector<
        std::pair<std::function<void(absl::Status)>, absl::Status>, 1>
        callbacks;
    absl::InlinedVector<std::pair<std::shared_ptr<const EventMarker>,
                                  std::shared_ptr<Queue>>,
                        1>
        waits;
    absl::InlinedVector<StreamWork, 1> garbage;
  };

  explicit SharedStream(Options options);

  void Push(const std::shared_ptr<Queue>& queue, Item item)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the queue's head items as far as it can: completes records,
  // reaches callbacks, skips work after an error, consumes completed waits;
  // stops at work (made ready for a thread) or at a wait not yet complete.
  void Advance(const std::shared_ptr<Queue>& queue, Deferred& deferred)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops every pending item of `queue` with `reason` (Stop).
  void Drain(Queue& queue, const absl::Status& reason, Deferred& deferred)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The wait at the head of `queue` is over.
  void WaitDone(const std::shared_ptr<Queue>& queue,
                const EventMarker& marker) ABSL_LOCKS_EXCLUDED(mu_);
  // `callbacks_inline`: OnDone callbacks run on this thread even when
  // Options::callbacks is set (a worker with nothing else to run).
  void RunDeferred(Deferred& deferred, bool callbacks_inline = false)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A view's BeginBatch (hold) and EndBatch.
  void Hold(const std::shared_ptr<Queue>& queue, bool hold)
      ABSL_LOCKS_EXCLUDED(mu_);
  void Worker(bool compute) ABSL_LOCKS_EXCLUDED(mu_);
  // A view's Query, Synchronize, status and ClearError.
  bool Idle(const Queue& queue) const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Synchronize(const Queue& queue, absl::Time deadline) const
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Status(const Queue& queue) const ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Clear(Queue& queue) ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;

  mutable absl::Mutex mu_;
  // Views whose next item is work ready to run: launches (the compute
  // thread's) and the rest (either thread's).
  ReadySet ready_launches_ ABSL_GUARDED_BY(mu_);
  ReadySet ready_other_ ABSL_GUARDED_BY(mu_);
  bool compute_busy_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status stop_reason_ ABSL_GUARDED_BY(mu_);
  // Every open view's queue, so that Stop() reaches them; pruned of the
  // views gone when it has doubled since the last time (live_queues_).
  std::vector<std::weak_ptr<Queue>> queues_ ABSL_GUARDED_BY(mu_);
  size_t live_queues_ ABSL_GUARDED_BY(mu_) = 0;

  absl::Mutex join_mu_;  // Serialises Stop()'s joins.
  std::thread compute_;
  std::thread helper_;
  // The workers' ids, kept apart from the std::thread objects (which a
  // join rewrites): Stop() reads them to tell whether it runs on a worker.
  // Written once by Create(), before any view exists.
  std::thread::id compute_id_;
  std::thread::id helper_id_;
};

}  // namespace glint

#endif  // GLINT_DEVICES_SHARED_STREAM_H_
