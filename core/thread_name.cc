#include "core/thread_name.h"

#include <pthread.h>

#include <string>

namespace glint {

void SetCurrentThreadName(absl::string_view name) {
  const std::string truncated(name.substr(0, 15));
  pthread_setname_np(pthread_self(), truncated.c_str());
}

}  // namespace glint
