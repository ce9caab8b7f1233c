// For tests: what this process has resident (/proc/self/status), and a
// full disk as the kernel reports it.
#ifndef GLINT_CORE_TEST_PROCESS_H_
#define GLINT_CORE_TEST_PROCESS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace glint {

// The resident file-backed pages of this process (RssFile), in bytes: a
// mapped file's pages count while they are in its mapping. -1 when
// /proc/self/status does not say.
int64_t ResidentFileBytes();

// Runs `body` with the process's file size limit (RLIMIT_FSIZE) at
// `max_bytes` and SIGXFSZ ignored (as glintd ignores it), so that a write
// beyond it fails with EFBIG, the way a full disk fails one with ENOSPC;
// then restores both. An error when the limit cannot be set or restored
// (`body` has not run in the first case).
absl::Status WithFileSizeLimit(uint64_t max_bytes,
                               const std::function<void()>& body);

// A fresh, empty folder `name` under the test's temp dir ($TEST_TMPDIR, or
// /tmp), emptied if it exists; and whether a folder has no entries.
std::string FreshTestDir(const std::string& name);
bool IsEmptyDir(const std::string& dir);

}  // namespace glint

#endif  // GLINT_CORE_TEST_PROCESS_H_
