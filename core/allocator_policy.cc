#include "core/allocator_policy.h"

// Any libc header defines __GLIBC__ (through <features.h>); the test below
// needs it defined first.
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace glint {

#if defined(__GLIBC__)

void ConfigureAllocatorForTensors() {
  // One arena. glibc otherwise gives threads their own arenas (up to 8 per
  // core) as they contend; memory freed into an arena stays with it, so
  // the blocks of one add/run/remove cycle end up spread over arenas that
  // each keep their high-water mark, and trimming one frees nothing of the
  // others. Per-thread caches (tcache) still serve the small allocations of
  // runs without taking the arena's lock.
  mallopt(M_ARENA_MAX, 1);
  // Fixed thresholds. By default both are dynamic: each time a mapped
  // block is freed, glibc raises the mmap threshold to its size (up to
  // 32 MiB), so what is mapped and what comes from the heap shifts with the
  // history of the process. Fixed, a block of 64 MiB or more is always its
  // own mapping, unmapped when freed; smaller ones come from the heap and
  // are reused. That matters per run: a request's tensors (the message
  // gRPC parses, the input and output tensors, the reply) are each a block
  // of the tensor's size, and a freshly mapped block pays a page fault per
  // 4 KiB page on first touch. With a 1 MiB threshold, 1 MiB and 16 MiB
  // tensors through glintd took 13.5 and 386 ms here, against 2.0 and
  // 27 ms with 64 MiB (bench/serving_bench; this VM's page faults are
  // slow). The heap's top is returned once 128 MiB of it are free, so a
  // burst of large requests leaves at most that much cached; free blocks
  // inside the heap (a removed network's weights) are returned by
  // ReleaseFreeMemory's malloc_trim after every AddNetwork and
  // RemoveNetwork: bench/rss_bench's idle RSS after remove and over 50
  // add/run/remove cycles is the same as with a 1 MiB threshold.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
}

void ReleaseFreeMemory() { malloc_trim(0); }

#else

void ConfigureAllocatorForTensors() {}
void ReleaseFreeMemory() {}

#endif

}  // namespace glint
