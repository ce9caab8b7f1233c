#include "onnx/import_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "onnx/onnx_importer.h"

extern char** environ;

namespace glint {
namespace {

// The request's prefix: the limits the helper applies to itself before it
// touches the model (posix_spawn cannot set them for it).
struct Limits {
  uint64_t address_space_bytes;  // 0: none.
  uint64_t cpu_seconds;
};

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(
      absl::StrCat("import helper: ", what, ": ", strerror(errno)));
}

absl::Status WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("write");
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

bool ReadAll(int fd, std::string* out) {
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buffer, static_cast<size_t>(n));
  }
}

// The reply: a little-endian int32 status code, then the result (code 0)
// or the error message.
std::string EncodeReply(const absl::StatusOr<std::string>& result) {
  const int32_t code = static_cast<int32_t>(result.status().code());
  std::string reply(reinterpret_cast<const char*>(&code), sizeof(code));
  if (result.ok()) {
    reply += *result;
  } else {
    reply += std::string(result.status().message());
  }
  return reply;
}

absl::StatusOr<std::string> DecodeReply(const std::string& reply) {
  int32_t code;
  if (reply.size() < sizeof(code)) {
    return absl::InternalError("the import helper ended without a reply");
  }
  std::memcpy(&code, reply.data(), sizeof(code));
  std::string body = reply.substr(sizeof(code));
  if (code == 0) return body;
  if (code < 1 || code > 16) {
    return absl::InternalError("the import helper's reply is malformed");
  }
  return absl::Status(static_cast<absl::StatusCode>(code), body);
}

// What a helper's end says about the model.
absl::Status DescribeEnd(int wait_status, bool timed_out,
                         const ImportSandboxOptions& options) {
  if (timed_out) {
    return absl::ResourceExhaustedError(
        absl::StrCat("importing the model took longer than ",
                     absl::FormatDuration(options.max_wall_time),
                     " (ONNX shape inference did not finish)"));
  }
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    if (sig == SIGXCPU || sig == SIGKILL) {
      return absl::ResourceExhaustedError(
          absl::StrCat("importing the model used more than ",
                       absl::FormatDuration(options.max_cpu_time),
                       " of CPU time (ONNX shape inference did not finish)"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "the model crashed ONNX's checker or shape inference (signal ", sig,
        ", ", strsignal(sig), ")"));
  }
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0) {
    return absl::InternalError(absl::StrCat(
        "the import helper exited with status ", WEXITSTATUS(wait_status)));
  }
  return absl::OkStatus();
}

// The helper's request in an anonymous file, read from its start: the
// limits, then `request`. The request goes through a file rather than a
// pipe: the helper reads it at its own pace and a dead helper cannot block
// us. The caller closes the descriptor.
absl::StatusOr<int> WriteRequestFile(const ImportSandboxOptions& options,
                                     absl::string_view request) {
  const int in = memfd_create("glint-import-request", MFD_CLOEXEC);
  if (in < 0) return Errno("memfd_create");
  absl::Cleanup close_in = [in] { close(in); };
  Limits limits;
#ifdef GLINT_SANITIZER
  limits.address_space_bytes = 0;
#else
  limits.address_space_bytes = options.max_address_space_bytes;
#endif
  limits.cpu_seconds = static_cast<uint64_t>(
      std::max<int64_t>(1, absl::ToInt64Seconds(options.max_cpu_time)));
  if (absl::Status s =
          WriteAll(in, reinterpret_cast<const char*>(&limits), sizeof(limits));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteAll(in, request.data(), request.size()); !s.ok()) {
    return s;
  }
  if (lseek(in, 0, SEEK_SET) != 0) return Errno("lseek");
  std::move(close_in).Cancel();
  return in;
}

// Starts `program` (argv, non-empty) with `in` as its stdin and `out` as
// its stdout, in a process group of its own, with default signals and
// nothing else of the daemon's open.
absl::StatusOr<pid_t> SpawnHelper(const std::vector<std::string>& program,
                                  int in, int out) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  absl::Cleanup destroy_actions = [&actions] {
    posix_spawn_file_actions_destroy(&actions);
  };
  posix_spawn_file_actions_adddup2(&actions, in, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out, STDOUT_FILENO);
  // Nothing else of the daemon's (listening sockets, stores) is inherited.
  posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  absl::Cleanup destroy_attr = [&attr] { posix_spawnattr_destroy(&attr); };
  // glintd blocks its shutdown signals in every thread; the helper must
  // not inherit that, nor a handler.
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> argv;
  for (const std::string& a : program) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  pid_t pid;
  const int spawned =
      posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), environ);
  if (spawned != 0) {
    errno = spawned;
    return Errno(absl::StrCat("cannot start ", program[0]));
  }
  return pid;
}

struct HelperReply {
  std::string bytes;
  bool timed_out = false;  // The wall-clock limit passed first.
  bool too_long = false;   // The helper said more than allowed.
};

// Reads the helper's reply from `fd` until the helper closes its end, it
// says more than `max_bytes`, or `deadline` passes.
HelperReply ReadHelperReply(int fd, absl::Time deadline, size_t max_bytes) {
  HelperReply reply;
  char buffer[1 << 16];
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      reply.timed_out = true;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = poll(&p, 1,
                           static_cast<int>(std::min<int64_t>(
                               absl::ToInt64Milliseconds(left) + 1, 60'000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // The deadline is checked at the top.
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    reply.bytes.append(buffer, static_cast<size_t>(n));
    if (reply.bytes.size() > max_bytes) {
      reply.too_long = true;
      break;
    }
  }
  return reply;
}

}  // namespace

absl::StatusOr<std::string> RunImportHelper(const ImportSandboxOptions& options,
                                            absl::string_view request) {
  if (options.argv.empty()) {
    return absl::InvalidArgumentError("no import helper program is set");
  }
  absl::StatusOr<int> in = WriteRequestFile(options, request);
  if (!in.ok()) return in.status();
  absl::Cleanup close_in = [fd = *in] { close(fd); };

  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Errno("pipe");
  absl::Cleanup close_out = [&out] {
    if (out[0] >= 0) close(out[0]);
    if (out[1] >= 0) close(out[1]);
  };
  absl::StatusOr<pid_t> pid = SpawnHelper(options.argv, *in, out[1]);
  if (!pid.ok()) return pid.status();
  close(out[1]);
  out[1] = -1;

  const HelperReply reply = ReadHelperReply(
      out[0], absl::Now() + options.max_wall_time, options.max_reply_bytes);
  if (reply.timed_out || reply.too_long) kill(*pid, SIGKILL);
  int wait_status = 0;
  while (waitpid(*pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (reply.too_long) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the model's inferred types exceed ",
                     options.max_reply_bytes >> 20, " MiB"));
  }
  if (absl::Status s = DescribeEnd(wait_status, reply.timed_out, options);
      !s.ok()) {
    return s;
  }
  return DecodeReply(reply.bytes);
}

int ServeImportHelper() {
  // A crash here is expected now and then: no core files.
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
#ifdef GLINT_SANITIZER
  // ASan and TSan catch deadly signals to print a report, then exit with a
  // status of their own (1, 66): the parent would see an exit, not the
  // crash. A crash inside ONNX is expected here (it is not our code, and it
  // is not instrumented), so it ends the helper by its signal as it does in
  // other builds.
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    signal(sig, SIG_DFL);
  }
#endif
  std::string request;
  if (!ReadAll(STDIN_FILENO, &request) || request.size() < sizeof(Limits)) {
    return 2;
  }
  Limits limits;
  std::memcpy(&limits, request.data(), sizeof(limits));
  if (limits.address_space_bytes > 0) {
    rlimit as{limits.address_space_bytes, limits.address_space_bytes};
    setrlimit(RLIMIT_AS, &as);
  }
  // SIGXCPU at the soft limit, SIGKILL a second later.
  rlimit cpu{limits.cpu_seconds, limits.cpu_seconds + 1};
  setrlimit(RLIMIT_CPU, &cpu);
  const absl::StatusOr<std::string> result =
      RunOnnxInference(absl::string_view(request).substr(sizeof(Limits)));
  request.clear();
  request.shrink_to_fit();
  const std::string reply = EncodeReply(result);
  return WriteAll(STDOUT_FILENO, reply.data(), reply.size()).ok() ? 0 : 3;
}

}  // namespace glint
