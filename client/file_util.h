// Whole-file reads and writes with absl::Status errors that name the path.
// Thread-safe.
#ifndef GLINT_CLIENT_FILE_UTIL_H_
#define GLINT_CLIENT_FILE_UTIL_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace glint {

// NOT_FOUND if `path` does not exist, INVALID_ARGUMENT if it is a directory,
// PERMISSION_DENIED / INTERNAL for other failures.
absl::StatusOr<std::string> ReadFileToString(const std::string& path);
// Replaces the file's contents.
absl::Status WriteStringToFile(const std::string& path,
                               absl::string_view contents);

}  // namespace glint

#endif  // GLINT_CLIENT_FILE_UTIL_H_
