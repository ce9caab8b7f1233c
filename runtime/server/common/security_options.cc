#include "runtime/server/common/security_options.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/logging.h"

namespace glint {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

// A passphrase callback that refuses: OpenSSL's default would prompt on
// the terminal for an encrypted key, and a daemon must not wait on one.
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*u*/) {
  return 0;
}

// OpenSSL's most recent error, for messages; clears the queue.
std::string OpenSslError() {
  const unsigned long code = ERR_peek_last_error();
  std::string text;
  if (code != 0) {
    char buffer[256];
    ERR_error_string_n(code, buffer, sizeof(buffer));
    text = absl::StrCat(" (", buffer, ")");
  }
  ERR_clear_error();
  return text;
}

absl::StatusOr<std::string> ReadPemFile(absl::string_view flag,
                                        const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": cannot read '", path, "': ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": cannot read '", path, "'"));
  }
  return text.str();
}

// The certificates of a PEM text, in order; INVALID_ARGUMENT without any.
absl::StatusOr<std::vector<X509Ptr>> ParseCertificates(
    absl::string_view flag, const std::string& path, const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::vector<X509Ptr> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase,
                                        nullptr)) {
    certs.emplace_back(cert);
  }
  // The loop ends with "no start line" at the end of the text: expected.
  ERR_clear_error();
  if (certs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": '", path,
        "' holds no PEM certificate (-----BEGIN CERTIFICATE-----)"));
  }
  return certs;
}

void WarnIfNotCurrentlyValid(absl::string_view flag, const std::string& path,
                             X509* cert) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    GLINT_LOG_WARN("--{}: the certificate in '{}' has expired; clients will "
                   "refuse the connection",
                   std::string(flag), path);
  } else if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    GLINT_LOG_WARN("--{}: the certificate in '{}' is not valid yet; clients "
                   "will refuse the connection",
                   std::string(flag), path);
  }
}

// Host part of "host:port" / "[v6]:port" / "v6" without a port.
std::string ListenHost(absl::string_view listen) {
  if (absl::StartsWith(listen, "[")) {
    const size_t close = listen.find(']');
    if (close != absl::string_view::npos) {
      return std::string(listen.substr(1, close - 1));
    }
  }
  const size_t colon = listen.rfind(':');
  if (colon == absl::string_view::npos) return std::string(listen);
  // More than one colon without brackets: a bare IPv6 address.
  if (listen.find(':') != colon) return std::string(listen);
  return std::string(listen.substr(0, colon));
}

bool IsLoopbackSockaddr(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (address->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
    if (IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6->sin6_addr)) {
      return v6->sin6_addr.s6_addr[12] == 127;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::optional<TlsMaterial>> LoadTlsMaterial(
    const TlsOptions& options) {
  if (!options.enabled()) {
    if (!options.key_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_key needs --tls_cert (the certificate of that key)");
    }
    if (!options.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca needs --tls_cert and --tls_key (mutual TLS is TLS "
          "first)");
    }
    return std::nullopt;
  }
  if (options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert needs --tls_key (the certificate's private key)");
  }
  TlsMaterial material;
  absl::StatusOr<std::string> cert = ReadPemFile("tls_cert", options.cert_file);
  if (!cert.ok()) return cert.status();
  material.cert_chain_pem = *std::move(cert);
  absl::StatusOr<std::vector<X509Ptr>> chain = ParseCertificates(
      "tls_cert", options.cert_file, material.cert_chain_pem);
  if (!chain.ok()) return chain.status();
  WarnIfNotCurrentlyValid("tls_cert", options.cert_file, chain->front().get());

  absl::StatusOr<std::string> key = ReadPemFile("tls_key", options.key_file);
  if (!key.ok()) return key.status();
  material.private_key_pem = *std::move(key);
  BioPtr key_bio(BIO_new_mem_buf(material.private_key_pem.data(),
                                 static_cast<int>(material.private_key_pem.size())));
  PkeyPtr pkey(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr));
  if (pkey == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_key: '", options.key_file,
        "' holds no unencrypted PEM private key", OpenSslError()));
  }
  if (X509_check_private_key(chain->front().get(), pkey.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_key: the key in '", options.key_file,
        "' does not belong to the certificate in '", options.cert_file, "'",
        OpenSslError()));
  }
  struct stat info {};
  if (stat(options.key_file.c_str(), &info) == 0 &&
      (info.st_mode & S_IROTH) != 0) {
    GLINT_LOG_WARN("--tls_key: '{}' is readable by every user of this "
                   "machine; chmod 600 it",
                   options.key_file);
  }

  if (options.mutual()) {
    absl::StatusOr<std::string> ca =
        ReadPemFile("tls_client_ca", options.client_ca_file);
    if (!ca.ok()) return ca.status();
    material.client_ca_pem = *std::move(ca);
    absl::StatusOr<std::vector<X509Ptr>> cas = ParseCertificates(
        "tls_client_ca", options.client_ca_file, material.client_ca_pem);
    if (!cas.ok()) return cas.status();
  }
  return material;
}

bool IsLoopbackListenAddress(absl::string_view listen) {
  if (absl::StartsWith(listen, "unix:") ||
      absl::StartsWith(listen, "unix-abstract:")) {
    return true;
  }
  const std::string host = ListenHost(listen);
  if (host.empty()) return false;  // ":50051" binds every interface.
  if (absl::EqualsIgnoreCase(host, "localhost")) return true;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 ||
      found == nullptr) {
    return false;  // Unresolvable: glintd will fail to bind anyway.
  }
  bool loopback = true;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    loopback = loopback && IsLoopbackSockaddr(a->ai_addr);
  }
  freeaddrinfo(found);
  return loopback;
}

std::vector<std::string> ExposureWarnings(absl::string_view listen,
                                          const SecurityOptions& options) {
  std::vector<std::string> warnings;
  if (IsLoopbackListenAddress(listen)) return warnings;
  if (!options.tls.enabled()) {
    warnings.push_back(absl::StrCat(
        "listening on ", listen,
        ", beyond loopback, WITHOUT TLS: tokens, models and tensors cross "
        "the network in clear text (set --tls_cert and --tls_key)"));
  }
  if (options.auth_tokens_file.empty() && !options.tls.mutual()) {
    warnings.push_back(absl::StrCat(
        "listening on ", listen,
        ", beyond loopback, WITHOUT TOKENS: anyone who reaches this port may "
        "add, remove and run networks (set --auth_tokens, or --tls_client_ca "
        "for mutual TLS)"));
  }
  return warnings;
}

}  // namespace glint
