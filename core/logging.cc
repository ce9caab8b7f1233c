#include "core/logging.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace glint {

absl::Status SetLogLevel(absl::string_view level) {
  const std::string name(level);
  const spdlog::level::level_enum parsed = spdlog::level::from_str(name);
  // from_str maps unknown names to "off"; only accept "off" when asked for.
  if (parsed == spdlog::level::off && name != "off") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown log level '", name,
        "' (expected trace, debug, info, warn, error or off)"));
  }
  spdlog::set_level(parsed);
  return absl::OkStatus();
}

}  // namespace glint
