// glintd: the Glint daemon. Serves glint.v1.HostManager, the inference
// protocol of Triton and KServe clients (inference.GRPCInferenceService),
// grpc.health.v1 and server reflection on one address, and KServe v2
// REST and Prometheus's /metrics on an HTTP address, until SIGINT or
// SIGTERM.
//
//   glintd [--listen=127.0.0.1:50051] [--port_file=PATH]
//          [--http_listen=127.0.0.1:8000] [--http_port_file=PATH]
//          [--http_threads=8] [--http_max_request=32MiB]
//          [--http_max_connections=2048] [--http_max_connections_per_peer=512]
//          [--http_timeout=5s]
//          [--devices=sim*2:memory=2GiB] [--log_level=info]
//          [--store_dir=~/.glint/store] [--import_memory_limit=8GiB]
//          [--import_time_limit=120s] [--max_active_runs=64]
//          [--max_queued_runs=1024] [--max_concurrent_executions=8]
//          [--grpc_memory_limit=4GiB]
//          [--grpc_max_threads=8] [--blocking_call_threads=2]
//          [--blocking_call_queue=64] [--upload_idle_timeout=2m]
//          [--tls_cert=PEM --tls_key=PEM [--tls_client_ca=PEM]]
//          [--auth_tokens=FILE]
//          [--model_repository=DIR [--model_control_mode=none|explicit|poll]
//           [--repository_poll_secs=15]]
//   glintd --serve_import_helper   (internal: see onnx/import_sandbox.h)
//
// Exit status: 0 after a clean shutdown, 1 when start-up fails.
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/allocator_policy.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "devices/device_spec.h"
#include "onnx/import_sandbox.h"
#include "runtime/server/common/kernel_threads.h"
#include "runtime/server/glint_server.h"
#include "runtime/server/glintd_flags.h"

namespace glint {
namespace {

absl::Status WritePortFile(const std::string& path, int port) {
  const std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    out.close();
    if (!out) {
      return absl::InternalError(absl::StrCat("cannot write ", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

// Whether Run() has finished, so that the shutdown watchdog stays quiet
// while the process exits normally.
ABSL_CONST_INIT absl::Mutex exit_mu(absl::kConstInit);
bool exited ABSL_GUARDED_BY(exit_mu) = false;

int Run() {
  if (absl::Status s = SetLogLevel(absl::GetFlag(FLAGS_log_level)); !s.ok()) {
    GLINT_LOG_ERROR("{}", s.ToString());
    return 1;
  }
  // Block the shutdown signals before any other thread exists (gRPC's and
  // the runtime's threads inherit the mask), so that only this thread's
  // sigwait below ever receives them, never an arbitrary thread mid-work.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGINT);
  sigaddset(&shutdown_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);
  // A file size limit (ulimit -f) makes a store write fail with EFBIG,
  // answered RESOURCE_EXHAUSTED like a full disk, instead of SIGXFSZ
  // killing the daemon with every network in it.
  signal(SIGXFSZ, SIG_IGN);

  absl::StatusOr<GlintServerOptions> options = GlintServerOptionsFromFlags();
  if (!options.ok()) {
    GLINT_LOG_ERROR("{}", options.status().ToString());
    return 1;
  }
  const std::string http_port_file = absl::GetFlag(FLAGS_http_port_file);
  if (!http_port_file.empty() && options->http_listen.empty()) {
    GLINT_LOG_ERROR("--http_port_file needs HTTP on (--http_listen)");
    return 1;
  }
  const absl::Duration grace = options->shutdown_grace;
  absl::StatusOr<std::unique_ptr<GlintServer>> server =
      GlintServer::BuildAndStart(*std::move(options));
  if (!server.ok()) {
    GLINT_LOG_ERROR("{}", server.status().ToString());
    return 1;
  }
  // The HTTP port's file first: once --port_file exists, so does it.
  for (const auto& [path, port] :
       {std::make_pair(http_port_file, (*server)->http_port()),
        std::make_pair(absl::GetFlag(FLAGS_port_file), (*server)->port())}) {
    if (path.empty()) continue;
    if (absl::Status s = WritePortFile(path, port); !s.ok()) {
      GLINT_LOG_ERROR("{}", s.ToString());
      return 1;  // The server shuts down as it goes.
    }
  }
  int signal = 0;
  sigwait(&shutdown_signals, &signal);
  GLINT_LOG_INFO("received signal {}; shutting down", signal);
  // The promise to an orchestrator: gone within the grace plus 1 s. The
  // shutdown stops runs before their next launch or copy, but an item
  // already running on a device (one long launch) cannot be cut short; if
  // that, or anything else, holds the exit up past the bound, the process
  // ends here, with exit code 1. Nothing is lost: every acknowledged
  // AddNetwork is on disk (a write cut short leaves a temp file, which the
  // next start removes), and the calls still in progress were cancelled
  // when the grace ended.
  const absl::Duration bound = grace + absl::Seconds(1);
  std::thread([bound] {
    absl::SleepFor(bound);
    absl::MutexLock lock(&exit_mu);  // Held until the process is gone.
    if (exited) return;
    GLINT_LOG_ERROR("shutdown overran its bound ({}); exiting now",
                    absl::FormatDuration(bound));
    std::fflush(nullptr);  // The log is stdout.
    std::_Exit(1);
  }).detach();
  (*server)->Shutdown();
  server->reset();
  GLINT_LOG_INFO("glintd stopped");
  // From here static destructors may run: the watchdog must not log.
  absl::MutexLock lock(&exit_mu);
  exited = true;
  return 0;
}

}  // namespace
// Every HTTP or gRPC connection takes a file descriptor, and the default
// soft limit (often 1,024) is below --http_max_connections: raise it to the
// hard limit, which needs no privilege.
void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
      limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace glint

int main(int argc, char** argv) {
  // The import helper: one request on stdin, its reply on stdout.
  if (argc == 2 && argv[1] == glint::kServeImportHelperFlag) {
    return glint::ServeImportHelper();
  }
  // Before any thread exists: so that removed networks' memory goes back
  // to the OS (allocator_policy.h).
  glint::ConfigureAllocatorForTensors();
  // Debian builds Abseil with mutex deadlock detection on: every lock then
  // updates a global lock graph, which cost ~12% of throughput with many
  // runs in flight (thousands of live event mutexes). The tests keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  absl::SetProgramUsageMessage(
      "glintd: the Glint graph runtime daemon (gRPC service glint.v1)");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::fprintf(stderr, "glintd: unexpected argument '%s'\n", positional[1]);
    return 1;
  }
  glint::RaiseOpenFileLimit();
  // Returns only when nothing is to be done (or the re-execution failed).
  const absl::Status spin =
      glint::ApplyOmpSpinCount(absl::GetFlag(FLAGS_omp_spin_count), argv);
  if (!spin.ok()) {
    std::fprintf(stderr, "glintd: %s\n", spin.ToString().c_str());
    return 1;
  }
  return glint::Run();
}
