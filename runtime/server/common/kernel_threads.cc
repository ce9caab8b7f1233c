#include "runtime/server/common/kernel_threads.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace glint {

int64_t DefaultOmpSpinCount(int cores) {
  return cores <= kFewCores ? kShortOmpSpinCount : kLibgompOmpSpinCount;
}

absl::Status ApplyOmpSpinCount(int64_t spin_count, char** argv) {
  if (spin_count < 0 || std::getenv("GOMP_SPINCOUNT") != nullptr ||
      std::getenv("OMP_WAIT_POLICY") != nullptr) {
    return absl::OkStatus();
  }
  const std::string value = std::to_string(spin_count);
  if (setenv("GOMP_SPINCOUNT", value.c_str(), 1) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot set GOMP_SPINCOUNT: ", std::strerror(errno)));
  }
  execv("/proc/self/exe", argv);
  const int err = errno;
  unsetenv("GOMP_SPINCOUNT");
  return absl::InternalError(absl::StrCat(
      "cannot re-execute glintd with GOMP_SPINCOUNT=", value, ": ",
      std::strerror(err)));
}

}  // namespace glint
