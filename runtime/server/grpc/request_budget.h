// The bytes of inference requests glintd holds at once, bounded by glintd
// itself rather than by gRPC's resource quota alone.
//
// Why: gRPC's memory quota (--grpc_memory_limit) is best-effort. Over it,
// gRPC sometimes answers RESOURCE_EXHAUSTED and sometimes closes the
// connection (UNAVAILABLE), depending on when it notices; clients cannot
// tell "come back later" from "the server went away". Every request that
// reaches a handler is charged here first, so a caller over the budget gets
// RESOURCE_EXHAUSTED at once, naming the budget, whatever gRPC's timing.
// The budget sits below gRPC's quota (glintd checks that), so gRPC's quota
// stays the backstop for bytes still on their way to a handler.
#ifndef GLINT_RUNTIME_SERVER_GRPC_REQUEST_BUDGET_H_
#define GLINT_RUNTIME_SERVER_GRPC_REQUEST_BUDGET_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace glint {

// A byte budget shared by every inference call of glintd (glint.v1
// RunNetwork, the inference protocol's ModelInfer). Thread-safe.
class RequestBudget {
 public:
  // Holds `bytes` of the budget until destroyed. Must not outlive its
  // budget.
  class Charge {
   public:
    ~Charge();
    Charge(const Charge&) = delete;
    Charge& operator=(const Charge&) = delete;
    int64_t bytes() const { return bytes_; }

   private:
    friend class RequestBudget;
    Charge(RequestBudget* budget, int64_t bytes)
        : budget_(budget), bytes_(bytes) {}
    RequestBudget* const budget_;
    const int64_t bytes_;
  };

  // `max_bytes` > 0: the most bytes charged at once. A single request
  // larger than the whole budget is still admitted when nothing else is
  // charged (as gRPC's message limit, not this budget, bounds one request),
  // so that the budget never refuses a request that could never pass.
  explicit RequestBudget(int64_t max_bytes) : max_bytes_(max_bytes) {}
  RequestBudget(const RequestBudget&) = delete;
  RequestBudget& operator=(const RequestBudget&) = delete;

  // Charges `bytes`, or RESOURCE_EXHAUSTED (saying how much is in flight
  // and the limit) when that would pass the budget. Never waits.
  absl::StatusOr<std::unique_ptr<Charge>> TryCharge(int64_t bytes)
      ABSL_LOCKS_EXCLUDED(mu_);

  int64_t max_bytes() const { return max_bytes_; }
  int64_t charged() const ABSL_LOCKS_EXCLUDED(mu_);
  // Requests refused since start.
  int64_t refused() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Release(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);

  const int64_t max_bytes_;
  mutable absl::Mutex mu_;
  int64_t charged_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GRPC_REQUEST_BUDGET_H_
