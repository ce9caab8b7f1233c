#include "core/model_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace glint {

namespace {

int OpenRetryingEintr(const char* path, int flags, mode_t mode = 0) {
  int fd;
  do {
    fd = ::open(path, flags, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

}  // namespace

absl::StatusOr<ModelBytes> ModelBytes::MapFile(const std::string& path) {
  const int fd = OpenRetryingEintr(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot open '", path, "'"));
  }
  absl::StatusOr<ModelBytes> bytes = MapDescriptor(fd, path);
  ::close(fd);
  return bytes;
}

absl::StatusOr<ModelBytes> ModelBytes::MapDescriptor(int fd,
                                                     absl::string_view label) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::ErrnoToStatus(errno,
                               absl::StrCat("cannot stat '", label, "'"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", label, "' is not a regular file"));
  }
  ModelBytes bytes;
  bytes.size_ = static_cast<size_t>(st.st_size);
  if (bytes.size_ == 0) return bytes;
  // The mapping keeps the file's pages; the descriptor is not needed.
  void* mapping = ::mmap(nullptr, bytes.size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (mapping == MAP_FAILED) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot map '", label, "'"));
  }
  // Read once front to back by each pass (parse, digest, copy).
  ::madvise(mapping, bytes.size_, MADV_SEQUENTIAL);
  bytes.mapping_ = mapping;
  bytes.data_ = static_cast<const char*>(mapping);
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

void ModelBytes::EvictRange(size_t offset, size_t length) const {
  if (mapping_ == nullptr || offset >= size_ || length == 0) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset / page * page;
  const size_t end = std::min(size_, offset + std::min(length, size_ - offset));
  ::madvise(static_cast<char*>(mapping_) + begin, end - begin, MADV_DONTNEED);
}

void ModelBytes::Evict() const {
  // A private mapping nobody wrote to: dropping its pages loses nothing,
  // the next touch reads them from the file again.
  if (mapping_ != nullptr) ::madvise(mapping_, size_, MADV_DONTNEED);
}

}  // namespace glint

namespace glint {

absl::StatusOr<ModelFileWriter> ModelFileWriter::Create(
    const std::string& dir) {
  int fd = OpenRetryingEintr(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // No O_TMPFILE on this filesystem: a named file, unlinked at once.
    std::string path = dir + "/.glint-upload-XXXXXX";
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(path.c_str());
  }
  if (fd < 0) {
    return absl::ErrnoToStatus(
        errno, absl::StrCat("cannot create a file in '", dir, "'"));
  }
  return ModelFileWriter(fd);
}

ModelFileWriter::ModelFileWriter(ModelFileWriter&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(std::exchange(other.size_, 0)) {}

ModelFileWriter& ModelFileWriter::operator=(ModelFileWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

ModelFileWriter::~ModelFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ModelFileWriter::Append(absl::string_view bytes) {
  if (fd_ < 0) return absl::FailedPreconditionError("the file is finished");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
        return absl::ResourceExhaustedError(
            absl::StrCat("no room to keep the model while it arrives: ",
                         std::strerror(err)));
      }
      return absl::ErrnoToStatus(err, "cannot write the model to its file");
    }
    bytes.remove_prefix(static_cast<size_t>(n));
    size_ += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelBytes> ModelFileWriter::Finish() {
  if (fd_ < 0) return absl::FailedPreconditionError("the file is finished");
  absl::StatusOr<ModelBytes> bytes =
      ModelBytes::MapDescriptor(fd_, "the uploaded model");
  ::close(std::exchange(fd_, -1));
  return bytes;
}

}  // namespace glint
