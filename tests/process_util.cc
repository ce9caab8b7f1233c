#include "tests/process_util.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "proto/status_util.h"

extern char** environ;

namespace glint {
namespace testing {
namespace {

// Poll interval of the bounded waits below; never a synchronization by
// itself, only the spacing of a retry loop with a deadline.
constexpr absl::Duration kPollInterval = absl::Milliseconds(20);

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Tail(const std::string& text, size_t n = 2000) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

// Spawns argv with stdout/stderr redirected to the given files.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv,
                            const std::string& stdout_path,
                            const std::string& stderr_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null",
                                   O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO,
                                   stdout_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (stderr_path == stdout_path) {
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO,
                                     stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  // The child must not inherit a blocked signal mask from gtest or gRPC
  // threads: glintd relies on its own mask.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc =
      posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::InternalError(
        absl::StrCat("posix_spawn ", argv[0], ": ", strerror(rc)));
  }
  return pid;
}

// Waits up to `timeout` for `pid`; true and the raw status when it exited.
bool WaitFor(pid_t pid, absl::Duration timeout, int* wait_status) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    const pid_t r = waitpid(pid, wait_status, WNOHANG);
    if (r == pid) return true;
    if (r < 0) return true;  // Already reaped; nothing left to wait for.
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(kPollInterval);
  }
}

int ExitCode(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

// `bazel test` sets TEST_SRCDIR, `bazel run` RUNFILES_DIR; a binary started
// by hand (a benchmark) finds its runfiles beside itself.
std::string RunfilesRoot() {
  for (const char* var : {"TEST_SRCDIR", "RUNFILES_DIR"}) {
    if (const char* dir = std::getenv(var)) return dir;
  }
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return ".";
  return absl::StrCat(absl::string_view(exe, n), ".runfiles");
}

}  // namespace

std::string RunfilePath(const std::string& workspace_relative) {
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(RunfilesRoot(), "/", workspace ? workspace : "glint",
                      "/", workspace_relative);
}

namespace {

// A "Vm...:  N kB" field of /proc/PID/status in bytes; -1 if unreadable.
int64_t StatusFieldBytes(pid_t pid, absl::string_view field) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (!absl::StartsWith(line, field)) continue;
    absl::string_view v = absl::StripAsciiWhitespace(
        absl::StripSuffix(absl::string_view(line).substr(field.size()), "kB"));
    int64_t kib = 0;
    return absl::SimpleAtoi(v, &kib) ? kib * 1024 : -1;
  }
  return -1;
}

}  // namespace

int64_t ProcessRssBytes(pid_t pid) { return StatusFieldBytes(pid, "VmRSS:"); }

int64_t ProcessPeakRssBytes(pid_t pid) {
  return StatusFieldBytes(pid, "VmHWM:");
}

absl::Status ResetPeakRss(pid_t pid) {
  std::ofstream clear(absl::StrCat("/proc/", pid, "/clear_refs"));
  clear << "5";
  clear.flush();
  if (!clear) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot reset the peak RSS of process ", pid, " (/proc/",
                     pid, "/clear_refs)"));
  }
  return absl::OkStatus();
}

std::string NewTempDir(const std::string& prefix) {
  static std::atomic<int> counter{0};
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      absl::StrCat(tmp ? tmp : "/tmp", "/", prefix, "_", getpid(), "_",
                   counter.fetch_add(1));
  std::filesystem::create_directories(dir);
  return dir;
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         absl::Duration timeout) {
  const std::string dir = NewTempDir("cmd");
  const std::string out = dir + "/stdout";
  const std::string err = dir + "/stderr";
  absl::StatusOr<pid_t> pid = Spawn(argv, out, err);
  if (!pid.ok()) return pid.status();
  CommandResult result;
  int wait_status = 0;
  if (!WaitFor(*pid, timeout, &wait_status)) {
    kill(*pid, SIGKILL);
    waitpid(*pid, &wait_status, 0);
    result.timed_out = true;
  } else {
    result.exit_code = ExitCode(wait_status);
  }
  result.stdout_text = ReadAll(out);
  result.stderr_text = ReadAll(err);
  return result;
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::string& log_path) {
  std::unique_ptr<ChildProcess> p(new ChildProcess());
  p->log_path_ = log_path;
  absl::StatusOr<pid_t> pid = Spawn(argv, log_path, log_path);
  if (!pid.ok()) return pid.status();
  p->pid_ = *pid;
  return p;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) Stop(SIGKILL, absl::Seconds(30));
}

bool ChildProcess::Exited() {
  if (exited_) return true;
  int wait_status = 0;
  const pid_t r = waitpid(pid_, &wait_status, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    exit_code_ = ExitCode(wait_status);
  }
  return exited_ || r < 0;
}

int ChildProcess::Stop(int signal, absl::Duration timeout) {
  if (exited_) return exit_code_;
  kill(pid_, signal);
  int wait_status = 0;
  if (!WaitFor(pid_, timeout, &wait_status)) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &wait_status, 0);
  }
  exited_ = true;
  exit_code_ = ExitCode(wait_status);
  return exit_code_;
}

std::string ChildProcess::Log() const { return ReadAll(log_path_); }

absl::StatusOr<std::unique_ptr<GlintdProcess>> GlintdProcess::Start(
    const std::vector<std::string>& extra_args, absl::Duration timeout,
    const ClientOptions& client_options,
    const std::vector<std::string>& command_prefix) {
  const absl::Time deadline = absl::Now() + timeout;
  const std::string dir = NewTempDir("glintd");
  const std::string port_file = dir + "/port";
  std::unique_ptr<GlintdProcess> p(new GlintdProcess());
  p->log_path_ = dir + "/glintd.log";
  p->client_options_ = client_options;

  std::vector<std::string> argv = command_prefix;
  argv.insert(argv.end(), {RunfilePath("runtime/server/glintd"),
                           "--listen=127.0.0.1:0", "--port_file=" + port_file});
  // Each daemon keeps its networks in its own folder unless told where: the
  // default (~/.glint/store) would be shared, and locked, by every daemon.
  bool has_store = false;
  bool has_http = false;
  for (const std::string& a : extra_args) {
    has_store = has_store || absl::StartsWith(a, "--store_dir");
    has_http = has_http || absl::StartsWith(a, "--http_listen");
  }
  if (!has_store) argv.push_back("--store_dir=" + dir + "/store");
  // HTTP on a free port too, unless told otherwise: the default port
  // (8000) would be shared by every daemon.
  const std::string http_port_file = dir + "/http_port";
  if (!has_http) {
    argv.push_back("--http_listen=127.0.0.1:0");
    argv.push_back("--http_port_file=" + http_port_file);
  }
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  absl::StatusOr<pid_t> pid = Spawn(argv, p->log_path_, p->log_path_);
  if (!pid.ok()) return pid.status();
  p->pid_ = *pid;

  // 1. The port file appears once the server is bound and started.
  while (true) {
    int wait_status = 0;
    if (waitpid(p->pid_, &wait_status, WNOHANG) == p->pid_) {
      p->exited_ = true;
      return absl::InternalError(
          absl::StrCat("glintd exited with code ", ExitCode(wait_status),
                       " during start-up; log:\n", Tail(p->Log())));
    }
    const std::string text = ReadAll(port_file);
    int port = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &port) &&
        port > 0) {
      p->port_ = port;
      // glintd writes the HTTP port file before the gRPC one.
      int http_port = 0;
      if (!has_http &&
          !absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadAll(http_port_file)),
                            &http_port)) {
        return absl::InternalError("glintd wrote no HTTP port file");
      }
      p->http_port_ = http_port;
      break;
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "glintd wrote no port file within ", absl::FormatDuration(timeout),
          "; log:\n", Tail(p->Log())));
    }
    absl::SleepFor(kPollInterval);
  }

  // 2. It answers health checks and the Glint service.
  ClientOptions options = client_options;
  options.connect_timeout = std::max(deadline - absl::Now(), absl::Seconds(1));
  // Bounds a call to a glintd that hangs, well within Bazel's test timeout.
  // Sanitizers run glintd 5-15x slower: adding e2e_device_failure_test's
  // 128 MiB network took 50-70 s under TSan on 2 cores.
#ifdef GLINT_SANITIZER
  options.rpc_timeout = absl::Seconds(180);
#else
  options.rpc_timeout = absl::Seconds(60);
#endif
  absl::StatusOr<std::unique_ptr<GlintClient>> client =
      GlintClient::Connect(p->address(), options);
  if (!client.ok()) {
    return absl::Status(client.status().code(),
                        absl::StrCat(client.status().message(), "; log:\n",
                                     Tail(p->Log())));
  }
  p->client_ = *std::move(client);
  // SERVING once stored networks are restored.
  for (;;) {
    absl::Status s = p->CheckHealth(absl::Seconds(5));
    if (s.ok()) break;
    if (absl::Now() >= deadline) return s;
    absl::SleepFor(kPollInterval);
  }
  absl::StatusOr<std::vector<NetworkInfo>> networks =
      p->client_->ListNetworks();
  if (!networks.ok()) return networks.status();
  return p;
}

GlintdProcess::~GlintdProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    int wait_status = 0;
    waitpid(pid_, &wait_status, 0);
  }
  // In sanitizer builds glintd's own reports land in its log, not the
  // test's: TSan keeps going after a race (its exit status says so only at
  // a clean exit, and most tests kill the daemon), so the test fails here.
  if (!log_path_.empty()) {
    const std::string log = Log();
    for (const char* marker :
         {"WARNING: ThreadSanitizer:", "ERROR: AddressSanitizer:",
          "ERROR: LeakSanitizer:", ": runtime error: "}) {
      const size_t at = log.find(marker);
      if (at != std::string::npos) {
        ADD_FAILURE() << "glintd's log has a sanitizer report:\n"
                      << log.substr(at > 200 ? at - 200 : 0, 8000);
        break;
      }
    }
  }
}

std::string GlintdProcess::address() const {
  return absl::StrCat("127.0.0.1:", port_);
}

absl::Status GlintdProcess::CheckHealth(absl::Duration timeout) {
  ClientOptions options = client_options_;
  options.rpc_timeout = timeout;
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      GlintClient::OpenChannel(address(), options);
  if (!channel.ok()) return channel.status();
  absl::StatusOr<std::string> status =
      GlintClient(*std::move(channel), options).CheckHealth();
  if (!status.ok()) return status.status();
  if (*status != "SERVING") {
    return absl::UnavailableError(
        absl::StrCat("glintd health status is ", *status, ", not SERVING"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> GlintdProcess::Stop(int signal, absl::Duration timeout) {
  if (exited_) return absl::FailedPreconditionError("glintd already exited");
  // Drop our channel first so that the server has no idle client to wait
  // for; shutdown must not depend on it, but the test should not either.
  client_.reset();
  kill(pid_, signal);
  int wait_status = 0;
  if (!WaitFor(pid_, timeout, &wait_status)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "glintd still running ", absl::FormatDuration(timeout),
        " after signal ", signal, "; log:\n", Tail(Log())));
  }
  exited_ = true;
  return ExitCode(wait_status);
}

std::string GlintdProcess::Log() const { return ReadAll(log_path_); }

}  // namespace testing
}  // namespace glint
