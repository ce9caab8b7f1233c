#include "runtime/server/allocator_policy.h"

// Any libc header defines __GLIBC__ (through <features.h>); the test below
// needs it defined first.
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace glint {

#if defined(__GLIBC__)

void ConfigureAllocatorForServing() {
  // One arena. glibc otherwise gives threads their own arenas (up to 8 per
  // core) as they contend; memory freed into an arena stays with it, so
  // the blocks of one add/run/remove cycle end up spread over arenas that
  // each keep their high-water mark, and trimming one frees nothing of the
  // others. Per-thread caches (tcache) still serve the small allocations of
  // runs without taking the arena's lock.
  mallopt(M_ARENA_MAX, 1);
  // Fixed thresholds. By default both are dynamic: each time a mapped
  // block is freed, glibc raises the mmap threshold to its size (up to
  // 32 MiB), so after the first network is removed its weights-sized
  // blocks (parsed tensors, compiled graphs) come from the heap instead,
  // where one long-lived small block allocated after them pins them. With
  // a fixed threshold a block of 1 MiB or more is always its own mapping,
  // unmapped when freed; the heap keeps only small blocks, and the top of
  // the heap is returned once 8 MiB of it are free.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 8 << 20);
}

void ReleaseFreeMemory() { malloc_trim(0); }

#else

void ConfigureAllocatorForServing() {}
void ReleaseFreeMemory() {}

#endif

}  // namespace glint
