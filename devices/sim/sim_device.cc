#include "devices/sim/sim_device.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "devices/cpu/kernel_util.h"
#include "devices/stream_internal.h"

namespace glint {

using devices_internal::StreamInternal;

namespace {

// Device addresses handed to host code have this bit flipped: x86-64 and
// AArch64 user addresses have it clear, so the handle is non-canonical and
// any host dereference faults at once instead of silently working.
constexpr uintptr_t kAddressTag = uintptr_t{1} << 62;

void* Tag(void* p) {
  return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) ^ kAddressTag);
}

// Sleeps until `start + duration`: a modelled item never ends earlier.
void WaitOutModel(absl::Time start, absl::Duration duration) {
  if (duration <= absl::ZeroDuration()) return;
  const absl::Duration left = start + duration - absl::Now();
  if (left > absl::ZeroDuration()) absl::SleepFor(left);
}

absl::StatusOr<double> ParsePositive(const std::string& key,
                                     const std::string& value) {
  double v = 0;
  if (!absl::SimpleAtod(value, &v) || !(v >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sim device parameter ", key, "='", value,
        "' is not a non-negative number"));
  }
  return v;
}

// Beyond any host this runs on; keeps a typo from asking for millions.
constexpr int kMaxThreads = 1024;

}  // namespace

absl::Duration SimTimingModel::ComputeTime(double flops) const {
  if (compute_flops <= 0) return absl::ZeroDuration();
  return absl::Seconds(flops / compute_flops);
}

absl::Duration SimTimingModel::CopyTime(size_t bytes) const {
  absl::Duration t = link_latency;
  if (link_bytes_per_second > 0) {
    t += absl::Seconds(static_cast<double>(bytes) / link_bytes_per_second);
  }
  return t;
}

namespace {

// Device memory of at least this size is its own anonymous mapping (see
// SimDevice::kMappedBufferBytes).
bool IsMapped(size_t bytes) { return bytes >= SimDevice::kMappedBufferBytes; }

// The length of the mapping behind a mapped buffer of `bytes`: rounded up
// to its 3 most significant bits (at most 12.5% over), so that buffers of
// nearby sizes share a size class in the transient cache, and to whole
// pages.
size_t MappedLength(size_t bytes) {
  int shift = 0;
  while ((bytes >> shift) >= 8) ++shift;
  const size_t unit = std::max<size_t>(size_t{1} << shift, 4096);
  return (bytes + unit - 1) / unit * unit;
}

void* MapAnonymous(size_t length) {
  // Pages are untouched (and cost no RSS) until written; munmap gives them
  // back to the OS at once, whatever else the heap holds.
  void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

// Memory of a simulated device: a host allocation that only the device's
// engines touch. Host code sees a tagged (non-canonical) address.
class SimDevice::SimBuffer : public DeviceBuffer {
 public:
  SimBuffer(SimDevice* device, void* data, size_t size, bool transient,
            Pool pool)
      : device_(device),
        data_(data),
        size_(size),
        transient_(transient),
        pool_(pool) {}
  ~SimBuffer() override {
    device_->HostRelease(data_, size_, transient_);
    device_->ReturnMemory(size_, pool_);
  }
  int device_id() const override { return device_->id(); }
  size_t size() const override { return size_; }
  void* device_address() const override { return Tag(data_); }
  void* host_address() const { return data_; }

 private:
  SimDevice* const device_;
  void* const data_;
  const size_t size_;
  const bool transient_;
  const Pool pool_;
};

class SimDevice::SimLaunchReservation : public LaunchReservation {
 public:
  SimLaunchReservation(SimDevice* device, uint64_t bytes)
      : device_(device), bytes_(bytes) {}
  ~SimLaunchReservation() override { device_->Unreserve(bytes_); }
  uint64_t bytes() const override { return bytes_; }

 private:
  SimDevice* const device_;
  const uint64_t bytes_;
};

void* SimDevice::HostAddress(const DeviceBuffer& buffer) {
  const auto* sim = dynamic_cast<const SimBuffer*>(&buffer);
  return sim == nullptr ? nullptr : sim->host_address();
}

// A CpuFunction with its constants resident on the device and a pool of
// arenas for executions. Thread-safe.
class SimDevice::SimLoadedFunction : public LoadedFunction {
 public:
  SimLoadedFunction(SimDevice* device,
                    std::shared_ptr<const CpuFunction> function,
                    std::unique_ptr<DeviceBuffer> constants,
                    std::unique_ptr<DeviceBuffer> first_arena)
      : device_(device),
        function_(std::move(function)),
        constants_(std::move(constants)) {
    free_arenas_.push_back(std::move(first_arena));
    device_->loaded_functions_.fetch_add(1);
  }
  ~SimLoadedFunction() override { device_->loaded_functions_.fetch_sub(1); }

  const CompiledFunction& function() const override { return *function_; }
  int device_id() const override { return device_->id(); }
  const CpuFunction& cpu_function() const { return *function_; }
  void* constants() const { return HostAddress(*constants_); }

  // An arena for one execution: a pooled one, or a new allocation.
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> AcquireArena() const {
    {
      absl::MutexLock lock(&mu_);
      if (!free_arenas_.empty()) {
        std::unique_ptr<DeviceBuffer> arena = std::move(free_arenas_.back());
        free_arenas_.pop_back();
        return arena;
      }
    }
    return device_->Allocate(function_->arena_bytes());
  }
  // Keeps one arena (the one reserved at load); arenas made for launches
  // that queued concurrently are freed, so contention never pins memory.
  // Runs launch from their device's shared stream, one after another, so
  // they only ever take the reserved one.
  void ReleaseArena(std::unique_ptr<DeviceBuffer> arena) const {
    absl::MutexLock lock(&mu_);
    if (free_arenas_.empty()) free_arenas_.push_back(std::move(arena));
  }

 private:
  SimDevice* const device_;
  const std::shared_ptr<const CpuFunction> function_;
  const std::unique_ptr<DeviceBuffer> constants_;
  mutable absl::Mutex mu_;
  mutable std::vector<std::unique_ptr<DeviceBuffer>> free_arenas_
      ABSL_GUARDED_BY(mu_);
};

// A stream created for one owner: forwards to a HostStream the device also
// tracks (so Stop() reaches it), and unregisters it when destroyed.
class SimDevice::OwnedStream : public Stream {
 public:
  OwnedStream(SimDevice* device, std::shared_ptr<HostStream> stream)
      : device_(device), stream_(std::move(stream)) {}
  ~OwnedStream() override {
    stream_->Stop(absl::CancelledError("stream destroyed"));
    device_->ForgetStream(stream_.get());
  }

  int device_id() const override { return stream_->device_id(); }
  int priority() const override { return stream_->priority(); }
  void Record(Event& event) override { stream_->Record(event); }
  void Wait(const Event& event) override { stream_->Wait(event); }
  void WaitForCompletion(const Event& event) override {
    stream_->WaitForCompletion(event);
  }
  void OnDone(std::function<void(absl::Status)> callback) override {
    stream_->OnDone(std::move(callback));
  }
  bool Query() const override { return stream_->Query(); }
  absl::Status Synchronize(absl::Time deadline) override {
    return stream_->Synchronize(deadline);
  }
  absl::Status status() const override { return stream_->status(); }
  absl::Status ClearError() override { return stream_->ClearError(); }

 protected:
  void Enqueue(StreamWork work) override {
    StreamInternal::Enqueue(*stream_, std::move(work));
  }

 private:
  SimDevice* const device_;
  const std::shared_ptr<HostStream> stream_;
};

absl::StatusOr<std::unique_ptr<SimDevice>> SimDevice::Create(
    int id, const DeviceConfig& config, SimDeviceOptions options) {
  if (config.memory_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", id, ": memory must be positive"));
  }
  std::vector<std::string> unsupported;
  SimTimingModel timing;
  int threads = 0;
  for (const auto& [key, value] : config.params) {
    if (key == "unsupported_ops") {
      unsupported = absl::StrSplit(value, '+', absl::SkipEmpty());
    } else if (key == "threads") {
      if (!absl::SimpleAtoi(value, &threads) || threads < 1 ||
          threads > kMaxThreads) {
        return absl::InvalidArgumentError(absl::StrCat(
            "device ", id, ": sim device parameter threads='", value,
            "' is not a thread count from 1 to ", kMaxThreads));
      }
    } else if (key == "compute_gflops") {
      GLINT_ASSIGN_OR_RETURN(double v, ParsePositive(key, value));
      timing.compute_flops = v * 1e9;
    } else if (key == "link_gbps") {
      GLINT_ASSIGN_OR_RETURN(double v, ParsePositive(key, value));
      timing.link_bytes_per_second = v * 1e9;
    } else if (key == "link_latency_us") {
      GLINT_ASSIGN_OR_RETURN(double v, ParsePositive(key, value));
      timing.link_latency = absl::Microseconds(v);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "device ", id, ": unknown sim device parameter '", key,
          "' (known: compute_gflops, link_gbps, link_latency_us, threads, "
          "unsupported_ops)"));
    }
  }
  DeviceConfig named = config;
  if (named.name.empty()) named.name = absl::StrCat(config.type, ":", id);
  return std::unique_ptr<SimDevice>(new SimDevice(
      id, std::move(named), options, timing, std::move(unsupported), threads));
}

SimDevice::SimDevice(int id, DeviceConfig config, SimDeviceOptions options,
                     SimTimingModel timing,
                     std::vector<std::string> unsupported_ops, int threads)
    : id_(id),
      config_(std::move(config)),
      options_(options),
      timing_(timing),
      backend_(std::move(unsupported_ops), threads),
      compute_engine_([threads] {
        if (threads > 0) cpu::SetKernelThreads(threads);
      }) {
  default_stream_ = NewStream(kDefaultStreamPriority);
}

SimDevice::~SimDevice() {
  Stop();
  absl::MutexLock lock(&cache_mu_);
  for (const auto& [length, data] : cached_mappings_) munmap(data, length);
}

DeviceInfo SimDevice::GetDeviceInfo() const {
  DeviceInfo info;
  info.id = id_;
  info.type = config_.type;
  info.name = config_.name;
  info.memory_bytes = config_.memory_bytes;
  {
    absl::MutexLock lock(&memory_mu_);
    info.available_memory_bytes = config_.memory_bytes - UsedLocked();
    info.peak_used_memory_bytes = peak_used_bytes_;
    info.launch_reserved_bytes = launch_reserve_;
  }
  info.compute_flops = timing_.compute_flops;
  info.link_bytes_per_second = timing_.link_bytes_per_second;
  info.loaded_functions = loaded_functions_.load();
  info.launches_running = launches_running_.load();
  for (const auto& [key, value] : config_.params) {
    if (key == "unsupported_ops") {
      info.unsupported_ops = absl::StrSplit(value, '+', absl::SkipEmpty());
    }
  }
  return info;
}

absl::Status SimDevice::StoppedError() const {
  return absl::UnavailableError(
      absl::StrCat("device ", config_.name, " is stopped"));
}

void SimDevice::Stop() {
  if (stopped_.exchange(true)) return;
  std::vector<std::shared_ptr<HostStream>> streams;
  std::shared_ptr<SharedStream> shared;
  {
    absl::MutexLock lock(&streams_mu_);
    streams = streams_;
    shared = shared_;
  }
  // The shared stream first: its views' callbacks then still run on
  // completions_ (or inline, once that has stopped too).
  if (shared != nullptr) shared->Stop(StoppedError());
  for (auto& s : streams) s->Stop(StoppedError());
}

std::shared_ptr<HostStream> SimDevice::NewStream(int priority) {
  absl::MutexLock lock(&streams_mu_);
  return NewStreamLocked(priority);
}

std::shared_ptr<HostStream> SimDevice::NewStreamLocked(int priority) {
  auto stream = std::make_shared<HostStream>(
      id_, priority, absl::StrCat(config_.name, "/stream", streams_.size()));
  if (stopped()) stream->Stop(StoppedError());
  streams_.push_back(stream);
  return stream;
}

std::shared_ptr<SharedStream> SimDevice::Shared() {
  absl::MutexLock lock(&streams_mu_);
  if (shared_ == nullptr) {
    completions_ = NewStreamLocked(kDefaultStreamPriority);
    SharedStream::Options options;
    options.device_id = id_;
    options.name = absl::StrCat(config_.name, "/shared");
    options.on_compute_start = [this] { compute_engine_.AdoptThread(); };
    options.callbacks = completions_;
    shared_ = SharedStream::Create(std::move(options));
    if (stopped()) shared_->Stop(StoppedError());
  }
  return shared_;
}

absl::StatusOr<std::unique_ptr<Stream>> SimDevice::OpenSharedStream(
    SharedStreamOptions options) {
  if (stopped()) return StoppedError();
  return Shared()->OpenView(std::move(options));
}

void SimDevice::ForgetStream(const HostStream* stream) {
  absl::MutexLock lock(&streams_mu_);
  streams_.erase(std::remove_if(streams_.begin(), streams_.end(),
                                [stream](const auto& s) {
                                  return s.get() == stream;
                                }),
                 streams_.end());
}

absl::StatusOr<std::unique_ptr<Stream>> SimDevice::CreateStream(int priority) {
  if (stopped()) return StoppedError();
  return std::unique_ptr<Stream>(new OwnedStream(this, NewStream(priority)));
}

absl::StatusOr<Stream*> SimDevice::AcquireStream() {
  if (stopped()) return StoppedError();
  {
    absl::MutexLock lock(&streams_mu_);
    if (!free_pool_.empty()) {
      HostStream* s = free_pool_.back();
      free_pool_.pop_back();
      return s;
    }
    if (pool_size_ >= options_.max_pool_streams) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "device ", config_.name, " has all ", options_.max_pool_streams,
          " pool streams in use"));
    }
    ++pool_size_;
  }
  return NewStream(kDefaultStreamPriority).get();
}

void SimDevice::ReleaseStream(Stream* stream) {
  auto* host = static_cast<HostStream*>(stream);
  absl::MutexLock lock(&streams_mu_);
  // A released stream starts clean for its next user; one with work still
  // pending keeps its error and leaves the pool (it is freed with the
  // device), making room for a fresh one.
  if (!host->ClearError().ok()) {
    --pool_size_;
    return;
  }
  if (std::find(free_pool_.begin(), free_pool_.end(), host) !=
      free_pool_.end()) {
    return;  // Released twice: keep one entry.
  }
  free_pool_.push_back(host);
}

void* SimDevice::HostAllocate(size_t bytes, bool transient) {
  if (!IsMapped(bytes)) return AlignedAlloc(bytes);
  const size_t length = MappedLength(bytes);
  if (transient) {
    absl::MutexLock lock(&cache_mu_);
    auto it = cached_mappings_.find(length);
    if (it != cached_mappings_.end()) {
      void* data = it->second;
      cached_mappings_.erase(it);
      cached_bytes_ -= length;
      return data;
    }
  }
  return MapAnonymous(length);
}

void SimDevice::HostRelease(void* data, size_t bytes, bool transient) {
  if (!IsMapped(bytes)) {
    std::free(data);
    return;
  }
  const size_t length = MappedLength(bytes);
  if (transient) {
    const size_t cap =
        std::min<size_t>(kTransientCacheBytes, config_.memory_bytes / 8);
    absl::MutexLock lock(&cache_mu_);
    // Room is made by unmapping the largest cached mappings first: the
    // sizes a network asks for recur run after run, so what the last run
    // freed is what the next one wants.
    while (cached_bytes_ + length > cap && !cached_mappings_.empty()) {
      auto largest = std::prev(cached_mappings_.end());
      munmap(largest->second, largest->first);
      cached_bytes_ -= largest->first;
      cached_mappings_.erase(largest);
    }
    if (cached_bytes_ + length <= cap) {
      cached_mappings_.emplace(length, data);
      cached_bytes_ += length;
      return;
    }
  }
  munmap(data, length);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> SimDevice::Allocate(
    size_t bytes) {
  return AllocateBuffer(bytes, /*transient=*/false);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> SimDevice::AllocateBuffer(
    size_t bytes, bool transient, Pool pool) {
  if (stopped()) return StoppedError();
  {
    absl::MutexLock lock(&memory_mu_);
    const uint64_t used = UsedLocked();
    // A launch's value first takes what the reserve has unused.
    const uint64_t more =
        pool == Pool::kDevice
            ? bytes
            : std::max(launch_reserve_, launch_used_ + bytes) -
                  std::max(launch_reserve_, launch_used_);
    if (more > config_.memory_bytes - used) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "device ", config_.name, " is out of memory: ", bytes,
          " bytes requested, ", config_.memory_bytes - used, " of ",
          config_.memory_bytes, " available",
          pool == Pool::kLaunch
              ? absl::StrCat(" (a launch's run-time values hold ", launch_used_,
                             " bytes, ", launch_reserve_,
                             " are reserved for them)")
              : ""));
    }
    (pool == Pool::kDevice ? device_used_ : launch_used_) += bytes;
    // Counted as reserved: the rare reservation whose host memory then
    // fails (below) still counts, as it did hold the device's room.
    peak_used_bytes_ = std::max(peak_used_bytes_, UsedLocked());
  }
  void* data = HostAllocate(bytes, transient);
  if (data == nullptr) {
    ReturnMemory(bytes, pool);
    return absl::ResourceExhaustedError(absl::StrCat(
        "host memory backing device ", config_.name, " is exhausted"));
  }
  return std::unique_ptr<DeviceBuffer>(
      new SimBuffer(this, data, bytes, transient, pool));
}

void SimDevice::ReturnMemory(size_t bytes, Pool pool) {
  absl::MutexLock lock(&memory_mu_);
  (pool == Pool::kDevice ? device_used_ : launch_used_) -= bytes;
}

uint64_t SimDevice::AvailableMemory() const {
  absl::MutexLock lock(&memory_mu_);
  return config_.memory_bytes - UsedLocked();
}

absl::StatusOr<std::unique_ptr<LaunchReservation>>
SimDevice::ReserveLaunchMemory(uint64_t bytes) {
  if (stopped()) return StoppedError();
  absl::MutexLock lock(&memory_mu_);
  const uint64_t used = UsedLocked();
  if (std::max({launch_reserve_, bytes, launch_used_}) >
      config_.memory_bytes - device_used_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("device ", config_.name, " cannot reserve ", bytes,
                     " bytes for launches' run-time values: ", launch_reserve_,
                     " are reserved, ", config_.memory_bytes - used, " of ",
                     config_.memory_bytes, " available"));
  }
  launch_reservations_.insert(bytes);
  launch_reserve_ = std::max(launch_reserve_, bytes);
  peak_used_bytes_ = std::max(peak_used_bytes_, UsedLocked());
  return std::unique_ptr<LaunchReservation>(
      new SimLaunchReservation(this, bytes));
}

void SimDevice::Unreserve(uint64_t bytes) {
  absl::MutexLock lock(&memory_mu_);
  launch_reservations_.erase(launch_reservations_.find(bytes));
  launch_reserve_ =
      launch_reservations_.empty() ? 0 : *launch_reservations_.rbegin();
}

absl::Status SimDevice::TimedCopy(const Stream& stream, size_t bytes,
                                  const std::function<void()>& copy) {
  absl::MutexLock engine(&copy_engine_);
  // After the wait for the engine, which on a slow link may be long: a run
  // no longer wanted (shut down, say) moves no bytes.
  GLINT_RETURN_IF_ERROR(stream.CheckWork());
  const absl::Time start = absl::Now();
  copy();
  WaitOutModel(start, timing_.CopyTime(bytes));
  return absl::OkStatus();
}

void SimDevice::CopyToDevice(Stream& stream, const Tensor* src,
                             DeviceTensor* dst) {
  StreamInternal::Enqueue(stream, [this, &stream, src, dst]() -> absl::Status {
    // Before anything is allocated or written: a run no longer wanted
    // leaves its destination as it was.
    GLINT_RETURN_IF_ERROR(stream.CheckWork());
    const size_t bytes = src->num_bytes();
    // A kept buffer is reused when large enough; a larger input (a shape
    // per request) replaces it, as DeviceManager promises.
    if (dst->buffer == nullptr || dst->buffer->size() < bytes) {
      dst->buffer.reset();  // Returned before the larger one is taken.
      GLINT_ASSIGN_OR_RETURN(dst->buffer,
                             AllocateBuffer(bytes, /*transient=*/true));
    }
    void* to = HostAddress(*dst->buffer);
    if (to == nullptr) {
      return absl::InternalError("copy to a buffer of another device type");
    }
    dst->dtype = src->dtype();
    dst->shape = src->shape();
    return TimedCopy(stream, bytes, [&] {
      if (bytes > 0) std::memcpy(to, src->raw_data(), bytes);
    });
  });
}

void SimDevice::CopyToHost(Stream& stream, const DeviceTensor* src,
                           Tensor* dst) {
  StreamInternal::Enqueue(stream, [this, &stream, src, dst]() -> absl::Status {
    GLINT_RETURN_IF_ERROR(stream.CheckWork());
    if (src->buffer == nullptr) {
      return absl::InternalError("copy from a device tensor with no buffer");
    }
    const void* from = HostAddress(*src->buffer);
    if (from == nullptr) {
      return absl::InternalError("copy from a buffer of another device type");
    }
    GLINT_ASSIGN_OR_RETURN(
            *dst, Tensor::CreateUninitialized(src->dtype, src->shape));
    const size_t bytes = dst->num_bytes();
    return TimedCopy(stream, bytes, [&] {
      if (bytes > 0) std::memcpy(dst->raw_data(), from, bytes);
    });
  });
}

void SimDevice::CopyToHostInto(Stream& stream, const DeviceTensor* src,
                               Tensor into, Tensor* dst) {
  StreamInternal::Enqueue(
      stream,
      [this, &stream, src, into = std::move(into), dst]() -> absl::Status {
        GLINT_RETURN_IF_ERROR(stream.CheckWork());
        if (src->buffer == nullptr) {
          return absl::InternalError(
              "copy from a device tensor with no buffer");
        }
        const void* from = HostAddress(*src->buffer);
        if (from == nullptr) {
          return absl::InternalError(
              "copy from a buffer of another device type");
        }
        // The caller's memory when src fits in it (no allocation, and the
        // bytes are where the caller wants them); a new tensor otherwise.
        absl::StatusOr<Tensor> view = into.ViewAs(src->dtype, src->shape);
        if (view.ok()) {
          *dst = *std::move(view);
        } else {
          GLINT_ASSIGN_OR_RETURN(
            *dst, Tensor::CreateUninitialized(src->dtype, src->shape));
        }
        const size_t bytes = dst->num_bytes();
        return TimedCopy(stream, bytes, [&] {
          if (bytes > 0) std::memcpy(dst->raw_data(), from, bytes);
        });
      });
}

void SimDevice::CopyFromPeer(Stream& stream, const DeviceTensor* src,
                             DeviceTensor* dst) {
  StreamInternal::Enqueue(stream, [this, &stream, src, dst]() -> absl::Status {
    GLINT_RETURN_IF_ERROR(stream.CheckWork());
    if (src->buffer == nullptr) {
      return absl::InternalError("peer copy from a tensor with no buffer");
    }
    const void* from = HostAddress(*src->buffer);
    if (from == nullptr) {
      return absl::UnimplementedError(
          "peer copy from a device that is not simulated");
    }
    const size_t bytes = src->num_bytes();
    if (dst->buffer == nullptr || dst->buffer->size() < bytes) {
      GLINT_ASSIGN_OR_RETURN(dst->buffer,
                             AllocateBuffer(bytes, /*transient=*/true));
    }
    dst->dtype = src->dtype;
    dst->shape = src->shape;
    void* to = HostAddress(*dst->buffer);
    if (to == nullptr) {
      return absl::InternalError(
          "peer copy to a buffer of another device type");
    }
    return TimedCopy(stream, bytes, [&] {
      if (bytes > 0) std::memcpy(to, from, bytes);
    });
  });
}

absl::StatusOr<std::unique_ptr<LoadedFunction>> SimDevice::Load(
    std::shared_ptr<const CompiledFunction> function) {
  auto cpu = std::dynamic_pointer_cast<const CpuFunction>(function);
  if (cpu == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device ", config_.name, " can only load functions of its backend"));
  }
  GLINT_ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> constants,
                         Allocate(cpu->constant_bytes()));
  // Reserve one execution's arena so that a network that loads can also run.
  GLINT_ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> arena,
                         Allocate(cpu->arena_bytes()));
  GLINT_RETURN_IF_ERROR(cpu->WriteConstants(HostAddress(*constants)));
  return std::unique_ptr<LoadedFunction>(new SimLoadedFunction(
      this, std::move(cpu), std::move(constants), std::move(arena)));
}

void SimDevice::Launch(Stream& stream, const LoadedFunction& function,
                       std::vector<const DeviceTensor*> inputs,
                       std::vector<DeviceTensor*> outputs,
                       const LaunchOptions& options) {
  const auto* loaded = dynamic_cast<const SimLoadedFunction*>(&function);
  const int priority = stream.priority();
  StreamInternal::EnqueueLaunch(
      stream,
      [this, &stream, loaded, priority, profile = options.profile,
       inputs = std::move(inputs),
       outputs = std::move(outputs)]() -> absl::Status {
        if (loaded == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              "launch on ", config_.name, " of a function loaded elsewhere"));
        }
        GLINT_ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> arena,
                               loaded->AcquireArena());
        CpuExecutionMemory memory;
        memory.constants = loaded->constants();
        memory.arena = HostAddress(*arena);
        memory.allocate = [this](size_t bytes) {
          return AllocateBuffer(bytes, /*transient=*/true);
        };
        memory.allocate_scratch = [this](size_t bytes) {
          return AllocateBuffer(bytes, /*transient=*/true, Pool::kLaunch);
        };
        memory.resolve = &SimDevice::HostAddress;
        const absl::Status s =
            compute_engine_.Run(priority, [&]() -> absl::Status {
              GLINT_RETURN_IF_ERROR(stream.CheckWork());
              launches_running_.fetch_add(1);
              absl::Cleanup done = [this] { launches_running_.fetch_sub(1); };
              const absl::Time start = absl::Now();
              absl::Status result = loaded->cpu_function().Execute(
                  memory, inputs, outputs, profile);
              WaitOutModel(start,
                           timing_.ComputeTime(loaded->cpu_function().flops()));
              return result;
            });
        loaded->ReleaseArena(std::move(arena));
        return s;
      });
}

}  // namespace glint
