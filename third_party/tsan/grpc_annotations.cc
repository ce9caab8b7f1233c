// ThreadSanitizer annotations for Debian's (uninstrumented) gRPC.
//
// gRPC hands a batch's completion from the thread that started it to the
// one that takes its tag off a completion queue through lock-free queues
// TSan cannot see. The code on both sides is often ours or gRPC's inline
// headers (grpcpp's CallOpSet, the callback API's functors, compiled into
// our binaries and instrumented): TSan would report the completion
// handler's reads of what the starting thread wrote as races. gRPC's
// contract orders them: everything done before grpc_call_start_batch
// happens before its tag comes out of grpc_completion_queue_next or _pluck
// (the callback API's "nexting" threads take functor tags with
// grpc_completion_queue_next too). As for Abseil (absl_annotations.cc), the
// executable's definitions of these entry points take precedence over
// libgrpc's (libgrpc++ calls them through its PLT), forward to the real
// ones, and tell TSan about the edge on the tag's address.
#include <dlfcn.h>
#include <grpc/grpc.h>
#include <sanitizer/tsan_interface.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

void* Real(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "grpc_tsan_annotations: %s not found\n", name);
    std::abort();
  }
  return f;
}

#define REAL(type, name) \
  static const auto real = reinterpret_cast<type>(Real(name))

// Tags are usually object addresses but may be small integers, which are
// not application memory TSan can attach a clock to.
bool Annotatable(const void* tag) {
  return reinterpret_cast<uintptr_t>(tag) >= 65536;
}

void AcquireTag(const grpc_event& ev) {
  if (ev.type == GRPC_OP_COMPLETE && Annotatable(ev.tag)) {
    __tsan_acquire(ev.tag);
  }
}

}  // namespace

extern "C" {

grpc_call_error grpc_call_start_batch(grpc_call* call, const grpc_op* ops,
                                      size_t nops, void* tag, void* reserved) {
  REAL(grpc_call_error(*)(grpc_call*, const grpc_op*, size_t, void*, void*),
       "grpc_call_start_batch");
  if (Annotatable(tag)) __tsan_release(tag);
  return real(call, ops, nops, tag, reserved);
}

grpc_event grpc_completion_queue_next(grpc_completion_queue* cq,
                                      gpr_timespec deadline, void* reserved) {
  REAL(grpc_event(*)(grpc_completion_queue*, gpr_timespec, void*),
       "grpc_completion_queue_next");
  const grpc_event ev = real(cq, deadline, reserved);
  AcquireTag(ev);
  return ev;
}

grpc_event grpc_completion_queue_pluck(grpc_completion_queue* cq, void* tag,
                                       gpr_timespec deadline, void* reserved) {
  REAL(grpc_event(*)(grpc_completion_queue*, void*, gpr_timespec, void*),
       "grpc_completion_queue_pluck");
  const grpc_event ev = real(cq, tag, deadline, reserved);
  AcquireTag(ev);
  return ev;
}

}  // extern "C"
