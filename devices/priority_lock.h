// A lock handed to waiters by priority, used to model a device engine
// (compute or copy) that several streams compete for.
#ifndef GLINT_DEVICES_PRIORITY_LOCK_H_
#define GLINT_DEVICES_PRIORITY_LOCK_H_

#include <cstdint>
#include <set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace glint {

// Granted to the most urgent waiter (larger priority first), first come
// first served among equals. Not reentrant. Thread-safe.
class PriorityLock {
 public:
  void Lock(int priority) {
    absl::MutexLock lock(&mu_);
    const Key key{-priority, next_ticket_++};
    waiting_.insert(key);
    auto my_turn = [this, &key]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !held_ && *waiting_.begin() == key;
    };
    mu_.Await(absl::Condition(&my_turn));
    waiting_.erase(key);
    held_ = true;
  }

  void Unlock() {
    absl::MutexLock lock(&mu_);
    held_ = false;
  }

 private:
  using Key = std::pair<int, uint64_t>;  // (-priority, arrival).

  absl::Mutex mu_;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<Key> waiting_ ABSL_GUARDED_BY(mu_);
};

// Holds a PriorityLock for a scope.
class PriorityLockHolder {
 public:
  PriorityLockHolder(PriorityLock& lock, int priority) : lock_(lock) {
    lock_.Lock(priority);
  }
  ~PriorityLockHolder() { lock_.Unlock(); }
  PriorityLockHolder(const PriorityLockHolder&) = delete;
  PriorityLockHolder& operator=(const PriorityLockHolder&) = delete;

 private:
  PriorityLock& lock_;
};

}  // namespace glint

#endif  // GLINT_DEVICES_PRIORITY_LOCK_H_
