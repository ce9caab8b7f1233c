#include "devices/compute_engine.h"

#include <atomic>
#include <filesystem>
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

int ThreadCount() {
  int n = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++n;
  }
  return n;
}

TEST(ComputeEngineTest, AnAdoptedThreadRunsItsJobsItselfAndNoEngineThread) {
  const int before = ThreadCount();
  ComputeEngine engine([] { thread_setting = 11; });
  std::thread adopted([&] {
    engine.AdoptThread();
    EXPECT_EQ(thread_setting, 11);  // on_start ran on the adopted thread.
    for (int i = 0; i < 10; ++i) {
      std::thread::id ran_on;
      ASSERT_TRUE(engine
                      .Run(0,
                           [&] {
                             ran_on = std::this_thread::get_id();
                             return absl::OkStatus();
                           })
                      .ok());
      EXPECT_EQ(ran_on, std::this_thread::get_id());
    }
    // The engine's own thread was never needed: only `adopted` is new.
    EXPECT_EQ(ThreadCount(), before + 1);
    EXPECT_EQ(engine
                  .Run(0, [] { return absl::AbortedError("mine"); })
                  .code(),
              absl::StatusCode::kAborted);
  });
  adopted.join();
}

TEST(ComputeEngineTest, AdoptedAndHandedOverJobsShareOneOrder) {
  ComputeEngine engine;
  absl::Notification busy, release;
  // The engine is held by an adopted thread's job.
  std::thread holder([&] {
    engine.AdoptThread();
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
  std::vector<std::thread::id> ran_on(4);
  std::vector<std::thread::id> caller(4);
  std::vector<std::thread> callers;
  // Labels 0 and 2 from adopted threads, 1 and 3 handed over; priorities
  // 1, 5, 5, 1 -> order 1, 2, 0, 3.
  const int priorities[] = {1, 5, 5, 1};
  for (int label = 0; label < 4; ++label) {
    callers.emplace_back([&, label] {
      if (label % 2 == 0) engine.AdoptThread();
      caller[label] = std::this_thread::get_id();
      ASSERT_TRUE(engine
                      .Run(priorities[label],
                           [&] {
                             absl::MutexLock lock(&mu);
                             order.push_back(label);
                             ran_on[label] = std::this_thread::get_id();
                             return absl::OkStatus();
                           })
                      .ok());
    });
    while (engine.waiting() != label + 1) std::this_thread::yield();
  }
  release.Notify();
  holder.join();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 0, 3}));
  for (int label = 0; label < 4; ++label) {
    if (label % 2 == 0) {
      EXPECT_EQ(ran_on[label], caller[label]) << label;
    } else {
      EXPECT_NE(ran_on[label], caller[label]) << label;
    }
  }
  EXPECT_EQ(ran_on[1], ran_on[3]);  // The engine's one thread.
  EXPECT_EQ(engine.waiting(), 0);
}

TEST(ComputeEngineTest, ManyAdoptedAndHandedOverCallersNeverOverlap) {
  ComputeEngine engine;
  constexpr int kCallers = 6, kJobs = 200;
  std::atomic<int> running{0};
  std::atomic<int> overlaps{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      if (c % 2 == 0) engine.AdoptThread();
      for (int i = 0; i < kJobs; ++i) {
        ASSERT_TRUE(engine
                        .Run(c % 3,
                             [&] {
                               if (running.fetch_add(1) != 0) ++overlaps;
                               running.fetch_sub(1);
                               return absl::OkStatus();
                             })
                        .ok());
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(overlaps.load(), 0);
}

}  // namespace
}  // namespace glint
