#include "devices/fault/fault_injecting_device.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "devices/stream_internal.h"

namespace glint {

using devices_internal::StreamInternal;

namespace {

constexpr absl::string_view kInnerParam = "inner";
constexpr absl::string_view kDefaultInnerType = "sim";

absl::Status Malformed(absl::string_view key, absl::string_view value,
                       absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat(
      "faulty device parameter ", key, "='", value, "' is not ", want));
}

absl::StatusOr<int64_t> ParseCount(absl::string_view key,
                                   absl::string_view value) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(value, &v) || v < 0) {
    return Malformed(key, value, "a non-negative integer");
  }
  return v;
}

// Bytes of a launch's outputs whose shapes are known before it runs.
uint64_t StaticOutputBytes(const CompiledFunction& function) {
  uint64_t bytes = 0;
  for (const ValueInfo& v : function.outputs()) {
    if (v.shape.IsStatic()) {
      bytes += static_cast<uint64_t>(v.shape.NumElements()) *
               DTypeSize(v.dtype);
    }
  }
  return bytes;
}

}  // namespace

FaultInjectingDevice::FaultInjectingDevice(std::unique_ptr<DeviceManager> inner,
                                           FaultOptions options)
    : inner_(std::move(inner)) {
  const bool dead = options.dead;
  {
    absl::MutexLock lock(&mu_);
    options_ = std::move(options);
    options_.dead = false;
  }
  if (dead) Kill();
}

FaultInjectingDevice::~FaultInjectingDevice() { Stop(); }

absl::StatusOr<DeviceConfig> FaultInjectingDevice::ParseConfig(
    const DeviceConfig& config, FaultOptions* options) {
  DeviceConfig inner = config;
  inner.type = std::string(kDefaultInnerType);
  inner.params.clear();
  FaultOptions parsed;
  for (const auto& [key, value] : config.params) {
    if (key == kInnerParam) {
      if (value.empty()) return Malformed(key, value, "a device type");
      inner.type = value;
    } else if (key == "fail_alloc_after_bytes") {
      uint64_t v = 0;
      if (!absl::SimpleAtoi(value, &v)) {
        return Malformed(key, value, "a byte count");
      }
      parsed.fail_alloc_after_bytes = v;
    } else if (key == "fail_launch") {
      GLINT_ASSIGN_OR_RETURN(parsed.fail_launch, ParseCount(key, value));
    } else if (key == "hang_launch") {
      GLINT_ASSIGN_OR_RETURN(parsed.hang_launch, ParseCount(key, value));
    } else if (key == "kill_at_launch") {
      GLINT_ASSIGN_OR_RETURN(parsed.kill_at_launch, ParseCount(key, value));
    } else if (key == "launch_delay_ms") {
      double ms = 0;
      if (!absl::SimpleAtod(value, &ms) || !(ms >= 0) || ms > 3.6e6) {
        return Malformed(key, value, "a number of milliseconds (0 to 1 h)");
      }
      parsed.launch_delay = absl::Milliseconds(ms);
    } else if (key == "dead") {
      bool dead = false;
      if (!absl::SimpleAtob(value, &dead)) {
        return Malformed(key, value, "a boolean");
      }
      parsed.dead = dead;
    } else {
      inner.params.emplace(key, value);  // The wrapped type's to judge.
    }
  }
  *options = std::move(parsed);
  return inner;
}

void FaultInjectingDevice::SetAllocationLimit(std::optional<uint64_t> bytes) {
  absl::MutexLock lock(&mu_);
  options_.fail_alloc_after_bytes = bytes;
  allocated_bytes_ = 0;
}

void FaultInjectingDevice::SetFailLaunch(int64_t k) {
  absl::MutexLock lock(&mu_);
  options_.fail_launch = k;
}

void FaultInjectingDevice::SetHangLaunch(int64_t k) {
  absl::MutexLock lock(&mu_);
  options_.hang_launch = k;
}

void FaultInjectingDevice::SetLaunchDelay(absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  options_.launch_delay = delay;
}

void FaultInjectingDevice::Kill() {
  {
    absl::MutexLock lock(&mu_);
    dead_ = true;
  }
  Stop();
}

bool FaultInjectingDevice::dead() const {
  absl::MutexLock lock(&mu_);
  return dead_;
}

uint64_t FaultInjectingDevice::allocated_bytes() const {
  absl::MutexLock lock(&mu_);
  return allocated_bytes_;
}

int64_t FaultInjectingDevice::launch_count() const {
  absl::MutexLock lock(&mu_);
  return launches_;
}

DeviceInfo FaultInjectingDevice::GetDeviceInfo() const {
  // The wrapped device's type: apart from its faults the wrapper is that
  // device, so plans and placement treat it as one of its kind (a drill
  // device among sims takes sim partitions). Its name (faulty:N by
  // default) tells it apart.
  DeviceInfo info = inner_->GetDeviceInfo();
  if (dead()) info.unhealthy_reason = "the device died (injected fault)";
  return info;
}

void FaultInjectingDevice::Stop() {
  {
    // First release hung and delayed launches: the inner Stop() joins the
    // stream workers that run them.
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  inner_->Stop();
}

absl::Status FaultInjectingDevice::CheckAlive() const {
  absl::MutexLock lock(&mu_);
  if (dead_) {
    return absl::UnavailableError(
        absl::StrCat("injected: device ", inner_->id(), " is dead"));
  }
  if (stopped_) {
    return absl::UnavailableError(
        absl::StrCat("device ", inner_->id(), " is stopped"));
  }
  return absl::OkStatus();
}

void FaultInjectingDevice::EnqueueFailure(Stream& stream,
                                          absl::Status status) {
  StreamInternal::Enqueue(stream,
                          [status = std::move(status)] { return status; });
}

absl::Status FaultInjectingDevice::Charge(uint64_t bytes,
                                          absl::string_view what) {
  absl::MutexLock lock(&mu_);
  const std::optional<uint64_t>& limit = options_.fail_alloc_after_bytes;
  if (limit.has_value() &&
      (bytes > *limit || allocated_bytes_ > *limit - bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "injected: allocation of ", bytes, " bytes (", what, ") on device ",
        inner_->id(), " would exceed the limit of ", *limit, " bytes (",
        allocated_bytes_, " allocated)"));
  }
  allocated_bytes_ += bytes;
  return absl::OkStatus();
}

void FaultInjectingDevice::Refund(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  allocated_bytes_ -= std::min(bytes, allocated_bytes_);
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> FaultInjectingDevice::Allocate(
    size_t bytes) {
  GLINT_RETURN_IF_ERROR(CheckAlive());
  GLINT_RETURN_IF_ERROR(Charge(bytes, "Allocate"));
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> buffer =
      inner_->Allocate(bytes);
  if (!buffer.ok()) Refund(bytes);  // Nothing was allocated after all.
  return buffer;
}

uint64_t FaultInjectingDevice::AvailableMemory() const {
  return inner_->AvailableMemory();
}

absl::StatusOr<std::unique_ptr<LaunchReservation>>
FaultInjectingDevice::ReserveLaunchMemory(uint64_t bytes) {
  GLINT_RETURN_IF_ERROR(CheckAlive());
  return inner_->ReserveLaunchMemory(bytes);
}

absl::StatusOr<std::unique_ptr<Stream>> FaultInjectingDevice::CreateStream(
    int priority) {
  GLINT_RETURN_IF_ERROR(CheckAlive());
  return inner_->CreateStream(priority);
}

absl::StatusOr<Stream*> FaultInjectingDevice::AcquireStream() {
  GLINT_RETURN_IF_ERROR(CheckAlive());
  return inner_->AcquireStream();
}

void FaultInjectingDevice::ReleaseStream(Stream* stream) {
  inner_->ReleaseStream(stream);
}

absl::StatusOr<std::unique_ptr<Stream>> FaultInjectingDevice::OpenSharedStream(
    SharedStreamOptions options) {
  GLINT_RETURN_IF_ERROR(CheckAlive());
  return inner_->OpenSharedStream(std::move(options));
}

void FaultInjectingDevice::CopyToDevice(Stream& stream, const Tensor* src,
                                        DeviceTensor* dst) {
  if (absl::Status s = CheckAlive(); !s.ok()) {
    return EnqueueFailure(stream, std::move(s));
  }
  // Allocate the destination through the wrapper (so that it is charged)
  // when the copy runs: src may be produced by earlier work on the stream.
  // A kept buffer too small for this input (a larger request of a network
  // with dynamic dims) is replaced here too.
  StreamInternal::Enqueue(stream, [this, src, dst]() -> absl::Status {
    if (dst->buffer != nullptr && dst->buffer->size() >= src->num_bytes()) {
      return absl::OkStatus();
    }
    dst->buffer.reset();
    GLINT_ASSIGN_OR_RETURN(dst->buffer, Allocate(src->num_bytes()));
    return absl::OkStatus();
  });
  inner_->CopyToDevice(stream, src, dst);
}

void FaultInjectingDevice::CopyToHost(Stream& stream, const DeviceTensor* src,
                                      Tensor* dst) {
  if (absl::Status s = CheckAlive(); !s.ok()) {
    return EnqueueFailure(stream, std::move(s));
  }
  inner_->CopyToHost(stream, src, dst);
}

void FaultInjectingDevice::CopyFromPeer(Stream& stream,
                                        const DeviceTensor* src,
                                        DeviceTensor* dst) {
  if (absl::Status s = CheckAlive(); !s.ok()) {
    return EnqueueFailure(stream, std::move(s));
  }
  // The wrapped device allocates the destination itself: charge for it when
  // the copy runs (src's size is known only then).
  StreamInternal::Enqueue(
      stream, [this, src] { return Charge(src->num_bytes(), "CopyFromPeer"); });
  inner_->CopyFromPeer(stream, src, dst);
}

absl::StatusOr<std::unique_ptr<LoadedFunction>> FaultInjectingDevice::Load(
    std::shared_ptr<const CompiledFunction> function) {
  GLINT_RETURN_IF_ERROR(CheckAlive());
  const uint64_t bytes = function->constant_bytes() + function->arena_bytes();
  GLINT_RETURN_IF_ERROR(Charge(bytes, "Load"));
  absl::StatusOr<std::unique_ptr<LoadedFunction>> loaded =
      inner_->Load(std::move(function));
  if (!loaded.ok()) Refund(bytes);
  return loaded;
}

void FaultInjectingDevice::Launch(Stream& stream,
                                  const LoadedFunction& function,
                                  std::vector<const DeviceTensor*> inputs,
                                  std::vector<DeviceTensor*> outputs,
                                  const LaunchOptions& options) {
  int64_t n = 0;
  FaultOptions faults;
  {
    absl::MutexLock lock(&mu_);
    n = ++launches_;
    faults = options_;
  }
  if (absl::Status s = CheckAlive(); !s.ok()) {
    return EnqueueFailure(stream, std::move(s));
  }
  if (faults.launch_delay > absl::ZeroDuration()) {
    // A slow device, not a synchronisation aid: Stop() cuts it short. Slow
    // compute: on a shared stream it holds the compute thread.
    // Part of the launch, so the stream's work check comes first: a run
    // no longer wanted does not wait out the delay.
    StreamInternal::EnqueueLaunch(
        stream, [this, &stream, delay = faults.launch_delay]() -> absl::Status {
          GLINT_RETURN_IF_ERROR(stream.CheckWork());
          absl::MutexLock lock(&mu_);
          if (mu_.AwaitWithTimeout(absl::Condition(&stopped_), delay)) {
            return absl::UnavailableError(
                "injected launch delay cut short: device stopped");
          }
          return absl::OkStatus();
        });
  }
  if (n == faults.hang_launch) {
    StreamInternal::EnqueueLaunch(stream, [this, n]() -> absl::Status {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&stopped_));
      return absl::UnavailableError(absl::StrCat(
          "injected hang of launch ", n, " ended: device stopped"));
    });
    return;
  }
  if (n == faults.kill_at_launch) {
    // Dead from now on, but without Kill()'s Stop(): this call may come
    // from one of the device's own stream threads (a queued run started by
    // a finishing one), which Stop() would join. Work already queued on the
    // wrapped device drains; everything new fails fast.
    {
      absl::MutexLock lock(&mu_);
      dead_ = true;
      stopped_ = true;
    }
    return EnqueueFailure(
        stream, absl::UnavailableError(absl::StrCat(
                    "the device died during launch ", n, " (injected fault)")));
  }
  if (n == faults.fail_launch) {
    return EnqueueFailure(
        stream, absl::InternalError(
                    absl::StrCat("injected launch failure (launch ", n, ")")));
  }
  const uint64_t output_bytes = StaticOutputBytes(function.function());
  if (output_bytes > 0) {
    StreamInternal::Enqueue(stream, [this, output_bytes] {
      return Charge(output_bytes, "launch outputs");
    });
  }
  bool held = false;
  {
    absl::MutexLock lock(&mu_);
    held = held_;
  }
  if (held) {
    StreamInternal::EnqueueLaunch(stream, [this]() -> absl::Status {
      absl::MutexLock lock(&mu_);
      auto go = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !held_ || stopped_;
      };
      mu_.Await(absl::Condition(&go));
      if (stopped_) {
        return absl::UnavailableError("held launch ended: device stopped");
      }
      return absl::OkStatus();
    });
  }
  inner_->Launch(stream, function, std::move(inputs), std::move(outputs),
                 options);
  StreamInternal::Enqueue(stream, [this] {
    absl::MutexLock lock(&mu_);
    ++finished_launches_;
    return absl::OkStatus();
  });
}

void FaultInjectingDevice::Hold(bool held) {
  absl::MutexLock lock(&mu_);
  held_ = held;
}

int64_t FaultInjectingDevice::finished_launches() const {
  absl::MutexLock lock(&mu_);
  return finished_launches_;
}

bool FaultInjectingDevice::AwaitFinishedLaunches(int64_t n,
                                                 absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return finished_launches_ >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
}

absl::Status RegisterFaultInjectingDeviceType(DeviceRegistry& registry) {
  DeviceRegistry* const reg = &registry;
  absl::Status s = registry.Register(
      FaultInjectingDevice::kTypeName,
      [reg](int id, const DeviceConfig& config)
          -> absl::StatusOr<std::unique_ptr<DeviceManager>> {
        FaultOptions options;
        GLINT_ASSIGN_OR_RETURN(DeviceConfig inner_config,
                               FaultInjectingDevice::ParseConfig(config,
                                                                 &options));
        if (inner_config.name.empty()) {
          inner_config.name =
              absl::StrCat(FaultInjectingDevice::kTypeName, ":", id);
        }
        GLINT_ASSIGN_OR_RETURN(std::unique_ptr<DeviceManager> inner,
                               reg->Create(id, inner_config));
        return std::unique_ptr<DeviceManager>(
            new FaultInjectingDevice(std::move(inner), std::move(options)));
      });
  if (absl::IsAlreadyExists(s)) return absl::OkStatus();
  return s;
}

}  // namespace glint
