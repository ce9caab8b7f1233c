// SHA-256 digests (OpenSSL EVP): the store's checksums and file names, and
// the plan cache's keys.
#ifndef GLINT_CORE_DIGEST_H_
#define GLINT_CORE_DIGEST_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace glint {

inline constexpr int kSha256Size = 32;

// The 32 raw bytes of SHA-256 of `bytes`. Thread-safe. Aborts only if
// OpenSSL itself fails (an allocation failure or a broken install): code
// that cannot checksum cannot tell good data from bad.
std::string Sha256(absl::string_view bytes);

// SHA-256 of the concatenation of `pieces`, without concatenating them (a
// record of a header and a model's bytes is checksummed in place).
// `after_piece` (when set) is called with each piece's index once it is
// read, e.g. to drop a mapped file's pages (ModelBytes::EvictRange).
std::string Sha256OfPieces(
    absl::Span<const absl::string_view> pieces,
    const std::function<void(size_t index)>& after_piece = nullptr);

// Lowercase hex SHA-256 of `bytes`.
std::string Sha256Hex(absl::string_view bytes);

}  // namespace glint

#endif  // GLINT_CORE_DIGEST_H_
