// Serving statistics of one network (api/types.h NetworkStatistics), as
// HostManager records them on the run path.
//
// Recording is lock-free (a few relaxed atomic operations per series) so
// that it costs a run next to nothing; a snapshot reads the series while
// runs go on, and may mix a run's figures in one series with the previous
// run's in another (each series is consistent on its own, its count and
// total up to a run in progress).
#ifndef GLINT_RUNTIME_STATISTICS_H_
#define GLINT_RUNTIME_STATISTICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/types.h"

namespace glint {

// A monotonic clock for durations (absl::Now() may step).
absl::Duration MonotonicNow();

// A series of durations: count and total since it began, and p50/p99 over
// the most recent kWindow values (a ring: the quantiles follow the load as
// it changes, and cost a fixed 8 KiB per series).
//
// Thread-safe; Record is lock-free.
class DurationSeries {
 public:
  static constexpr int kWindow = 1024;

  DurationSeries();
  DurationSeries(const DurationSeries&) = delete;
  DurationSeries& operator=(const DurationSeries&) = delete;

  // Negative durations (a clock that went back) count as 0.
  void Record(absl::Duration duration);
  // Quantiles by nearest rank over the values in the window; 0 while empty.
  DurationStats Snapshot() const;

 private:
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> total_ns_{0};
  // kWindow slots written round-robin (slot = count % kWindow); -1 while a
  // slot was never written.
  std::array<std::atomic<int64_t>, kWindow> recent_;
};

// One network's statistics since it was added. Thread-safe: every method may
// be called concurrently; the record methods are lock-free but for a
// partition count that grew (a re-provisioned plan with more partitions).
class NetworkStatsRecorder {
 public:
  NetworkStatsRecorder() = default;
  NetworkStatsRecorder(const NetworkStatsRecorder&) = delete;
  NetworkStatsRecorder& operator=(const NetworkStatsRecorder&) = delete;

  // A request answered OK: `request` from the call to the answer, `queue`
  // its wait for admission (and for a batch), and where its execution's
  // time went on the devices: input, compute and output phases summed over
  // the execution's streams, and each partition's launch (indexed as the
  // plan's partitions; may be empty). With dynamic batching every request
  // of a batch records its batch's phases, as Triton does.
  struct Success {
    absl::Duration request;
    absl::Duration queue;
    absl::Duration compute_input;
    absl::Duration compute_infer;
    absl::Duration compute_output;
    std::vector<int64_t> partition_ns;
  };
  void RecordSuccess(const Success& success);
  // A request that failed anywhere after its network was found (bad
  // inputs, refused admission, a failed run), `request` from the call to
  // the answer.
  void RecordFailure(absl::Duration request);
  // One execution of the network that succeeded (with dynamic batching,
  // one per batch).
  void RecordExecution();
  // A run (with dynamic batching, a batch) that waited `waited` in the
  // admission queue with its plan's execution slots all taken.
  void RecordSlotWait(absl::Duration waited) { slot_wait_.Record(waited); }

  // Gauges: runs waiting for admission, runs admitted and not finished.
  void AddQueued(int delta) { queue_depth_.fetch_add(delta); }
  void AddInFlight(int delta) { in_flight_.fetch_add(delta); }

  // The statistics now. `info` names the network and its partitions (their
  // names and replica 0's devices).
  NetworkStatistics Snapshot(const NetworkInfo& info) const;

 private:
  void TouchLastInference();

  std::atomic<uint64_t> success_count_{0};
  std::atomic<uint64_t> failure_count_{0};
  std::atomic<uint64_t> execution_count_{0};
  std::atomic<int64_t> last_inference_ns_{0};  // Unix ns; 0: never.
  std::atomic<int> queue_depth_{0};
  std::atomic<int> in_flight_{0};
  DurationSeries request_;
  DurationSeries failed_;
  DurationSeries queue_;
  DurationSeries compute_input_;
  DurationSeries compute_infer_;
  DurationSeries compute_output_;
  DurationSeries slot_wait_;

  // Only grows: recording takes it shared, a larger plan exclusively once.
  mutable absl::Mutex partitions_mu_;
  std::vector<std::unique_ptr<DurationSeries>> partitions_
      ABSL_GUARDED_BY(partitions_mu_);
};

// Each device's compute: the launches of the partitions placed on it, by
// DeviceManager::id(). The devices are fixed at construction.
// Thread-safe; Record is lock-free.
class DeviceComputeStats {
 public:
  explicit DeviceComputeStats(const std::vector<int>& device_ids);
  DeviceComputeStats(const DeviceComputeStats&) = delete;
  DeviceComputeStats& operator=(const DeviceComputeStats&) = delete;

  // Adds partition i's launch, partition_ns[i], to the series of device
  // partition_device[i] (see RunTimings); an unknown id is ignored.
  void Record(const std::vector<int>& partition_device,
              const std::vector<int64_t>& partition_ns);
  // Empty stats for an unknown id.
  DurationStats Snapshot(int device_id) const;

 private:
  absl::flat_hash_map<int, std::unique_ptr<DurationSeries>> series_;
};

}  // namespace glint

#endif  // GLINT_RUNTIME_STATISTICS_H_
