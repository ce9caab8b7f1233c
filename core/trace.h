// A run's trace: timed slices on the host and on each device stream, written
// as Chrome trace JSON (opens in Perfetto or chrome://tracing).
#ifndef GLINT_CORE_TRACE_H_
#define GLINT_CORE_TRACE_H_

#include <deque>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace glint {

struct TraceSlice {
  std::string name;      // "partition p0", "copy x host->sim:0"...
  std::string category;  // "host", "compute", "copy", "wait".
  int process = 0;       // Track group: 0 is the host, device d is d + 1.
  std::string process_name;
  int thread = 0;        // Track within the group (a stream).
  std::string thread_name;
  absl::Time begin;
  absl::Time end;
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

  // Chrome's trace event format: one complete ("X") event per slice, with
  // process and thread names as metadata, times in microseconds from the
  // earliest slice. Slices never completed are left out.
  std::string ToChromeJson() const;

 private:
  mutable absl::Mutex mu_;
  std::deque<TraceSlice> slices_ ABSL_GUARDED_BY(mu_);
};

}  // namespace glint

#endif  // GLINT_CORE_TRACE_H_
