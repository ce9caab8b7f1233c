#include "devices/compute_engine.h"

#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

TEST(ComputeEngineTest, RunsJobsOnOneThreadOfItsOwnAndReturnsTheirStatus) {
  ComputeEngine engine;
  std::thread::id first;
  ASSERT_TRUE(engine
                  .Run(0,
                       [&] {
                         first = std::this_thread::get_id();
                         return absl::OkStatus();
                       })
                  .ok());
  EXPECT_NE(first, std::this_thread::get_id());

  std::thread::id from_other_caller;
  std::thread caller([&] {
    EXPECT_EQ(engine.Run(0,
                         [&] {
                           from_other_caller = std::this_thread::get_id();
                           return absl::DataLossError("bad");
                         })
                  .code(),
              absl::StatusCode::kDataLoss);
  });
  caller.join();
  EXPECT_EQ(from_other_caller, first);
}

thread_local int thread_setting = 0;

TEST(ComputeEngineTest, OnStartRunsOnTheEngineThreadBeforeAnyJob) {
  std::thread::id started_on;
  ComputeEngine engine([&] {
    started_on = std::this_thread::get_id();
    thread_setting = 7;
  });
  int seen = 0;
  std::thread::id ran_on;
  ASSERT_TRUE(engine
                  .Run(0,
                       [&] {
                         seen = thread_setting;
                         ran_on = std::this_thread::get_id();
                         return absl::OkStatus();
                       })
                  .ok());
  EXPECT_EQ(seen, 7);
  EXPECT_EQ(ran_on, started_on);
  EXPECT_EQ(thread_setting, 0);  // The caller's own copy is untouched.
}

TEST(ComputeEngineTest, WaitingJobsRunMostUrgentFirstThenInArrivalOrder) {
  ComputeEngine engine;
  absl::Notification busy, release;
  std::thread blocker([&] {
    ASSERT_TRUE(engine
                    .Run(0,
                         [&] {
                           busy.Notify();
                           release.WaitForNotification();
                           return absl::OkStatus();
                         })
                    .ok());
  });
  busy.WaitForNotification();

  absl::Mutex mu;
  std::vector<int> order;  // Guarded by mu.
  std::vector<std::thread> callers;
  // Queued one at a time (each waits until the previous is queued), so
  // arrival order is known: priorities 1, 5, 1, 5 -> labels 1, 3, 0, 2.
  const int priorities[] = {1, 5, 1, 5};
  for (int label = 0; label < 4; ++label) {
    callers.emplace_back([&, label] {
      ASSERT_TRUE(engine
                      .Run(priorities[label],
                           [&] {
                             absl::MutexLock lock(&mu);
                             order.push_back(label);
                             return absl::OkStatus();
                           })
                      .ok());
    });
    while (engine.waiting() != label + 1) std::this_thread::yield();
  }
  release.Notify();
  blocker.join();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(order, (std::vector<int>{1, 3, 0, 2}));
  EXPECT_EQ(engine.waiting(), 0);
}

TEST(ComputeEngineTest, ManyCallersEachGetTheirOwnResult) {
  ComputeEngine engine;
  constexpr int kCallers = 8, kJobs = 50;
  std::vector<std::thread> callers;
  std::vector<int> sums(kCallers, 0);
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int i = 0; i < kJobs; ++i) {
        const absl::Status s = engine.Run(c % 3, [&] {
          sums[c] += i;
          return i % 7 == 0 ? absl::InternalError("x") : absl::OkStatus();
        });
        EXPECT_EQ(s.ok(), i % 7 != 0);
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) {
    EXPECT_EQ(sums[c], kJobs * (kJobs - 1) / 2);
  }
}

}  // namespace
}  // namespace glint
