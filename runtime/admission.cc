#include "runtime/admission.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace glint {

AdmissionQueue::AdmissionQueue(AdmissionOptions options)
    : options_(options) {}

absl::Status AdmissionQueue::Admit(int priority, ExecutionSlots slots,
                                   Start start, bool* waits_for_slot) {
  if (waits_for_slot != nullptr) *waits_for_slot = false;
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      return absl::UnavailableError("the host manager is shutting down");
    }
    auto [it, added] = pools_.try_emplace(slots.key);
    Pool& pool = it->second;
    if (added) pool.capacity = slots.key == nullptr ? 0 : slots.capacity;
    // Runs already waiting here wait for what this one would need: the
    // queue has them go first.
    if (active_ >= options_.max_active || !pool.Free() ||
        !pool.pending.empty()) {
      if (static_cast<int>(pending_size_) >= options_.max_queue_size) {
        MaybeErase(slots.key);
        return absl::ResourceExhaustedError(absl::StrCat(
            "too many requests: ", active_, " running and ", pending_size_,
            " queued (max_queue_size)"));
      }
      if (waits_for_slot != nullptr) *waits_for_slot = !pool.Free();
      pool.pending[priority].push_back(
          {std::move(start), next_seq_++, admitted_});
      ++pending_size_;
      return absl::OkStatus();
    }
    ++active_;
    ++pool.in_use;
  }
  start(true);
  return absl::OkStatus();
}

AdmissionQueue::Start AdmissionQueue::PopNext() {
  if (active_ >= options_.max_active) return nullptr;
  // The head of each FIFO is its oldest, hence most aged, run: the best of
  // the heads of the pools with a free slot is the best run that can
  // start. Few networks and priorities wait at once in practice; at worst
  // this scans max_queue_size heads.
  Pool* best_pool = nullptr;
  std::map<int, std::deque<Queued>>::iterator best;
  int64_t best_rank = 0;
  uint64_t best_seq = 0;
  for (auto& [key, pool] : pools_) {
    if (!pool.Free()) continue;
    for (auto it = pool.pending.begin(); it != pool.pending.end(); ++it) {
      const Queued& head = it->second.front();
      const int64_t rank =
          static_cast<int64_t>(it->first) +
          static_cast<int64_t>((admitted_ - head.enqueued) /
                               static_cast<uint64_t>(options_.priority_aging));
      if (best_pool == nullptr || rank > best_rank ||
          (rank == best_rank && head.seq < best_seq)) {
        best_pool = &pool;
        best = it;
        best_rank = rank;
        best_seq = head.seq;
      }
    }
  }
  if (best_pool == nullptr) return nullptr;
  Start next = std::move(best->second.front().start);
  best->second.pop_front();
  if (best->second.empty()) best_pool->pending.erase(best);
  --pending_size_;
  ++admitted_;
  ++active_;
  ++best_pool->in_use;
  return next;
}

void AdmissionQueue::MaybeErase(const void* key) {
  auto it = pools_.find(key);
  if (it != pools_.end() && it->second.in_use == 0 &&
      it->second.pending.empty()) {
    pools_.erase(it);
  }
}

void AdmissionQueue::Release(const void* slots_key) {
  std::vector<Start> next;
  {
    absl::MutexLock lock(&mu_);
    --active_;
    auto it = pools_.find(slots_key);
    if (it != pools_.end()) {
      --it->second.in_use;
      MaybeErase(slots_key);
    }
    if (shut_down_) return;
    // One slot freed starts one run, but a run that could not start for
    // its pool while another pool's could is looked at again each time.
    while (Start start = PopNext()) next.push_back(std::move(start));
  }
  for (Start& start : next) start(true);
}

void AdmissionQueue::Shutdown() {
  std::vector<Start> refused;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    for (auto it = pools_.begin(); it != pools_.end();) {
      for (auto& [priority, queue] : it->second.pending) {
        for (Queued& run : queue) refused.push_back(std::move(run.start));
      }
      it->second.pending.clear();
      if (it->second.in_use == 0) {
        it = pools_.erase(it);
      } else {
        ++it;
      }
    }
    pending_size_ = 0;
  }
  for (Start& start : refused) start(false);
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

int AdmissionQueue::executing(const void* key) const {
  absl::MutexLock lock(&mu_);
  auto it = pools_.find(key);
  return it == pools_.end() ? 0 : it->second.in_use;
}

}  // namespace glint
