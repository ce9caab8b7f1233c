// The `glint` CLI's argument parsing: a command's arguments split into
// positionals and options, and the usage errors (exit code 2) they raise.
// Internal to client/ (cli.cc). Pure functions; thread-safe.
#ifndef GLINT_CLIENT_CLI_ARGS_H_
#define GLINT_CLIENT_CLI_ARGS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor.h"

namespace glint {

// INVALID_ARGUMENT with `message` and a pointer to `glint help`, marked as
// a usage error (without parsing messages: a payload).
absl::Status UsageError(absl::string_view message);
bool IsUsageError(const absl::Status& status);

// An option's key with '-' as '_' ("output-dir" is "output_dir").
std::string NormalizeKey(absl::string_view key);

// One command's arguments split into positionals and options. Options are
// `--key value` or `--key=value`; '-' and '_' in keys are equivalent, so
// --output-dir and --output_dir both work.
struct ParsedArgs {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;

  std::vector<std::string> All(const std::string& key) const;
  std::optional<std::string> Last(const std::string& key) const;
};

// Parses `args`: options must be in `allowed`; `flags` are options that
// take no value (recorded as "true"). Usage errors for an unknown option
// or one without its value.
absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const std::vector<std::string>& allowed,
                                     const std::vector<std::string>& flags);

// A usage error, "expected: glint USAGE", unless there are `n` positionals.
absl::Status ExpectPositionals(const ParsedArgs& args, size_t n,
                               absl::string_view usage);

// "1,3,224,224" (empty: a scalar); a usage error for a bad dimension.
absl::StatusOr<Shape> ParseDims(absl::string_view text);

}  // namespace glint

#endif  // GLINT_CLIENT_CLI_ARGS_H_
