#include "core/test_process.h"

#include <signal.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace glint {

int64_t ResidentFileBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!absl::StartsWith(line, "RssFile:")) continue;
    // "RssFile:     1234 kB"
    std::vector<absl::string_view> parts =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t kib = 0;
    if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kib)) {
      return kib * 1024;
    }
  }
  return -1;
}

absl::Status WithFileSizeLimit(uint64_t max_bytes,
                               const std::function<void()>& body) {
  struct rlimit old_limit;
  if (getrlimit(RLIMIT_FSIZE, &old_limit) != 0) {
    return absl::ErrnoToStatus(errno, "getrlimit(RLIMIT_FSIZE)");
  }
  struct sigaction ignore = {}, old_action;
  ignore.sa_handler = SIG_IGN;
  if (sigaction(SIGXFSZ, &ignore, &old_action) != 0) {
    return absl::ErrnoToStatus(errno, "sigaction(SIGXFSZ)");
  }
  struct rlimit limit = old_limit;
  limit.rlim_cur = max_bytes;
  if (setrlimit(RLIMIT_FSIZE, &limit) != 0) {
    const int err = errno;
    sigaction(SIGXFSZ, &old_action, nullptr);
    return absl::ErrnoToStatus(err, "setrlimit(RLIMIT_FSIZE)");
  }
  body();
  absl::Status restored;
  if (setrlimit(RLIMIT_FSIZE, &old_limit) != 0) {
    restored = absl::ErrnoToStatus(errno, "restoring RLIMIT_FSIZE");
  }
  if (sigaction(SIGXFSZ, &old_action, nullptr) != 0 && restored.ok()) {
    restored = absl::ErrnoToStatus(errno, "restoring SIGXFSZ");
  }
  return restored;
}

std::string FreshTestDir(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/", name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

bool IsEmptyDir(const std::string& dir) {
  return std::filesystem::directory_iterator(dir) ==
         std::filesystem::directory_iterator();
}

}  // namespace glint
