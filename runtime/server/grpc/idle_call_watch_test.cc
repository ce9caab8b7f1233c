#include "runtime/server/grpc/idle_call_watch.h"

#include <atomic>
#include <memory>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

// A clock the test moves by hand, and a watch without a thread: each
// CheckNow sees exactly the time the test set.
class IdleCallWatchTest : public ::testing::Test {
 protected:
  IdleCallWatchTest() {
    IdleCallWatchOptions options;
    options.idle_timeout = absl::Seconds(10);
    options.start_thread = false;
    options.clock = [this] { return now_; };
    watch_ = std::make_unique<IdleCallWatch>(std::move(options));
  }

  absl::Time now_ = absl::FromUnixSeconds(1000);
  std::unique_ptr<IdleCallWatch> watch_;
};

TEST_F(IdleCallWatchTest, ACallWaitingLongerThanTheTimeoutIsCancelledOnce) {
  int cancels = 0;
  std::shared_ptr<IdleCallWatch::Call> call = watch_->Watch([&] { ++cancels; });
  call->Waiting();
  now_ += absl::Seconds(10) - absl::Milliseconds(1);
  watch_->CheckNow();
  EXPECT_EQ(cancels, 0);
  EXPECT_FALSE(call->cancelled());
  now_ += absl::Milliseconds(1);
  watch_->CheckNow();
  EXPECT_EQ(cancels, 1);
  EXPECT_TRUE(call->cancelled());
  now_ += absl::Hours(1);
  watch_->CheckNow();
  EXPECT_EQ(cancels, 1);
  EXPECT_EQ(watch_->cancelled(), 1);
  // Watched until it says it is over.
  EXPECT_EQ(watch_->watched(), 1u);
  call->Done();
  watch_->CheckNow();
  EXPECT_EQ(watch_->watched(), 0u);
}

// Time the server spends on what it got is never idle time, and each
// message starts the wait afresh.
TEST_F(IdleCallWatchTest, WorkingAndFreshMessagesKeepACallAlive) {
  int cancels = 0;
  std::shared_ptr<IdleCallWatch::Call> call = watch_->Watch([&] { ++cancels; });
  watch_->CheckNow();  // Not yet waiting: a new call is not idle.
  now_ += absl::Hours(1);
  watch_->CheckNow();
  for (int i = 0; i < 5; ++i) {
    call->Waiting();
    now_ += absl::Seconds(9);
    watch_->CheckNow();
    call->Working();
    now_ += absl::Hours(1);  // A long write or add.
    watch_->CheckNow();
  }
  EXPECT_EQ(cancels, 0);
  EXPECT_FALSE(call->cancelled());
  call->Done();
}

TEST_F(IdleCallWatchTest, ACallThatIsOverIsNeverCancelled) {
  int cancels = 0;
  std::shared_ptr<IdleCallWatch::Call> call = watch_->Watch([&] { ++cancels; });
  call->Waiting();
  call->Done();
  now_ += absl::Hours(1);
  watch_->CheckNow();
  EXPECT_EQ(cancels, 0);
  EXPECT_EQ(watch_->watched(), 0u);
  EXPECT_EQ(watch_->cancelled(), 0);
}

// With its thread, the watch cancels a quiet call on its own.
TEST(IdleCallWatchThreadTest, TheThreadCancelsAQuietCall) {
  IdleCallWatchOptions options;
  options.idle_timeout = absl::Milliseconds(20);
  options.check_interval = absl::Milliseconds(5);
  IdleCallWatch watch(options);
  absl::Notification cancelled;
  std::shared_ptr<IdleCallWatch::Call> call =
      watch.Watch([&] { cancelled.Notify(); });
  call->Waiting();
  EXPECT_TRUE(cancelled.WaitForNotificationWithTimeout(absl::Seconds(60)));
  call->Done();
}

}  // namespace
}  // namespace glint
