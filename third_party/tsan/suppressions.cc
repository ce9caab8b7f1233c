// ThreadSanitizer's suppressions for Glint, compiled into every TSan binary
// (TSan asks for them at start-up, so they apply to tests, glintd and any
// binary run by hand, from any directory).
//
// Each is a `called_from_lib`: TSan ignores the memory accesses of the
// interceptors (memcpy, memset, malloc, free, sendmsg...) that the named
// library calls itself. The library is Debian's, not built with
// -fsanitize=thread: TSan sees those accesses but not the atomics and
// lock-free queues by which the library orders them, so it reports races
// between the library's own threads, or between the library and the code
// that handed it a buffer, that are not there. The price: a race of ours
// whose other side is such a library call (Glint writing a buffer while
// gRPC sends it) goes unseen too. Races between two accesses by
// instrumented code (Glint's, and the libraries' inline headers compiled
// into it) are all still reported. Where a library's synchronisation is a
// call we can see, we annotate it instead (absl_annotations.cc,
// grpc_annotations.cc).
//
// Not listed: libgomp. In sanitizer builds the CPU kernels run with one
// OpenMP thread (devices/cpu/kernel.cc), so no OpenMP worker touches our
// buffers.

extern "C" const char* __tsan_default_suppressions() {
  return
      // gRPC core: its completion queues, combiners and executors hand
      // slices, byte buffers and call arenas between threads through
      // lock-free queues and reference counts (reports in tcp_send,
      // grpc_slice_*, grpc_byte_buffer_destroy, FilterStackCall).
      "called_from_lib:libgrpc.so\n"
      // gRPC's portability layer: gpr_malloc/gpr_free of those buffers.
      "called_from_lib:libgpr.so\n"
      // gRPC C++: allocates the sync server's per-call state on the thread
      // that matched the call (SyncRequestThreadManager's allocator) for a
      // server thread to use; frees ClientContext's buffers.
      "called_from_lib:libgrpc++.so\n"
      // gRPC's protobuf-lite (µpb): copies absl::Status payloads into
      // arenas for gRPC's executor threads (StatusToProto).
      "called_from_lib:libupb.so\n"
      // OpenSSL under gRPC's TLS: its record layer decrypts into slices
      // gRPC core allocated and hands them to other gRPC threads, and its
      // cipher contexts are made on one gRPC thread and reset or freed on
      // another, ordered by gRPC's own (uninstrumented) queues; TSan
      // reports those hand-offs as races of libssl's and libcrypto's
      // memcpy and free (seen under e2e_auth_test in the whole-suite TSan
      // run). The price: a race between our code and a buffer OpenSSL
      // touches goes unseen; we hand OpenSSL nothing but certificate paths.
      "called_from_lib:libssl.so\n"
      "called_from_lib:libcrypto.so\n"
      // absl::Status: a status made on one thread is copied, compared and
      // freed inside libabsl_status on another after a reference count
      // TSan cannot see (gRPC passes them between its threads).
      "called_from_lib:libabsl_status.so\n"
      // absl::Mutex's deadlock detector: its lock-order graph (GraphCycles)
      // is guarded by an internal SpinLock, whose atomics TSan cannot see.
      "called_from_lib:libabsl_graphcycles_internal.so\n"
      // oneDNN: creates its global primitive cache and that cache's
      // reader-writer lock on the first thread to build a primitive, and
      // publishes them to the others (two devices compiling at once) in
      // ways TSan cannot see. Its JIT kernels' own loads and stores are
      // invisible to TSan anyway; this drops only its memset/memcpy/malloc
      // calls.
      "called_from_lib:libdnnl.so\n"
      // gRPC's callback API, in its inline headers: a unary call's Finish
      // completion reads the reactor's vptr (InternalInlineable) and its
      // own completion tag, and drops a reference; the last reference
      // schedules CallOnDone on an executor thread of libgrpc++, which
      // runs the reactor's OnDone (ours delete themselves there, with the
      // cancellation token OnCancel set), then destroys gRPC's per-call
      // object (tags, op sets) and calls its requester. gRPC orders all of
      // that after every other callback of the call, through that
      // hand-off, which TSan cannot see: it reports each deletion as
      // racing with the reads (seen under e2e_load_test and
      // e2e_hardening_test). The price: a race between what a reactor's
      // OnDone frees and our own code on another thread goes unseen; ours
      // is touched by nothing after Finish (reactors.cc).
      "race:grpc::internal::CallbackUnaryHandler<*>::ServerCallbackUnaryImpl::"
      "Finish\n"
      "race:grpc::internal::CallbackUnaryHandler<*>::ServerCallbackUnaryImpl::"
      "CallOnDone\n"
      // The same hand-off for a client-streaming call (AddNetworkStream's
      // reactor, service.cc): the last read's completion runs the read
      // tag's functor (our OnReadDone, which may Finish) on one gRPC
      // thread, and CallOnDone destroys gRPC's per-call object, that tag
      // included, on another once every callback has returned; TSan sees
      // the functor's read and the destructor's write but not the
      // reference count between them (seen under service_test's cancelled
      // upload). The price is the unary case's: our reactor is touched by
      // nothing after Finish but its OnDone.
      "race:grpc::internal::CallbackClientStreamingHandler<*>::"
      "ServerCallbackReaderImpl::CallOnDone\n"
      // A failed client call's status message: gRPC core writes the
      // received status details into the call's string on one of its
      // threads, and the callback API's FinishOp copies it on the thread
      // that runs the completion, after a hand-off through gRPC's
      // completion queue that TSan cannot see (seen when `glint perf
      // --protocol oip` counts refused runs, e2e_shared_memory_test).
      // The price: a race on that string between our code and gRPC goes
      // unseen; ours reads it only in the completion callback.
      "race:grpc::internal::CallOpClientRecvStatus::FinishOp\n"
      // The other end of the same hand-off: our handler creates a
      // cancellable reactor (runtime/server/grpc/reactors.cc) and returns
      // it to gRPC, which calls its OnCancel later from a libgrpc++
      // thread, after binding it to the call inside libgrpc; OnCancel
      // reads the token pointer the constructor wrote (seen under
      // e2e_hardening_test in the whole-suite TSan run). The price: a race
      // in what OnCancel itself touches goes unseen; it touches only that
      // const pointer and the token, whose Cancel is an atomic.
      "race:CancellableReactor::OnCancel\n"
      // gRPC parsing a received message (protobuf's inline parser in our
      // binaries): it reads a slice gRPC core received, which in a test
      // with client and server in one process is the very slice the
      // client serialised into on another thread, handed over inside
      // libgrpc (seen under inference_service_test's RepositoryModelLoad).
      // Deserialize only ever reads gRPC's own buffers, never ours.
      "race:grpc::SerializationTraits<*>::Deserialize\n";
}
