// ModelBytes: the serialized bytes of a model (an ONNX file's contents) as
// an add reads them, either borrowed from the caller's memory or a file
// mapped read-only.
//
// An add reads a model's bytes several times (its digest for the plan
// cache, the import's parse, the journal's copy), and in between it builds
// things as large as the model: the imported constants, the kernels' packed
// weights, the devices' copies. Bytes in the caller's memory are a copy of
// the model held through all of that. A mapped file need not be: the pages
// a pass has read stay resident only until Evict() drops them (they are
// read from the file again when next touched), so between passes the
// model costs the process nothing (issue 31, point 6: AddNetwork's peak).
//
// Thread-compatible: view() may be read from several threads at once;
// Evict() may be called from any of them (dropping pages changes nothing
// a reader can see, only what is resident).
#ifndef GLINT_CORE_MODEL_BYTES_H_
#define GLINT_CORE_MODEL_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace glint {

class ModelBytes {
 public:
  // Borrows `bytes`, which must outlive this object; Evict() does nothing.
  // Implicit, so that every API taking ModelBytes also takes bytes in
  // memory (a string, a gRPC request's field).
  ModelBytes(absl::string_view bytes)  // NOLINT(runtime/explicit)
      : data_(bytes.data()), size_(bytes.size()) {}
  ModelBytes(const std::string& bytes)  // NOLINT(runtime/explicit)
      : ModelBytes(absl::string_view(bytes)) {}
  ModelBytes(const char* bytes)  // NOLINT(runtime/explicit)
      : ModelBytes(absl::string_view(bytes)) {}

  // Maps the regular file at `path` read-only for this object's lifetime.
  // The file must not be changed while mapped (a truncated file makes
  // reading the lost pages fault). Errors: the open's or stat's errno as
  // absl::ErrnoToStatus gives it (NOT_FOUND, PERMISSION_DENIED...) naming
  // the path; INVALID_ARGUMENT for a path that is not a regular file.
  static absl::StatusOr<ModelBytes> MapFile(const std::string& path);
  // The same for an open file: `fd` stays the caller's (it may be closed
  // once this returns; the mapping keeps the file). `label` names it in
  // errors.
  static absl::StatusOr<ModelBytes> MapDescriptor(int fd,
                                                  absl::string_view label);

  ModelBytes(ModelBytes&& other) noexcept;
  ModelBytes& operator=(ModelBytes&& other) noexcept;
  ModelBytes(const ModelBytes&) = delete;
  ModelBytes& operator=(const ModelBytes&) = delete;
  ~ModelBytes();

  absl::string_view view() const { return absl::string_view(data_, size_); }
  size_t size() const { return size_; }
  // Whether the bytes are a file's mapping (owned), not borrowed memory.
  bool mapped() const { return mapping_ != nullptr; }

  // For a mapping: drops its resident pages from the process (the file
  // keeps the bytes; the kernel's page cache may keep them too, reclaimable
  // and not the process's). Call it after a pass over view() that the next
  // steps of the add do not need resident. For borrowed bytes: nothing.
  void Evict() const;
  // The same for the pages holding view()[offset, offset + length) (the
  // pages it shares at its ends included: they are read again if needed).
  void EvictRange(size_t offset, size_t length) const;

 private:
  ModelBytes() = default;

  const char* data_ = nullptr;
  size_t size_ = 0;
  void* mapping_ = nullptr;  // Owned when set; the mapping's length is size_.
};

// A model written piece by piece as it arrives (glintd's AddNetworkStream)
// into a file of its own in `dir` that no other process can open and that
// vanishes when the last of its descriptor and its mapping goes, also if
// the process dies: nothing is ever left to collect. Then mapped as
// ModelBytes, so the model never sits whole in the process's memory.
// Thread-compatible.
class ModelFileWriter {
 public:
  // An empty file in `dir` (O_TMPFILE; where the filesystem has none, a
  // named file unlinked at once). Errors: the errno's code naming `dir`.
  static absl::StatusOr<ModelFileWriter> Create(const std::string& dir);

  ModelFileWriter(ModelFileWriter&& other) noexcept;
  ModelFileWriter& operator=(ModelFileWriter&& other) noexcept;
  ModelFileWriter(const ModelFileWriter&) = delete;
  ModelFileWriter& operator=(const ModelFileWriter&) = delete;
  ~ModelFileWriter();

  // Appends `bytes`. RESOURCE_EXHAUSTED when the disk is full or a quota or
  // file size limit is reached (ENOSPC, EDQUOT, EFBIG); another errno's
  // code otherwise. After an error the writer is still valid but the file
  // is incomplete: the caller abandons it.
  absl::Status Append(absl::string_view bytes);
  // Bytes appended so far.
  uint64_t size() const { return size_; }

  // The file's bytes, mapped (ModelBytes::MapDescriptor); the writer is
  // then empty (its descriptor closed, the mapping keeping the file).
  absl::StatusOr<ModelBytes> Finish();

 private:
  explicit ModelFileWriter(int fd) : fd_(fd) {}

  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace glint

#endif  // GLINT_CORE_MODEL_BYTES_H_
