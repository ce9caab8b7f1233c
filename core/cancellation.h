// A flag a caller sets to cancel work it started (a run, typically when
// its gRPC client goes away). Thread-safe.
#ifndef GLINT_CORE_CANCELLATION_H_
#define GLINT_CORE_CANCELLATION_H_

#include <atomic>

namespace glint {

class CancellationToken {
 public:
  void Cancel() { cancelled_.store(true, std::memory_order_release); }
  bool cancelled() const {
    return cancelled_.load(std::memory_order_acquire);
  }

 private:
  std::atomic<bool> cancelled_{false};
};

}  // namespace glint

#endif  // GLINT_CORE_CANCELLATION_H_
