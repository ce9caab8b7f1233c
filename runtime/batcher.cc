#include "runtime/batcher.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/logging.h"
#include "core/thread_name.h"

namespace glint {

// --- BatchTimer ----------------------------------------------------------------

BatchTimer::~BatchTimer() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void BatchTimer::At(absl::Time when, std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  if (stop_) return;
  due_.emplace(when, std::move(fn));
  if (!started_) {
    started_ = true;
    thread_ = std::thread([this] {
      SetCurrentThreadName("glint-batcher");
      Loop();
    });
  }
}

void BatchTimer::Loop() {
  absl::MutexLock lock(&mu_);
  for (;;) {
    if (stop_) return;
    const absl::Time next =
        due_.empty() ? absl::InfiniteFuture() : due_.begin()->first;
    if (absl::Now() < next) {
      // Wakes at `next`, when stopped, or when an earlier time is added.
      auto woken = [this, next]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || (!due_.empty() && due_.begin()->first < next);
      };
      mu_.AwaitWithDeadline(absl::Condition(&woken), next);
      continue;
    }
    std::function<void()> fn = std::move(due_.begin()->second);
    due_.erase(due_.begin());
    mu_.Unlock();
    fn();
    mu_.Lock();
  }
}

// --- Batcher ---------------------------------------------------------------------

namespace {

// Bytes of one row (first-dim slice) of a tensor of `shape` and `dtype`.
size_t RowBytes(DType dtype, const Shape& shape) {
  int64_t elements = 1;
  for (int i = 1; i < shape.rank(); ++i) elements *= shape.dim(i);
  return static_cast<size_t>(elements) * DTypeSize(dtype);
}

// Requests merge when every input has the same dims but the first: their
// shapes without the batch dim, flattened (rank, then dims, per input).
std::vector<int64_t> MergeKey(const std::vector<Tensor>& inputs) {
  std::vector<int64_t> key;
  for (const Tensor& t : inputs) {
    key.push_back(t.shape().rank());
    for (int d = 1; d < t.shape().rank(); ++d) key.push_back(t.shape().dim(d));
  }
  return key;
}

// Rows [first, first + rows) of `batch`, a tensor of its own.
absl::StatusOr<Tensor> Rows(const Tensor& batch, int64_t first,
                            int64_t rows) {
  if (batch.shape().rank() < 1 || first + rows > batch.shape().dim(0)) {
    return absl::InternalError(absl::StrCat(
        "a batch output of shape ", batch.shape().ToString(),
        " has no rows ", first, "..", first + rows));
  }
  Shape shape = batch.shape();
  shape.mutable_dims()[0] = rows;
  absl::StatusOr<Tensor> out = Tensor::Create(batch.dtype(), shape);
  if (!out.ok()) return out.status();
  const size_t row = RowBytes(batch.dtype(), batch.shape());
  if (row * rows > 0) {
    std::memcpy(out->raw_data(),
                static_cast<const char*>(batch.raw_data()) + row * first,
                row * rows);
  }
  return out;
}

// Why a waiting or executed request no longer wants its result, if so.
absl::Status GaveUp(const BatchRequest& request, absl::Time now) {
  if (request.cancel != nullptr && request.cancel->cancelled()) {
    return absl::CancelledError("the run was cancelled");
  }
  if (now > request.deadline) {
    return absl::DeadlineExceededError("the run missed its deadline");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<Batcher>> Batcher::Create(
    BatcherOptions options, BatchExecutor execute, BatchTimer* timer) {
  if (absl::Status s = ValidateDynamicBatching(options.batching); !s.ok()) {
    return s;
  }
  if (options.batching.max_batch_size < 1) {
    return absl::InvalidArgumentError("a batcher needs a max_batch_size");
  }
  if (options.max_in_flight < 1 || options.max_queue_size < 0 ||
      timer == nullptr || !execute) {
    return absl::InvalidArgumentError(
        "a batcher needs max_in_flight >= 1, max_queue_size >= 0, a timer "
        "and an executor");
  }
  if (options.sizes.empty()) {
    options.sizes = {options.batching.max_batch_size};
  }
  for (size_t i = 0; i < options.sizes.size(); ++i) {
    const bool last = i + 1 == options.sizes.size();
    if (options.sizes[i] < 1 ||
        (last && options.sizes[i] != options.batching.max_batch_size) ||
        (!last && options.sizes[i] >= options.sizes[i + 1])) {
      return absl::InvalidArgumentError(
          "batch sizes must ascend from 1 up to max_batch_size");
    }
  }
  for (const auto* values : {&options.inputs, &options.outputs}) {
    for (const ValueInfo& v : *values) {
      if (v.shape.rank() < 1 ||
          v.shape.dim(0) != options.batching.max_batch_size) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", v.name, "' (", v.shape.ToString(),
            ") does not have the batch dimension first (",
            options.batching.max_batch_size, ")"));
      }
    }
  }
  return std::shared_ptr<Batcher>(
      new Batcher(std::move(options), std::move(execute), timer));
}

Batcher::Batcher(BatcherOptions options, BatchExecutor execute,
                 BatchTimer* timer)
    : options_(std::move(options)),
      execute_(std::move(execute)),
      timer_(timer) {}

absl::Status Batcher::Enqueue(BatchRequest request) {
  Waiting waiting;
  waiting.rows = request.inputs.empty() ? 0 : request.inputs[0].shape().dim(0);
  if (waiting.rows < 1 || waiting.rows > options_.batching.max_batch_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batched run needs 1..", options_.batching.max_batch_size,
                     " rows, not ", waiting.rows));
  }
  waiting.key = MergeKey(request.inputs);
  waiting.request = std::move(request);
  waiting.arrived = absl::Now();
  {
    absl::MutexLock lock(&mu_);
    if (!closed_.ok()) return closed_;
    if (static_cast<int>(queue_.size()) >= options_.max_queue_size) {
      return absl::ResourceExhaustedError(
          absl::StrCat("too many requests: ", queue_.size(),
                       " wait to be batched (max_queue_size)"));
    }
    queue_.push_back(std::move(waiting));
  }
  Dispatch();
  return absl::OkStatus();
}

void Batcher::Flush() {
  {
    absl::MutexLock lock(&mu_);
    flushing_ = true;
  }
  Dispatch();
}

void Batcher::Close(absl::Status reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!closed_.ok()) return;
    closed_ = reason.ok() ? absl::UnavailableError("closed") : reason;
  }
  Dispatch();  // Fails the waiting requests.
}

int Batcher::queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

int Batcher::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

BatcherCounts Batcher::counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

std::optional<Batcher::Formed> Batcher::NextBatch(
    absl::Time now, std::vector<std::pair<Waiting, absl::Status>>* failed) {
  // Requests that gave up leave first, wherever they wait.
  for (auto it = queue_.begin(); it != queue_.end();) {
    absl::Status why =
        closed_.ok() ? GaveUp(it->request, now) : closed_;
    if (why.ok()) {
      ++it;
      continue;
    }
    failed->emplace_back(std::move(*it), std::move(why));
    it = queue_.erase(it);
  }
  if (queue_.empty() || in_flight_ >= options_.max_in_flight) {
    return std::nullopt;
  }
  // The first candidate that may start now (whole, or up to its preferred
  // size); else the timer is armed for the earliest one due.
  const DynamicBatching& b = options_.batching;
  absl::Time earliest = absl::InfiniteFuture();
  for (const Candidate& c : Candidates()) {
    const absl::Time due = queue_[c.members.front()].arrived + b.max_queue_delay;
    if (c.full || flushing_ || now >= due) {
      return Take(c.members, c.members.size(), c.rows);
    }
    if (c.preferred_take > 0) {
      return Take(c.members, c.preferred_take, c.preferred_rows);
    }
    earliest = std::min(earliest, due);
  }
  if (earliest < armed_) {
    armed_ = earliest;
    timer_->At(earliest, [weak = weak_from_this()] {
      if (std::shared_ptr<Batcher> self = weak.lock()) self->Dispatch();
    });
  }
  return std::nullopt;
}

std::vector<Batcher::Candidate> Batcher::Candidates() const {
  struct KeyLess {
    bool operator()(const std::vector<int64_t>* a,
                    const std::vector<int64_t>* b) const {
      return *a < *b;
    }
  };
  const DynamicBatching& b = options_.batching;
  std::vector<Candidate> candidates;
  std::map<const std::vector<int64_t>*, size_t, KeyLess> by_key;
  for (size_t i = 0; i < queue_.size(); ++i) {
    auto [it, added] = by_key.emplace(&queue_[i].key, candidates.size());
    if (added) candidates.emplace_back();
    Candidate& c = candidates[it->second];
    if (c.full) continue;
    if (c.rows + queue_[i].rows > b.max_batch_size) {
      c.full = true;  // A request never spans two batches, nor jumps one.
      continue;
    }
    c.rows += queue_[i].rows;
    c.members.push_back(i);
    c.full = c.rows == b.max_batch_size;
    if (std::find(b.preferred_batch_sizes.begin(),
                  b.preferred_batch_sizes.end(),
                  c.rows) != b.preferred_batch_sizes.end()) {
      c.preferred_take = c.members.size();
      c.preferred_rows = c.rows;
    }
  }
  return candidates;
}

Batcher::Formed Batcher::Take(const std::vector<size_t>& members, size_t take,
                              int64_t rows) {
  Formed batch;
  batch.rows = rows;
  std::vector<bool> taken(queue_.size(), false);
  for (size_t k = 0; k < take; ++k) {
    taken[members[k]] = true;
    batch.members.push_back(std::move(queue_[members[k]]));
  }
  std::deque<Waiting> rest;
  for (size_t i = 0; i < queue_.size(); ++i) {
    if (!taken[i]) rest.push_back(std::move(queue_[i]));
  }
  queue_ = std::move(rest);
  ++in_flight_;
  return batch;
}

void Batcher::Dispatch() {
  {
    absl::MutexLock lock(&mu_);
    if (dispatching_) {
      again_ = true;
      return;
    }
    dispatching_ = true;
  }
  for (;;) {
    std::vector<std::pair<Waiting, absl::Status>> failed;
    std::optional<Formed> batch;
    {
      absl::MutexLock lock(&mu_);
      const absl::Time now = absl::Now();
      if (armed_ <= now) armed_ = absl::InfiniteFuture();
      batch = NextBatch(now, &failed);
      if (!batch.has_value() && failed.empty() && !again_) {
        dispatching_ = false;
        return;
      }
      again_ = false;
    }
    for (auto& [waiting, why] : failed) {
      waiting.request.done(std::move(why), BatchMeasures());
    }
    if (batch.has_value()) Start(*std::move(batch));
  }
}

void Batcher::Start(Formed batch) {
  BatchExecution execution;
  execution.measures = std::make_shared<BatchMeasures>();
  execution.rows = batch.rows;
  execution.requests = static_cast<int>(batch.members.size());
  execution.deadline = absl::InfinitePast();
  execution.priority = batch.members.front().request.priority;
  for (const Waiting& w : batch.members) {
    execution.deadline = std::max(execution.deadline, w.request.deadline);
    execution.priority = std::max(execution.priority, w.request.priority);
    if (execution.trace == nullptr && w.request.trace != nullptr) {
      execution.trace = w.request.trace;
      execution.profile = w.request.profile;
    }
  }
  // The smallest compiled size that holds the rows.
  execution.size = options_.sizes.back();
  for (int size : options_.sizes) {
    if (size >= batch.rows) {
      execution.size = size;
      break;
    }
  }
  // Each input: the members' rows in order, then the first row again up
  // to the size.
  absl::Status merged;
  for (size_t i = 0; i < options_.inputs.size() && merged.ok(); ++i) {
    // Every member has this shape but for its rows (the merge key).
    const DType dtype = options_.inputs[i].dtype;
    Shape shape = batch.members.front().request.inputs[i].shape();
    shape.mutable_dims()[0] = execution.size;
    absl::StatusOr<Tensor> tensor = Tensor::CreateUninitialized(dtype, shape);
    if (!tensor.ok()) {
      merged = tensor.status();
      break;
    }
    const size_t row = RowBytes(dtype, shape);
    char* out = static_cast<char*>(tensor->raw_data());
    size_t offset = 0;
    for (const Waiting& w : batch.members) {
      const Tensor& in = w.request.inputs[i];
      std::memcpy(out + offset, in.raw_data(), in.num_bytes());
      offset += in.num_bytes();
    }
    for (int64_t r = batch.rows; r < execution.size; ++r) {
      std::memcpy(out + offset, out, row);
      offset += row;
    }
    execution.inputs.push_back(*std::move(tensor));
  }
  // The callers' inputs are no longer needed: only the merged copy runs.
  for (Waiting& w : batch.members) {
    w.request.inputs.clear();
    w.request.inputs.shrink_to_fit();
  }
  if (!merged.ok()) {
    Finish(std::move(batch.members), merged, BatchMeasures());
    return;
  }
  std::shared_ptr<BatchMeasures> measures = execution.measures;
  execute_(std::move(execution),
           [self = shared_from_this(), measures,
            members = std::make_shared<std::vector<Waiting>>(
                std::move(batch.members))](
               absl::StatusOr<std::vector<Tensor>> result) {
             self->Finish(std::move(*members), std::move(result), *measures);
           });
}

void Batcher::Finish(std::vector<Waiting> members,
                     absl::StatusOr<std::vector<Tensor>> result,
                     const BatchMeasures& measures) {
  {
    absl::MutexLock lock(&mu_);
    --in_flight_;
    ++counts_.executions;
    counts_.requests += members.size();
    for (const Waiting& w : members) counts_.rows += w.rows;
  }
  // The next batch starts before this one's rows are copied out.
  Dispatch();
  if (result.ok() && result->size() != options_.outputs.size()) {
    result = absl::InternalError(
        absl::StrCat("a batch returned ", result->size(), " outputs, not ",
                     options_.outputs.size()));
  }
  const absl::Time now = absl::Now();
  int64_t first = 0;
  for (Waiting& w : members) {
    absl::StatusOr<std::vector<Tensor>> mine = std::vector<Tensor>();
    if (!result.ok()) {
      mine = result.status();
    } else if (absl::Status why = GaveUp(w.request, now); !why.ok()) {
      mine = std::move(why);
    } else {
      for (int index : w.request.outputs) {
        absl::StatusOr<Tensor> rows = Rows((*result)[index], first, w.rows);
        if (!rows.ok()) {
          mine = rows.status();
          break;
        }
        mine->push_back(*std::move(rows));
      }
    }
    first += w.rows;
    w.request.done(std::move(mine), measures);
  }
}

}  // namespace glint
