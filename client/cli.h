// The glint command-line client, as a function so that the binary's main is
// one line and argument handling can be tested in-process.
//
//   glint [--server=HOST:PORT] [--connect_timeout=5s] [--timeout=DURATION]
//         [--tls_ca=PEM | --tls] [--tls_cert=PEM --tls_key=PEM]
//         [--tls_server_name=NAME] [--token_file=FILE] COMMAND [ARGS]
//   commands: add NAME MODEL.onnx [--input_shape NAME=D0,D1,...]...
//             run NAME --input [NAME=]FILE... [--output NAME]...
//                      [--output-dir DIR]
//             list | show NAME | remove NAME | devices | stats [NAME]
//             help
//
// Errors print exactly one line, "glint: error: <CODE>: <message>", to the
// error stream; the exit code is 2 for usage errors and 1 for every other
// failure. Reentrant: no global state.
#ifndef GLINT_CLIENT_CLI_H_
#define GLINT_CLIENT_CLI_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace glint {

inline constexpr char kDefaultServer[] = "127.0.0.1:50051";

// `args` excludes argv[0]. Returns the process exit code.
int RunGlintCli(const std::vector<std::string>& args, std::ostream& out,
                std::ostream& err);

// "glint: error: NOT_FOUND: no network 'x'" with any newline in the message
// folded into a space, so that the error is always one line.
std::string FormatCliError(const absl::Status& status);

// Output names are ONNX value names and may hold '/' or ':'; anything but
// [A-Za-z0-9._-] becomes '_' so that `--output-dir` never escapes DIR.
std::string SafeFileName(const std::string& name);

}  // namespace glint

#endif  // GLINT_CLIENT_CLI_H_
