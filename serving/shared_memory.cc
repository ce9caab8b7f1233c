#include "serving/shared_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace glint {

// One registered region: the object's descriptor (to notice a shrink) and
// its mapping, [offset rounded down to a page, offset + byte_size rounded
// up), between two PROT_NONE guard pages. Immutable once made; unmapped
// by the destructor, when the registry and the last run let go of it.
class MappedSharedMemory {
 public:
  static absl::StatusOr<std::unique_ptr<MappedSharedMemory>> Open(
      SharedMemoryRegionInfo info);
  ~MappedSharedMemory();

  const SharedMemoryRegionInfo& info() const { return info_; }
  // The region's first byte (the object's byte info.offset).
  uint8_t* data() const { return data_; }
  // OK while the object still covers the region.
  absl::Status CheckNotShrunk() const;

 private:
  explicit MappedSharedMemory(SharedMemoryRegionInfo info)
      : info_(std::move(info)) {}

  const SharedMemoryRegionInfo info_;
  int fd_ = -1;
  void* reservation_ = MAP_FAILED;  // Guard, mapping, guard.
  size_t reservation_bytes_ = 0;
  uint8_t* data_ = nullptr;
};

namespace {

absl::Status ErrnoStatus(int error, absl::string_view what) {
  const std::string message = absl::StrCat(what, ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return absl::ResourceExhaustedError(message);
    case EINVAL:
    case ENAMETOOLONG:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

bool IsKeyChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

absl::Status ValidateSharedMemoryName(absl::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError("a shared-memory region needs a name");
  }
  if (name.size() > kMaxSharedMemoryNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared-memory region name of ", name.size(),
                     " bytes; the limit is ", kMaxSharedMemoryNameBytes));
  }
  for (char c : name) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          "a shared-memory region name is printable ASCII without spaces");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateSharedMemoryKey(absl::string_view key) {
  absl::string_view bare = key;
  if (!bare.empty() && bare.front() == '/') bare.remove_prefix(1);
  if (bare.empty() || bare.size() >= kMaxSharedMemoryNameBytes ||
      bare == "." || bare == ".." ||
      !std::all_of(bare.begin(), bare.end(), IsKeyChar)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad shared-memory key '", key.substr(0, kMaxSharedMemoryNameBytes),
        "': expected an optional '/' and 1-254 of [A-Za-z0-9._-], as "
        "shm_open names an object"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MappedSharedMemory>> MappedSharedMemory::Open(
    SharedMemoryRegionInfo info) {
  std::unique_ptr<MappedSharedMemory> region(
      new MappedSharedMemory(std::move(info)));
  const SharedMemoryRegionInfo& i = region->info_;
  const std::string key =
      i.key.front() == '/' ? i.key : absl::StrCat("/", i.key);
  // glibc's shm_open adds O_NOFOLLOW: a link in /dev/shm is refused.
  region->fd_ = shm_open(key.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (region->fd_ < 0) {
    return ErrnoStatus(errno,
                       absl::StrCat("cannot open shared memory '", key, "'"));
  }
  struct stat st;
  if (fstat(region->fd_, &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot stat '", key, "'"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", key, "' is not a shared-memory object"));
  }
  const uint64_t object_bytes = static_cast<uint64_t>(st.st_size);
  if (i.offset > object_bytes || i.byte_size > object_bytes - i.offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared-memory object '", key, "' holds ", object_bytes,
        " bytes, too small for a region of ", i.byte_size,
        " bytes at offset ", i.offset));
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t map_offset = i.offset / page * page;
  const uint64_t lead = i.offset - map_offset;
  const uint64_t map_bytes = (lead + i.byte_size + page - 1) / page * page;
  if (map_bytes > SIZE_MAX - 2 * page) {
    return absl::ResourceExhaustedError("shared-memory region too large");
  }
  region->reservation_bytes_ = static_cast<size_t>(map_bytes + 2 * page);
  region->reservation_ =
      mmap(nullptr, region->reservation_bytes_, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (region->reservation_ == MAP_FAILED) {
    return ErrnoStatus(errno, "cannot reserve address space for a region");
  }
  uint8_t* const mapped = static_cast<uint8_t*>(region->reservation_) + page;
  if (mmap(mapped, static_cast<size_t>(map_bytes), PROT_READ | PROT_WRITE,
           MAP_SHARED | MAP_FIXED, region->fd_,
           static_cast<off_t>(map_offset)) == MAP_FAILED) {
    return ErrnoStatus(errno, absl::StrCat("cannot map '", key, "'"));
  }
  region->data_ = mapped + lead;
  return region;
}

MappedSharedMemory::~MappedSharedMemory() {
  if (reservation_ != MAP_FAILED) munmap(reservation_, reservation_bytes_);
  if (fd_ >= 0) close(fd_);
}

absl::Status MappedSharedMemory::CheckNotShrunk() const {
  struct stat st;
  if (fstat(fd_, &st) != 0) {
    return ErrnoStatus(errno, absl::StrCat("cannot stat region '", info_.name,
                                           "'"));
  }
  if (static_cast<uint64_t>(st.st_size) < info_.offset + info_.byte_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shared-memory object '", info_.key, "' of region '", info_.name,
        "' was shrunk to ", st.st_size, " bytes since it was registered; "
        "register it again"));
  }
  return absl::OkStatus();
}

std::shared_ptr<void> SharedMemoryView::keep_alive() const {
  return std::const_pointer_cast<MappedSharedMemory>(region_);
}

SharedMemoryRegistry::SharedMemoryRegistry(SharedMemoryRegistryOptions options)
    : options_(options) {}

SharedMemoryRegistry::~SharedMemoryRegistry() = default;

absl::Status SharedMemoryRegistry::Register(absl::string_view name,
                                            absl::string_view key,
                                            uint64_t offset,
                                            uint64_t byte_size,
                                            absl::string_view owner) {
  GLINT_RETURN_IF_ERROR(ValidateSharedMemoryName(name));
  GLINT_RETURN_IF_ERROR(ValidateSharedMemoryKey(key));
  if (byte_size == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared-memory region '", name, "' needs a byte size above 0"));
  }
  if (offset > UINT64_MAX - byte_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared-memory region '", name, "': offset + byte size overflows"));
  }
  // Checked before mapping so that a refusal costs nothing, and again when
  // inserting (another Register may have come in between).
  {
    absl::MutexLock lock(&mu_);
    GLINT_RETURN_IF_ERROR(CheckFreeLocked(name));
  }
  SharedMemoryRegionInfo info;
  info.name = std::string(name);
  info.key = std::string(key);
  info.offset = offset;
  info.byte_size = byte_size;
  absl::StatusOr<std::unique_ptr<MappedSharedMemory>> region =
      MappedSharedMemory::Open(std::move(info));
  if (!region.ok()) return region.status();
  absl::MutexLock lock(&mu_);
  GLINT_RETURN_IF_ERROR(CheckFreeLocked(name));
  regions_.emplace(std::string(name), *std::move(region));
  owners_.emplace(std::string(name), std::string(owner));
  return absl::OkStatus();
}

absl::Status SharedMemoryRegistry::CheckFreeLocked(
    absl::string_view name) const {
  if (regions_.contains(name)) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a shared-memory region named '", name, "' is registered"));
  }
  if (static_cast<int>(regions_.size()) >= options_.max_regions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("already ", regions_.size(),
                     " shared-memory regions registered, the limit"));
  }
  return absl::OkStatus();
}

absl::Status SharedMemoryRegistry::Unregister(absl::string_view name) {
  std::shared_ptr<const MappedSharedMemory> region;  // Let go unlocked.
  absl::MutexLock lock(&mu_);
  auto it = regions_.find(name);
  if (it == regions_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no shared-memory region named '", name, "'"));
  }
  region = std::move(it->second);
  regions_.erase(it);
  owners_.erase(name);
  return absl::OkStatus();
}

void SharedMemoryRegistry::UnregisterAll() {
  absl::flat_hash_map<std::string, std::shared_ptr<const MappedSharedMemory>>
      regions;
  absl::MutexLock lock(&mu_);
  regions.swap(regions_);
  owners_.clear();
}

void SharedMemoryRegistry::UnregisterAllOf(absl::string_view owner) {
  std::vector<std::shared_ptr<const MappedSharedMemory>> gone;  // Unlocked.
  absl::MutexLock lock(&mu_);
  for (auto it = owners_.begin(); it != owners_.end();) {
    if (it->second != owner) {
      ++it;
      continue;
    }
    auto region = regions_.find(it->first);
    gone.push_back(std::move(region->second));
    regions_.erase(region);
    owners_.erase(it++);
  }
}

absl::StatusOr<std::vector<SharedMemoryRegionInfo>>
SharedMemoryRegistry::Regions(absl::string_view name) const {
  std::vector<SharedMemoryRegionInfo> infos;
  absl::MutexLock lock(&mu_);
  if (!name.empty()) {
    auto it = regions_.find(name);
    if (it == regions_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no shared-memory region named '", name, "'"));
    }
    infos.push_back(it->second->info());
    return infos;
  }
  for (const auto& [unused, region] : regions_) {
    infos.push_back(region->info());
  }
  std::sort(infos.begin(), infos.end(),
            [](const SharedMemoryRegionInfo& a,
               const SharedMemoryRegionInfo& b) { return a.name < b.name; });
  return infos;
}

int SharedMemoryRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(regions_.size());
}

absl::StatusOr<SharedMemoryView> SharedMemoryRegistry::View(
    const SharedMemoryRef& ref, absl::string_view what) const {
  SharedMemoryView view;
  {
    absl::MutexLock lock(&mu_);
    auto it = regions_.find(ref.region);
    if (it != regions_.end()) view.region_ = it->second;
  }
  if (view.region_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": no shared-memory region named '",
                     ref.region.substr(0, kMaxSharedMemoryNameBytes),
                     "' is registered"));
  }
  const uint64_t region_bytes = view.region_->info().byte_size;
  if (ref.offset > region_bytes || ref.byte_size > region_bytes - ref.offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", ref.byte_size, " bytes at offset ", ref.offset,
        " do not fit shared-memory region '", ref.region, "' of ",
        region_bytes, " bytes"));
  }
  GLINT_RETURN_IF_ERROR(view.region_->CheckNotShrunk());
  view.data_ = view.region_->data() + ref.offset;
  view.size_ = static_cast<size_t>(ref.byte_size);
  return view;
}

absl::StatusOr<Tensor> SharedMemoryRegistry::BorrowTensor(
    const SharedMemoryRef& ref, DType dtype, const Shape& shape,
    absl::string_view what) const {
  GLINT_RETURN_IF_ERROR(CheckTensorSize(dtype, shape, what));
  if (!shape.IsStatic() || DTypeSize(dtype) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " of type ", DTypeName(dtype), " and shape ",
                     shape.ToString(), " cannot lie in shared memory"));
  }
  const uint64_t bytes =
      static_cast<uint64_t>(shape.NumElements()) * DTypeSize(dtype);
  if (bytes != ref.byte_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is ", DTypeName(dtype), shape.ToString(), ", ", bytes,
        " bytes, but its shared-memory window holds ", ref.byte_size));
  }
  GLINT_ASSIGN_OR_RETURN(SharedMemoryView view, View(ref, what));
  return Tensor::Borrow(dtype, shape, view.data(), view.keep_alive());
}

absl::Status CopyTensorToWindow(const Tensor& tensor,
                                const SharedMemoryView& window,
                                absl::string_view what) {
  const size_t bytes = tensor.num_bytes();
  if (bytes > window.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " is ", DTypeName(tensor.dtype()), tensor.shape().ToString(),
        ", ", bytes, " bytes, more than its shared-memory window of ",
        window.size()));
  }
  if (bytes > 0) std::memcpy(window.data(), tensor.raw_data(), bytes);
  return absl::OkStatus();
}

}  // namespace glint
