// Text that comes from users (names in models and requests) on its way
// into replies and logs. Pure functions, thread-safe.
#ifndef GLINT_CORE_TEXT_H_
#define GLINT_CORE_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace glint {

// The most bytes of one user string an error message repeats: enough to
// recognise a name, small enough that a message stays far below gRPC's
// metadata limits whatever the user sent.
inline constexpr size_t kMaxQuotedBytes = 256;

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or
// code points past U+10FFFF), as protobuf's string fields require.
bool IsValidUtf8(absl::string_view text);

// `text` if at most `max_bytes` long, else its first bytes (cut at a
// character boundary) followed by "...(N bytes)".
std::string Clip(absl::string_view text, size_t max_bytes = kMaxQuotedBytes);

}  // namespace glint

#endif  // GLINT_CORE_TEXT_H_
