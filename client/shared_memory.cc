#include "client/shared_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"

namespace glint {
namespace {

constexpr uint64_t kWindowAlignment = 64;

uint64_t AlignUp(uint64_t n) {
  return (n + kWindowAlignment - 1) / kWindowAlignment * kWindowAlignment;
}

std::string FreshKey() {
  static std::atomic<uint64_t> counter{0};
  std::random_device random;
  return absl::StrCat("/glint_", getpid(), "_", counter++, "_",
                      absl::Hex(random(), absl::kZeroPad8));
}

// Bytes of a tensor of `info`'s dtype and shape; -1 when not static.
int64_t StaticBytes(const ValueInfo& info) {
  if (!info.shape.IsStatic() || DTypeSize(info.dtype) == 0) return -1;
  if (!CheckTensorSize(info.dtype, info.shape).ok()) return -1;
  return info.shape.NumElements() * static_cast<int64_t>(DTypeSize(info.dtype));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> SharedMemoryRegion::Create(
    size_t byte_size, std::string key) {
  if (byte_size == 0) {
    return absl::InvalidArgumentError("a shared-memory region needs bytes");
  }
  if (key.empty()) key = FreshKey();
  if (key.front() != '/') key = absl::StrCat("/", key);
  std::unique_ptr<SharedMemoryRegion> region(new SharedMemoryRegion());
  const int fd = shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC,
                          0600);
  if (fd < 0) {
    const int error = errno;
    const std::string message = absl::StrCat(
        "cannot create shared memory '", key, "': ", std::strerror(error));
    if (error == EEXIST) return absl::AlreadyExistsError(message);
    if (error == EINVAL || error == ENAMETOOLONG) {
      return absl::InvalidArgumentError(message);
    }
    return absl::ResourceExhaustedError(message);
  }
  region->key_ = key;
  region->linked_ = true;  // From here on the destructor removes it.
  // posix_fallocate rather than ftruncate alone: /dev/shm's pages are
  // reserved now, so a full tmpfs fails here and not as SIGBUS later.
  int error = ftruncate(fd, static_cast<off_t>(byte_size)) == 0
                  ? posix_fallocate(fd, 0, static_cast<off_t>(byte_size))
                  : errno;
  void* p = MAP_FAILED;
  if (error == 0) {
    p = mmap(nullptr, byte_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) error = errno;
  }
  close(fd);
  if (error != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot size or map shared memory '", key, "' to ",
                     byte_size, " bytes: ", std::strerror(error)));
  }
  region->data_ = static_cast<uint8_t*>(p);
  region->size_ = byte_size;
  return region;
}

SharedMemoryRegion::~SharedMemoryRegion() {
  if (data_ != nullptr) munmap(data_, size_);
  Unlink();
}

void SharedMemoryRegion::Unlink() {
  if (linked_) shm_unlink(key_.c_str());
  linked_ = false;
}

absl::StatusOr<std::unique_ptr<SharedMemorySession>>
SharedMemorySession::Create(GlintClient* client, std::vector<ValueInfo> inputs,
                            std::vector<ValueInfo> outputs, int slots) {
  if (slots < 1) {
    return absl::InvalidArgumentError("a session needs at least one slot");
  }
  std::unique_ptr<SharedMemorySession> session(new SharedMemorySession());
  session->client_ = client;
  uint64_t offset = 0;
  for (ValueInfo& info : inputs) {
    const int64_t bytes = StaticBytes(info);
    if (bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", info.ToString(),
                       " has no static size to place in shared memory"));
    }
    session->inputs_.push_back({std::move(info), offset,
                                static_cast<uint64_t>(bytes)});
    offset = AlignUp(offset + static_cast<uint64_t>(bytes));
  }
  std::vector<ValueInfo> placed;
  for (ValueInfo& info : outputs) {
    session->requested_outputs_.push_back(info.name);
    if (StaticBytes(info) < 0) {
      session->unplaced_outputs_.push_back(std::move(info));
    } else {
      placed.push_back(std::move(info));
    }
  }
  session->slots_.resize(slots);
  for (std::vector<Window>& slot : session->slots_) {
    for (const ValueInfo& info : placed) {
      const uint64_t bytes = static_cast<uint64_t>(StaticBytes(info));
      slot.push_back({info, offset, bytes});
      offset = AlignUp(offset + bytes);
    }
  }
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::Create(std::max<uint64_t>(offset, 1));
  if (!region.ok()) return region.status();
  session->region_ = *std::move(region);
  session->name_ = session->region_->key().substr(1);
  absl::Status s = client->RegisterSharedMemory(
      session->name_, session->region_->key(), 0, session->region_->size());
  if (!s.ok()) return s;
  session->registered_ = true;
  session->region_->Unlink();
  return session;
}

SharedMemorySession::~SharedMemorySession() {
  if (registered_) (void)client_->UnregisterSharedMemory(name_);
}

absl::Status SharedMemorySession::WriteInput(const NamedTensor& input) {
  for (const Window& w : inputs_) {
    if (w.info.name != input.name) continue;
    if (input.tensor.dtype() != w.info.dtype ||
        input.tensor.shape() != w.info.shape || !input.tensor.valid()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", input.name, "' is ", DTypeName(input.tensor.dtype()),
          input.tensor.shape().ToString(), "; the session holds ",
          w.info.ToString()));
    }
    if (w.byte_size > 0) {
      std::memcpy(region_->data() + w.offset, input.tensor.raw_data(),
                  w.byte_size);
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("the session has no input '", input.name, "'"));
}

RunNetworkCall SharedMemorySession::MakeCall(int slot) const {
  RunNetworkCall call;
  for (const Window& w : inputs_) {
    call.shared_memory_inputs.push_back(
        {w.info.name, w.info.dtype, w.info.shape,
         {name_, w.offset, w.byte_size}});
  }
  call.requested_outputs = requested_outputs_;
  for (const Window& w : slots_[slot]) {
    call.output_shared_memory[w.info.name] = {name_, w.offset, w.byte_size};
  }
  return call;
}

absl::StatusOr<std::vector<NamedTensor>> SharedMemorySession::ReadOutputs(
    const RunNetworkReply& reply, int slot) const {
  std::vector<NamedTensor> outputs = reply.outputs;
  for (const SharedMemoryTensor& t : reply.shared_memory_outputs) {
    auto w = std::find_if(
        slots_[slot].begin(), slots_[slot].end(),
        [&](const Window& w) { return w.info.name == t.name; });
    const int64_t bytes = StaticBytes({t.name, t.dtype, t.shape});
    if (w == slots_[slot].end() || t.window.region != name_ ||
        t.window.offset != w->offset || bytes < 0 ||
        static_cast<uint64_t>(bytes) != t.window.byte_size ||
        t.window.byte_size > w->byte_size) {
      return absl::InternalError(absl::StrCat(
          "glintd wrote output '", t.name, "' (", t.window.byte_size,
          " bytes at ", t.window.region, "+", t.window.offset,
          ") elsewhere than its window"));
    }
    absl::StatusOr<Tensor> tensor = Tensor::FromBytes(
        t.dtype, t.shape,
        absl::Span<const uint8_t>(region_->data() + w->offset,
                                  t.window.byte_size));
    if (!tensor.ok()) return tensor.status();
    outputs.push_back({t.name, *std::move(tensor)});
  }
  // The reply's order: requested_outputs_ is the network's.
  std::vector<NamedTensor> ordered;
  for (const std::string& name : requested_outputs_) {
    for (NamedTensor& t : outputs) {
      if (t.name == name) ordered.push_back(std::move(t));
    }
  }
  if (ordered.size() != outputs.size()) {
    return absl::InternalError("glintd answered outputs not asked for");
  }
  return ordered;
}

absl::StatusOr<std::vector<NamedTensor>> RunNetworkInSharedMemory(
    GlintClient& client, absl::string_view name,
    const std::vector<NamedTensor>& inputs,
    const std::vector<std::string>& requested_outputs,
    absl::Duration timeout, std::string* trace_json, bool profile) {
  absl::StatusOr<NetworkInfo> network = client.GetNetwork(name);
  if (!network.ok()) return network.status();
  std::vector<ValueInfo> outputs;
  if (requested_outputs.empty()) {
    outputs = network->outputs;
  } else {
    for (const std::string& o : requested_outputs) {
      auto it = std::find_if(network->outputs.begin(), network->outputs.end(),
                             [&](const ValueInfo& v) { return v.name == o; });
      if (it == network->outputs.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("network '", name, "' has no output '", o, "'"));
      }
      outputs.push_back(*it);
    }
  }
  std::vector<ValueInfo> input_infos;
  for (const NamedTensor& t : inputs) {
    input_infos.push_back({t.name, t.tensor.dtype(), t.tensor.shape()});
  }
  absl::StatusOr<std::unique_ptr<SharedMemorySession>> session =
      SharedMemorySession::Create(&client, std::move(input_infos),
                                  std::move(outputs));
  if (!session.ok()) return session.status();
  for (const NamedTensor& t : inputs) {
    if (absl::Status s = (*session)->WriteInput(t); !s.ok()) return s;
  }
  RunNetworkCall call = (*session)->MakeCall(0);
  call.timeout = timeout;
  call.trace = trace_json != nullptr;
  call.profile = profile;
  absl::StatusOr<RunNetworkReply> reply = client.Run(name, call);
  if (!reply.ok()) return reply.status();
  if (trace_json != nullptr) *trace_json = std::move(reply->trace_json);
  return (*session)->ReadOutputs(*reply, 0);
}

}  // namespace glint
