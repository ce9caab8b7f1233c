// Whole-file reads and writes with absl::Status errors that name the path.
// Thread-safe.
#ifndef GLINT_CLIENT_FILE_UTIL_H_
#define GLINT_CLIENT_FILE_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace glint {

// NOT_FOUND if `path` does not exist, INVALID_ARGUMENT if it is a directory,
// PERMISSION_DENIED / INTERNAL for other failures.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// A file read piece by piece (a model streamed to glintd, never whole in
// memory). Thread-compatible.
class FileReader {
 public:
  // Errors as ReadFileToString's.
  static absl::StatusOr<FileReader> Open(const std::string& path);

  // The file's size when opened.
  uint64_t size() const { return size_; }
  // Replaces `*piece` with the next min(max_bytes, what is left) bytes;
  // empty at the end. DATA_LOSS naming the path if the file ends early
  // (it shrank) or cannot be read.
  absl::Status Next(size_t max_bytes, std::string* piece);

 private:
  FileReader(std::string path, std::ifstream in, uint64_t size)
      : path_(std::move(path)), in_(std::move(in)), size_(size) {}

  std::string path_;
  std::ifstream in_;
  uint64_t size_ = 0;
  uint64_t read_ = 0;
};
// Replaces the file's contents.
absl::Status WriteStringToFile(const std::string& path,
                               absl::string_view contents);

}  // namespace glint

#endif  // GLINT_CLIENT_FILE_UTIL_H_
