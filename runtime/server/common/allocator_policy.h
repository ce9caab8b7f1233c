// How glintd asks glibc's malloc to give memory back to the OS. A daemon
// that adds and removes networks of hundreds of MB must shrink again when
// they go: with glibc's defaults it does not (see allocator_policy.cc).
// Linux/glibc only; elsewhere both calls do nothing.
#ifndef GLINT_RUNTIME_SERVER_COMMON_ALLOCATOR_POLICY_H_
#define GLINT_RUNTIME_SERVER_COMMON_ALLOCATOR_POLICY_H_

namespace glint {

// Sets glintd's malloc tuning; call first thing in main, before any thread
// starts (mallopt is not meant to race with allocations). Thread-unsafe.
void ConfigureAllocatorForServing();

// Returns the heap's free pages to the OS (malloc_trim(0)); called after
// AddNetwork and RemoveNetwork, whose transient copies (the request, the
// parsed model, the graph being compiled) are freed by then. Costs a walk
// of the heap's free lists: for those rare calls, never per run.
// Thread-safe.
void ReleaseFreeMemory();

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_COMMON_ALLOCATOR_POLICY_H_
