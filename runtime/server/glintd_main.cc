// glintd: the Glint daemon. Serves glint.v1.HostManager, grpc.health.v1 and
// server reflection on one address until SIGINT or SIGTERM.
//
//   glintd [--listen=127.0.0.1:50051] [--port_file=PATH]
//          [--devices=sim*2:memory=2GiB] [--log_level=info]
//
// Exit status: 0 after a clean shutdown, 1 when start-up fails.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "proto/limits.h"
#include "runtime/host_manager.h"
#include "runtime/logging.h"
#include "runtime/server/device_spec.h"
#include "runtime/server/service.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to serve on, host:port. Loopback by default: glintd has no "
          "authentication, so exposing it is an explicit choice. Port 0 "
          "picks a free port (see --port_file).");
ABSL_FLAG(std::string, port_file, "",
          "If set, the bound port is written to this file once the server "
          "accepts connections (written atomically: a reader never sees a "
          "partial file).");
ABSL_FLAG(std::string, devices, glint::kDefaultDeviceSpec,
          "Devices: comma-separated TYPE[*COUNT][:key=value...], e.g. "
          "'sim*2:memory=2GiB' or 'sim:memory=512MiB,sim:memory=4GiB'.");
ABSL_FLAG(std::string, log_level, "info",
          "trace, debug, info, warn, error or off.");

namespace glint {
namespace {

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

std::string DescribeDevices(const std::vector<DeviceInfo>& devices) {
  return absl::StrJoin(devices, ", ", [](std::string* out,
                                         const DeviceInfo& d) {
    absl::StrAppend(out, d.id, "=", d.name, " (", d.type, ", ",
                    d.memory_bytes / kMiB, " MiB)");
  });
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
  absl::StatusOr<std::unique_ptr<HostManager>> host_manager =
      HostManager::CreateFromConfigs(HostManagerOptions(), *configs);
  if (!host_manager.ok()) {
    GLINT_LOG_ERROR("cannot create the devices: {}",
                    host_manager.status().ToString());
    return 1;
  }

  GlintServiceImpl service(host_manager->get());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  const std::string listen = absl::GetFlag(FLAGS_listen);
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    GLINT_LOG_ERROR("cannot listen on {}", listen);
    return 1;
  }
  GLINT_LOG_INFO("glintd listening on {} (port {}); devices: {}", listen,
                 port, DescribeDevices((*host_manager)->GetDevices()));

  const std::string port_file = absl::GetFlag(FLAGS_port_file);
  if (!port_file.empty()) {
    if (absl::Status s = WritePortFile(port_file, port); !s.ok()) {
      GLINT_LOG_ERROR("{}", s.ToString());
      server->Shutdown();
      (*host_manager)->Shutdown();
      return 1;
    }
  }

  std::thread signal_thread([&server, &shutdown_signals] {
    int signal = 0;
    sigwait(&shutdown_signals, &signal);
    GLINT_LOG_INFO("received signal {}; shutting down", signal);
    // Stops accepting calls; in-flight ones get kShutdownGrace to finish.
    server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  });
  server->Wait();
  signal_thread.join();
  (*host_manager)->Shutdown();
  GLINT_LOG_INFO("glintd stopped");
  return 0;
}

}  // namespace
}  // namespace glint

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "glintd: the Glint graph runtime daemon (gRPC service glint.v1)");
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (positional.size() > 1) {
    std::fprintf(stderr, "glintd: unexpected argument '%s'\n", positional[1]);
    return 1;
  }
  return glint::Run();
}
