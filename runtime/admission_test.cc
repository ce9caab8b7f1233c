#include "runtime/admission.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace glint {
namespace {

// Records the order in which runs start (or are refused).
struct Log {
  std::vector<std::string> events;
  AdmissionQueue::Start Run(std::string name) {
    return [this, name](bool admitted) {
      events.push_back(admitted ? name : "refused " + name);
    };
  }
};

AdmissionOptions Options(int max_active, int max_queue, int aging) {
  AdmissionOptions options;
  options.max_active = max_active;
  options.max_queue_size = max_queue;
  options.priority_aging = aging;
  return options;
}

TEST(AdmissionQueueTest, RunsStartAtOnceBelowMaxActive) {
  AdmissionQueue queue(Options(2, 4, 16));
  Log log;
  ASSERT_TRUE(queue.Admit(0, log.Run("a")).ok());
  ASSERT_TRUE(queue.Admit(0, log.Run("b")).ok());
  EXPECT_EQ(log.events, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(queue.active(), 2);
  ASSERT_TRUE(queue.Admit(0, log.Run("c")).ok());
  EXPECT_EQ(log.events.size(), 2u);  // c waits.
  EXPECT_EQ(queue.queued(), 1u);
  queue.Release();  // a ends; c takes its slot.
  EXPECT_EQ(log.events.back(), "c");
  EXPECT_EQ(queue.active(), 2);
  EXPECT_EQ(queue.queued(), 0u);
}

TEST(AdmissionQueueTest, AFullQueueRefusesWithoutCallingTheRun) {
  AdmissionQueue queue(Options(1, 1, 16));
  Log log;
  ASSERT_TRUE(queue.Admit(0, log.Run("a")).ok());
  ASSERT_TRUE(queue.Admit(0, log.Run("b")).ok());
  const absl::Status full = queue.Admit(0, log.Run("c"));
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("max_queue_size"), absl::string_view::npos);
  queue.Release();
  queue.Release();
  EXPECT_EQ(log.events, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(queue.active(), 0);
}

TEST(AdmissionQueueTest, WaitingRunsGoByPriorityThenArrival) {
  AdmissionQueue queue(Options(1, 8, 1000));
  Log log;
  ASSERT_TRUE(queue.Admit(0, log.Run("running")).ok());
  ASSERT_TRUE(queue.Admit(0, log.Run("low1")).ok());
  ASSERT_TRUE(queue.Admit(5, log.Run("high")).ok());
  ASSERT_TRUE(queue.Admit(0, log.Run("low2")).ok());
  ASSERT_TRUE(queue.Admit(1, log.Run("mid")).ok());
  for (int i = 0; i < 4; ++i) queue.Release();
  EXPECT_EQ(log.events, (std::vector<std::string>{"running", "high", "mid",
                                                  "low1", "low2"}));
}

TEST(AdmissionQueueTest, AWaitingRunAgesPastAStreamOfUrgentOnes) {
  // Aging 2: after two admissions from the queue, the low run waiting since
  // before them ranks as the urgent ones and, being older, goes first.
  AdmissionQueue queue(Options(1, 8, 2));
  Log log;
  ASSERT_TRUE(queue.Admit(0, log.Run("running")).ok());
  ASSERT_TRUE(queue.Admit(0, log.Run("low")).ok());
  ASSERT_TRUE(queue.Admit(1, log.Run("urgent1")).ok());
  queue.Release();  // urgent1 (rank 1 against 0).
  ASSERT_TRUE(queue.Admit(1, log.Run("urgent2")).ok());
  queue.Release();  // urgent2 (1 against 0 + 1/2).
  ASSERT_TRUE(queue.Admit(1, log.Run("urgent3")).ok());
  queue.Release();  // low (0 + 2/2 = 1, older than urgent3).
  queue.Release();
  EXPECT_EQ(log.events, (std::vector<std::string>{"running", "urgent1",
                                                  "urgent2", "low",
                                                  "urgent3"}));
}

TEST(AdmissionQueueTest, ShutdownRefusesTheQueuedAndLaterRunsButKeepsSlots) {
  AdmissionQueue queue(Options(1, 8, 16));
  Log log;
  ASSERT_TRUE(queue.Admit(0, log.Run("running")).ok());
  ASSERT_TRUE(queue.Admit(3, log.Run("waiting")).ok());
  queue.Shutdown();
  EXPECT_EQ(log.events,
            (std::vector<std::string>{"running", "refused waiting"}));
  EXPECT_EQ(queue.active(), 1);  // The running one keeps its slot.
  EXPECT_EQ(queue.Admit(0, log.Run("late")).code(),
            absl::StatusCode::kUnavailable);
  queue.Shutdown();  // Idempotent.
  queue.Release();
  queue.WaitIdle();  // Returns: nothing holds a slot.
  EXPECT_EQ(queue.active(), 0);
  EXPECT_EQ(log.events.size(), 2u);
}

TEST(AdmissionQueueTest, AStartMayCallBackIntoTheQueue) {
  // A run that ends at once (its start releases its slot) starts the next
  // one from inside the Release, without the lock held.
  AdmissionQueue queue(Options(1, 8, 16));
  std::vector<int> started;
  AdmissionQueue::Start quick = [&](bool admitted) {
    started.push_back(admitted ? 1 : 0);
    if (admitted && started.size() > 1) queue.Release();
  };
  ASSERT_TRUE(queue.Admit(0, quick).ok());  // Holds the slot.
  ASSERT_TRUE(queue.Admit(0, quick).ok());
  ASSERT_TRUE(queue.Admit(0, quick).ok());
  queue.Release();  // Starts the second, which ends and starts the third.
  EXPECT_EQ(started, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(queue.active(), 0);
  EXPECT_EQ(queue.queued(), 0u);
}

}  // namespace
}  // namespace glint
