#include "runtime/admission.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace glint {

AdmissionQueue::AdmissionQueue(AdmissionOptions options)
    : options_(options) {}

absl::Status AdmissionQueue::Admit(int priority, Start start) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      return absl::UnavailableError("the host manager is shutting down");
    }
    if (active_ >= options_.max_active) {
      if (static_cast<int>(pending_size_) >= options_.max_queue_size) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "too many requests: ", active_, " running and ", pending_size_,
            " queued (max_queue_size)"));
      }
      pending_[priority].push_back({std::move(start), next_seq_++, admitted_});
      ++pending_size_;
      return absl::OkStatus();
    }
    ++active_;
  }
  start(true);
  return absl::OkStatus();
}

AdmissionQueue::Start AdmissionQueue::PopNext() {
  // The head of each priority's FIFO is its oldest, hence most aged, run:
  // the best of the heads is the best of all. Few distinct priorities wait
  // at once in practice; at worst this scans max_queue_size heads.
  auto best = pending_.end();
  int64_t best_rank = 0;
  uint64_t best_seq = 0;
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    const Queued& head = it->second.front();
    const int64_t rank =
        static_cast<int64_t>(it->first) +
        static_cast<int64_t>((admitted_ - head.enqueued) /
                             static_cast<uint64_t>(options_.priority_aging));
    if (best == pending_.end() || rank > best_rank ||
        (rank == best_rank && head.seq < best_seq)) {
      best = it;
      best_rank = rank;
      best_seq = head.seq;
    }
  }
  Start next = std::move(best->second.front().start);
  best->second.pop_front();
  if (best->second.empty()) pending_.erase(best);
  --pending_size_;
  ++admitted_;
  return next;
}

void AdmissionQueue::Release() {
  Start next;
  {
    absl::MutexLock lock(&mu_);
    --active_;
    if (pending_size_ == 0 || shut_down_) return;
    next = PopNext();
    ++active_;
  }
  next(true);
}

void AdmissionQueue::Shutdown() {
  std::map<int, std::deque<Queued>> refused;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    refused.swap(pending_);
    pending_size_ = 0;
  }
  for (auto& [priority, queue] : refused) {
    for (Queued& run : queue) run.start(false);
  }
}

void AdmissionQueue::WaitIdle() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* active) { return *active == 0; }, &active_));
}

int AdmissionQueue::active() const {
  absl::MutexLock lock(&mu_);
  return active_;
}

size_t AdmissionQueue::queued() const {
  absl::MutexLock lock(&mu_);
  return pending_size_;
}

}  // namespace glint
