// Runs the untrusted step of an ONNX import (RunOnnxInference: ONNX's
// checker and shape inference, third-party code that a 100-byte model can
// crash, exhaust or spin) in a disposable helper process, so that whatever
// the model does there costs one failed AddNetwork, never the daemon.
//
// The helper is a program whose main calls ServeImportHelper() (glintd does
// when started as `glintd --serve_import_helper`). Each request starts a
// fresh helper: imports are rare and a used helper may be in any state.
//
// Protocol (private to this file's two halves): the request, prefixed with
// the limits, arrives on the helper's stdin; the reply, a status code and
// then the result or the message, leaves on its stdout.
#ifndef GLINT_ONNX_IMPORT_SANDBOX_H_
#define GLINT_ONNX_IMPORT_SANDBOX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/cancellation.h"

namespace glint {

struct ImportSandboxOptions {
  // The helper's command line; argv[0] is the program's path.
  std::vector<std::string> argv;
  // The helper's address space (RLIMIT_AS). Not applied in sanitizer
  // builds, whose shadow memory needs terabytes of address space.
  uint64_t max_address_space_bytes = uint64_t{8} << 30;
  // CPU time (RLIMIT_CPU) and wall-clock time of one import.
  absl::Duration max_cpu_time = absl::Seconds(60);
  absl::Duration max_wall_time = absl::Seconds(120);
  // Replies longer than this are refused (the types of a huge graph).
  uint64_t max_reply_bytes = uint64_t{1} << 30;
  // When set and cancelled (the daemon shutting down), a running helper is
  // killed and the import fails UNAVAILABLE.
  std::shared_ptr<const CancellationToken> cancel;
};

// Runs RunOnnxInference(request) in a new helper process under `options`'
// limits and returns its reply. A helper that crashes is INVALID_ARGUMENT
// (the model made ONNX crash) naming the signal; one that runs out of
// memory, CPU or wall time, or replies too much, is RESOURCE_EXHAUSTED
// naming the limit; one that cannot be started is INTERNAL. Thread-safe:
// concurrent calls run concurrent helpers.
absl::StatusOr<std::string> RunImportHelper(const ImportSandboxOptions& options,
                                            absl::string_view request);

// The helper's side: reads one request from stdin, applies its limits,
// writes the reply to stdout and returns the process's exit code.
int ServeImportHelper();

}  // namespace glint

#endif  // GLINT_ONNX_IMPORT_SANDBOX_H_
