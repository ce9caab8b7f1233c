#include "devices/cpu/shape_builds.h"

#include "absl/time/clock.h"

namespace glint::cpu {

namespace {

// The recorder of the function executing on this thread, if any.
thread_local ShapeBuildRecorder* current_recorder = nullptr;
// Whether a ShapeBuildTimer is timing on this thread (nested builds count
// in the outer one).
thread_local bool timing = false;

}  // namespace

ScopedShapeBuildRecording::ScopedShapeBuildRecording(
    ShapeBuildRecorder* recorder)
    : previous_(current_recorder) {
  current_recorder = recorder;
}

ScopedShapeBuildRecording::~ScopedShapeBuildRecording() {
  current_recorder = previous_;
}

ShapeBuildTimer::ShapeBuildTimer() {
  if (current_recorder == nullptr || timing) return;
  recorder_ = current_recorder;
  timing = true;
  start_ = absl::Now();
}

ShapeBuildTimer::~ShapeBuildTimer() {
  if (recorder_ == nullptr) return;
  recorder_->Record(absl::Now() - start_);
  timing = false;
}

}  // namespace glint::cpu
