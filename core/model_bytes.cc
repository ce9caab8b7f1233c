#include "core/model_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace glint {

absl::StatusOr<ModelBytes> ModelBytes::MapFile(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open '", path, "'"));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return absl::ErrnoToStatus(err, absl::StrCat("cannot stat '", path, "'"));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is not a regular file"));
  }
  ModelBytes bytes;
  bytes.size_ = static_cast<size_t>(st.st_size);
  if (bytes.size_ > 0) {
    // The mapping keeps the file's pages; the descriptor is not needed.
    void* mapping = ::mmap(nullptr, bytes.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);
    if (mapping == MAP_FAILED) {
      return absl::ErrnoToStatus(err, absl::StrCat("cannot map '", path, "'"));
    }
    // Read once front to back by each pass (parse, digest, copy).
    ::madvise(mapping, bytes.size_, MADV_SEQUENTIAL);
    bytes.mapping_ = mapping;
    bytes.data_ = static_cast<const char*>(mapping);
  } else {
    ::close(fd);
  }
  return bytes;
}

ModelBytes::ModelBytes(ModelBytes&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapping_(std::exchange(other.mapping_, nullptr)) {}

ModelBytes& ModelBytes::operator=(ModelBytes&& other) noexcept {
  if (this != &other) {
    if (mapping_ != nullptr) ::munmap(mapping_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapping_ = std::exchange(other.mapping_, nullptr);
  }
  return *this;
}

ModelBytes::~ModelBytes() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

void ModelBytes::Evict() const {
  // A private mapping nobody wrote to: dropping its pages loses nothing,
  // the next touch reads them from the file again.
  if (mapping_ != nullptr) ::madvise(mapping_, size_, MADV_DONTNEED);
}

}  // namespace glint
