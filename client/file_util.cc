#include "client/file_util.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace glint {
namespace {

absl::Status ErrnoError(const std::string& what, const std::string& path,
                        int err) {
  const std::string msg =
      absl::StrCat("cannot ", what, " '", path, "': ", std::strerror(err));
  switch (err) {
    case ENOENT: return absl::NotFoundError(msg);
    case EACCES:
    case EPERM: return absl::PermissionDeniedError(msg);
    default: return absl::InternalError(msg);
  }
}

}  // namespace

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' is a directory, not a file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("read", path, errno);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return ErrnoError("read", path, errno);
  return std::move(contents).str();
}

absl::StatusOr<FileReader> FileReader::Open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (std::filesystem::is_directory(path, ec)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "' is a directory, not a file"));
    }
    if (std::filesystem::exists(path, ec)) {
      // A pipe or a device: no size to announce, read it whole.
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "' is not a regular file"));
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("read", path, errno);
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(0, std::ios::beg);
  if (size < 0 || !in) return ErrnoError("read", path, errno);
  return FileReader(path, std::move(in), static_cast<uint64_t>(size));
}

absl::Status FileReader::Next(size_t max_bytes, std::string* piece) {
  const uint64_t n = std::min<uint64_t>(max_bytes, size_ - read_);
  piece->resize(n);
  if (n == 0) return absl::OkStatus();
  in_.read(piece->data(), static_cast<std::streamsize>(n));
  if (static_cast<uint64_t>(in_.gcount()) != n) {
    return absl::DataLossError(absl::StrCat(
        "cannot read '", path_, "': it ended after ", read_ + in_.gcount(),
        " of its ", size_, " bytes (did it change?)"));
  }
  read_ += n;
  return absl::OkStatus();
}

absl::Status WriteStringToFile(const std::string& path,
                               absl::string_view contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return ErrnoError("write", path, errno);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) return ErrnoError("write", path, errno);
  return absl::OkStatus();
}

}  // namespace glint
