#include "runtime/server/glintd_flags.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/status_macros.h"
#include "devices/device_spec.h"
#include "runtime/server/common/kernel_threads.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to serve on, host:port. Loopback by default: exposing "
          "glintd is an explicit choice, and one without --tls_cert or "
          "--auth_tokens is warned about loudly. Port 0 picks a free port "
          "(see --port_file).");
ABSL_FLAG(std::string, port_file, "",
          "If set, the bound port is written to this file once the server "
          "accepts connections (written atomically: a reader never sees a "
          "partial file).");
ABSL_FLAG(std::string, http_listen, "127.0.0.1:8000",
          "HTTP address (host:port) for KServe v2 REST (/v2/...) and "
          "Prometheus metrics (/metrics). Loopback by default, like "
          "--listen; port 0 picks a free port (see --http_port_file); empty "
          "turns HTTP off.");
ABSL_FLAG(std::string, http_port_file, "",
          "If set, the bound HTTP port is written here (atomically), before "
          "--port_file is: once --port_file exists, so does this one.");
ABSL_FLAG(int, http_threads, 8,
          "HTTP requests (inference, metadata) run at once; up to 2048 more "
          "wait for a thread (1 GiB of bodies in memory in all), and further "
          "ones get 429. Health and /metrics are answered apart from them.");
ABSL_FLAG(int, http_max_connections, 2048,
          "Open HTTP connections at most; an excess one is closed as it is "
          "accepted. Each takes a file descriptor (glintd raises its soft "
          "limit to the hard one).");
ABSL_FLAG(int, http_max_connections_per_peer, 512,
          "Open HTTP connections from one client address at most. Behind a "
          "proxy or load balancer (one address) set it to "
          "--http_max_connections.");
ABSL_FLAG(absl::Duration, http_timeout, absl::Seconds(5),
          "An HTTP connection that sends nothing this long (in its headers, "
          "its body, or idle between keep-alive requests) is closed; whole "
          "seconds.");
ABSL_FLAG(std::string, http_max_request, "32MiB",
          "Largest HTTP request body (JSON tensors); larger ones get 413.");
ABSL_FLAG(std::string, devices, glint::kDefaultDeviceSpec,
          "Devices: comma-separated TYPE[*COUNT][:key=value...], e.g. "
          "'sim*2:memory=2GiB' or 'sim:memory=512MiB,sim:memory=4GiB'.");
ABSL_FLAG(std::string, log_level, "info",
          "trace, debug, info, warn, error or off.");
ABSL_FLAG(std::string, store_dir, "~/.glint/store",
          "Folder where added networks are kept so that a restart restores "
          "them (AddNetwork answers once the model is on disk). A leading ~ "
          "is $HOME. Empty: keep nothing across restarts.");
ABSL_FLAG(std::string, import_memory_limit, "8GiB",
          "Address space of the helper process that checks and shape-infers "
          "each added model (ONNX's own code, which hostile models can "
          "crash or exhaust); a model needing more fails with "
          "RESOURCE_EXHAUSTED.");
ABSL_FLAG(absl::Duration, import_time_limit, absl::Seconds(120),
          "CPU and wall-clock time the import helper gets per model.");
ABSL_FLAG(int, max_active_runs, 64,
          "Runs executing at once; more wait in the admission queue.");
ABSL_FLAG(int, max_concurrent_executions, 8,
          "Executions of each partition of a network (per replica and "
          "batch size) in flight at once, their device memory reserved "
          "when the network is added (as many as fit, beyond the first at "
          "most half of what a device has left); a run holds one only "
          "while on that partition, and more runs wait in the admission "
          "queue, so that no run fails for memory that other runs hold.");
ABSL_FLAG(int, max_queued_runs, 1024,
          "Runs waiting for admission; beyond it RunNetwork fails at once "
          "with RESOURCE_EXHAUSTED.");
// 4 GiB: the default request budget (half of it) then holds a full
// admission queue (--max_queued_runs=1024) of 1.2 MB requests (a batch of
// 8 RGB images at 112 x 112), issue 15's load.
ABSL_FLAG(std::string, grpc_memory_limit, "4GiB",
          "gRPC's resource quota for memory (buffers of calls in progress); "
          "over it new calls fail with RESOURCE_EXHAUSTED. Below 2 GiB, "
          "messages near the 1 GiB limit may not fit.");
ABSL_FLAG(std::string, max_request_bytes_in_flight, "",
          "Bytes of inference requests (RunNetwork, ModelInfer) held at "
          "once; a request beyond them fails at once with "
          "RESOURCE_EXHAUSTED, whatever gRPC's quota does. At most "
          "--grpc_memory_limit; empty: half of it.");
ABSL_FLAG(int, grpc_max_threads, 8,
          "gRPC's resource quota for threads of synchronous services (only "
          "reflection is one; calls of glint.v1 run on gRPC's callback "
          "pool and never wait on a run).");
ABSL_FLAG(int64_t, omp_spin_count,
          glint::DefaultOmpSpinCount(
              static_cast<int>(std::thread::hardware_concurrency())),
          "How long the kernels' OpenMP threads busy-wait for more work "
          "before they sleep, in libgomp's spin iterations (GOMP_SPINCOUNT; "
          "see runtime/server/common/kernel_threads.h): low values give the "
          "cores back to gRPC, other runs and other processes soon; 0 "
          "sleeps at once (slow on small ops); -1 keeps libgomp's default "
          "(300000, milliseconds). Default: 10000 on hosts of up to 4 "
          "cores, 300000 on larger ones. GOMP_SPINCOUNT or OMP_WAIT_POLICY "
          "in the environment win over this flag. Applied by re-executing "
          "glintd once at start.");
ABSL_FLAG(int, blocking_call_threads, 2,
          "Threads for calls that block (AddNetwork, RemoveNetwork).");
ABSL_FLAG(int, blocking_call_queue, 64,
          "Blocking calls waiting for one of those threads; beyond it they "
          "fail at once with RESOURCE_EXHAUSTED.");
ABSL_FLAG(absl::Duration, upload_idle_timeout, absl::Minutes(2),
          "An AddNetworkStream upload whose client sends nothing this long "
          "is cancelled and its place freed; inf: never.");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate (chain) of the server: serve TLS only. Needs "
          "--tls_key.");
ABSL_FLAG(std::string, tls_key, "",
          "PEM private key of --tls_cert (unencrypted; keep it chmod 600).");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA certificate(s): clients must present a certificate signed "
          "by one of them (mutual TLS).");
ABSL_FLAG(std::string, auth_tokens, "",
          "Token file: one 'TOKEN SCOPE[,SCOPE]' per line, scopes infer and "
          "admin, '#' comments. Calls then need 'authorization: Bearer "
          "TOKEN' with the method's scope; health checks stay open. Empty: "
          "every call is open.");

ABSL_FLAG(std::string, model_repository, "",
          "Model repository in Triton's layout, NAME/VERSION/model.onnx with "
          "an optional NAME/config.json; the newest version of each model "
          "serves. Read-only (daemons may share it); its networks are not "
          "kept in --store_dir. Health says NOT_SERVING until it is loaded. "
          "Empty: none.");
ABSL_FLAG(std::string, model_control_mode, "none",
          "none: load --model_repository at start; explicit: load and "
          "unload its models only through RepositoryModelLoad/Unload; poll: "
          "load at start, then every --repository_poll_secs load new and "
          "changed models and unload removed ones.");
ABSL_FLAG(std::string, liveness_service, "liveness",
          "grpc.health.v1 service name that is SERVING while the process "
          "answers, for liveness probes (Kubernetes' grpc probe with "
          "service: liveness); the server's overall status (service \"\") "
          "is SERVING only once stored networks and the repository are "
          "loaded, for readiness. Empty: none.");
ABSL_FLAG(int, repository_poll_secs, 15,
          "Seconds between two scans of --model_repository in poll mode.");
ABSL_FLAG(absl::Duration, shutdown_grace, absl::Seconds(5),
          "On SIGTERM/SIGINT: how long calls in progress get to end before "
          "they are cancelled; glintd exits within this plus 1 s whatever "
          "its devices are doing (set it below the orchestrator's, e.g. "
          "Kubernetes' terminationGracePeriodSeconds).");

namespace glint {
namespace {

std::string ExpandHome(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  const char* home = getenv("HOME");
  return absl::StrCat(home != nullptr ? home : "", path.substr(1));
}

// A byte-size flag ("4GiB"), its errors naming the flag.
absl::StatusOr<uint64_t> ByteSizeFlag(absl::string_view flag,
                                      const std::string& value) {
  absl::StatusOr<uint64_t> bytes = ParseByteSize(value);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", bytes.status().message()));
  }
  return bytes;
}

}  // namespace

absl::StatusOr<GlintServerOptions> GlintServerOptionsFromFlags() {
  GlintServerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.http_listen = absl::GetFlag(FLAGS_http_listen);
  options.http_threads = absl::GetFlag(FLAGS_http_threads);
  options.http_max_connections = absl::GetFlag(FLAGS_http_max_connections);
  options.http_max_connections_per_peer =
      absl::GetFlag(FLAGS_http_max_connections_per_peer);
  options.http_timeout = absl::GetFlag(FLAGS_http_timeout);
  options.core.devices = absl::GetFlag(FLAGS_devices);
  options.core.store_dir = ExpandHome(absl::GetFlag(FLAGS_store_dir));
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    return absl::InternalError("cannot find glintd's own executable");
  }
  options.core.import_helper_argv = {std::string(self, static_cast<size_t>(n)),
                                std::string(kServeImportHelperFlag)};
  options.core.import_time_limit = absl::GetFlag(FLAGS_import_time_limit);
  options.core.max_active_runs = absl::GetFlag(FLAGS_max_active_runs);
  options.core.max_queued_runs = absl::GetFlag(FLAGS_max_queued_runs);
  options.core.max_concurrent_executions =
      absl::GetFlag(FLAGS_max_concurrent_executions);
  options.grpc_max_threads = absl::GetFlag(FLAGS_grpc_max_threads);
  options.blocking_call_threads = absl::GetFlag(FLAGS_blocking_call_threads);
  options.blocking_call_queue = absl::GetFlag(FLAGS_blocking_call_queue);
  options.upload_idle_timeout = absl::GetFlag(FLAGS_upload_idle_timeout);
  options.security.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.security.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  options.security.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.security.auth_tokens_file = absl::GetFlag(FLAGS_auth_tokens);
  options.core.model_repository = ExpandHome(absl::GetFlag(FLAGS_model_repository));
  options.core.repository_poll =
      absl::Seconds(absl::GetFlag(FLAGS_repository_poll_secs));
  options.liveness_service = absl::GetFlag(FLAGS_liveness_service);
  options.shutdown_grace = absl::GetFlag(FLAGS_shutdown_grace);
  if (options.shutdown_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shutdown_grace must not be negative; got ",
                     absl::FormatDuration(options.shutdown_grace)));
  }
  absl::StatusOr<ModelControlMode> mode =
      ParseModelControlMode(absl::GetFlag(FLAGS_model_control_mode));
  if (!mode.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model_control_mode: ", mode.status().message()));
  }
  options.core.model_control_mode = *mode;
  GLINT_ASSIGN_OR_RETURN(
      options.http_max_request_bytes,
      ByteSizeFlag("http_max_request", absl::GetFlag(FLAGS_http_max_request)));
  GLINT_ASSIGN_OR_RETURN(options.core.import_memory_limit_bytes,
                         ByteSizeFlag("import_memory_limit",
                                      absl::GetFlag(FLAGS_import_memory_limit)));
  GLINT_ASSIGN_OR_RETURN(options.grpc_memory_limit_bytes,
                         ByteSizeFlag("grpc_memory_limit",
                                      absl::GetFlag(FLAGS_grpc_memory_limit)));
  if (const std::string flag = absl::GetFlag(FLAGS_max_request_bytes_in_flight);
      !flag.empty()) {
    GLINT_ASSIGN_OR_RETURN(options.max_request_bytes_in_flight,
                           ByteSizeFlag("max_request_bytes_in_flight", flag));
    if (options.max_request_bytes_in_flight == 0) {
      return absl::InvalidArgumentError(
          "--max_request_bytes_in_flight must be more than 0");
    }
  }
  return options;
}

}  // namespace glint
