// ThreadSanitizer annotations for Debian's (uninstrumented) Abseil.
//
// libabsl_synchronization.so is not built with -fsanitize=thread, so TSan
// cannot see that absl::Mutex, CondVar and Notification order memory: every
// access guarded by an absl::Mutex is reported as a race. This file, linked
// into TSan builds only, interposes the out-of-line entry points of those
// classes (the executable's definitions take precedence over the shared
// library's), forwards to the real ones (dlsym(RTLD_NEXT)), and tells TSan
// about the happens-before edges with __tsan_acquire/__tsan_release on the
// object's address; the same for absl::Status's reference count. Conditions
// are wrapped so that their evaluation, which
// Abseil may run on any thread that holds the mutex, is ordered as well.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

void* Real(const char* mangled) {
  void* f = dlsym(RTLD_NEXT, mangled);
  if (f == nullptr) {
    std::fprintf(stderr, "absl_tsan_annotations: %s not found\n", mangled);
    std::abort();
  }
  return f;
}

#define REAL(type, mangled)                                     \
  static const auto real = reinterpret_cast<type>(Real(mangled))

void Acquire(const void* p) { __tsan_acquire(const_cast<void*>(p)); }
void Release(const void* p) { __tsan_release(const_cast<void*>(p)); }

// A condition evaluated (under `mu`) by whichever thread holds it. The
// waiter builds it on its stack and Abseil may evaluate it on the thread
// that unlocks (Mutex::UnlockSlow): the release at construction and the
// acquire in Eval carry the waiter's writes (this struct, its Condition)
// to that thread, a hand-off Abseil makes inside its own code.
struct Wrapped {
  Wrapped(const absl::Condition* c, const absl::Mutex* m) : cond(c), mu(m) {
    Release(this);
  }
  const absl::Condition* cond;
  const absl::Mutex* mu;
  static bool Eval(void* arg) {
    Acquire(arg);
    auto* w = static_cast<Wrapped*>(arg);
    Acquire(w->mu);
    const bool r = w->cond->Eval();
    Release(w->mu);
    return r;
  }
};

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex4LockEv");
  real(this);
  Acquire(this);
}

void Mutex::ReaderLock() {
  REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex10ReaderLockEv");
  real(this);
  Acquire(this);
}

void Mutex::Unlock() {
  REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex6UnlockEv");
  Release(this);
  real(this);
}

void Mutex::ReaderUnlock() {
  REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex12ReaderUnlockEv");
  Release(this);
  real(this);
}

bool Mutex::TryLock() {
  REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex7TryLockEv");
  const bool r = real(this);
  if (r) Acquire(this);
  return r;
}

bool Mutex::ReaderTryLock() {
  REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex13ReaderTryLockEv");
  const bool r = real(this);
  if (r) Acquire(this);
  return r;
}

void Mutex::LockWhen(const Condition& cond) {
  REAL(void (*)(Mutex*, const Condition&),
       "_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE");
  Wrapped w{&cond, this};
  real(this, Condition(&Wrapped::Eval, &w));
  Acquire(this);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  REAL(void (*)(Mutex*, const Condition&),
       "_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Wrapped w{&cond, this};
  real(this, Condition(&Wrapped::Eval, &w));
  Acquire(this);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  REAL(bool (*)(Mutex*, const Condition&, Duration),
       "_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_"
       "8DurationE");
  Wrapped w{&cond, this};
  const bool r = real(this, Condition(&Wrapped::Eval, &w), timeout);
  Acquire(this);
  return r;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  REAL(bool (*)(Mutex*, const Condition&, Time),
       "_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_"
       "4TimeE");
  Wrapped w{&cond, this};
  const bool r = real(this, Condition(&Wrapped::Eval, &w), deadline);
  Acquire(this);
  return r;
}

void Mutex::Await(const Condition& cond) {
  REAL(void (*)(Mutex*, const Condition&),
       "_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE");
  Wrapped w{&cond, this};
  Release(this);
  real(this, Condition(&Wrapped::Eval, &w));
  Acquire(this);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  REAL(bool (*)(Mutex*, const Condition&, Duration),
       "_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_"
       "8DurationE");
  Wrapped w{&cond, this};
  Release(this);
  const bool r = real(this, Condition(&Wrapped::Eval, &w), timeout);
  Acquire(this);
  return r;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  REAL(bool (*)(Mutex*, const Condition&, Time),
       "_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_"
       "4TimeE");
  Wrapped w{&cond, this};
  Release(this);
  const bool r = real(this, Condition(&Wrapped::Eval, &w), deadline);
  Acquire(this);
  return r;
}

void CondVar::Wait(Mutex* mu) {
  REAL(void (*)(CondVar*, Mutex*),
       "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE");
  Release(mu);
  real(this, mu);
  Acquire(mu);
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  REAL(bool (*)(CondVar*, Mutex*, Duration),
       "_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_"
       "8DurationE");
  Release(mu);
  const bool r = real(this, mu, timeout);
  Acquire(mu);
  return r;
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  REAL(bool (*)(CondVar*, Mutex*, Time),
       "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  Release(mu);
  const bool r = real(this, mu, deadline);
  Acquire(mu);
  return r;
}

void Notification::Notify() {
  REAL(void (*)(Notification*), "_ZN4absl7debian312Notification6NotifyEv");
  Release(this);
  real(this);
}

void Notification::WaitForNotification() const {
  REAL(void (*)(const Notification*),
       "_ZNK4absl7debian312Notification19WaitForNotificationEv");
  real(this);
  Acquire(this);
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  REAL(bool (*)(const Notification*, Duration),
       "_ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_"
       "8DurationE");
  const bool r = real(this, timeout);
  Acquire(this);
  return r;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  REAL(bool (*)(const Notification*, Time),
       "_ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_"
       "4TimeE");
  const bool r = real(this, deadline);
  Acquire(this);
  return r;
}

// absl::Status's reference count is dropped in libabsl_status (with an
// acq_rel decrement TSan cannot see), so the thread that frees a shared
// StatusRep would seem to race with the others' earlier copies.
void Status::UnrefNonInlined(uintptr_t rep) {
  REAL(void (*)(uintptr_t), "_ZN4absl7debian36Status15UnrefNonInlinedEm");
  void* const r = RepToPointer(rep);
  Release(r);
  Acquire(r);
  real(rep);
}

ABSL_NAMESPACE_END
}  // namespace absl
