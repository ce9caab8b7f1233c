// A run's trace: timed slices on the host and on each device stream, written
// as Chrome trace JSON (opens in Perfetto or chrome://tracing).
#ifndef GLINT_CORE_TRACE_H_
#define GLINT_CORE_TRACE_H_

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace glint {

class RunTrace;

struct TraceSlice {
  // "partition p0", "copy x host->sim:0", a node's name...
  std::string name;
  // "host", "compute", "copy", "wait"; in profiled runs "op" (a node) and
  // "reorder" (a layout Transpose the CPU optimiser inserted).
  std::string category;
  int process = 0;       // Track group: 0 is the host, device d is d + 1.
  std::string process_name;
  int thread = 0;        // Track within the group (a stream).
  std::string thread_name;
  absl::Time begin;
  absl::Time end;
  // Chrome's "args" (key, string value), in order: a node's op type,
  // kernel and shapes (see NodeSliceArgs).
  std::vector<std::pair<std::string, std::string>> args;
};

// The "args" keys of a node's slice in a profiled run (RunOptions::profile):
// its op type, the kernel that ran it (cpu::Kernel::Describe: the op type,
// or the fused op, its attributes and the implementation), and its input
// and output dtypes and shapes as they were at run time, e.g.
// "float32[1,3,8,8], float32[4,3,3,3]" (absent optional inputs are "-").
struct NodeSliceArgs {
  static constexpr char kOpType[] = "op_type";
  static constexpr char kKernel[] = "kernel";
  static constexpr char kInputs[] = "inputs";
  static constexpr char kOutputs[] = "outputs";
};

// Where the slices of one profiled launch go: the run's trace, and the
// track (device, stream) of the launch's own partition slice, so that the
// node slices nest under it. Made by the executor for a profiled run and
// handed down to the device's launch (DeviceManager::Launch's
// LaunchOptions); null there when the run is not profiled.
struct TraceTrack {
  RunTrace* trace = nullptr;
  int process = 0;
  std::string process_name;
  int thread = 0;
  std::string thread_name;
};

// Slices are added from host and device threads while a run is in flight
// and read once it has finished. Thread-safe.
class RunTrace {
 public:
  // Adds a slice whose times are filled later; the pointer stays valid for
  // the trace's lifetime (slices live in a deque).
  TraceSlice* AddSlice(TraceSlice slice) {
    absl::MutexLock lock(&mu_);
    slices_.push_back(std::move(slice));
    return &slices_.back();
  }
  // Adds finished slices under one lock (a launch's node slices).
  void AddSlices(std::vector<TraceSlice> slices) {
    absl::MutexLock lock(&mu_);
    for (TraceSlice& s : slices) slices_.push_back(std::move(s));
  }

  // A copy of the completed slices (begin and end set), in the order they
  // were added. For readers once the run has finished: a slice still being
  // timed by a stream may be seen half-written otherwise.
  std::vector<TraceSlice> Slices() const;

  // Chrome's trace event format: one complete ("X") event per slice, with
  // its "args" when it has any, process and thread names as metadata, times
  // in microseconds from the earliest slice. Slices never completed are
  // left out.
  std::string ToChromeJson() const;

 private:
  mutable absl::Mutex mu_;
  std::deque<TraceSlice> slices_ ABSL_GUARDED_BY(mu_);
};

}  // namespace glint

#endif  // GLINT_CORE_TRACE_H_
