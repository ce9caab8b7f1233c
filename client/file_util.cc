#include "client/file_util.h"

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
