// Events: points in a stream's work that other streams and the host can
// wait for, with CUDA's semantics (see docs/ARCHITECTURE.md, Devices).
#ifndef GLINT_DEVICES_EVENT_H_
#define GLINT_DEVICES_EVENT_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace glint {

// One recorded version of an Event: completes when the stream it was
// recorded on has finished every item enqueued before the record. Shared by
// the event and by every stream that waits on this version, so re-recording
// the event never changes what an earlier Wait waits for. Thread-safe.
class EventMarker {
 public:
  explicit EventMarker(int device_id) : device_id_(device_id) {}

  int device_id() const { return device_id_; }

  // Called once by the stream; `status` is the stream's (sticky) status at
  // that point, which the marker carries to its waiters. Then runs the
  // OnComplete callbacks on the calling thread, or, with `defer`, appends
  // them there for the caller to run once it holds no lock (they may take
  // other streams' locks).
  void Complete(absl::Status status, absl::Time when,
                std::vector<std::function<void()>>* defer = nullptr);
  // Calls `callback` once the marker is done: at once (on this thread) if
  // it is, else from Complete(). For waiters that must not block a thread
  // (SharedStream). The callback must not block.
  void OnComplete(std::function<void()> callback) const;

  bool done() const;
  // Blocks until done or `deadline`; DEADLINE_EXCEEDED on time-out.
  absl::Status WaitUntil(absl::Time deadline) const;
  // The completion status, or FAILED_PRECONDITION while not done.
  absl::Status status() const;
  absl::StatusOr<absl::Time> completion_time() const;

 private:
  const int device_id_;
  mutable absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Time when_ ABSL_GUARDED_BY(mu_);
  // Waiters, not state: registering one leaves the marker as it was.
  mutable std::vector<std::function<void()>> on_complete_ ABSL_GUARDED_BY(mu_);
};

struct EventOptions {
  // Timing is opt-in (as cudaEventDisableTiming is opt-out): only events
  // created with it can be used with ElapsedMillis.
  bool enable_timing = false;
};

// An event. Record it on a stream (Stream::Record), make other streams wait
// for it (Stream::Wait), or wait on the host (Synchronize).
// Thread-safe.
class Event {
 public:
  explicit Event(EventOptions options = {}) : options_(options) {}

  bool timing_enabled() const { return options_.enable_timing; }

  // True when never recorded or when the latest recorded version is done.
  bool Query() const;
  // Blocks until the latest recorded version (at call time) is done and
  // returns the error it carries, if any. OK for a never-recorded event.
  absl::Status Synchronize(absl::Time deadline = absl::InfiniteFuture()) const;

  // Milliseconds between two recorded, completed, timing-enabled events of
  // one device; FAILED_PRECONDITION otherwise.
  static absl::StatusOr<double> ElapsedMillis(const Event& start,
                                              const Event& end);

  // The latest version (null if never recorded). Streams use these.
  std::shared_ptr<EventMarker> latest() const;
  void set_latest(std::shared_ptr<EventMarker> marker);

 private:
  const EventOptions options_;
  mutable absl::Mutex mu_;
  std::shared_ptr<EventMarker> latest_ ABSL_GUARDED_BY(mu_);
};

}  // namespace glint

#endif  // GLINT_DEVICES_EVENT_H_
