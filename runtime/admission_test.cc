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


// A network's execution slots: no more of its runs at once than its plan
// has reserved, the others wait; a run of another network (or of none)
// starts meanwhile, whatever their order of arrival or priority.
TEST(AdmissionQueueTest, ExecutionSlotsBoundEachNetworkApart) {
  AdmissionQueue queue(Options(8, 16, 1000));
  Log log;
  int a_key = 0, b_key = 0;
  const ExecutionSlots a{&a_key, 2}, b{&b_key, 1};
  bool waits = true;
  ASSERT_TRUE(queue.Admit(0, a, log.Run("a1"), &waits).ok());
  EXPECT_FALSE(waits);
  ASSERT_TRUE(queue.Admit(0, a, log.Run("a2"), &waits).ok());
  EXPECT_FALSE(waits);
  ASSERT_TRUE(queue.Admit(5, a, log.Run("a3"), &waits).ok());  // Waits.
  EXPECT_TRUE(waits);
  ASSERT_TRUE(queue.Admit(0, b, log.Run("b1"), &waits).ok());
  EXPECT_FALSE(waits);
  ASSERT_TRUE(queue.Admit(9, b, log.Run("b2"), &waits).ok());  // Waits.
  EXPECT_TRUE(waits);
  ASSERT_TRUE(queue.Admit(0, log.Run("plain")).ok());
  EXPECT_EQ(log.events,
            (std::vector<std::string>{"a1", "a2", "b1", "plain"}));
  EXPECT_EQ(queue.active(), 4);
  EXPECT_EQ(queue.queued(), 2u);
  EXPECT_EQ(queue.executing(&a_key), 2);
  EXPECT_EQ(queue.executing(&b_key), 1);
  // The plain run's end frees no slot of a or b: nobody starts.
  queue.Release();
  EXPECT_EQ(log.events.size(), 4u);
  // One of a's ends: a3 takes its slot, though b2 is more urgent.
  queue.Release(&a_key);
  EXPECT_EQ(log.events.back(), "a3");
  queue.Release(&b_key);
  EXPECT_EQ(log.events.back(), "b2");
  for (int i = 0; i < 2; ++i) queue.Release(&a_key);
  queue.Release(&b_key);
  EXPECT_EQ(queue.active(), 0);
  EXPECT_EQ(queue.executing(&a_key), 0);
  EXPECT_EQ(queue.queued(), 0u);
}

// Among runs that can start, priority and age decide as always; a run
// waiting for its network's slot counts in max_queue_size, and Shutdown
// refuses it.
TEST(AdmissionQueueTest, SlotWaitersFollowThePriorityOrderAndTheLimits) {
  AdmissionQueue queue(Options(1, 3, 1000));
  Log log;
  int key = 0;
  const ExecutionSlots one{&key, 1};
  ASSERT_TRUE(queue.Admit(0, one, log.Run("n1")).ok());
  ASSERT_TRUE(queue.Admit(0, one, log.Run("n2")).ok());  // Its slot.
  ASSERT_TRUE(queue.Admit(1, log.Run("p1")).ok());       // max_active.
  ASSERT_TRUE(queue.Admit(0, one, log.Run("n3")).ok());
  EXPECT_EQ(queue.Admit(0, log.Run("p2")).code(),
            absl::StatusCode::kResourceExhausted);
  // n1 ends: both n2 and p1 could start; p1 is more urgent. One active
  // slot: only p1 starts.
  queue.Release(&key);
  EXPECT_EQ(log.events, (std::vector<std::string>{"n1", "p1"}));
  queue.Release();  // p1 ends: n2 starts.
  EXPECT_EQ(log.events.back(), "n2");
  queue.Shutdown();  // n3 is refused.
  EXPECT_EQ(log.events.back(), "refused n3");
  queue.Release(&key);
  EXPECT_EQ(queue.active(), 0);
  EXPECT_EQ(queue.executing(&key), 0);
}

}  // namespace
}  // namespace glint
