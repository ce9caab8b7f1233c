// glintd's command-line flags (glintd --help lists them with their docs)
// and their reading into GlintServerOptions. The flags that are not server
// options (the port files, the log level, the OpenMP spin count) are read
// by glintd's main.
#ifndef GLINT_RUNTIME_SERVER_GLINTD_FLAGS_H_
#define GLINT_RUNTIME_SERVER_GLINTD_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "runtime/server/glint_server.h"

ABSL_DECLARE_FLAG(std::string, port_file);
ABSL_DECLARE_FLAG(std::string, http_port_file);
ABSL_DECLARE_FLAG(std::string, log_level);
ABSL_DECLARE_FLAG(int64_t, omp_spin_count);

namespace glint {

// The argument that makes glintd its own import helper: every model is
// imported by a fresh copy of glintd started with it (onnx/import_sandbox.h).
inline constexpr absl::string_view kServeImportHelperFlag =
    "--serve_import_helper";

// The parsed flags as options (a leading ~ in paths is $HOME); the import
// helper is this executable. INVALID_ARGUMENT naming the flag for a value
// that does not parse.
absl::StatusOr<GlintServerOptions> GlintServerOptionsFromFlags();

}  // namespace glint

#endif  // GLINT_RUNTIME_SERVER_GLINTD_FLAGS_H_
