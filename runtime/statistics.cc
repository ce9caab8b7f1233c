#include "runtime/statistics.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace glint {

absl::Duration MonotonicNow() {
  return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

DurationSeries::DurationSeries() {
  for (std::atomic<int64_t>& slot : recent_) {
    slot.store(-1, std::memory_order_relaxed);
  }
}

void DurationSeries::Record(absl::Duration duration) {
  const int64_t ns = std::max<int64_t>(0, absl::ToInt64Nanoseconds(duration));
  const uint64_t n = count_.fetch_add(1, std::memory_order_relaxed);
  total_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
  recent_[n % kWindow].store(ns, std::memory_order_relaxed);
}

DurationStats DurationSeries::Snapshot() const {
  DurationStats stats;
  stats.count = count_.load(std::memory_order_relaxed);
  stats.total_ns = total_ns_.load(std::memory_order_relaxed);
  std::vector<int64_t> values;
  values.reserve(kWindow);
  for (const std::atomic<int64_t>& slot : recent_) {
    const int64_t ns = slot.load(std::memory_order_relaxed);
    if (ns >= 0) values.push_back(ns);
  }
  if (values.empty()) return stats;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least q of the values at or
  // below it.
  auto quantile = [&values](double q) {
    size_t rank = static_cast<size_t>(std::ceil(q * values.size()));
    rank = std::min(std::max<size_t>(rank, 1), values.size());
    return static_cast<double>(values[rank - 1]) / 1000.0;
  };
  stats.p50_us = quantile(0.50);
  stats.p99_us = quantile(0.99);
  return stats;
}

void NetworkStatsRecorder::TouchLastInference() {
  last_inference_ns_.store(absl::ToUnixNanos(absl::Now()),
                           std::memory_order_relaxed);
}

void NetworkStatsRecorder::RecordSuccess(const Success& success) {
  success_count_.fetch_add(1, std::memory_order_relaxed);
  request_.Record(success.request);
  queue_.Record(success.queue);
  compute_input_.Record(success.compute_input);
  compute_infer_.Record(success.compute_infer);
  compute_output_.Record(success.compute_output);
  const size_t n = success.partition_ns.size();
  bool recorded = false;
  {
    absl::ReaderMutexLock lock(&partitions_mu_);
    // The vector is only read here; the series record on their own.
    const std::vector<std::unique_ptr<DurationSeries>>& series = partitions_;
    if (series.size() >= n) {
      for (size_t i = 0; i < n; ++i) {
        series[i]->Record(absl::Nanoseconds(success.partition_ns[i]));
      }
      recorded = true;
    }
  }
  if (!recorded) {
    absl::MutexLock lock(&partitions_mu_);
    while (partitions_.size() < n) {
      partitions_.push_back(std::make_unique<DurationSeries>());
    }
    for (size_t i = 0; i < n; ++i) {
      partitions_[i]->Record(absl::Nanoseconds(success.partition_ns[i]));
    }
  }
  TouchLastInference();
}

void NetworkStatsRecorder::RecordFailure(absl::Duration request) {
  failure_count_.fetch_add(1, std::memory_order_relaxed);
  failed_.Record(request);
  TouchLastInference();
}

void NetworkStatsRecorder::RecordExecution() {
  execution_count_.fetch_add(1, std::memory_order_relaxed);
}

NetworkStatistics NetworkStatsRecorder::Snapshot(
    const NetworkInfo& info) const {
  NetworkStatistics stats;
  stats.name = info.name;
  stats.success_count = success_count_.load(std::memory_order_relaxed);
  stats.failure_count = failure_count_.load(std::memory_order_relaxed);
  stats.inference_count = stats.success_count + stats.failure_count;
  stats.execution_count = execution_count_.load(std::memory_order_relaxed);
  const int64_t last = last_inference_ns_.load(std::memory_order_relaxed);
  stats.last_inference = absl::FromUnixNanos(last);
  stats.request = request_.Snapshot();
  stats.failed = failed_.Snapshot();
  stats.queue = queue_.Snapshot();
  stats.compute_input = compute_input_.Snapshot();
  stats.compute_infer = compute_infer_.Snapshot();
  stats.compute_output = compute_output_.Snapshot();
  stats.slot_wait = slot_wait_.Snapshot();
  stats.queue_depth = std::max(0, queue_depth_.load());
  stats.in_flight = std::max(0, in_flight_.load());
  absl::ReaderMutexLock lock(&partitions_mu_);
  for (size_t i = 0; i < info.partitions.size(); ++i) {
    PartitionStatistics p;
    p.name = info.partitions[i].name;
    p.device_name = info.partitions[i].device_name;
    if (i < partitions_.size()) p.compute = partitions_[i]->Snapshot();
    stats.partitions.push_back(std::move(p));
  }
  return stats;
}

DeviceComputeStats::DeviceComputeStats(const std::vector<int>& device_ids) {
  for (int id : device_ids) series_[id] = std::make_unique<DurationSeries>();
}

void DeviceComputeStats::Record(const std::vector<int>& partition_device,
                                const std::vector<int64_t>& partition_ns) {
  for (size_t i = 0; i < partition_device.size() && i < partition_ns.size();
       ++i) {
    auto series = series_.find(partition_device[i]);
    if (series != series_.end()) {
      series->second->Record(absl::Nanoseconds(partition_ns[i]));
    }
  }
}

DurationStats DeviceComputeStats::Snapshot(int device_id) const {
  auto series = series_.find(device_id);
  return series == series_.end() ? DurationStats{}
                                 : series->second->Snapshot();
}

}  // namespace glint
