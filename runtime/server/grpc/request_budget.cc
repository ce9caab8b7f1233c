#include "runtime/server/grpc/request_budget.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace glint {

RequestBudget::Charge::~Charge() { budget_->Release(bytes_); }

absl::StatusOr<std::unique_ptr<RequestBudget::Charge>> RequestBudget::TryCharge(
    int64_t bytes) {
  if (bytes < 0) bytes = 0;
  absl::MutexLock lock(&mu_);
  if (charged_ > 0 && bytes > max_bytes_ - charged_) {
    ++refused_;
    return absl::ResourceExhaustedError(absl::StrCat(
        "glintd holds ", charged_, " bytes of requests in flight; this one (",
        bytes, " bytes) would pass --max_request_bytes_in_flight=", max_bytes_,
        ": retry later"));
  }
  charged_ += bytes;
  return std::unique_ptr<Charge>(new Charge(this, bytes));
}

void RequestBudget::Release(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  charged_ -= bytes;
}

int64_t RequestBudget::charged() const {
  absl::MutexLock lock(&mu_);
  return charged_;
}

int64_t RequestBudget::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

}  // namespace glint
