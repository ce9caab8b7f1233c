// IdleCallWatch: ends streaming calls whose client has gone quiet.
//
// An AddNetworkStream call holds one of glintd's upload places
// (UploadOptions::max_concurrent) and a file beside the store until its
// client ends the stream. A client that stops sending without closing (a
// stalled or frozen process, a half-open connection, or a hostile one
// opening streams and sending nothing) would hold them for ever, and once
// every place is taken no Glint client can add a network. The watch
// cancels a call that has waited longer than its idle timeout for its
// client's next message; time the server spends on what it got (writing a
// piece, adding the network) never counts.
//
// Thread-safe. Each watched call is a Call, shared by the call and the
// watch; a call that ends says Done(), after which its cancel never runs.
#ifndef GLINT_RUNTIME_SERVER_GRPC_IDLE_CALL_WATCH_H_
#define GLINT_RUNTIME_SERVER_GRPC_IDLE_CALL_WATCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace glint {

struct IdleCallWatchOptions {
  // A call waiting this long for its client's next message is cancelled.
  absl::Duration idle_timeout = absl::Minutes(2);
  // How often the watch looks: a quiet call ends between idle_timeout and
  // idle_timeout + check_interval after its client's last message.
  absl::Duration check_interval = absl::Seconds(1);
  // Without a thread the watch looks only when CheckNow is called (tests,
  // with a clock of their own).
  bool start_thread = true;
  std::function<absl::Time()> clock = [] { return absl::Now(); };
};

class IdleCallWatch {
 public:
  // One watched call. Thread-safe.
  class Call {
   public:
    explicit Call(std::function<void()> cancel,
                  std::function<absl::Time()> clock)
        : clock_(std::move(clock)), cancel_(std::move(cancel)) {}

    // The call now waits for its client's next message: idle from now.
    void Waiting() ABSL_LOCKS_EXCLUDED(mu_);
    // The call works on what it got: not idle, however long it takes.
    void Working() ABSL_LOCKS_EXCLUDED(mu_);
    // The call is over: once this returns its cancel is not running and
    // never runs.
    void Done() ABSL_LOCKS_EXCLUDED(mu_);
    // Whether the watch cancelled it.
    bool cancelled() const ABSL_LOCKS_EXCLUDED(mu_);

   private:
    friend class IdleCallWatch;
    enum class Check { kAlive, kCancelledNow, kOver };
    // Cancels the call if it has waited since `deadline` or earlier and
    // was not cancelled yet; kOver once it is Done (the watch then forgets
    // it).
    Check CancelIfIdleSince(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

    const std::function<absl::Time()> clock_;
    mutable absl::Mutex mu_;
    // Empty once Done. Runs under mu_, so it must not wait for the call's
    // own work, nor run the call's reactions on this thread (Done would
    // then wait for mu_ on the thread holding it). gRPC 1.51's TryCancel
    // does neither: a reactor that is not InternalInlineable gets OnCancel
    // and OnDone from gRPC's executor, and reads complete with
    // can_inline=false. Recheck on a gRPC upgrade.
    std::function<void()> cancel_ ABSL_GUARDED_BY(mu_);
    absl::Time waiting_since_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
    bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  };

  explicit IdleCallWatch(IdleCallWatchOptions options);
  // Stops the thread. Calls still watched are left alone.
  ~IdleCallWatch();
  IdleCallWatch(const IdleCallWatch&) = delete;
  IdleCallWatch& operator=(const IdleCallWatch&) = delete;

  // Watches a new call, not yet waiting; `cancel` ends it (see Call).
  std::shared_ptr<Call> Watch(std::function<void()> cancel)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Cancels every call idle for idle_timeout or more by the clock, and
  // forgets those that are over. The thread calls it every check_interval.
  void CheckNow() ABSL_LOCKS_EXCLUDED(mu_);

  // Calls watched and not yet known to be over; calls cancelled so far.
  size_t watched() const ABSL_LOCKS_EXCLUDED(mu_);
  int64_t cancelled() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const IdleCallWatchOptions options_;
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
  int64_t cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_IDLE_CALL_WATCH_H_
