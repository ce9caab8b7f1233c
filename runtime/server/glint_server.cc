#include "runtime/server/glint_server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"
#include "core/status_macros.h"
#include "runtime/server/common/auth.h"
#include "runtime/server/grpc/grpc_auth.h"
#include "runtime/server/grpc/inference_service.h"
#include "runtime/server/grpc/request_budget.h"
#include "runtime/server/grpc/server_setup.h"
#include "runtime/server/grpc/service.h"
#include "runtime/server/grpc/worker_pool.h"
#include "runtime/server/http/http_server.h"
#include "runtime/server/http/rest_api.h"

namespace glint {
namespace {

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

std::string DescribeDevices(const std::vector<DeviceInfo>& devices) {
  return absl::StrJoin(devices, ", ", [](std::string* out,
                                         const DeviceInfo& d) {
    absl::StrAppend(out, d.id, "=", d.name, " (", d.type, ", ",
                    d.memory_bytes / kMiB, " MiB)");
  });
}

// A banner rather than a line, so that it stands out in a scrolling log.
void WarnIfExposed(const std::string& listen, const SecurityOptions& options) {
  const std::vector<std::string> warnings = ExposureWarnings(listen, options);
  if (warnings.empty()) return;
  GLINT_LOG_WARN("{}", std::string(72, '!'));
  for (const std::string& w : warnings) GLINT_LOG_WARN("!! {}", w);
  GLINT_LOG_WARN("{}", std::string(72, '!'));
}

}  // namespace

absl::StatusOr<std::unique_ptr<GlintServer>> GlintServer::BuildAndStart(
    GlintServerOptions options) {
  std::unique_ptr<GlintServer> server(new GlintServer(std::move(options)));
  // A failed step leaves the server to its destructor, which shuts down
  // whatever the steps before started.
  GLINT_RETURN_IF_ERROR(server->CreateCore());
  GLINT_RETURN_IF_ERROR(server->StartGrpc());
  GLINT_RETURN_IF_ERROR(server->StartHttp());
  server->core_->StartLoading([s = server.get()] { s->OnLoaded(); });
  return server;
}

GlintServer::GlintServer(GlintServerOptions options)
    : options_(std::move(options)) {}

GlintServer::~GlintServer() {
  Shutdown();
  if (server_ != nullptr) server_->Wait();
  // The core's loading thread calls OnLoaded: it ends before the services
  // it touches are destroyed.
  if (core_ != nullptr) core_->WaitUntilLoaded();
}

absl::Status GlintServer::CreateCore() {
  if (!options_.security.auth_tokens_file.empty()) {
    absl::StatusOr<std::unique_ptr<Authorizer>> parsed =
        Authorizer::FromFile(options_.security.auth_tokens_file);
    if (!parsed.ok()) {
      return absl::Status(parsed.status().code(),
                          absl::StrCat("--auth_tokens: ",
                                       parsed.status().message()));
    }
    authorizer_ = *std::move(parsed);
  }
  GLINT_ASSIGN_OR_RETURN(core_, ServingCore::Create(options_.core));
  return absl::OkStatus();
}

absl::Status GlintServer::StartGrpc() {
  GLINT_ASSIGN_OR_RETURN(tls_, LoadTlsMaterial(options_.security.tls));
  GrpcServerOptions grpc_options;
  grpc_options.memory_quota_bytes = options_.grpc_memory_limit_bytes;
  grpc_options.max_threads = options_.grpc_max_threads;
  grpc_options.credentials = MakeServerCredentials(tls_);
  // glintd's own bound below gRPC's best-effort quota (request_budget.h).
  uint64_t request_bytes = options_.max_request_bytes_in_flight;
  if (request_bytes == 0) request_bytes = options_.grpc_memory_limit_bytes / 2;
  if (request_bytes > options_.grpc_memory_limit_bytes) {
    return absl::InvalidArgumentError(
        "--max_request_bytes_in_flight must be at most --grpc_memory_limit");
  }
  if (options_.upload_idle_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--upload_idle_timeout must be positive (inf: never)");
  }
  WorkerPoolOptions blocking;
  blocking.threads = options_.blocking_call_threads;
  blocking.max_queued = options_.blocking_call_queue;
  blocking.name = "glint-blocking";
  GLINT_RETURN_IF_ERROR(ValidateGrpcServerOptions(grpc_options));
  GLINT_RETURN_IF_ERROR(WorkerPool::Validate(blocking));
  GLINT_ASSIGN_OR_RETURN(listen_, ChooseListenPort(options_.listen));
  grpc_options.listen = listen_;

  request_budget_ =
      std::make_unique<RequestBudget>(static_cast<int64_t>(request_bytes));
  blocking_ = std::make_unique<WorkerPool>(blocking);
  // Same core, same port, same pool, authorizer, regions and budget: a
  // network added through either protocol serves through both.
  // Uploads wait beside the store, on its disk, whose space they need
  // anyway once added.
  UploadOptions uploads;
  uploads.dir = core_->store_dir();
  uploads.max_concurrent = blocking.threads + blocking.max_queued;
  uploads.idle_timeout = options_.upload_idle_timeout;
  glint_service_ = std::make_unique<GlintServiceImpl>(
      &core_->host_manager(), blocking_.get(), authorizer_.get(),
      &core_->shared_memory(), request_budget_.get(), std::move(uploads));
  inference_service_ = std::make_unique<InferenceServiceImpl>(
      &core_->host_manager(), blocking_.get(), authorizer_.get(),
      &core_->shared_memory(), request_budget_.get());
  inference_service_->SetModelRepository(core_->repository());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  ConfigureServerBuilder(grpc_options, &builder, &port_);
  builder.RegisterService(glint_service_.get());
  builder.RegisterService(inference_service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port_ == 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", listen_));
  }
  const SecurityOptions& security = options_.security;
  GLINT_LOG_INFO("glintd listening on {} (port {}, {}, {}); devices: {}",
                 listen_, port_,
                 !security.tls.enabled() ? "plaintext"
                 : security.tls.mutual() ? "mutual TLS"
                                         : "TLS",
                 authorizer_ == nullptr
                     ? std::string("no tokens")
                     : absl::StrCat(authorizer_->num_tokens(), " tokens"),
                 DescribeDevices(core_->host_manager().GetDevices()));
  WarnIfExposed(listen_, security);
  // NOT_SERVING until the stored networks and the repository are loaded
  // (clients and load balancers wait), while calls are already answered.
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  health->SetServingStatus(false);
  // Live while loading: a liveness probe must not restart a daemon that is
  // only slow to load its networks.
  if (!options_.liveness_service.empty()) {
    health->SetServingStatus(options_.liveness_service, true);
  }
  return absl::OkStatus();
}

int GlintServer::http_port() const {
  return http_server_ != nullptr ? http_server_->port() : 0;
}

absl::Status GlintServer::StartHttp() {
  // REST and /metrics are ready as the gRPC health says SERVING.
  RestApiOptions rest;
  rest.ready = [this] { return ready_.load(); };
  rest.authorizer = authorizer_.get();
  rest_api_ =
      std::make_unique<RestApi>(&core_->host_manager(), std::move(rest));
  if (options_.http_listen.empty()) return absl::OkStatus();
  HttpServerOptions http;
  http.listen = options_.http_listen;
  http.tls = tls_;
  http.threads = options_.http_threads;
  http.max_connections = options_.http_max_connections;
  http.max_connections_per_peer = options_.http_max_connections_per_peer;
  http.io_timeout = options_.http_timeout;
  http.max_request_bytes = options_.http_max_request_bytes;
  absl::StatusOr<std::unique_ptr<HttpServer>> started =
      HttpServer::Start(http, rest_api_.get());
  if (!started.ok()) {
    return absl::Status(started.status().code(),
                        absl::StrCat("--http_listen: ",
                                     started.status().message()));
  }
  http_server_ = *std::move(started);
  GLINT_LOG_INFO("glintd serving {} (KServe v2 REST, /metrics) on {} "
                 "(port {})",
                 tls_.has_value() ? "HTTPS" : "HTTP", options_.http_listen,
                 http_server_->port());
  WarnIfExposed(options_.http_listen, options_.security);
  return absl::OkStatus();
}

void GlintServer::OnLoaded() {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_) return;
  server_->GetHealthCheckService()->SetServingStatus(true);
  ready_.store(true);
  inference_service_->SetReady();
}

void GlintServer::WaitUntilReady() { core_->WaitUntilLoaded(); }

void GlintServer::Shutdown() {
  {
    absl::MutexLock lock(&shutdown_mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  const absl::Time start = absl::Now();
  // One deadline for the whole shutdown: the time the runs take to stop
  // comes out of the calls' grace, not on top of it.
  const absl::Time deadline = start + options_.shutdown_grace;
  ready_.store(false);
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->Shutdown();  // NOT_SERVING from now.
  }
  if (inference_service_ != nullptr) inference_service_->Shutdown();
  // gRPC takes no new calls from now and cancels those still in progress
  // at the deadline, alongside the core's shutdown below: a run that a
  // device holds past the grace (one long launch) has its call answered
  // CANCELLED then, not never.
  std::thread grpc_stop([this, deadline] {
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(deadline));
  });
  // No new work; polling stops, queued runs fail, in-flight ones stop
  // before their next launch or copy and imports in progress are killed,
  // all UNAVAILABLE, so their RPCs end well within the grace period.
  if (core_ != nullptr) core_->Shutdown();
  // HTTP stops alongside gRPC: its requests in progress end with the runs,
  // and a client stalled mid-request is cut off at the same deadline.
  std::thread http_stop([this, deadline] {
    if (http_server_ != nullptr) http_server_->Stop(deadline);
  });
  grpc_stop.join();
  http_stop.join();
  GLINT_LOG_INFO("stopped serving in {}",
                 absl::FormatDuration(absl::Now() - start));
}

}  // namespace glint
