#include "client/cli_args.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace glint {

namespace {

// Marks a status as a usage error (exit code 2) without parsing messages.
constexpr char kUsagePayload[] = "type.glint.dev/glint.cli.UsageError";

}  // namespace

std::string NormalizeKey(absl::string_view key) {
  return absl::StrReplaceAll(key, {{"-", "_"}});
}

absl::Status UsageError(absl::string_view message) {
  absl::Status s = absl::InvalidArgumentError(
      absl::StrCat(message, " (see 'glint help')"));
  s.SetPayload(kUsagePayload, absl::Cord("1"));
  return s;
}

bool IsUsageError(const absl::Status& status) {
  return status.GetPayload(kUsagePayload).has_value();
}

std::vector<std::string> ParsedArgs::All(const std::string& key) const {
  std::vector<std::string> values;
  auto range = options.equal_range(key);
  for (auto it = range.first; it != range.second; ++it) {
    values.push_back(it->second);
  }
  return values;
}

std::optional<std::string> ParsedArgs::Last(const std::string& key) const {
  std::vector<std::string> v = All(key);
  if (v.empty()) return std::nullopt;
  return v.back();
}

absl::StatusOr<ParsedArgs> ParseArgs(const std::vector<std::string>& args,
                                     const std::vector<std::string>& allowed,
                                     const std::vector<std::string>& flags) {
  ParsedArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      parsed.positional.insert(parsed.positional.end(), args.begin() + i + 1,
                               args.end());
      break;
    }
    if (!absl::StartsWith(a, "--") || a.size() == 2) {
      parsed.positional.push_back(a);
      continue;
    }
    std::string key, value;
    const size_t eq = a.find('=');
    if (eq != std::string::npos) {
      key = NormalizeKey(absl::string_view(a).substr(2, eq - 2));
      value = a.substr(eq + 1);
    } else {
      key = NormalizeKey(absl::string_view(a).substr(2));
      if (std::find(flags.begin(), flags.end(), key) != flags.end()) {
        parsed.options.emplace(key, "true");
        continue;
      }
      if (i + 1 >= args.size()) {
        return UsageError(absl::StrCat("option --", key, " needs a value"));
      }
      value = args[++i];
    }
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return UsageError(absl::StrCat("unknown option --", key));
    }
    parsed.options.emplace(key, value);
  }
  return parsed;
}

absl::Status ExpectPositionals(const ParsedArgs& args, size_t n,
                               absl::string_view usage) {
  if (args.positional.size() != n) {
    return UsageError(absl::StrCat("expected: glint ", usage));
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> ParseDims(absl::string_view text) {
  std::vector<int64_t> dims;
  if (absl::StripAsciiWhitespace(text).empty()) return Shape();  // A scalar.
  for (absl::string_view d : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(d, &v) || v < 0) {
      return UsageError(absl::StrCat("bad dimension '", d, "' in '", text,
                                     "' (expected e.g. 1,3,224,224)"));
    }
    dims.push_back(v);
  }
  return Shape(std::move(dims));
}

}  // namespace glint
