// What this process has resident, from /proc/self/status, for tests that
// check what a step leaves in memory (ModelBytes::Evict, an add's passes).
#ifndef GLINT_CORE_RESIDENT_MEMORY_H_
#define GLINT_CORE_RESIDENT_MEMORY_H_

#include <cstdint>

namespace glint {

// The resident file-backed pages of this process (RssFile), in bytes: a
// mapped file's pages count while they are in its mapping. -1 when
// /proc/self/status does not say.
int64_t ResidentFileBytes();

}  // namespace glint

#endif  // GLINT_CORE_RESIDENT_MEMORY_H_
