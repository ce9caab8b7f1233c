// glibc malloc settings for a process that moves tensors of hundreds of KB
// and more per call, and a way to give freed memory back to the OS.
//  - Per call: with glibc's defaults a tensor-sized block is often a fresh
//    mapping, which pays a page fault per 4 KiB on first touch. That is
//    true of a server's requests and replies and as much of a client's: a
//    `glint perf` of a segmentation network with 2 MB outputs took 17 ms a
//    call with the defaults against 7.7 ms with these settings (glintd
//    itself had them both times; allocator_policy.cc).
//  - Over time: a daemon that adds and removes networks of hundreds of MB
//    must shrink again when they go; with glibc's defaults it does not.
// Who calls ConfigureAllocatorForTensors: glintd, the glint CLI and the
// benchmarks, first thing in main. A library does not change its host
// process's malloc: programs that embed the runtime or GlintClient call it
// themselves.
// Linux/glibc only; elsewhere both calls do nothing.
#ifndef GLINT_CORE_ALLOCATOR_POLICY_H_
#define GLINT_CORE_ALLOCATOR_POLICY_H_

namespace glint {

// Sets the malloc tuning above for the whole process; call first thing in
// main, before any thread starts (mallopt is not meant to race with
// allocations). Thread-unsafe.
void ConfigureAllocatorForTensors();

// Returns the heap's free pages to the OS (malloc_trim(0)); called after
// AddNetwork and RemoveNetwork, whose transient copies (the request, the
// parsed model, the graph being compiled) are freed by then. Costs a walk
// of the heap's free lists: for those rare calls, never per run.
// Thread-safe.
void ReleaseFreeMemory();

}  // namespace glint

#endif  // GLINT_CORE_ALLOCATOR_POLICY_H_
