// `glint help`: every command, its arguments and the global options.
#ifndef GLINT_CLIENT_CLI_USAGE_H_
#define GLINT_CLIENT_CLI_USAGE_H_

namespace glint {

extern const char kCliUsage[];

}  // namespace glint

#endif  // GLINT_CLIENT_CLI_USAGE_H_
