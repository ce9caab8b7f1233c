// Counting the kernel builds that runs pay for shapes met at run time.
//
// A network with dynamic dims compiles each partition once; its kernels
// build what depends on the shape (a oneDNN primitive, packed weights, a
// whole kernel for a value of unknown rank) the first time a run brings
// that shape, and keep it (ShapeKeyedCache, LateBoundKernel). That first
// run pays for the build: operators need to see how often and how long,
// to tell a cold shape from a slow model (NetworkStatistics::shape_builds).
//
// The function that executes (devices/sim's CpuFunction) owns a
// ShapeBuildRecorder and installs it on its thread for the run
// (ScopedShapeBuildRecording); a kernel that builds for a shape it has not
// met puts a ShapeBuildTimer around the build. Builds at compile time run
// with no recorder installed and are not counted (they are part of adding
// the network), nor do they read the clock.
#ifndef GLINT_DEVICES_CPU_SHAPE_BUILDS_H_
#define GLINT_DEVICES_CPU_SHAPE_BUILDS_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace glint::cpu {

// Counters of one function. Thread-safe (relaxed atomics: the two
// counters are read apart, never as one snapshot).
class ShapeBuildRecorder {
 public:
  void Record(absl::Duration took) {
    builds_.fetch_add(1, std::memory_order_relaxed);
    nanos_.fetch_add(absl::ToInt64Nanoseconds(took),
                     std::memory_order_relaxed);
  }
  // Builds recorded, and their total time.
  uint64_t builds() const { return builds_.load(std::memory_order_relaxed); }
  absl::Duration time() const {
    return absl::Nanoseconds(nanos_.load(std::memory_order_relaxed));
  }

 private:
  std::atomic<uint64_t> builds_{0};
  std::atomic<int64_t> nanos_{0};
};

// Makes `recorder` (borrowed, may be null) the calling thread's for the
// scope, restoring the previous one after (control-flow bodies nest).
// Thread-compatible: one per thread, on the stack.
class ScopedShapeBuildRecording {
 public:
  explicit ScopedShapeBuildRecording(ShapeBuildRecorder* recorder);
  ~ScopedShapeBuildRecording();
  ScopedShapeBuildRecording(const ScopedShapeBuildRecording&) = delete;
  ScopedShapeBuildRecording& operator=(const ScopedShapeBuildRecording&) =
      delete;

 private:
  ShapeBuildRecorder* const previous_;
};

// Times one build, from construction to destruction, into the calling
// thread's recorder, if one is installed. A build inside another timed
// build (a late-bound kernel building a convolution) counts once, in the
// outer one. Thread-compatible: on the stack of the building thread.
class ShapeBuildTimer {
 public:
  ShapeBuildTimer();
  ~ShapeBuildTimer();
  ShapeBuildTimer(const ShapeBuildTimer&) = delete;
  ShapeBuildTimer& operator=(const ShapeBuildTimer&) = delete;

 private:
  ShapeBuildRecorder* recorder_ = nullptr;  // Null: nothing to record.
  absl::Time start_;
};

}  // namespace glint::cpu

#endif  // GLINT_DEVICES_CPU_SHAPE_BUILDS_H_
