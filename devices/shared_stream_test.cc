// The shared stream: views as independent in-order queues with their own
// errors, on two threads however many views there are.
#include "devices/shared_stream.h"

#include <atomic>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "devices/stream_internal.h"
#include "gtest/gtest.h"

namespace glint {

using devices_internal::StreamInternal;

namespace {

std::shared_ptr<SharedStream> NewShared(
    int device_id = 0, std::function<void()> on_compute_start = nullptr,
    std::shared_ptr<HostStream> callbacks = nullptr) {
  SharedStream::Options options;
  options.device_id = device_id;
  options.name = "shared";
  options.on_compute_start = std::move(on_compute_start);
  options.callbacks = std::move(callbacks);
  return SharedStream::Create(std::move(options));
}

std::unique_ptr<Stream> View(SharedStream& stream, int priority = 0,
                             std::function<absl::Status()> check = nullptr) {
  SharedStreamOptions options;
  options.priority = priority;
  options.work_check = std::move(check);
  return stream.OpenView(std::move(options));
}

// Work that blocks until Open(); opened when destroyed, so that a failing
// test does not leave a thread blocked.
class Gate {
 public:
  Gate() : state_(std::make_shared<State>()) {}
  ~Gate() { Open(); }
  void Open() {
    absl::MutexLock lock(&state_->mu);
    state_->open = true;
  }
  StreamWork Blocker(absl::Notification* started = nullptr) {
    return [state = state_, started] {
      if (started != nullptr) started->Notify();
      absl::MutexLock lock(&state->mu);
      state->mu.Await(absl::Condition(&state->open));
      return absl::OkStatus();
    };
  }

 private:
  struct State {
    absl::Mutex mu;
    bool open ABSL_GUARDED_BY(mu) = false;
  };
  std::shared_ptr<State> state_;
};

// Records, in order, the names of the items that ran (from any thread).
class Log {
 public:
  StreamWork Step(std::string name) {
    return [this, name] {
      absl::MutexLock lock(&mu_);
      names_.push_back(name);
      return absl::OkStatus();
    };
  }
  std::vector<std::string> names() const {
    absl::MutexLock lock(&mu_);
    return names_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
};

TEST(SharedStreamTest, ViewsAreIndependentQueuesWithTheirOwnErrors) {
  auto shared = NewShared();
  std::unique_ptr<Stream> a = View(*shared), b = View(*shared);
  Log log;
  Gate gate;
  absl::Notification blocked;
  StreamInternal::Enqueue(*a, gate.Blocker(&blocked));
  StreamInternal::Enqueue(*a, [] { return absl::DataLossError("a broke"); });
  StreamInternal::Enqueue(*a, log.Step("a3"));  // Skipped: a has failed.
  Event a_done, b_done;
  a->Record(a_done);
  StreamInternal::Enqueue(*b, log.Step("b1"));
  StreamInternal::Enqueue(*b, log.Step("b2"));
  b->Record(b_done);
  // b is not held up by a, which is blocked.
  blocked.WaitForNotification();
  ASSERT_TRUE(b->Synchronize().ok());
  EXPECT_TRUE(b_done.Query());
  EXPECT_FALSE(a->Query());
  EXPECT_FALSE(a_done.Query());
  gate.Open();
  EXPECT_EQ(a->Synchronize().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(log.names(), (std::vector<std::string>{"b1", "b2"}));
  EXPECT_EQ(a->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(b->status().ok());
  EXPECT_EQ(a_done.Synchronize().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(b_done.Synchronize().ok());
  EXPECT_TRUE(a->Query());
  // A view cleared of its error works again.
  ASSERT_TRUE(a->ClearError().ok());
  StreamInternal::Enqueue(*a, log.Step("a4"));
  ASSERT_TRUE(a->Synchronize().ok());
  EXPECT_EQ(log.names().back(), "a4");
}

TEST(SharedStreamTest, ItemsOfAViewRunInOrder) {
  auto shared = NewShared();
  constexpr int kViews = 4, kItems = 100;
  std::vector<std::unique_ptr<Stream>> views;
  std::vector<std::vector<int>> seen(kViews);  // Each touched by one view.
  for (int v = 0; v < kViews; ++v) views.push_back(View(*shared));
  for (int i = 0; i < kItems; ++i) {
    for (int v = 0; v < kViews; ++v) {
      auto step = [&seen, v, i] {
        seen[v].push_back(i);
        return absl::OkStatus();
      };
      // Launches and other work mixed: they run on different threads, but
      // a view's items still one after another.
      if (i % 3 == 0) {
        StreamInternal::EnqueueLaunch(*views[v], step);
      } else {
        StreamInternal::Enqueue(*views[v], step);
      }
    }
  }
  for (int v = 0; v < kViews; ++v) {
    ASSERT_TRUE(views[v]->Synchronize().ok());
    ASSERT_EQ(seen[v].size(), size_t{kItems});
    for (int i = 0; i < kItems; ++i) EXPECT_EQ(seen[v][i], i);
  }
}

TEST(SharedStreamTest, AViewsErrorTravelsThroughItsEventsOnly) {
  auto first = NewShared(0), second = NewShared(1);
  std::unique_ptr<Stream> failing = View(*first), healthy = View(*first);
  std::unique_ptr<Stream> waiter = View(*second), bystander = View(*second);
  StreamInternal::Enqueue(*failing, [] { return absl::AbortedError("x"); });
  Event broken, fine;
  failing->Record(broken);
  healthy->Record(fine);
  waiter->Wait(broken);
  bystander->Wait(fine);
  Log log;
  StreamInternal::Enqueue(*waiter, log.Step("waiter"));
  StreamInternal::Enqueue(*bystander, log.Step("bystander"));
  EXPECT_EQ(waiter->Synchronize().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(bystander->Synchronize().ok());
  EXPECT_EQ(log.names(), std::vector<std::string>{"bystander"});
  EXPECT_TRUE(healthy->status().ok());
}

// WaitForCompletion: the waiter waits for a failed event without taking
// its error, and a failed waiter still waits before its (skipped) items
// and the events recorded behind them complete.
TEST(SharedStreamTest, WaitForCompletionWaitsWhateverEitherSidesStatus) {
  auto first = NewShared(0), second = NewShared(1);
  std::unique_ptr<Stream> failing = View(*first);
  Gate gate;
  StreamInternal::Enqueue(*failing, gate.Blocker());
  StreamInternal::Enqueue(*failing, [] { return absl::AbortedError("x"); });
  Event broken;
  failing->Record(broken);

  std::unique_ptr<Stream> healthy = View(*second);
  healthy->WaitForCompletion(broken);
  Log log;
  StreamInternal::Enqueue(*healthy, log.Step("healthy"));

  std::unique_ptr<Stream> failed = View(*second);
  StreamInternal::Enqueue(*failed, [] { return absl::CancelledError("c"); });
  failed->WaitForCompletion(broken);
  Event behind;
  failed->Record(behind);

  // Nothing passes the waits while the failing view has not got there.
  EXPECT_EQ(failed->Synchronize(absl::Now() + absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
  ASSERT_NE(behind.latest(), nullptr);
  EXPECT_FALSE(behind.latest()->done());
  EXPECT_TRUE(log.names().empty());
  gate.Open();
  EXPECT_TRUE(healthy->Synchronize().ok());
  EXPECT_EQ(log.names(), std::vector<std::string>{"healthy"});
  EXPECT_EQ(failed->Synchronize().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(behind.latest()->status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(broken.latest()->done());
}

TEST(SharedStreamTest, AWaitingViewHoldsNoThread) {
  // Two views wait on an event a HostStream has not reached; the views
  // behind them on the same shared stream (both threads' worth) run.
  auto shared = NewShared();
  HostStream other(1, 0, "other");
  Gate gate;
  StreamInternal::Enqueue(other, gate.Blocker());
  Event later;
  other.Record(later);
  std::unique_ptr<Stream> w1 = View(*shared), w2 = View(*shared);
  w1->Wait(later);
  w2->Wait(later);
  Log log;
  StreamInternal::Enqueue(*w1, log.Step("w1"));
  std::vector<std::unique_ptr<Stream>> others;
  for (int i = 0; i < 4; ++i) {
    others.push_back(View(*shared));
    StreamInternal::EnqueueLaunch(*others.back(), log.Step("launch"));
    StreamInternal::Enqueue(*others.back(), log.Step("copy"));
  }
  for (auto& s : others) ASSERT_TRUE(s->Synchronize().ok());
  EXPECT_EQ(log.names().size(), 8u);
  EXPECT_FALSE(w1->Query());
  gate.Open();
  EXPECT_TRUE(w1->Synchronize().ok());
  EXPECT_TRUE(w2->Synchronize().ok());
  EXPECT_EQ(log.names().back(), "w1");
}

TEST(SharedStreamTest, LaunchesRunOnTheComputeThreadOtherWorkBesideThem) {
  std::atomic<std::thread::id> compute_thread{};
  auto shared = NewShared(0, [&] {
    compute_thread = std::this_thread::get_id();
  });
  std::unique_ptr<Stream> busy = View(*shared), other = View(*shared);
  Gate gate;
  absl::Notification computing;
  std::thread::id launch_on, copy_on;
  StreamWork blocker = gate.Blocker();
  StreamInternal::EnqueueLaunch(*busy, [&] {
    launch_on = std::this_thread::get_id();
    computing.Notify();
    return blocker();
  });
  computing.WaitForNotification();
  // While the compute thread is held by a launch, another view's copy runs
  // (on the helper thread), and its launch waits for the compute thread.
  StreamInternal::Enqueue(*other, [&] {
    copy_on = std::this_thread::get_id();
    return absl::OkStatus();
  });
  Event copied;
  other->Record(copied);
  EXPECT_TRUE(copied.Synchronize().ok());
  std::thread::id second_launch_on;
  StreamInternal::EnqueueLaunch(*other, [&] {
    second_launch_on = std::this_thread::get_id();
    return absl::OkStatus();
  });
  EXPECT_EQ(other->Synchronize(absl::Now() + absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  gate.Open();
  ASSERT_TRUE(other->Synchronize().ok());
  ASSERT_TRUE(busy->Synchronize().ok());
  EXPECT_EQ(launch_on, compute_thread.load());
  EXPECT_EQ(second_launch_on, compute_thread.load());
  EXPECT_NE(copy_on, compute_thread.load());
}

TEST(SharedStreamTest, ALoneViewRunsOnOneThread) {
  std::atomic<std::thread::id> compute_thread{};
  auto shared = NewShared(0, [&] {
    compute_thread = std::this_thread::get_id();
  });
  std::unique_ptr<Stream> v = View(*shared);
  std::vector<std::thread::id> ran_on;  // Touched by one item at a time.
  for (int i = 0; i < 50; ++i) {
    auto step = [&ran_on] {
      ran_on.push_back(std::this_thread::get_id());
      return absl::OkStatus();
    };
    if (i % 2 == 0) {
      StreamInternal::EnqueueLaunch(*v, step);
    } else {
      StreamInternal::Enqueue(*v, step);
    }
  }
  ASSERT_TRUE(v->Synchronize().ok());
  ASSERT_EQ(ran_on.size(), 50u);
  for (const std::thread::id& id : ran_on) {
    EXPECT_EQ(id, compute_thread.load());
  }
}

TEST(SharedStreamTest, TheMostUrgentReadyLaunchGoesFirst) {
  auto shared = NewShared();
  std::unique_ptr<Stream> holder = View(*shared);
  std::unique_ptr<Stream> low = View(*shared, -1), mid = View(*shared, 0),
                          mid2 = View(*shared, 0), high = View(*shared, 5);
  Gate gate;
  absl::Notification computing;
  StreamInternal::EnqueueLaunch(*holder, gate.Blocker(&computing));
  computing.WaitForNotification();
  Log log;
  StreamInternal::EnqueueLaunch(*low, log.Step("low"));
  StreamInternal::EnqueueLaunch(*mid, log.Step("mid"));
  StreamInternal::EnqueueLaunch(*high, log.Step("high"));
  StreamInternal::EnqueueLaunch(*mid2, log.Step("mid2"));
  gate.Open();
  for (Stream* s : {low.get(), mid.get(), mid2.get(), high.get()}) {
    ASSERT_TRUE(s->Synchronize().ok());
  }
  EXPECT_EQ(log.names(),
            (std::vector<std::string>{"high", "mid", "mid2", "low"}));
}

TEST(SharedStreamTest, OnDoneGetsTheViewsStatusAndSeesItDrained) {
  auto callbacks = std::make_shared<HostStream>(0, 0, "callbacks");
  auto shared = NewShared(0, nullptr, callbacks);
  std::unique_ptr<Stream> a = View(*shared), b = View(*shared);
  StreamInternal::Enqueue(*a, [] { return absl::InternalError("a"); });
  absl::Notification a_called, b_called;
  absl::Status a_seen, b_seen;
  bool a_idle = false, a_cleared = false;
  std::thread::id a_on;
  a->OnDone([&](absl::Status s) {
    a_seen = s;
    a_on = std::this_thread::get_id();
    // Counted as finished once reached: the view may be reset here.
    a_idle = a->Query();
    a_cleared = a->ClearError().ok();
    a_called.Notify();
  });
  b->OnDone([&](absl::Status s) {
    b_seen = s;
    b_called.Notify();
  });
  a_called.WaitForNotification();
  b_called.WaitForNotification();
  EXPECT_EQ(a_seen.code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(a_idle);
  EXPECT_TRUE(a_cleared);
  EXPECT_TRUE(b_seen.ok()) << b_seen;
  // On the callbacks stream's thread.
  EXPECT_NE(a_on, std::this_thread::get_id());
  EXPECT_TRUE(callbacks->Synchronize().ok());
}

TEST(SharedStreamTest, ABatchStartsAtEndBatch) {
  auto shared = NewShared();
  std::unique_ptr<Stream> a = View(*shared), b = View(*shared);
  absl::Mutex mu;
  std::vector<std::string> order;
  auto note = [&](std::string what) -> StreamWork {
    return [&, what] {
      absl::MutexLock lock(&mu);
      order.push_back(what);
      return absl::OkStatus();
    };
  };
  a->BeginBatch();
  StreamInternal::Enqueue(*a, note("a1"));
  StreamInternal::EnqueueLaunch(*a, note("a2"));
  // Enqueued later, but a's batch has not started: b's work runs first.
  StreamInternal::Enqueue(*b, note("b"));
  ASSERT_TRUE(b->Synchronize().ok());
  EXPECT_FALSE(a->Query());
  a->EndBatch();
  ASSERT_TRUE(a->Synchronize().ok());
  absl::MutexLock lock(&mu);
  EXPECT_EQ(order, (std::vector<std::string>{"b", "a1", "a2"}));
}

TEST(SharedStreamTest, AnOnDoneCallbackMayStopTheStream) {
  // With nothing else to run, the worker that finishes a view's work calls
  // its OnDone itself; stopping the stream there must neither hang nor
  // leave a thread unjoined for the destructor.
  auto callbacks = std::make_shared<HostStream>(0, 0, "callbacks");
  auto shared = NewShared(0, nullptr, callbacks);
  std::unique_ptr<Stream> a = View(*shared);
  StreamInternal::EnqueueLaunch(*a, [] { return absl::OkStatus(); });
  absl::Notification stopped;
  absl::Status seen;
  a->OnDone([&](absl::Status s) {
    seen = s;
    shared->Stop(absl::UnavailableError("stopped by a callback"));
    stopped.Notify();
  });
  stopped.WaitForNotification();
  EXPECT_TRUE(seen.ok()) << seen;
  std::unique_ptr<Stream> later = View(*shared);
  StreamInternal::Enqueue(*later, [] { return absl::OkStatus(); });
  EXPECT_EQ(later->Synchronize().code(), absl::StatusCode::kUnavailable);
  a.reset();
  later.reset();
  shared.reset();  // Joins the thread the callback ran on.
}

TEST(SharedStreamTest, ACallbackAndAnOutsideThreadMayStopTogether) {
  // A callback on the stream's own thread stops the stream while an outside
  // thread stops it too (and joins that thread): neither may wait for the
  // other. Many rounds, since which reaches the join first varies; a hang
  // is reported as a failure after a bounded wait.
  for (int round = 0; round < 100; ++round) {
    auto shared = NewShared();
    SharedStream* raw = shared.get();
    std::unique_ptr<Stream> a = View(*shared);
    // Held until OnDone is registered, so that the callback runs on the
    // compute thread (not inline in OnDone).
    Gate gate;
    StreamInternal::EnqueueLaunch(*a, gate.Blocker());
    absl::Notification in_callback, outside_started, callback_done,
        outside_done;
    a->OnDone([&](absl::Status) {
      in_callback.Notify();
      outside_started.WaitForNotification();
      raw->Stop(absl::UnavailableError("stopped by a callback"));
      callback_done.Notify();
    });
    std::thread outside([&] {
      in_callback.WaitForNotification();
      outside_started.Notify();
      raw->Stop(absl::UnavailableError("stopped from outside"));
      outside_done.Notify();
    });
    gate.Open();
    const bool finished =
        callback_done.WaitForNotificationWithTimeout(absl::Seconds(20)) &&
        outside_done.WaitForNotificationWithTimeout(absl::Seconds(20));
    if (!finished) {
      ADD_FAILURE() << "Stop() deadlocked in round " << round;
      std::abort();  // The threads are stuck: nothing can be cleaned up.
    }
    outside.join();
    a.reset();
    shared.reset();
  }
}

TEST(SharedStreamTest, ClearErrorRefusesWhileTheViewHasWorkPending) {
  auto shared = NewShared();
  std::unique_ptr<Stream> a = View(*shared);
  Gate gate;
  StreamInternal::Enqueue(*a, [] { return absl::AbortedError("first"); });
  StreamInternal::Enqueue(*a, gate.Blocker());  // Skipped once reached.
  ASSERT_EQ(a->Synchronize().code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(a->ClearError().ok());
  StreamInternal::Enqueue(*a, gate.Blocker());
  EXPECT_EQ(a->ClearError().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(a->Synchronize(absl::Now() + absl::Milliseconds(10)).code(),
            absl::StatusCode::kDeadlineExceeded);
  gate.Open();
  EXPECT_TRUE(a->Synchronize().ok());
}

TEST(SharedStreamTest, PriorityDeviceAndWorkCheckAreTheViews) {
  auto shared = NewShared(3);
  std::unique_ptr<Stream> urgent =
      View(*shared, 5, [] { return absl::CancelledError("not wanted"); });
  std::unique_ptr<Stream> plain = View(*shared);
  EXPECT_EQ(urgent->priority(), 5);
  EXPECT_EQ(urgent->device_id(), 3);
  EXPECT_EQ(plain->priority(), 0);
  EXPECT_EQ(urgent->CheckWork().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(plain->CheckWork().ok());
}

TEST(SharedStreamTest, StopFailsPendingAndLaterWorkAndNeverHangs) {
  auto shared = NewShared();
  HostStream other(1, 0, "other");
  std::unique_ptr<Stream> waiting = View(*shared), blocked = View(*shared),
                          queued = View(*shared), idle = View(*shared);
  Gate other_gate, gate;
  StreamInternal::Enqueue(other, other_gate.Blocker());
  Event never_done;
  other.Record(never_done);
  waiting->Wait(never_done);
  Log log;
  StreamInternal::Enqueue(*waiting, log.Step("after wait"));
  // Both threads held by long items (the helper takes the second while
  // the compute thread is busy with the first).
  absl::Notification first, second;
  StreamInternal::EnqueueLaunch(*blocked, gate.Blocker(&first));
  first.WaitForNotification();
  StreamInternal::Enqueue(*queued, gate.Blocker(&second));
  second.WaitForNotification();
  StreamInternal::Enqueue(*queued, log.Step("queued"));
  Event queued_done;
  queued->Record(queued_done);
  absl::Status callback_status;
  queued->OnDone([&](absl::Status s) { callback_status = s; });

  std::thread stopper([&] { shared->Stop(absl::UnavailableError("gone")); });
  // Stop drains at once; it returns once the running items end.
  EXPECT_EQ(queued_done.Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(waiting->Synchronize().code(), absl::StatusCode::kUnavailable);
  gate.Open();
  stopper.join();
  EXPECT_EQ(queued->Synchronize().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(callback_status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(blocked->Synchronize().ok());  // Its item ran to the end.
  EXPECT_TRUE(idle->Synchronize().ok());     // Nothing was pending.
  EXPECT_TRUE(log.names().empty());
  // Later work fails at once, also through new views.
  std::unique_ptr<Stream> late = View(*shared);
  for (Stream* s : {idle.get(), late.get()}) {
    StreamInternal::Enqueue(*s, log.Step("late"));
    EXPECT_EQ(s->Synchronize().code(), absl::StatusCode::kUnavailable);
    EXPECT_TRUE(s->Query());
  }
  EXPECT_TRUE(log.names().empty());
  other_gate.Open();
  EXPECT_TRUE(other.Synchronize().ok());
}

TEST(SharedStreamTest, ManyViewsFromManyThreadsKeepTheirOwnResults) {
  auto shared = NewShared();
  constexpr int kViews = 256, kItems = 10;
  std::vector<std::unique_ptr<Stream>> views;
  std::vector<int> sums(kViews, 0);
  for (int v = 0; v < kViews; ++v) views.push_back(View(*shared, v % 3));
  // Every third view fails halfway; the others add 0..9.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int v = t; v < kViews; v += 4) {
        for (int i = 0; i < kItems; ++i) {
          auto step = [&sums, v, i]() -> absl::Status {
            if (v % 3 == 0 && i == 5) return absl::InternalError("half");
            sums[v] += i;
            return absl::OkStatus();
          };
          if (i % 2 == 0) {
            StreamInternal::EnqueueLaunch(*views[v], step);
          } else {
            StreamInternal::Enqueue(*views[v], step);
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int v = 0; v < kViews; ++v) {
    const absl::Status s = views[v]->Synchronize();
    if (v % 3 == 0) {
      EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
      EXPECT_EQ(sums[v], 0 + 1 + 2 + 3 + 4);
    } else {
      EXPECT_TRUE(s.ok()) << s;
      EXPECT_EQ(sums[v], 45);
    }
  }
}

}  // namespace
}  // namespace glint
