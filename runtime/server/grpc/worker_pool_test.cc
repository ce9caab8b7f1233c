#include "runtime/server/grpc/worker_pool.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

TEST(WorkerPoolTest, RunsEveryTaskBeforeShutdownReturns) {
  WorkerPoolOptions options;
  options.threads = 3;
  options.max_queued = 100;
  std::atomic<int> ran{0};
  {
    WorkerPool pool(options);
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(pool.Schedule([&ran] { ran.fetch_add(1); }).ok());
    }
    pool.Shutdown();
    EXPECT_EQ(ran.load(), 100);
    EXPECT_EQ(pool.Schedule([&ran] { ran.fetch_add(1); }).code(),
              absl::StatusCode::kUnavailable);
  }
  EXPECT_EQ(ran.load(), 100);
}

// One thread busy, two tasks waiting: a third is refused at once and never
// runs; the waiting ones run once the thread is free.
TEST(WorkerPoolTest, FullQueueIsResourceExhaustedAtOnce) {
  WorkerPoolOptions options;
  options.threads = 1;
  options.max_queued = 2;
  WorkerPool pool(options);
  absl::Notification started, release;
  ASSERT_TRUE(pool.Schedule([&] {
                    started.Notify();
                    release.WaitForNotification();
                  })
                  .ok());
  started.WaitForNotification();
  std::atomic<int> ran{0};
  EXPECT_TRUE(pool.Schedule([&ran] { ran.fetch_add(1); }).ok());
  EXPECT_TRUE(pool.Schedule([&ran] { ran.fetch_add(1); }).ok());
  const absl::Status refused = pool.Schedule([&ran] { ran.fetch_add(100); });
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  release.Notify();
  pool.Shutdown();
  EXPECT_EQ(ran.load(), 2);
}

TEST(WorkerPoolTest, ValidateRefusesNonsense) {
  WorkerPoolOptions options;
  EXPECT_TRUE(WorkerPool::Validate(options).ok());
  options.threads = 0;
  EXPECT_EQ(WorkerPool::Validate(options).code(),
            absl::StatusCode::kInvalidArgument);
  options.threads = 1;
  options.max_queued = -1;
  EXPECT_EQ(WorkerPool::Validate(options).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint
