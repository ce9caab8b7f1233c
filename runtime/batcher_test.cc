#include "runtime/batcher.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace glint {
namespace {

constexpr int64_t kWidth = 3;

// A network of one input x: float[max, 3] and two outputs: y = 2x and
// s = the sum of each row ([max, 1]), executed by the test: batches wait in
// `pending` until the test completes them, so what forms when is exact.
class FakeNetwork {
 public:
  // With `dynamic_width`, x's second dim is unknown (Shape::kUnknownDim):
  // each request brings its own width.
  explicit FakeNetwork(int max, bool dynamic_width = false)
      : max_(max), width_(dynamic_width ? Shape::kUnknownDim : kWidth) {}

  BatcherOptions Options(DynamicBatching batching, int in_flight = 1,
                         std::vector<int> sizes = {}) const {
    BatcherOptions options;
    options.sizes = std::move(sizes);
    options.batching = std::move(batching);
    options.inputs = {{"x", DType::kFloat32, Shape({max_, width_})}};
    options.outputs = {{"y", DType::kFloat32, Shape({max_, width_})},
                       {"s", DType::kFloat32, Shape({max_, 1})}};
    options.max_in_flight = in_flight;
    options.max_queue_size = 16;
    return options;
  }

  BatchExecutor Executor() {
    return [this](BatchExecution batch, BatchDone done) {
      absl::MutexLock lock(&mu_);
      pending_.push_back({std::move(batch), std::move(done)});
    };
  }

  int pending() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(pending_.size());
  }
  // The oldest executing batch, as the batcher formed it.
  BatchExecution Peek() const {
    absl::MutexLock lock(&mu_);
    return pending_.front().first;
  }
  // Completes the oldest batch: computed, or failed with `error`.
  void Complete(absl::Status error = absl::OkStatus()) {
    std::pair<BatchExecution, BatchDone> batch;
    {
      absl::MutexLock lock(&mu_);
      batch = std::move(pending_.front());
      pending_.erase(pending_.begin());
    }
    if (!error.ok()) {
      batch.second(error);
      return;
    }
    const Tensor& x = batch.first.inputs[0];
    const int64_t size = x.shape().dim(0);
    const int64_t width = x.shape().dim(1);
    Tensor y = *Tensor::Create(DType::kFloat32, x.shape());
    Tensor s = *Tensor::Create(DType::kFloat32, Shape({size, 1}));
    for (int64_t r = 0; r < size; ++r) {
      float sum = 0;
      for (int64_t c = 0; c < width; ++c) {
        const float v = x.data<float>()[r * width + c];
        y.data<float>()[r * width + c] = 2 * v;
        sum += v;
      }
      s.data<float>()[r] = sum;
    }
    batch.second(std::vector<Tensor>{std::move(y), std::move(s)});
  }

 private:
  const int64_t max_;
  const int64_t width_;
  mutable absl::Mutex mu_;
  std::vector<std::pair<BatchExecution, BatchDone>> pending_
      ABSL_GUARDED_BY(mu_);
};

// A caller's request of `rows` rows whose values start at `first` and count
// up, and what it got back.
struct Call {
  Call(int64_t rows, float first, int64_t width = kWidth)
      : rows(rows), width(width) {
    std::vector<float> v(rows * width);
    for (size_t i = 0; i < v.size(); ++i) v[i] = first + i;
    x = Tensor::FromVector(DType::kFloat32, Shape({rows, width}), v);
  }
  BatchRequest Request(std::vector<int> outputs = {0, 1}) {
    BatchRequest r;
    r.inputs = {x};
    r.outputs = std::move(outputs);
    r.cancel = cancel;
    r.deadline = deadline;
    r.done = [this](absl::StatusOr<std::vector<Tensor>> out,
                    const BatchMeasures&) {
      result = std::move(out);
      answered.Notify();
    };
    return r;
  }
  // Checks that the answer is exactly this request's rows of y and s.
  void ExpectOwnRows() const {
    ASSERT_TRUE(answered.HasBeenNotified());
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->size(), 2u);
    const Tensor& y = (*result)[0];
    const Tensor& s = (*result)[1];
    ASSERT_EQ(y.shape(), Shape({rows, width}));
    ASSERT_EQ(s.shape(), Shape({rows, 1}));
    for (int64_t r = 0; r < rows; ++r) {
      float sum = 0;
      for (int64_t c = 0; c < width; ++c) {
        const float v = x.data<float>()[r * width + c];
        EXPECT_EQ(y.data<float>()[r * width + c], 2 * v);
        sum += v;
      }
      EXPECT_EQ(s.data<float>()[r], sum);
    }
  }

  int64_t rows;
  int64_t width;
  Tensor x;
  std::shared_ptr<CancellationToken> cancel =
      std::make_shared<CancellationToken>();
  absl::Time deadline = absl::InfiniteFuture();
  absl::Notification answered;
  absl::StatusOr<std::vector<Tensor>> result;
};

DynamicBatching Batching(int max, absl::Duration delay,
                         std::vector<int> preferred = {}) {
  DynamicBatching b;
  b.max_batch_size = max;
  b.max_queue_delay = delay;
  b.preferred_batch_sizes = std::move(preferred);
  return b;
}

std::shared_ptr<Batcher> Make(FakeNetwork& net, BatchTimer& timer,
                              DynamicBatching batching, int in_flight = 1) {
  absl::StatusOr<std::shared_ptr<Batcher>> b =
      Batcher::Create(net.Options(std::move(batching), in_flight),
                      net.Executor(), &timer);
  EXPECT_TRUE(b.ok()) << b.status();
  return *std::move(b);
}

TEST(BatcherTest, AFullBatchRunsOnceAndEachCallerGetsItsRows) {
  FakeNetwork net(8);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(8, kMaxQueueDelay));
  Call a(3, 0), b(1, 100), c(4, 200);
  ASSERT_TRUE(batcher->Enqueue(a.Request()).ok());
  ASSERT_TRUE(batcher->Enqueue(b.Request()).ok());
  EXPECT_EQ(net.pending(), 0);  // 4 of 8 rows: waits for more.
  ASSERT_TRUE(batcher->Enqueue(c.Request()).ok());
  ASSERT_EQ(net.pending(), 1);  // Full: runs at once, whatever the delay.
  const BatchExecution batch = net.Peek();
  EXPECT_EQ(batch.rows, 8);
  EXPECT_EQ(batch.requests, 3);
  // Rows in arrival order: a's 3, b's 1, c's 4.
  EXPECT_EQ(batch.inputs[0].data<float>()[3 * kWidth], 100.0f);
  EXPECT_EQ(batch.inputs[0].data<float>()[4 * kWidth], 200.0f);
  net.Complete();
  a.ExpectOwnRows();
  b.ExpectOwnRows();
  c.ExpectOwnRows();
  EXPECT_EQ(batcher->counts().executions, 1u);
  EXPECT_EQ(batcher->counts().requests, 3u);
  EXPECT_EQ(batcher->counts().rows, 8u);
}

TEST(BatcherTest, APartialBatchIsPaddedWithItsFirstRow) {
  FakeNetwork net(4);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(4, absl::ZeroDuration()));
  Call a(2, 5);
  ASSERT_TRUE(batcher->Enqueue(a.Request()).ok());
  ASSERT_EQ(net.pending(), 1);  // No delay: runs at once.
  const BatchExecution batch = net.Peek();
  EXPECT_EQ(batch.rows, 2);
  ASSERT_EQ(batch.inputs[0].shape(), Shape({4, kWidth}));
  for (int64_t r = 2; r < 4; ++r) {
    for (int64_t c = 0; c < kWidth; ++c) {
      EXPECT_EQ(batch.inputs[0].data<float>()[r * kWidth + c], 5.0f + c);
    }
  }
  net.Complete();
  a.ExpectOwnRows();
}

// With a dynamic dim beside the batch, only requests of one shape merge:
// each shape fills its own batches, and a full one starts even while an
// older request of another shape still waits for company.
TEST(BatcherTest, OnlyRequestsOfOneShapeMerge) {
  FakeNetwork net(8, /*dynamic_width=*/true);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(8, kMaxQueueDelay));
  Call b(1, 100, 5), a(2, 0, 3), c(3, 10, 3), d(2, 200, 5), e(3, 20, 3);
  for (Call* call : {&b, &a, &c, &d}) {
    ASSERT_TRUE(batcher->Enqueue(call->Request()).ok());
  }
  EXPECT_EQ(net.pending(), 0);  // 5 rows of width 3, 3 of width 5: waits.
  ASSERT_TRUE(batcher->Enqueue(e.Request()).ok());
  ASSERT_EQ(net.pending(), 1);  // Width 3 is full, though b is older.
  BatchExecution batch = net.Peek();
  EXPECT_EQ(batch.requests, 3);
  EXPECT_EQ(batch.rows, 8);
  ASSERT_EQ(batch.inputs[0].shape(), Shape({8, 3}));
  // a's 2 rows, c's 3, e's 3, in arrival order.
  EXPECT_EQ(batch.inputs[0].data<float>()[2 * 3], 10.0f);
  EXPECT_EQ(batch.inputs[0].data<float>()[5 * 3], 20.0f);
  net.Complete();
  a.ExpectOwnRows();
  c.ExpectOwnRows();
  e.ExpectOwnRows();
  EXPECT_FALSE(b.answered.HasBeenNotified());
  EXPECT_EQ(batcher->queued(), 2);
  // Width 5 is not full and not due; a flush sends it, padded to 8 rows
  // of its own width.
  batcher->Flush();
  ASSERT_EQ(net.pending(), 1);
  batch = net.Peek();
  EXPECT_EQ(batch.requests, 2);
  EXPECT_EQ(batch.rows, 3);
  ASSERT_EQ(batch.inputs[0].shape(), Shape({8, 5}));
  EXPECT_EQ(batch.inputs[0].data<float>()[7 * 5], 100.0f);  // Padding.
  net.Complete();
  b.ExpectOwnRows();
  d.ExpectOwnRows();
  EXPECT_EQ(batcher->counts().executions, 2u);
  EXPECT_EQ(batcher->counts().requests, 5u);
}

// Within one shape the order holds: a request that does not fit the
// forming batch is not passed by a smaller one behind it.
TEST(BatcherTest, WithinAShapeNoRequestPassesAnother) {
  FakeNetwork net(4, /*dynamic_width=*/true);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(4, kMaxQueueDelay));
  Call a(3, 0, 2), b(2, 10, 2), c(1, 20, 2), other(1, 30, 7);
  for (Call* call : {&a, &other, &b, &c}) {
    ASSERT_TRUE(batcher->Enqueue(call->Request()).ok());
  }
  // a and b overflow 4 rows: a's batch is full at 3 rows, c waits behind b.
  ASSERT_EQ(net.pending(), 1);
  EXPECT_EQ(net.Peek().requests, 1);
  EXPECT_EQ(net.Peek().rows, 3);
  net.Complete();
  a.ExpectOwnRows();
  batcher->Flush();
  ASSERT_EQ(net.pending(), 1);
  EXPECT_EQ(net.Peek().inputs[0].shape(), Shape({4, 7}));  // The oldest.
  net.Complete();
  other.ExpectOwnRows();
  ASSERT_EQ(net.pending(), 1);
  EXPECT_EQ(net.Peek().requests, 2);  // b and c together.
  net.Complete();
  b.ExpectOwnRows();
  c.ExpectOwnRows();
}

TEST(BatcherTest, ABatchRunsAtTheSmallestCompiledSizeThatHoldsIt) {
  FakeNetwork net(8);
  BatchTimer timer;
  absl::StatusOr<std::shared_ptr<Batcher>> batcher = Batcher::Create(
      net.Options(Batching(8, kMaxQueueDelay), 1, {1, 4, 8}), net.Executor(),
      &timer);
  ASSERT_TRUE(batcher.ok()) << batcher.status();
  Call a(1, 0), b(2, 10), c(3, 20), d(5, 30);
  for (auto [call, size] : std::vector<std::pair<Call*, int64_t>>{
           {&a, 1}, {&b, 4}, {&c, 4}, {&d, 8}}) {
    ASSERT_TRUE((*batcher)->Enqueue(call->Request()).ok());
    (*batcher)->Flush();
    ASSERT_EQ(net.pending(), 1);
    const BatchExecution batch = net.Peek();
    EXPECT_EQ(batch.size, size);
    EXPECT_EQ(batch.rows, call->rows);
    ASSERT_EQ(batch.inputs[0].shape(), Shape({size, kWidth}));
    // Padded with the first row.
    EXPECT_EQ(batch.inputs[0].data<float>()[(size - 1) * kWidth],
              call->x.data<float>()[0]);
    net.Complete();
    call->ExpectOwnRows();
  }
  // Sizes must ascend to max_batch_size.
  for (std::vector<int> bad : std::vector<std::vector<int>>{
           {1, 4}, {4, 1, 8}, {0, 8}, {1, 9}}) {
    EXPECT_EQ(Batcher::Create(net.Options(Batching(8, kMaxQueueDelay), 1, bad),
                              net.Executor(), &timer)
                  .status()
                  .code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(BatcherTest, RequestsWaitForTheDelayOrAFlush) {
  FakeNetwork net(8);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(8, kMaxQueueDelay));
  Call a(1, 0), b(2, 10);
  ASSERT_TRUE(batcher->Enqueue(a.Request()).ok());
  ASSERT_TRUE(batcher->Enqueue(b.Request()).ok());
  EXPECT_EQ(net.pending(), 0);
  EXPECT_EQ(batcher->queued(), 2);
  batcher->Flush();
  ASSERT_EQ(net.pending(), 1);
  EXPECT_EQ(net.Peek().rows, 3);
  net.Complete();
  a.ExpectOwnRows();
  b.ExpectOwnRows();
}

TEST(BatcherTest, TheTimerDispatchesAfterTheDelay) {
  FakeNetwork net(8);
  BatchTimer timer;
  // The executor answers at once; the test waits for the answer.
  auto executor = net.Executor();
  absl::StatusOr<std::shared_ptr<Batcher>> batcher = Batcher::Create(
      // Long enough that the second Enqueue lands inside the window even
      // on a loaded machine under TSan (2 ms did not).
      net.Options(Batching(8, absl::Milliseconds(300))),
      [&](BatchExecution batch, BatchDone done) {
        executor(std::move(batch), std::move(done));
        net.Complete();
      },
      &timer);
  ASSERT_TRUE(batcher.ok()) << batcher.status();
  Call a(1, 0), b(1, 3);
  const absl::Time start = absl::Now();
  ASSERT_TRUE((*batcher)->Enqueue(a.Request()).ok());
  ASSERT_TRUE((*batcher)->Enqueue(b.Request()).ok());
  a.answered.WaitForNotification();
  b.answered.WaitForNotification();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(300));
  a.ExpectOwnRows();
  b.ExpectOwnRows();
  EXPECT_EQ((*batcher)->counts().executions, 1u);  // Together.
}

TEST(BatcherTest, APreferredSizeRunsWithoutWaiting) {
  FakeNetwork net(8);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(8, kMaxQueueDelay, {2, 6}));
  Call a(1, 0), b(1, 1), c(3, 2), d(1, 3), e(2, 4);
  ASSERT_TRUE(batcher->Enqueue(a.Request()).ok());
  EXPECT_EQ(net.pending(), 0);
  ASSERT_TRUE(batcher->Enqueue(b.Request()).ok());
  ASSERT_EQ(net.pending(), 1);
  EXPECT_EQ(net.Peek().rows, 2);
  // The largest preferred size the waiting rows make exactly: 3+1+2 = 6.
  ASSERT_TRUE(batcher->Enqueue(c.Request()).ok());
  ASSERT_TRUE(batcher->Enqueue(d.Request()).ok());
  EXPECT_EQ(net.pending(), 1);  // 4 rows: neither 2 nor 6 (nor 3+1 = 4).
  net.Complete();
  EXPECT_EQ(net.pending(), 0);  // The slot is free, but 4 is no size.
  ASSERT_TRUE(batcher->Enqueue(e.Request()).ok());
  ASSERT_EQ(net.pending(), 1);
  EXPECT_EQ(net.Peek().rows, 6);
  net.Complete();
  for (Call* call : {&a, &b, &c, &d, &e}) call->ExpectOwnRows();
}

TEST(BatcherTest, BatchesGrowWhileTheNetworkIsBusy) {
  FakeNetwork net(4);
  BatchTimer timer;
  auto batcher =
      Make(net, timer, Batching(4, absl::ZeroDuration()), /*in_flight=*/1);
  Call a(1, 0), b(1, 1), c(2, 2), d(2, 3), e(1, 4);
  ASSERT_TRUE(batcher->Enqueue(a.Request()).ok());
  ASSERT_EQ(net.pending(), 1);  // Alone: nothing else waited.
  for (Call* call : {&b, &c, &d, &e}) {
    ASSERT_TRUE(batcher->Enqueue(call->Request()).ok());
  }
  EXPECT_EQ(net.pending(), 1);  // One batch at a time.
  net.Complete();
  // b + c fit 3 rows; d would make 5: it waits for the next batch.
  ASSERT_EQ(net.pending(), 1);
  EXPECT_EQ(net.Peek().requests, 2);
  EXPECT_EQ(net.Peek().rows, 3);
  net.Complete();
  ASSERT_EQ(net.pending(), 1);
  EXPECT_EQ(net.Peek().rows, 3);  // d + e.
  net.Complete();
  for (Call* call : {&a, &b, &c, &d, &e}) call->ExpectOwnRows();
  EXPECT_EQ(batcher->counts().executions, 3u);
}

TEST(BatcherTest, CancelledAndLateRequestsFailAlone) {
  FakeNetwork net(4);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(4, absl::ZeroDuration()));
  Call busy(1, 0), cancelled(1, 1), late(1, 2), fine(1, 3);
  ASSERT_TRUE(batcher->Enqueue(busy.Request()).ok());
  late.deadline = absl::Now() - absl::Seconds(1);
  for (Call* call : {&cancelled, &late, &fine}) {
    ASSERT_TRUE(batcher->Enqueue(call->Request()).ok());
  }
  cancelled.cancel->Cancel();
  // Cancelled while its batch executes: it gets CANCELLED, the others
  // their rows.
  busy.cancel->Cancel();
  net.Complete();
  ASSERT_TRUE(busy.answered.HasBeenNotified());
  EXPECT_EQ(busy.result.status().code(), absl::StatusCode::kCancelled);
  // The next batch forms without the ones that gave up meanwhile.
  ASSERT_TRUE(cancelled.answered.HasBeenNotified());
  EXPECT_EQ(cancelled.result.status().code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(late.answered.HasBeenNotified());
  EXPECT_EQ(late.result.status().code(),
            absl::StatusCode::kDeadlineExceeded);
  ASSERT_EQ(net.pending(), 1);
  EXPECT_EQ(net.Peek().rows, 1);
  EXPECT_EQ(net.Peek().inputs[0].data<float>()[0], 3.0f);
  net.Complete();
  fine.ExpectOwnRows();
}

TEST(BatcherTest, AFailedExecutionFailsItsMembersOnly) {
  FakeNetwork net(2);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(2, absl::ZeroDuration()),
                      /*in_flight=*/2);
  Call a(1, 0), b(1, 1), c(1, 2);
  ASSERT_TRUE(batcher->Enqueue(a.Request()).ok());
  ASSERT_TRUE(batcher->Enqueue(b.Request()).ok());
  ASSERT_TRUE(batcher->Enqueue(c.Request()).ok());
  ASSERT_EQ(net.pending(), 2);  // [a], [b]; c waits for a free slot.
  net.Complete(absl::InternalError("device fell over"));
  EXPECT_EQ(a.result.status().code(), absl::StatusCode::kInternal);
  EXPECT_FALSE(b.answered.HasBeenNotified());
  ASSERT_EQ(net.pending(), 2);  // [b], [c].
  net.Complete();
  net.Complete();
  b.ExpectOwnRows();
  c.ExpectOwnRows();
}

TEST(BatcherTest, RequestedOutputsOnlyInTheirOrder) {
  FakeNetwork net(2);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(2, absl::ZeroDuration()));
  Call a(2, 1);
  ASSERT_TRUE(batcher->Enqueue(a.Request({1})).ok());
  net.Complete();
  ASSERT_TRUE(a.result.ok()) << a.result.status();
  ASSERT_EQ(a.result->size(), 1u);
  EXPECT_EQ((*a.result)[0].shape(), Shape({2, 1}));
  EXPECT_EQ((*a.result)[0].data<float>()[1], 4.0f + 5.0f + 6.0f);
}

TEST(BatcherTest, CloseFailsTheWaitingAndRefusesNewOnes) {
  FakeNetwork net(4);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(4, kMaxQueueDelay));
  Call a(1, 0), b(1, 1);
  ASSERT_TRUE(batcher->Enqueue(a.Request()).ok());
  batcher->Close(absl::UnavailableError("shutting down"));
  ASSERT_TRUE(a.answered.HasBeenNotified());
  EXPECT_EQ(a.result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(batcher->Enqueue(b.Request()).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(b.answered.HasBeenNotified());
  EXPECT_EQ(net.pending(), 0);
}

TEST(BatcherTest, AFullQueueIsResourceExhausted) {
  FakeNetwork net(64);
  BatchTimer timer;
  auto batcher = Make(net, timer, Batching(64, kMaxQueueDelay));
  std::vector<std::unique_ptr<Call>> calls;
  for (int i = 0; i < 16; ++i) {
    calls.push_back(std::make_unique<Call>(1, i));
    ASSERT_TRUE(batcher->Enqueue(calls.back()->Request()).ok());
  }
  Call one_more(1, 0);
  EXPECT_EQ(batcher->Enqueue(one_more.Request()).code(),
            absl::StatusCode::kResourceExhausted);
  batcher->Flush();
  net.Complete();
  for (const auto& call : calls) call->ExpectOwnRows();
}

TEST(BatcherTest, CreateChecksTheBatchDimension) {
  FakeNetwork net(4);
  BatchTimer timer;
  BatcherOptions options = net.Options(Batching(4, absl::ZeroDuration()));
  options.outputs.push_back({"scalar", DType::kFloat32, Shape()});
  absl::StatusOr<std::shared_ptr<Batcher>> b =
      Batcher::Create(options, net.Executor(), &timer);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("'scalar'"), absl::string_view::npos)
      << b.status();
  options = net.Options(Batching(4, absl::ZeroDuration(), {5}));
  EXPECT_EQ(Batcher::Create(options, net.Executor(), &timer).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DynamicBatchingTest, Validation) {
  auto code = [](DynamicBatching b) {
    return ValidateDynamicBatching(b).code();
  };
  EXPECT_EQ(code({}), absl::StatusCode::kOk);
  EXPECT_EQ(code(Batching(8, absl::Milliseconds(1), {1, 8})),
            absl::StatusCode::kOk);
  EXPECT_EQ(code(Batching(-1, absl::ZeroDuration())),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Batching(kMaxBatchSize + 1, absl::ZeroDuration())),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Batching(8, -absl::Milliseconds(1))),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Batching(8, kMaxQueueDelay + absl::Nanoseconds(1))),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Batching(8, absl::ZeroDuration(), {0})),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Batching(8, absl::ZeroDuration(), {9})),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(Batching(0, absl::Milliseconds(1))),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace glint
