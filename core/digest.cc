#include "core/digest.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "absl/strings/escaping.h"

namespace glint {

namespace {

[[noreturn]] void DigestFailed() {
  std::fprintf(stderr, "glint: OpenSSL SHA-256 failed\n");
  std::abort();
}

}  // namespace

std::string Sha256(absl::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &size, EVP_sha256(),
                 nullptr) != 1 ||
      size != kSha256Size) {
    DigestFailed();
  }
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string Sha256OfPieces(absl::Span<const absl::string_view> pieces,
                           const std::function<void(size_t)>& after_piece) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context(EVP_MD_CTX_new(),
                                                             EVP_MD_CTX_free);
  if (context == nullptr ||
      EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1) {
    DigestFailed();
  }
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (EVP_DigestUpdate(context.get(), pieces[i].data(), pieces[i].size()) !=
        1) {
      DigestFailed();
    }
    if (after_piece) after_piece(i);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context.get(), digest, &size) != 1 ||
      size != kSha256Size) {
    DigestFailed();
  }
  return std::string(reinterpret_cast<const char*>(digest), size);
}

std::string Sha256Hex(absl::string_view bytes) {
  return absl::BytesToHexString(Sha256(bytes));
}

}  // namespace glint
