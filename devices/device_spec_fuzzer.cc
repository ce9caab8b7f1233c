// libFuzzer target for glintd's --devices parser: any text gives device
// configs or a status. Accepted configs obey the grammar's limits and print
// back to a spec that parses to the same configs; an accepted byte size
// prints back to the same size.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "fuzz/fuzz_check.h"
#include "devices/device_spec.h"

namespace {

// The canonical spelling of `configs`: one entry per device, memory in
// bytes, params in key order.
std::string Spec(const std::vector<glint::DeviceConfig>& configs) {
  std::vector<std::string> entries;
  for (const glint::DeviceConfig& c : configs) {
    std::string entry = absl::StrCat(c.type, ":memory=", c.memory_bytes);
    for (const auto& [key, value] : c.params) {
      absl::StrAppend(&entry, ":", key, "=", value);
    }
    entries.push_back(std::move(entry));
  }
  return absl::StrJoin(entries, ",");
}

bool Same(const glint::DeviceConfig& a, const glint::DeviceConfig& b) {
  return a.type == b.type && a.name == b.name &&
         a.memory_bytes == b.memory_bytes && a.params == b.params;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<uint64_t> bytes = glint::ParseByteSize(text);
  if (bytes.ok()) {
    absl::StatusOr<uint64_t> again = glint::ParseByteSize(absl::StrCat(*bytes));
    FUZZ_CHECK(again.ok() && *again == *bytes,
               absl::StrCat("size ", *bytes, " does not print back"));
  }

  absl::StatusOr<std::vector<glint::DeviceConfig>> configs =
      glint::ParseDeviceSpec(text);
  if (!configs.ok()) {
    FUZZ_CHECK(configs.status().code() == absl::StatusCode::kInvalidArgument,
               configs.status().ToString());
    return 0;
  }
  FUZZ_CHECK(!configs->empty() && configs->size() <= 1024,
             absl::StrCat(configs->size(), " devices"));
  for (const glint::DeviceConfig& c : *configs) {
    FUZZ_CHECK(!c.type.empty() && c.name.empty() && c.memory_bytes > 0,
               absl::StrCat("config '", c.type, "' of ", c.memory_bytes,
                            " bytes"));
  }
  const std::string spec = Spec(*configs);
  absl::StatusOr<std::vector<glint::DeviceConfig>> again =
      glint::ParseDeviceSpec(spec);
  FUZZ_CHECK(again.ok(), absl::StrCat("'", spec, "': ",
                                      again.status().ToString()));
  FUZZ_CHECK(again->size() == configs->size(), "same device count");
  for (size_t i = 0; i < again->size(); ++i) {
    FUZZ_CHECK(Same((*again)[i], (*configs)[i]),
               absl::StrCat("device ", i, " of '", spec, "' differs"));
  }
  return 0;
}
