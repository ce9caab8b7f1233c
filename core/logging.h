// The one logging header of Glint: a thin layer over spdlog so that the rest
// of the code base never names spdlog directly and the sink can change.
#ifndef GLINT_CORE_LOGGING_H_
#define GLINT_CORE_LOGGING_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "spdlog/spdlog.h"

namespace glint {

// Sets the process-wide level from "trace", "debug", "info", "warn",
// "error" or "off". Unknown names are INVALID_ARGUMENT.
absl::Status SetLogLevel(absl::string_view level);

}  // namespace glint

#define GLINT_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define GLINT_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define GLINT_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define GLINT_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)

#endif  // GLINT_CORE_LOGGING_H_
