// OpenMP's thread count for a benchmark that runs kernels in-process.
#ifndef GLINT_BENCH_OMP_ENV_H_
#define GLINT_BENCH_OMP_ENV_H_

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "runtime/server/common/kernel_threads.h"

namespace glint::bench {

// OpenMP reads its thread count once, at start-up: unless OMP_NUM_THREADS
// is `threads` already, sets it (and, without OMP_WAIT_POLICY, the spin
// count glintd gives itself) and re-executes this program with `argv`.
// Returns only when nothing had to change.
inline void ReexecWithOmpThreads(int threads, char** argv) {
  const std::string want = std::to_string(threads);
  const char* omp = std::getenv("OMP_NUM_THREADS");
  if (omp != nullptr && want == omp) return;
  setenv("OMP_NUM_THREADS", want.c_str(), 1);
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    setenv("GOMP_SPINCOUNT", std::to_string(DefaultOmpSpinCount(cores)).c_str(),
           0);
  }
  execv("/proc/self/exe", argv);
}

}  // namespace glint::bench

#endif  // GLINT_BENCH_OMP_ENV_H_
