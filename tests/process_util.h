// Helpers of the whole-system tests: locating the built binaries in the
// test's runfiles, running a child process with captured output, and
// starting a real glintd on a free loopback port.
//
// Thread-compatible: one test thread drives each object.
#ifndef GLINT_TESTS_PROCESS_UTIL_H_
#define GLINT_TESTS_PROCESS_UTIL_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/glint_client.h"

namespace glint {
namespace testing {

// Absolute path of `workspace_relative` (e.g. "runtime/server/glintd") in
// the test's runfiles ($TEST_SRCDIR/$TEST_WORKSPACE/...); outside `bazel
// test`, in $RUNFILES_DIR or the running binary's own .runfiles folder.
std::string RunfilePath(const std::string& workspace_relative);

// A fresh directory under $TEST_TMPDIR.
std::string NewTempDir(const std::string& prefix);

// The resident set of process `pid` in bytes: VmRSS of /proc/PID/status
// (what the OS holds for it, so memory freed but kept by an allocator
// counts). -1 if unreadable.
int64_t ProcessRssBytes(pid_t pid);

// The peak resident set of process `pid` in bytes: VmHWM of
// /proc/PID/status, since the process started or since the last
// ResetPeakRss. -1 if unreadable.
int64_t ProcessPeakRssBytes(pid_t pid);

// Starts a new peak for ProcessPeakRssBytes (writes 5 to
// /proc/PID/clear_refs: VmHWM becomes the current VmRSS).
absl::Status ResetPeakRss(pid_t pid);

struct CommandResult {
  int exit_code = -1;  // -1 if killed by a signal or timed out.
  bool timed_out = false;
  std::string stdout_text;
  std::string stderr_text;
};

// Runs argv[0] with `argv` (no shell) and waits up to `timeout`; a child
// still running then is killed and reported with timed_out.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout);

// A child process left running in the background (a Prometheus server,
// say), its stdout and stderr in one log file. The destructor kills it
// (SIGKILL) if still running.
class ChildProcess {
 public:
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(
      const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Whether it has exited (reaping it if so).
  bool Exited();
  // Sends `signal` and waits up to `timeout` for the exit; then SIGKILL.
  // Returns the exit code (-1 when ended by a signal).
  int Stop(int signal, absl::Duration timeout);
  // Its output so far.
  std::string Log() const;

 private:
  ChildProcess() = default;

  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  std::string log_path_;
};

// A glintd child process. The destructor kills it if still running, and
// adds a gtest failure if its log holds a sanitizer report.
class GlintdProcess {
 public:
  // Starts glintd with --listen=127.0.0.1:0 --port_file=... (and a fresh
  // --store_dir unless `extra_args` names one, and
  // --http_listen=127.0.0.1:0 --http_port_file=... unless it names
  // --http_listen) plus `extra_args`, then
  // waits (bounded by `timeout`) until the port file exists, the channel
  // connects, grpc.health.v1 says SERVING (stored networks are restored)
  // and ListNetworks succeeds. Errors include the tail of glintd's log.
  // `client_options`' TLS settings and token (for a glintd started with
  // --tls_cert or --auth_tokens) serve client() and CheckHealth(); its
  // timeouts are replaced by the harness's. `command_prefix`, when given,
  // runs glintd through a program that execs it (`prlimit --fsize=N`, say),
  // so pid() stays glintd's.
  static absl::StatusOr<std::unique_ptr<GlintdProcess>> Start(
      const std::vector<std::string>& extra_args,
      absl::Duration timeout = absl::Seconds(30),
      const ClientOptions& client_options = ClientOptions(),
      const std::vector<std::string>& command_prefix = {});

  ~GlintdProcess();

  int port() const { return port_; }
  // The HTTP port (KServe v2 REST, /metrics); 0 when `extra_args` named
  // --http_listen.
  int http_port() const { return http_port_; }
  std::string address() const;
  pid_t pid() const { return pid_; }
  GlintClient& client() { return *client_; }

  // grpc.health.v1.Health/Check for the whole server: OK iff SERVING.
  // Over Start's TLS settings, and never with the token: health is open.
  absl::Status CheckHealth(absl::Duration timeout);

  // Sends `signal` and waits up to `timeout` for the exit. Returns the exit
  // code (-1 when killed by a signal); DEADLINE_EXCEEDED if still running.
  absl::StatusOr<int> Stop(int signal, absl::Duration timeout);

  // glintd's stdout and stderr so far.
  std::string Log() const;

 private:
  GlintdProcess() = default;

  pid_t pid_ = -1;
  bool exited_ = false;
  int port_ = 0;
  int http_port_ = 0;
  std::string log_path_;
  ClientOptions client_options_;
  std::unique_ptr<GlintClient> client_;
};

}  // namespace testing
}  // namespace glint

#endif  // GLINT_TESTS_PROCESS_UTIL_H_
