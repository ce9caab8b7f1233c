// First tests of the stream and event contract; the full conformance suite
// over every device type builds on these.
#include "devices/stream.h"

#include <atomic>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "devices/stream_internal.h"
#include "gtest/gtest.h"

namespace glint {

using devices_internal::StreamInternal;

namespace {

TEST(HostStreamTest, RunsItemsInOrder) {
  HostStream stream(0, 0, "s");
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) {
    StreamInternal::Enqueue(stream, [&order, i] {
      order.push_back(i);
      return absl::OkStatus();
    });
  }
  ASSERT_TRUE(stream.Synchronize().ok());
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_TRUE(stream.Query());
}

TEST(HostStreamTest, QueryIsFalseWhileAnItemRuns) {
  HostStream stream(0, 0, "s");
  absl::Notification started, release;
  StreamInternal::Enqueue(stream, [&] {
    started.Notify();
    release.WaitForNotification();
    return absl::OkStatus();
  });
  started.WaitForNotification();
  // The queue is empty but the item has not finished.
  EXPECT_FALSE(stream.Query());
  release.Notify();
  ASSERT_TRUE(stream.Synchronize().ok());
  EXPECT_TRUE(stream.Query());
}

TEST(HostStreamTest, WaitOrdersAcrossStreams) {
  HostStream producer(0, 0, "a"), consumer(1, 0, "b");
  absl::Notification release;
  std::atomic<int> value{0};
  StreamInternal::Enqueue(producer, [&] {
    release.WaitForNotification();
    value = 42;
    return absl::OkStatus();
  });
  Event done;
  producer.Record(done);
  consumer.Wait(done);  // Must not block the host.
  int seen = -1;
  StreamInternal::Enqueue(consumer, [&] {
    seen = value.load();
    return absl::OkStatus();
  });
  EXPECT_FALSE(done.Query());
  release.Notify();
  ASSERT_TRUE(consumer.Synchronize().ok());
  EXPECT_EQ(seen, 42);
  EXPECT_TRUE(done.Query());
}

TEST(HostStreamTest, WaitKeepsTheVersionItCaptured) {
  HostStream a(0, 0, "a"), b(0, 0, "b"), c(0, 0, "c");
  Event e;
  a.Record(e);  // Version 1: nothing before it.
  ASSERT_TRUE(a.Synchronize().ok());
  c.Wait(e);    // Captures version 1, already complete.
  absl::Notification release;
  StreamInternal::Enqueue(b, [&] {
    release.WaitForNotification();
    return absl::OkStatus();
  });
  b.Record(e);  // Version 2, blocked until release.
  bool ran = false;
  StreamInternal::Enqueue(c, [&] {
    ran = true;
    return absl::OkStatus();
  });
  ASSERT_TRUE(c.Synchronize().ok());  // Would hang if it waited on v2.
  EXPECT_TRUE(ran);
  EXPECT_FALSE(e.Query());
  release.Notify();
  EXPECT_TRUE(e.Synchronize().ok());
}

TEST(HostStreamTest, WaitOnNeverRecordedEventIsNoOp) {
  HostStream s(0, 0, "s");
  Event never;
  s.Wait(never);
  EXPECT_TRUE(s.Synchronize().ok());
  EXPECT_TRUE(never.Query());
}

TEST(HostStreamTest, ErrorsAreStickyAndTravelThroughEvents) {
  HostStream a(0, 0, "a"), b(1, 0, "b");
  StreamInternal::Enqueue(a, [] { return absl::DataLossError("boom"); });
  bool skipped = true;
  StreamInternal::Enqueue(a, [&] {
    skipped = false;
    return absl::OkStatus();
  });
  Event e;
  a.Record(e);
  b.Wait(e);
  bool b_ran = false;
  StreamInternal::Enqueue(b, [&] {
    b_ran = true;
    return absl::OkStatus();
  });
  EXPECT_EQ(a.Synchronize().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(skipped);
  EXPECT_EQ(e.Synchronize().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(b.Synchronize().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(b_ran);
  ASSERT_TRUE(a.ClearError().ok());
  EXPECT_TRUE(a.status().ok());
}

TEST(HostStreamTest, WaitForCompletionTakesNoErrorAndWaitsWhenFailed) {
  HostStream a(0, 0, "a"), b(1, 0, "b"), c(2, 0, "c");
  absl::Notification release;
  StreamInternal::Enqueue(a, [&] {
    release.WaitForNotification();
    return absl::DataLossError("boom");
  });
  Event e;
  a.Record(e);
  // b is healthy: it waits, keeps its status and runs what follows.
  b.WaitForCompletion(e);
  std::atomic<bool> b_ran{false};
  StreamInternal::Enqueue(b, [&] {
    b_ran = true;
    return absl::OkStatus();
  });
  // c has failed already: it still waits before the event behind it.
  StreamInternal::Enqueue(c, [] { return absl::CancelledError("c"); });
  c.WaitForCompletion(e);
  Event behind;
  c.Record(behind);
  EXPECT_EQ(c.Synchronize(absl::Now() + absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(behind.Query());
  EXPECT_FALSE(b_ran);
  release.Notify();
  EXPECT_TRUE(b.Synchronize().ok());
  EXPECT_TRUE(b_ran);
  EXPECT_EQ(c.Synchronize().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(behind.Query());
  EXPECT_EQ(e.Synchronize().code(), absl::StatusCode::kDataLoss);
}

TEST(HostStreamTest, OnDoneRunsEvenAfterAnError) {
  HostStream s(0, 0, "s");
  StreamInternal::Enqueue(s, [] { return absl::InternalError("x"); });
  absl::Notification called;
  absl::Status seen;
  s.OnDone([&](absl::Status st) {
    seen = st;
    called.Notify();
  });
  called.WaitForNotification();
  EXPECT_EQ(seen.code(), absl::StatusCode::kInternal);
}

TEST(HostStreamTest, StopFailsPendingWorkAndNeverHangs) {
  auto s = std::make_unique<HostStream>(0, 0, "s");
  HostStream other(1, 0, "o");
  Event never_done;
  // `other` will never complete this version: it is blocked behind a wait
  // on a stream that gets stopped.
  absl::Notification release;
  StreamInternal::Enqueue(other, [&] {
    release.WaitForNotification();
    return absl::OkStatus();
  });
  other.Record(never_done);
  s->Wait(never_done);
  bool ran = false;
  StreamInternal::Enqueue(*s, [&] {
    ran = true;
    return absl::OkStatus();
  });
  Event after;
  s->Record(after);
  s->Stop(absl::UnavailableError("stopped"));
  EXPECT_EQ(after.Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(ran);
  release.Notify();
  EXPECT_TRUE(other.Synchronize().ok());
}

TEST(EventTest, ElapsedTimeErrors) {
  Event untimed, timed_a({true}), timed_b({true});
  EXPECT_EQ(Event::ElapsedMillis(untimed, timed_a).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Event::ElapsedMillis(timed_a, timed_b).status().code(),
            absl::StatusCode::kFailedPrecondition);  // Not recorded.
  HostStream s(0, 0, "s"), t(1, 0, "t");
  s.Record(timed_a);
  t.Record(timed_b);
  ASSERT_TRUE(s.Synchronize().ok());
  ASSERT_TRUE(t.Synchronize().ok());
  EXPECT_EQ(Event::ElapsedMillis(timed_a, timed_b).status().code(),
            absl::StatusCode::kFailedPrecondition);  // Different devices.
  s.Record(timed_b);
  ASSERT_TRUE(s.Synchronize().ok());
  absl::StatusOr<double> ms = Event::ElapsedMillis(timed_a, timed_b);
  ASSERT_TRUE(ms.ok());
  EXPECT_GE(*ms, 0.0);
}

}  // namespace
}  // namespace glint
