// How glintd secures a listening port: TLS files and the token file, as
// given by flags, checked once at start-up and shared by every port (the
// gRPC port here, the HTTP port with its own library). No gRPC or HTTP
// types: grpc_auth.h turns the material into gRPC credentials; an HTTP
// server takes the same PEM text (or the file paths).
//
// Thread-compatible value types; the functions are thread-safe.
#ifndef GLINT_RUNTIME_SERVER_COMMON_SECURITY_OPTIONS_H_
#define GLINT_RUNTIME_SERVER_COMMON_SECURITY_OPTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace glint {

// TLS of a listening port. All paths name PEM files; empty = not given.
struct TlsOptions {
  // --tls_cert: the server's certificate, optionally followed by the
  // intermediate certificates of its chain. Setting it turns TLS on.
  std::string cert_file;
  // --tls_key: the private key of the first certificate in cert_file.
  std::string key_file;
  // --tls_client_ca: CA certificate(s); when set, clients must present a
  // certificate signed by one of them (mutual TLS), else the handshake
  // fails.
  std::string client_ca_file;

  bool enabled() const { return !cert_file.empty(); }
  bool mutual() const { return !client_ca_file.empty(); }
};

// Everything that secures glintd's ports.
struct SecurityOptions {
  TlsOptions tls;
  // --auth_tokens: the token file (auth.h); empty = every call is open.
  std::string auth_tokens_file;
};

// The PEM text behind TlsOptions, read and checked.
struct TlsMaterial {
  std::string cert_chain_pem;
  std::string private_key_pem;
  std::string client_ca_pem;  // Empty unless mutual TLS.
};

// Reads and checks the TLS files: nullopt when TLS is off. INVALID_ARGUMENT
// naming the flag and file for an unreadable file, text without a PEM
// certificate or key, a key that does not belong to the certificate, a key
// without a certificate or a client CA without a server certificate. Logs
// a warning for an expired or not yet valid certificate and for a key file
// readable by every user.
absl::StatusOr<std::optional<TlsMaterial>> LoadTlsMaterial(
    const TlsOptions& options);

// Whether `listen` ("host:port", "[v6]:port", "unix:PATH") binds only
// addresses that other machines cannot reach: 127.0.0.0/8, ::1,
// "localhost", a unix socket, or a host name resolving only to those. An
// empty host, 0.0.0.0, [::] and every other address are not loopback.
bool IsLoopbackListenAddress(absl::string_view listen);

// The warnings glintd logs (loudly) for `listen` under `options`: none on
// loopback; else one for no TLS (tokens and tensors cross the network in
// clear text) and one for no tokens without mutual TLS (anyone who reaches
// the port may add, remove and run networks).
std::vector<std::string> ExposureWarnings(absl::string_view listen,
                                          const SecurityOptions& options);

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_COMMON_SECURITY_OPTIONS_H_
