// How the kernels' OpenMP threads wait between parallel regions.
//
// The CPU kernels (oneDNN and ParallelFor) run on libgomp's thread teams.
// After each parallel region a team's threads busy-wait for the next one
// for GOMP_SPINCOUNT iterations before they sleep. libgomp's default,
// 300,000 iterations (milliseconds on today's CPUs), keeps them ready
// between the ops of a network, but every idle team then holds its cores
// that long after each region: glintd's own gRPC threads, the other runs
// in flight and any other process on the machine wait for them. A short
// spin (10,000: tens of microseconds) keeps a team warm within a network
// and gives the cores back soon after; 0 sleeps at once, which makes every
// small op pay a wake-up. bench/README.md ("Under contention") has the
// figures.
//
// That holds where one team is half the machine or all of it. On many
// cores the short spin costs more than it gives back: a 16-thread device
// serving 16 runs in flight leaves its workers idle between launches for
// longer than 10,000 iterations, and every launch then wakes 15 sleeping
// threads (16 cores: ResNet-50 at 16 in flight 61 runs/s at 10,000
// against 110 at libgomp's 300,000; at 1 in flight p50 11.2 against 9.2 ms;
// bench/README.md, "Many cores"). So the default depends on the host.
//
// libgomp reads GOMP_SPINCOUNT once, when it is loaded, before main(); so
// a process chooses it for itself by re-executing with it set.
//
// Thread-compatible; meant for main() before any thread starts.
#ifndef GLINT_RUNTIME_SERVER_COMMON_KERNEL_THREADS_H_
#define GLINT_RUNTIME_SERVER_COMMON_KERNEL_THREADS_H_

#include <cstdint>

#include "absl/status/status.h"

namespace glint {

// The short spin, for hosts of at most kFewCores cores.
inline constexpr int64_t kShortOmpSpinCount = 10000;
// libgomp's own default, for larger hosts.
inline constexpr int64_t kLibgompOmpSpinCount = 300000;
// Measured at 2 cores (short is better under contention) and at 16 (long
// is better, quiet and at 16 in flight); hosts in between are untested.
inline constexpr int kFewCores = 4;

// glintd's --omp_spin_count default on a host of `cores` cores:
// kShortOmpSpinCount up to kFewCores cores, kLibgompOmpSpinCount above.
int64_t DefaultOmpSpinCount(int cores);

// Makes this process's OpenMP threads spin `spin_count` iterations before
// sleeping. Nothing to do (OK) when `spin_count` < 0 (libgomp's default
// kept), or when the environment already sets GOMP_SPINCOUNT or
// OMP_WAIT_POLICY (an operator's explicit choice wins; this also ends the
// re-execution). Otherwise sets GOMP_SPINCOUNT and re-executes
// /proc/self/exe with `argv` (same pid, same arguments): it returns only
// if that fails (INTERNAL).
absl::Status ApplyOmpSpinCount(int64_t spin_count, char** argv);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_COMMON_KERNEL_THREADS_H_
