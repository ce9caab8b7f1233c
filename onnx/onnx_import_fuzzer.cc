// libFuzzer target for ONNX import as glintd runs it: any bytes give a
// Graph or a status, and an imported graph passes its own validation.
//
// glintd runs the step that calls libonnx's checker and shape inference
// (RunOnnxInference) in a disposable helper process, because libonnx 1.12
// crashes on some models (fuzz/corpus/onnx_import_fuzzer/regressions/
// LIBONNX.md) and no check of Glint's can foresee them all. This target
// does the same with a forked child: everything that runs inside the
// daemon (parsing, validation, the request to the helper, merging its
// reply, building the graph) is fuzzed with crashes reported as usual, and
// a crash inside the child becomes the status glintd would give. Consequently a crash in the Glint code that
// runs inside the helper (the pre-inference checks, RecoverRanks) is
// contained here too; onnx/import_sandbox_test and the hostile models
// cover that code.
//
// Models that fail before inference, the bulk of mutations, cost no fork.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/graph.h"
#include "core/logging.h"
#include "fuzz/fuzz_check.h"
#include "onnx/onnx_importer.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || \
    __has_feature(undefined_behavior_sanitizer)
#define GLINT_HAS_SANITIZER_INTERFACE 1
#endif
#elif defined(__SANITIZE_ADDRESS__)
#define GLINT_HAS_SANITIZER_INTERFACE 1
#endif
#ifndef GLINT_HAS_SANITIZER_INTERFACE
#define GLINT_HAS_SANITIZER_INTERFACE 0
#endif
#if GLINT_HAS_SANITIZER_INTERFACE
#include <sanitizer/common_interface_defs.h>
#endif

namespace {

// RunOnnxInference in a forked child: its reply, or the status of its end.
absl::StatusOr<std::string> InferInChild(const std::string& request) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return absl::InternalError("pipe");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork");
  if (pid == 0) {
    // Die like the helper process would, not like the fuzzer: the child
    // inherited libFuzzer's crash handlers and the sanitizers' death
    // callback, which would report the input as a crash of the target.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
      signal(sig, SIG_DFL);
    }
#if GLINT_HAS_SANITIZER_INTERFACE
    __sanitizer_set_death_callback(nullptr);
#endif
    close(pipe_fds[0]);
    absl::StatusOr<std::string> reply = glint::RunOnnxInference(request);
    const int32_t code = static_cast<int32_t>(reply.status().code());
    std::string out(reinterpret_cast<const char*>(&code), sizeof(code));
    out += reply.ok() ? *reply : std::string(reply.status().message());
    for (size_t done = 0; done < out.size();) {
      const ssize_t n =
          write(pipe_fds[1], out.data() + done, out.size() - done);
      if (n <= 0) _exit(3);
      done += static_cast<size_t>(n);
    }
    _exit(0);  // No atexit handlers, no libFuzzer teardown in the child.
  }
  close(pipe_fds[1]);
  std::string out;
  char buffer[1 << 16];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof(buffer))) != 0;) {
    if (n < 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int wait_status = 0;
  waitpid(pid, &wait_status, 0);
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0 ||
      out.size() < sizeof(int32_t)) {
    return absl::InvalidArgumentError("ONNX shape inference crashed");
  }
  int32_t code;
  std::memcpy(&code, out.data(), sizeof(code));
  if (code == 0) return out.substr(sizeof(code));
  return absl::Status(static_cast<absl::StatusCode>(code),
                      out.substr(sizeof(code)));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // Refusals are logged; at a million inputs that is all the fuzzer would
  // do.
  (void)glint::SetLogLevel("off");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  glint::ImportOptions options;
  options.run_inference = InferInChild;
  absl::StatusOr<glint::Graph> graph = glint::ImportOnnxModel(
      absl::string_view(reinterpret_cast<const char*>(data), size), options);
  if (!graph.ok()) {
    FUZZ_CHECK(!graph.status().message().empty(), "an error says why");
    return 0;
  }
  absl::Status valid = graph->Validate();
  FUZZ_CHECK(valid.ok(), valid.ToString());
  return 0;
}
