// Names the calling thread as `top -H`, `ps -L` and /proc/PID/task/*/comm
// show it, so that an operator (and bench/inflight_bench) can tell glintd's
// threads apart: which are per device, which are fixed pools.
#ifndef GLINT_CORE_THREAD_NAME_H_
#define GLINT_CORE_THREAD_NAME_H_

#include "absl/strings/string_view.h"

namespace glint {

// Linux keeps the first 15 bytes of `name`; the rest is cut. Best-effort:
// a failure leaves the name as it was. Thread-safe (names only the caller).
void SetCurrentThreadName(absl::string_view name);

}  // namespace glint

#endif  // GLINT_CORE_THREAD_NAME_H_
