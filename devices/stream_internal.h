// Device-internal access to streams: what device implementations (and the
// tests of devices/) need that the rest of Glint must not use. Visible to
// devices/ only (see BUILD).
#ifndef GLINT_DEVICES_STREAM_INTERNAL_H_
#define GLINT_DEVICES_STREAM_INTERNAL_H_

#include <utility>

#include "devices/stream.h"

namespace glint::devices_internal {

// Stateless; thread-safe as the stream it is given.
class StreamInternal {
 public:
  // Stream::Enqueue: appends device work (a copy, a launch, a fault) to
  // `stream`, in stream order.
  static void Enqueue(Stream& stream, StreamWork work) {
    stream.Enqueue(std::move(work));
  }
  // Stream::EnqueueLaunch: appends work that computes (a launch, or an
  // injected stand-in for one), which a shared stream runs on the device's
  // compute thread.
  static void EnqueueLaunch(Stream& stream, StreamWork work) {
    stream.EnqueueLaunch(std::move(work));
  }
};

}  // namespace glint::devices_internal

#endif  // GLINT_DEVICES_STREAM_INTERNAL_H_
