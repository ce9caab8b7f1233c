#include "core/digest.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/escaping.h"

namespace glint {

std::string Sha256(absl::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(),
                 nullptr) != 1 ||
      size != kSha256Size) {
    std::fprintf(stderr, "glint: OpenSSL SHA-256 failed\n");
    std::abort();
  }
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string Sha256Hex(absl::string_view bytes) {
  return absl::BytesToHexString(Sha256(bytes));
}

}  // namespace glint
