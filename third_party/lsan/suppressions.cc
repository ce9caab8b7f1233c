// LeakSanitizer's suppressions for Glint's test binaries (BUILD says which
// link them). Each names a Debian library whose allocation LSan reports at
// exit; none is Glint's memory, and each is a fixed amount per process, not
// per call, so suppressing it cannot hide a leak that grows.

extern "C" const char* __lsan_default_suppressions() {
  return
      // c-ares, gRPC's DNS resolver: resolving a host name ("localhost",
      // which TLS needs to match the certificate) leaves one 10-byte
      // allocation of its configuration reader unfreed for the life of the
      // process (seen in //tests:e2e_auth_test; 127.0.0.1 is never resolved
      // and never meets it).
      "leak:libcares.so\n";
}
