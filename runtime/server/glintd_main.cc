// glintd: the Glint daemon. Serves glint.v1.HostManager, the inference
// protocol of Triton and KServe clients (inference.GRPCInferenceService),
// grpc.health.v1 and server reflection on one address, and KServe v2
// REST and Prometheus's /metrics on an HTTP address, until SIGINT or
// SIGTERM.
//
//   glintd [--listen=127.0.0.1:50051] [--port_file=PATH]
//          [--http_listen=127.0.0.1:8000] [--http_port_file=PATH]
//          [--http_threads=8] [--http_max_request=32MiB]
//          [--devices=sim*2:memory=2GiB] [--log_level=info]
//          [--store_dir=~/.glint/store] [--import_memory_limit=8GiB]
//          [--import_time_limit=120s] [--max_active_runs=64]
//          [--max_queued_runs=1024] [--grpc_memory_limit=4GiB]
//          [--grpc_max_threads=8] [--blocking_call_threads=2]
//          [--blocking_call_queue=64]
//          [--tls_cert=PEM --tls_key=PEM [--tls_client_ca=PEM]]
//          [--auth_tokens=FILE]
//          [--model_repository=DIR [--model_control_mode=none|explicit|poll]
//           [--repository_poll_secs=15]]
//   glintd --serve_import_helper   (internal: see onnx/import_sandbox.h)
//
// Exit status: 0 after a clean shutdown, 1 when start-up fails.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/cancellation.h"
#include "core/logging.h"
#include "core/thread_name.h"
#include "onnx/import_sandbox.h"
#include "proto/limits.h"
#include "runtime/host_manager.h"
#include "runtime/server/allocator_policy.h"
#include "runtime/server/auth.h"
#include "devices/device_spec.h"
#include "runtime/server/grpc_auth.h"
#include "runtime/server/http_server.h"
#include "runtime/server/inference_service.h"
#include "runtime/server/kernel_threads.h"
#include "runtime/server/model_repository.h"
#include "runtime/server/network_journal.h"
#include "runtime/server/request_budget.h"
#include "runtime/server/rest_api.h"
#include "runtime/server/security_options.h"
#include "runtime/server/server_setup.h"
#include "runtime/server/service.h"
#include "runtime/server/shared_memory.h"
#include "runtime/server/worker_pool.h"
#include "store/network_store.h"

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
          "HTTP connections served at once; further ones wait (in a queue of "
          "64, then in the kernel's listen backlog).");
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
ABSL_FLAG(int64_t, omp_spin_count, glint::kDefaultOmpSpinCount,
          "How long the kernels' OpenMP threads busy-wait for more work "
          "before they sleep, in libgomp's spin iterations (GOMP_SPINCOUNT; "
          "see runtime/server/kernel_threads.h): low values give the cores "
          "back to gRPC, other runs and other processes soon; 0 sleeps at "
          "once (slow on small ops); -1 keeps libgomp's default (300000, "
          "milliseconds). GOMP_SPINCOUNT or OMP_WAIT_POLICY in the "
          "environment win over this flag. Applied by re-executing glintd "
          "once at start.");
ABSL_FLAG(int, blocking_call_threads, 2,
          "Threads for calls that block (AddNetwork, RemoveNetwork).");
ABSL_FLAG(int, blocking_call_queue, 64,
          "Blocking calls waiting for one of those threads; beyond it they "
          "fail at once with RESOURCE_EXHAUSTED.");
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

namespace glint {
namespace {

constexpr absl::string_view kServeImportHelperFlag = "--serve_import_helper";

// How long in-flight RPCs get to finish once a shutdown signal arrives;
// after it they are cancelled and their clients see CANCELLED/UNAVAILABLE.
constexpr auto kShutdownGrace = std::chrono::seconds(5);

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

// Every model is imported by a fresh copy of this program started as
// `glintd --serve_import_helper`, under the import limits.
absl::StatusOr<HostManagerOptions> MakeHostManagerOptions(
    uint64_t import_memory, absl::Duration import_time,
    std::shared_ptr<const CancellationToken> cancel) {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) {
    return absl::InternalError("cannot find glintd's own executable");
  }
  if (import_time <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--import_time_limit must be positive");
  }
  ImportSandboxOptions sandbox;
  sandbox.argv = {std::string(self, static_cast<size_t>(n)),
                  std::string(kServeImportHelperFlag)};
  sandbox.max_address_space_bytes = import_memory;
  sandbox.max_cpu_time = import_time;
  sandbox.max_wall_time = import_time;
  sandbox.cancel = std::move(cancel);
  HostManagerOptions options;
  options.max_active_requests = absl::GetFlag(FLAGS_max_active_runs);
  options.max_queue_size = absl::GetFlag(FLAGS_max_queued_runs);
  options.run_onnx_inference = [sandbox](const std::string& request) {
    return RunImportHelper(sandbox, request);
  };
  return options;
}

// gRPC binds a wildcard host such as 0.0.0.0 once per address family, and
// with port 0 each bind picks its own port, of which only one is reported.
// So a free port is chosen here first and the same one bound everywhere.
// (Another process could take it in between; the bind then fails loudly.)
absl::StatusOr<std::string> ChooseListenPort(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || listen.substr(colon + 1) != "0") {
    return listen;
  }
  std::string host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), "0", &hints, &found) !=
          0 ||
      found == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot resolve the --listen host '", host, "'"));
  }
  int port = 0;
  for (addrinfo* a = found; a != nullptr && port == 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage bound{};
    socklen_t size = sizeof(bound);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) == 0) {
      port = ntohs(bound.ss_family == AF_INET6
                       ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                       : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    }
    close(fd);
  }
  freeaddrinfo(found);
  if (port == 0) {
    return absl::UnavailableError(
        absl::StrCat("no free port to listen on at ", listen));
  }
  return absl::StrCat(listen.substr(0, colon), ":", port);
}

// The HTTP server of --http_listen and the --http_* flags, with the TLS
// material of the gRPC port.
absl::StatusOr<std::unique_ptr<HttpServer>> StartHttp(
    const std::string& listen, const std::optional<TlsMaterial>& tls,
    const RestApi* api) {
  HttpServerOptions options;
  options.listen = listen;
  options.tls = tls;
  options.threads = absl::GetFlag(FLAGS_http_threads);
  absl::StatusOr<uint64_t> max_request =
      ParseByteSize(absl::GetFlag(FLAGS_http_max_request));
  if (!max_request.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http_max_request: ", max_request.status().message()));
  }
  options.max_request_bytes = *max_request;
  return HttpServer::Start(options, api);
}

std::string ExpandHome(const std::string& path) {
  if (path.empty() || path[0] != '~') return path;
  const char* home = getenv("HOME");
  return absl::StrCat(home != nullptr ? home : "", path.substr(1));
}

std::string DescribeDevices(const std::vector<DeviceInfo>& devices) {
  return absl::StrJoin(devices, ", ", [](std::string* out,
                                         const DeviceInfo& d) {
    absl::StrAppend(out, d.id, "=", d.name, " (", d.type, ", ",
                    d.memory_bytes / kMiB, " MiB)");
  });
}

SecurityOptions SecurityOptionsFromFlags() {
  SecurityOptions options;
  options.tls.cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls.key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls.client_ca_file = absl::GetFlag(FLAGS_tls_client_ca);
  options.auth_tokens_file = absl::GetFlag(FLAGS_auth_tokens);
  return options;
}

// A banner rather than a line, so that it stands out in a scrolling log.
void WarnIfExposed(const std::string& listen, const SecurityOptions& options) {
  const std::vector<std::string> warnings = ExposureWarnings(listen, options);
  if (warnings.empty()) return;
  GLINT_LOG_WARN("{}", std::string(72, '!'));
  for (const std::string& w : warnings) GLINT_LOG_WARN("!! {}", w);
  GLINT_LOG_WARN("{}", std::string(72, '!'));
}

// --model_repository and its mode; null without a repository.
absl::StatusOr<std::unique_ptr<ModelRepository>> MakeModelRepository(
    HostManager* host) {
  const std::string dir = ExpandHome(absl::GetFlag(FLAGS_model_repository));
  absl::StatusOr<ModelControlMode> mode =
      ParseModelControlMode(absl::GetFlag(FLAGS_model_control_mode));
  if (!mode.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model_control_mode: ", mode.status().message()));
  }
  if (dir.empty()) {
    if (*mode != ModelControlMode::kNone) {
      return absl::InvalidArgumentError(
          "--model_control_mode needs --model_repository");
    }
    return nullptr;
  }
  if (absl::GetFlag(FLAGS_repository_poll_secs) <= 0) {
    return absl::InvalidArgumentError(
        "--repository_poll_secs must be positive");
  }
  // A repository that is not there is a deployment error, not an empty one.
  if (absl::StatusOr<std::vector<RepositoryModel>> scan =
          ScanModelRepository(dir);
      !scan.ok()) {
    return absl::Status(scan.status().code(), absl::StrCat(
        "--model_repository: ", scan.status().message()));
  }
  return std::make_unique<ModelRepository>(host,
                                           ModelRepositoryOptions{dir, *mode});
}

void SyncRepository(ModelRepository& repository) {
  const absl::Time start = absl::Now();
  absl::StatusOr<RepositorySyncReport> report = repository.Sync();
  if (!report.ok()) {
    GLINT_LOG_ERROR("model repository: {}", report.status().ToString());
    return;
  }
  if (report->loaded + report->reloaded + report->unloaded + report->failed ==
      0) {
    return;  // A poll that found nothing new says nothing.
  }
  GLINT_LOG_INFO(
      "model repository {}: {} loaded, {} reloaded, {} unloaded, {} failed, "
      "{} unchanged in {}",
      repository.options().dir, report->loaded, report->reloaded,
      report->unloaded, report->failed, report->unchanged,
      absl::FormatDuration(absl::Now() - start));
}

int Run() {
  if (absl::Status s = SetLogLevel(absl::GetFlag(FLAGS_log_level)); !s.ok()) {
    GLINT_LOG_ERROR("{}", s.ToString());
    return 1;
  }

  // Block the shutdown signals before any other thread exists (gRPC's and
  // the runtime's threads inherit the mask), so that only the sigwait
  // thread below ever receives them, never an arbitrary thread mid-work.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGINT);
  sigaddset(&shutdown_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr);

  absl::StatusOr<std::vector<DeviceConfig>> configs =
      ParseDeviceSpec(absl::GetFlag(FLAGS_devices));
  if (!configs.ok()) {
    GLINT_LOG_ERROR("{}", configs.status().ToString());
    return 1;
  }
  ShareHostCores(static_cast<int>(std::thread::hardware_concurrency()),
                 &*configs);
  absl::StatusOr<uint64_t> import_memory =
      ParseByteSize(absl::GetFlag(FLAGS_import_memory_limit));
  if (!import_memory.ok()) {
    GLINT_LOG_ERROR("--import_memory_limit: {}",
                    import_memory.status().ToString());
    return 1;
  }
  const SecurityOptions security = SecurityOptionsFromFlags();
  absl::StatusOr<std::optional<TlsMaterial>> tls =
      LoadTlsMaterial(security.tls);
  if (!tls.ok()) {
    GLINT_LOG_ERROR("{}", tls.status().ToString());
    return 1;
  }
  std::unique_ptr<Authorizer> authorizer;
  if (!security.auth_tokens_file.empty()) {
    absl::StatusOr<std::unique_ptr<Authorizer>> parsed =
        Authorizer::FromFile(security.auth_tokens_file);
    if (!parsed.ok()) {
      GLINT_LOG_ERROR("--auth_tokens: {}", parsed.status().ToString());
      return 1;
    }
    authorizer = *std::move(parsed);
  }
  // Cancelled on SIGINT/SIGTERM: an import in progress then stops at once.
  auto stopping = std::make_shared<CancellationToken>();
  absl::StatusOr<HostManagerOptions> options = MakeHostManagerOptions(
      *import_memory, absl::GetFlag(FLAGS_import_time_limit), stopping);
  if (!options.ok()) {
    GLINT_LOG_ERROR("{}", options.status().ToString());
    return 1;
  }
  std::unique_ptr<NetworkStore> store;
  std::unique_ptr<StoreJournal> journal;
  if (const std::string dir = ExpandHome(absl::GetFlag(FLAGS_store_dir));
      !dir.empty()) {
    absl::StatusOr<std::unique_ptr<NetworkStore>> opened =
        NetworkStore::Open(dir);
    if (!opened.ok()) {
      GLINT_LOG_ERROR("--store_dir: {}", opened.status().ToString());
      return 1;
    }
    store = *std::move(opened);
    journal = std::make_unique<StoreJournal>(store.get());
    options->journal = journal.get();
  }
  absl::StatusOr<std::unique_ptr<HostManager>> host_manager =
      HostManager::CreateFromConfigs(*std::move(options), *configs);
  if (!host_manager.ok()) {
    GLINT_LOG_ERROR("cannot create the devices: {}",
                    host_manager.status().ToString());
    return 1;
  }
  absl::StatusOr<std::unique_ptr<ModelRepository>> repository =
      MakeModelRepository(host_manager->get());
  if (!repository.ok()) {
    GLINT_LOG_ERROR("{}", repository.status().ToString());
    return 1;
  }

  GrpcServerOptions server_options;
  absl::StatusOr<uint64_t> grpc_memory =
      ParseByteSize(absl::GetFlag(FLAGS_grpc_memory_limit));
  if (!grpc_memory.ok()) {
    GLINT_LOG_ERROR("--grpc_memory_limit: {}",
                    grpc_memory.status().ToString());
    return 1;
  }
  server_options.memory_quota_bytes = *grpc_memory;
  // glintd's own bound below gRPC's best-effort quota (request_budget.h).
  uint64_t request_bytes = *grpc_memory / 2;
  if (const std::string flag = absl::GetFlag(FLAGS_max_request_bytes_in_flight);
      !flag.empty()) {
    absl::StatusOr<uint64_t> parsed = ParseByteSize(flag);
    if (!parsed.ok() || *parsed == 0 || *parsed > *grpc_memory) {
      GLINT_LOG_ERROR(
          "--max_request_bytes_in_flight={}: {}", flag,
          parsed.ok() ? "must be more than 0 and at most --grpc_memory_limit"
                      : parsed.status().ToString());
      return 1;
    }
    request_bytes = *parsed;
  }
  RequestBudget request_budget(static_cast<int64_t>(request_bytes));
  server_options.max_threads = absl::GetFlag(FLAGS_grpc_max_threads);
  server_options.credentials = MakeServerCredentials(*tls);
  WorkerPoolOptions blocking_options;
  blocking_options.threads = absl::GetFlag(FLAGS_blocking_call_threads);
  blocking_options.max_queued = absl::GetFlag(FLAGS_blocking_call_queue);
  blocking_options.name = "glint-blocking";
  for (const absl::Status& s : {ValidateGrpcServerOptions(server_options),
                                WorkerPool::Validate(blocking_options)}) {
    if (!s.ok()) {
      GLINT_LOG_ERROR("{}", s.ToString());
      return 1;
    }
  }
  absl::StatusOr<std::string> chosen =
      ChooseListenPort(absl::GetFlag(FLAGS_listen));
  if (!chosen.ok()) {
    GLINT_LOG_ERROR("{}", chosen.status().ToString());
    return 1;
  }
  const std::string listen = *chosen;
  server_options.listen = listen;

  // Outlives the server (declared before it): its tasks answer calls.
  WorkerPool blocking(blocking_options);
  // Every service shares the HostManager, the blocking pool, the
  // authorizer and the server's settings; a further service registers
  // beside glint.v1 here.
  // Shared-memory regions of local clients, one registry for every
  // service (a region registered through one is usable through another).
  SharedMemoryRegistry shared_memory;
  GlintServiceImpl glint_service(host_manager->get(), &blocking,
                                 authorizer.get(), &shared_memory,
                                 &request_budget);
  // Same HostManager, same port: a network added through either protocol
  // serves through both.
  InferenceServiceImpl inference_service(host_manager->get(), &blocking,
                                         authorizer.get(), &shared_memory,
                                         &request_budget);
  inference_service.SetModelRepository(repository->get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  ConfigureServerBuilder(server_options, &builder, &port);
  builder.RegisterService(&glint_service);
  builder.RegisterService(&inference_service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    GLINT_LOG_ERROR("cannot listen on {}", listen);
    return 1;
  }
  GLINT_LOG_INFO("glintd listening on {} (port {}, {}, {}); devices: {}",
                 listen, port,
                 !security.tls.enabled() ? "plaintext"
                 : security.tls.mutual() ? "mutual TLS"
                                         : "TLS",
                 authorizer == nullptr
                     ? std::string("no tokens")
                     : absl::StrCat(authorizer->num_tokens(), " tokens"),
                 DescribeDevices((*host_manager)->GetDevices()));
  WarnIfExposed(listen, security);

  // REST and /metrics. Ready as the gRPC health says SERVING: once the
  // stored networks are back, until a shutdown begins.
  std::atomic<bool> ready{false};
  RestApiOptions rest_options;
  rest_options.ready = [&ready] { return ready.load(); };
  rest_options.authorizer = authorizer.get();
  RestApi rest_api(host_manager->get(), std::move(rest_options));
  std::unique_ptr<HttpServer> http_server;
  if (const std::string http_listen = absl::GetFlag(FLAGS_http_listen);
      !http_listen.empty()) {
    absl::StatusOr<std::unique_ptr<HttpServer>> started =
        StartHttp(http_listen, *tls, &rest_api);
    if (!started.ok()) {
      GLINT_LOG_ERROR("--http_listen: {}", started.status().ToString());
      server->Shutdown();
      (*host_manager)->Shutdown();
      return 1;
    }
    http_server = *std::move(started);
    GLINT_LOG_INFO("glintd serving {} (KServe v2 REST, /metrics) on {} "
                   "(port {})",
                   tls->has_value() ? "HTTPS" : "HTTP", http_listen,
                   http_server->port());
    WarnIfExposed(http_listen, security);
  }

  const std::string http_port_file = absl::GetFlag(FLAGS_http_port_file);
  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  for (const auto& [path, bound] :
       {std::make_pair(http_port_file,
                       http_server != nullptr ? http_server->port() : 0),
        std::make_pair(port_file, port)}) {
    if (path.empty()) continue;
    absl::Status s =
        bound == 0 ? absl::InvalidArgumentError(
                         "--http_port_file needs HTTP on (--http_listen)")
                   : WritePortFile(path, bound);
    if (!s.ok()) {
      GLINT_LOG_ERROR("{}", s.ToString());
      if (http_server != nullptr) http_server->Stop();
      server->Shutdown();
      (*host_manager)->Shutdown();
      return 1;
    }
  }

  // Stored networks come back before the daemon reports itself ready:
  // until then health checks say NOT_SERVING and ServerReady false
  // (clients and load balancers wait), while calls are already answered.
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  health->SetServingStatus(false);
  // Live while loading: a liveness probe must not restart a daemon that is
  // only slow to load its networks.
  const std::string liveness_service = absl::GetFlag(FLAGS_liveness_service);
  if (!liveness_service.empty()) {
    health->SetServingStatus(liveness_service, true);
  }
  absl::Notification restore_thread_done;
  std::thread restore_thread([&] {
    SetCurrentThreadName("glint-restore");
    if (store != nullptr) {
      const absl::Time start = absl::Now();
      const RestoreReport report = RestoreNetworks(*store, **host_manager);
      GLINT_LOG_INFO(
          "restored {} networks from {} in {} ({} unavailable, {} unreadable)",
          report.restored, store->dir(),
          absl::FormatDuration(absl::Now() - start), report.unavailable,
          report.unreadable);
    }
    // The repository's models load before the daemon says it is ready:
    // a replica behind a load balancer gets runs only once it serves them.
    if (*repository != nullptr &&
        (*repository)->options().mode != ModelControlMode::kExplicit) {
      SyncRepository(**repository);
    }
    health->SetServingStatus(true);
    ready.store(true);
    inference_service.SetReady();
    restore_thread_done.Notify();
  });

  // Poll mode: rescans until shutdown (a scan in progress finishes first).
  absl::Notification stop_polling;
  std::thread poll_thread([&] {
    SetCurrentThreadName("glint-repo-poll");
    if (*repository == nullptr ||
        (*repository)->options().mode != ModelControlMode::kPoll) {
      return;
    }
    restore_thread_done.WaitForNotification();
    const absl::Duration every =
        absl::Seconds(absl::GetFlag(FLAGS_repository_poll_secs));
    while (!stop_polling.WaitForNotificationWithTimeout(every)) {
      SyncRepository(**repository);
    }
  });

  std::thread signal_thread([&] {
    SetCurrentThreadName("glint-signals");
    int signal = 0;
    sigwait(&shutdown_signals, &signal);
    stop_polling.Notify();
    const absl::Time start = absl::Now();
    GLINT_LOG_INFO("received signal {}; shutting down", signal);
    health->Shutdown();  // NOT_SERVING from now on.
    ready.store(false);
    inference_service.Shutdown();
    // No new work; queued runs fail, in-flight ones stop before their next
    // partition and imports in progress are killed, all UNAVAILABLE, so
    // their RPCs end well within the grace period.
    stopping->Cancel();
    (*host_manager)->Shutdown();
    // HTTP stops alongside gRPC: its requests in progress end with the
    // runs, idle keep-alive connections within its keep-alive timeout.
    std::thread http_stop([&http_server] {
      if (http_server != nullptr) http_server->Stop();
    });
    server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    http_stop.join();
    GLINT_LOG_INFO("stopped serving in {}",
                   absl::FormatDuration(absl::Now() - start));
  });
  server->Wait();
  signal_thread.join();
  restore_thread.join();
  poll_thread.join();
  (*host_manager)->Shutdown();
  GLINT_LOG_INFO("glintd stopped");
  return 0;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  // The import helper: one request on stdin, its reply on stdout.
  if (argc == 2 && argv[1] == glint::kServeImportHelperFlag) {
    return glint::ServeImportHelper();
  }
  // Before any thread exists: so that removed networks' memory goes back
  // to the OS (allocator_policy.h).
  glint::ConfigureAllocatorForServing();
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
  // Returns only when nothing is to be done (or the re-execution failed).
  const absl::Status spin =
      glint::ApplyOmpSpinCount(absl::GetFlag(FLAGS_omp_spin_count), argv);
  if (!spin.ok()) {
    std::fprintf(stderr, "glintd: %s\n", spin.ToString().c_str());
    return 1;
  }
  return glint::Run();
}
