#include "devices/sim/sim_device.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "runtime/status_macros.h"

namespace glint {

// Memory of a simulated device: a host allocation that only the device's
// copy engine and kernels touch.
class SimDevice::SimBuffer : public DeviceBuffer {
 public:
  SimBuffer(SimDevice* device, void* data, size_t size)
      : device_(device), data_(data), size_(size) {}
  ~SimBuffer() override {
    std::free(data_);
    device_->ReturnMemory(size_);
  }
  int device_id() const override { return device_->id(); }
  size_t size() const override { return size_; }
  void* device_address() const override { return data_; }

 private:
  SimDevice* const device_;
  void* const data_;
  const size_t size_;
};

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
  }

  const CompiledFunction& function() const override { return *function_; }
  int device_id() const override { return device_->id(); }
  const CpuFunction& cpu_function() const { return *function_; }
  void* constants() const { return constants_->device_address(); }

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
  void ReleaseArena(std::unique_ptr<DeviceBuffer> arena) const {
    absl::MutexLock lock(&mu_);
    free_arenas_.push_back(std::move(arena));
  }

 private:
  SimDevice* const device_;
  const std::shared_ptr<const CpuFunction> function_;
  const std::unique_ptr<DeviceBuffer> constants_;
  mutable absl::Mutex mu_;
  mutable std::vector<std::unique_ptr<DeviceBuffer>> free_arenas_
      ABSL_GUARDED_BY(mu_);
};

absl::StatusOr<std::unique_ptr<SimDevice>> SimDevice::Create(
    int id, const DeviceConfig& config, SimDeviceOptions options) {
  if (config.memory_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", id, ": memory must be positive"));
  }
  std::vector<std::string> unsupported;
  for (const auto& [key, value] : config.params) {
    if (key == "unsupported_ops") {
      unsupported = absl::StrSplit(value, '+', absl::SkipEmpty());
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "device ", id, ": unknown sim device parameter '", key, "'"));
    }
  }
  DeviceConfig named = config;
  if (named.name.empty()) named.name = absl::StrCat(config.type, ":", id);
  return std::unique_ptr<SimDevice>(
      new SimDevice(id, std::move(named), options, std::move(unsupported)));
}

SimDevice::SimDevice(int id, DeviceConfig config, SimDeviceOptions options,
                     std::vector<std::string> unsupported_ops)
    : id_(id),
      config_(std::move(config)),
      options_(options),
      backend_(std::move(unsupported_ops)) {}

SimDevice::~SimDevice() { Stop(); }

DeviceInfo SimDevice::GetDeviceInfo() const {
  DeviceInfo info;
  info.id = id_;
  info.type = config_.type;
  info.name = config_.name;
  info.memory_bytes = config_.memory_bytes;
  info.available_memory_bytes = AvailableMemory();
  for (const auto& [key, value] : config_.params) {
    if (key == "unsupported_ops") {
      info.unsupported_ops = absl::StrSplit(value, '+', absl::SkipEmpty());
    }
  }
  return info;
}

void SimDevice::Stop() {
  if (stopped_.exchange(true)) return;
  std::vector<HostStream*> streams;
  {
    absl::MutexLock lock(&streams_mu_);
    for (auto& s : streams_) streams.push_back(s.get());
  }
  for (HostStream* s : streams) {
    s->Stop(absl::UnavailableError(
        absl::StrCat("device ", config_.name, " is stopped")));
  }
}

absl::StatusOr<std::unique_ptr<DeviceBuffer>> SimDevice::Allocate(
    size_t bytes) {
  if (stopped()) {
    return absl::UnavailableError(
        absl::StrCat("device ", config_.name, " is stopped"));
  }
  {
    absl::MutexLock lock(&memory_mu_);
    if (bytes > config_.memory_bytes - used_bytes_) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "device ", config_.name, " is out of memory: ", bytes,
          " bytes requested, ", config_.memory_bytes - used_bytes_, " of ",
          config_.memory_bytes, " available"));
    }
    used_bytes_ += bytes;
  }
  void* data = AlignedAlloc(bytes);
  if (data == nullptr) {
    ReturnMemory(bytes);
    return absl::ResourceExhaustedError(absl::StrCat(
        "host memory backing device ", config_.name, " is exhausted"));
  }
  return std::unique_ptr<DeviceBuffer>(new SimBuffer(this, data, bytes));
}

void SimDevice::ReturnMemory(size_t bytes) {
  absl::MutexLock lock(&memory_mu_);
  used_bytes_ -= bytes;
}

uint64_t SimDevice::AvailableMemory() const {
  absl::MutexLock lock(&memory_mu_);
  return config_.memory_bytes - used_bytes_;
}

absl::StatusOr<Stream*> SimDevice::AcquireStream() {
  if (stopped()) {
    return absl::UnavailableError(
        absl::StrCat("device ", config_.name, " is stopped"));
  }
  absl::MutexLock lock(&streams_mu_);
  if (!free_streams_.empty()) {
    HostStream* s = free_streams_.back();
    free_streams_.pop_back();
    return s;
  }
  if (static_cast<int>(streams_.size()) >= options_.max_streams) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "device ", config_.name, " has all ", options_.max_streams,
        " streams in use"));
  }
  streams_.push_back(std::make_unique<HostStream>(
      id_, 0, absl::StrCat(config_.name, "/stream", streams_.size())));
  return streams_.back().get();
}

void SimDevice::ReleaseStream(Stream* stream) {
  absl::MutexLock lock(&streams_mu_);
  free_streams_.push_back(static_cast<HostStream*>(stream));
}

void SimDevice::CopyToDevice(Stream& stream, const Tensor* src,
                             DeviceTensor* dst) {
  stream.Enqueue([this, src, dst]() -> absl::Status {
    if (dst->buffer == nullptr) {
      GLINT_ASSIGN_OR_RETURN(dst->buffer, Allocate(src->num_bytes()));
    } else if (dst->buffer->size() < src->num_bytes()) {
      return absl::InternalError("copy to a device buffer that is too small");
    }
    dst->dtype = src->dtype();
    dst->shape = src->shape();
    if (src->num_bytes() > 0) {
      std::memcpy(dst->buffer->device_address(), src->raw_data(),
                  src->num_bytes());
    }
    return absl::OkStatus();
  });
}

void SimDevice::CopyToHost(Stream& stream, const DeviceTensor* src,
                           Tensor* dst) {
  stream.Enqueue([src, dst]() -> absl::Status {
    if (src->buffer == nullptr) {
      return absl::InternalError("copy from a device tensor with no buffer");
    }
    GLINT_ASSIGN_OR_RETURN(*dst, Tensor::Create(src->dtype, src->shape));
    if (dst->num_bytes() > 0) {
      std::memcpy(dst->raw_data(), src->buffer->device_address(),
                  dst->num_bytes());
    }
    return absl::OkStatus();
  });
}

void SimDevice::CopyFromPeer(Stream& stream, const DeviceTensor* src,
                             DeviceTensor* dst) {
  stream.Enqueue([this, src, dst]() -> absl::Status {
    if (src->buffer == nullptr) {
      return absl::InternalError("peer copy from a tensor with no buffer");
    }
    GLINT_ASSIGN_OR_RETURN(dst->buffer, Allocate(src->num_bytes()));
    dst->dtype = src->dtype;
    dst->shape = src->shape;
    if (src->num_bytes() > 0) {
      std::memcpy(dst->buffer->device_address(), src->buffer->device_address(),
                  src->num_bytes());
    }
    return absl::OkStatus();
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
  cpu->WriteConstants(constants->device_address());
  return std::unique_ptr<LoadedFunction>(new SimLoadedFunction(
      this, std::move(cpu), std::move(constants), std::move(arena)));
}

void SimDevice::Launch(Stream& stream, const LoadedFunction& function,
                       std::vector<const DeviceTensor*> inputs,
                       std::vector<DeviceTensor*> outputs) {
  const auto* loaded = static_cast<const SimLoadedFunction*>(&function);
  stream.Enqueue([this, loaded, inputs = std::move(inputs),
                  outputs = std::move(outputs)]() -> absl::Status {
    GLINT_ASSIGN_OR_RETURN(std::unique_ptr<DeviceBuffer> arena,
                           loaded->AcquireArena());
    CpuExecutionMemory memory;
    memory.constants = loaded->constants();
    memory.arena = arena->device_address();
    memory.allocate = [this](size_t bytes) { return Allocate(bytes); };
    absl::Status s =
        loaded->cpu_function().Execute(memory, inputs, outputs);
    loaded->ReleaseArena(std::move(arena));
    return s;
  });
}

}  // namespace glint
