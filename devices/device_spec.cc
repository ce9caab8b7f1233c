#include "devices/device_spec.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace glint {
namespace {

constexpr int kMaxDeviceCount = 1024;

struct Unit {
  absl::string_view suffix;
  uint64_t factor;
};

// Longest suffixes first so that "MiB" is not taken for "B".
constexpr Unit kUnits[] = {
    {"KiB", uint64_t{1} << 10}, {"MiB", uint64_t{1} << 20},
    {"GiB", uint64_t{1} << 30}, {"KB", 1000},
    {"MB", 1000 * 1000},        {"GB", 1000 * 1000 * 1000},
    {"B", 1},
};

bool IsAsciiDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

absl::Status EntryError(absl::string_view entry, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad --devices entry '", entry, "': ", why));
}

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  uint64_t factor = 1;
  for (const Unit& unit : kUnits) {
    if (absl::EndsWith(s, unit.suffix)) {
      factor = unit.factor;
      s.remove_suffix(unit.suffix.size());
      break;
    }
  }
  uint64_t value = 0;
  // Digits only: SimpleAtoi would also take a sign, and "-1" must not wrap.
  if (!IsAsciiDigits(s) || !absl::SimpleAtoi(s, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad size '", text,
        "' (expected an integer with an optional unit B, KiB, MiB, GiB, KB, "
        "MB or GB)"));
  }
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(value, factor, &bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("size '", text, "' is too large"));
  }
  return bytes;
}

absl::StatusOr<std::vector<DeviceConfig>> ParseDeviceSpec(
    absl::string_view spec) {
  std::vector<DeviceConfig> configs;
  if (absl::StripAsciiWhitespace(spec).empty()) {
    return absl::InvalidArgumentError(
        "--devices is empty (expected e.g. 'sim*2:memory=2GiB')");
  }
  for (absl::string_view raw_entry : absl::StrSplit(spec, ',')) {
    const absl::string_view entry = absl::StripAsciiWhitespace(raw_entry);
    if (entry.empty()) return EntryError(raw_entry, "empty entry");
    std::vector<absl::string_view> parts = absl::StrSplit(entry, ':');

    // TYPE[*COUNT]
    DeviceConfig config;
    int count = 1;
    std::vector<absl::string_view> type_count =
        absl::StrSplit(parts[0], absl::MaxSplits('*', 1));
    config.type = std::string(absl::StripAsciiWhitespace(type_count[0]));
    if (config.type.empty()) return EntryError(entry, "missing device type");
    for (char c : config.type) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' &&
          c != '-') {
        return EntryError(entry, absl::StrCat("bad device type '",
                                              config.type, "'"));
      }
    }
    if (type_count.size() == 2) {
      const absl::string_view n = absl::StripAsciiWhitespace(type_count[1]);
      if (!IsAsciiDigits(n) || !absl::SimpleAtoi(n, &count) || count < 1 ||
          count > kMaxDeviceCount) {
        return EntryError(entry, absl::StrCat("bad count '", type_count[1],
                                              "' (expected 1..",
                                              kMaxDeviceCount, ")"));
      }
    }

    // :key=value...
    bool memory_set = false;
    for (size_t i = 1; i < parts.size(); ++i) {
      std::vector<absl::string_view> kv =
          absl::StrSplit(parts[i], absl::MaxSplits('=', 1));
      const absl::string_view key = absl::StripAsciiWhitespace(kv[0]);
      if (kv.size() != 2 || key.empty()) {
        return EntryError(entry, absl::StrCat("expected key=value, got '",
                                              parts[i], "'"));
      }
      const absl::string_view value = absl::StripAsciiWhitespace(kv[1]);
      if (key == "memory") {
        if (memory_set) return EntryError(entry, "memory given twice");
        memory_set = true;
        absl::StatusOr<uint64_t> bytes = ParseByteSize(value);
        if (!bytes.ok()) return EntryError(entry, bytes.status().message());
        if (*bytes == 0) return EntryError(entry, "memory must be > 0");
        config.memory_bytes = *bytes;
        continue;
      }
      if (!config.params.emplace(std::string(key), std::string(value))
               .second) {
        return EntryError(entry, absl::StrCat("key '", key, "' given twice"));
      }
    }
    for (int i = 0; i < count; ++i) configs.push_back(config);
  }
  if (configs.size() > static_cast<size_t>(kMaxDeviceCount)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--devices asks for ", configs.size(), " devices; at most ",
        kMaxDeviceCount));
  }
  return configs;
}

void ShareHostCores(int cores, std::vector<DeviceConfig>* configs) {
  auto on_host_cores = [](const DeviceConfig& c) {
    if (c.params.count("threads") > 0) return false;
    if (c.type == "sim") return true;
    auto inner = c.params.find("inner");
    return c.type == "faulty" &&
           (inner == c.params.end() || inner->second == "sim");
  };
  int n = 0;
  for (const DeviceConfig& c : *configs) n += on_host_cores(c) ? 1 : 0;
  if (n == 0) return;
  const int each = std::max(1, cores / n);
  for (DeviceConfig& c : *configs) {
    if (on_host_cores(c)) c.params["threads"] = std::to_string(each);
  }
}

}  // namespace glint
