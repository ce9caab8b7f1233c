#include "runtime/statistics.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace glint {
namespace {

TEST(DurationSeriesTest, EmptyIsAllZero) {
  DurationSeries series;
  const DurationStats stats = series.Snapshot();
  EXPECT_EQ(stats.count, 0u);
  EXPECT_EQ(stats.total_ns, 0u);
  EXPECT_EQ(stats.p50_us, 0);
  EXPECT_EQ(stats.p99_us, 0);
}

TEST(DurationSeriesTest, CountTotalAndNearestRankQuantiles) {
  DurationSeries series;
  // 1..100 ms, out of order.
  for (int i = 100; i >= 1; --i) series.Record(absl::Milliseconds(i));
  const DurationStats stats = series.Snapshot();
  EXPECT_EQ(stats.count, 100u);
  EXPECT_EQ(stats.total_ns, uint64_t{5050} * 1000 * 1000);
  EXPECT_EQ(stats.p50_us, 50 * 1000);
  EXPECT_EQ(stats.p99_us, 99 * 1000);
}

TEST(DurationSeriesTest, QuantilesFollowTheRecentValues) {
  DurationSeries series;
  for (int i = 0; i < 1000; ++i) series.Record(absl::Milliseconds(1));
  for (int i = 0; i < DurationSeries::kWindow; ++i) {
    series.Record(absl::Microseconds(7));
  }
  const DurationStats stats = series.Snapshot();
  EXPECT_EQ(stats.count, 1000u + DurationSeries::kWindow);
  EXPECT_EQ(stats.total_ns,
            uint64_t{1000} * 1000 * 1000 + DurationSeries::kWindow * 7000u);
  EXPECT_EQ(stats.p50_us, 7);
  EXPECT_EQ(stats.p99_us, 7);
}

TEST(DurationSeriesTest, NegativeDurationsCountAsZero) {
  DurationSeries series;
  series.Record(absl::Milliseconds(-3));
  const DurationStats stats = series.Snapshot();
  EXPECT_EQ(stats.count, 1u);
  EXPECT_EQ(stats.total_ns, 0u);
  EXPECT_EQ(stats.p99_us, 0);
}

TEST(DurationSeriesTest, ConcurrentRecordsAreAllCounted) {
  DurationSeries series;
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&series, t] {
      for (int i = 0; i < kEach; ++i) {
        series.Record(absl::Nanoseconds(t + 1));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const DurationStats stats = series.Snapshot();
  EXPECT_EQ(stats.count, static_cast<uint64_t>(kThreads) * kEach);
  EXPECT_EQ(stats.total_ns, static_cast<uint64_t>(kEach) * (1 + 2 + 3 + 4));
}

NetworkInfo TwoPartitions() {
  NetworkInfo info;
  info.name = "net";
  info.partitions.resize(2);
  info.partitions[0].name = "p0";
  info.partitions[0].device_name = "sim:0";
  info.partitions[1].name = "p1";
  info.partitions[1].device_name = "sim:1";
  return info;
}

TEST(NetworkStatsRecorderTest, CountsAndSeries) {
  NetworkStatsRecorder recorder;
  const NetworkInfo info = TwoPartitions();
  NetworkStatistics stats = recorder.Snapshot(info);
  EXPECT_EQ(stats.name, "net");
  EXPECT_EQ(stats.last_inference, absl::UnixEpoch());
  ASSERT_EQ(stats.partitions.size(), 2u);
  EXPECT_EQ(stats.partitions[1].device_name, "sim:1");
  EXPECT_EQ(stats.partitions[1].compute.count, 0u);

  const absl::Time before = absl::Now();
  NetworkStatsRecorder::Success success;
  success.request = absl::Milliseconds(10);
  success.queue = absl::Milliseconds(1);
  success.compute_input = absl::Milliseconds(2);
  success.compute_infer = absl::Milliseconds(5);
  success.compute_output = absl::Milliseconds(1);
  success.partition_ns = {2000000, 3000000};
  for (int i = 0; i < 3; ++i) {
    recorder.RecordExecution();
    recorder.RecordSuccess(success);
  }
  recorder.RecordFailure(absl::Milliseconds(4));

  stats = recorder.Snapshot(info);
  EXPECT_EQ(stats.success_count, 3u);
  EXPECT_EQ(stats.failure_count, 1u);
  EXPECT_EQ(stats.inference_count, 4u);
  EXPECT_EQ(stats.execution_count, 3u);
  EXPECT_GE(stats.last_inference, before);
  EXPECT_EQ(stats.request.count, 3u);
  EXPECT_EQ(stats.request.total_ns, 30000000u);
  EXPECT_EQ(stats.failed.count, 1u);
  EXPECT_EQ(stats.failed.p50_us, 4000);
  EXPECT_EQ(stats.queue.total_ns, 3000000u);
  EXPECT_EQ(stats.compute_input.total_ns, 6000000u);
  EXPECT_EQ(stats.compute_infer.p99_us, 5000);
  EXPECT_EQ(stats.compute_output.count, 3u);
  EXPECT_EQ(stats.partitions[0].compute.total_ns, 6000000u);
  EXPECT_EQ(stats.partitions[1].compute.p50_us, 3000);
}

TEST(NetworkStatsRecorderTest, GaugesAndAGrowingPlan) {
  NetworkStatsRecorder recorder;
  recorder.AddQueued(2);
  recorder.AddInFlight(1);
  NetworkInfo info = TwoPartitions();
  NetworkStatistics stats = recorder.Snapshot(info);
  EXPECT_EQ(stats.queue_depth, 2);
  EXPECT_EQ(stats.in_flight, 1);
  recorder.AddQueued(-2);
  recorder.AddInFlight(-1);

  // A plan of one partition, then (re-provisioned) of three.
  NetworkStatsRecorder::Success one;
  one.partition_ns = {1000};
  recorder.RecordSuccess(one);
  NetworkStatsRecorder::Success three;
  three.partition_ns = {1000, 2000, 3000};
  recorder.RecordSuccess(three);
  info.partitions.resize(3);
  stats = recorder.Snapshot(info);
  EXPECT_EQ(stats.queue_depth, 0);
  EXPECT_EQ(stats.in_flight, 0);
  ASSERT_EQ(stats.partitions.size(), 3u);
  EXPECT_EQ(stats.partitions[0].compute.count, 2u);
  EXPECT_EQ(stats.partitions[2].compute.count, 1u);
  EXPECT_EQ(stats.partitions[2].compute.total_ns, 3000u);
}

}  // namespace
}  // namespace glint
